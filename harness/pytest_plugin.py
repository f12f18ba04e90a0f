"""The pytest plugin: options, fixtures and report hooks. The engine is imported lazily.

    pytest scenarios --relay path/to/relay.toml     (or ini `relaychaos_relay`, or RELAYCHAOS_RELAY)

Fixtures: `relay_manifest` (the relay under test), `toxiproxy` and
`account_system` (one per xdist worker), `stack` (one per test: its own
proxies, ledger and fixture state), `make_stack` (for another relay),
`run_chaos` (run and check a scenario) and `relaychaos_budget` (the state
machine's settings); relaychaos.machine_gate adds `relaychaos_gate` (the machine
does not hunt what a named scenario has shown) and `relaychaos_shrink_s`. The
plugin only adds: no Hypothesis profile is loaded, so a project's own tests keep
their settings.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest_plugins = ["relaychaos.machine_gate"]
_STACKS = pytest.StashKey[list]()
BUDGETS = ("quick", "nightly", "ci", "grade")  # relaychaos.engine.budget.BUDGETS, named here so options load nothing
SANDBOX_MODES = ("auto", "strict", "off")  # relaychaos.sandbox.policy.MODES


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("relaychaos", "relaychaos: chaos testing of a payment relay")
    group.addoption("--relay", dest="relaychaos_relay", default=None, metavar="RELAY_TOML",
                    help="the relay.toml of the relay under test (default: the bundled reference relay)")
    group.addoption("--relaychaos-results", dest="relaychaos_results", default=None, metavar="PATH",
                    help="write the run's results JSON (outcome and verdicts per scenario) to PATH")
    group.addoption("--relaychaos-budget", dest="relaychaos_budget", default=None, choices=BUDGETS,
                    help="how hard the stateful machine searches: quick (8 examples), nightly (300), ci (12, "
                         "derandomized), grade (12, from --relaychaos-seed); each shrinks a failure for a time "
                         "budget (--relaychaos-shrink-s); default: ci when CI is set, else quick")
    group.addoption("--relaychaos-seed", dest="relaychaos_seed", default=None, type=int, metavar="N",
                    help="draw the stateful machine's stories from seed N (the same stories on every run)")
    group.addoption("--relaychaos-scenarios", dest="relaychaos_scenarios", action="append", default=[],
                    metavar="SET=FOLDER", help="also run every scenario file in FOLDER, as scenario set SET "
                                               "(e.g. hidden=grading/hidden; repeatable)")
    group.addoption("--sandbox", dest="relaychaos_sandbox", default=None, choices=SANDBOX_MODES,
                    help="how relay commands are contained: auto (all this machine offers, saying what it "
                         "could not; the default), strict (refuse to run unless every layer can be had), off (a "
                         "relay you trust)")
    group.addoption("--sandbox-limit", dest="relaychaos_sandbox_limit", default=None, metavar="NAME=N,...",
                    help="change sandbox limits, e.g. memory_mib=2048,tasks=1024 (names: memory_mib, tasks, "
                         "cpu_shares, disk_mib, log_mib, data_mib, nproc, nofile, fsize_mib, cpu_serve_s, cpu_batch_s)")
    parser.addini("relaychaos_relay", "the relay.toml of the relay under test", default=None)
    parser.addini("relaychaos_sandbox", "the sandbox mode: auto, strict or off", default=None)
    parser.addini("relaychaos_budget", "the stateful machine's budget: quick, nightly or ci", default=None)
    from relaychaos import machine_options

    machine_options.add_to_pytest(group, parser)  # --hunt, --relaychaos-shrink-s


def relay_path(config: pytest.Config) -> Path:
    """--relay, else the ini value, else RELAYCHAOS_RELAY, else the bundled reference relay."""
    chosen = (config.getoption("relaychaos_relay") or config.getini("relaychaos_relay")
              or os.environ.get("RELAYCHAOS_RELAY"))
    if chosen:
        return Path(chosen)
    from relaychaos import paths

    return paths.reference_relay()


def budget_name(config: pytest.Config) -> str:
    """--relaychaos-budget, else the ini value, else RELAYCHAOS_BUDGET, else ci under CI, else quick."""
    from relaychaos.engine.budget import default_budget

    chosen = (config.getoption("relaychaos_budget", None) or config.getini("relaychaos_budget")
              or os.environ.get("RELAYCHAOS_BUDGET") or default_budget())
    if chosen not in BUDGETS:
        raise pytest.UsageError(f"relaychaos budget {chosen!r} (from the ini file or RELAYCHAOS_BUDGET) is not one "
                                f"of {', '.join(BUDGETS)}; fix: set it to one of them")
    return chosen


def sandbox_choice(config: pytest.Config) -> tuple[str, str | None]:
    """(mode, limit overrides): --sandbox, else the ini value, else RELAYCHAOS_SANDBOX, else auto."""
    mode = (config.getoption("relaychaos_sandbox", None) or config.getini("relaychaos_sandbox")
            or os.environ.get("RELAYCHAOS_SANDBOX") or "auto")
    if mode not in SANDBOX_MODES:
        raise pytest.UsageError(f"relaychaos sandbox {mode!r} (from the ini file or RELAYCHAOS_SANDBOX) is not one "
                                f"of {', '.join(SANDBOX_MODES)}; fix: set it to one of them")
    return mode, config.getoption("relaychaos_sandbox_limit", None) or os.environ.get("RELAYCHAOS_SANDBOX_LIMIT")


FAMILIES = {"basic": "the contract's answer table with no fault", "fault": "network faults between the parts",
            "race": "concurrent duplicates", "crash": "relays killed and restarted",
            "batch": "resolve, reprocess and purge", "regression": "scenario files in scenarios/regressions",
            "stateful": "the Hypothesis state machine"}


# A test using any of these fixtures needs the real stack; it gets the `stack` marker by itself,
# so that `pytest -m "not stack"` is the fast subset.
STACK_FIXTURES = frozenset({"toxiproxy", "account_system", "make_stack", "stack", "run_chaos", "relaychaos_sandbox"})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    unused = [i for i in items if "relaychaos_extra_scenario" in getattr(i, "fixturenames", ())] \
        if not config.getoption("relaychaos_scenarios", None) else []  # nothing to run is not a skip
    if unused:
        config.hook.pytest_deselected(items=unused)
        items[:] = [i for i in items if i not in unused]
    for item in items:
        if any(_ours(item, name) for name in STACK_FIXTURES & set(getattr(item, "fixturenames", ()))):
            item.add_marker(pytest.mark.stack)


def _ours(item: pytest.Item, fixture: str) -> bool:
    """Whether the item's fixture of this name is relaychaos' (a project's own `stack` fixture is not)."""
    info = getattr(item, "_fixtureinfo", None)
    defs = info.name2fixturedefs.get(fixture, ()) if info is not None else ()
    return any(getattr(d.func, "__module__", None) == __name__ for d in defs[-1:])


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "stack: needs the real stack (Toxiproxy, the account system, a relay)")
    for family, what in FAMILIES.items():
        config.addinivalue_line("markers", f"{family}: relaychaos scenarios: {what}")
    path = config.getoption("relaychaos_results", None)
    if path and not hasattr(config, "workerinput"):  # the xdist controller (or a plain run) writes it
        from relaychaos.errors import SandboxError
        from relaychaos.sandbox.levels import probe

        try:
            level = probe(*sandbox_choice(config))
        except SandboxError as e:
            raise pytest.UsageError(str(e)) from None
        config.pluginmanager.register(_ResultsRecorder(relay_path(config), Path(path), level), "relaychaos-results")


