"""A mark names the middle of a wait; a resolve or purge `since` the mark takes the time since then as its age, so
that the rows changed before the mark are older than it and those changed after are younger, however long the
steps took: an imported night's rows are as old at its batch runs as they were in production."""

import pytest

from relaychaos.engine import scenario_file
from relaychaos.engine import steps as S
from relaychaos.engine.operations import first_marks
from relaychaos.events import Op

from .conftest import REFERENCE

# the account system's answers arrive after the relay's time-out: its rows are left UNKNOWN
LATE = S.AddToxic("account", "latency", "downstream", name="late", attributes={"latency": 1500})


def unknown_before_and_after_a_mark(batch):
    """g1 left UNKNOWN, a mark, g2 left UNKNOWN, then `batch` since the mark."""
    return S.Scenario(
        "ages-since-a-mark",
        (
            LATE,
            S.Send("g1", 10),
            S.Mark("before-g2", wait_s=2.0),
            S.Send("g2", 10),
            S.RemoveToxic("account", "late"),
            batch,
        ),
    )


@pytest.mark.stack
def test_resolve_since_a_mark_decides_the_rows_changed_before_it_and_leaves_those_changed_after(run_chaos):
    sc = unknown_before_and_after_a_mark(S.Resolve(min_age_s=0.5, since="before-g2"))
    result = run_chaos(sc, manifest=REFERENCE)
    resolve = next(e for e in result.history if e.f == "resolve" and e.type == "invoke")
    assert 1.0 <= resolve.value["argument"] < 2.5, resolve.value  # the time since the mark's middle
    after = next(e for e in result.history if e.f == Op.LEDGER_SNAPSHOT and e.value.get("after_step") == len(sc.steps))
    label = {e.value["guid"]: e.value["label"] for e in result.history if e.f == Op.GUID}
    rows = {label[g]: row["status"] for g, row in after.value["rows"].items() if g in label}
    assert rows == {"g1": "DONE", "g2": "UNKNOWN"}, rows
    assert result.ok, result.verdicts


@pytest.mark.stack
def test_a_resolve_since_a_mark_made_before_any_row_changed_does_not_wait_and_leaves_the_rows_changed_after(run_chaos):
    """No row changed before the mark, so none needs to be older than the age: the resolve runs at once, with its safe
    --min-age (3 s here) as the age, and the row changed after the mark is too young for it."""
    sc = S.Scenario(
        "a-mark-before-any-row",
        (
            S.Mark("first", wait_s=0.5),
            LATE,
            S.Send("g1", 10),
            S.RemoveToxic("account", "late"),
            S.Resolve(min_age_s=3.0, since="first"),
        ),
    )
    result = run_chaos(sc, manifest=REFERENCE)
    resolve = next(e for e in result.history if e.f == "resolve" and e.type == "invoke")
    assert resolve.value["argument"] == 3.0, resolve.value
    waited = [e for e in result.history if e.f == Op.AGE and e.index < resolve.index]
    assert not waited, f"no wait for age before the resolve: {waited}"
    after = next(e for e in result.history if e.f == Op.LEDGER_SNAPSHOT and e.value.get("after_step") == len(sc.steps))
    assert [row["status"] for row in after.value["rows"].values()] == ["UNKNOWN"], after.value
    assert result.ok, result.verdicts


def test_the_marks_made_before_any_step_that_may_change_a_row_are_known_before_the_run():
    steps = [S.Mark("m1", 0.5), S.Kill(), S.Start(), S.Mark("m2", 0.5), S.Send("g1"), S.Mark("m3", 0.5)]
    assert first_marks(steps) == {"m1", "m2"}
    assert first_marks([S.Reprocess(3), S.Mark("m", 0.5)]) == set()


def test_a_batch_run_since_a_mark_no_step_made_is_refused_before_anything_runs():
    with pytest.raises(scenario_file.ScenarioFileError, match="since = 'm' names no mark made before this step"):
        scenario_file.check([S.Resolve(1.0, since="m"), S.Mark("m", 1.0)], ("a",))
    with pytest.raises(scenario_file.ScenarioFileError, match="mark 'm' is made twice"):
        scenario_file.check([S.Mark("m", 1.0), S.Mark("m", 1.0)], ("a",))
    with pytest.raises(scenario_file.ScenarioFileError, match="wait_s = 0 is not a possible timing"):
        scenario_file.check([S.Mark("m", 0)], ("a",))
