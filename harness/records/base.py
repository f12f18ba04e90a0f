"""What every typed record shares: it writes itself as JSON and reads itself back, checked on the way in.

    text = record.to_json()                     # the file's text, as it has always been laid out
    record = GradeRecord.from_json(text)        # ValueError naming the field when the text is not one
    record = HistoryHeader.from_builtins(value) # the same check of a value already parsed (an event's)

A record is a msgspec Struct: its fields are the file's keys, in the file's order. Reading is strict
(a field of the wrong kind, a required field missing and, on a closed record, a field it does not
define are refused, naming the field as `$.items[0].set`); writing gives the same JSON as the dicts
that came before. A field that the file holds only sometimes is UNSET when absent and left out when
written. Nothing here does I/O: the callers read and write the files (the checkers use the history's
header, and they do no I/O).
"""

from __future__ import annotations

import json
import math
from typing import Any, Self

import msgspec
from msgspec import UNSET, UnsetType

__all__ = ["Record", "OpenRecord", "UNSET", "UnsetType", "finite_problems", "is_set"]


def is_set(value: object) -> bool:
    """A field the file held (not UNSET); `x is not UNSET` says the same to the type checker."""
    return value is not UNSET


class Record(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """A closed record: every field it may hold is declared; an unknown one is refused on reading."""

    @classmethod
    def from_builtins(cls, data: object, what: str | None = None) -> Self:
        """The record of an already parsed JSON value; ValueError saying which field is wrong and how."""
        try:
            return msgspec.convert(data, type=cls, strict=True)
        except msgspec.ValidationError as e:
            raise ValueError(f"not {what or _a(cls.__name__)}: {e}") from None

    @classmethod
    def from_json(cls, text: str | bytes, what: str | None = None) -> Self:
        """The record of a JSON text; ValueError when it is not JSON, or not this record."""
        try:
            return msgspec.json.decode(text, type=cls, strict=True)
        except msgspec.ValidationError as e:
            raise ValueError(f"not {what or _a(cls.__name__)}: {e}") from None
        except msgspec.DecodeError as e:
            raise ValueError(f"not {what or _a(cls.__name__)}: not JSON ({e})") from None

    def to_builtins(self) -> dict[str, Any]:
        """The record as plain JSON values (dicts, lists, strings, numbers), in the file's order."""
        out: dict[str, Any] = msgspec.to_builtins(self)
        return out

    def to_json(self, *, indent: int | None = 2, ensure_ascii: bool = True) -> str:
        """The file's text: json.dumps of the plain values (the layout the files have always had)."""
        return json.dumps(self.to_builtins(), indent=indent, ensure_ascii=ensure_ascii)

    def copy_with(self, **changes: Any) -> Self:
        """A copy with some fields changed."""
        return msgspec.structs.replace(self, **changes)


class OpenRecord(Record, forbid_unknown_fields=False):
    """A record whose readers take fields it does not declare (they are dropped): a history's header, whose
    writers include tests and older versions, and PrairieLearn's results, which allow any extra field."""


def finite_problems(data: object, where: str = "$") -> list[str]:
    """Numbers JSON cannot hold (NaN, Infinity) anywhere in `data`, by where they are."""
    if isinstance(data, float) and not math.isfinite(data):
        return [f"{where} must be a finite number, not {data}"]
    if isinstance(data, dict):
        return [p for k, v in data.items() for p in finite_problems(v, f"{where}.{k}")]
    if isinstance(data, (list, tuple)):
        return [p for i, v in enumerate(data) for p in finite_problems(v, f"{where}[{i}]")]
    return []


def _a(name: str) -> str:
    words = "".join(" " + c.lower() if c.isupper() else c for c in name).strip()
    return ("an " if words[0] in "aeiou" else "a ") + words
