"""The `webhook_events` sensor, evaluated with Dagster's own helpers (`build_sensor_context` on an
`instance_for_test`): run keys come from the events, not the athlete; the same batch evaluated again asks for
the same runs; a known-but-new athlete gets its partition; an empty inbox is a SkipReason; nothing is launched
for an athlete who is no longer connected.

| § | row | what the row says (short) | test |
|---|---|---|---|
| issue 5 | sensor | run_key derived from the events (not the athlete): new events → new key | `test_run_keys_derive_from_events_not_athletes` |
| issue 5 | sensor | the same batch evaluated twice (old cursor) → the same run keys, one run | `test_same_batch_evaluated_twice_asks_for_the_same_runs` |
| issue 5 | sensor | a known-but-new athlete gets a dynamic partition | `test_known_but_new_athlete_gets_a_partition` |
| issue 5 | sensor | nothing new in the inbox → SkipReason | `test_empty_inbox_is_a_skip` |
| issue 5 | sensor | coalescing per activity: updates → one re-pull, create then delete → delete only | `test_coalesces_per_activity` |
| issue 5 | actions | nothing runs for an athlete disconnected meanwhile | `test_no_run_for_an_athlete_disconnected_meanwhile`, `test_reconnect_after_revocation_is_not_purged` |
"""

from __future__ import annotations

import signal
import time
from typing import Any

import pytest
from dagster import AddDynamicPartitionsRequest, SensorResult, SkipReason, build_sensor_context

from fitsync.client.errors import ReauthorizationRequired
from fitsync.pipelines.sync_runner import resources_for
from fitsync.pipelines.webhook_sensor import webhook_events
from fitsync.webhooks import inbox as webhook_inbox

from ..sandbox_harness import Harness, wait_until
from .conftest import MakeHome, WebhookHome, add_athlete, record, revoke

# the PostgreSQL variants run with -m slow (tests/conftest.py): the default run's 10 minutes
pytestmark = pytest.mark.postgres_slow


def evaluate(home: WebhookHome, cursor: str | None) -> Any:
    """One evaluation of the shipped sensor, exactly as Dagster's test helper builds its context."""
    with build_sensor_context(instance=home.instance, cursor=cursor, resources=resources_for(home.config)) as context:
        return webhook_events(context)


def ready(sb: Harness, home: WebhookHome, *, partition: bool = True) -> int:
    """The home's receiver with fitsync's side of a subscription, and one connected athlete."""
    aid = add_athlete(sb)
    home.connect(aid, partition=partition)
    home.serve()
    home.local_subscription()
    return aid


def post(home: WebhookHome, *events: dict[str, Any]) -> None:
    for event in events:
        response = home.post(event)
        assert response.status_code == 200 and response.json() == {"stored": True}, response.text


def config_of(result: SensorResult) -> list[tuple[str | None, dict[str, Any]]]:
    return [(r.partition_key, r.run_config["ops"]["activities"]["config"]) for r in result.run_requests or []]


def test_empty_inbox_is_a_skip(sb: Harness, home: WebhookHome) -> None:
    aid = ready(sb, home)
    assert isinstance(evaluate(home, None), SkipReason)
    post(home, home.event(aid, 9_400_000_001, "delete"))
    result = evaluate(home, None)
    assert isinstance(result, SensorResult) and len(result.run_requests or []) == 1
    assert isinstance(evaluate(home, result.cursor), SkipReason)  # everything up to the cursor is done


def test_run_keys_derive_from_events_not_athletes(sb: Harness, home: WebhookHome) -> None:
    aid = ready(sb, home)
    t = int(time.time())
    post(home, home.event(aid, 9_400_000_001, "delete", event_time=t))
    first = evaluate(home, None)
    post(home, home.event(aid, 9_400_000_002, "delete", event_time=t))
    second = evaluate(home, first.cursor)
    [a], [b] = first.run_requests, second.run_requests
    assert a.partition_key == b.partition_key == str(aid)
    assert a.run_key != b.run_key  # same athlete, new events: a new run, not swallowed as a duplicate
    assert str(aid) not in a.run_key and str(aid) not in b.run_key  # type: ignore[operator]
    assert config_of(first) == [(str(aid), {"activity_ids": [], "deleted_ids": [9_400_000_001]})]
    assert config_of(second) == [(str(aid), {"activity_ids": [], "deleted_ids": [9_400_000_002]})]
    assert int(second.cursor) > int(first.cursor)  # type: ignore[arg-type]
    # Both launch (a run key seen before would launch nothing).
    outcomes = home.execute([a, b])
    assert all(o is not None for o in outcomes)
    assert home.runs_with_key(a.run_key) == home.runs_with_key(b.run_key) == 1  # type: ignore[arg-type]


