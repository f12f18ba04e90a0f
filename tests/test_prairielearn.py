"""PrairieLearn's results.json: a score in [0, 1], a test per rubric item and scenario set, not gradable if it cannot
start."""

import json

import pytest

from relaychaos.reports import prairielearn

from .grade_records import class_of_records, record
from .schema_check import problems


def results(r, **options):
    """What relaychaos writes for PrairieLearn: the record's JSON values."""
    return prairielearn.results(r, **options).to_builtins()


BOB = record(
    "bob", broken={"one-account-call": ["race-32-one-relay", "min-age-trap"], "converged": ["kill-before-account-call"]}
)


@pytest.mark.parametrize("r", class_of_records(), ids=lambda r: r.submission)
def test_every_kind_of_record_gives_results_that_follow_the_spec(r):
    assert problems("prairielearn-results", results(r)) == []
    assert problems("prairielearn-results", results(r, reveal_hidden=True)) == []


def test_the_score_is_the_share_of_max_score_and_each_item_entry_is_a_test():
    data = results(BOB)
    assert data["gradable"] is True and data["score"] == 0.5833
    assert [(t["name"], t["points"], t["max_points"]) for t in data["tests"]][:3] == [
        ("claims a GUID atomically: copies racing never both send it", 0.0, 30.0),
        ("never sends a GUID twice in any other story", 10.0, 10.0),
        ("never sends a GUID twice in any other story (hidden scenarios)", 0.0, 6.67),
    ]
    assert data["tests"][0]["description"] == "checked by one-account-call, one-debit"


def test_the_output_holds_each_visible_incident_once_and_a_test_names_it():
    data = results(BOB)
    t = data["tests"][0]
    assert t["message"] == (
        "Held in 0 of 1 scenario(s): 0 / 30 points. Broken in: race-32-one-relay (incident "
        "reports in the output above)."
    )
    assert (
        t["output"] == "race-32-one-relay: [one-account-call] GUID g1: the account system received this GUID "
        "more than once"
    )
    assert data["output"].count("Incident: scenario ") == 1 and "timeline (seconds since" in data["output"]


def test_hidden_and_after_due_date_tests_keep_their_points_but_not_their_details():
    tests = results(BOB)["tests"]
    hidden, later = tests[2], tests[-1]
    for t in (hidden, later):
        assert t["message"] == "Details of these scenarios are not shown." and t["output"] == ""
        assert "min-age-trap" not in json.dumps(t) and "kill-before" not in json.dumps(t)
    assert "min-age-trap" not in results(BOB)["output"]
    revealed = results(BOB, reveal_hidden=True)
    assert "Broken in: min-age-trap" in revealed["tests"][2]["message"]
    assert "Incident: scenario min-age-trap" in revealed["output"]


def test_a_submission_that_cannot_start_is_not_gradable_with_the_reason_and_what_it_printed():
    data = results(class_of_records()[2])
    assert data["gradable"] is False and "score" not in data and "tests" not in data
    assert data["format_errors"][0].startswith("could not start: relay 'carol' serve exited with status 1")
    assert data["message"].startswith("Your submission could not be graded: could not start: relay 'carol'")
    assert data["output"].endswith(
        'What the relay printed last:\n  File "relay.py", line 2\n    def main(:\nSyntaxError: invalid syntax'
    )


def test_a_grading_cut_at_its_budget_is_not_gradable_so_the_attempt_does_not_count_and_says_it_is_no_score():
    data = results(record("dora", timed_out=True))
    assert data["gradable"] is False and data["format_errors"][0].startswith("ran out of time: the grading budget")
    assert "This is not a score" in data["message"] and "these results are partial" in data["output"]


def test_a_zero_max_score_gives_score_0_not_a_division_by_zero():
    r = record("zed")
    for item in r.items:
        item.points, item.max_points = 0.0, 0.0
    r.score, r.max_score = 0.0, 0.0
    assert results(r)["score"] == 0.0


@pytest.mark.parametrize(
    "breakage, expected",
    [
        (lambda d: d.pop("score"), "$: 'score' is a required property"),
        (lambda d: d.update(score=84.5), "$.score: 84.5 is greater than the maximum of 1"),
        (lambda d: d.update(score="0.8"), "$.score: '0.8' is not of type 'number'"),
        (lambda d: d.update(gradable="true"), "$.gradable: 'true' is not of type 'boolean'"),
        (lambda d: d.update(format_errors=[1]), "$.format_errors: [1] is not valid under any of the given schemas"),
        (lambda d: d["tests"][0].update(points="13.5"), "$.tests[0].points: '13.5' is not of type 'number'"),
        (lambda d: d["tests"][0].update(images=[{"label": "plot"}]), "$.tests[0].images[0]: {'label': 'plot'} is not"),
        (lambda d: d.update(output="x" * 1_000_001), "is too long"),
        (lambda d: d.update(score=float("nan")), "not valid JSON"),
    ],
)
def test_hand_broken_results_are_caught(breakage, expected):
    data = results(BOB)
    breakage(data)
    found = problems("prairielearn-results", data)
    assert any(expected in p for p in found), found


def test_extra_fields_are_allowed_as_prairielearn_allows_them():
    data = {**results(BOB), "seed": 12345, "images": ["data:image/png;base64,AAAA"]}
    assert problems("prairielearn-results", data) == []
    assert problems("prairielearn-results", {"gradable": False}) == [], "score is not needed when not gradable"


def test_write_makes_the_results_folder_and_a_complete_file(tmp_path):
    target = tmp_path / "grade" / "results" / "results.json"
    prairielearn.write(BOB, target)
    assert json.loads(target.read_text(encoding="utf-8")) == results(BOB)
