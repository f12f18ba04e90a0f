"""Grading, without the stack: the rubric, the score, the submissions and their shards.

A score is a pure function of a submission's scenario outcomes and the rubric, so
these pin it down on literal outcomes: what full marks, partial credit, a relay
that never starts, a cut run and a hidden set each give.
"""

import pytest

from relaychaos.errors import HarnessError
from relaychaos.grading import rubric as rubrics
from relaychaos.grading.score import Outcome, Score, score
from relaychaos.grading.submissions import find, parse_shard, shard
from relaychaos.records.grade import Verdict

RUBRIC = rubrics.load()


def v(rule: str) -> Verdict:
    return Verdict(rule=rule, label="g1", summary="...", clause="3.claim-new")


def points(result: Score, item: str, set_name: str = "visible") -> float:
    return next(e.points for e in result.items if e.item == item and e.set == set_name)


def held(*names: str) -> list[Outcome]:
    return [Outcome(n, "visible", "passed") for n in names]


SUITE = (
    "happy-path",
    "race-32-one-relay",
    "race-pairs-two-relays",
    "dropped-response-downstream",
    "min-age-trap",
    "purge-retention",
    "guid-reused",
    "kill-after-applied-before-done",
)


def graded(broken: dict[str, list[str]], rubric=RUBRIC) -> Score:
    """The score of the suite's scenarios with each scenario in `broken` breaking those rules."""
    return score(
        [
            Outcome(n, "visible", "failed" if n in broken else "passed", [v(r) for r in broken.get(n, [])])
            for n in SUITE
        ],
        rubric,
    )


def test_the_shipped_rubric_grades_behaviours_named_for_a_student_out_of_100():
    assert RUBRIC.version == 2 and RUBRIC.max_score == 100
    titles = {i.id: i.title for i in RUBRIC.items}
    assert titles["claim-across-relays"].startswith("claims a GUID in the ledger, not in its own process: two relays")
    assert titles["unknown-never-resent"].startswith("never resends an UNKNOWN")
    assert all(i.partial == "none" for i in RUBRIC.items)


def test_a_failure_costs_the_first_item_naming_its_rule_and_scenario():
    assert RUBRIC.item_for("one-account-call", "race-pairs-two-relays").id == "claim-across-relays"
    assert RUBRIC.item_for("one-account-call", "race-32-one-relay").id == "atomic-claim"
    assert RUBRIC.item_for("one-account-call", "dropped-response-downstream").id == "unknown-never-resent"
    assert RUBRIC.item_for("one-account-call", "happy-path").id == "resend-from-ledger", "the catch-all"
    assert RUBRIC.item_for("write-before-send", "race-32-one-relay").id == "write-before-send"


def test_a_rule_broken_in_the_one_scenario_that_exercises_it_loses_the_whole_behaviour():
    result = graded({"race-pairs-two-relays": ["one-account-call"]})
    assert points(result, "claim-across-relays") == 0 and result.score == 90
    failure = next(e for e in result.items if e.item == "claim-across-relays").failures[0]
    assert failure.to_builtins() == {"incident": "race-pairs-two-relays", "why": ["[one-account-call] GUID g1: ..."]}
    assert [i.id for i in result.incidents] == ["race-pairs-two-relays"], "one incident per failing scenario"


def test_a_relay_shown_to_apply_a_debit_twice_scores_at_most_80():
    result = graded({"race-pairs-two-relays": ["one-account-call", "one-debit", "balances"]})
    assert (
        result.score == 80
        and result.cap is not None
        and result.cap.to_builtins()
        == {
            "at_most": 80.0,
            "why": "the relay applied a debit twice",
            "rules": ["one-debit"],
            "broken_in": ["race-pairs-two-relays"],
            "lost": 10.0,
        }
    )


def test_a_relay_with_no_duplicate_protection_scores_at_most_40():
    money = ["one-account-call", "one-debit", "balances"]
    result = graded(
        {n: money for n in SUITE}
        | {"guid-reused": money + ["answer-codes"], "dropped-response-downstream": money + ["transitions"]}
    )
    assert result.score <= 40, result.score


