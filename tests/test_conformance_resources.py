"""Conformance: the resource operations (spec §4.1–§4.3, the resource rows of §8, representation facts of §2).

Rows are numbered as in the spec: the 1-based data row of the section's table (§4.3's sentence after its
table is numbered 10). The laps and activity-zones operations are not spec rows (issue 2, item 4, and the
real-service notes); their tests carry plain names.

| § | row | what the row says (short) | test |
|---|---|---|---|
| 4.1 | 1 | page, default 1 | test_s4_1_r1_page_defaults_to_1_and_pages_follow_on |
| 4.1 | 1 | page 0 or negative → 400 | test_s4_1_r1_page_zero_or_negative_is_400 |
| 4.1 | 2 | per_page, default 30 | test_s4_1_r2_per_page_defaults_to_30 |
| 4.1 | 2 | per_page above 200 is clamped to 200 | test_s4_1_r2_per_page_above_200_is_clamped_to_200 |
| 4.1 | 2 | per_page 0 or negative → 400 | test_s4_1_r2_per_page_zero_or_negative_is_400 |
| 4.2 | 1 | getStats: id must be the authenticated athlete | test_s4_2_r1_stats_only_for_the_authenticated_athlete |
| 4.2 | 1 | getStats: ActivityStats shape (real-service notes) | test_s4_2_r1_stats_shape |
| 4.2 | 1 | getStats: only Everyone activities | test_s4_2_r1_stats_count_only_everyone_activities_a, test_s4_2_r1_stats_all_totals_match_everyone_activities_b |
| 4.2 | 2 | getLoggedInAthlete: detailed with profile:read_all | test_s4_2_r2_athlete_detailed_with_profile_read_all |
| 4.2 | 2 | getLoggedInAthlete: summary otherwise | test_s4_2_r2_athlete_summary_without_profile_read_all |
| 4.2 | 2 | never the private keys | test_s4_2_r2_athlete_never_shows_private_keys |
| 4.2 | 3 | updateLoggedInAthlete: weight (form) → detailed athlete | test_s4_2_r3_update_weight_form_returns_detailed_athlete |
| 4.2 | 3 | weight as a query (path-located) parameter | test_s4_2_r3_update_weight_as_query_parameter |
| 4.2 | 3 | needs profile:write; weight required | test_s4_2_r3_update_weight_needs_profile_write, test_s4_2_r3_update_weight_is_required |
| 4.2 | 4 | zones need profile:read_all | test_s4_2_r4_zones_need_profile_read_all |
| 4.2 | 4 | zones: §2.5 shape, last max -1 | test_s4_2_r4_zones_shape |
| 4.2 | 5 | getSegmentById: detailed form | test_s4_2_r5_segment_is_detailed |
| 4.2 | 5 | counts and athlete_segment_stats agree with efforts | test_s4_2_r5_segment_counts_agree_with_efforts |
| 4.2 | 5 | athlete-specific data needs read_all | test_s4_2_r5_segment_athlete_data_needs_read_all |
| 4.2 | 5 | private segment: read_all, owner only | test_s4_2_r5_private_segment_needs_read_all_and_is_404_for_others |
| 4.2 | 5 | unknown segment → 404 | test_s4_2_r5_unknown_segment_is_404 |
| 4.2 | 6 | starred list omits private unless read_all | test_s4_2_r6_starred_omits_private_without_read_all |
| 4.2 | 6 | starred list paging | test_s4_2_r6_starred_pages |
| 4.2 | 7 | starSegment true/false, star_count ±1 | test_s4_2_r7_star_and_unstar_change_star_count_by_one |
| 4.2 | 7 | starSegment needs profile:write | test_s4_2_r7_star_needs_profile_write |
| 4.2 | 7 | starSegment's detailed segment: athlete data only with read_all | test_s4_2_r7_star_shows_athlete_data_only_with_read_all |
| 4.2 | 8 | getEffortsBySegmentId: subscription (402) | test_s4_2_r8_efforts_by_segment_need_a_subscription |
| 4.2 | 8 | filters by local start/end dates | test_s4_2_r8_efforts_filter_by_local_wall_clock_dates |
| 4.2 | 8 | paging, own efforts only | test_s4_2_r8_efforts_page_and_are_the_athletes_own |
| 4.2 | 9 | getSegmentEffortById: 402 / 403 / 404 / 200 | test_s4_2_r9_effort_needs_a_subscription, test_s4_2_r9_effort_of_another_athlete_is_403, test_s4_2_r9_unknown_effort_is_404, test_s4_2_r9_own_effort_is_detailed |
| 4.2 | 10 | exploreSegments: segments inside bounds, top 10 | test_s4_2_r10_explore_returns_segments_starting_inside_bounds |
| 4.2 | 10 | activity_type running / riding | test_s4_2_r10_explore_filters_by_activity_type |
| 4.2 | 10 | min_cat / max_cat filter; desc consistent | test_s4_2_r10_explore_filters_by_climb_category |
| 4.2 | 11 | createActivity → 201 detailed, manual | test_s4_2_r11_create_activity_is_201_detailed_and_manual |
| 4.2 | 11 | counts only toward the overall rate limit | test_s4_2_r11_create_activity_counts_only_toward_overall_limit |
| 4.2 | 11 | needs activity:write | test_s4_2_r11_create_activity_needs_activity_write |
| 4.2 | 12 | getActivityById: Only You needs activity:read_all | test_s4_2_r12_only_you_activity_needs_activity_read_all |
| 4.2 | 12 | another athlete's → 403, unknown → 404 | test_s4_2_r12_other_athletes_activity_is_403_unknown_is_404 |
| 4.2 | 12 | include_all_efforts adds hidden efforts | test_s4_2_r12_include_all_efforts_adds_hidden_efforts |
| 4.2 | 12 | detailed activity; splits sum to distance | test_s4_2_r12_activity_is_detailed_and_splits_sum_to_distance |
| 4.2 | 13 | updateActivityById: JSON body | test_s4_2_r13_update_activity_with_json_body |
| 4.2 | 13 | updateActivityById: form body | test_s4_2_r13_update_activity_with_form_body |
| 4.2 | 13 | needs activity:write; Only You also activity:read_all | test_s4_2_r13_update_needs_activity_write, test_s4_2_r13_update_only_you_needs_activity_read_all |
| 4.2 | 14 | listing: newest first | test_s4_2_r14_activities_newest_first |
| 4.2 | 14 | only `after` → oldest first | test_s4_2_r14_only_after_lists_oldest_first |
| 4.2 | 14 | before exclusive, after inclusive | test_s4_2_r14_before_is_exclusive_after_inclusive |
| 4.2 | 14 | Only Me filtered unless activity:read_all; needs activity:read | test_s4_2_r14_only_me_filtered_without_activity_read_all, test_s4_2_r14_listing_needs_activity_read |
| — | — | laps of an activity (real-service notes) | test_laps_of_an_activity |
| — | — | activity zones: 402 for non-premium, §2.5 shape | test_activity_zones_need_a_subscription, test_activity_zones_shape |
| 4.3 | 1 | name required | test_s4_3_r1_name_is_required |
| 4.3 | 2 | type optional | test_s4_3_r2_type_is_optional |
| 4.3 | 3 | sport_type required | test_s4_3_r3_sport_type_is_required_and_checked |
| 4.3 | 4 | start_date_local required, local wall clock | test_s4_3_r4_start_date_local_is_required, test_s4_3_r4_start_date_local_is_local_wall_clock |
| 4.3 | 5 | elapsed_time required integer | test_s4_3_r5_elapsed_time_is_required_integer |
| 4.3 | 6 | description optional | test_s4_3_r6_description_is_kept |
| 4.3 | 7 | distance float | test_s4_3_r7_distance_is_a_float |
| 4.3 | 8 | trainer 1 marks trainer | test_s4_3_r8_trainer_1_marks_trainer |
| 4.3 | 9 | commute 1 marks commute | test_s4_3_r9_commute_1_marks_commute |
| 4.3 | 10 | created activity has manual true | test_s4_3_r10_created_activity_is_manual |
| 8 | 8 | explore result size: top 10 | test_s8_r8_explore_returns_at_most_10 |
| 8 | 9 | explore bounds: exactly 4 numbers (and required) | test_s8_r9_explore_bounds_exactly_four_numbers, test_s8_r9_explore_bounds_are_required |
| 8 | 10 | min_cat, max_cat 0 to 5 | test_s8_r10_min_cat_max_cat_between_0_and_5 |
| 8 | 11 | default page 1 | test_s8_r11_default_page_is_1 |
| 8 | 12 | default per_page 30 | test_s8_r12_default_per_page_is_30 |
| 2.1 | 1 | ids integers; gear and map ids strings | test_s2_1_r1_ids_are_integers_gear_and_map_ids_strings |
| 2.1 | 2 | resource_state: summary 2 (no efforts), detailed 3 | test_s2_1_r2_summary_activity_is_state_2_detailed_3 |
| 2.2 | all | athlete fields and types | test_s2_2_athlete_fields |
| 2.3 | all | gear summary fields | test_s2_3_gear_summary_fields |
| 2.3 | 5 | gear distance = sum of its activities | test_s2_3_r5_gear_distance_is_the_sum_of_its_activities |
| 2.6 | all | segment fields | test_s2_6_segment_fields |
| 2.7 | all | explorer segment fields | test_s2_7_explorer_segment_fields |
| 2.8 | 1 | map id "a<activity id>" | test_s2_8_r1_activity_map_id_is_a_plus_id |
| 2.9 | all | segment effort fields | test_s2_9_effort_fields |
| 2.10 | all | detailed activity, split and lap fields | test_s2_10_activity_fields |
| 2.10 | 13 | start_date_local ends in Z, = start_date + utc_offset | test_s2_10_r13_start_date_local_is_wall_clock_with_z |
| 2.10 | 14 | timezone label "(GMT±hh:mm) Area/City" | test_s2_10_r14_timezone_label |
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import polyline
import pytest

from fitsync.sandbox.scopes import IMPLIES

from .sandbox_harness import ALL_SCOPES, Grant, Harness, assert_fault, query

CLIMB_DESC = ["NC", "4", "3", "2", "1", "HC"]
STATS_KEYS = {"biggest_ride_distance", "biggest_climb_elevation_gain"} | {
    f"{p}_{s}_totals" for p in ("recent", "ytd", "all") for s in ("ride", "run", "swim")
}
TOTALS_KEYS = {"count", "distance", "moving_time", "elapsed_time", "elevation_gain", "achievement_count"}
RIDE_TYPES = {"Ride", "VirtualRide", "EBikeRide"}
PRIVATE_ATHLETE_KEYS = {"home", "hr_zones", "ftp_history", "max_hr"}
DETAILED_ONLY_ATHLETE_KEYS = {
    "follower_count",
    "friend_count",
    "mutual_friend_count",
    "athlete_type",
    "date_preference",
    "measurement_preference",
    "clubs",
    "ftp",
    "weight",
    "bikes",
    "shoes",
}
WORLD = "-90,-180,90,180"
MANUAL = {
    "name": "Conformance manual",
    "sport_type": "Run",
    "start_date_local": "2019-06-01T07:30:00Z",
    "elapsed_time": "1800",
}


# helpers -------------------------------------------------------------------------------------------


def ok(response: httpx.Response, status: int = 200) -> Any:
    assert response.status_code == status, f"{response.status_code} != {status}: {response.text[:500]}"
    return response.json()


def assert_missing_scope(response: httpx.Response, scope: str) -> None:
    body = assert_fault(response, 401)
    assert body["errors"] == [{"resource": "AccessToken", "field": f"{scope}_permission", "code": "missing"}]


def all_but(*scopes: str) -> tuple[str, ...]:
    """Every scope except `scopes` and those that imply them: the broadest grant still lacking them."""
    drop = set(scopes) | {s for s, implied in IMPLIES.items() if implied & set(scopes)}
    return tuple(s for s in ALL_SCOPES if s not in drop)


def epoch(iso: str) -> int:
    return int(dt.datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp())


def new_athlete(sb: Harness, premium: bool = True) -> int:
    return ok(sb.console.post("/athletes", json={"premium": premium}))["id"]


def record(sb: Harness, athlete_id: int, **body: Any) -> int:
    return ok(sb.console.post(f"/athletes/{athlete_id}/activities", json=body))["id"]


def listing(sb: Harness, grant: Grant, **params: Any) -> list[dict[str, Any]]:
    """Every page of GET /athlete/activities (200 a page), in the order the service gives."""
    out: list[dict[str, Any]] = []
    for page in range(1, 1000):
        chunk = ok(sb.get(grant, "/athlete/activities", params={"per_page": 200, **params, "page": page}))
        out += chunk
        if len(chunk) < 200:
            return out
    raise AssertionError("too many pages")


def stored_activities(sb: Harness, athlete_id: int) -> list[dict[str, Any]]:
    return query(
        sb,
        """SELECT id, start_ts, visibility, type, gear_id, json_extract(data, '$.distance') AS distance
                        FROM activities WHERE athlete_id = ? ORDER BY start_ts""",
        athlete_id,
    )


def home(sb: Harness, athlete_id: int) -> dict[str, Any]:
    return query(
        sb,
        "SELECT json_extract(data, '$.home.lat') AS lat, json_extract(data, '$.home.lng') AS lng,"
        " json_extract(data, '$.home.timezone') AS tz FROM athletes WHERE id = ?",
        athlete_id,
    )[0]


def busiest_public_segment(sb: Harness, athlete_id: int, minimum: int = 3) -> int:
    rows = query(
        sb,
        """SELECT e.segment_id, COUNT(*) AS n FROM efforts e JOIN segments s ON s.id = e.segment_id
                        WHERE e.athlete_id = ? AND s.private = 0 GROUP BY e.segment_id HAVING n >= ?
                        ORDER BY n DESC, e.segment_id LIMIT 1""",
        athlete_id,
        minimum,
    )
    assert rows, "the world gives the premium cyclist several efforts on a public segment"
    return rows[0]["segment_id"]


def own_private_segment(sb: Harness, athlete_id: int) -> int:
    rows = query(sb, "SELECT id FROM segments WHERE private = 1 AND owner_id = ? ORDER BY id", athlete_id)
    assert rows, "athlete 0 has a private segment (conftest)"
    return rows[0]["id"]


def visible_activity(sb: Harness, athlete_id: int, visibility: str = "everyone", with_efforts: bool = False) -> int:
    rows = query(
        sb,
        f"""SELECT a.id FROM activities a WHERE a.athlete_id = ? AND a.visibility = ?
                         {"AND EXISTS (SELECT 1 FROM efforts e WHERE e.activity_id = a.id)" if with_efforts else ""}
                         ORDER BY a.start_ts DESC LIMIT 1""",
        athlete_id,
        visibility,
    )
    if rows:
        return rows[0]["id"]
    return record(sb, athlete_id, visibility=visibility, sport_type="Ride")


# fixtures ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def premium_id(sb: Harness) -> int:
    return sb.athlete_id(premium=True, index=0)


@pytest.fixture(scope="module")
def free_id(sb: Harness) -> int:
    return sb.athlete_id(premium=False, index=0)


@pytest.fixture
def full(sb: Harness, premium_id: int) -> Grant:
    """All scopes for the premium cyclist, on a fresh app (its own rate budget)."""
    return sb.connect(athlete_id=premium_id)


# §4.1 shared query parameters ----------------------------------------------------------------------


def test_s4_1_r1_page_defaults_to_1_and_pages_follow_on(sb, full):
    default = [a["id"] for a in ok(sb.get(full, "/athlete/activities", params={"per_page": 5}))]
    first = [a["id"] for a in ok(sb.get(full, "/athlete/activities", params={"per_page": 5, "page": 1}))]
    second = [a["id"] for a in ok(sb.get(full, "/athlete/activities", params={"per_page": 5, "page": 2}))]
    ten = [a["id"] for a in ok(sb.get(full, "/athlete/activities", params={"per_page": 10}))]
    assert len(default) == 5 and default == first
    assert first + second == ten


@pytest.mark.parametrize("value", ["0", "-1"])
@pytest.mark.parametrize("path", ["/athlete/activities", "/segments/starred", "/segment_efforts"])
def test_s4_1_r1_page_zero_or_negative_is_400(sb, full, premium_id, path, value):
    params = {"page": value}
    if path == "/segment_efforts":
        params["segment_id"] = str(busiest_public_segment(sb, premium_id))
    assert_fault(sb.get(full, path, params=params), 400, field="page")


def test_s4_1_r2_per_page_defaults_to_30(sb, full, premium_id):
    assert len(stored_activities(sb, premium_id)) > 30
    assert len(ok(sb.get(full, "/athlete/activities"))) == 30


def test_s4_1_r2_per_page_above_200_is_clamped_to_200(sb):
    athlete = new_athlete(sb)
    start = dt.datetime(2018, 1, 1, 6, tzinfo=dt.UTC)
    for n in range(205):
        record(
            sb,
            athlete,
            sport_type="Walk",
            distance=1000.0,
            moving_time=600,
            start_date=(start + dt.timedelta(hours=n)).isoformat(),
        )
    grant = sb.connect(athlete_id=athlete)
    assert len(ok(sb.get(grant, "/athlete/activities", params={"per_page": 500}))) == 200
    assert len(ok(sb.get(grant, "/athlete/activities", params={"per_page": 201}))) == 200
    assert len(ok(sb.get(grant, "/athlete/activities", params={"per_page": 200, "page": 2}))) == 5
    assert len(ok(sb.get(grant, "/athlete/activities", params={"per_page": 500, "page": 2}))) == 5


@pytest.mark.parametrize("value", ["0", "-1", "-200"])
@pytest.mark.parametrize("path", ["/athlete/activities", "/segments/starred", "/segment_efforts"])
def test_s4_1_r2_per_page_zero_or_negative_is_400(sb, full, premium_id, path, value):
    params = {"per_page": value}
    if path == "/segment_efforts":
        params["segment_id"] = str(busiest_public_segment(sb, premium_id))
    assert_fault(sb.get(full, path, params=params), 400, field="per_page")


# §4.2 r1 getStats ----------------------------------------------------------------------------------


def test_s4_2_r1_stats_only_for_the_authenticated_athlete(sb, full, premium_id, free_id):
    assert set(ok(sb.get(full, f"/athletes/{premium_id}/stats"))) == STATS_KEYS
    # the spec gives no status: the real service's 401, as clients expect (real-service.md, 6)
    assert_fault(sb.get(full, f"/athletes/{free_id}/stats"), 401)
    assert_fault(sb.get(full, "/athletes/48999999/stats"), 401)


def test_s4_2_r1_stats_shape(sb, full, premium_id):
    stats = ok(sb.get(full, f"/athletes/{premium_id}/stats"))
    assert set(stats) == STATS_KEYS
    assert isinstance(stats["biggest_ride_distance"], (int, float)) and stats["biggest_ride_distance"] > 0
    assert isinstance(stats["biggest_climb_elevation_gain"], (int, float))
    for key in STATS_KEYS - {"biggest_ride_distance", "biggest_climb_elevation_gain"}:
        totals = stats[key]
        assert set(totals) == TOTALS_KEYS, key
        assert isinstance(totals["count"], int) and totals["count"] >= 0
        assert all(isinstance(totals[k], (int, float)) and totals[k] >= 0 for k in TOTALS_KEYS)
    for sport in ("ride", "run", "swim"):
        for k in ("count", "distance", "moving_time"):
            assert stats[f"all_{sport}_totals"][k] >= stats[f"ytd_{sport}_totals"][k]
            assert stats[f"all_{sport}_totals"][k] >= stats[f"recent_{sport}_totals"][k]
    assert stats["all_ride_totals"]["count"] > 0


def test_s4_2_r1_stats_count_only_everyone_activities_a(sb):
    athlete = new_athlete(sb)
    grant = sb.connect(athlete_id=athlete)
    before = ok(sb.get(grant, f"/athletes/{athlete}/stats"))
    record(sb, athlete, visibility="followers_only", sport_type="Ride")
    record(sb, athlete, visibility="only_me", sport_type="Ride")
    assert ok(sb.get(grant, f"/athletes/{athlete}/stats")) == before
    everyone = record(sb, athlete, visibility="everyone", sport_type="Ride")
    distance = ok(sb.get(grant, f"/activities/{everyone}"))["distance"]
    after = ok(sb.get(grant, f"/athletes/{athlete}/stats"))
    for period in ("recent", "all"):
        assert after[f"{period}_ride_totals"]["count"] == before[f"{period}_ride_totals"]["count"] + 1
        assert after[f"{period}_ride_totals"]["distance"] == pytest.approx(
            before[f"{period}_ride_totals"]["distance"] + distance, abs=0.2
        )
    assert after["all_run_totals"] == before["all_run_totals"]


def test_s4_2_r1_stats_all_totals_match_everyone_activities_b(sb, full, premium_id):
    stats = ok(sb.get(full, f"/athletes/{premium_id}/stats"))
    everyone = [a for a in stored_activities(sb, premium_id) if a["visibility"] == "everyone"]
    for sport, types in (("ride", RIDE_TYPES), ("run", {"Run", "VirtualRun"}), ("swim", {"Swim"})):
        chosen = [a for a in everyone if a["type"] in types]
        assert stats[f"all_{sport}_totals"]["count"] == len(chosen), sport
        assert stats[f"all_{sport}_totals"]["distance"] == pytest.approx(sum(a["distance"] for a in chosen), abs=0.2)
    assert stats["biggest_ride_distance"] == max(a["distance"] for a in everyone if a["type"] in RIDE_TYPES)
    hidden_rides = [
        a for a in stored_activities(sb, premium_id) if a["visibility"] != "everyone" and a["type"] in RIDE_TYPES
    ]
    assert hidden_rides, "the world has non-Everyone rides, so the filter is exercised"


# §4.2 r2 getLoggedInAthlete ------------------------------------------------------------------------


def test_s4_2_r2_athlete_detailed_with_profile_read_all(sb, premium_id):
    body = ok(sb.get(sb.connect(("profile:read_all",), athlete_id=premium_id), "/athlete"))
    assert body["id"] == premium_id and body["resource_state"] == 3
    assert DETAILED_ONLY_ATHLETE_KEYS <= set(body)
    assert isinstance(body["weight"], (int, float)) and body["bikes"]


def test_s4_2_r2_athlete_summary_without_profile_read_all(sb, premium_id):
    body = ok(sb.get(sb.connect(all_but("profile:read_all"), athlete_id=premium_id), "/athlete"))
    assert body["id"] == premium_id and body["resource_state"] == 2
    assert not DETAILED_ONLY_ATHLETE_KEYS & set(body)
    assert {"firstname", "lastname", "city", "premium", "profile"} <= set(body)


def test_s4_2_r2_athlete_never_shows_private_keys(sb, premium_id):
    for scopes in (ALL_SCOPES, ("read",)):
        body = ok(sb.get(sb.connect(scopes, athlete_id=premium_id), "/athlete"))
        assert not PRIVATE_ATHLETE_KEYS & set(body)
        assert "America/" not in str(body) and "Australia/" not in str(body)  # no home time zone either


# §4.2 r3 updateLoggedInAthlete ---------------------------------------------------------------------


@pytest.fixture
def restore_weight(sb, premium_id):
    grant = sb.connect(athlete_id=premium_id)
    weight = ok(sb.get(grant, "/athlete"))["weight"]
    yield weight
    ok(sb.api(grant, "PUT", "/athlete", data={"weight": str(weight)}))


def test_s4_2_r3_update_weight_form_returns_detailed_athlete(sb, premium_id, restore_weight):
    grant = sb.connect(("profile:write",), athlete_id=premium_id)
    new = round(restore_weight + 1.3, 1)
    body = ok(sb.api(grant, "PUT", "/athlete", files={"weight": (None, str(new))}))  # multipart/form-data
    assert body["resource_state"] == 3 and body["weight"] == new and "bikes" in body
    assert ok(sb.get(sb.connect(athlete_id=premium_id), "/athlete"))["weight"] == new
    body = ok(sb.api(grant, "PUT", "/athlete", data={"weight": str(new + 0.5)}))  # urlencoded form too
    assert body["weight"] == pytest.approx(new + 0.5)


def test_s4_2_r3_update_weight_as_query_parameter(sb, premium_id, restore_weight):
    grant = sb.connect(("profile:write",), athlete_id=premium_id)
    new = round(restore_weight - 0.7, 1)
    body = ok(sb.api(grant, "PUT", "/athlete", params={"weight": str(new)}))
    assert body["resource_state"] == 3 and body["weight"] == new


def test_s4_2_r3_update_weight_needs_profile_write(sb, premium_id, restore_weight):
    grant = sb.connect(all_but("profile:write"), athlete_id=premium_id)
    assert_missing_scope(sb.api(grant, "PUT", "/athlete", data={"weight": "99.9"}), "profile:write")
    assert ok(sb.get(grant, "/athlete"))["weight"] == restore_weight


def test_s4_2_r3_update_weight_is_required(sb, premium_id):
    grant = sb.connect(("profile:write",), athlete_id=premium_id)
    assert_fault(sb.api(grant, "PUT", "/athlete", data={}), 400, field="weight", code="missing")


# §4.2 r4 zones ------------------------------------------------------------------------------------


def test_s4_2_r4_zones_need_profile_read_all(sb, premium_id):
    assert_missing_scope(
        sb.get(sb.connect(all_but("profile:read_all"), athlete_id=premium_id), "/athlete/zones"), "profile:read_all"
    )
    assert ok(sb.get(sb.connect(("profile:read_all",), athlete_id=premium_id), "/athlete/zones"))


def test_s4_2_r4_zones_shape(sb, full):
    zones = ok(sb.get(full, "/athlete/zones"))
    assert isinstance(zones, list) and {z["type"] for z in zones} >= {"heartrate", "power"}
    for zone in zones:
        assert isinstance(zone["type"], str) and isinstance(zone["resource_state"], int)
        assert isinstance(zone["sensor_based"], bool)
        buckets = zone["distribution_buckets"]
        assert len(buckets) >= 2
        for bucket in buckets:
            assert set(bucket) == {"min", "max", "time"}
            assert isinstance(bucket["time"], int) and bucket["time"] >= 0
        assert buckets[-1]["max"] == -1
        assert all(b["max"] > b["min"] for b in buckets[:-1])
        assert all(a["max"] == b["min"] for a, b in zip(buckets, buckets[1:]))


# §4.2 r5 getSegmentById ----------------------------------------------------------------------------


def test_s4_2_r5_segment_is_detailed(sb, full, premium_id):
    body = ok(sb.get(full, f"/segments/{busiest_public_segment(sb, premium_id)}"))
    assert body["resource_state"] == 3
    for key in (
        "created_at",
        "updated_at",
        "total_elevation_gain",
        "map",
        "effort_count",
        "athlete_count",
        "star_count",
        "athlete_segment_stats",
    ):
        assert key in body, key
    assert isinstance(body["athlete_segment_stats"], dict)


def test_s4_2_r5_segment_counts_agree_with_efforts(sb, full, premium_id):
    segment_id = busiest_public_segment(sb, premium_id)
    body = ok(sb.get(full, f"/segments/{segment_id}"))
    stored = query(sb, "SELECT athlete_id, hidden FROM efforts WHERE segment_id = ?", segment_id)
    shown = [e for e in stored if not e["hidden"]]
    assert body["effort_count"] == len(shown)
    assert body["athlete_count"] == len({e["athlete_id"] for e in shown})
    assert body["star_count"] == query(sb, "SELECT COUNT(*) AS n FROM stars WHERE segment_id = ?", segment_id)[0]["n"]
    mine = [
        e
        for e in ok(sb.get(full, "/segment_efforts", params={"segment_id": segment_id, "per_page": 200}))
        if not e["hidden"]
    ]
    stats = body["athlete_segment_stats"]
    assert stats["effort_count"] == len(mine) >= 3
    best = min(mine, key=lambda e: (e["elapsed_time"], e["start_date"]))
    assert stats["pr_elapsed_time"] == best["elapsed_time"]
    assert stats["pr_date"] == best["start_date_local"][:10]


def test_s4_2_r5_segment_athlete_data_needs_read_all(sb, premium_id):
    segment_id = busiest_public_segment(sb, premium_id)
    body = ok(sb.get(sb.connect(all_but("read_all"), athlete_id=premium_id), f"/segments/{segment_id}"))
    assert body["resource_state"] == 3 and body["athlete_segment_stats"] is None
    with_read_all = ok(sb.get(sb.connect(("read_all",), athlete_id=premium_id), f"/segments/{segment_id}"))
    assert with_read_all["athlete_segment_stats"]["effort_count"] >= 3


def test_s4_2_r5_private_segment_needs_read_all_and_is_404_for_others(sb, premium_id, free_id):
    private = own_private_segment(sb, premium_id)
    body = ok(sb.get(sb.connect(("read_all",), athlete_id=premium_id), f"/segments/{private}"))
    assert body["id"] == private and body["private"] is True
    assert_missing_scope(
        sb.get(sb.connect(all_but("read_all"), athlete_id=premium_id), f"/segments/{private}"), "read_all"
    )
    assert_fault(sb.get(sb.connect(athlete_id=free_id), f"/segments/{private}"), 404)


def test_s4_2_r5_unknown_segment_is_404(sb, full):
    assert_fault(sb.get(full, "/segments/1999999"), 404)
    assert_fault(sb.get(full, "/segments/9223372036854775807"), 404)


# §4.2 r6 starred segments --------------------------------------------------------------------------


def test_s4_2_r6_starred_omits_private_without_read_all(sb, premium_id):
    private = own_private_segment(sb, premium_id)
    grant = sb.connect(athlete_id=premium_id)
    ok(sb.api(grant, "PUT", f"/segments/{private}/starred", data={"starred": "true"}))
    with_all = ok(sb.get(grant, "/segments/starred", params={"per_page": 200}))
    assert private in [s["id"] for s in with_all]
    assert all(s["starred"] is True and s["resource_state"] == 2 and "effort_count" not in s for s in with_all)
    without = ok(
        sb.get(sb.connect(all_but("read_all"), athlete_id=premium_id), "/segments/starred", params={"per_page": 200})
    )
    assert [s["id"] for s in without] == [s["id"] for s in with_all if s["id"] != private]
    assert not any(s["private"] for s in without)


def test_s4_2_r6_starred_pages(sb, full, premium_id):
    stored = query(sb, "SELECT COUNT(*) AS n FROM stars WHERE athlete_id = ?", premium_id)[0]["n"]
    everything = [s["id"] for s in ok(sb.get(full, "/segments/starred", params={"per_page": 200}))]
    assert len(everything) == stored >= 3
    paged: list[int] = []
    for page in range(1, len(everything) + 2):
        chunk = ok(sb.get(full, "/segments/starred", params={"page": page, "per_page": 2}))
        assert len(chunk) <= 2
        paged += [s["id"] for s in chunk]
    assert paged == everything


# §4.2 r7 starSegment -------------------------------------------------------------------------------


def _unstarred_public_segment(sb: Harness, athlete_id: int) -> int:
    return query(
        sb,
        """SELECT id FROM segments WHERE private = 0 AND id NOT IN
                        (SELECT segment_id FROM stars WHERE athlete_id = ?) ORDER BY id LIMIT 1""",
        athlete_id,
    )[0]["id"]


def test_s4_2_r7_star_and_unstar_change_star_count_by_one(sb, premium_id):
    segment_id = _unstarred_public_segment(sb, premium_id)
    grant = sb.connect(athlete_id=premium_id)
    before = ok(sb.get(grant, f"/segments/{segment_id}"))
    assert before["starred"] is False
    starred = ok(sb.api(grant, "PUT", f"/segments/{segment_id}/starred", data={"starred": "true"}))
    assert starred["resource_state"] == 3 and starred["starred"] is True
    assert starred["star_count"] == before["star_count"] + 1
    assert segment_id in [s["id"] for s in ok(sb.get(grant, "/segments/starred", params={"per_page": 200}))]
    again = ok(sb.api(grant, "PUT", f"/segments/{segment_id}/starred", data={"starred": "true"}))
    assert again["star_count"] == before["star_count"] + 1  # starring twice counts once
    unstarred = ok(sb.api(grant, "PUT", f"/segments/{segment_id}/starred", data={"starred": "false"}))
    assert unstarred["starred"] is False and unstarred["star_count"] == before["star_count"]
    assert segment_id not in [s["id"] for s in ok(sb.get(grant, "/segments/starred", params={"per_page": 200}))]


def test_s4_2_r7_star_shows_athlete_data_only_with_read_all(sb, premium_id):
    segment_id = busiest_public_segment(sb, premium_id)  # starred in the world or not: starring again is harmless
    plain = ok(
        sb.api(
            sb.connect(("profile:write",), athlete_id=premium_id),
            "PUT",
            f"/segments/{segment_id}/starred",
            data={"starred": "true"},
        )
    )
    assert plain["starred"] is True and plain["athlete_segment_stats"] is None
    full = ok(
        sb.api(
            sb.connect(("profile:write", "read_all"), athlete_id=premium_id),
            "PUT",
            f"/segments/{segment_id}/starred",
            data={"starred": "true"},
        )
    )
    assert full["athlete_segment_stats"]["effort_count"] >= 1


def test_s4_2_r7_star_needs_profile_write(sb, premium_id):
    segment_id = _unstarred_public_segment(sb, premium_id)
    grant = sb.connect(all_but("profile:write"), athlete_id=premium_id)
    assert_missing_scope(
        sb.api(grant, "PUT", f"/segments/{segment_id}/starred", data={"starred": "true"}), "profile:write"
    )
    assert ok(sb.get(grant, f"/segments/{segment_id}"))["starred"] is False


# §4.2 r8 getEffortsBySegmentId ---------------------------------------------------------------------


def test_s4_2_r8_efforts_by_segment_need_a_subscription(sb, free_id):
    segment_id = busiest_public_segment(sb, free_id, minimum=1)
    body = assert_fault(
        sb.get(sb.connect(athlete_id=free_id), "/segment_efforts", params={"segment_id": segment_id}), 402
    )
    assert body["message"] == "Payment Required"


def test_s4_2_r8_efforts_filter_by_local_wall_clock_dates(sb, full, premium_id):
    segment_id = busiest_public_segment(sb, premium_id)
    efforts = ok(sb.get(full, "/segment_efforts", params={"segment_id": segment_id, "per_page": 200}))
    assert len(efforts) >= 3
    middle = efforts[len(efforts) // 2]
    local = middle["start_date_local"]
    assert local != middle["start_date"]  # the home zone is not UTC, so local and UTC bounds differ
    exact = ok(
        sb.get(
            full,
            "/segment_efforts",
            params={"segment_id": segment_id, "start_date_local": local, "end_date_local": local},
        )
    )
    assert [e["id"] for e in exact] == [middle["id"]]
    since = ok(
        sb.get(full, "/segment_efforts", params={"segment_id": segment_id, "start_date_local": local, "per_page": 200})
    )
    assert [e["id"] for e in since] == [e["id"] for e in efforts if e["start_date_local"] >= local]
    until = ok(
        sb.get(full, "/segment_efforts", params={"segment_id": segment_id, "end_date_local": local, "per_page": 200})
    )
    assert [e["id"] for e in until] == [e["id"] for e in efforts if e["start_date_local"] <= local]


def test_s4_2_r8_efforts_page_and_are_the_athletes_own(sb, full, premium_id):
    segment_id = busiest_public_segment(sb, premium_id)
    everything = ok(sb.get(full, "/segment_efforts", params={"segment_id": segment_id, "per_page": 200}))
    assert {e["athlete"]["id"] for e in everything} == {premium_id}
    assert all(e["segment"]["id"] == segment_id for e in everything)
    stored = query(
        sb, "SELECT COUNT(*) AS n FROM efforts WHERE segment_id = ? AND athlete_id != ?", segment_id, premium_id
    )
    assert stored[0]["n"] > 0, "others ride this segment too, so the owner filter is exercised"
    paged: list[int] = []
    for page in range(1, len(everything) + 2):
        paged += [
            e["id"]
            for e in ok(
                sb.get(full, "/segment_efforts", params={"segment_id": segment_id, "page": page, "per_page": 1})
            )
        ]
    assert paged == [e["id"] for e in everything]
    assert_fault(sb.get(full, "/segment_efforts", params={"segment_id": 1999999}), 404)


# §4.2 r9 getSegmentEffortById ----------------------------------------------------------------------


def _effort_of(sb: Harness, athlete_id: int) -> int:
    return query(
        sb,
        """SELECT e.id FROM efforts e JOIN activities a ON a.id = e.activity_id
                        JOIN segments s ON s.id = e.segment_id
                        WHERE e.athlete_id = ? AND a.visibility = 'everyone' AND s.private = 0 AND e.hidden = 0
                        ORDER BY e.id LIMIT 1""",
        athlete_id,
    )[0]["id"]


def test_s4_2_r9_effort_needs_a_subscription(sb, free_id):
    assert_fault(sb.get(sb.connect(athlete_id=free_id), f"/segment_efforts/{_effort_of(sb, free_id)}"), 402)


def test_s4_2_r9_effort_of_another_athlete_is_403(sb, full, free_id):
    assert_fault(sb.get(full, f"/segment_efforts/{_effort_of(sb, free_id)}"), 403)


def test_s4_2_r9_unknown_effort_is_404(sb, full):
    assert_fault(sb.get(full, "/segment_efforts/29999999999"), 404)


def test_s4_2_r9_own_effort_is_detailed(sb, full, premium_id):
    effort_id = _effort_of(sb, premium_id)
    body = ok(sb.get(full, f"/segment_efforts/{effort_id}"))
    assert body["id"] == effort_id and body["resource_state"] == 3 and body["athlete"]["id"] == premium_id
    stats = body["athlete_segment_stats"]
    assert set(stats) == {"pr_elapsed_time", "pr_date", "effort_count"} and stats["effort_count"] >= 1
    assert stats["pr_elapsed_time"] <= body["elapsed_time"] and body["hidden"] is False


# §4.2 r10 exploreSegments --------------------------------------------------------------------------


def _explore(sb: Harness, grant: Grant, **params: Any) -> list[dict[str, Any]]:
    return ok(sb.get(grant, "/segments/explore", params=params))["segments"]


def _box(lat: float, lng: float, d: float = 0.3) -> str:
    return f"{lat - d},{lng - d},{lat + d},{lng + d}"


def test_s4_2_r10_explore_returns_segments_starting_inside_bounds(sb, full, premium_id):
    h = home(sb, premium_id)
    bounds = _box(h["lat"], h["lng"])
    found = _explore(sb, full, bounds=bounds, activity_type="riding")
    s, w, n, e = map(float, bounds.split(","))
    expected = query(
        sb,
        """SELECT id FROM segments WHERE activity_type = 'Ride' AND (private = 0 OR owner_id = ?)
                            AND start_lat BETWEEN ? AND ? AND start_lng BETWEEN ? AND ?""",
        premium_id,
        s,
        n,
        w,
        e,
    )
    assert found and len(found) == min(10, len(expected))
    assert {x["id"] for x in found} <= {x["id"] for x in expected}
    for seg in found:
        assert s <= seg["start_latlng"][0] <= n and w <= seg["start_latlng"][1] <= e
    assert _explore(sb, full, bounds="0,0,0.001,0.001") == []  # the middle of the Gulf of Guinea


def test_s4_2_r10_explore_filters_by_activity_type(sb, full, premium_id):
    h = home(sb, premium_id)
    kinds = {r["id"]: r["activity_type"] for r in query(sb, "SELECT id, activity_type FROM segments")}
    running = _explore(sb, full, bounds=_box(h["lat"], h["lng"]), activity_type="running")
    riding = _explore(sb, full, bounds=_box(h["lat"], h["lng"]), activity_type="riding")
    assert running and riding
    assert {kinds[s["id"]] for s in running} == {"Run"}
    assert {kinds[s["id"]] for s in riding} == {"Ride"}
    assert_fault(
        sb.get(full, "/segments/explore", params={"bounds": WORLD, "activity_type": "swimming"}),
        400,
        field="activity_type",
    )


def test_s4_2_r10_explore_filters_by_climb_category(sb, full):
    seen: set[int] = set()
    for lo, hi in ((0, 0), (1, 2), (3, 5), (5, 5), (0, 5)):
        found = _explore(sb, full, bounds=WORLD, min_cat=lo, max_cat=hi)
        expected = query(
            sb,
            """SELECT COUNT(*) AS n FROM segments WHERE activity_type = 'Ride' AND private = 0
                                AND climb_category BETWEEN ? AND ?""",
            lo,
            hi,
        )[0]["n"]
        assert len(found) == min(10, expected), (lo, hi)
        for seg in found:
            assert lo <= seg["climb_category"] <= hi
            assert seg["climb_category_desc"] == CLIMB_DESC[seg["climb_category"]]
            seen.add(seg["climb_category"])
    assert len(seen) >= 3, "the world has segments of several climb categories"


# §4.2 r11 createActivity ---------------------------------------------------------------------------


def test_s4_2_r11_create_activity_is_201_detailed_and_manual(sb, premium_id):
    grant = sb.connect(("activity:write", "activity:read"), athlete_id=premium_id)
    created = ok(sb.api(grant, "POST", "/activities", data={**MANUAL, "distance": "5000"}), 201)
    assert created["resource_state"] == 3 and created["manual"] is True
    assert created["athlete"]["id"] == premium_id and created["name"] == MANUAL["name"]
    assert created["segment_efforts"] == [] and "splits_metric" in created and "laps" in created
    fetched = ok(sb.get(grant, f"/activities/{created['id']}"))
    assert fetched["name"] == MANUAL["name"] and fetched["manual"] is True and fetched["distance"] == 5000.0


def _usage(response: httpx.Response, header: str) -> tuple[int, int]:
    short, daily = response.headers[header].split(",")
    return int(short), int(daily)


def test_s4_2_r11_create_activity_counts_only_toward_overall_limit(sb, premium_id):
    grant = sb.connect(athlete_id=premium_id)
    with sb.settings(short_window=10**9, long_window=10**9):  # no window boundary falls inside the test
        first = sb.get(grant, "/athlete")
        created = sb.api(grant, "POST", "/activities", data=MANUAL)
        last = sb.get(grant, "/athlete")
    assert created.status_code == 201, created.text
    assert _usage(created, "X-ReadRateLimit-Usage") == _usage(first, "X-ReadRateLimit-Usage")
    assert _usage(created, "X-RateLimit-Usage") == tuple(n + 1 for n in _usage(first, "X-RateLimit-Usage"))
    assert _usage(last, "X-ReadRateLimit-Usage") == tuple(n + 1 for n in _usage(first, "X-ReadRateLimit-Usage"))
    assert _usage(last, "X-RateLimit-Usage") == tuple(n + 2 for n in _usage(first, "X-RateLimit-Usage"))


def test_s4_2_r11_create_activity_needs_activity_write(sb, premium_id):
    grant = sb.connect(all_but("activity:write"), athlete_id=premium_id)
    before = sb.snapshot(("activities",))
    assert_missing_scope(sb.api(grant, "POST", "/activities", data=MANUAL), "activity:write")
    assert sb.snapshot(("activities",)) == before


# §4.2 r12 getActivityById --------------------------------------------------------------------------


def test_s4_2_r12_only_you_activity_needs_activity_read_all(sb, premium_id):
    only_me = visible_activity(sb, premium_id, "only_me")
    assert_missing_scope(
        sb.get(sb.connect(all_but("activity:read_all"), athlete_id=premium_id), f"/activities/{only_me}"),
        "activity:read_all",
    )
    body = ok(sb.get(sb.connect(("activity:read_all",), athlete_id=premium_id), f"/activities/{only_me}"))
    assert body["id"] == only_me and body["private"] is True
    for visibility in ("everyone", "followers_only"):
        shown = visible_activity(sb, premium_id, visibility)
        assert ok(sb.get(sb.connect(("activity:read",), athlete_id=premium_id), f"/activities/{shown}"))["id"] == shown


def test_s4_2_r12_other_athletes_activity_is_403_unknown_is_404(sb, full, free_id):
    assert_fault(sb.get(full, f"/activities/{visible_activity(sb, free_id)}"), 403)
    assert_fault(sb.get(full, "/activities/8999999999"), 404)


def _activity_with_hidden_effort(sb: Harness) -> tuple[int, int]:
    """(activity, athlete) of a stored hidden effort; efforts are ~2 % hidden, so record more rides if needed."""
    sql = """SELECT e.activity_id, e.athlete_id FROM efforts e WHERE e.hidden = 1 ORDER BY e.id LIMIT 1"""
    rows = query(sb, sql)
    athlete = sb.athlete_id(premium=True, index=0)
    for _ in range(300):
        if rows:
            return rows[0]["activity_id"], rows[0]["athlete_id"]
        record(sb, athlete, sport_type="Ride", visibility="everyone")
        rows = query(sb, sql)
    raise AssertionError("no hidden effort after 300 recorded rides")


def test_s4_2_r12_include_all_efforts_adds_hidden_efforts(sb):
    activity_id, athlete_id = _activity_with_hidden_effort(sb)
    grant = sb.connect(athlete_id=athlete_id)
    hidden = {r["id"] for r in query(sb, "SELECT id FROM efforts WHERE activity_id = ? AND hidden = 1", activity_id)}
    plain = ok(sb.get(grant, f"/activities/{activity_id}"))["segment_efforts"]
    every = ok(sb.get(grant, f"/activities/{activity_id}", params={"include_all_efforts": "true"}))["segment_efforts"]
    assert not any(e["hidden"] for e in plain) and not hidden & {e["id"] for e in plain}
    assert {e["id"] for e in every} == {e["id"] for e in plain} | hidden
    assert all(e["hidden"] for e in every if e["id"] in hidden)
    falsy = ok(sb.get(grant, f"/activities/{activity_id}", params={"include_all_efforts": "false"}))
    assert [e["id"] for e in falsy["segment_efforts"]] == [e["id"] for e in plain]


def test_s4_2_r12_activity_is_detailed_and_splits_sum_to_distance(sb, full, premium_id):
    checked = 0
    for row in [a for a in stored_activities(sb, premium_id)][-12:]:
        body = ok(sb.get(full, f"/activities/{row['id']}"))
        assert body["resource_state"] == 3 and body["id"] == row["id"]
        assert isinstance(body["segment_efforts"], list) and isinstance(body["laps"], list)
        if body["splits_metric"]:
            checked += 1
            assert sum(s["distance"] for s in body["splits_metric"]) == pytest.approx(body["distance"], abs=0.5)
            assert [s["split"] for s in body["splits_metric"]] == list(range(1, len(body["splits_metric"]) + 1))
            assert all(s["distance"] <= 1000.0 + 1e-6 for s in body["splits_metric"])
    assert checked >= 3


# §4.2 r13 updateActivityById -----------------------------------------------------------------------


@pytest.fixture
def own_athlete(sb) -> int:
    """A console-made athlete with an Everyone and an Only You ride: updates here disturb nobody."""
    athlete = new_athlete(sb)
    record(sb, athlete, sport_type="Ride", visibility="everyone", start_date="2024-03-01T07:00:00Z")
    record(sb, athlete, sport_type="Ride", visibility="only_me", start_date="2024-03-02T07:00:00Z")
    return athlete


def _of(sb: Harness, athlete: int, visibility: str) -> int:
    return query(sb, "SELECT id FROM activities WHERE athlete_id = ? AND visibility = ?", athlete, visibility)[0]["id"]


def test_s4_2_r13_update_activity_with_json_body(sb, own_athlete):
    activity_id = _of(sb, own_athlete, "everyone")
    grant = sb.connect(("activity:write", "activity:read"), athlete_id=own_athlete)
    body = ok(
        sb.api(
            grant,
            "PUT",
            f"/activities/{activity_id}",
            json={"name": "Renamed by JSON", "commute": True, "description": "via json"},
        )
    )
    assert body["resource_state"] == 3 and body["name"] == "Renamed by JSON" and body["commute"] is True
    fetched = ok(sb.get(grant, f"/activities/{activity_id}"))
    assert fetched["name"] == "Renamed by JSON" and fetched["description"] == "via json" and fetched["commute"] is True


def test_s4_2_r13_update_activity_with_form_body(sb, own_athlete):
    activity_id = _of(sb, own_athlete, "everyone")
    grant = sb.connect(("activity:write", "activity:read"), athlete_id=own_athlete)
    body = ok(
        sb.api(
            grant,
            "PUT",
            f"/activities/{activity_id}",
            data={"name": "Renamed by form", "sport_type": "GravelRide", "trainer": "true"},
        )
    )
    assert body["name"] == "Renamed by form" and body["sport_type"] == "GravelRide" and body["type"] == "Ride"
    assert body["trainer"] is True
    assert ok(sb.get(grant, f"/activities/{activity_id}"))["name"] == "Renamed by form"


def test_s4_2_r13_update_needs_activity_write(sb, own_athlete):
    activity_id = _of(sb, own_athlete, "everyone")
    grant = sb.connect(all_but("activity:write"), athlete_id=own_athlete)
    before = sb.snapshot(("activities",))
    assert_missing_scope(sb.api(grant, "PUT", f"/activities/{activity_id}", json={"name": "nope"}), "activity:write")
    assert sb.snapshot(("activities",)) == before


def test_s4_2_r13_update_only_you_needs_activity_read_all(sb, own_athlete):
    activity_id = _of(sb, own_athlete, "only_me")
    before = sb.snapshot(("activities",))
    grant = sb.connect(all_but("activity:read_all"), athlete_id=own_athlete)
    assert_missing_scope(sb.api(grant, "PUT", f"/activities/{activity_id}", json={"name": "nope"}), "activity:read_all")
    assert sb.snapshot(("activities",)) == before
    grant = sb.connect(("activity:write", "activity:read_all"), athlete_id=own_athlete)
    assert (
        ok(sb.api(grant, "PUT", f"/activities/{activity_id}", json={"name": "Private rename"}))["name"]
        == "Private rename"
    )


# §4.2 r14 getLoggedInAthleteActivities -------------------------------------------------------------


def test_s4_2_r14_activities_newest_first(sb, full, premium_id):
    listed = listing(sb, full)
    starts = [epoch(a["start_date"]) for a in listed]
    assert starts == sorted(starts, reverse=True)
    assert len(listed) == len(stored_activities(sb, premium_id))
    assert all(a["athlete"]["id"] == premium_id for a in listed)


def test_s4_2_r14_only_after_lists_oldest_first(sb, full, premium_id):
    stored = stored_activities(sb, premium_id)
    after = stored[len(stored) // 2]["start_ts"]
    listed = listing(sb, full, after=after)
    starts = [epoch(a["start_date"]) for a in listed]
    assert starts == sorted(starts) and starts[0] == after
    assert [a["id"] for a in listed] == [r["id"] for r in stored if r["start_ts"] >= after]
    both = listing(sb, full, after=after, before=stored[-1]["start_ts"] + 1)
    assert [epoch(a["start_date"]) for a in both] == sorted(starts, reverse=True)  # with before: newest first


def test_s4_2_r14_before_is_exclusive_after_inclusive(sb, full, premium_id):
    stored = stored_activities(sb, premium_id)
    pivot = stored[len(stored) // 3]
    assert pivot["id"] in [a["id"] for a in listing(sb, full, after=pivot["start_ts"])]
    assert pivot["id"] not in [a["id"] for a in listing(sb, full, after=pivot["start_ts"] + 1)]
    assert pivot["id"] not in [a["id"] for a in listing(sb, full, before=pivot["start_ts"])]
    assert pivot["id"] in [a["id"] for a in listing(sb, full, before=pivot["start_ts"] + 1)]
    window = listing(sb, full, after=pivot["start_ts"], before=pivot["start_ts"] + 1)
    assert [a["id"] for a in window] == [r["id"] for r in stored if r["start_ts"] == pivot["start_ts"]]


def test_s4_2_r14_only_me_filtered_without_activity_read_all(sb, premium_id):
    stored = stored_activities(sb, premium_id)
    only_me = {r["id"] for r in stored if r["visibility"] == "only_me"}
    assert only_me
    without = listing(sb, sb.connect(("activity:read",), athlete_id=premium_id))
    assert {a["id"] for a in without} == {r["id"] for r in stored} - only_me
    assert not any(a["private"] for a in without)
    with_all = listing(sb, sb.connect(("activity:read_all",), athlete_id=premium_id))
    assert only_me <= {a["id"] for a in with_all}
    assert all(a["private"] == (a["id"] in only_me) for a in with_all)


def test_s4_2_r14_listing_needs_activity_read(sb, premium_id):
    assert_missing_scope(
        sb.get(sb.connect(all_but("activity:read"), athlete_id=premium_id), "/athlete/activities"), "activity:read"
    )


# laps and activity zones (real-service notes; not spec rows) --------------------------------------


def test_laps_of_an_activity(sb, full, premium_id):
    activity_id = visible_activity(sb, premium_id, "everyone", with_efforts=True)
    activity = ok(sb.get(full, f"/activities/{activity_id}"))
    laps = ok(sb.get(full, f"/activities/{activity_id}/laps"))
    assert laps and laps == activity["laps"]
    assert [lap["lap_index"] for lap in laps] == list(range(1, len(laps) + 1))
    assert sum(lap["distance"] for lap in laps) == pytest.approx(activity["distance"], abs=0.5)
    for lap in laps:
        assert lap["activity"] == {"id": activity_id, "resource_state": 1}
        assert lap["athlete"]["id"] == premium_id
    assert_fault(sb.get(full, "/activities/8999999999/laps"), 404)


def test_activity_zones_need_a_subscription(sb, free_id):
    activity_id = visible_activity(sb, free_id)
    grant = sb.connect(athlete_id=free_id)
    assert_fault(sb.get(grant, f"/activities/{activity_id}/zones"), 402)
    assert ok(sb.get(grant, f"/activities/{activity_id}/laps")) is not None  # laps are free


def test_activity_zones_shape(sb, full, premium_id):
    activity_id = visible_activity(sb, premium_id, "everyone", with_efforts=True)
    zones = ok(sb.get(full, f"/activities/{activity_id}/zones"))
    assert zones and {z["type"] for z in zones} <= {"heartrate", "power", "pace"}
    moving = ok(sb.get(full, f"/activities/{activity_id}"))["moving_time"]
    for zone in zones:
        assert isinstance(zone["resource_state"], int) and isinstance(zone["sensor_based"], bool)
        buckets = zone["distribution_buckets"]
        assert buckets[-1]["max"] == -1 and all(set(b) >= {"min", "max", "time"} for b in buckets)
        assert sum(b["time"] for b in buckets) <= moving + 60


# §4.3 createActivity form fields -------------------------------------------------------------------


@pytest.fixture
def writer(sb, premium_id) -> Grant:
    return sb.connect(("activity:write", "activity:read"), athlete_id=premium_id)


def _create(sb: Harness, grant: Grant, **changes: Any) -> httpx.Response:
    form = {k: v for k, v in {**MANUAL, **changes}.items() if v is not None}
    return sb.api(grant, "POST", "/activities", data=form)


def _refused_without(sb: Harness, grant: Grant, field: str) -> None:
    before = sb.snapshot(("activities",))
    assert_fault(_create(sb, grant, **{field: None}), 400, field=field, code="missing")
    assert_fault(_create(sb, grant, **{field: ""}), 400, field=field, code="missing")
    assert sb.snapshot(("activities",)) == before


def test_s4_3_r1_name_is_required(sb, writer):
    _refused_without(sb, writer, "name")


def test_s4_3_r2_type_is_optional(sb, writer):
    plain = ok(_create(sb, writer, sport_type="TrailRun"), 201)
    assert plain["sport_type"] == "TrailRun" and plain["type"] == "Run"
    typed = ok(_create(sb, writer, sport_type="MountainBikeRide", type="Ride"), 201)
    assert typed["sport_type"] == "MountainBikeRide" and typed["type"] == "Ride"


def test_s4_3_r3_sport_type_is_required_and_checked(sb, writer):
    _refused_without(sb, writer, "sport_type")
    assert_fault(_create(sb, writer, sport_type="Quidditch"), 400, field="sport_type")


def test_s4_3_r4_start_date_local_is_required(sb, writer):
    _refused_without(sb, writer, "start_date_local")
    assert_fault(_create(sb, writer, start_date_local="yesterday"), 400, field="start_date_local")


@pytest.mark.parametrize("sent", ["2024-05-01T10:00:00Z", "2024-05-01T10:00:00", "2024-01-15T23:30:00Z"])
def test_s4_3_r4_start_date_local_is_local_wall_clock(sb, writer, premium_id, sent):
    body = ok(_create(sb, writer, start_date_local=sent), 201)
    wall = sent if sent.endswith("Z") else sent + "Z"
    assert body["start_date_local"] == wall
    offset = body["utc_offset"]
    assert offset != 0  # the premium cyclist lives away from UTC, so a double conversion would show
    assert epoch(body["start_date"]) == epoch(wall) - offset
    assert body["start_date"].endswith("Z")
    assert home(sb, premium_id)["tz"] in body["timezone"]


def test_s4_3_r5_elapsed_time_is_required_integer(sb, writer):
    _refused_without(sb, writer, "elapsed_time")
    for bad in ("abc", "12.5", "1e3", "0"):
        assert_fault(_create(sb, writer, elapsed_time=bad), 400, field="elapsed_time")
    body = ok(_create(sb, writer, elapsed_time="4321"), 201)
    assert body["elapsed_time"] == 4321 and isinstance(body["elapsed_time"], int)


def test_s4_3_r6_description_is_kept(sb, writer):
    assert ok(_create(sb, writer), 201)["description"] is None
    body = ok(_create(sb, writer, description="Felt strong, tailwind home."), 201)
    assert ok(sb.get(writer, f"/activities/{body['id']}"))["description"] == "Felt strong, tailwind home."


def test_s4_3_r7_distance_is_a_float(sb, writer):
    body = ok(_create(sb, writer, distance="12345.6"), 201)
    assert body["distance"] == 12345.6
    assert body["average_speed"] == pytest.approx(12345.6 / int(MANUAL["elapsed_time"]), abs=0.001)
    assert ok(_create(sb, writer, distance="5000"), 201)["distance"] == 5000.0
    assert_fault(_create(sb, writer, distance="far"), 400, field="distance")


def test_s4_3_r8_trainer_1_marks_trainer(sb, writer):
    assert ok(_create(sb, writer, trainer="1"), 201)["trainer"] is True
    assert ok(_create(sb, writer, trainer="0"), 201)["trainer"] is False
    assert ok(_create(sb, writer), 201)["trainer"] is False
    assert_fault(_create(sb, writer, trainer="2"), 400, field="trainer")


def test_s4_3_r9_commute_1_marks_commute(sb, writer):
    assert ok(_create(sb, writer, commute="1"), 201)["commute"] is True
    assert ok(_create(sb, writer), 201)["commute"] is False
    assert_fault(_create(sb, writer, commute="yes"), 400, field="commute")


def test_s4_3_r10_created_activity_is_manual(sb, writer):
    body = ok(_create(sb, writer), 201)
    listed = [
        a
        for a in listing(sb, writer, after=epoch(body["start_date"]), before=epoch(body["start_date"]) + 1)
        if a["id"] == body["id"]
    ]
    assert body["manual"] is True and listed and listed[0]["manual"] is True


# §8 limits that concern resources ------------------------------------------------------------------


def test_s8_r8_explore_returns_at_most_10(sb, full):
    matching = query(sb, "SELECT COUNT(*) AS n FROM segments WHERE activity_type = 'Ride' AND private = 0")[0]["n"]
    assert matching > 10
    found = _explore(sb, full, bounds=WORLD)
    assert len(found) == 10 and len({s["id"] for s in found}) == 10


@pytest.mark.parametrize(
    "bounds", ["-34,151,-33", "-34,151,-33,152,5", "-34,151,-33,x", "", "-34;151;-33;152", "-34,151,-33,152,"]
)
def test_s8_r9_explore_bounds_exactly_four_numbers(sb, full, bounds):
    assert_fault(sb.get(full, "/segments/explore", params={"bounds": bounds}), 400, field="bounds")


def test_s8_r9_explore_bounds_are_required(sb, full):
    assert_fault(sb.get(full, "/segments/explore"), 400, field="bounds", code="missing")


@pytest.mark.parametrize("name", ["min_cat", "max_cat"])
def test_s8_r10_min_cat_max_cat_between_0_and_5(sb, full, name):
    for good in ("0", "5"):
        assert sb.get(full, "/segments/explore", params={"bounds": WORLD, name: good}).status_code == 200
    for bad in ("-1", "6", "2.5", "x"):
        assert_fault(sb.get(full, "/segments/explore", params={"bounds": WORLD, name: bad}), 400, field=name)


def test_s8_r11_default_page_is_1(sb, full, premium_id):
    segment_id = busiest_public_segment(sb, premium_id)
    default = ok(sb.get(full, "/segment_efforts", params={"segment_id": segment_id, "per_page": 2}))
    first = ok(sb.get(full, "/segment_efforts", params={"segment_id": segment_id, "per_page": 2, "page": 1}))
    assert default == first and len(default) == 2
    default = ok(sb.get(full, "/segments/starred", params={"per_page": 2}))
    assert default == ok(sb.get(full, "/segments/starred", params={"per_page": 2, "page": 1}))


def test_s8_r12_default_per_page_is_30(sb):
    athlete = new_athlete(sb)
    stars = query(sb, "SELECT COUNT(*) AS n FROM stars WHERE athlete_id = ?", athlete)[0]["n"]
    grant = sb.connect(athlete_id=athlete)
    # Star 35 more than already starred: enough for two pages without spending the read budget.
    starred = {r["segment_id"] for r in query(sb, "SELECT segment_id FROM stars WHERE athlete_id = ?", athlete)}
    public = [
        r["id"] for r in query(sb, "SELECT id FROM segments WHERE private = 0 ORDER BY id") if r["id"] not in starred
    ][:35]
    assert len(public) > 30 - stars
    for segment_id in public:
        ok(sb.api(grant, "PUT", f"/segments/{segment_id}/starred", data={"starred": "true"}))
    total = query(sb, "SELECT COUNT(*) AS n FROM stars WHERE athlete_id = ?", athlete)[0]["n"]
    assert total == stars + len(public) > 30
    sizes = [len(ok(sb.get(grant, "/segments/starred")))]
    while sizes[-1] == 30:
        sizes.append(len(ok(sb.get(grant, "/segments/starred", params={"page": len(sizes) + 1}))))
    assert sizes[0] == 30 and sum(sizes) == total and sizes[-1] < 30


# §2 representation facts ---------------------------------------------------------------------------


def test_s2_1_r1_ids_are_integers_gear_and_map_ids_strings(sb, full, premium_id):
    athlete = ok(sb.get(full, "/athlete"))
    assert isinstance(athlete["id"], int)
    assert all(isinstance(g["id"], str) for g in athlete["bikes"] + athlete["shoes"])
    activity = ok(sb.get(full, f"/activities/{visible_activity(sb, premium_id, with_efforts=True)}"))
    assert isinstance(activity["id"], int) and isinstance(activity["map"]["id"], str)
    assert isinstance(activity["segment_efforts"][0]["id"], int) and isinstance(activity["laps"][0]["id"], int)
    assert activity["gear_id"] is None or isinstance(activity["gear_id"], str)


def test_s2_1_r2_summary_activity_is_state_2_detailed_3(sb, full):
    summaries = listing(sb, full)
    assert summaries and all(a["resource_state"] == 2 for a in summaries)
    assert not any("segment_efforts" in a or "laps" in a or "splits_metric" in a for a in summaries)
    assert all(a["athlete"] == {"id": a["athlete"]["id"], "resource_state": 1} for a in summaries)
    detailed = ok(sb.get(full, f"/activities/{summaries[0]['id']}"))
    assert detailed["resource_state"] == 3 and "segment_efforts" in detailed
    assert {k: v for k, v in detailed.items() if k in summaries[0] and k != "map" and k != "resource_state"} == {
        k: v for k, v in summaries[0].items() if k != "map" and k != "resource_state"
    }


def _types(body: dict[str, Any], spec: dict[str, Any]) -> None:
    for key, kinds in spec.items():
        assert key in body, key
        assert isinstance(body[key], kinds), (key, body[key])


NUM = (int, float)
OPT_STR = (str, type(None))
OPT_NUM = (int, float, type(None))


def test_s2_2_athlete_fields(sb, full):
    body = ok(sb.get(full, "/athlete"))
    _types(
        body,
        {
            "id": int,
            "username": OPT_STR,
            "resource_state": int,
            "firstname": str,
            "lastname": str,
            "city": OPT_STR,
            "state": OPT_STR,
            "country": OPT_STR,
            "sex": OPT_STR,
            "premium": bool,
            "created_at": str,
            "updated_at": str,
            "badge_type_id": int,
            "profile_medium": str,
            "profile": str,
            "follower_count": int,
            "friend_count": int,
            "mutual_friend_count": int,
            "athlete_type": int,
            "date_preference": str,
            "measurement_preference": str,
            "clubs": list,
            "ftp": OPT_NUM,
            "weight": NUM,
            "bikes": list,
            "shoes": list,
        },
    )
    assert "friend" in body and "follower" in body
    for key in ("created_at", "updated_at"):
        assert dt.datetime.fromisoformat(body[key].replace("Z", "+00:00")).tzinfo is not None
    assert body["measurement_preference"] in ("meters", "feet")


def test_s2_3_gear_summary_fields(sb, full):
    athlete = ok(sb.get(full, "/athlete"))
    gear = athlete["bikes"] + athlete["shoes"]
    assert gear
    for item in gear:
        _types(item, {"id": str, "primary": bool, "name": str, "resource_state": int, "distance": NUM})
    for kind in ("bikes", "shoes"):
        if athlete[kind]:
            assert sum(g["primary"] for g in athlete[kind]) == 1


def test_s2_3_r5_gear_distance_is_the_sum_of_its_activities(sb, full, premium_id):
    athlete = ok(sb.get(full, "/athlete"))
    activities = listing(sb, full)  # all scopes: Only You included
    assert len(activities) == len(stored_activities(sb, premium_id))
    used = 0
    for gear in athlete["bikes"] + athlete["shoes"]:
        mine = [a["distance"] for a in activities if a["gear_id"] == gear["id"]]
        used += bool(mine)
        assert gear["distance"] == pytest.approx(sum(mine), abs=0.2), gear["id"]
    assert used >= 2
    activity = ok(sb.get(full, f"/activities/{next(a['id'] for a in activities if a['gear_id'])}"))
    assert activity["gear"]["id"] == activity["gear_id"]
    assert activity["gear"]["distance"] == next(
        g["distance"] for g in athlete["bikes"] + athlete["shoes"] if g["id"] == activity["gear_id"]
    )


def test_s2_6_segment_fields(sb, full, premium_id):
    body = ok(sb.get(full, f"/segments/{busiest_public_segment(sb, premium_id)}"))
    _types(
        body,
        {
            "id": int,
            "resource_state": int,
            "name": str,
            "activity_type": str,
            "distance": NUM,
            "average_grade": NUM,
            "maximum_grade": NUM,
            "elevation_high": NUM,
            "elevation_low": NUM,
            "start_latlng": list,
            "end_latlng": list,
            "climb_category": int,
            "city": OPT_STR,
            "state": OPT_STR,
            "country": OPT_STR,
            "private": bool,
            "hazardous": bool,
            "starred": bool,
            "created_at": str,
            "updated_at": str,
            "total_elevation_gain": NUM,
            "map": dict,
            "effort_count": int,
            "athlete_count": int,
            "star_count": int,
            "athlete_segment_stats": dict,
        },
    )
    assert body["activity_type"] in ("Ride", "Run") and 0 <= body["climb_category"] <= 5
    assert len(body["start_latlng"]) == 2 and len(body["end_latlng"]) == 2
    points = polyline.decode(body["map"]["polyline"])
    assert list(points[0]) == body["start_latlng"] and list(points[-1]) == body["end_latlng"]
    _types(body["athlete_segment_stats"], {"pr_elapsed_time": int, "pr_date": str, "effort_count": int})
    dt.date.fromisoformat(body["athlete_segment_stats"]["pr_date"])


def test_s2_7_explorer_segment_fields(sb, full):
    found = _explore(sb, full, bounds=WORLD)
    kinds = {r["id"]: r for r in query(sb, "SELECT id, json_extract(data, '$.distance') AS distance FROM segments")}
    for seg in found:
        _types(
            seg,
            {
                "id": int,
                "resource_state": int,
                "name": str,
                "climb_category": int,
                "climb_category_desc": str,
                "avg_grade": NUM,
                "start_latlng": list,
                "end_latlng": list,
                "elev_difference": NUM,
                "distance": NUM,
                "points": str,
                "starred": bool,
            },
        )
        points = polyline.decode(seg["points"])
        assert list(points[0]) == seg["start_latlng"] and list(points[-1]) == seg["end_latlng"]
        assert seg["distance"] == kinds[seg["id"]]["distance"] and seg["elev_difference"] >= 0


def test_s2_8_r1_activity_map_id_is_a_plus_id(sb, full):
    summaries = listing(sb, full)
    assert all(a["map"]["id"] == f"a{a['id']}" for a in summaries)
    assert all(set(a["map"]) >= {"id", "summary_polyline", "resource_state"} for a in summaries)
    detailed = ok(sb.get(full, f"/activities/{summaries[1]['id']}"))
    assert detailed["map"]["id"] == f"a{detailed['id']}" and "polyline" in detailed["map"]


def test_s2_9_effort_fields(sb, full, premium_id):
    effort = ok(sb.get(full, f"/segment_efforts/{_effort_of(sb, premium_id)}"))
    _types(
        effort,
        {
            "id": int,
            "resource_state": int,
            "name": str,
            "activity": dict,
            "athlete": dict,
            "elapsed_time": int,
            "moving_time": int,
            "start_date": str,
            "start_date_local": str,
            "distance": NUM,
            "start_index": int,
            "end_index": int,
            "device_watts": bool,
            "segment": dict,
            "kom_rank": (int, type(None)),
            "pr_rank": (int, type(None)),
            "achievements": list,
            "hidden": bool,
            "athlete_segment_stats": dict,
        },
    )
    assert set(effort["activity"]) == {"id", "resource_state"} and set(effort["athlete"]) == {"id", "resource_state"}
    assert "average_cadence" in effort and "average_watts" in effort
    assert effort["segment"]["resource_state"] == 2 and effort["name"] == effort["segment"]["name"]
    assert effort["end_index"] > effort["start_index"] and effort["moving_time"] <= effort["elapsed_time"]
    assert effort["pr_rank"] in (None, 1, 2, 3)


def test_s2_10_activity_fields(sb, full, premium_id):
    body = ok(sb.get(full, f"/activities/{visible_activity(sb, premium_id, with_efforts=True)}"))
    _types(
        body,
        {
            "id": int,
            "resource_state": int,
            "external_id": OPT_STR,
            "upload_id": (int, type(None)),
            "athlete": dict,
            "name": str,
            "description": OPT_STR,
            "distance": NUM,
            "moving_time": int,
            "elapsed_time": int,
            "total_elevation_gain": NUM,
            "type": str,
            "sport_type": str,
            "start_date": str,
            "start_date_local": str,
            "timezone": str,
            "utc_offset": NUM,
            "start_latlng": list,
            "end_latlng": list,
            "achievement_count": int,
            "kudos_count": int,
            "comment_count": int,
            "athlete_count": int,
            "photo_count": int,
            "total_photo_count": int,
            "pr_count": int,
            "map": dict,
            "trainer": bool,
            "commute": bool,
            "manual": bool,
            "private": bool,
            "flagged": bool,
            "average_speed": NUM,
            "max_speed": NUM,
            "device_watts": bool,
            "has_heartrate": bool,
            "has_kudoed": bool,
            "calories": NUM,
            "segment_efforts": list,
            "splits_metric": list,
            "laps": list,
            "photos": dict,
            "highlighted_kudosers": list,
            "hide_from_home": bool,
            "embed_token": str,
            "segment_leaderboard_opt_out": bool,
            "leaderboard_opt_out": bool,
        },
    )
    for key in (
        "location_city",
        "location_state",
        "location_country",
        "gear_id",
        "gear",
        "from_accepted_tag",
        "average_cadence",
        "average_temp",
        "average_watts",
        "weighted_average_watts",
        "kilojoules",
        "max_watts",
        "elev_high",
        "elev_low",
        "workout_type",
        "suffer_score",
        "partner_brand_tag",
        "device_name",
    ):
        assert key in body, key
    assert set(body["photos"]) >= {"primary", "use_primary_photo", "count"}
    assert body["photos"]["count"] == body["total_photo_count"]
    for split in body["splits_metric"]:
        _types(
            split,
            {
                "distance": NUM,
                "elapsed_time": int,
                "elevation_difference": NUM,
                "moving_time": int,
                "split": int,
                "average_speed": NUM,
                "pace_zone": int,
            },
        )
    for lap in body["laps"]:
        _types(
            lap,
            {
                "id": int,
                "resource_state": int,
                "name": str,
                "activity": dict,
                "athlete": dict,
                "elapsed_time": int,
                "moving_time": int,
                "start_date": str,
                "start_date_local": str,
                "distance": NUM,
                "start_index": int,
                "end_index": int,
                "total_elevation_gain": NUM,
                "average_speed": NUM,
                "max_speed": NUM,
                "lap_index": int,
                "split": int,
            },
        )
        assert "average_cadence" in lap and "device_watts" in lap and "average_watts" in lap
    assert body["moving_time"] <= body["elapsed_time"]
    assert body["average_speed"] == pytest.approx(body["distance"] / body["moving_time"], rel=0.01)


def test_s2_10_r13_start_date_local_is_wall_clock_with_z(sb, full, premium_id):
    for activity in listing(sb, full):
        assert activity["start_date"].endswith("Z") and activity["start_date_local"].endswith("Z")
        assert epoch(activity["start_date_local"]) - epoch(activity["start_date"]) == activity["utc_offset"]
        zone = re.search(r"\) (\S+)$", activity["timezone"]).group(1)  # type: ignore[union-attr]
        real = dt.datetime.fromtimestamp(epoch(activity["start_date"]), ZoneInfo(zone))
        assert real.utcoffset().total_seconds() == activity["utc_offset"]  # type: ignore[union-attr]
        assert real.replace(tzinfo=None) == dt.datetime.fromisoformat(activity["start_date_local"][:-1])


def test_s2_10_r14_timezone_label(sb, full, premium_id):
    tz = home(sb, premium_id)["tz"]
    labels = {a["timezone"] for a in listing(sb, full)}
    pattern = re.compile(r"^\(GMT[+-]\d\d:\d\d\) [A-Za-z_]+/[A-Za-z_]+$")
    assert labels and all(pattern.match(label) for label in labels), labels
    assert all(label.endswith(" " + tz) for label in labels)
    for activity in listing(sb, full):  # the label shows the zone's standard offset, as the real service does
        year = int(activity["start_date"][:4])
        standard = min(dt.datetime(year, m, 1, tzinfo=ZoneInfo(tz)).utcoffset().total_seconds() for m in (1, 7))
        sign, minutes = "-" if standard < 0 else "+", int(abs(standard)) // 60
        assert activity["timezone"] == f"(GMT{sign}{minutes // 60:02d}:{minutes % 60:02d}) {tz}"
