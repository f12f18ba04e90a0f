"""docs/ci.md runs as written. Each ```yaml block of the page is a whole workflow (read by scripts/doc_workflows.py, as
scripts/package_check.sh reads them for actionlint): actionlint passes on them, they ask for no more than `contents:
read` (and `checks: write` beside a JUnit reporter), they give the Action only the inputs it declares, and the plain
steps' job runs, command by command, against a bundled relay on a stand-in for GitHub's runner (tests/gha.py), with
only what GitHub provides given here: the runner's folders and files, the checkout, setup-python's Python (the
venv the Action's test installed relaychaos into, else a new one), a cache miss, and relaychaos from a copy of this
checkout where the page installs it from GitHub."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from relaychaos.stack import toxiproxy_server
from scripts.doc_workflows import blocks

from .conftest import ROOT, derived_relay
from .gha import Runner, machine_env, workflow_on

PAGE = ROOT / "docs" / "ci.md"
PACKAGE_CHECK = ROOT / "scripts" / "package_check.sh"
ACTION = yaml.safe_load((ROOT / "action.yml").read_text())
WORKFLOWS = [yaml.safe_load(text) for text in blocks(PAGE)]
REPORTERS = ("mikepenz/action-junit-report", "dorny/test-reporter")


def steps_of(workflow: dict) -> list[dict]:
    return [step for job in workflow["jobs"].values() for step in job.get("steps", [])]


def uses_the_action(step: dict) -> bool:
    return step.get("uses", "").split("@")[0].endswith("/relaychaos")


def plain() -> dict:
    """The workflow that runs relaychaos with plain steps."""
    [found] = [w for w in WORKFLOWS if any("relaychaos run" in str(s.get("run", "")) for s in steps_of(w))]
    return found


def test_each_yaml_block_of_the_page_is_a_whole_workflow_with_read_only_contents():
    assert len(WORKFLOWS) == 3
    for workflow in WORKFLOWS:
        assert workflow_on(workflow) and workflow["jobs"], workflow
        reporting = any(s.get("uses", "").split("@")[0] in REPORTERS for s in steps_of(workflow))
        wanted = {"contents": "read"} | ({"checks": "write"} if reporting else {})
        assert workflow["permissions"] == wanted, workflow["name"]


def test_the_page_gives_the_action_only_inputs_it_declares_and_reads_only_outputs_it_has():
    given = [set(s.get("with", {})) for w in WORKFLOWS for s in steps_of(w) if uses_the_action(s)]
    assert len(given) == 2 and all(g <= set(ACTION["inputs"]) for g in given), given
    read = set(re.findall(r"steps\.relaychaos\.outputs\.([\w-]+)", "\n".join(blocks(PAGE))))
    assert read and read <= set(ACTION["outputs"]), read


def test_every_action_the_page_uses_is_pinned_to_a_version():
    uses = [s["uses"] for w in WORKFLOWS for s in steps_of(w) if "uses" in s]
    assert all(re.fullmatch(r"[\w-]+/[\w-]+@v\d+(\.\d+\.\d+)?", u) for u in uses), uses


def test_the_nightly_workflow_is_scheduled_and_hunts_with_the_nightly_budget():
    [nightly] = [w for w in WORKFLOWS if "schedule" in workflow_on(w)]
    [step] = [s for s in steps_of(nightly) if uses_the_action(s)]
    assert step["with"]["hunt"] is True and step["with"]["budget"] == "nightly"


def test_the_page_names_the_toxiproxy_relaychaos_is_tested_with():
    assert plain()["env"]["TOXIPROXY_VERSION"] == toxiproxy_server.VERSION
    assert f"/releases/download/{toxiproxy_server.VERSION}/toxiproxy-server-linux-amd64" in PAGE.read_text()


def test_the_readme_links_the_page():
    assert "| [docs/ci.md](docs/ci.md) |" in (ROOT / "README.md").read_text()


def actionlint() -> Path:
    """tools/bin/actionlint, built with Go as scripts/package_check.sh builds it (its version) when it is missing."""
    path = ROOT / "tools" / "bin" / "actionlint"
    if not os.access(path, os.X_OK):
        if shutil.which("go") is None:
            pytest.skip("no tools/bin/actionlint and no Go to build it (`bash scripts/package_check.sh` builds it)")
        module = re.search(r"github.com/rhysd/actionlint/cmd/actionlint@v[\d.]+", PACKAGE_CHECK.read_text())
        assert module, "scripts/package_check.sh no longer names the actionlint it builds"
        env = {**os.environ, "GOBIN": str(path.parent), "GOFLAGS": "-mod=mod"}
        subprocess.run(["go", "install", module[0]], env=env, check=True, capture_output=True, timeout=600)
    return path


@pytest.mark.process
def test_the_page_s_workflows_pass_actionlint(tmp_path):
    written = subprocess.run(
        [sys.executable, ROOT / "scripts" / "doc_workflows.py", PAGE, tmp_path], capture_output=True, text=True
    )
    assert written.returncode == 0, written.stderr
    linted = subprocess.run([actionlint(), *written.stdout.split()], capture_output=True, text=True, cwd=tmp_path)
    assert linted.returncode == 0, linted.stdout + linted.stderr


def standing_in(runner: Runner, seen: dict[str, dict[str, str]]) -> None:
    """The actions the plain job uses, as GitHub gives them: the checkout is the workspace, setup-python puts the
    shared venv's Python first on PATH, setup-go the machine's Go, the cache misses, and the uploader and the JUnit
    reporter find what they are given."""
    venv = runner.temp / "relaychaos-venv"

    def setup_python(_: dict[str, str]) -> dict[str, str]:
        if not (venv / "bin" / "python").exists():
            subprocess.run([sys.executable, "-m", "venv", venv], check=True)
        runner.env["PATH"] = f"{venv / 'bin'}{os.pathsep}{runner.env['PATH']}"
        return {}

    def seen_as(name: str):
        def record(given: dict[str, str]) -> dict[str, str]:
            seen[name] = given
            return {}

        return record

    runner.uses = {
        "actions/checkout": lambda _: {},
        "actions/setup-python": setup_python,
        "actions/setup-go": lambda _: {},
        "actions/cache": lambda _: {"cache-hit": "false"},
        "actions/upload-artifact": seen_as("artifact"),
        "mikepenz/action-junit-report": seen_as("junit"),
    }


@pytest.mark.stack
@pytest.mark.xdist_group("github")
def test_the_plain_steps_run_as_written_against_a_bundled_relay(action_checkout, runner_temp, tmp_path):
    if shutil.which("go") is None:
        pytest.skip("no Go here: the page's job builds toxiproxy-server with it on a cache miss")
    workspace = derived_relay(tmp_path / "checkout", "reference").parent  # a team's repository: relay.toml at its root
    workflow, seen = plain(), {}
    runner = Runner(workspace, runner_temp, machine_env(tmp_path, PYTEST_ADDOPTS="-k happy-path"))
    runner.contexts = {"runner.os": "Linux", "runner.arch": "X64", "github.workspace": str(workspace)}
    standing_in(runner, seen)
    [job] = workflow["jobs"].values()
    env = workflow["env"] | {
        "RELAYCHAOS": str(action_checkout)
    }  # the page's git URL on GitHub: a copy of this checkout
    done = runner.run_job(job["steps"], env=env | job.get("env", {}))
    report = "\n".join(f"-- {s.name}: exit {s.status}\n{s.output[-3000:]}" for s in done)
    assert [s.status for s in done] == [0] * len(done), report
    named = {s.name: s for s in done}
    assert "the harness finds it there" in named["build toxiproxy-server (on a cache miss only)"].output, report
    assert "relaychaos: 1 passed, 0 failed, 0 errors" in named["relaychaos run"].output, report
    assert (workspace / seen["artifact"]["path"] / "report.html").is_file()
    assert (workspace / seen["junit"]["report_paths"]).is_file()
