"""A stand-in for a GitHub Actions runner, for the tests of action.yml and docs/ci.md: it runs a job's (or a composite
action's) `run:` steps as the runner does, with what GitHub provides, and stands in for each `uses:` step.

What GitHub provides is given here: the contexts the steps use (`runner.temp`, `github.workspace`, `inputs.*`,
`steps.<id>.outputs.*`, `env.*`), the file commands (GITHUB_OUTPUT, GITHUB_ENV, GITHUB_PATH, GITHUB_STEP_SUMMARY),
bash as the runner calls it, and `if:` with the few expressions the project's workflows use. A `uses:` step is run by
the handler the test gives for its action (a function of its `with:` returning its outputs); an action, a context or
an expression this runner does not know fails the test, naming it, rather than being skipped.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
COMPARE = re.compile(r"^(.+?)\s*(==|!=)\s*'([^']*)'$")
STATUS = {"always()": True, "!cancelled()": True, "cancelled()": False}
Uses = Callable[[dict[str, str]], dict[str, str]]


class UnknownToRunner(AssertionError):
    """The workflow uses something this runner does not stand in for: teach tests/gha.py, or change the workflow."""


@dataclass
class Step:
    """One step as it ran: its id, name, exit status (None: skipped by its `if:`), outputs and what it printed."""

    id: str
    name: str
    status: int | None
    outputs: dict[str, str] = field(default_factory=dict)
    output: str = ""
    summary: str = ""  # what it wrote to GITHUB_STEP_SUMMARY


@dataclass
class Runner:
    """One job's runner: `workspace` (the working directory and github.workspace), `temp` (runner.temp), the
    machine's environment `env`, the contexts given (e.g. {"inputs.relay": ""}), and a handler per action used."""

    workspace: Path
    temp: Path
    env: dict[str, str]
    contexts: dict[str, str] = field(default_factory=dict)
    uses: dict[str, Uses] = field(default_factory=dict)
    steps: dict[str, Step] = field(default_factory=dict)
    failed: bool = False

    def evaluate(self, expr: str) -> str:
        """The value of one expression, as a string (`true`/`false` for a condition)."""
        expr = expr.strip()
        if expr in STATUS:
            return str(STATUS[expr]).lower()
        if expr in ("success()", "failure()"):
            return str(self.failed == (expr == "failure()")).lower()
        compared = COMPARE.match(expr)
        if compared:
            left, op, right = compared.groups()
            return str((self.evaluate(left) == right) == (op == "==")).lower()
        parts = expr.split(".")
        if parts[0] == "steps" and len(parts) == 4 and parts[2] == "outputs":
            step = self.steps.get(parts[1])
            return step.outputs.get(parts[3], "") if step else ""
        if parts[0] == "env" and len(parts) == 2:
            return self.env.get(parts[1], "")
        if expr in self.contexts:
            return self.contexts[expr]
        raise UnknownToRunner(f"tests/gha.py cannot evaluate ${{{{ {expr} }}}}; add it to the runner's contexts")

    def expand(self, text: str) -> str:
        return EXPR.sub(lambda m: self.evaluate(m[1]), text)

    def runs(self, condition: str | bool | None) -> bool:
        """Whether a step with this `if:` runs (no `if:` means success())."""
        if condition is None:
            return not self.failed
        text = str(condition).strip()
        text = EXPR.sub(lambda m: m[1], text) if text.startswith("${{") else text
        said = self.evaluate(text)
        if said not in ("true", "false"):
            raise UnknownToRunner(f"`if: {condition}` is {said!r} here, not a condition")
        return said == "true"

    def run_job(self, steps: list[dict], env: dict[str, str] | None = None) -> list[Step]:
        """Run the steps in order, as the runner does: a failing step skips those after it that lack a status
        function in their `if:`. `env` is the job's (and workflow's) env, expanded."""
        self.env = {**self.env, **{k: self.expand(str(v)) for k, v in (env or {}).items()}}
        done = []
        for number, spec in enumerate(steps):
            step_id = spec.get("id", f"step{number}")
            name = spec.get("name") or spec.get("uses") or str(spec.get("run", "")).split("\n")[0]
            if not self.runs(spec.get("if")):
                self.steps[step_id] = Step(step_id, name, None)
            elif "uses" in spec:
                self.steps[step_id] = self._use(step_id, name, spec)
            else:
                self.steps[step_id] = self._run(step_id, name, spec)
            self.failed = self.failed or bool(self.steps[step_id].status)
            done.append(self.steps[step_id])
        return done

    def _use(self, step_id: str, name: str, spec: dict) -> Step:
        action = spec["uses"].split("@")[0]
        if action not in self.uses:
            raise UnknownToRunner(f"step {name!r} uses {spec['uses']}, which this test gives no stand-in for")
        outputs = self.uses[action]({k: self.expand(str(v)) for k, v in (spec.get("with") or {}).items()})
        return Step(step_id, name, 0, outputs)

    def _run(self, step_id: str, name: str, spec: dict) -> Step:
        names = ("GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_PATH", "GITHUB_STEP_SUMMARY")
        files = {k: self.temp / f"{step_id}.{k.lower()}" for k in names}
        for path in files.values():
            path.write_text("")
        script = self.temp / f"{step_id}.sh"
        script.write_text(self.expand(str(spec["run"])))
        step_env = {k: self.expand(str(v)) for k, v in (spec.get("env") or {}).items()}
        env = {**self.env, **step_env, **{k: str(v) for k, v in files.items()}}
        env |= {"RUNNER_TEMP": str(self.temp), "GITHUB_WORKSPACE": str(self.workspace), "CI": "true"}
        env |= {"GITHUB_ACTIONS": "true"}
        shell = spec.get("shell", "bash")
        if shell != "bash":
            raise UnknownToRunner(f"step {name!r} runs in {shell}; this runner has bash only")
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
            cwd=self.workspace / spec.get("working-directory", "."),
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        self.env.update(file_command(files["GITHUB_ENV"]))
        added = [line for line in files["GITHUB_PATH"].read_text().splitlines() if line]
        if added:
            self.env["PATH"] = os.pathsep.join([*reversed(added), self.env["PATH"]])
        outputs, summary = file_command(files["GITHUB_OUTPUT"]), files["GITHUB_STEP_SUMMARY"].read_text()
        return Step(step_id, name, done.returncode, outputs, done.stdout + done.stderr, summary)


