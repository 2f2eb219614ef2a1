"""stravalib, the reference Python client of the real service, drives the sandbox over HTTP.

Every operation fitsync uses, as stravalib calls it: the OAuth exchange and refresh, the reads, deauthorization
(stravalib posts to /api/v3/oauth/deauthorize with a bearer header), and the errors mapped to stravalib's own
exceptions. Where stravalib and the spec disagree, the spec decides the default flavour and the real service
the `real` one; the tests say which, as docs/real-service.md does.

stravalib only speaks https to `protocol.server`; a requests session that sends those URLs to the sandbox's
plain-HTTP port is the one adapter here.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import pydantic
import pytest
import requests

from ..sandbox_harness import ALL_SCOPES, App, Harness, add_athlete, record

stravalib = pytest.importorskip("stravalib")
from stravalib import exc  # noqa: E402
from stravalib.strava_model import Zones  # noqa: E402


class ToSandbox(requests.Session):
    """https://<sandbox host:port>/… → http://…: stravalib builds https URLs only."""

    def __init__(self, host: str) -> None:
        super().__init__()
        self.host = host

    def request(self, method: str | bytes, url: str | bytes, *args: Any, **kwargs: Any) -> requests.Response:
        prefix = f"https://{self.host}"
        if isinstance(url, str) and url.startswith(prefix):
            url = "http://" + self.host + url[len(prefix) :]
        return super().request(method, url, *args, **kwargs)


def new_client(sb: Harness, access_token: str | None = None, **kwargs: Any) -> stravalib.Client:
    host = sb.server.base_url.removeprefix("http://")
    client = stravalib.Client(access_token=access_token, requests_session=ToSandbox(host), **kwargs)
    client.protocol.server = host
    return client


class Connected:
    def __init__(self, sb: Harness, athlete_id: int, activity_ids: list[int], **client: Any) -> None:
        self.sb, self.athlete_id, self.activity_ids = sb, athlete_id, activity_ids
        self.app: App = sb.new_app()
        self.client = new_client(sb, **client)
        code, self.granted = sb.consent(self.app, athlete_id, ALL_SCOPES)
        self.token = self.client.exchange_code_for_token(
            client_id=self.app.client_id, client_secret=self.app.client_secret, code=code
        )
        self.client.access_token = self.token["access_token"]


@pytest.fixture(scope="module")
def athlete(sb: Harness) -> tuple[int, list[int]]:
    aid = add_athlete(sb, premium=True)
    return aid, [record(sb, aid, days_ago=d, sport_type="Ride") for d in (9.0, 5.0, 2.0)]


@pytest.fixture
def connected(sb: Harness, athlete: tuple[int, list[int]], roomy_limits: None) -> Iterator[Connected]:
    yield Connected(sb, *athlete)


def test_oauth_exchange_and_refresh(connected: Connected, flavor: str) -> None:
    token = connected.token
    assert token["access_token"] and token["refresh_token"] and token["expires_at"] > dt.datetime.now().timestamp()
    refreshed = connected.client.refresh_access_token(
        client_id=connected.app.client_id,
        client_secret=connected.app.client_secret,
        refresh_token=token["refresh_token"],
    )
    # the access token is not expiring within the hour: the same one comes back (spec §3.2), with a refresh token
    assert refreshed["access_token"] == token["access_token"] and refreshed["refresh_token"]


def test_every_read_fitsync_uses(connected: Connected) -> None:
    client, aid = connected.client, connected.athlete_id
    athlete = client.get_athlete()
    assert athlete.id == aid and athlete.premium is True
    stats = client.get_athlete_stats(aid)
    assert stats.all_ride_totals is not None and stats.all_ride_totals.count == 3

    listed = list(client.get_activities(limit=50))
    assert {a.id for a in listed} == set(connected.activity_ids)
    # Zones answer for an activity with heart rate or device power; the sandbox's world records ≈ 4 % of rides
    # without a heart-rate strap, so the activity is one whose summary shows either.
    activity_id = next(a.id for a in reversed(listed) if a.has_heartrate or a.device_watts)
    detail = client.get_activity(activity_id, include_all_efforts=True)
    assert detail.id == activity_id and detail.sport_type is not None and detail.sport_type.root == "Ride"
    laps = list(client.get_activity_laps(activity_id))
    assert all(lap.activity is not None and lap.activity.id == activity_id for lap in laps)
    zones = client.get_activity_zones(activity_id)
    assert {z.type for z in zones} <= {"heartrate", "power"} and zones

    starred = list(client.get_starred_segments())
    assert starred, "a new athlete stars some segments"
    segment = client.get_segment(starred[0].id)
    assert segment.id == starred[0].id and segment.name == starred[0].name
    efforts = list(client.get_segment_efforts(starred[0].id, limit=20))
    for effort in efforts:
        assert effort.segment is not None and effort.segment.id == starred[0].id
        assert client.get_segment_effort(effort.id).id == effort.id


