"""The relaychaos GitHub Action (action.yml). Its steps, scripts/action/steps.sh, run as GitHub's runner runs them
(tests/gha.py stands in for the runner, actions/cache and actions/upload-artifact) on the bundled reference relay and
on a broken one, each with one named scenario (PYTEST_ADDOPTS, as a user may give it too): seconds, not the suite's
minute. And action.yml itself, which actionlint does not read: a composite action whose steps use every input it
declares and only those, whose outputs its steps write, and whose actions are each pinned to a major version."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from scripts.action import summary

from .conftest import ROOT
from .gha import Runner, Step, machine_env

ACTION = yaml.safe_load((ROOT / "action.yml").read_text())
STEPS_SCRIPT = ROOT / "scripts" / "action" / "steps.sh"
BROKEN = ROOT / "relay_under_test" / "mutants" / "write_after_call" / "relay.toml"  # happy-path: write-before-send
ONE_SCENARIO = "-k happy-path"


@dataclass
class ActionRun:
    """One use of the action: its steps by id, and what it asked actions/upload-artifact to upload."""

    workspace: Path
    steps: dict[str, Step]
    uploads: list[dict[str, str]] = field(default_factory=list)

    @property
    def run(self) -> Step:
        return self.steps["run"]


def use_action(action: Path, runner_temp: Path, workspace: Path, **inputs: str) -> ActionRun:
    """The action's steps, from its checkout `action`, on a runner whose RUNNER_TEMP is `runner_temp` (shared: its venv
    and its Toxiproxy folder, which actions/cache restores when the folder holds the server) in `workspace`, with
    `inputs`."""
    workspace.mkdir(exist_ok=True)
    uploads: list[dict[str, str]] = []

    def cache(given: dict[str, str]) -> dict[str, str]:
        return {"cache-hit": str((Path(given["path"]) / "toxiproxy-server").is_file()).lower()}

    def upload(given: dict[str, str]) -> dict[str, str]:
        uploads.append(given | {"found": str((workspace / given["path"]).exists())})
        return {}

    declared = {f"inputs.{name}": spec.get("default", "") for name, spec in ACTION["inputs"].items()}
    contexts = declared | {f"inputs.{k}": v for k, v in inputs.items()}
    contexts |= {"github.action_path": str(action), "runner.os": "Linux", "runner.arch": "X64"}
    env = machine_env(workspace, GITHUB_ACTION_PATH=str(action), PYTEST_ADDOPTS=ONE_SCENARIO)
    runner = Runner(workspace, runner_temp, env, contexts, {"actions/cache": cache, "actions/upload-artifact": upload})
    runner.run_job(ACTION["runs"]["steps"])
    return ActionRun(workspace, runner.steps, uploads)


@pytest.fixture(scope="module")
def green(action_checkout, runner_temp, tmp_path_factory) -> ActionRun:
    """The action with its defaults but one process (workers 0): the bundled reference, no cache yet."""
    return use_action(action_checkout, runner_temp, tmp_path_factory.mktemp("green"), workers="0")


@pytest.fixture(scope="module")
def red(green, action_checkout, runner_temp, tmp_path_factory) -> ActionRun:
    """The action used again in the same job (after `green`) on a relay that writes its ledger after the call."""
    workspace = tmp_path_factory.mktemp("red")
    return use_action(action_checkout, runner_temp, workspace, relay=str(BROKEN), workers="0", artifact="red")


def on_a_runner(test):
    """A test that runs the action's steps: it starts the stack, on the worker of the shared runner_temp."""
    return pytest.mark.xdist_group("github")(pytest.mark.stack(test))


def text(step: Step) -> str:
    return f"step {step.name}: exit {step.status}\n{step.output[-4000:]}\n{step.summary}"


@on_a_runner
def test_on_the_reference_the_action_exits_0_and_outputs_the_junit_results_and_run_folder(green):
    run = green.run
    assert run.status == 0, text(run)
    assert run.outputs["exit-code"] == "0" and run.outputs["run-folder"] == str(green.workspace / "relaychaos-run")
    assert Path(run.outputs["junit"]).name == "junit.xml" and Path(run.outputs["junit"]).is_file()
    assert Path(run.outputs["results"]).is_file()
    assert green.uploads == [
        {"name": "relaychaos-run", "path": "relaychaos-run", "if-no-files-found": "warn", "found": "True"}
    ]


@on_a_runner
def test_the_job_summary_says_the_outcome_and_each_rule_s_verdict(green):
    summary = green.run.summary
    assert "### relaychaos: relay `reference`: every check held and every scenario was exercised (exit 0)" in summary
    assert "1 passed, 0 failed, 0 errors" in summary and "| `one-debit` | held |  |" in summary, summary
    assert "Failing scenarios" not in summary and "the artifact `relaychaos-run`" in summary


