"""Grading, without the stack: the rubric, the score, the submissions and their shards.

A score is a pure function of a submission's scenario outcomes and the rubric, so
these pin it down on literal outcomes: what full marks, partial credit, a relay
that never starts, a cut run and a hidden set each give.
"""

import pytest

from relaychaos.errors import HarnessError
from relaychaos.grading import rubric as rubrics
from relaychaos.grading.score import Outcome, score
from relaychaos.grading.submissions import find, parse_shard, shard

RUBRIC = rubrics.load()
WHAT = {}


def v(rule: str) -> dict:
    return {"rule": rule, "guid": "g1-x", "summary": "...", "clause": "3.claim-new"}


def points(entries, rule, set_name="visible"):
    return next(e["points"] for e in entries if e["rule"] == rule and e["set"] == set_name)


def test_the_default_rubric_grades_every_rule_but_the_client_s_own_out_of_100():
    assert RUBRIC.max_score == 100
    assert "one-debit-per-payment" not in RUBRIC.points and RUBRIC.group_of["one-account-call"] == "money"


def test_a_rubric_with_problems_is_refused_with_every_problem_listed(tmp_path):
    bad = tmp_path / "r.toml"
    bad.write_text('[[group]]\nname = "m"\nrules = { "one-acount-call" = 5, "balances" = -1 }\n'
                   '[sets.secret]\nscenarios = []\n[weights]\nstateful = 0\n')
    with pytest.raises(rubrics.RubricError) as e:
        rubrics.load(bad)
    text = str(e.value)
    for problem in ("unknown rule `one-acount-call`", "points for `balances` must be a number >= 0",
                    "[sets.secret]: unknown set", "[weights].stateful must be a number > 0"):
        assert problem in text


def test_a_relay_that_holds_everywhere_gets_full_marks():
    total, _ = score([Outcome("a", "visible", "passed"), Outcome("b", "visible", "passed")], RUBRIC, WHAT)
    assert total == 100


def test_partial_credit_is_the_weighted_share_of_scenarios_in_which_a_rule_held():
    outcomes = [Outcome("a", "visible", "failed", [v("one-account-call")]), Outcome("b", "visible", "passed"),
                Outcome("stateful", "visible", "passed")]  # weights 1, 1, 2
    total, entries = score(outcomes, RUBRIC, WHAT)
    assert points(entries, "one-account-call") == pytest.approx(15 * 3 / 4)
    assert total == pytest.approx(100 - 15 / 4)


def test_a_scenario_where_the_relay_would_not_start_counts_against_every_rule():
    total, entries = score([Outcome("a", "visible", "failed", [v("serve-ready")]), Outcome("b", "visible", "passed")],
                           RUBRIC, WHAT)
    assert total == 50 and points(entries, "balances") == 5


def test_what_the_time_budget_cut_off_counts_against_every_rule_and_a_machine_skipped_on_purpose_not_at_all():
    cut = [Outcome("a", "visible", "passed"), Outcome("b", "visible", "not-run", cut=True)]
    assert score(cut, RUBRIC, WHAT)[0] == 50
    skipped = [Outcome("a", "visible", "passed"), Outcome("stateful", "visible", "skipped")]
    assert score(skipped, RUBRIC, WHAT)[0] == 100


def test_a_rule_s_points_are_split_across_sets_by_weight_and_each_set_scored_on_its_own():
    outcomes = [Outcome("a", "visible", "passed"), Outcome("b", "visible", "passed"),
                Outcome("h", "hidden", "failed", [v("balances")])]
    total, entries = score(outcomes, RUBRIC, WHAT)
    hidden = next(e for e in entries if e["rule"] == "balances" and e["set"] == "hidden")
    assert hidden["max_points"] == pytest.approx(10 / 3, abs=1e-3) and hidden["points"] == 0
    assert hidden["broken_in"] == ["h"] and "scenario h broke balances" in hidden["incidents"][0]
    assert total == pytest.approx(100 - 10 / 3, abs=1e-3)


def test_submissions_are_named_by_folder_made_unique_and_safe_for_file_names(tmp_path):
    for folder in ("class/émile dupont", "class/bob", "other/bob"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "relay.toml").write_text("name = 'x'\n")
    (tmp_path / "class" / "no manifest").mkdir()
    subs = find([str(tmp_path / "class" / "*"), str(tmp_path / "other" / "bob" / "relay.toml")])
    assert [s.name for s in subs] == ["class/bob", "no manifest", "émile dupont", "other/bob"]  # by path
    assert subs[1].manifest is None
    assert all(s.slug.isascii() and " " not in s.slug for s in subs) and len({s.slug for s in subs}) == 4


def test_shards_are_disjoint_and_together_hold_every_submission(tmp_path):
    for i in range(7):
        (tmp_path / f"s{i}").mkdir()
    subs = find([str(tmp_path / "s*")])
    parts = [shard(subs, i, 3) for i in range(3)]
    assert sorted((s.folder for p in parts for s in p)) == [s.folder for s in subs]
    assert parse_shard("2/3") == (2, 3) and parse_shard(None) == (0, 1)
    for bad in ("3/3", "1-3", "-1/2"):
        with pytest.raises(HarnessError, match="is not i/N"):
            parse_shard(bad)


def test_a_glob_that_matches_nothing_stops_before_anything_starts(tmp_path):
    with pytest.raises(HarnessError, match="no submission matches"):
        find([str(tmp_path / "nobody*")])
