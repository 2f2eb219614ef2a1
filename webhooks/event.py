"""The §6.2 event as the receiver accepts it: a pydantic model, and `validate`, which answers with the one reason a
body is refused (the receiver's 400 says it).

Strict: ids are JSON integers (not strings, not booleans), an unknown field is refused (events are unsigned: a field
the service does not send is a forgery's), `updates` holds only the keys §6.1 lists for the kind, as strings.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

OBJECT_ASPECTS = {"activity": {"create", "update", "delete"}, "athlete": {"update"}}
ALLOWED_UPDATE_KEYS = {"activity": {"title", "type", "private"}, "athlete": {"authorized"}}

Id = Annotated[int, Field(strict=True, gt=0, lt=2**63)]
Updates = Annotated[
    dict[str, Annotated[str, StringConstraints(max_length=1000)]],
    BeforeValidator(lambda v: {} if v is None else v),  # the service sends null, {} or leaves it out alike
]


class InvalidEvent(ValueError):
    pass


class WebhookEvent(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    object_type: Literal["activity", "athlete"]
    aspect_type: str
    object_id: Id
    owner_id: Id
    subscription_id: Id
    event_time: Id
    updates: Updates = {}

    @field_validator("aspect_type")
    @classmethod
    def _aspect_of_the_kind(cls, aspect: str, info: ValidationInfo) -> str:
        if aspect not in OBJECT_ASPECTS.get(info.data.get("object_type", ""), ()):
            raise ValueError("unknown object_type/aspect_type")
        return aspect

    @model_validator(mode="after")
    def _updates_of_the_kind(self) -> WebhookEvent:
        updates = self.updates
        if set(updates) - ALLOWED_UPDATE_KEYS[self.object_type]:
            raise ValueError(f"unexpected updates keys for {self.object_type}")
        if self.object_type == "athlete" and (updates.get("authorized") != "false" or self.object_id != self.owner_id):
            raise ValueError("athlete events must be deauthorizations of the owner")
        if "private" in updates and updates["private"] not in ("true", "false"):
            raise ValueError('updates.private must be "true" or "false"')
        return self


# Which refusal a body gets when several things are wrong with it: the first of these that applies.
ORDER = ("extra", "object_id", "owner_id", "subscription_id", "event_time", "kind", "updates", "rules")


def validate(payload: Any) -> dict[str, Any]:
    """The event as sent (with `updates` an object, {} when it was absent or null), or InvalidEvent saying what is
    wrong with it."""
    if not isinstance(payload, dict):
        raise InvalidEvent("the body is not a JSON object")
    try:
        event = WebhookEvent.model_validate(payload)
    except ValidationError as error:
        raise InvalidEvent(_reason(payload, error)) from None
    return {**payload, "updates": dict(event.updates)}


def _reason(payload: dict[str, Any], error: ValidationError) -> str:
    problems = {_problem(e): e for e in error.errors()}
    first = min(problems, key=ORDER.index)
    if first == "extra":
        return (
            f"unknown fields: {', '.join(sorted(str(e['loc'][0]) for e in error.errors() if _problem(e) == 'extra'))}"
        )
    if first == "kind":
        return f"unknown object_type/aspect_type {payload.get('object_type')!r}/{payload.get('aspect_type')!r}"
    if first == "updates":
        return "updates must be an object of strings"
    if first == "rules":
        return str(problems[first]["msg"]).removeprefix("Value error, ")
    return f"{first} must be a positive integer"


def _problem(error: Any) -> str:
    if error["type"] == "extra_forbidden":
        return "extra"
    field = str(error["loc"][0]) if error["loc"] else "rules"
    return {"object_type": "kind", "aspect_type": "kind"}.get(field, field)
