"""Gradescope's results.json: a test per rubric item and scenario set, shown when the set may be, each incident once
in the summary, never half written."""

import json

import pytest

from relaychaos.reports import gradescope

from .grade_records import class_of_records, record
from .schema_check import problems


def results(r, **options):
    """What relaychaos writes for Gradescope: the record's JSON values."""
    return gradescope.results(r, **options).to_builtins()


BOB = record(
    "bob", broken={"one-account-call": ["race-32-one-relay", "min-age-trap"], "converged": ["kill-before-account-call"]}
)


@pytest.mark.parametrize("r", class_of_records(), ids=lambda r: r.submission)
def test_every_kind_of_record_gives_results_that_follow_the_spec(r):
    assert problems("gradescope-results", results(r)) == []
    assert problems("gradescope-results", results(r, leaderboard=False)) == []


def test_full_marks_pass_every_test_and_score_the_maximum():
    data = results(record("alice smith"))
    assert data["score"] == 100.0 and data["execution_time"] == 18 and data["output_format"] == "md"
    assert {t["status"] for t in data["tests"]} == {"passed"}
    assert round(sum(t["max_score"] for t in data["tests"]), 1) == 100.0


def test_one_test_per_item_and_set_named_as_the_student_reads_the_behaviour():
    tests = results(BOB)["tests"]
    assert [(t["name"], t["visibility"], t["status"]) for t in tests][:3] == [
        ("claims a GUID atomically: copies racing never both send it", "visible", "failed"),
        ("never sends a GUID twice in any other story", "visible", "passed"),
        ("never sends a GUID twice in any other story (hidden scenarios)", "hidden", "failed"),
    ]
    assert tests[0]["score"] == 0.0 and tests[0]["max_score"] == 30.0, "lost whole: partial = none"
    assert tests[0]["tags"] == ["claim", "one-account-call", "one-debit"]


def test_a_failing_test_names_the_scenario_the_verdict_and_the_incident_in_the_summary():
    out = results(BOB)["tests"][0]["output"]
    assert out.startswith("Held in 0 of 1 scenario(s): 0 / 30 points. Checked by `one-account-call`, `one-debit`.")
    assert "Broken in scenario `race-32-one-relay` (incident 1 in the summary above):" in out
    assert "- \\[one-account-call\\] GUID g1: the account system received this GUID more than once" in out
    assert "```" not in out, "the report itself is in the summary, once"


def test_each_visible_incident_is_in_the_summary_once_fenced_and_hidden_ones_only_in_their_own_test():
    data = results(BOB)
    assert data["output"].count("### Incident") == 1
    assert "### Incident 1: scenario `race-32-one-relay`\n\n```text\nscenario race-32-one-relay" in data["output"]
    assert "min-age-trap" not in data["output"], "a hidden scenario's report stays in its hidden test"
    hidden = data["tests"][2]["output"]
    assert "Broken in scenario `min-age-trap`:" in hidden and "```text\nscenario min-age-trap" in hidden


def _incident(verdicts: int, events: int) -> str:
    head = f"scenario race-32-one-relay against relay 'mallory': {verdicts} violation(s) of 1 rule(s)"
    blocks = [
        f"[one-account-call] GUID g{n}\n  rule: at most one account call per GUID\n"
        "  what happened: the account system received this GUID more than once\n"
        "  timeline (seconds since the scenario started):\n"
        + "\n".join(f"  +  {i / 1000:.3f}s  acct#{i}  account system receives the transfer" for i in range(events))
        for n in range(1, verdicts + 1)
    ]
    return "\n\n".join([head, *blocks])


def test_a_long_timeline_is_cut_to_its_first_and_last_events():
    r = record("mallory", broken={"one-account-call": ["race-32-one-relay"]})
    r.incidents[0].text = _incident(1, 2000)
    out = results(r)["output"]
    assert "acct#0 " in out and "acct#1999 " in out and "acct#1000 " not in out
    assert f"  ... {2000 - gradescope.MAX_TIMELINE_LINES} more ..." in out and "full report" not in out
    assert len(out) < gradescope.MAX_INCIDENT_CHARS + 4000


def test_a_long_incident_keeps_whole_verdicts_and_says_how_many_were_left_out():
    text = gradescope.cut(_incident(200, 3))
    assert text.endswith(" more verdicts of this report left out)")
    kept = text.count("[one-account-call]")
    assert 10 < kept < 200 and f"({200 - kept} more verdicts" in text
    assert all(block.count("acct#") == 3 for block in text.split("\n\n")[1:-1]), "no verdict is cut in half"


def test_a_race_that_reached_the_account_system_more_or_fewer_times_is_cut_alike():
    """A regrade keeps the same verdicts whatever the length of their timelines: only the words count."""
    short, long = gradescope.cut(_incident(60, 2)), gradescope.cut(_incident(60, 32))
    assert short.count("[one-account-call]") == long.count("[one-account-call]") < 60
    assert short.splitlines()[-1] == long.splitlines()[-1]


def test_an_incident_holding_backticks_gets_a_longer_fence_so_it_cannot_break_out():
    r = record("mallory", broken={"one-account-call": ["race-32-one-relay"]})
    r.incidents[0].text = "the relay answered ```\n# not a heading\n```` and more"
    out = results(r)["output"]
    assert "`````text\nthe relay answered ```\n# not a heading\n```` and more\n`````" in out


