"""Write the records' JSON Schemas into docs/schemas/, generated from the models (relaychaos.records.schemas).

    .venv/bin/python scripts/schemas.py

Run it after changing a record (relaychaos.records); tests/test_records.py fails while a published
schema differs from what the models give.
"""

from __future__ import annotations

from pathlib import Path

from relaychaos.records import schemas

FOLDER = Path(__file__).resolve().parent.parent / "docs" / "schemas"

if __name__ == "__main__":
    FOLDER.mkdir(parents=True, exist_ok=True)
    for name in schemas.write(FOLDER):
        print(f"wrote docs/schemas/{name}")
