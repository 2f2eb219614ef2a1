"""The service's answers the warehouse tests load: fetched once per module from the sandbox over HTTP."""

from __future__ import annotations

from typing import Any

import pytest

from ..sandbox_harness import Harness


@pytest.fixture(scope="module")
def payloads(sb: Harness) -> dict[str, Any]:
    grant = sb.connect()
    summaries = sb.get(grant, "/athlete/activities", params={"per_page": 200}).json()
    ids = [a["id"] for a in summaries[:12]]
    return {
        "athlete_id": grant.athlete_id,
        "summaries": summaries,
        "details": [sb.get(grant, f"/activities/{i}", params={"include_all_efforts": "true"}).json() for i in ids],
        "zones": [(i, sb.get(grant, f"/activities/{i}/zones").json()) for i in ids],
        "athlete": sb.get(grant, "/athlete").json(),
        "stats": sb.get(grant, f"/athletes/{grant.athlete_id}/stats").json(),
        "athlete_zones": sb.get(grant, "/athlete/zones").json(),
        "starred": sb.get(grant, "/segments/starred").json(),
    }
