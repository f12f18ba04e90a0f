"""A checker that raises cannot lose a verdict (Jepsen's check-safe): its rule is `unknown`, the others still judge.

On literal histories (tests/random_histories.py) with one rule's checker swapped for one
that raises, and on literal outcomes for the grade: a rule not judged costs nothing, is
shown as such, and flags the grade for an instructor's review.
"""

import pytest

from relaychaos import checkers
from relaychaos.checkers.rulebook import RULES, Rule
from relaychaos.grading import rubric as rubrics
from relaychaos.grading.score import Outcome, score
from relaychaos.records.grade import Verdict
from relaychaos.reports.grade_summary import facts

from .grade_records import scored
from .random_histories import random_history


def broken_checker(facts):
    raise KeyError("account-stats")


@pytest.fixture
def balances_raises():
    """The `balances` rule's checker raises while the test runs (the rule book is restored after)."""
    kept = RULES["balances"]
    RULES["balances"] = Rule(kept.id, kept.text, kept.contract, broken_checker)
    yield
    RULES["balances"] = kept


def history_with_verdicts():
    """The first random literal history whose verdicts span several rules, `balances` among them."""
    for seed in range(200):
        history = random_history(seed)
        rules = {v.rule for v in checkers.check(history)}
        if "balances" in rules and len(rules) >= 3:
            return history
    raise AssertionError("no random history breaks balances and two other rules")


def test_a_rule_whose_checker_raises_is_unknown_naming_the_exception_and_the_others_still_judge(request):
    history = history_with_verdicts()
    before = [v for v in checkers.check(history) if v.rule != "balances"]
    request.getfixturevalue("balances_raises")
    after = checkers.check(history)
    unknown = [v for v in after if v.unknown]
    assert [v.rule for v in unknown] == ["balances"]
    assert "KeyError" in unknown[0].summary and "account-stats" in unknown[0].summary
    assert unknown[0].summary.startswith("unknown:") and "not judged" in unknown[0].summary
    assert [v for v in after if not v.unknown] == before


def test_an_unknown_verdict_is_never_read_as_held():
    history = random_history(0)
    kept = dict(RULES)
    try:
        for rule_id, rule in kept.items():
            RULES[rule_id] = Rule(rule.id, rule.text, rule.contract, broken_checker)
        verdicts = checkers.check(history)
    finally:
        RULES.update(kept)
    assert {v.rule for v in verdicts} == set(RULES) and all(v.unknown for v in verdicts)


def test_a_rule_not_judged_costs_no_points_and_flags_the_grade_for_review():
    unknown = Verdict(rule="one-account-call", label=None, summary="unknown: ...", clause=None, unknown=True)
    outcomes = [
        Outcome("race-32-one-relay", "visible", "failed", [unknown]),
        Outcome("happy-path", "visible", "passed"),
    ]
    result = score(outcomes, rubrics.load())
    assert result.score == 100 and result.review == ["race-32-one-relay: one-account-call"]
    record = scored(result, outcomes)
    shown = facts(record)
    assert any(line.startswith("Flagged for review") and "one-account-call" in line for line in shown)


def test_a_broken_rule_beside_an_unknown_one_still_costs_its_points():
    unknown = Verdict(rule="balances", label=None, summary="unknown: ...", clause=None, unknown=True)
    broken = Verdict(rule="one-account-call", label="g1", summary="...", clause="3.claim-new")
    result = score([Outcome("race-32-one-relay", "visible", "failed", [unknown, broken])], rubrics.load())
    assert result.score < 100 and result.review == ["race-32-one-relay: balances"]
