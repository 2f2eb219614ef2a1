"""Events are hints: anyone who can reach the callback can POST a well-formed event with the right subscription id
and a public athlete id. A forged delete or deauthorization costs at most a call or two, changes nothing, and is
recorded as rejected with the reason; the real ones still act (test_end_to_end.py)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from fitsync.webhooks.admission import CALLS_PER_ACTIVITY, allowance_cap

from ..sandbox_harness import ACTIVITY_NOT_FOUND, Harness, wait_until
from .conftest import WebhookHome, add_athlete, change, delete, record, revoke
from .test_end_to_end import synced_athlete

# the PostgreSQL variants run with -m slow (tests/conftest.py): their SQL is the client and webhook tests' own
pytestmark = pytest.mark.postgres_slow


def verdicts(home: WebhookHome) -> list[tuple[str, str, str]]:
    return [
        (json.loads(r[0])["aspect_type"], r[1], r[2])
        for r in home.state("SELECT payload, verdict, verdict_reason FROM webhook_inbox ORDER BY id")
    ]


def renamed_and_re_pulled(sb: Harness, home: WebhookHome, activity: int, name: str) -> None:
    """The athlete renames the activity for real: its event is re-pulled and the warehouse has the new name."""
    home.mark_events()
    change(sb, activity, name=name)
    home.settle(1)
    requests, _ = home.process()
    assert [r.job_name for r in requests] == ["webhook_refresh"]
    assert home.activity(activity)["name"] == name  # type: ignore[index]


@pytest.mark.sqlite_only  # the state store is incidental: a forged event (the real checks run on both)
def test_forged_delete_of_an_existing_activity_deletes_nothing(sb: Harness, home: WebhookHome) -> None:
    aid, ids = synced_athlete(home, sb, n=2)
    victim = ids[0]
    before = home.athlete_rows(aid)
    assert home.post(home.event(aid, victim, "delete")).status_code == 200  # well-formed: the receiver stores it
    requests, outcomes = home.process()
    assert [r.job_name for r in requests] == ["webhook_refresh"]
    assert home.activity(victim) is not None and home.deleted(victim) == []
    assert home.athlete_rows(aid) == before
    [(aspect, verdict, reason)] = verdicts(home)
    assert (aspect, verdict) == ("delete", "rejected") and "still has this activity" in reason
    # one check, then the re-pull the service's answer calls for: the event bought nothing else
    meta = outcomes[0].metadata  # type: ignore[union-attr]
    assert meta["activities"]["api_calls"] == 1 and meta["activities"]["deleted"] == 0
    assert meta["activity_details"]["api_calls"] == 1

    # the athlete then renames it for real: the rejected delete mutes nothing (it was once taken as acted on, and every
    # later update of the activity as an update of a deleted one)
    renamed_and_re_pulled(sb, home, victim, "Renamed for real")
    assert home.state("SELECT count(*) FROM webhook_lifecycle") == [(0,)]


@pytest.mark.sqlite_only  # the state store is incidental: the events' order
def test_a_delete_confirmed_on_a_404_in_error_is_undone_by_the_activitys_next_update(
    sb: Harness, home: WebhookHome
) -> None:
    """The service answered one 404 for an activity it still had: the delete event was confirmed, and every later
    event of the activity (renames, even after a full sync restored it) was dropped as an update of a deleted
    activity, without a call (an adversarial audit). The next update is re-pulled and the activity restored."""
    aid, ids = synced_athlete(home, sb, n=2)
    victim = ids[0]
    deleted_at = int(time.time())
    assert home.post(home.event(aid, victim, "delete", event_time=deleted_at)).status_code == 200
    with sb.settings(fault_answers={"GET /activities/{id}": ACTIVITY_NOT_FOUND}):
        home.process()
    assert home.activity(victim) is None and [v[1] for v in verdicts(home)] == ["confirmed"]
    # event times are whole seconds: the rename in a later one than the delete, as a real one after it would be
    wait_until(lambda: int(time.time()) > deleted_at, 2, "the next second")
    renamed_and_re_pulled(sb, home, victim, "Renamed after the 404")


@pytest.mark.sqlite_only  # the state store is incidental: a forged event (the real checks run on both)
def test_forged_delete_naming_another_athletes_activity_deletes_nothing(sb: Harness, home: WebhookHome) -> None:
    aid, _ = synced_athlete(home, sb, n=1)
    other = add_athlete(sb)
    theirs = record(sb, other, days_ago=2)
    home.connect(other)
    home.sync(other)
    assert home.post(home.event(aid, theirs, "delete")).status_code == 200  # owner aid, activity of `other`
    home.process()
    assert home.activity(theirs) is not None and home.deleted(theirs) == []
    [(_, verdict, reason)] = verdicts(home)
    assert verdict == "rejected" and "proves no deletion" in reason


def test_a_real_delete_is_confirmed_by_the_service(sb: Harness, home: WebhookHome) -> None:
    aid, ids = synced_athlete(home, sb, n=2)
    delete(sb, ids[1])
    home.settle(1)
    home.process()
    assert home.activity(ids[1]) is None and home.deleted(ids[1])[0][1].startswith("webhook delete, confirmed")
    assert verdicts(home) == [("delete", "confirmed", "webhook delete, confirmed: the service answers 404")]


@pytest.mark.sqlite_only  # the state store is incidental: how a confirmed delete is dated
def test_a_confirmed_delete_dated_a_year_ahead_counts_as_received(sb: Harness, home: WebhookHome) -> None:
    """A delete the service confirms, with a time a year ahead (a clock or a forger): what later events of the
    activity are judged by is dated as the event's other uses are, no later than minutes after its receipt."""
    aid, ids = synced_athlete(home, sb, n=1)
    delete(sb, ids[0])
    ahead = int(time.time()) + 365 * 86400
    assert home.post(home.event(aid, ids[0], "delete", event_time=ahead)).status_code == 200
    home.state_write("UPDATE webhook_inbox SET received_at = received_at - 3600")  # processed an hour after receipt
    home.process()
    [(received,)] = home.state("SELECT max(received_at) FROM webhook_inbox WHERE verdict = 'confirmed'")
    [(dated,)] = home.state("SELECT event_time FROM webhook_lifecycle WHERE activity_id = ?", ids[0])
    assert dated <= int(received) + 300


