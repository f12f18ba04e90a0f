"""Shrinking within a budget: past it the failing story found so far is written as a scenario file and
reported as not fully shrunk, through Hypothesis's public API alone, and Hypothesis reports the failure
itself (never a Flaky error). The budget is one option with one definition, honoured by every command.
"""

import ast
import json
import os
import subprocess
import sys

import pytest
import yaml

from relaychaos import options
from relaychaos.engine.budget import BUDGETS, SHRINK_S, budget_settings

from .conftest import ROOT

BROKEN = ROOT / "relay_under_test" / "mutants" / "write_after_call" / "relay.toml"


def test_every_budget_shrinks_within_a_time_budget_and_stops_at_the_first_bug():
    assert set(SHRINK_S) == set(BUDGETS) and all(0 < s <= 60 for s in SHRINK_S.values())
    for name in BUDGETS:
        assert budget_settings(name).report_multiple_bugs is False, name


@pytest.mark.slow
def test_nothing_reaches_into_hypothesis_internals():
    """No patched constant, no private module: the budget is the machine's own logic."""
    sources = [*(ROOT / "harness").rglob("*.py"), *(ROOT / "scenarios").rglob("*.py")]
    for path in sources:
        tree = ast.parse(path.read_text())
        modules = {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)} | {
            a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names
        }
        assert not [m for m in modules if m.startswith("hypothesis") and (".internal" in m or "._" in m)], path
        assert "MAX_SHRINKING_SECONDS" not in path.read_text(), path


@pytest.mark.parametrize(
    "command",
    [["relaychaos.commands.cli", "run"], ["relaychaos.commands.cli", "grade"], ["pytest", "-p", "no:cacheprovider"]],
)
@pytest.mark.process
def test_each_option_is_offered_by_every_command_with_its_environment_and_ini_names(command):
    shown = subprocess.run(
        [sys.executable, "-m", *command, "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "400"},
    ).stdout
    for option in options.OPTIONS if command[0] == "pytest" else options.COMMAND_OPTIONS:
        flag = option.cli if command[0] != "pytest" else option.pytest[0]
        assert flag in shown and option.env in shown, (command, option.name)
        assert option.ini is None or option.ini in shown, (command, option.name)


@pytest.mark.process
def test_a_bad_value_in_the_environment_is_named_with_its_fix(tmp_path):
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider\n")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--pyargs", "relaychaos.scenarios", "--collect-only"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "RELAYCHAOS_SHRINK_S": "soon"},
    )
    assert done.returncode == 4 and "RELAYCHAOS_SHRINK_S='soon'" in done.stderr and "fix:" in done.stderr


def hunt(tmp_path, shrink_s: str):
    """The machine alone against the broken relay, at the ci budget (derandomized, no example database)."""
    run, found = tmp_path / "run", tmp_path / "found"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "relaychaos.commands.cli",
            "run",
            "-n",
            "0",
            "--relay",
            str(BROKEN),
            "--out",
            str(run),
            "--shrink-s",
            shrink_s,
            "--",
            "-k",
            "stateful",
            "--relaychaos-budget",
            "ci",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "RELAYCHAOS_FOUND_DIR": str(found)},
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    (entry,) = json.loads((run / "results.json").read_text())["scenarios"]
    return entry, found / "found-write_after_call.yaml"


@pytest.mark.stack
def test_past_the_budget_the_story_found_so_far_is_written_and_said_not_fully_shrunk(tmp_path):
    entry, found = hunt(tmp_path, "0")
    assert "Flaky" not in entry["message"] and "AssertionError" in entry["message"], entry["message"][-2000:]
    assert entry["stateful"]["shrunk"] is False and entry["stateful"]["cut_candidates"] >= 1, entry["stateful"]
    assert "not fully shrunk: shrinking stopped at its budget of 0 s" in entry["message"]
    assert (
        found.read_text().startswith("# Found by relaychaos' stateful machine;")
        and "not fully shrunk" in found.read_text().splitlines()[0]
    )
    replayed = subprocess.run(
        [
            sys.executable,
            "-m",
            "relaychaos.commands.cli",
            "replay",
            str(found),
            "--relay",
            str(BROKEN),
            "--out",
            str(tmp_path / "replay"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert replayed.returncode == 1, replayed.stdout + replayed.stderr  # the written story fails again


@pytest.mark.stack
def test_within_a_generous_budget_the_story_is_shrunk_to_its_end(tmp_path):
    entry, found = hunt(tmp_path, "60")
    assert entry["stateful"]["shrunk"] is True and entry["stateful"]["cut_candidates"] == 0, entry["stateful"]
    assert "not fully shrunk: shrinking stopped at its budget of 60 s" not in entry["message"]
    assert "after shrinking" in found.read_text().splitlines()[0]
    # A heal with nothing to heal does nothing; Hypothesis keeps one when deleting it happened not to reproduce
    # the race behind the failure, so the story's size is counted in the steps that act.
    acting = [s for s in yaml.safe_load(found.read_text())["steps"] if s != "heal"]
    assert len(acting) <= 3, found.read_text()
