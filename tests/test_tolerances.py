"""Each tolerance of the checkers is a number with its reason on record (relaychaos.tolerances.REASONS)."""

from dataclasses import fields

from relaychaos.tolerances import CURRENT, REASONS, V1, Tolerances


def test_every_tolerance_says_why_it_has_its_value():
    assert set(REASONS) == {f.name for f in fields(Tolerances)}


def test_a_history_that_recorded_no_tolerances_is_judged_as_v1_and_one_that_did_by_its_own():
    assert Tolerances.from_dict(None) == V1 and Tolerances.from_dict(CURRENT.as_dict()) == CURRENT