class _ResultsRecorder:
    """Collects every phase report (xdist sends workers' reports here) into the results JSON."""

    def __init__(self, relay: Path, out: Path, sandbox: dict):
        from relaychaos.reports.results import RunResults

        self.results, self.out = RunResults(str(relay), manifest_name(relay), sandbox=sandbox), out

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        import json

        props = [(k, json.loads(raw)) for k, raw in report.user_properties if k.startswith("relaychaos_")]
        verdicts = [v for k, value in props if k == "relaychaos_verdicts" for v in value]
        notes = [n for k, value in props if k == "relaychaos_notes" for n in value]
        kept = {"histories": [v for k, v in props if k == "relaychaos_history"],
                "logs": next((v for k, v in props if k == "relaychaos_logs"), None)}
        skipped = report.longrepr[2] if report.skipped and isinstance(report.longrepr, tuple) else None
        self.results.add(report.nodeid, report.when, report.outcome, report.duration,
                         report.longreprtext if report.failed else skipped, verdicts, notes,
                         next((value for k, value in props if k == "relaychaos_stateful"), None), kept)
        if report.when not in ("setup", "call"):  # written as each finishes: a run cut short leaves its results
            self.results.write(self.out)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        if session.items:  # a plain run; under xdist the workers collect (below)
            self.results.expected = len(session.items)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids) -> None:
        self.results.expected = len(ids)

    def pytest_keyboard_interrupt(self, excinfo) -> None:
        self.results.partial = True  # Ctrl-C: what finished is written, marked partial

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if exitstatus == pytest.ExitCode.INTERRUPTED:
            self.results.partial = True
        self.results.write(self.out)


