"""grade.json is the one interface between the grading run and every output: its problems are named, not guessed."""

import json
import os

import pytest

from relaychaos import atomic
from relaychaos.records.grade import GradeRecord
from relaychaos.reports import grade_record

from .grade_records import class_of_records, record, ungradable
from .schema_check import problems


def test_every_kind_of_record_the_grading_run_writes_is_valid_and_follows_the_published_schema():
    for r in class_of_records():
        data = json.loads(r.to_json(ensure_ascii=False))
        assert grade_record.validate(data) == [], r.submission
        assert problems("grade", data) == [], r.submission
        assert GradeRecord.from_json(r.to_json()) == r, "it reads back what it wrote"


@pytest.mark.parametrize(
    "breakage, expected, in_schema",
    [
        (lambda r: r.pop("seed"), "missing required field `seed`", "'seed' is a required property"),
        (lambda r: r.update(seed="12345"), "Expected `int`, got `str` - at `$.seed`", "$.seed: '12345' is not of"),
        (lambda r: r.update(gradable="yes"), "Expected `bool`, got `str` - at `$.gradable`", "$.gradable: 'yes'"),
        (lambda r: r.update(score=float("nan")), "$.score must be a finite number", "not valid JSON"),
        (lambda r: r.update(gradable=False, error=None), "not gradable, but no `error` says why", None),
        (
            lambda r: r["items"][0].update(set="secret"),
            "Invalid enum value 'secret' - at `$.items[0].set`",
            "is not one",
        ),
        (lambda r: r["items"][0].update(points=31.0), "items[0]: points 31.0 outside [0, max_points 30.0]", None),
        (lambda r: r["items"][0].update(held_in=11), "items[0]: held_in 11 outside [0, scenarios 1]", None),
        (lambda r: r["items"][0].update(partial="some"), "at `$.items[0].partial`", "$.items[0].partial: 'some'"),
        (lambda r: r["scenarios"][0].update(outcome="crashed"), "at `$.scenarios[0].outcome`", "'crashed' is not one"),
        (lambda r: r.update(score=99.0), "score 99.0 is not the sum of the items' points (within its cap)", None),
        (lambda r: r.update(max_score=90.0), "max_score 90.0 is not the sum of the items' max_points", None),
        (lambda r: r.update(incidents=[{"id": "x"}]), "at `$.incidents[0]`", "'scenario' is a required property"),
        (lambda r: r.update(stateful={"ran": "no"}), "at `$.stateful.ran`", "$.stateful.ran: 'no' is not of"),
        (lambda r: r.update(grade=100), "unknown field `grade`", "('grade' was unexpected)"),
    ],
)
def test_a_broken_record_is_refused_with_the_field_and_what_it_must_be(breakage, expected, in_schema):
    r = record("alice").to_builtins()
    breakage(r)
    found = grade_record.validate(r)
    assert any(expected in p for p in found), found
    if in_schema is not None:  # the published schema refuses it too (a total's sum is no schema's to check)
        assert any(in_schema in p for p in problems("grade", r)), problems("grade", r)


def test_an_ungradable_record_needs_no_points_but_a_reason():
    assert grade_record.validate(ungradable("carol", "could not start: no relay.toml").to_builtins()) == []


def test_load_names_the_file_when_it_is_not_a_record(tmp_path):
    (tmp_path / "a.json").write_text("{not json")
    (tmp_path / "b.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match=r"a\.json: not a grade record: not JSON"):
        grade_record.load(tmp_path / "a.json")
    with pytest.raises(ValueError, match=r"b\.json: not a grade record: Expected `object`, got `array`"):
        grade_record.load(tmp_path / "b.json")


def test_item_points_sums_each_item_over_its_scenario_sets():
    points = record("bob", broken={"one-account-call": ["min-age-trap"]}).item_points()
    assert list(points)[0] == "claim" and points["claim"] == (30.0, 30.0)
    assert points["sends-once"][1] == 20.0 and round(points["sends-once"][0], 2) == 13.33, "lost in the hidden set"


def test_a_capped_record_is_valid_and_its_score_is_the_cap():
    capped = class_of_records()[6]
    assert capped.cap is not None and capped.cap.at_most == 80.0 and capped.score == 80.0 and capped.problems() == []


def test_an_atomic_write_replaces_the_whole_file_or_leaves_the_old_one(tmp_path, monkeypatch):
    target = tmp_path / "deep" / "results.json"
    atomic.write_text(target, json.dumps({"v": 1}))
    assert json.loads(target.read_text()) == {"v": 1}
    assert oct(target.stat().st_mode & 0o777) == oct(0o666 & ~_umask()), "usual permissions, not a tempfile's 0600"

    def disk_full(*_):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic.os, "fsync", disk_full)
    with pytest.raises(OSError):
        atomic.write_text(target, json.dumps({"v": 2}))
    assert json.loads(target.read_text()) == {"v": 1}, "the old file is untouched"
    assert sorted(p.name for p in target.parent.iterdir()) == ["results.json"], "no temporary file is left"


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
