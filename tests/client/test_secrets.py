"""Secrets never leave: not in logs (DEBUG, httpx and httpcore included), not in exception messages or reprs,
not in CLI output, not in URLs.

| issue 3 | what | test |
|---|---|---|
| §1 Config | secrets in form bodies, never URLs, never logged, never in exception text; reprs redact | test_secrets_absent_from_logs_errors_and_reprs, test_secret_wrapper |
"""

from __future__ import annotations

import logging
import pickle
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from fitsync.cli.main import main
from fitsync.client import oauth
from fitsync.client.config import Config
from fitsync.client.errors import NotFound, OAuthError, ReauthorizationRequired
from fitsync.client.runtime import FitsyncClient
from fitsync.client.secret import Secret

from ..sandbox_harness import App, Harness, save_grant
from .conftest import MakeConfig
from .support import CallbackReceiver, RequestLog, cli_env

SECRET_KEY = "fitsync-test-passphrase-4c1f7e"


def test_secrets_absent_from_logs_errors_and_reprs(
    sb: Harness, make_config: MakeConfig, app: App, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    for name in ("httpx", "httpcore", "fitsync", "tenacity"):
        logging.getLogger(name).setLevel(logging.DEBUG)
    config = make_config(secret_key=Secret(SECRET_KEY))
    texts: list[str] = []  # everything a person or a log file could see
    athlete_id = sb.athlete_id()

    with FitsyncClient(config) as client:
        log = RequestLog(client.transport.http, keep_token_bodies=True)
        save_grant(sb, client, app, athlete_id)
        api = client.athlete(athlete_id)
        api.athlete()
        list(api.activities())
        client.tokens.refresh(athlete_id, rejected=client.tokens.access_token(athlete_id))  # a rotation
        api.athlete()
        with pytest.raises(NotFound) as not_found:
            api.activity(1)
        with pytest.raises(OAuthError) as bad_code:
            oauth.exchange_code(config, client.transport, "not-a-code")
        texts += [str(e.value) + repr(e.value) for e in (not_found, bad_code)]
        texts += [
            repr(config),
            str(config),
            repr(client),
            repr(client.cipher),
            repr(client.tokens.athletes()),
            repr(client.governor.snapshot()),
            f"{config.client_secret}",
            str(config.secret_key),
        ]

        with CallbackReceiver() as receiver:
            for args in (
                ["webhooks", "subscribe", "--callback-url", receiver.url],
                ["webhooks", "status"],
                ["webhooks", "subscribe", "--callback-url", receiver.url],
                ["athletes"],
                ["webhooks", "unsubscribe", "--yes"],
            ):
                result = CliRunner().invoke(main, args, env=cli_env(config))
                texts.append(result.output)
            verify_token = receiver.validations[0]["hub.verify_token"]

        sb.console.post(f"/athletes/{athlete_id}/revoke", json={"client_id": app.client_id})
        with pytest.raises(ReauthorizationRequired) as reauth:
            api.athlete()
        texts.append(str(reauth.value) + repr(reauth.value) + repr(reauth.value.args))
        texts.append(CliRunner().invoke(main, ["athletes"], env=cli_env(config)).output)
        wrong_app = config.replace(client_secret=Secret("wrong-" + app.client_secret))
        with FitsyncClient(wrong_app) as other:
            with pytest.raises(OAuthError) as rejected:
                oauth.exchange_code(wrong_app, other.transport, sb.code(app, athlete_id))
        texts.append(str(rejected.value) + repr(rejected.value))

    # the secrets of this session
    tokens = {b[k] for b in log.token_bodies for k in ("access_token", "refresh_token")}
    assert len(log.token_bodies) >= 2 and len(tokens) >= 3
    secrets = {
        "client_secret": app.client_secret,
        "verify_token": verify_token,
        "FITSYNC_SECRET_KEY": SECRET_KEY,
        **{f"token {t[:6]}…": t for t in tokens},
    }

    # the client's own log records (the sandbox runs in another thread of this process and logs its own side)
    mine = [r for r in caplog.records if r.thread == threading.get_ident()]
    formatter = logging.Formatter("%(name)s %(levelname)s %(message)s")
    logged = [formatter.format(r) for r in mine]
    assert any(r.name == "httpx" for r in mine) and any(r.name.startswith("httpcore") for r in mine)
    assert any("/oauth/token" in line for line in logged)  # the capture is not empty of the interesting calls
    urls = [f"{s.path}?{s.params}" for s in log.sent]
    for name, secret in secrets.items():
        for where, haystack in (("logs", logged), ("texts", texts), ("urls", urls)):
            leaks = [h for h in haystack if secret in h]
            assert leaks == [], f"{name} appears in {where}: {leaks[0][:300]}"


def test_secret_wrapper() -> None:
    secret = Secret("hunter2")
    assert "hunter2" not in repr(secret) + str(secret) + f"{secret}" + f"{secret!r:>30}" + "%s" % secret  # noqa: UP031 (every formatting path)
    assert secret.reveal() == "hunter2" and secret == Secret("hunter2") and secret and not Secret("")
    with pytest.raises(TypeError):
        pickle.dumps(secret)
    config = Config.load(
        {"FITSYNC_CLIENT_SECRET": "hunter2", "FITSYNC_SECRET_KEY": "s3cret-key", "FITSYNC_HOME": "/nonexistent/fitsync"}
    )
    assert "hunter2" not in repr(config) and "s3cret-key" not in repr(config)


def test_a_config_file_others_can_read_is_warned_about_with_the_chmod(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from fitsync.client import config as config_module

    file = tmp_path / "config.toml"
    file.write_text('client_id = 1\nclient_secret = "s3cr3t-value"\n')
    file.chmod(0o644)
    with caplog.at_level("WARNING"):
        loaded = config_module.Config.load({}, home=tmp_path)
    assert loaded.client_id == 1
    [message] = [r.getMessage() for r in caplog.records if "config.toml" in r.getMessage()]
    assert "other users" in message and f"chmod 600 {file}" in message and "s3cr3t-value" not in message
    caplog.clear()
    config_module._WARNED.clear()
    file.chmod(0o600)
    with caplog.at_level("WARNING"):
        config_module.Config.load({}, home=tmp_path)
    assert not [r for r in caplog.records if "config.toml" in r.getMessage()]