def test_partial_share_per_item_keeps_the_weighted_share_of_its_scenarios_in_which_it_held(tmp_path):
    path = tmp_path / "r.toml"
    path.write_text(
        '[[item]]\nid = "once"\ntitle = "sends once"\nrules = ["one-account-call"]\npoints = 40\n'
        'partial = "share"\n[[item]]\nid = "codes"\ntitle = "codes"\nrules = ["answer-codes"]\n'
        "points = 60\n[weights]\nstateful = 2\n"
    )
    rubric = rubrics.load(path)
    outcomes = [Outcome("a", "visible", "failed", [v("one-account-call")]), *held("b", "stateful")]  # weights 1, 1, 2
    assert points(score(outcomes, rubric), "once") == pytest.approx(40 * 3 / 4)


def test_a_v1_rubric_loads_as_one_share_item_per_rule_and_scores_as_v1_did(tmp_path):
    path = tmp_path / "v1.toml"
    path.write_text('[[group]]\nname = "money"\nrules = { "one-account-call" = 15, "answer-codes" = 85 }\n')
    rubric = rubrics.load(path)
    assert rubric.version == 1 and [(i.id, i.partial, i.scenarios) for i in rubric.items] == [
        ("one-account-call", "share", ("*",)),
        ("answer-codes", "share", ("*",)),
    ]
    result = score([Outcome("a", "visible", "failed", [v("one-account-call")]), *held("b", "c")], rubric)
    assert result.score == pytest.approx(100 - 5)


def test_a_rubric_with_problems_is_refused_with_every_problem_listed(tmp_path):
    bad = tmp_path / "r.toml"
    bad.write_text(
        '[[item]]\nid = "x"\ntitle = "x"\nrules = ["one-acount-call"]\npoints = -1\npartial = "most"\n'
        'contract = ["9.nothing"]\n[[cap]]\nrules = ["one-debit"]\n'
        "[sets.secret]\nscenarios = []\n[weights]\nstateful = 0\n"
    )
    with pytest.raises(rubrics.RubricError) as e:
        rubrics.load(bad)
    text = str(e.value)
    for problem in (
        "unknown rule `one-acount-call`",
        "`points` must be a number >= 0",
        "partial = 'most'",
        "unknown contract clause `9.nothing`",
        "[[cap]] #1: needs `at_most`",
        "[sets.secret]: unknown set",
        "[weights].stateful must be a number > 0",
    ):
        assert problem in text


def test_a_relay_that_holds_everywhere_gets_full_marks():
    assert score(held("a", "b"), RUBRIC).score == 100


def test_a_scenario_where_the_relay_would_not_start_costs_the_items_naming_it_and_the_interface():
    result = graded({"race-pairs-two-relays": ["serve-ready"]})
    assert points(result, "claim-across-relays") == 0 and points(result, "interface") == 0
    assert points(result, "resend-from-ledger") == 12, "the other scenarios show the catch-alls"
    assert result.score == 86


def test_what_the_time_budget_cut_off_costs_every_item_it_is_among_and_a_machine_skipped_on_purpose_nothing():
    cut = held("happy-path") + [Outcome("race-pairs-two-relays", "visible", "not-run", cut=True)]
    assert points(score(cut, RUBRIC), "claim-across-relays") == 0 and points(score(cut, RUBRIC), "interface") == 0
    skipped = held("a") + [Outcome("stateful", "visible", "skipped")]
    assert score(skipped, RUBRIC).score == 100


def test_an_item_whose_every_rule_the_relay_cannot_be_judged_by_is_not_checked_neither_held_nor_lost():
    unchecked = {"done-replay": "not checked: only a course relay answers with the contract's codes"}
    result = score(held("a", "b"), RUBRIC, unchecked)
    entry = next(e for e in result.items if e.item == "done-replay")
    assert (entry.points, entry.max_points) == (0, 0) and entry.not_checked == unchecked["done-replay"]
    assert result.score == result.max_score == 96, "the total is out of the items checked"
    mixed = score(held("a"), RUBRIC, {"malformed-no-effect": "not checked: ..."})  # answer-codes is judged still
    assert next(e for e in mixed.items if e.item == "answer-codes").max_points == 5 and mixed.max_score == 100