@on_a_runner
def test_on_a_broken_relay_the_action_exits_1_names_the_broken_rule_and_still_uploads_the_run_folder(red):
    run = red.run
    assert run.status == 1 and run.outputs["exit-code"] == "1", text(run)
    assert "| `write-before-send` | **broken** | happy-path |" in run.summary, run.summary
    assert re.search(r"\| happy-path \| failed \| `write-before-send`( ×\d+)? \| \S+ \|", run.summary), run.summary
    assert red.uploads and red.uploads[0]["name"] == "red" and red.uploads[0]["found"] == "True"


@on_a_runner
def test_toxiproxy_is_got_on_a_cache_miss_and_relaychaos_installed_once_per_job(green, red):
    [got_green] = [s for s in green.steps.values() if s.name.startswith("get toxiproxy-server")]
    [got_red] = [s for s in red.steps.values() if s.name.startswith("get toxiproxy-server")]
    assert green.steps["toxiproxy-cache"].outputs == {"cache-hit": "false"} and got_green.status == 0, text(got_green)
    assert red.steps["toxiproxy-cache"].outputs == {"cache-hit": "true"} and got_red.status is None
    assert "relaychaos 0.1.0" in red.steps["install"].output and "installing" not in red.steps["install"].output


@on_a_runner
def test_a_bad_input_stops_the_run_with_exit_2_and_the_fix(green, action_checkout, runner_temp, tmp_path):
    used = use_action(action_checkout, runner_temp, tmp_path / "ws", sandbox="sometimes")
    assert used.run.status == 2, text(used.run)
    assert "relaychaos action: the input sandbox is 'sometimes'; fix: auto, strict or off" in used.run.output


def test_when_the_harness_could_not_run_the_summary_quotes_why(tmp_path):
    (tmp_path / "not-started.txt").write_text("relay 'x': serve exited 1 before answering /health; fix: ...\n")
    said = summary.markdown(tmp_path, 2, "relaychaos-run")
    assert said.startswith("### relaychaos: the harness could not run (exit 2)")
    assert "relay 'x': serve exited 1 before answering /health; fix: ..." in said
    assert "no results.json in" in summary.markdown(tmp_path / "nothing", 2, "")


def test_the_summary_lists_broken_rules_first_and_a_rule_not_checked_with_its_reason_in_one_cell():
    rules = {"one-debit": {"held": True}, "purge": {"held": None, "not_checked": "no `purge` | command\nhere"}}
    rules["done-replay"] = {"held": False, "broken_in": ["resend-after-done"]}
    assert summary.rule_rows(rules)[2:] == [
        "| `done-replay` | **broken** | resend-after-done |",
        "| `purge` | not checked: no `purge` \\| command here |  |",
        "| `one-debit` | held |  |",
    ]


# -- action.yml, read ------------------------------------------------------------------------------------------------
def used_expressions(node: object) -> list[str]:
    """Every ${{ ... }} expression in a parsed YAML value, at any depth."""
    if isinstance(node, dict):
        return [e for k, v in node.items() for e in used_expressions(k) + used_expressions(v)]
    if isinstance(node, list):
        return [e for v in node for e in used_expressions(v)]
    return re.findall(r"\$\{\{\s*(.*?)\s*\}\}", str(node))


def test_action_yml_is_a_composite_action_whose_steps_use_every_input_it_declares_and_no_other():
    assert ACTION["runs"]["using"] == "composite"
    used = {m for e in used_expressions(ACTION["runs"]["steps"]) for m in re.findall(r"inputs\.([\w-]+)", e)}
    declared = set(ACTION["inputs"])
    assert used == declared, f"used, not declared: {used - declared}; declared, not used: {declared - used}"
    assert all(spec.get("description") and "default" in spec for spec in ACTION["inputs"].values())


def test_every_output_of_the_action_is_written_by_its_steps_script():
    script = STEPS_SCRIPT.read_text()
    for name, spec in ACTION["outputs"].items():
        assert spec["value"] == f"${{{{ steps.run.outputs.{name} }}}}", name
        assert re.search(rf"output {re.escape(name)} ", script), f"scripts/action/steps.sh never writes {name}"


def test_every_run_step_of_the_action_is_a_phase_of_its_one_steps_script():
    runs = [s["run"] for s in ACTION["runs"]["steps"] if "run" in s]
    phases = [re.fullmatch(r'bash "\$GITHUB_ACTION_PATH/scripts/action/steps.sh" (\w+)', r) for r in runs]
    assert all(phases), runs
    assert [p[1] for p in phases if p] == ["install", "toxiproxy", "run"]


def test_every_action_the_action_uses_is_pinned_to_a_major_version():
    uses = [s["uses"] for s in ACTION["runs"]["steps"] if "uses" in s]
    assert uses and all(re.fullmatch(r"[\w-]+/[\w-]+@v\d+", u) for u in uses), uses