def manifest_name(relay: Path) -> str:
    """The relay's name as its manifest gives it (the folder's name if the manifest cannot be read)."""
    from relaychaos.errors import HarnessError
    from relaychaos.stack import manifest

    try:
        return manifest.load(relay).name
    except (HarnessError, OSError):
        return relay.parent.name


@pytest.fixture(scope="session")
def relaychaos_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This worker's scratch folder: logs of shared servers, one sub-folder per test."""
    return tmp_path_factory.mktemp("relaychaos")


@pytest.fixture(scope="session")
def relay_manifest(pytestconfig: pytest.Config):
    """The relay under test's manifest; keys it does not know are shown as warnings."""
    import warnings

    from relaychaos.stack import manifest

    loaded = manifest.load(relay_path(pytestconfig))
    for problem in loaded.warnings:
        warnings.warn(f"{loaded.path}: {problem}", UserWarning, stacklevel=1)
    return loaded


@pytest.fixture(scope="session")
def toxiproxy(relaychaos_dir: Path):
    """The Toxiproxy control for this worker (server found or started as toxiproxy_server says)."""
    from relaychaos.stack import toxiproxy_server

    server = toxiproxy_server.acquire(relaychaos_dir)
    yield server.control
    server.close()


@pytest.fixture(scope="session")
def account_system(relaychaos_dir: Path):
    """The account-system fixture process for this worker; each stack resets it."""
    from relaychaos.stack.account_system import AccountSystem

    system = AccountSystem.start(relaychaos_dir)
    yield system
    system.close()


@pytest.fixture(scope="session")
def relaychaos_sandbox(pytestconfig: pytest.Config):
    """This worker's sandbox (relaychaos.sandbox): every relay command of its stacks runs inside it."""
    import warnings

    from relaychaos.errors import SandboxError
    from relaychaos.sandbox.policy import Limits, Sandbox

    from relaychaos.run_folder import LOG_BUDGET

    mode, limits = sandbox_choice(pytestconfig)
    root = run_folder(pytestconfig)
    try:
        sandbox = Sandbox.create(mode, Limits().with_overrides(limits), log_budget=root / LOG_BUDGET if root else None)
    except SandboxError as e:
        pytest.exit(str(e), returncode=2)
    if sandbox.missing and mode != "off":
        warnings.warn(sandbox.summary(), UserWarning, stacklevel=1)
    yield sandbox
    sandbox.close()


def run_folder(config: pytest.Config) -> Path | None:
    """The run folder (the folder of --relaychaos-results), where workers keep histories and logs; or None."""
    path = config.getoption("relaychaos_results", None)
    return (config.invocation_params.dir / path).resolve().parent if path else None


@pytest.fixture
def relaychaos_keep(request: pytest.FixtureRequest):
    """keep(history, name, stack) -> path: keep a history in the run folder (histories/<name>.jsonl) and,
    after the test, its stack's relay logs (logs/<name>/); the paths go into results.json. Without
    --relaychaos-results nothing is kept (None)."""
    import json

    from relaychaos.run_folder import RunFolder

    root = run_folder(request.config)
    folder = RunFolder(root) if root else None
    logs: dict[str, list] = {}

    def keep(history, name: str, stack=None) -> str | None:
        if folder is None:
            return None
        claimed = folder.claim(name)
        logs.setdefault(claimed, []).extend([stack] if stack is not None else [])
        path = folder.keep_history(history, claimed)
        request.node.user_properties.append(("relaychaos_history", json.dumps(path)))
        return path

    yield keep
    for name, stacks in logs.items():
        if stacks:
            kept = folder.keep_logs(name, [s.workdir for s in stacks])
            request.node.user_properties.append(("relaychaos_logs", json.dumps(kept)))


