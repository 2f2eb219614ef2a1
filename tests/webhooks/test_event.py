"""The §6.2 event model (webhooks/event.py): what it accepts as sent, and the one reason it gives a body it refuses —
the text of the receiver's 400, the same as before the model (tests/webhooks/test_receiver.py posts them)."""

from __future__ import annotations

from typing import Any

import pytest

from fitsync.webhooks.event import InvalidEvent, validate

from ..sandbox_harness import Harness
from .conftest import MakeHome, add_athlete

EVENT = {
    "object_type": "activity",
    "object_id": 12,
    "aspect_type": "update",
    "updates": {"title": "Morning Run", "private": "true"},
    "owner_id": 7,
    "subscription_id": 3,
    "event_time": 1_700_000_000,
}
DEAUTHORIZATION = {**EVENT, "object_type": "athlete", "object_id": 7, "updates": {"authorized": "false"}}


def without(name: str) -> dict[str, Any]:
    return {k: v for k, v in EVENT.items() if k != name}


def test_an_event_is_kept_as_sent() -> None:
    assert validate(EVENT) == EVENT and validate(DEAUTHORIZATION) == DEAUTHORIZATION
    # a create or delete may leave updates out or send null: stored as {}
    for updates in ({}, None):
        assert validate({**EVENT, "aspect_type": "delete", "updates": updates})["updates"] == {}
    assert validate({**without("updates"), "aspect_type": "create"}) == {
        **EVENT,
        "aspect_type": "create",
        "updates": {},
    }


@pytest.mark.parametrize(
    "body, reason",
    [
        ([EVENT], "the body is not a JSON object"),
        ({**EVENT, "signature": "x", "hmac": "y", "object_id": "12"}, "unknown fields: hmac, signature"),
        ({**EVENT, "object_id": "12"}, "object_id must be a positive integer"),  # ids are numbers, never text
        ({**EVENT, "owner_id": True}, "owner_id must be a positive integer"),
        ({**EVENT, "subscription_id": 0, "event_time": 1.5}, "subscription_id must be a positive integer"),
        ({**EVENT, "event_time": 2**63}, "event_time must be a positive integer"),
        (without("event_time"), "event_time must be a positive integer"),
        ({**EVENT, "object_type": "segment", "updates": 5}, "unknown object_type/aspect_type 'segment'/'update'"),
        (without("aspect_type"), "unknown object_type/aspect_type 'activity'/None"),
        ({**DEAUTHORIZATION, "aspect_type": "create"}, "unknown object_type/aspect_type 'athlete'/'create'"),
        ({**EVENT, "updates": ["title"]}, "updates must be an object of strings"),
        ({**EVENT, "updates": {"title": "x" * 1001}}, "updates must be an object of strings"),
        ({**EVENT, "updates": {"distance": "5000"}}, "unexpected updates keys for activity"),
        ({**DEAUTHORIZATION, "object_id": 8}, "athlete events must be deauthorizations of the owner"),
        (
            {**DEAUTHORIZATION, "updates": {"authorized": "true"}},
            "athlete events must be deauthorizations of the owner",
        ),
        ({**EVENT, "updates": {"private": "yes"}}, 'updates.private must be "true" or "false"'),
    ],
)
def test_a_body_of_the_wrong_shape_gets_its_first_reason(body: Any, reason: str) -> None:
    with pytest.raises(InvalidEvent) as refused:
        validate(body)
    assert str(refused.value) == reason


def test_the_receiver_answers_a_wrong_shape_with_400_and_the_reason(sb: Harness, make_home: MakeHome) -> None:
    """Over HTTP, as the service posts: the reason is the 400's error, nothing is stored, the right shape is taken."""
    home = make_home()
    home.serve()
    home.local_subscription()
    aid = add_athlete(sb)
    home.connect(aid, partition=False)
    event = home.event(aid, 9_100_000_001, "update", updates={"title": "Lunch ride"})
    for body, reason in (
        ({**event, "owner_id": str(aid)}, "owner_id must be a positive integer"),
        ({**event, "updates": {"title": 5}}, "updates must be an object of strings"),
        ({**event, "signature": "deadbeef"}, "unknown fields: signature"),
    ):
        response = home.post(body)
        assert (response.status_code, response.json()) == (400, {"error": reason})
    assert home.inbox() == []
    assert home.post(event).json() == {"stored": True} and len(home.inbox()) == 1
