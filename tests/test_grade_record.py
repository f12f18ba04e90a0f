"""grade.json is the one interface between the grading run and every output: its problems are named, not guessed."""

import json
import os

import pytest

from relaychaos.reports import atomic, grade_record

from .grade_records import class_of_records, record, ungradable


def test_every_kind_of_record_the_grading_run_writes_is_valid():
    for r in class_of_records():
        assert grade_record.validate(r) == [], r["submission"]


@pytest.mark.parametrize(
    "breakage, expected",
    [
        (lambda r: r.pop("seed"), "missing field 'seed'"),
        (lambda r: r.update(seed="12345"), "record.seed must be an integer"),
        (lambda r: r.update(gradable="yes"), "record.gradable must be true or false"),
        (lambda r: r.update(score=float("nan")), "record.score must be a number"),
        (lambda r: r.update(gradable=False, error=None), "not gradable, but no `error` says why"),
        (lambda r: r["items"][0].update(set="secret"), "items[0].set must be one of 'visible', 'hidden'"),
        (lambda r: r["items"][0].update(points=31.0), "items[0]: points 31.0 outside [0, max_points 30.0]"),
        (lambda r: r["items"][0].update(held_in=11), "items[0]: held_in 11 outside [0, scenarios 1]"),
        (lambda r: r["items"][0].update(partial="some"), "items[0].partial must be one of 'none', 'share'"),
        (lambda r: r["scenarios"][0].update(outcome="crashed"), "scenarios[0].outcome must be one of"),
        (lambda r: r.update(score=99.0), "score 99.0 is not the sum of the items' points (within its cap)"),
        (lambda r: r.update(max_score=90.0), "max_score 90.0 is not the sum of the items' max_points"),
        (lambda r: r.update(incidents=[{"id": "x"}]), "incidents[0]: missing field 'scenario'"),
        (lambda r: r.update(stateful={"ran": "no"}), "stateful.ran must be true or false"),
    ],
)
def test_a_broken_record_is_refused_with_the_field_and_what_it_must_be(breakage, expected):
    r = record("alice")
    breakage(r)
    problems = grade_record.validate(r)
    assert any(expected in p for p in problems), problems


def test_an_ungradable_record_needs_no_points_but_a_reason():
    assert grade_record.validate(ungradable("carol", "could not start: no relay.toml")) == []


def test_load_names_the_file_when_it_is_not_a_record(tmp_path):
    (tmp_path / "a.json").write_text("{not json")
    (tmp_path / "b.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match=r"a\.json: not a grade record: not JSON"):
        grade_record.load(tmp_path / "a.json")
    with pytest.raises(ValueError, match=r"b\.json: not a grade record: a JSON list"):
        grade_record.load(tmp_path / "b.json")


def test_item_points_sums_each_item_over_its_scenario_sets():
    points = grade_record.item_points(record("bob", broken={"one-account-call": ["min-age-trap"]}))
    assert list(points)[0] == "claim" and points["claim"] == (30.0, 30.0)
    assert points["sends-once"][1] == 20.0 and round(points["sends-once"][0], 2) == 13.33, "lost in the hidden set"


def test_a_capped_record_is_valid_and_its_score_is_the_cap():
    capped = class_of_records()[6]
    assert capped["cap"]["at_most"] == 80.0 and capped["score"] == 80.0 and grade_record.validate(capped) == []


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
