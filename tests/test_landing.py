"""Green means tested: each scenario's landing claims, judged on its history alone.

A claim is LANDED when the history shows its fault met the transfer it aims at, MISSED when it
shows otherwise, UNKNOWN when the history lacks what the claim reads; a scenario with a claim not
LANDED is "not exercised", never "passed".
"""

import pytest

from relaychaos.checkers import claims as C
from relaychaos.checkers.landing import LANDED, MISSED, NOT_APPLICABLE, UNKNOWN, judge
from relaychaos.engine import scenario_file
from relaychaos.engine.steps import AddToxic, Kill, Scenario, Send, WaitRow
from relaychaos.grading import rubric as rubrics
from relaychaos.grading.score import Outcome, score
from relaychaos.records.results import LandingRecord
from relaychaos.reports.grade_summary import facts
from relaychaos.reports.results import NOT_EXERCISED, RunResults
from relaychaos.run.chaos import ChaosResult, NotExercised
from relaychaos.scenarios import ALL

from .grade_records import scored
from .history_builder import HistoryBuilder, row

KILL = C.KilledBeforeCall("g1", step=2)


def kill_story(call_at: float | None = None, answered_at: float | None = None, snapshot: bool = True):
    """g1 sent at 0 (step 1), its row seen SENT at 0.01, the relay killed at 0.025 (step 2)."""
    h = HistoryBuilder(name="kill-before-account-call", claims=(KILL,))
    h.step(1, "send guid=g1 background=True", 0.0, 0.001)
    h.send("g1", at=0.0, answered_at=answered_at, gave_up_at=None if answered_at else 0.03, error="disconnected")
    if snapshot:
        h.snapshot({"g1": row("SENT")}, at=0.01, after_step=1)
    h.step(2, "kill", 0.02, 0.03)
    h.kill("a", at=0.025)
    if call_at is not None:
        h.account_call("g1", received_at=call_at)
    return h.build()


def test_a_kill_between_claim_and_call_lands():
    (landing,) = judge(kill_story())
    assert landing.status == LANDED, landing
    assert landing.events, "the events that show it"


def test_a_kill_after_the_account_system_received_the_call_missed_the_claim():
    (landing,) = judge(kill_story(call_at=0.015))
    assert landing.status == MISSED
    assert "received g1's call" in landing.why


def test_a_kill_after_the_channel_had_its_answer_missed_the_claim():
    (landing,) = judge(kill_story(answered_at=0.012))
    assert landing.status == MISSED
    assert "in flight" in landing.why


def test_a_claim_on_a_ledger_never_read_is_unknown_never_landed():
    (landing,) = judge(kill_story(snapshot=False))
    assert landing.status == UNKNOWN


def test_a_claim_on_a_step_that_never_ran_is_unknown():
    h = HistoryBuilder(claims=(C.KilledBeforeCall("g1", step=7),))
    h.send("g1", at=0.0)
    (landing,) = judge(h.build())
    assert (landing.status, landing.why) == (UNKNOWN, "step 7 never ran (the run stopped before it)")


def test_a_wait_that_gave_up_is_a_missed_claim_without_being_declared():
    h = HistoryBuilder()
    h.send("g1", at=0.0)
    h.waited("g1", at=5.0, reached=False)
    (landing,) = judge(h.build())
    assert (landing.kind, landing.status) == ("waited", MISSED)
    assert "gave up" in landing.why


def test_copies_sent_after_the_first_call_was_answered_did_not_race_it():
    h = HistoryBuilder(claims=(C.SentWhileInFlight("g1", (1,), after_call=False),))
    h.step(1, "race guid=g1 n=2", 0.0, 0.5)
    h.send("g1", at=0.01, answered_at=0.3)
    h.send("g1", at=0.4, answered_at=0.41, code="0000")
    h.account_call("g1", received_at=0.02, answered_at=0.29)
    (landing,) = judge(h.build())
    assert landing.status == MISSED and "1 of 2" in landing.why


