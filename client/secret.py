"""A string that never shows itself: repr, str and f-strings print a redaction, so logs and errors stay clean.

fitsync's own type rather than pydantic's SecretStr: it also holds tokens in modules that must import without
pydantic (`fitsync --help` would pay 0.3 s), it refuses to be pickled (SecretStr pickles its value), and every
caller reveals it one way (`reveal()`). A settings model holds it as it would a SecretStr (the schema below).
"""

from __future__ import annotations

from typing import Any


class Secret:
    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    @classmethod
    def empty(cls) -> Secret:
        return cls("")

    @classmethod
    def of(cls, raw: object) -> Secret:
        """A setting's value as a Secret: text (or a number) from a file or a variable, or a Secret already."""
        return raw if isinstance(raw, Secret) else cls(str(raw))

    def reveal(self) -> str:
        return self._value

    def __bool__(self) -> bool:
        return bool(self._value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)

    def __repr__(self) -> str:
        return "Secret('***')" if self._value else "Secret('')"

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return repr(self)

    def __reduce__(self) -> tuple[object, ...]:
        raise TypeError("secrets are not pickled")

    def __copy__(self) -> Secret:
        return self  # immutable

    def __deepcopy__(self, memo: dict[int, object]) -> Secret:
        return self

    @classmethod
    def __get_pydantic_core_schema__(cls, source: object, handler: object) -> Any:
        """Validated with `of`; dumped as JSON, the redaction. pydantic is imported only when a model asks."""
        from pydantic_core import core_schema

        return core_schema.no_info_plain_validator_function(
            cls.of, serialization=core_schema.plain_serializer_function_ser_schema(repr, when_used="json")
        )
