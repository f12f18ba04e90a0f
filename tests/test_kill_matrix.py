"""The kill matrix: every broken relay is caught by the scenarios meant for it.

The reference passing every scenario is the suite itself (`scenarios/`, run by the
same test command). A broken relay added to relay_under_test/mutants/ without an
entry here is run against the whole suite, and fails this test unless some
scenario catches it.
"""
from pathlib import Path

import pytest

from relaychaos.scenarios import ALL

from .conftest import ROOT

MEANT_FOR = {
    "base": ["dropped-response-to-channel", "race-32-one-relay"],
    "check_then_insert": ["race-32-one-relay"],
    "write_after_call": ["happy-path", "kill-after-applied-before-done"],
    "memory_ledger": ["restart-keeps-the-ledger", "race-32-two-relays"],
    "timeout_as_failed": ["dropped-response-downstream", "latency-beyond-timeout"],
    "refused_as_unknown": ["proxy-down-refused"],
    "unknown_resent": ["dropped-response-downstream"],
    "fresh_done_response": ["resend-after-done"],
    "e903_waits": ["resend-while-in-flight"],
    "no_e904": ["guid-reused"],
    "reprocess_unknown": ["reprocess-only-failed"],
    "reprocess_new_guid": ["reprocess-same-guid"],
    "no_attempt_cap": ["reprocess-attempt-cap"],
    "resolve_ignores_min_age": ["min-age-trap"],
    "resolve_skips_orphans": ["kill-after-applied-before-done"],
    "query_failure_as_not_found": ["resolve-query-fails"],
    "purge_undecided": ["purge-keeps-undecided"],
    "purge_ignores_retention": ["purge-retention"],
}
BROKEN = {"base": ROOT / "relay_under_test" / "base"} | {
    p.parent.name: p.parent for p in sorted((ROOT / "relay_under_test" / "mutants").glob("*/relay.toml"))}


def test_every_mapped_scenario_exists():
    assert {s for names in MEANT_FOR.values() for s in names} <= set(ALL)


@pytest.mark.parametrize("relay, scenario", [(r, s) for r, names in MEANT_FOR.items() if r in BROKEN for s in names])
def test_the_scenario_meant_for_the_broken_relay_catches_it(run_chaos, relay: str, scenario: str):
    result = run_chaos(ALL[scenario], manifest=BROKEN[relay])
    assert not result.ok, f"scenario {scenario} did not catch relay {relay}"


def test_a_broken_relay_nobody_mapped_is_still_caught_by_the_suite(run_chaos):
    for relay in sorted(set(BROKEN) - set(MEANT_FOR)):
        caught = [name for name, scenario in ALL.items() if not run_chaos(scenario, manifest=BROKEN[relay]).ok]
        assert caught, (f"no scenario catches relay_under_test/mutants/{relay}: add a scenario for its bug, "
                        "and map it in MEANT_FOR")


def test_every_broken_relay_is_in_the_matrix():
    assert set(MEANT_FOR) == set(BROKEN), "map each broken relay to the scenarios meant to catch it"


def _caught_rules(result) -> set:
    return {v.rule for v in result.verdicts}


@pytest.mark.parametrize("relay, scenario, rule", [
    ("check_then_insert", "race-32-one-relay", "one-account-call"),
    ("write_after_call", "happy-path", "write-before-send"),
    ("memory_ledger", "restart-keeps-the-ledger", "one-account-call"),
    ("timeout_as_failed", "dropped-response-downstream", "answer-codes"),
    ("refused_as_unknown", "proxy-down-refused", "answer-codes"),
    ("unknown_resent", "dropped-response-downstream", "one-account-call"),
    ("fresh_done_response", "resend-after-done", "done-replay"),
    ("e903_waits", "resend-while-in-flight", "e903-at-once"),
    ("no_e904", "guid-reused", "answer-codes"),
    ("reprocess_unknown", "reprocess-only-failed", "one-account-call"),
    ("reprocess_new_guid", "reprocess-same-guid", "guid-preserved"),
    ("no_attempt_cap", "reprocess-attempt-cap", "attempt-cap"),
    ("resolve_ignores_min_age", "min-age-trap", "resolve-min-age"),
    ("resolve_skips_orphans", "kill-after-applied-before-done", "converged"),
    ("query_failure_as_not_found", "resolve-query-fails", "resolve-keeps-unanswered"),
    ("purge_undecided", "purge-keeps-undecided", "transitions"),
    ("purge_ignores_retention", "purge-retention", "purge-retention"),
])
def test_each_bug_is_named_by_the_rule_it_breaks(run_chaos, relay, scenario, rule):
    result = run_chaos(ALL[scenario], manifest=BROKEN[relay])
    assert rule in _caught_rules(result), result.report()


def test_a_verdict_reads_like_an_incident_report(run_chaos):
    result = run_chaos(ALL["dropped-response-to-channel"], manifest=BROKEN["base"])
    text = result.report()
    first = text.split("\n\n")[1]
    assert first.startswith("[one-account-call] GUID g1-") and "(scenario label g1)" in first
    assert "the account system received 3 calls for this GUID" in first
    lines = [line for line in first.splitlines() if line.strip().startswith("+")]
    assert any("channel sends 10 alice→bob" in line for line in lines)
    assert any("fault: timeout toxic on the hub-a proxy" in line for line in lines)
    assert sum("account system answers 0000 (applied: debited)" in line for line in lines) == 3
    times = [float(line.split("s", 1)[0].strip().lstrip("+")) for line in lines]
    assert times == sorted(times), "the timeline is in time order"


def test_checks_can_be_run_again_on_a_saved_history(run_chaos):
    from relaychaos.chaos import recheck

    result = run_chaos(ALL["purge-retention"], manifest=BROKEN["purge_ignores_retention"])
    again = recheck(result.history_path)
    assert [v.to_dict() for v in again] == [v.to_dict() for v in result.verdicts] and again
