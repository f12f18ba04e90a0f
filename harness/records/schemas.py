"""The published JSON Schemas of the records, generated from the models (never written by hand).

    text(name)                 # the schema's text, as published in docs/schemas/<name>.schema.json
    write(folder)              # every schema into a folder; scripts/schemas.py writes docs/schemas/

msgspec makes each schema from its record's types (a field UNSET when absent is not required, a
closed record allows no other field); what a type cannot say (a platform's rule that one field
or another must be there) is added from relaychaos.records.platforms.EXTRA_SCHEMA.
tests/test_records.py fails when a published file differs from what this gives.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

from .base import Record
from .grade import GradeRecord
from .gradebook import Gradebook
from .header import HistoryHeader
from .platforms import EXTRA_SCHEMA, GradescopeResults, PrairieLearnResults
from .results import ResultsFile

DIALECT = "https://json-schema.org/draft/2020-12/schema"
SCHEMAS: dict[str, tuple[type[Record], str]] = {
    "results": (ResultsFile, "results.json of a run (relaychaos run, relaychaos recheck)"),
    "grade": (GradeRecord, "grade.json: the record of one graded submission (relaychaos grade)"),
    "history-header": (HistoryHeader, "a history's header: the value of its `scenario` event"),
    "gradebook": (Gradebook, "gradebook.csv as relaychaos.records.gradebook reads it: item columns and rows"),
    "gradescope-results": (GradescopeResults, "Gradescope's results.json, as relaychaos grade --gradescope writes it"),
    "prairielearn-results": (PrairieLearnResults, "PrairieLearn's results.json (relaychaos grade --prairielearn)"),
}
COMMAND = ".venv/bin/python scripts/schemas.py"


def schema(name: str) -> dict[str, Any]:
    """The JSON Schema of one record, by its published name (a key of SCHEMAS)."""
    model, title = SCHEMAS[name]
    generated = msgspec.json.schema(model)
    for struct, extra in EXTRA_SCHEMA.items():
        if struct in generated["$defs"]:
            generated["$defs"][struct].update(extra)
    return {"$schema": DIALECT, "$id": f"{name}.schema.json", "title": title, **generated}


def text(name: str) -> str:
    """The published file's text."""
    return json.dumps(schema(name), indent=2, ensure_ascii=False) + "\n"


def write(folder: Any) -> list[str]:
    """Write every schema into `folder` (a pathlib.Path); the names of the files written."""
    written = []
    for name in SCHEMAS:
        target = folder / f"{name}.schema.json"
        target.write_text(text(name), encoding="utf-8")
        written.append(target.name)
    return written
