"""Shared pieces of the project's own tests: the bundled relays and small manifests made on the spot."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest

pytest_plugins = ["tests.tiers"]

ROOT = Path(__file__).resolve().parent.parent
BASE = ROOT / "relay_under_test" / "base" / "relay.toml"
# The first line of a report on g1 breaking one-account-call: GUIDs are opaque (engine/runner.py), the label beside
OPAQUE_G1 = r"\[one-account-call\] GUID [0-9a-f]{12}-\S+ \(scenario label g1\)"
REFERENCE = ROOT / "relay_under_test" / "reference" / "relay.toml"
TEST_RELAYS = ROOT / "tests" / "relays"
COMMANDS = ("serve", "resolve", "reprocess", "purge")


def derived_relay(folder: Path, module: str, name: str | None = None, **commands: list[str]) -> Path:
    """A self-contained relay folder, as a sandbox wants one: `folder` holds the bundled Python relays
    (relay_under_test/ without the Go and Java relays) and a relay.toml running `python run.py MODULE COMMAND`
    (or the argv given for a command). MODULE is a bundled one ("reference", "base", "mutants no_e904") or a
    module of tests/relays/ (which imports `.reference` relatively), copied in."""
    shutil.copytree(ROOT / "relay_under_test", folder, ignore=shutil.ignore_patterns("go", "java", "__pycache__"))
    if (TEST_RELAYS / f"{module}.py").exists():
        shutil.copy(TEST_RELAYS / f"{module}.py", folder)
    argv = {c: ["python", "run.py", *module.split(), c] for c in COMMANDS} | commands
    body = "\n".join(f"{k} = {json.dumps(v)}" for k, v in argv.items())
    (folder / "relay.toml").write_text(f'name = "{name or module.split()[-1]}"\n[commands]\n{body}\n')
    return folder / "relay.toml"


@pytest.fixture
def write_manifest(tmp_path: Path):
    """write_manifest(serve=[...], ready_timeout_s=..., **other commands) -> path of a relay.toml."""

    def write(serve: list[str], *, ready_timeout_s: float = 10, name: str = "test-relay", **commands) -> Path:
        folder = tmp_path / name
        folder.mkdir(exist_ok=True)
        cmds = {"serve": serve, "resolve": ["true"], "reprocess": ["true"], "purge": ["true"], **commands}
        body = "\n".join(f"{k} = {json.dumps(list(v))}" for k, v in cmds.items())  # JSON arrays are TOML
        (folder / "relay.toml").write_text(
            textwrap.dedent(f'name = "{name}"\n[commands]\n{body}\n[limits]\nready_timeout_s = {ready_timeout_s}\n')
        )
        return folder / "relay.toml"

    return write


@pytest.fixture
def slot(tmp_path):
    """A sandbox of its own (a slot beside the worker's), and a stack-like set of folders in it:
    (sandbox, the reference's working copy, a ledger folder, a /tmp)."""
    from relaychaos.sandbox.policy import Sandbox
    from relaychaos.stack.manifest import load

    sandbox = Sandbox.create("auto")
    copy = sandbox.working_copy(load(REFERENCE))
    ledger, tmp = sandbox.ledger_dir(tmp_path), sandbox.tmp_dir()
    yield sandbox, copy, ledger, tmp
    sandbox.close()


@pytest.fixture(scope="session")
def runner_temp(tmp_path_factory) -> Path:
    """RUNNER_TEMP of the GitHub runner stand-in (tests/gha.py), shared by tests/test_action.py and tests/test_ci_doc.py
    (one xdist group, "github"): the Action installs relaychaos into a venv there once (scripts/action/steps.sh keeps
    it for a second use), and the docs' plain job runs in that venv as the Python actions/setup-python gives."""
    return tmp_path_factory.mktemp("runner-temp")


@pytest.fixture(scope="session")
def action_checkout(tmp_path_factory) -> Path:
    """The Action's own checkout, as GitHub fetches it for a workflow (github.action_path): a copy of this checkout's
    files, so that pip installing from it writes nothing into the checkout and finds no build/ left there."""
    from .test_wheel import copy_of_the_checkout  # lazy: tests/test_wheel.py imports this module

    return copy_of_the_checkout(tmp_path_factory.mktemp("action") / "relaychaos")


# The modules holding the suite's longest tests (one to two minutes each: incident nights replayed a dozen times,
# the red team's batch graded, the machine's searches), in the order xdist should start them. Collected first, they
# start while the other workers take the hundreds of short tests, instead of last, when they alone would set the
# length of `make test` (at -n 4 the tail of three of them once took a minute and a half with the other workers idle).
LONGEST_FIRST = (
    "test_incident_replay.py",
    "test_red_team.py",
    "test_power.py",
    "test_incident_strangers.py",
    "test_grading.py",
    "test_wheel.py",
    "test_action.py",  # with test_ci_doc.py, one worker's (xdist group "github"): about 45 s in all
    "test_ci_doc.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: n for n, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: each module keeps its own order
