"""A bug a named scenario has shown is not hunted: in every entry point, when a named scenario fails the
state machine's random stories do not run, and the report says so; `--hunt` runs them anyway.

The broken relay here is write_after_call: `happy-path` shows its bug in about a second, and the
machine finds it too when it runs. Each test selects a few scenarios (`-k`) on two workers to stay short, and a
machine that hunts shrinks what it found for SHRINK_S (these tests are about whether it runs; tests/test_power.py
and tests/test_shrink_budget.py are about its shrinking).
"""

import json
import os
import shutil
import subprocess
import sys

import pytest

from relaychaos.plugin.machine_gate import WHY_NOT

from .conftest import ROOT

pytestmark = pytest.mark.stack
BROKEN = ROOT / "relay_under_test" / "mutants" / "write_after_call" / "relay.toml"
E903_WAITS = ROOT / "relay_under_test" / "mutants" / "e903_waits" / "relay.toml"
FAST = "happy-path or stateful"
SHRINK_S = "1"


def cli(*args, env=None, timeout=300):
    return subprocess.run(
        [sys.executable, "-m", "relaychaos.commands.cli", *map(str, args)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def machine_entry(run_dir):
    data = json.loads((run_dir / "results.json").read_text())
    return data["random_stories"], next(s for s in data["scenarios"] if "test_random_stories" in s["nodeid"])


def test_run_does_not_hunt_what_a_named_scenario_has_shown_and_says_so_everywhere(tmp_path):
    run = tmp_path / "run"
    proc = cli("run", "-n", "2", "--relay", BROKEN, "--out", run, "--", "-k", FAST)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    stories, entry = machine_entry(run)
    assert stories["ran"] is False and stories["why_not"].startswith(WHY_NOT + " (failed: happy-path)")
    assert entry["outcome"] == "skipped" and WHY_NOT in entry["message"] and entry["verdicts"] == []
    assert f"relaychaos: random stories not run: {WHY_NOT}" in proc.stdout
    assert WHY_NOT in (run / "report.html").read_text() and "--hunt" in (run / "report.html").read_text()


@pytest.mark.parametrize("how", [["--hunt"], {"RELAYCHAOS_HUNT": "1"}], ids=["flag", "environment"])
def test_run_with_hunt_runs_the_random_stories_anyway(tmp_path, how):
    run = tmp_path / "run"
    flags, env = (how, None) if isinstance(how, list) else ([], how)
    proc = cli(
        "run",
        "-n",
        "2",
        "--relay",
        BROKEN,
        "--out",
        run,
        "--shrink-s",
        SHRINK_S,
        *flags,
        "--",
        "-k",
        FAST,
        "--relaychaos-budget",
        "ci",
        env=env,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    stories, entry = machine_entry(run)
    assert stories["ran"] is True and stories["examples"] >= 1, stories
    assert entry["outcome"] == "failed" and {v["rule"] for v in entry["verdicts"]} >= {"write-before-send"}
    assert "random stories not run" not in proc.stdout


def plugin_run(project, *args, ini=""):
    """pytest in another project's folder holding its relay, the suite taken from the installed package, two
    xdist workers."""
    if not (project / "relay").exists():
        shutil.copytree(BROKEN.parent, project / "relay")
    (project / "pytest.ini").write_text(f"[pytest]\naddopts = -p no:cacheprovider\n{ini}")
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--pyargs",
            "relaychaos.scenarios",
            "--relay",
            "relay/relay.toml",
            "-n",
            "2",
            "-rs",
            *args,
        ],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_plugin_skips_the_machine_after_a_named_failure_and_the_ini_value_hunts(tmp_path):
    skipped = plugin_run(tmp_path, "-k", FAST)
    assert skipped.returncode == 1, skipped.stdout + skipped.stderr
    assert "1 failed, 1 skipped" in skipped.stdout and f"relaychaos: {WHY_NOT} (failed: happy-path)" in skipped.stdout
    hunted = plugin_run(
        tmp_path,
        "-k",
        FAST,
        "--relaychaos-budget",
        "ci",
        "--relaychaos-shrink-s",
        SHRINK_S,
        ini="relaychaos_hunt = true\n",
    )
    assert "2 failed" in hunted.stdout and WHY_NOT not in hunted.stdout, hunted.stdout[-3000:]


def test_the_machine_is_collected_last_whatever_the_order_asked():
    listed = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            "scenarios/test_stateful.py",
            "scenarios/test_suite.py",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    ids = [line for line in listed.stdout.splitlines() if "::" in line]
    assert len(ids) > 30 and ids[-1].endswith("test_random_stories_keep_every_rule"), ids[-3:]


def test_a_named_failure_after_the_machine_started_stops_it_the_same_way_every_time(tmp_path):
    """Two tests on two workers start together; resend-while-in-flight fails after a few seconds, while the
    machine is running on the other worker: it is skipped (and counts nothing) in every run."""
    outcomes = []
    for n in range(2):
        run = tmp_path / f"run{n}"
        proc = cli(
            "run", "-n", "2", "--relay", E903_WAITS, "--out", run, "--", "-k", "resend-while-in-flight or stateful"
        )
        assert proc.returncode == 1, proc.stdout + proc.stderr
        stories, entry = machine_entry(run)
        outcomes.append((entry["outcome"], stories["ran"], entry["verdicts"]))
    assert outcomes == [("skipped", False, [])] * 2, outcomes


def test_grade_with_hunt_runs_and_counts_the_machine(tmp_path):
    folder = ROOT / "relay_under_test" / "mutants" / "write_after_call"
    done = cli(
        "grade",
        folder,
        "--out",
        tmp_path / "book",
        "--scenarios",
        "happy-path,stateful",
        "--seed",
        "1",
        "--hunt",
        "--shrink-s",
        SHRINK_S,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (record,) = [json.loads(p.read_text()) for p in (tmp_path / "book").glob("submissions/*/grade.json")]
    assert record["stateful"]["ran"] is True and record["stateful"]["why_not"] is None, record["stateful"]
    machine = next(s for s in record["scenarios"] if s["name"] == "stateful")
    assert machine["outcome"] == "failed" and machine["verdicts"], machine