@pytest.mark.sqlite_only  # the state store is incidental: a forged event (the real checks run on both)
def test_forged_deauthorization_purges_nothing(sb: Harness, home: WebhookHome) -> None:
    aid, ids = synced_athlete(home, sb, n=2)
    before = home.athlete_rows(aid)
    forged = home.event(aid, aid, "update", object_type="athlete", updates={"authorized": "false"})
    assert home.post(forged).status_code == 200
    requests, _ = home.process()
    assert requests == []  # no purge run
    assert home.state("SELECT status FROM athletes WHERE athlete_id = ?", aid) == [("connected",)]
    assert home.partitions() == {str(aid)} and home.athlete_rows(aid) == before
    [(_, verdict, reason)] = verdicts(home)
    assert verdict == "rejected" and "still accepts the athlete's token" in reason
    home.sync(aid)  # the athlete keeps syncing
    assert home.activity_ids(aid) == set(ids)


def test_a_deauthorization_that_cannot_be_checked_waits_and_is_checked_again(sb: Harness, home: WebhookHome) -> None:
    aid, _ = synced_athlete(home, sb, n=1)
    revoke(sb, home.app, aid)
    home.settle(1)
    with sb.settings(fault_error_rate=1.0):  # the service answers only 5xx: nothing proves the revocation yet
        assert home.tick() == []
    [(_, verdict, reason)] = verdicts(home)
    assert verdict == "deferred" and "checked again" in reason
    assert home.state("SELECT status FROM athletes WHERE athlete_id = ?", aid) == [("connected",)]
    requests = home.tick()  # the service answers again: the token is refused, the purge goes ahead
    assert [r.job_name for r in requests] == ["purge_athlete_job"]
    home.execute(requests)
    assert set(home.athlete_rows(aid).values()) == {0}
    assert verdicts(home)[0][1] == "confirmed"


def test_events_reach_the_inbox_only_at_the_subscriptions_secret_path(sb: Harness, home: WebhookHome) -> None:
    """The callback address ends in a random secret only the service knows: a forger who knows the host, the
    subscription id and the athlete still gets 404 and stores nothing, on any other path."""
    aid, ids = synced_athlete(home, sb, n=1)
    secret_url = home.callback_url
    prefix, _, secret = secret_url.rpartition("/")
    assert prefix == home.callback_prefix and len(secret) >= 24
    event = home.event(aid, ids[0], "delete")
    for guess in (
        prefix,
        f"{prefix}/fitsync",
        f"{prefix}/{secret[:-1]}",
        f"{prefix}/{secret}x",
        home.receiver.base_url + "/" + secret,
    ):  # type: ignore[union-attr]
        response = home.http.post(guess, json=event)
        assert response.status_code == 404, (guess.replace(secret, "<secret>"), response.text)
        challenge = home.http.get(
            guess, params={"hub.mode": "subscribe", "hub.challenge": "c", "hub.verify_token": "anything"}
        )
        assert challenge.status_code == 404
    assert home.inbox() == []
    assert home.http.post(secret_url, json=home.event(aid, ids[0], "update", updates={"title": "x"})).status_code == 200
    assert len(home.inbox()) == 1