def file_command(path: Path) -> dict[str, str]:
    """The name=value pairs of a GITHUB_OUTPUT or GITHUB_ENV file, heredoc values (name<<DELIMITER) included."""
    values, lines = {}, iter(path.read_text().splitlines())
    for line in lines:
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, _, end = line.partition("<<")
            body = []
            for more in lines:
                if more == end:
                    break
                body.append(more)
            values[name] = "\n".join(body)
        elif "=" in line:
            name, _, value = line.partition("=")
            values[name] = value
    return values


def machine_env(home: Path, **more: str) -> dict[str, str]:
    """The runner's environment: this machine's, without a toxiproxy-server on PATH (a hosted runner has none), without
    the harness's and pytest's own variables or a PYTHONPATH, and with XDG_DATA_HOME in `home` (where `relaychaos setup
    toxiproxy` puts the server by default), plus `more`."""
    path = [d for d in os.environ["PATH"].split(os.pathsep) if d and not (Path(d) / "toxiproxy-server").exists()]
    mine = ("RELAYCHAOS_", "TOXIPROXY_", "PYTEST_", "PYTHONPATH", "VIRTUAL_ENV")
    env = {k: v for k, v in os.environ.items() if not k.startswith(mine)}
    return env | {"PATH": os.pathsep.join(path), "XDG_DATA_HOME": str(home / "data"), **more}


def workflow_on(doc: dict) -> object:
    """A workflow's `on:` (YAML 1.1, as PyYAML reads it, takes the bare key `on` for true)."""
    return doc.get("on", doc.get(True))
