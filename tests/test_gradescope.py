"""Gradescope's results.json: a test per rule and scenario set, shown when the set may be, never half written."""
import json

import pytest

from relaychaos.reports import gradescope

from .grade_records import class_of_records, record, ungradable

BOB = record("bob", broken={"one-account-call": ["race-32-one-relay", "min-age-trap"],
                            "converged": ["kill-before-account-call"]})


@pytest.mark.parametrize("r", class_of_records(), ids=lambda r: r["submission"])
def test_every_kind_of_record_gives_results_that_follow_the_spec(r):
    assert gradescope.validate(gradescope.results(r)) == []
    assert gradescope.validate(gradescope.results(r, leaderboard=False)) == []


def test_full_marks_pass_every_test_and_score_the_maximum():
    data = gradescope.results(record("alice smith"))
    assert data["score"] == 100.0 and data["execution_time"] == 18 and data["output_format"] == "md"
    assert {t["status"] for t in data["tests"]} == {"passed"}
    assert sum(t["max_score"] for t in data["tests"]) == 100.0


def test_one_test_per_rule_entry_named_for_its_rule_and_set_and_visible_as_its_set():
    tests = gradescope.results(BOB)["tests"]
    assert [(t["name"], t["visibility"]) for t in tests] == [
        ("one-account-call: at most one account call per GUID (visible scenarios)", "visible"),
        ("one-account-call: at most one account call per GUID (hidden scenarios)", "hidden"),
        ("answer-codes: the relay's answer codes follow the contract's table (visible scenarios)", "visible"),
        ("converged: after the final heal, resolve and reprocess, no row is left SENT or UNKNOWN "
         "(scenarios shown after the due date)", "after_due_date")]
    assert [t["status"] for t in tests] == ["failed", "failed", "passed", "failed"]
    assert tests[0]["score"] == 13.5 and tests[0]["max_score"] == 15.0, "partial credit: held in 9 of 10"
    assert tests[0]["tags"] == ["money", "one-account-call"]


def test_a_failing_test_shows_where_it_broke_and_the_incident_report_fenced_as_code():
    out = gradescope.results(BOB)["tests"][0]["output"]
    assert out.startswith("Held in 9 of 10 scenario(s): 13.5 / 15 points.\nBroken in: `race-32-one-relay`.")
    assert "```text\n[one-account-call] GUID g1-" in out and "timeline (seconds since" in out
    assert out.rstrip().endswith("```")


def test_an_incident_holding_backticks_gets_a_longer_fence_so_it_cannot_break_out():
    r = record("mallory", broken={"one-account-call": ["race-32-one-relay"]})
    r["rules"][0]["incidents"] = ["the relay answered ```\n# not a heading\n```` and more"]
    out = gradescope.results(r)["tests"][0]["output"]
    assert "`````text\nthe relay answered ```\n# not a heading\n```` and more\n`````" in out


def test_the_summary_gives_only_the_visible_score_while_other_tests_are_hidden_from_the_student():
    out = gradescope.results(BOB)["output"]
    assert "**Score on the visible scenarios: 33.5 / 35; 65 more points come from scenarios not shown here.**" in out
    assert "84.5" not in out, "the total would give the hidden results away"
    assert "- Seed: 12345" in out
    assert "- Sandbox: auto: uid (user relaychaos-relay-0 (999) of its own), rlimits, landlock (ABI 7" in out


def test_the_summary_leaves_out_notes_and_machine_failures_of_hidden_scenarios():
    r = class_of_records()[3]  # dörte: one note from a visible scenario, one from a hidden one
    out = gradescope.results(r)["output"]
    assert "its accept queue overflowed" in out and "a hidden note" not in out
    eve = gradescope.results(record("eve", broken={"one-account-call": ["stateful"]}))["output"]
    assert "State machine (randomised chaos): ran." in eve and "found a failure" not in eve


def test_an_ungradable_submission_scores_0_and_says_why_in_every_test():
    data = gradescope.results(ungradable("carol", "could not start: no relay.toml in /class/carol."))
    why = "Your submission could not be graded: could not start: no relay.toml in /class/carol. No scenario ran"
    assert data["score"] == 0.0 and why in data["output"]
    assert all(t["score"] == 0.0 and t["status"] == "failed" and why in t["output"] for t in data["tests"])
    assert data["leaderboard"][0]["value"] == 0


def test_a_timed_out_grading_says_its_results_are_partial():
    out = gradescope.results(record("dora", timed_out=True))["output"]
    assert "these results are partial (1 scenario(s) did not run)" in out


def test_names_are_markdown_safe_and_unicode_survives():
    data = gradescope.results(record('名前 `tick` <b>*x*</b>', notes=["happy-path: a <b>*bold*</b> [link](x)"]))
    assert data["output"].startswith("Submission ``名前 `tick` <b>*x*</b>``"), "a code span: shown as it is"
    assert "Note: happy-path: a \\<b\\>\\*bold\\*\\</b\\> \\[link\\](x)" in data["output"]


def test_the_leaderboard_ranks_by_visible_points_alone():
    assert gradescope.results(BOB)["leaderboard"] == [
        {"name": "points on visible scenarios", "value": 33.5, "order": "desc"}]
    assert "leaderboard" not in gradescope.results(BOB, leaderboard=False)


@pytest.mark.parametrize("breakage, expected", [
    (lambda d: d.update(execution_time=18.2), "results.execution_time must be a whole number of seconds"),
    (lambda d: d.update(execution_time=18.0), "results.execution_time must be a whole number of seconds"),
    (lambda d: d.update(output_format="markdown"), "results.output_format must be one of 'text'"),
    (lambda d: d.update(visibility="students"), "results.visibility must be one of 'hidden'"),
    (lambda d: d["tests"][0].update(status="partial"), "tests[0].status must be one of 'passed', 'failed'"),
    (lambda d: d["tests"][0].update(score="13.5"), "tests[0].score must be a number"),
    (lambda d: d["tests"][1].update(max_points=15), "tests[1]: unknown field 'max_points'"),
    (lambda d: d["tests"][0].update(tags="money"), "tests[0].tags must be a list of strings"),
    (lambda d: d["leaderboard"][0].update(order="up"), "leaderboard[0].order must be one of 'asc', 'desc'"),
    (lambda d: d["leaderboard"][0].pop("value"), "leaderboard[0]: missing field 'value'"),
    (lambda d: (d.pop("score"), [(t.pop("score"), t.pop("status")) for t in d["tests"]]), "tests[0]: no score"),
    (lambda d: d.update(score=float("inf")), "results.score must be a number"),
    (lambda d: d.update(extra_data={"when": object()}), "results is not valid JSON"),
])
def test_hand_broken_results_are_caught(breakage, expected):
    data = gradescope.results(BOB)
    breakage(data)
    problems = gradescope.validate(data)
    assert any(expected in p for p in problems), problems


def test_results_that_are_not_an_object_are_caught():
    assert gradescope.validate([]) == ["results must be an object, not []"]


def test_write_leaves_a_complete_results_json_and_nothing_else(tmp_path):
    target = tmp_path / "results" / "results.json"
    gradescope.write(BOB, target)
    assert json.loads(target.read_text(encoding="utf-8")) == gradescope.results(BOB)
    assert [p.name for p in target.parent.iterdir()] == ["results.json"]