def test_subscribing_again_rotates_the_path_secret(sb: Harness, home: WebhookHome) -> None:
    aid, ids = synced_athlete(home, sb, n=1)
    old_url = home.callback_url
    home.client.subscriptions().delete(home.subscription_id)  # type: ignore[arg-type]
    home.client.subscription_state.forget()
    home.subscribe()
    assert home.callback_url != old_url and home.callback_url.startswith(home.callback_prefix + "/")
    assert home.http.post(old_url, json=home.event(aid, ids[0], "delete")).status_code == 404
    assert home.inbox() == []
    record(sb, aid)  # the service's own event arrives at the new address
    home.settle(1)
    assert [e["payload"]["aspect_type"] for e in home.inbox()] == ["create"]


def test_adopting_a_subscription_recovers_its_path_secret(sb: Harness, home: WebhookHome) -> None:
    """fitsync's state lost the secret (a restored backup), the service still calls the old address: subscribing
    again under the same prefix adopts it and its events keep arriving."""
    aid, _ = synced_athlete(home, sb, n=1)
    url = home.callback_url
    home.client.subscription_state.forget()
    assert home.subscribe() == home.subscription_id and home.callback_url == url
    record(sb, aid)
    home.settle(1)
    assert len(home.inbox()) == 1


def calls(outcomes: list) -> int:  # type: ignore[type-arg]
    return sum(
        int(meta.get("api_calls", 0))
        for o in outcomes
        if o is not None
        for meta in o.metadata.values()
        if isinstance(meta, dict)
    )


def small_share(home: WebhookHome, activities: int) -> int:
    """Give webhook re-pulls room for `activities` per window on this home; returns the cap."""
    [limit] = [
        line.limit for line in home.client.governor.snapshot() if (line.window, line.budget) == ("short", "read")
    ]
    home.config = home.config.replace(webhook_share=activities * CALLS_PER_ACTIVITY / limit)
    return allowance_cap(home.config.webhook_share, limit)