@pytest.fixture
def make_stack(request: pytest.FixtureRequest, toxiproxy, account_system, relay_manifest, relaychaos_sandbox,
               tmp_path: Path, relaychaos_keep):
    """make_stack(manifest=None, **options) -> Stack, closed after the test; logs attached on failure."""
    from relaychaos.stack.world import Stack

    stacks = request.node.stash.setdefault(_STACKS, [])

    def make(manifest=None, **options) -> Stack:
        if manifest is not None and not hasattr(manifest, "commands"):
            from relaychaos.stack import manifest as manifests

            manifest = manifests.load(manifest)
        stack = Stack(toxiproxy=toxiproxy, account=account_system, manifest=manifest or relay_manifest,
                      workdir=tmp_path / f"stack{len(stacks)}", name=request.node.name,
                      **{"sandbox": relaychaos_sandbox, **options})
        stacks.append(stack)
        return stack

    yield make
    for stack in stacks:
        stack.close()


@pytest.fixture
def run_chaos(request: pytest.FixtureRequest, make_stack, relaychaos_keep):
    """run_chaos(scenario, manifest=None) -> ChaosResult: run on a fresh stack, check, record the verdicts;
    the history and relay logs are kept in the run folder (relaychaos_keep)."""
    import json

    from relaychaos.chaos import run_and_check

    def run(scenario, manifest=None):
        stack = make_stack(manifest, accounts=scenario.accounts, account_timeout_ms=scenario.account_timeout_ms)
        result = run_and_check(stack, scenario)
        kept = relaychaos_keep(result.history, scenario.name, stack)
        if kept:
            result.history_path = run_folder(request.config) / kept  # the incident report names the kept copy
        request.node.user_properties.append(
            ("relaychaos_verdicts", json.dumps([{**v.to_dict(), "scenario": scenario.name} for v in result.verdicts])))
        if result.notes:
            request.node.user_properties.append(("relaychaos_notes", json.dumps(result.notes)))
        return result

    return run


@pytest.fixture
def relaychaos_seed(pytestconfig: pytest.Config) -> int | None:
    """--relaychaos-seed, else RELAYCHAOS_SEED, else None (the budget decides)."""
    chosen = pytestconfig.getoption("relaychaos_seed", None)
    if chosen is None and os.environ.get("RELAYCHAOS_SEED", "").strip():
        chosen = int(os.environ["RELAYCHAOS_SEED"])
    return chosen


def extra_scenario_files(config: pytest.Config) -> list[tuple[str, Path]]:
    """(set, path) of every scenario file in the --relaychaos-scenarios folders, sorted."""
    out = []
    for spec in config.getoption("relaychaos_scenarios", None) or []:
        name, sep, folder = spec.partition("=")
        if not sep or not name or not Path(folder).is_dir():
            raise pytest.UsageError(f"--relaychaos-scenarios {spec!r} is not SET=FOLDER with an existing folder; "
                                    "fix: e.g. --relaychaos-scenarios hidden=grading/hidden")
        out += [(name, p) for p in sorted(Path(folder).glob("*.y*ml"))]
    return out


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "relaychaos_extra_scenario" in metafunc.fixturenames:
        files = extra_scenario_files(metafunc.config)
        metafunc.parametrize("relaychaos_extra_scenario", files, ids=[f"{s}:{p.stem}" for s, p in files])


@pytest.fixture
def relaychaos_budget(pytestconfig: pytest.Config):
    """The Hypothesis settings of the chosen budget, for the relaychaos state machine alone."""
    from relaychaos.engine.budget import budget_settings

    return budget_settings(budget_name(pytestconfig))


@pytest.fixture
def stack(make_stack):
    """A Stack for the relay under test, its relay not yet started."""
    return make_stack()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    report = outcome.get_result()
    if call.excinfo is not None:
        from relaychaos.errors import HarnessError

        from relaychaos.chaos import ChaosFailure

        if isinstance(call.excinfo.value, HarnessError):
            report.longrepr = f"{type(call.excinfo.value).__name__}: {call.excinfo.value}"
        elif isinstance(call.excinfo.value, ChaosFailure):
            report.longrepr = str(call.excinfo.value)
    if report.failed:
        for i, stack in enumerate(item.stash.get(_STACKS, [])):
            for log in sorted(stack.workdir.glob("*.log")):
                from relaychaos.stack.processes import log_tail

                report.sections.append((f"relay log {log.name} (stack {i})", log_tail(log, 30)))