def test_same_batch_evaluated_twice_asks_for_the_same_runs(sb: Harness, make_home: MakeHome) -> None:
    home = make_home()
    aid = ready(sb, home)
    other = add_athlete(sb)
    home.connect(other)
    t = int(time.time())
    post(
        home,
        home.event(aid, 9_400_000_011, "update", updates={"title": "a"}, event_time=t),
        home.event(other, 9_400_000_012, "delete", event_time=t),
        home.event(aid, 9_400_000_013, "delete", event_time=t + 1),
    )
    first, second = evaluate(home, None), evaluate(home, None)
    keys = sorted((r.partition_key, r.run_key) for r in first.run_requests)
    assert keys == sorted((r.partition_key, r.run_key) for r in second.run_requests)
    assert len({k for _, k in keys}) == 2 and {p for p, _ in keys} == {str(aid), str(other)}
    assert sorted(config_of(first)) == sorted(config_of(second))
    assert first.cursor == second.cursor
    launched = home.execute(list(first.run_requests))
    assert all(o is not None for o in launched)
    assert home.execute(list(second.run_requests)) == [None, None]  # the daemon would launch nothing twice


def test_known_but_new_athlete_gets_a_partition(sb: Harness, home: WebhookHome) -> None:
    aid = ready(sb, home, partition=False)  # connected in the state store, not (yet) a partition
    assert home.partitions() == set()
    post(home, home.event(aid, 9_400_000_021, "delete"))
    result = evaluate(home, None)
    [add] = result.dynamic_partitions_requests
    assert isinstance(add, AddDynamicPartitionsRequest)
    assert add.partitions_def_name == "athletes" and list(add.partition_keys) == [str(aid)]
    assert [r.partition_key for r in result.run_requests] == [str(aid)]
    # Through the runner, as the daemon does it: the partition exists before the run needs it.
    requests = home.tick()
    assert home.partitions() == {str(aid)}
    assert all(o is not None for o in home.execute(requests))
    post(home, home.event(aid, 9_400_000_022, "delete"))
    assert evaluate(home, home.cursor).dynamic_partitions_requests == []  # known now


def test_coalesces_per_activity(sb: Harness, home: WebhookHome) -> None:
    aid = ready(sb, home)
    t = int(time.time())
    post(
        home,
        home.event(aid, 9_400_000_031, "update", updates={"title": "one"}, event_time=t),
        home.event(aid, 9_400_000_031, "update", updates={"type": "Run"}, event_time=t + 1),
        home.event(aid, 9_400_000_031, "update", updates={"title": "two", "private": "true"}, event_time=t + 2),
        home.event(aid, 9_400_000_032, "create", event_time=t),
        home.event(aid, 9_400_000_032, "delete", event_time=t + 1),
        home.event(aid, 9_400_000_033, "create", event_time=t + 1),
    )
    result = evaluate(home, None)
    assert config_of(result) == [
        (str(aid), {"activity_ids": [9_400_000_031, 9_400_000_033], "deleted_ids": [9_400_000_032]})
    ]


def test_no_run_for_an_athlete_disconnected_meanwhile(sb: Harness, home: WebhookHome) -> None:
    """The receiver checks the owner before it stores; the sensor disconnects an athlete when it reads the
    deauthorization. An event stored in between (or a batch boundary between the deauthorization and a later
    event) must not bring back the partition nor launch a sync of the athlete who left."""
    aid = ready(sb, home)
    revoke(sb, home.app, aid)  # a real revocation: the service refuses the athlete's token
    post(home, home.event(aid, aid, "update", object_type="athlete", updates={"authorized": "false"}))
    requests = home.tick()
    assert [r.job_name for r in requests] == ["purge_athlete_job"] and home.partitions() == set()
    # Accepted just before the sensor's transaction marked the athlete disconnected:
    late = home.event(aid, 9_400_000_041, "update", updates={"title": "late"})
    with home.client.store.transaction() as conn:
        assert webhook_inbox.store_event(conn, webhook_inbox.validate(late))
    result = evaluate(home, home.cursor)
    runs = [] if isinstance(result, SkipReason) else list(result.run_requests or [])
    adds = (
        []
        if isinstance(result, SkipReason)
        else [r for r in result.dynamic_partitions_requests or [] if isinstance(r, AddDynamicPartitionsRequest)]
    )
    assert runs == [] and adds == []