def test_a_flood_of_forged_creates_spends_only_the_webhook_share(sb: Harness, home: WebhookHome) -> None:
    """300 forged `create` events for ids fitsync never saw, then updates of real activities: the real ones go
    first, the share bounds the calls, the rest wait (deferred, with the reason) and spend nothing more."""
    aid, ids = synced_athlete(home, sb, n=3)
    cap = small_share(home, 5)
    assert cap == 5
    window = home.client.governor.lengths["short"]
    first_window = int(time.time() // window)
    for i in range(300):
        assert home.post(home.event(aid, 9_700_000_000 + i, "create")).status_code == 200
    for known in ids:
        assert home.post(home.event(aid, known, "update", updates={"title": "renamed"})).status_code == 200
    requests, outcomes = home.process()
    [run] = requests
    refreshed = run.run_config["ops"]["activities"]["config"]["activity_ids"]
    assert set(ids) <= set(refreshed) and len(refreshed) == cap  # the athlete's own activities first
    assert calls(outcomes) <= cap * CALLS_PER_ACTIVITY + 2
    waiting = home.state("SELECT count(*), min(verdict_reason) FROM webhook_inbox WHERE verdict = 'deferred'")
    assert waiting[0][0] == 300 - (cap - len(ids)) and "webhook share" in waiting[0][1]
    later_requests, _ = home.process()
    if int(time.time() // window) == first_window:
        assert later_requests == []  # same window: the waiting events spend nothing
    else:  # the test straddled a window boundary (a quarter hour): the share refilled, and bounds the calls again
        assert len(later_requests) <= 1 and all(
            len(r.run_config["ops"]["activities"]["config"]["activity_ids"]) <= cap for r in later_requests
        )
    assert home.activity_ids(aid) == set(ids)  # and nothing forged landed


def test_events_wait_while_the_athletes_refresh_runs_then_fold_into_one(sb: Harness, home: WebhookHome) -> None:
    from dagster import DagsterRun, DagsterRunStatus
    from dagster._core.utils import make_new_run_id

    aid, ids = synced_athlete(home, sb, n=2)
    running = DagsterRun(
        job_name="webhook_refresh",
        run_id=make_new_run_id(),
        status=DagsterRunStatus.STARTED,
        tags={"dagster/partition": str(aid)},
    )
    home.instance.add_run(running)
    for title in ("a", "b", "c"):
        for known in ids:
            home.post(home.event(aid, known, "update", updates={"title": title}))
    assert home.tick() == []
    [(count, reason)] = home.state("SELECT count(*), min(verdict_reason) FROM webhook_inbox WHERE verdict = 'deferred'")
    assert count == 6 and "coalesced" in reason
    home.instance.report_run_canceled(running)
    [run] = home.tick()  # the run ended: six events, one run, each activity once
    assert sorted(run.run_config["ops"]["activities"]["config"]["activity_ids"]) == sorted(ids)
    assert home.state("SELECT count(*) FROM webhook_inbox WHERE verdict = 'deferred'") == [(0,)]


def test_events_that_waited_a_day_are_left_to_the_nightly_sync(sb: Harness, home: WebhookHome) -> None:
    aid, _ = synced_athlete(home, sb, n=1)
    small_share(home, 1)
    for i in range(3):
        home.post(home.event(aid, 9_800_000_000 + i, "create"))
    [run] = home.tick()
    assert len(run.run_config["ops"]["activities"]["config"]["activity_ids"]) == 1
    home.state_write("UPDATE webhook_inbox SET received_at = received_at - 2 * 86400 WHERE verdict = 'deferred'")
    assert home.tick() == []
    rows = home.state("SELECT verdict, verdict_reason FROM webhook_inbox WHERE verdict IS NOT NULL")
    assert [(v, "nightly sync" in r) for v, r in rows] == [("rejected", True)] * 2
    assert home.state("SELECT count(*) FROM webhook_inbox WHERE verdict = 'deferred'") == [(0,)]


def _plain_text_places(home: WebhookHome, secret: str, legitimate: set[str]) -> list[str]:
    """Every file under the home (and the Dagster instance's), and every row of the state store, holding `secret` as
    it is; `legitimate` names the files meant to hold it (config.toml holds the app's secret, by the user's hand)."""
    needle = secret.encode()
    roots = {home.config.home, Path(home.instance.root_directory)}
    places = [
        str(p)
        for root in roots
        for p in root.rglob("*")
        if p.is_file() and p.name not in legitimate and needle in p.read_bytes()
    ]
    with home.client.store.reading() as conn:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
                if home.config.state_url
                else "SELECT name FROM sqlite_master WHERE type = 'table'"
            )
        ]
        for table in tables:
            for row in conn.execute(f"SELECT * FROM {table}").fetchall():
                if any(needle in (v if isinstance(v, (bytes, memoryview)) else str(v).encode()) for v in tuple(row)):
                    places.append(f"state table {table}")
    return places


def test_no_secret_is_stored_in_plain_text(sb: Harness, home: WebhookHome) -> None:
    """After connect, subscribe, a sync and webhook traffic, no file under the home and no state row holds a token,
    the callback's path secret or the verify token as it is (issue 28): all of them are encrypted at rest."""
    aid, ids = synced_athlete(home, sb, n=2)
    record(sb, aid)
    home.settle(1)
    home.process()
    with home.client.store.reading() as conn:
        row = conn.execute("SELECT access_token, refresh_token FROM athletes WHERE athlete_id = ?", (aid,)).fetchone()
    secrets = {
        "access token": home.client.cipher.decrypt(bytes(row[0])).reveal(),
        "refresh token": home.client.cipher.decrypt(bytes(row[1])).reveal(),
        "callback path secret": home.callback_url.rsplit("/", 1)[1],
        "verify token": home.client.subscription_state.verify_token().reveal(),  # type: ignore[union-attr]
        "client secret": home.config.client_secret.reveal(),
    }
    assert len(secrets["callback path secret"]) >= 24
    found = {
        name: places
        for name, secret in secrets.items()
        if (places := _plain_text_places(home, secret, legitimate={"config.toml"}))
    }
    assert found == {}


def test_a_callback_address_stored_in_plain_text_by_an_older_fitsync_is_read_then_encrypted(home: WebhookHome) -> None:
    state = home.client.subscription_state
    url = f"{home.callback_prefix if home.receiver else 'https://example.org/webhooks'}/an-old-path-secret-0123456789"
    state.save(990_002, url)
    state._put("callback_url", url.encode())  # as fitsync stored it before issue 28
    assert state.current() is not None and state.current().callback_url == url  # type: ignore[union-attr]
    assert state.encrypt_stored_address() and not state.encrypt_stored_address()
    assert not (state._get("callback_url") or b"").startswith(b"http")
    assert state.current().callback_url == url  # type: ignore[union-attr]
