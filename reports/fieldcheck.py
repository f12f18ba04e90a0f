"""Small checks of JSON fields, shared by the validators of grade.json and of the graders' results.json.

    check(obj, "tests[0]", {"name": STRING, "score": NUMBER}, required=("name",), closed=True)

Each kind is a pair (predicate, what it must be, in words); `check` returns problems as sentences
naming the field, what it must be and what it was, never raises. JSON has no NaN or Infinity and
no booleans among its numbers, so NUMBER refuses them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

Kind = tuple[Callable[[Any], bool], str]


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


NUMBER: Kind = (_number, "a number")
INTEGER: Kind = (lambda v: isinstance(v, int) and not isinstance(v, bool), "an integer")
STRING: Kind = (lambda v: isinstance(v, str), "a string")
BOOL: Kind = (lambda v: isinstance(v, bool), "true or false")
OBJECT: Kind = (lambda v: isinstance(v, dict), "an object")
LIST: Kind = (lambda v: isinstance(v, list), "a list")
STRINGS: Kind = (lambda v: isinstance(v, list) and all(isinstance(s, str) for s in v), "a list of strings")


def optional(kind: Kind) -> Kind:
    """The kind, or null."""
    return (lambda v: v is None or kind[0](v), f"{kind[1]} or null")


def one_of(*values: str) -> Kind:
    return (lambda v: isinstance(v, str) and v in values, "one of " + ", ".join(map(repr, values)))


def either(a: Kind, b: Kind) -> Kind:
    return (lambda v: a[0](v) or b[0](v), f"{a[1]} or {b[1]}")


def check(obj, where: str, fields: dict[str, Kind], *, required=(), closed: bool = False) -> list[str]:
    """Problems of one JSON object: not an object, a required field missing, a field of the wrong kind,
    and (closed) a field the spec does not define."""
    if not isinstance(obj, dict):
        return [f"{where} must be an object, not {_show(obj)}"]
    problems = [f"{where}: missing field {key!r}" for key in required if key not in obj]
    for key, value in obj.items():
        if key in fields:
            ok, what = fields[key]
            if not ok(value):
                problems.append(f"{where}.{key} must be {what}, not {_show(value)}")
        elif closed:
            problems.append(f"{where}: unknown field {key!r} (not in the spec: a misspelt field is ignored silently)")
    return problems


def as_json_problems(data, where: str = "results", max_bytes: int | None = None) -> list[str]:
    """Whether `data` is JSON at all (no NaN, Infinity, or Python-only values) and, if asked, small enough."""
    try:
        text = json.dumps(data, allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError) as e:
        return [f"{where} is not valid JSON: {e}"]
    size = len(text.encode("utf-8"))
    if max_bytes is not None and size > max_bytes:
        return [f"{where} is {size} bytes, over the limit of {max_bytes}"]
    return []


def _show(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