def test_a_resolve_that_found_the_transfer_did_not_get_the_404_it_claims():
    h = HistoryBuilder(claims=(C.Queried("g1", found=False),))
    h.send("g1", at=0.0)
    h.account_call("g1", received_at=0.01)
    history = h.build()
    stats = next(e for e in history if e.f == "account-stats")
    stats.value["stats"]["queries"] = [{"guid": "g1", "at": 0.5, "found": True}]
    (landing,) = judge(history)
    assert landing.status == MISSED


def test_a_purge_that_met_only_young_rows_missed_its_claim():
    h = HistoryBuilder(claims=(C.BatchMet(2, ("u1",), ("UNKNOWN",)),))
    h.send("u1", at=0.0, answered_at=0.3, code="E901")
    h.snapshot({"u1": row("UNKNOWN", updated_at=0.3)}, at=0.31, after_step=1)
    h.step(2, "purge retention_s=5", 0.4, 0.6)
    h.batch("purge", 5.0, start=0.45, end=0.55)
    (landing,) = judge(h.build())
    assert landing.status == MISSED and "younger than 5.0" in landing.why


def test_a_claim_on_rows_of_a_status_the_services_ledger_never_shows_is_not_applicable():
    h = HistoryBuilder(claims=(C.BatchMet(2, ("u1",), ("UNKNOWN",)), C.BatchMet(2, ("f1",), ("FAILED",))))
    h.header.update(profile="idempotency-key", statuses=["DONE", "SENT", "UNKNOWN"])  # nothing maps to FAILED
    h.send("u1", at=0.0, answered_at=0.3, code="E901")
    h.snapshot({"u1": row("UNKNOWN", updated_at=0.0)}, at=0.31, after_step=1)
    h.step(2, "purge retention_s=0.1", 0.4, 0.6)
    h.batch("purge", 0.1, start=0.45, end=0.55)
    unknown, failed = judge(h.build())
    assert unknown.status == LANDED
    assert failed.status == NOT_APPLICABLE and "has no FAILED row" in failed.why


def test_a_scenario_whose_claim_missed_is_not_exercised_never_passed(tmp_path):
    history = kill_story(call_at=0.015)
    result = ChaosResult(ALL["kill-before-account-call"], history, [], tmp_path / "h.jsonl", [], judge(history))
    assert (result.ok, result.exercised, result.outcome) == (True, False, NOT_EXERCISED)
    with pytest.raises(NotExercised, match="^not exercised: scenario kill-before-account-call"):
        result.assert_holds()


def test_results_json_counts_a_scenario_not_exercised_apart_from_passed_and_failed():
    results = RunResults("relay.toml", "r")
    landing = [LandingRecord(claim="c", kind="waited", status=MISSED, why="gave up", events=[3])]
    results.add("s::t[a]", "call", "skipped", 1.0, "not exercised: scenario a ...", landing=landing)
    results.add("s::t[a]", "teardown", "passed", 0.0, None)
    data = results.record()
    assert data.summary.not_exercised == 1 and data.summary.passed == 0
    assert (data.ok, data.exercised) == (True, False)
    assert data.scenarios[0].outcome == NOT_EXERCISED
    assert data.scenarios[0].landing == landing
    assert data.to_builtins()["summary"][NOT_EXERCISED] == 1, "the file's key, as it always was"


def test_a_claim_naming_a_step_or_guid_the_scenario_lacks_is_refused_when_written():
    with pytest.raises(ValueError, match="step \\[5\\]"):
        Scenario("s", steps=(Send("g1"), Kill()), claims=(C.KilledBeforeCall("g1", step=5),))
    with pytest.raises(ValueError, match="GUID \\['g9'\\]"):
        Scenario("s", steps=(Send("g1"), Kill()), claims=(C.KilledBeforeCall("g9", step=2),))


def test_claims_travel_through_a_scenario_file(tmp_path):
    s = Scenario(
        "kill-late",
        steps=(AddToxic("account", "timeout", stream="upstream"), Send("g1", background=True), WaitRow("g1"), Kill()),
        claims=(C.KilledBeforeCall("g1", step=4), C.Queried("g1", found=False)),
    )
    path = tmp_path / "kill-late.yaml"
    path.write_text(scenario_file.dump(s))
    assert scenario_file.load(path).scenario.claims == s.claims


