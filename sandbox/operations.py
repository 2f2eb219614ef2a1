"""The table of public operations (spec §4.2–§4.5 and what a sync needs): one row each."""

from __future__ import annotations

from typing import Any

from . import push, resources
from .api import Call, Operation
from .params import PAGE, PER_PAGE, Param

ID = Param("id", "path", "int64", required=True, minimum=1, description="Identifier.")


async def _create_subscription(call: Call) -> dict[str, Any]:
    assert call.app is not None
    return await push.create_subscription(
        call.conn,
        call.app,
        callback_url=call.params["callback_url"],
        verify_token=call.params["verify_token"],
        settings=call.state.settings,
        http=call.state.http,
    )


def _list_subscriptions(call: Call) -> list[dict[str, Any]]:
    assert call.app is not None
    return push.list_subscriptions(call.conn, call.app)


def _delete_subscription(call: Call) -> None:
    assert call.app is not None
    push.delete_subscription(call.conn, call.app, call.params["id"])


# The swagger's `keys` is a csv array of stream types; here one comma-separated string, since unknown types are
# ignored rather than refused (world_streams.requested says why).
STREAM_KEYS = Param(
    "keys",
    "query",
    "string",
    required=True,
    max_length=500,
    description="Comma-separated stream types: time, distance, latlng, altitude, velocity_smooth, heartrate, cadence, "
    "watts, temp, moving, grade_smooth. Unknown types, and types the activity has no data for, are left out.",
)
KEY_BY_TYPE = Param(
    "key_by_type",
    "query",
    "boolean",
    description="true (the default): an object keyed by stream type; false: a list of streams, each with its `type` "
    "(what the real service answers without the parameter, in the `real` flavour).",
)

CLIENT_ID = Param("client_id", "query", "int64", required=True, minimum=1, description="Application id.")
CLIENT_SECRET = Param(
    "client_secret", "query", "string", required=True, max_length=200, description="Application secret."
)

OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "getStats",
        "GET",
        "/athletes/{id}/stats",
        resources.get_stats,
        "Athlete",
        "Activity totals of the authenticated athlete (Everyone activities only).",
        params=(ID,),
        scopes=("read",),
        response="ActivityStats",
        tags=("Athletes",),
    ),
    Operation(
        "getLoggedInAthlete",
        "GET",
        "/athlete",
        resources.get_athlete,
        "Athlete",
        "The authenticated athlete: detailed with profile:read_all, summary otherwise.",
        scopes=("read",),
        response="DetailedAthlete",
        tags=("Athletes",),
    ),
    Operation(
        "updateLoggedInAthlete",
        "PUT",
        "/athlete",
        resources.update_athlete,
        "Athlete",
        "Update the authenticated athlete's weight.",
        params=(
            Param(
                "weight",
                "form",
                "number",
                required=True,
                minimum=0.1,
                maximum=1000,
                description="Kilograms (form field or query parameter).",
            ),
        ),
        scopes=("profile:write",),
        response="DetailedAthlete",
        tags=("Athletes",),
    ),
    Operation(
        "getLoggedInAthleteZones",
        "GET",
        "/athlete/zones",
        resources.get_zones,
        "Athlete",
        "Heart-rate and power zones of the authenticated athlete.",
        scopes=("profile:read_all",),
        response="Zones",
        tags=("Athletes",),
    ),
    Operation(
        "getLoggedInAthleteStarredSegments",
        "GET",
        "/segments/starred",
        resources.starred_segments,
        "Segment",
        "Segments starred by the authenticated athlete; private ones need read_all.",
        params=(PAGE, PER_PAGE),
        scopes=("read",),
        response="SummarySegmentList",
        tags=("Segments",),
    ),
    Operation(
        "exploreSegments",
        "GET",
        "/segments/explore",
        resources.explore_segments,
        "Segment",
        "The top 10 segments starting inside the bounds.",
        params=(
            Param(
                "bounds",
                "query",
                "bounds",
                required=True,
                description="sw lat, sw lng, ne lat, ne lng (comma-separated).",
            ),
            Param("activity_type", "query", "enum", default="riding", choices=("running", "riding")),
            Param("min_cat", "query", "integer", default=0, minimum=0, maximum=5),
            Param("max_cat", "query", "integer", default=5, minimum=0, maximum=5),
        ),
        scopes=("read",),
        response="ExplorerResponse",
        tags=("Segments",),
    ),
    Operation(
        "getSegmentById",
        "GET",
        "/segments/{id}",
        resources.get_segment,
        "Segment",
        "A segment; private segments and athlete-specific data need read_all.",
        params=(ID,),
        scopes=("read",),
        response="DetailedSegment",
        tags=("Segments",),
    ),
    Operation(
        "starSegment",
        "PUT",
        "/segments/{id}/starred",
        resources.star_segment,
        "Segment",
        "Star (true) or unstar (false) a segment.",
        params=(ID, Param("starred", "form", "boolean", required=True)),
        scopes=("profile:write",),
        response="DetailedSegment",
        tags=("Segments",),
    ),
    Operation(
        "getEffortsBySegmentId",
        "GET",
        "/segment_efforts",
        resources.efforts_by_segment,
        "SegmentEffort",
        "The authenticated athlete's efforts on a segment (subscribers only).",
        params=(
            Param("segment_id", "query", "int64", required=True, minimum=1),
            Param("start_date_local", "query", "datetime"),
            Param("end_date_local", "query", "datetime"),
            PAGE,
            PER_PAGE,
        ),
        scopes=("activity:read",),
        premium=True,
        response="DetailedSegmentEffortList",
        tags=("SegmentEfforts",),
    ),
    Operation(
        "getSegmentEffortById",
        "GET",
        "/segment_efforts/{id}",
        resources.get_effort,
        "SegmentEffort",
        "One of the authenticated athlete's segment efforts (subscribers only).",
        params=(ID,),
        scopes=("activity:read",),
        premium=True,
        response="DetailedSegmentEffort",
        tags=("SegmentEfforts",),
    ),
    Operation(
        "createActivity",
        "POST",
        "/activities",
        resources.create_activity,
        "Activity",
        "Create a manual activity.",
        params=(
            Param("name", "form", "string", required=True, max_length=255),
            Param("type", "form", "string", max_length=50),
            Param("sport_type", "form", "string", required=True, max_length=50),
            Param("start_date_local", "form", "datetime", required=True),
            Param("elapsed_time", "form", "integer", required=True, minimum=1, maximum=30 * 86400),
            Param("description", "form", "string", max_length=10_000),
            Param("distance", "form", "number", minimum=0, maximum=10_000_000),
            Param("trainer", "form", "integer", default=0, minimum=0, maximum=1),
            Param("commute", "form", "integer", default=0, minimum=0, maximum=1),
        ),
        scopes=("activity:write",),
        status=201,
        response="DetailedActivity",
        counts_as_read=False,
        tags=("Activities",),
    ),
    Operation(
        "getActivityById",
        "GET",
        "/activities/{id}",
        resources.get_activity,
        "Activity",
        "An activity of the authenticated athlete; Only You activities need activity:read_all.",
        params=(ID, Param("include_all_efforts", "query", "boolean", default=False)),
        scopes=("activity:read",),
        response="DetailedActivity",
        tags=("Activities",),
    ),
    Operation(
        "updateActivityById",
        "PUT",
        "/activities/{id}",
        resources.update_activity,
        "Activity",
        "Update an activity (JSON or form body of updatable fields).",
        params=(
            ID,
            Param("name", "body", "string", max_length=255),
            Param("type", "body", "string", max_length=50),
            Param("sport_type", "body", "string", max_length=50),
            Param("description", "body", "string", max_length=10_000),
            Param("trainer", "body", "boolean"),
            Param("commute", "body", "boolean"),
            Param("hide_from_home", "body", "boolean"),
            Param("gear_id", "body", "string", max_length=50),
        ),
        scopes=("activity:write", "activity:read"),
        response="DetailedActivity",
        tags=("Activities",),
    ),
    Operation(
        "getLoggedInAthleteActivities",
        "GET",
        "/athlete/activities",
        resources.list_activities,
        "Activity",
        "The authenticated athlete's activities: newest first, or oldest first with only `after`.",
        params=(
            Param("before", "query", "int64", minimum=0, description="Epoch seconds; start time before (exclusive)."),
            Param("after", "query", "int64", minimum=0, description="Epoch seconds; start time at or after."),
            PAGE,
            PER_PAGE,
        ),
        scopes=("activity:read",),
        response="SummaryActivityList",
        tags=("Activities",),
    ),
    Operation(
        "getLapsByActivityId",
        "GET",
        "/activities/{id}/laps",
        resources.get_laps,
        "Activity",
        "The laps of an activity.",
        params=(ID,),
        scopes=("activity:read",),
        response="LapList",
        tags=("Activities",),
    ),
    Operation(
        "getZonesByActivityId",
        "GET",
        "/activities/{id}/zones",
        resources.get_activity_zones,
        "Activity",
        "Time in heart-rate and power zones of an activity (subscribers only).",
        params=(ID,),
        scopes=("activity:read",),
        premium=True,
        response="ActivityZoneList",
        tags=("Activities",),
    ),
    Operation(
        "getActivityStreams",
        "GET",
        "/activities/{id}/streams",
        resources.get_activity_streams,
        "Activity",
        "Per-second streams of an activity (the public swagger's StreamSet); none for manual activities (404).",
        params=(ID, STREAM_KEYS, KEY_BY_TYPE),
        scopes=("activity:read",),
        response="StreamSet",
        tags=("Streams",),
    ),
    Operation(
        "getSegmentEffortStreams",
        "GET",
        "/segment_efforts/{id}/streams",
        resources.get_effort_streams,
        "SegmentEffort",
        "The activity's streams over an effort's start_index..end_index (read_all, as the public swagger says).",
        params=(ID, STREAM_KEYS, KEY_BY_TYPE),
        scopes=("activity:read", "read_all"),
        response="StreamSet",
        tags=("Streams",),
    ),
    Operation(
        "createSubscription",
        "POST",
        "/push_subscriptions",
        _create_subscription,
        "PushSubscription",
        "Create the application's push subscription; the callback is validated first.",
        params=(
            Param("callback_url", "form", "string", required=True, max_length=10_000),
            Param("verify_token", "form", "string", required=True, max_length=255),
        ),
        auth="client",
        status=201,
        response="PushSubscriptionId",
        tags=("PushSubscriptions",),
    ),
    Operation(
        "listSubscriptions",
        "GET",
        "/push_subscriptions",
        _list_subscriptions,
        "PushSubscription",
        "The application's push subscription (a list of at most one).",
        auth="client",
        response="PushSubscriptionList",
        tags=("PushSubscriptions",),
    ),
    Operation(
        "deleteSubscription",
        "DELETE",
        "/push_subscriptions/{id}",
        _delete_subscription,
        "PushSubscription",
        "Delete the application's push subscription.",
        params=(ID,),
        auth="client",
        status=204,
        tags=("PushSubscriptions",),
    ),
)