def test_athlete_zones_follow_the_flavour(connected: Connected, flavor: str) -> None:
    """stravalib expects the real object; the spec's array is the documented disagreement (docs/real-service.md)."""
    if flavor == "real":
        zones = connected.client.get_athlete_zones()
        assert isinstance(zones, Zones) and zones.heart_rate is not None
        bounds = list(zones.heart_rate.zones.root if zones.heart_rate.zones else [])
        assert bounds and bounds[-1].max == -1 and zones.heart_rate.custom_zones is False
    else:
        with pytest.raises(pydantic.ValidationError):
            connected.client.get_athlete_zones()


def test_another_athletes_stats_are_401_in_both_flavours(connected: Connected, flavor: str) -> None:
    """The spec gives no status; both flavours answer as the real service does, which stravalib reads as "stats can
    only be retrieved for the currently authenticated athlete"."""
    other = connected.sb.athlete_id()
    with pytest.raises(exc.AccessUnauthorized) as raised:
        connected.client.get_athlete_stats(other)
    assert "currently authenticated athlete" in str(raised.value)


def test_activity_and_effort_streams(connected: Connected, flavor: str) -> None:
    """stravalib asks with key_by_type=true and reads the keyed StreamSet: in both flavours (the real one adds
    `distance` and `time` to what was asked for, sandbox/world_streams.py)."""
    client = connected.client
    activity_id = next(a.id for a in client.get_activities(limit=10) if a.has_heartrate)
    detail = client.get_activity(activity_id)
    streams = client.get_activity_streams(activity_id, types=["heartrate", "altitude"])
    assert set(streams) == {"heartrate", "altitude"} | ({"distance", "time"} if flavor == "real" else set())
    heartrate = list(streams["heartrate"].data or [])
    assert streams["heartrate"].original_size == len(heartrate) == (detail.moving_time or 0) + 1
    assert streams["heartrate"].resolution == "high" and streams["heartrate"].series_type == "distance"
    assert max(heartrate) == detail.max_heartrate
    everything = client.get_activity_streams(activity_id)  # stravalib asks for every type when given none
    assert {"time", "distance", "latlng", "moving"} <= set(everything)
    assert list(everything["time"].data or [])[-1] == detail.elapsed_time
    effort = next(iter(detail.segment_efforts or []), None)
    if effort is not None:
        part = client.get_effort_streams(effort.id, types=["time", "distance"])
        times = list(part["time"].data or [])
        assert times == list(everything["time"].data or [])[effort.start_index : (effort.end_index or 0) + 1]


def test_missing_activity_is_object_not_found(connected: Connected) -> None:
    with pytest.raises(exc.ObjectNotFound):
        connected.client.get_activity(9_000_000_000_000)


def test_bad_token_is_access_unauthorized(sb: Harness) -> None:
    with pytest.raises(exc.AccessUnauthorized):
        new_client(sb, access_token="not-a-token").get_athlete()


def test_429_is_a_fault_with_the_rate_headers_stravalib_reads(sb: Harness, athlete: tuple[int, list[int]]) -> None:
    # stravalib's own limiter would sleep out the window once the headers say it is spent: off, to see the 429
    connected = Connected(sb, *athlete, rate_limit_requests=False)
    with sb.settings(read_limit_short=1, overall_limit_short=100):
        connected.client.get_athlete()  # may or may not be the first read of the window
        with pytest.raises(exc.Fault) as raised:
            for _ in range(3):
                connected.client.get_athlete()
    response = raised.value.response
    assert response is not None and response.status_code == 429
    assert "," in response.headers["X-ReadRateLimit-Usage"] and "," in response.headers["X-RateLimit-Limit"]


def test_deauthorize_at_stravalibs_address_revokes_every_token(connected: Connected, flavor: str) -> None:
    connected.client.deauthorize()  # POST /api/v3/oauth/deauthorize, bearer header
    with pytest.raises(exc.AccessUnauthorized):
        connected.client.get_athlete()
    with pytest.raises(exc.Fault):
        connected.client.refresh_access_token(
            client_id=connected.app.client_id,
            client_secret=connected.app.client_secret,
            refresh_token=connected.token["refresh_token"],
        )