def test_an_item_whose_scenarios_were_all_skipped_for_a_command_the_relay_lacks_is_not_checked():
    lacks = "not run: scenario min-age-trap runs resolve, which relay 'x' does not have"
    outcomes = held("happy-path") + [Outcome("min-age-trap", "visible", "skipped", relay_lacks=lacks)]
    result = score(outcomes, RUBRIC)
    entry = next(e for e in result.items if e.item == "resolve-min-age")
    assert entry.not_checked == lacks and (entry.points, entry.max_points) == (0, 0)
    assert result.score == result.max_score == 95
    narrowed = score(held("happy-path"), RUBRIC)  # a run narrowed to a few scenarios: nothing showed it broken
    assert next(e for e in narrowed.items if e.item == "resolve-min-age").max_points == 5


def test_an_item_s_points_are_split_across_sets_by_weight_and_each_set_scored_on_its_own():
    outcomes = held("a", "b") + [Outcome("h", "hidden", "failed", [v("done-replay")])]
    result = score(outcomes, RUBRIC)
    hidden = next(e for e in result.items if e.item == "done-replay" and e.set == "hidden")
    assert hidden.max_points == pytest.approx(4 / 3, abs=1e-3) and hidden.points == 0
    assert hidden.broken_in == ["h"] and hidden.failures[0].incident == "h"
    assert result.score == pytest.approx(100 - 4 / 3, abs=0.01)


def test_submissions_are_named_by_folder_made_unique_and_safe_for_file_names(tmp_path):
    for folder in ("class/émile dupont", "class/bob", "other/bob"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "relay.toml").write_text("name = 'x'\n")
    (tmp_path / "class" / "no manifest").mkdir()
    subs = find([str(tmp_path / "class" / "*"), str(tmp_path / "other" / "bob" / "relay.toml")])
    assert [s.name for s in subs] == ["class/bob", "no manifest", "émile dupont", "other/bob"]  # by path
    assert subs[1].manifest is None
    assert all(s.slug.isascii() and " " not in s.slug for s in subs) and len({s.slug for s in subs}) == 4


def test_only_folders_are_submissions_and_what_is_left_out_is_said_once(tmp_path):
    for folder in ("alice", "bob", "lost+found", ".git"):
        (tmp_path / folder).mkdir()
    (tmp_path / "roster.csv").write_text("name\n")
    said = []
    subs = find([str(tmp_path / "*"), str(tmp_path / ".git"), str(tmp_path / "roster.csv")], said.append)
    assert [s.name for s in subs] == ["alice", "bob"]
    assert (
        len(said) == 1
        and "roster.csv (a plain file)" in said[0]
        and "lost+found (a hidden or system folder)" in said[0]
        and ".git (a hidden or system folder)" in said[0]
    )


def test_a_folder_whose_only_relay_toml_is_one_level_down_is_graded_from_there_with_a_note(tmp_path):
    (tmp_path / "carol" / "my-relay").mkdir(parents=True)
    (tmp_path / "carol" / "my-relay" / "relay.toml").write_text("name = 'x'\n")
    (sub,) = find([str(tmp_path / "carol")])
    assert sub.name == "carol" and sub.manifest == tmp_path / "carol" / "my-relay" / "relay.toml"
    assert sub.notes == (
        "relay.toml was not at the top of the submission but in its folder my-relay/: graded from "
        "there (put relay.toml at the top next time)",
    )


def test_shards_are_disjoint_and_together_hold_every_submission(tmp_path):
    for i in range(7):
        (tmp_path / f"s{i}").mkdir()
    subs = find([str(tmp_path / "s*")])
    parts = [shard(subs, i, 3) for i in range(3)]
    assert sorted(s.folder for p in parts for s in p) == [s.folder for s in subs]
    assert parse_shard("2/3") == (2, 3) and parse_shard(None) == (0, 1)
    for bad in ("3/3", "1-3", "-1/2"):
        with pytest.raises(HarnessError, match="is not i/N"):
            parse_shard(bad)


def test_a_glob_that_matches_nothing_stops_before_anything_starts(tmp_path):
    with pytest.raises(HarnessError, match="no submission matches"):
        find([str(tmp_path / "nobody*")])
