"""Plain JSON values checked against a published schema (docs/schemas/<name>.schema.json), with jsonschema.

    problems("grade", json.loads(text))   # [] when the value follows the schema; else "$.items[0].set: ..." each

The schemas are generated from relaychaos.records (scripts/schemas.py); tests/test_records.py keeps the published
files current, and the tests of each writer check what it writes against them here.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import jsonschema

from .conftest import ROOT

FOLDER = ROOT / "docs" / "schemas"


@cache
def validator(name: str) -> jsonschema.Draft202012Validator:
    schema = json.loads((FOLDER / f"{name}.schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


def problems(name: str, data: Any) -> list[str]:
    """Every way `data` strays from the published schema `name`, as `<where>: <what>`; data JSON cannot hold
    (NaN, Infinity, a Python object) is a problem too."""
    try:
        json.dumps(data, allow_nan=False)
    except (TypeError, ValueError) as e:
        return [f"$: not valid JSON: {e}"]
    found = sorted(validator(name).iter_errors(data), key=lambda e: list(e.absolute_path))
    return [f"{e.json_path}: {e.message.replace(repr(e.instance), _short(e.instance))}" for e in found]


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
