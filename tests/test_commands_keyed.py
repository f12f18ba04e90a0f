"""Every command that starts a stack runs a keyed service as it runs a course relay.

replay, soak and incident verify put their stacks together from the run definition
(relaychaos.run.definition, relaychaos.run.services), as the pytest plugin does: the account
system in the shape the relay calls ([downstream]: the course contract or a PSP), PostgreSQL for a
ledger kept there, the sandbox at the run's level. recheck and timeline read what they wrote.
payments_go is the bundled keyed service (Idempotency-Key, PostgreSQL, a PSP).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import REFERENCE, ROOT

PAYMENTS_GO = ROOT / "relay_under_test" / "payments_go" / "relay.toml"
RELAYS = pytest.mark.parametrize("relay", [REFERENCE, PAYMENTS_GO], ids=["course", "keyed"])
REGRESSION = ROOT / "scenarios" / "regressions" / "memory-dedup-lost-on-restart.yaml"
BURST = ROOT / "examples" / "incidents" / "check-then-insert-burst"  # a night without batch commands


def relaychaos(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "relaychaos.commands.cli", *map(str, args)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.stack
@RELAYS
def test_replay_runs_a_scenario_file_and_recheck_and_timeline_read_its_history(relay: Path, tmp_path: Path) -> None:
    proc = relaychaos("replay", REGRESSION, "--relay", relay, "--out", tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"against relay '{'payments-go' if relay == PAYMENTS_GO else 'reference'}'" in proc.stdout
    assert "every rule held" in proc.stdout
    history = tmp_path / "history.jsonl"
    proc = relaychaos("recheck", history)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = relaychaos("timeline", history, "--out", tmp_path / "timeline.html")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "timeline.html").stat().st_size > 0


@pytest.mark.stack
@RELAYS
def test_soak_runs_traffic_under_the_nemesis_and_holds(relay: Path, tmp_path: Path) -> None:
    proc = relaychaos("soak", "--relay", relay, "--duration", "6s", "--rate", "30", "--seed", "1", "--out", tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["violations"] == 0 and summary["transfers_sent"] > 0
    assert summary["answers"]["0000"] > 0


@pytest.mark.stack
@RELAYS
def test_incident_verify_replays_an_imported_story_and_says_it_did_not_reproduce_on_a_correct_relay(
    relay: Path, tmp_path: Path
) -> None:
    imported = relaychaos("incident", "import", BURST, "--out", tmp_path / "night", "--no-shrink")
    assert imported.returncode == 0, imported.stdout + imported.stderr
    story = tmp_path / "night" / "story.yaml"
    proc = relaychaos("incident", "verify", story, "--relay", relay, "--out", tmp_path / "v")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "run 1 of 1" in proc.stdout and "NOT reproduced" in proc.stdout
    assert "every rule held" in proc.stdout


@pytest.mark.stack
def test_a_story_that_runs_a_batch_command_the_service_lacks_is_refused_before_anything_starts(
    tmp_path: Path,
) -> None:
    imported = relaychaos(
        "incident", "import", ROOT / "examples" / "incidents" / "oom-early-resolve", "--out", tmp_path, "--no-shrink"
    )
    assert imported.returncode == 0, imported.stdout + imported.stderr
    proc = relaychaos("replay", tmp_path / "story.yaml", "--relay", PAYMENTS_GO, "--out", tmp_path / "r")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "runs resolve, which relay 'payments-go' does not have" in proc.stderr
    assert "Traceback" not in proc.stderr