def test_a_forged_deauthorization_of_an_athlete_awaiting_reauthorization_deletes_nothing(
    sb: Harness, home: WebhookHome
) -> None:
    """A refresh whose answer was lost after the service rotated the token leaves fitsync's token refused while the
    athlete is still authorized at the service. The check then raised ReauthorizationRequired from the stored status,
    before any request, and took it for the service's refusal: a forged deauthorization purged the athlete, thresholds
    typed by hand included (an adversarial audit). Only a refusal the service gives during the check is proof."""
    aid = ready(sb, home)
    with sb.settings(refresh_reuse_threshold=0, fault_lost_responses=1, fault_lost_response_match="POST /oauth/token"):
        with pytest.raises(ReauthorizationRequired, match="lost in transit"):
            home.client.tokens.refresh(aid, rejected=home.client.tokens.access_token(aid))
    assert home.state("SELECT status FROM athletes WHERE athlete_id = ?", aid) == [("needs_reauth",)]
    post(home, home.event(aid, aid, "update", object_type="athlete", updates={"authorized": "false"}))
    assert [r.job_name for r in home.tick()] == []
    [(verdict, reason)] = home.state("SELECT verdict, verdict_reason FROM webhook_inbox WHERE verdict IS NOT NULL")
    assert verdict == "rejected" and reason.startswith(f"no proof: fitsync holds no token of athlete {aid}"), reason
    assert f"`fitsync disconnect {aid}` deletes it" in reason
    assert home.state("SELECT status FROM athletes WHERE athlete_id = ?", aid) == [("needs_reauth",)]
    assert home.partitions() == {str(aid)}


def test_reconnect_after_revocation_is_not_purged(sb: Harness, home: WebhookHome) -> None:
    aid = add_athlete(sb)
    record(sb, aid, days_ago=1)
    home.connect(aid)
    home.serve()
    home.subscribe()
    revoke(sb, home.app, aid)
    home.settle(1)
    revoked_in = int(time.time())  # event times are whole seconds: come back in a later one, unambiguously
    wait_until(lambda: int(time.time()) > revoked_in, 2, "the next second")
    home.connect(aid)  # the athlete comes back before dagster's sensor ran (say `dagster dev` was not running)
    requests = home.tick()
    assert [r.job_name for r in requests] == []
    assert home.state("SELECT status FROM athletes WHERE athlete_id = ?", aid) == [("connected",)]
    assert home.partitions() == {str(aid)}


def test_a_tick_leaves_the_commands_signal_handlers_alone(sb: Harness, home: WebhookHome) -> None:
    """`fitsync demo` ticks the sensor itself. Dagster sets its resources up and tears them down under its own SIGINT
    handler when on the main thread: a Ctrl-C then raised DagsterExecutionInterruptedError wherever the code was (a
    traceback instead of the demo's one line), and SIGTERM was left mapped to the SIGINT handler. The tick runs off
    the main thread, as runs do: the command's handlers stay, and a stop is the client's at its next request."""
    aid = ready(sb, home)
    post(home, home.event(aid, aid, "update", object_type="athlete", updates={"authorized": "false"}))

    def on_sigint(signum: int, frame: object) -> None:
        raise AssertionError("no signal is sent here")

    def on_sigterm(signum: int, frame: object) -> None:
        raise AssertionError("no signal is sent here")

    before = signal.signal(signal.SIGINT, on_sigint), signal.signal(signal.SIGTERM, on_sigterm)
    try:
        home.tick()  # its resources set up and torn down, and a request to the service (the deauthorization's check)
        handlers = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    finally:
        signal.signal(signal.SIGINT, before[0])
        signal.signal(signal.SIGTERM, before[1])
    assert handlers == (on_sigint, on_sigterm)
