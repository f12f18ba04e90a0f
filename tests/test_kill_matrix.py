"""The kill matrix: every broken relay is caught by the scenarios meant for it.

The reference passing every scenario is the suite itself (`scenarios/`, run by the
same test command). The broken relays, the scenarios meant for each and the rule
each must be named by are one table: relay_under_test/mutants/table.py. A broken
relay added to relay_under_test/mutants/ without a row there fails this test.
"""

import re

import pytest

from relaychaos.checkers import RULES
from relaychaos.relay_under_test.mutants.table import BY_NAME, MUTANTS, readme_table
from relaychaos.scenarios import ALL

from .conftest import OPAQUE_G1, ROOT

BROKEN_FOLDERS = {"base"} | {p.parent.name for p in (ROOT / "relay_under_test" / "mutants").glob("*/relay.toml")}


def _caught_rules(result) -> set:
    return {v.rule for v in result.verdicts}


def test_every_mapped_scenario_and_rule_exists():
    assert {s for m in MUTANTS for s in m.caught_by} <= set(ALL)
    assert {r for m in MUTANTS for r in m.rules} <= set(RULES)


@pytest.mark.parametrize("relay, scenario", [(m.name, s) for m in MUTANTS for s in m.caught_by])
def test_the_scenario_meant_for_the_broken_relay_catches_it_and_the_first_names_the_rule_it_breaks(
    run_chaos, relay: str, scenario: str
):
    mutant = BY_NAME[relay]
    result = run_chaos(ALL[scenario], manifest=mutant.manifest)
    assert not result.ok, f"scenario {scenario} did not catch relay {relay}"
    if scenario == mutant.caught_by[0]:
        assert mutant.rules[0] in _caught_rules(result), result.report()


def test_every_broken_relay_is_in_the_table():
    assert {m.name for m in MUTANTS} == BROKEN_FOLDERS, (
        "add each broken relay to relay_under_test/mutants/table.py, with the scenarios meant to catch it"
    )


def test_the_docs_show_the_table():
    assert readme_table() in (ROOT / "docs" / "relays.md").read_text(), (
        "regenerate the kill-matrix table in docs/relays.md: .venv/bin/python scripts/readme_tables.py --write"
    )


def test_a_verdict_reads_like_an_incident_report(run_chaos):
    result = run_chaos(ALL["dropped-response-to-channel"], manifest=BY_NAME["base"].manifest)
    text = result.report()
    first = text.split("\n\n")[1]
    assert re.match(OPAQUE_G1, first), first
    assert "the account system received this GUID more than once" in first
    lines = [line for line in first.splitlines() if line.strip().startswith("+")]
    assert any("channel sends 10 alice→bob" in line for line in lines)
    assert any("fault: timeout toxic on the hub-a proxy" in line for line in lines)
    assert sum("account system answers 0000 (applied: debited)" in line for line in lines) == 3
    times = [float(line.split("s", 1)[0].strip().lstrip("+")) for line in lines]
    assert times == sorted(times), "the timeline is in time order"


def test_checks_can_be_run_again_on_a_saved_history(run_chaos):
    from relaychaos.run.chaos import check_path

    result = run_chaos(ALL["purge-retention"], manifest=BY_NAME["purge_ignores_retention"].manifest)
    again = check_path(result.history_path)
    assert [v.to_dict() for v in again] == [v.to_dict() for v in result.verdicts] and again


def test_which_relay_claims_in_race_32_two_relays_is_the_harness_s_choice_not_a_race(run_chaos):
    """A claim atomic only within one process holds there on every run (race-pairs-two-relays forces
    the interleaving that breaks it), while a relay keeping its claims in memory breaks it every run (here, and
    in the matrix above: [memory_ledger-race-32-two-relays])."""
    scenario = ALL["race-32-two-relays"]
    assert [run_chaos(scenario, manifest=BY_NAME["process_lock"].manifest).ok for _ in range(2)] == [True, True]
    assert not run_chaos(scenario, manifest=BY_NAME["memory_ledger"].manifest).ok
