"""Verdicts and the GUIDs in their messages are listed by scenario label, so that a regrade lists them alike.

The run's GUIDs carry a random tag (engine.runner.Runner.guid); an order by GUID would differ
from one run to the next, an order by label does not.
"""

from relaychaos.checkers.facts import Facts
from relaychaos.history import History

F10, F2 = "0123456789ab-00000001", "ffffffffffff-00000001"  # the run's GUIDs of labels f10 and f2


def facts() -> Facts:
    h = History()
    h.append("runner", "ok", "scenario", name="order", guids={})
    h.append("runner", "ok", "guid", label="f10", guid=F10)
    h.append("runner", "ok", "guid", label="f2", guid=F2)
    return Facts(h)


def test_guids_are_ordered_by_their_labels_naturally_not_by_their_random_tags():
    assert sorted([F10, F2], key=facts().guid_order) == [F2, F10]  # f2 before f10, though F10 < F2 as text


def test_a_guid_the_relay_made_from_one_of_the_runs_follows_that_guid():
    made = [f"{F10}-r2", f"{F2}-r2", F2]
    assert sorted(made, key=facts().guid_order) == [F2, f"{F2}-r2", f"{F10}-r2"]


def test_no_guid_comes_first():
    assert sorted([F2, None], key=facts().guid_order) == [None, F2]
