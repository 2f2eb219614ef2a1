"""`fitsync webhooks subscribe|status|unsubscribe` against the sandbox, with a small callback receiver on loopback.

| issue 3 | what | test |
|---|---|---|
| §7 Operations | push-subscription management from the CLI | test_webhooks_subscribe_status_unsubscribe |
| §7 Operations | a second subscribe reports the existing one | test_webhooks_subscribe_status_unsubscribe |
| §7 Operations | a callback that fails validation is a clear error, nothing saved | test_webhooks_subscribe_with_a_dead_callback |
"""

from __future__ import annotations

import json
import socket

from click.testing import CliRunner

from fitsync.cli.main import main
from fitsync.client.config import Config
from fitsync.client.runtime import FitsyncClient
from fitsync.webhooks.subscriptions import masked

from ..sandbox_harness import App, Harness
from .support import CallbackReceiver, cli_env


def fitsync(config: Config, *args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(main, list(args), env=cli_env(config))


def service_view(sb: Harness, app: App) -> list[dict]:  # type: ignore[type-arg]
    response = sb.http.request("GET", "/api/v3/push_subscriptions", data=app.creds())
    assert response.status_code == 200, response.text
    return response.json()


def test_webhooks_subscribe_status_unsubscribe(sb: Harness, config: Config, app: App) -> None:
    with CallbackReceiver() as receiver:
        assert fitsync(config, "webhooks", "status").output.strip() == "No subscription."

        created = fitsync(config, "webhooks", "subscribe", "--callback-url", receiver.url)
        assert created.exit_code == 0, created.output
        [sub] = service_view(sb, app)
        secret = sub["callback_url"].removeprefix(receiver.url + "/")
        assert len(secret) >= 24 and sub["callback_url"] == f"{receiver.url}/{secret}"  # prefix + path secret
        assert created.output.strip() == f"Subscribed: id {sub['id']} → {masked(sub['callback_url'])}"
        assert secret not in created.output
        # the service validated the callback with the verify token fitsync stored for its receiver
        [validation] = receiver.validations
        with FitsyncClient(config) as client:
            stored = client.subscription_state.verify_token()
            current = client.subscription_state.current()
        assert stored is not None and validation["hub.verify_token"] == stored.reveal()
        assert current is not None and (current.id, current.callback_url) == (sub["id"], sub["callback_url"])

        shown = fitsync(config, "webhooks", "status")
        assert shown.exit_code == 0, shown.output
        assert "Webhook subscriptions" in shown.output and f"│ {sub['id']} " in shown.output, shown.output
        assert "just now" in shown.output  # created
        # scripts get the address whole, the path secret alone replaced (not cut short as `abc…`)
        scripted = fitsync(config, "webhooks", "status", "--json")
        assert scripted.exit_code == 0, scripted.output
        assert json.loads(scripted.output)[0]["callback_url"] == f"{receiver.url}/<secret>", scripted.output
        assert secret not in scripted.output

        again = fitsync(config, "webhooks", "subscribe", "--callback-url", receiver.url + "/other")
        assert again.exit_code != 0
        assert f"already has subscription {sub['id']} to {receiver.url}/" in again.output
        assert secret not in again.output + shown.output
        assert len(receiver.validations) == 1 and len(service_view(sb, app)) == 1

        gone = fitsync(config, "webhooks", "unsubscribe", "--yes")
        assert gone.exit_code == 0 and gone.output.strip() == "Unsubscribed."
        assert service_view(sb, app) == []
        with FitsyncClient(config) as client:
            assert client.subscription_state.current() is None and client.subscription_state.verify_token() is None
            assert client.subscription_state.callback_token() is None
        assert fitsync(config, "webhooks", "status").output.strip() == "No subscription."
        nothing = fitsync(config, "webhooks", "unsubscribe")
        assert nothing.exit_code != 0 and "has no subscription" in nothing.output
        assert "`fitsync webhooks subscribe` makes one" in nothing.output


def test_webhooks_subscribe_with_a_dead_callback(sb: Harness, config: Config, app: App) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/webhook"
    result = fitsync(config, "webhooks", "subscribe", "--callback-url", dead)
    assert result.exit_code != 0
    assert "the service could not validate the callback" in result.output, result.output
    assert "fitsync webhooks serve" in result.output  # the fix: a receiver answering at that address
    assert "Traceback" not in result.output
    assert service_view(sb, app) == []
    with FitsyncClient(config) as client:
        assert client.subscription_state.current() is None


def test_a_subscribe_answer_that_echoes_the_form_is_said_without_the_secrets(
    sb: Harness, config: Config, app: App
) -> None:
    """An answer without a subscription id that quotes the form back: said, with the client secret masked."""
    echo = {"status": "ok", "client_secret": app.client_secret}
    with CallbackReceiver() as receiver, sb.settings(fault_answers={"POST /push_subscriptions": {"body": echo}}):
        result = fitsync(config, "webhooks", "subscribe", "--callback-url", receiver.url)
    assert result.exit_code != 0 and "not a subscription id" in result.output, result.output
    assert app.client_secret not in result.output and "Traceback" not in result.output


def test_json_addresses_hide_only_their_secrets() -> None:
    from fitsync.cli.webhooks import without_secrets

    assert without_secrets("https://h.example/webhooks", None) == "https://h.example/webhooks"  # none: whole
    assert without_secrets("https://h.example/webhooks/abc", "abc") == "https://h.example/webhooks/<secret>"
    assert without_secrets("https://h.example/webhooks/other", "abc") == "https://h.example/webhooks/other"
    assert without_secrets("https://u:pw@h.example/hooks/", None) == "https://u:<secret>@h.example/hooks/"
    assert without_secrets("https://h.example/w/" + "x" * 24, None) == "https://h.example/w/<secret>"
