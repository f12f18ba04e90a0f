"""Incident files replay with the verdict they document, on the relay they document it for."""

import re
import subprocess
import sys

import pytest

from relaychaos.engine import scenario_file
from relaychaos.scenarios import INCIDENT_FILES, REGRESSION_FILES

from .conftest import ROOT

pytestmark = pytest.mark.stack  # replays run the whole stack

FILES = REGRESSION_FILES + INCIDENT_FILES
CASES = [(path, relay, rules) for path in FILES for relay, rules in scenario_file.load(path).breaks.items()]
HOLDS = [(path, relay) for path in FILES for relay in scenario_file.load(path).holds_on]


def test_there_are_at_least_four_incident_stories_and_each_documents_a_verdict():
    assert len(FILES) >= 4
    assert all(scenario_file.load(p).breaks for p in FILES)


@pytest.mark.parametrize("path, relay, rules", CASES, ids=[f"{p.stem}-on-{r.split('/')[-2]}" for p, r, _ in CASES])
def test_the_incident_breaks_the_rules_it_documents(run_chaos, path, relay, rules):
    loaded = scenario_file.load(path)
    result = run_chaos(loaded.scenario, manifest=loaded.relay_path(relay))
    assert set(rules) <= {v.rule for v in result.verdicts}, result.report()


@pytest.mark.parametrize("path, relay", HOLDS, ids=[f"{p.stem}-on-{r.split('/')[-2]}" for p, r in HOLDS])
def test_the_incident_holds_on_the_relays_it_says_it_holds_on(run_chaos, path, relay):
    loaded = scenario_file.load(path)
    run_chaos(loaded.scenario, manifest=loaded.relay_path(relay)).assert_holds()


def replay(*args):
    return subprocess.run(
        [sys.executable, "-m", "relaychaos.commands.cli", "replay", *map(str, args)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_relaychaos_replay_prints_the_verdict_and_the_timeline_and_exits_1(tmp_path):
    incident = ROOT / "scenarios" / "regressions" / "memory-dedup-lost-on-restart.yaml"
    proc = replay(incident, "--relay", ROOT / "relay_under_test" / "mutants" / "memory_ledger", "--out", tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert re.search(r"\[one-account-call\] GUID [0-9a-f]{12}-\S+ \(scenario label d1\)", proc.stdout), proc.stdout
    assert "relay a killed with SIGKILL" in proc.stdout and "timeline" in proc.stdout
    assert (tmp_path / "history.jsonl").exists()


def test_relaychaos_replay_on_the_reference_exits_0(tmp_path):
    proc = replay(ROOT / "scenarios" / "regressions" / "memory-dedup-lost-on-restart.yaml", "--out", tmp_path)
    assert proc.returncode == 0 and "every rule held" in proc.stdout


def test_a_bad_scenario_file_exits_2_before_anything_starts(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nsteps:\n  - send: {guid: g1}\n  - release: {guids: [nope]}\n")
    proc = replay(bad, "--out", tmp_path / "out")
    assert proc.returncode == 2
    assert f"{bad}, line 4: GUID 'nope' is referenced before" in proc.stderr
    assert not (tmp_path / "out").exists(), "nothing started"