def test_a_scenario_file_with_an_unknown_claim_names_the_line_and_the_kinds(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("name: bad\nsteps:\n  - send: {guid: g1}\nclaims:\n  - {claim: landed_somehow}\n")
    with pytest.raises(
        scenario_file.ScenarioFileError,
        match="line 5: unknown claim 'landed_somehow'; the claims are killed_before_call",
    ):
        scenario_file.load(path)


NO_FAULT = {  # named scenarios with no fault to land: the contract's answers, and restarts of an idle relay
    "happy-path",
    "resend-after-done",
    "guid-reused",
    "malformed-requests",
    "restart-keeps-the-ledger",
    "second-relay-joins",
}


@pytest.mark.parametrize("name", sorted(set(ALL) - NO_FAULT))
def test_every_named_scenario_with_a_fault_claims_what_its_fault_must_meet(name):
    assert ALL[name].claims, (
        f"{name} claims nothing about what its fault meets; fix: declare its landing claims (Scenario.claims), "
        "or, if it injects no fault, add it to NO_FAULT here"
    )


def test_the_scenarios_without_a_fault_are_the_ones_listed():
    assert {n for n, s in ALL.items() if not s.claims} == NO_FAULT


def test_a_grade_with_a_scenario_not_exercised_is_flagged_for_review_never_silently_full_marks():
    result = score([Outcome("kill-before-account-call", "visible", NOT_EXERCISED)], rubrics.load())
    assert result.review == ["kill-before-account-call: not exercised (its fault met nothing)"]
    record = scored(result)
    (line,) = [f for f in facts(record) if f.startswith("Flagged for review")]
    assert "kill-before-account-call did not test anything" in line


def test_docs_rules_lists_every_scenarios_claims_as_the_code_declares_them():
    from relaychaos.scenarios import claims_table

    from .conftest import ROOT

    assert claims_table() in (ROOT / "docs" / "rules.md").read_text(), (
        "regenerate the landing-claims table in docs/rules.md: .venv/bin/python scripts/readme_tables.py --write"
    )


def test_a_fault_with_no_transfer_in_its_window_met_nothing_and_one_with_a_call_in_flight_did():
    from relaychaos.checkers.faults_met import faults_met

    h = HistoryBuilder()
    h.toxic("account", "timeout", at=0.0, attributes={"timeout": 0})
    h.remove_toxic("account", "timeout_downstream", at=0.1)
    h.send("g1", at=0.2, answered_at=0.3)
    h.kill("a", at=0.25)
    assert [(f.fault, f.met) for f in faults_met(h.build())] == [
        ("add-toxic timeout_downstream", False),
        ("kill a", True),
    ]


def test_the_coverage_grid_marks_a_kill_that_met_a_sent_row():
    from relaychaos.checkers.coverage import cells

    assert ("kill", "SENT") in cells(kill_story())


def test_results_json_lists_every_cell_with_the_scenarios_that_reached_it_and_none_not_exercised():
    results = RunResults("relay.toml", "r")
    results.add("s::t[a]", "call", "passed", 1.0, None, cells=[["kill", "SENT"]])
    results.add("s::t[b]", "call", "skipped", 1.0, "not exercised: ...", cells=[["kill", "DONE"]])
    for n in ("s::t[a]", "s::t[b]"):
        results.add(n, "teardown", "passed", 0.0, None)
    grid = results.record().coverage
    assert grid["kill"]["SENT"] == ["t[a]"] and grid["kill"]["DONE"] == [] and grid["purge running"]["FAILED"] == []


def test_the_timeline_opens_with_the_claims_that_missed():
    from relaychaos.reports import timeline

    page = timeline.render(kill_story(call_at=0.015))
    assert "Landing claims: not exercised" in page and "<b class=broken>MISSED</b>" in page
