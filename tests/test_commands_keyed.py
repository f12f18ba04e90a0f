"""Every command that starts a stack runs a keyed service as it runs a course relay.

run (the pytest plugin), replay, soak and incident verify put their stacks together from the run
definition (relaychaos.run.definition, relaychaos.run.services): the account system in the shape
the relay calls ([downstream]: the course contract or a PSP), PostgreSQL for a ledger kept there,
the sandbox at the run's level. recheck and timeline read what they wrote. grade scores a keyed
service in its own profile: what it cannot be judged by is "not checked", neither held nor lost.
payments_go is the bundled keyed service (Idempotency-Key, PostgreSQL, a PSP; no reprocess).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from relaychaos.records.grade import GradeRecord
from relaychaos.records.results import ResultsFile

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
    story = ROOT / "scenarios" / "regressions" / "reprocess-resent-timeouts.yaml"  # payments_go has no reprocess
    proc = relaychaos("replay", story, "--relay", PAYMENTS_GO, "--out", tmp_path / "r")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "runs reprocess, which relay 'payments-go' does not have" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.stack
def test_run_tests_a_keyed_service_through_the_pytest_plugin_and_says_what_it_could_not_judge(tmp_path: Path) -> None:
    proc = relaychaos(
        "run", "--relay", PAYMENTS_GO, "--out", tmp_path, "-n", "0",
        "--", "-k", "happy-path or reprocess-same-guid", "-m", "not stateful",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"relay 'payments-go' (idempotency-key profile); commands run in {PAYMENTS_GO.parent}" in proc.stdout
    results = ResultsFile.from_json((tmp_path / "results.json").read_text())
    assert results.relay_name == "payments-go" and results.summary.passed == 1 and results.summary.skipped == 1
    skipped = next(s for s in results.scenarios if s.outcome == "skipped")
    assert "reprocess-same-guid" in skipped.nodeid and "runs reprocess" in (skipped.message or "")
    assert results.rules["attempt-cap"].held is None and results.rules["attempt-cap"].not_checked
    assert results.rules["one-debit"].held is True
    assert (tmp_path / "report.html").stat().st_size > 0


@pytest.mark.stack
def test_grade_scores_a_keyed_service_in_its_own_profile_and_counts_what_it_cannot_be_judged_by_neither_way(
    tmp_path: Path,
) -> None:
    proc = relaychaos(
        "grade", PAYMENTS_GO.parent, "--out", tmp_path, "--workers", "1",
        "--scenarios", "happy-path,reprocess-same-guid,dropped-response-downstream",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (folder,) = (tmp_path / "submissions").iterdir()
    record = GradeRecord.from_json((folder / "grade.json").read_text())
    assert record.gradable and record.problems() == []
    items = {i.item: i for i in record.items}
    # attempt-cap: its one rule needs reprocess; reprocess-same-guid: its every scenario runs reprocess
    for unjudged in ("attempt-cap", "reprocess-same-guid"):
        assert "reprocess" in str(items[unjudged].not_checked), items[unjudged]
        assert not str(items[unjudged].not_checked).startswith("Skipped"), "the reason as a student reads it"
        assert (items[unjudged].points, items[unjudged].max_points) == (0.0, 0.0)
    assert record.max_score == 100 - 3 - 5, "the total is out of the items checked"
    assert items["unknown-never-resent"].max_points == 10 and items["unknown-never-resent"].held_in == 1
    assert record.score == sum(i.points for i in record.items) == record.max_score, "a correct service"
    outcomes = {s.name: s.outcome for s in record.scenarios}
    assert outcomes == {
        "happy-path": "passed",
        "dropped-response-downstream": "passed",
        "reprocess-same-guid": "skipped",
    }
    student = (folder / "report.html").read_text()
    assert "Not checked on this relay" in student and "not checked" in student
