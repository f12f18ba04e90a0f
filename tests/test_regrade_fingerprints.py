"""Regrade rounds are kept as fingerprints (benchmarks.grade_class --save) and compared later with the rounds
of another day: the same score, the same words, the same timelines, per submission, as their gradebooks gave.

The records are made by the grading run's own scorer (tests/grade_records.py); the benchmark's command line
runs with --rounds 0 and earlier rounds given with --also. `reference` is a correct relay (full marks
expected), `memory_ledger` a broken one.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from benchmarks import grade_class as bench
from relaychaos.records.grade import GradeRecord

from .grade_records import record


def gradebook(folder: Path, records: list[GradeRecord]) -> Path:
    for r in records:
        (folder / "submissions" / str(r.folder)).mkdir(parents=True)
        (folder / "submissions" / str(r.folder) / "grade.json").write_text(r.to_json())
    return folder


@pytest.fixture
def grade_class(monkeypatch, capsys):
    """`python -m benchmarks.grade_class --rounds 0 ARGS`: its exit status, stdout and stderr."""

    def run(*args: str | Path) -> SimpleNamespace:
        monkeypatch.setattr(sys, "argv", ["grade_class", "--rounds", "0", *map(str, args)])
        code, message = 0, ""
        try:
            bench.main()
        except SystemExit as e:  # sys.exit("...") prints its message and exits 1, as the interpreter does
            code, message = (e.code, "") if isinstance(e.code, int) else (1, f"{e.code}\n")
        out = capsys.readouterr()
        return SimpleNamespace(returncode=code, stdout=out.out, stderr=out.err + message)

    return run


def test_rounds_kept_as_fingerprints_compare_with_a_later_round_like_their_gradebooks(tmp_path, grade_class):
    same = [record("reference"), record("memory_ledger", broken={"one-account-call": ["race-32-one-relay"]})]
    one, two = gradebook(tmp_path / "round1", same), gradebook(tmp_path / "round2", same)
    kept = tmp_path / "kept" / "burners.json"

    saved = grade_class("--also", one, two, "--save", kept, "--condition", "two CPU burners", "--commit", "abc1234")
    assert saved.returncode == 0, saved.stdout + saved.stderr
    assert "2 of 2 submissions got the same score in every round; 2 of 2 the same words" in saved.stdout
    data = json.loads(kept.read_text())
    assert (data["commit"], data["condition"]) == ("abc1234", "two CPU burners")
    assert [r["round"] for r in data["rounds"]] == ["round1", "round2"]
    broken = data["rounds"][0]["submissions"]["memory_ledger"]
    assert broken["score"] < broken["max_score"] and len(broken["words"]) == 64, "a digest, not the words themselves"

    again = grade_class("--also", kept, gradebook(tmp_path / "later", same))
    assert again.returncode == 0, again.stdout + again.stderr
    assert "3 rounds compared" in again.stdout

    changed = [record("reference"), record("memory_ledger", broken={"one-account-call": ["happy-path"]})]
    differs = grade_class("--also", kept, gradebook(tmp_path / "changed", changed))
    assert differs.returncode == 1
    assert "memory_ledger: words differ" in differs.stdout
    assert "reference" not in differs.stdout.split("problems:")[1]


def test_a_submission_missing_from_a_round_is_a_difference_and_a_stray_file_is_named(tmp_path, grade_class):
    one = gradebook(tmp_path / "round1", [record("reference"), record("memory_ledger")])
    two = gradebook(tmp_path / "round2", [record("reference")])
    missing = grade_class("--also", two, one)
    assert missing.returncode == 1
    assert "memory_ledger: missing from 1 round(s)" in missing.stdout

    stray = tmp_path / "notes.txt"
    stray.write_text("not a round")
    wrong = grade_class("--also", stray)
    assert wrong.returncode == 1
    assert f"--also {stray}: not a gradebook folder nor a file written by --save" in wrong.stderr
    assert "fix:" in wrong.stderr

    no_condition = grade_class("--also", one, "--save", tmp_path / "x.json")
    assert no_condition.returncode == 2 and "--save needs --condition" in no_condition.stderr