def test_the_summary_gives_only_the_visible_score_while_other_tests_are_hidden_from_the_student():
    out = results(BOB)["output"]
    assert out.startswith(
        "**Score on the visible scenarios: 35 / 65; 35 more points come from scenarios not shown here.**"
    ), "no heading naming the submission's folder"
    assert "58.33" not in out, "the total would give the hidden results away"
    assert "- Seed: 12345" in out
    assert "- Sandbox: auto: uid (a system user per slot), rlimits, landlock (ABI 7" in out


def test_the_summary_leaves_out_notes_and_machine_failures_of_hidden_scenarios():
    r = class_of_records()[3]  # dörte: one note from a visible scenario, one from a hidden one
    out = results(r)["output"]
    assert "its accept queue overflowed" in out and "a hidden note" not in out
    eve = results(record("eve", broken={"one-account-call": ["stateful"]}))["output"]
    assert "State machine (randomised chaos): ran." in eve and "found a failure" not in eve


def test_a_cap_is_said_with_why_and_where():
    capped = class_of_records()[6]
    out = results(capped)["output"]
    assert capped.score == 80.0
    assert (
        "Score capped at 80: the relay applied a debit twice (in happy-path); 6.67 points above the cap"
        in out.replace("\\", "")
    )


def test_an_ungradable_submission_scores_0_and_shows_what_the_relay_printed():
    data = results(class_of_records()[2])
    why = "Your submission could not be graded: could not start: relay 'carol' serve exited with status 1"
    assert data["score"] == 0.0 and why in data["output"]
    assert '```text\n  File "relay.py", line 2\n    def main(:\nSyntaxError: invalid syntax\n```' in data["output"]
    assert all(t["score"] == 0.0 and t["status"] == "failed" and why in t["output"] for t in data["tests"])
    assert all("SyntaxError" not in t["output"] for t in data["tests"]), "once, in the summary"
    assert data["leaderboard"][0]["value"] == 0


def test_a_grading_cut_at_its_budget_is_no_score_and_still_shows_what_the_scenarios_that_ran_showed():
    data = results(record("dora", timed_out=True, broken={"answer-codes": ["happy-path"]}))
    assert data["output"].startswith("**Your submission could not be graded: it ran out of time: the grading budget")
    assert (
        "This is not a score" in data["output"]
        and "these results are partial (1 scenario(s) did not run)" in data["output"]
    )
    assert "### Incident 1: scenario `happy-path`" in data["output"], "what it showed, once"
    assert data["score"] == 0.0 and all(
        "The incidents it showed are in the summary above" in t["output"] for t in data["tests"]
    )


def test_notes_are_markdown_safe_and_unicode_survives():
    data = results(record("名前 `tick` <b>*x*</b>", notes=["happy-path: a <b>*bold*</b> [link](x)"]))
    assert "Note: happy-path: a \\<b\\>\\*bold\\*\\</b\\> \\[link\\](x)" in data["output"]


def test_the_leaderboard_ranks_by_visible_points_rounded_as_the_score_is():
    assert results(BOB)["leaderboard"] == [{"name": "points on visible scenarios", "value": 35.0, "order": "desc"}]
    eve = results(record("eve", broken={"one-account-call": ["stateful"]}))
    assert eve["leaderboard"][0]["value"] == 65.0 and eve["score"] == 93.33
    assert "leaderboard" not in results(BOB, leaderboard=False)


@pytest.mark.parametrize(
    "breakage, expected",
    [
        (lambda d: d.update(execution_time=18.2), "$.execution_time: 18.2 is not of type 'integer'"),
        (lambda d: d.update(execution_time=-1), "$.execution_time: -1 is less than the minimum of 0"),
        (lambda d: d.update(output_format="markdown"), "$.output_format: 'markdown' is not one of"),
        (lambda d: d.update(visibility="students"), "$.visibility: 'students' is not one of"),
        (lambda d: d["tests"][0].update(status="partial"), "$.tests[0].status: 'partial' is not one of"),
        (lambda d: d["tests"][0].update(score="13.5"), "$.tests[0].score: '13.5' is not of type 'number'"),
        (lambda d: d["tests"][1].update(max_points=15), "$.tests[1]: Additional properties are not allowed"),
        (lambda d: d["tests"][0].update(tags="money"), "$.tests[0].tags: 'money' is not of type 'array'"),
        (lambda d: d["leaderboard"][0].update(order="up"), "$.leaderboard[0].order: 'up' is not one of"),
        (lambda d: d["leaderboard"][0].pop("value"), "$.leaderboard[0]: 'value' is a required property"),
        (
            lambda d: (d.pop("score"), [(t.pop("score"), t.pop("status")) for t in d["tests"]]),
            "is not valid under any of the given schemas",
        ),
        (lambda d: d.update(score=float("inf")), "not valid JSON"),
        (lambda d: d.update(extra_data={"when": object()}), "not valid JSON"),
    ],
)
def test_hand_broken_results_are_caught(breakage, expected):
    data = results(BOB)
    breakage(data)
    found = problems("gradescope-results", data)
    assert any(expected in p for p in found), found


def test_results_that_are_not_an_object_are_caught():
    assert problems("gradescope-results", []) == ["$: [] is not of type 'object'"]


def test_write_leaves_a_complete_results_json_and_nothing_else(tmp_path):
    target = tmp_path / "results" / "results.json"
    gradescope.write(BOB, target)
    assert json.loads(target.read_text(encoding="utf-8")) == results(BOB)
    assert [p.name for p in target.parent.iterdir()] == ["results.json"]
