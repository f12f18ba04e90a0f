"""The typed records (relaychaos.records) and their published JSON Schemas: current, and followed by what is written.

The schemas in docs/schemas/ are generated from the models by scripts/schemas.py; a test here fails while a
published file differs from what the models give. The other tests check real outputs against the published
files with jsonschema: recorded histories' headers, a run's results.json, grade records of every kind (and, in
tests/test_grading.py, those of a real grading run), the gradebook and the platforms' results.json.
"""

import gzip
import json

import pytest

from relaychaos.history import header, iter_events
from relaychaos.records import schemas
from relaychaos.records.gradebook import Gradebook
from relaychaos.records.header import HistoryHeader
from relaychaos.records.results import LandingRecord, MachineAccount, ResultsFile, VerdictRecord
from relaychaos.reports import gradebook, gradescope, prairielearn
from relaychaos.reports.results import Kept, RunResults

from .conftest import ROOT
from .grade_records import class_of_records
from .history_builder import HistoryBuilder
from .schema_check import FOLDER, problems

RECORDED = sorted((ROOT / "tests" / "data" / "recorded").glob("*.jsonl.gz"))


@pytest.mark.parametrize("name", sorted(schemas.SCHEMAS))
def test_every_published_schema_is_what_the_models_give(name):
    path = FOLDER / f"{name}.schema.json"
    assert path.exists() and path.read_text(encoding="utf-8") == schemas.text(name), (
        f"docs/schemas/{name}.schema.json is stale: regenerate it with `{schemas.COMMAND}`"
    )


def test_no_schema_is_published_that_no_model_gives():
    assert sorted(p.name for p in FOLDER.glob("*.json")) == sorted(f"{n}.schema.json" for n in schemas.SCHEMAS)


@pytest.mark.parametrize("path", RECORDED[:12], ids=lambda p: p.name)
def test_recorded_histories_headers_follow_the_schema_and_read_as_typed_headers(path):
    with gzip.open(path, "rt") as f:
        value = next(json.loads(line)["value"] for line in f if '"f": "scenario"' in line)
    assert problems("history-header", value) == []
    typed = header(iter_events(path))
    assert typed.to_builtins() == value, "the header writes back as it was read"
    assert typed.name == value["name"] and typed.label_of() == {g: label for label, g in value["guids"].items()}


def test_a_header_of_another_shape_is_refused_naming_the_field():
    with pytest.raises(ValueError, match=r"Expected `object`, got `array` - at `\$.guids`"):
        HistoryHeader.from_builtins({"name": "x", "guids": []})
    assert problems("history-header", {"name": "x", "guids": []}) == ["$.guids: [] is not of type 'object'"]


def test_a_built_history_writes_a_header_that_follows_the_schema():
    value = next(e.value for e in HistoryBuilder().build() if e.f == "scenario")
    assert problems("history-header", value) == []


def _run(tmp_path):
    results = RunResults("relay.toml", "reference", sandbox={"mode": "off", "enforced": False})
    verdict = {"rule": "one-debit", "guid": "g", "summary": "twice", "events": [1], "calls": [], "details": {}}
    results.add(
        "t.py::test_scenario[a]", "call", "failed", 1.0, "[one-debit] ...", [VerdictRecord.from_builtins(verdict)]
    )
    landing = LandingRecord(claim="c", kind="waited", status="missed", why="gave up", events=[3], scenario="b")
    results.add("t.py::test_scenario[b]", "call", "skipped", 1.0, "not exercised: b", landing=[landing])
    account = MachineAccount(examples=3, ran=True, why_not=None, shrunk=False, shrink_s=None)
    results.add("t.py::test_random_stories", "call", "passed", 1.0, None, stateful=account, kept=Kept(["h.jsonl"]))
    results.add("t.py::test_scenario[c]", "setup", "passed", 0.1, None)  # started, not finished
    for nodeid in ("t.py::test_scenario[a]", "t.py::test_scenario[b]", "t.py::test_random_stories"):
        results.add(nodeid, "teardown", "passed", 0.0, None)
    results.write(tmp_path / "results.json")
    return tmp_path / "results.json"


def test_a_run_s_results_json_follows_the_schema_and_reads_back_as_written(tmp_path):
    path = _run(tmp_path)
    data = json.loads(path.read_text())
    assert problems("results", data) == []
    assert data["summary"] == {"passed": 1, "failed": 1, "error": 0, "skipped": 0, "not exercised": 1}
    assert data["unfinished"] == ["t.py::test_scenario[c]"] and "provides" not in data and "rechecked" not in data
    assert data["random_stories"]["examples"] == 3
    read = ResultsFile.from_json(path.read_text())
    assert read.to_builtins() == data and read.scenarios[1].verdicts[0].rule == "one-debit"
    loaded = RunResults.load(path)
    loaded.write(path)
    assert json.loads(path.read_text()) == data, "recheck's load and write keep every field"


def test_a_results_json_of_another_shape_is_refused_naming_the_field(tmp_path):
    path = _run(tmp_path)
    data = json.loads(path.read_text())
    data["scenarios"][0]["outcome"] = "exploded"
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=r"Invalid enum value 'exploded' - at `\$.scenarios\[0\].outcome`"):
        RunResults.load(path)
    assert any("$.scenarios[0].outcome" in p for p in problems("results", data))


def test_every_kind_of_grade_record_gives_outputs_that_follow_their_schemas():
    records = class_of_records()
    for r in records:
        assert problems("grade", r.to_builtins()) == [], r.submission
        assert problems("gradescope-results", gradescope.results(r).to_builtins()) == [], r.submission
        assert problems("prairielearn-results", prairielearn.results(r).to_builtins()) == [], r.submission
    book = Gradebook.from_csv(gradebook.csv_text(records, ["claim"]))
    assert problems("gradebook", book.to_builtins()) == []
