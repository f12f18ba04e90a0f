"""Grading one submission: the suite run against it, within a wall budget, and its graded record.

One pytest run, in a process group of its own, on `workers` xdist workers: the named scenarios,
the scenario files, and the stateful machine (seeded; a failure shrunk within the shrinking budget,
relaychaos.engine.shrink_budget, its first failing example counted). The machine is ordered last and
gated as in `relaychaos run` (relaychaos.plugin.machine_gate): when a named scenario fails it stops
and does not count (a bug the suite has already shown is not hunted again); with `hunt` it runs to
its end and counts. When the wall budget runs out, the run is killed and the submission is not
graded (`gradable` false, `timed_out`): the scenarios left would decide its score, and how far a
run gets depends on the machine. The run writes its results as it goes
(relaychaos.reports.results), so a cut run still leaves them. The record
(relaychaos.reports.grade_record) is the one source of every output.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from relaychaos import options, paths
from relaychaos.checkers import not_checked
from relaychaos.errors import HarnessError
from relaychaos.grading import capacity
from relaychaos.grading import outcomes as graded
from relaychaos.grading.outcomes import STATEFUL
from relaychaos.grading.rubric import Rubric
from relaychaos.grading.score import Outcome
from relaychaos.grading.start_probe import probe as start_probe
from relaychaos.grading.submissions import Submission
from relaychaos.plugin.machine_gate import why_not
from relaychaos.records.base import UNSET
from relaychaos.records.grade import GradeRecord, Stateful
from relaychaos.records.results import MachineAccount, ScenarioResult
from relaychaos.reports.results import RunResults
from relaychaos.reports.student_text import clean
from relaychaos.run.suite import start, stop, suite_command
from relaychaos.run_folder import LOG_BUDGET
from relaychaos.sandbox.environment import commands_path
from relaychaos.sandbox.levels import probe
from relaychaos.sandbox.policy import clear_abandoned
from relaychaos.scenarios import ALL, REGRESSION_FILES
from relaychaos.stack import manifest

MACHINE_SKIPPED = (
    "a named scenario had already shown a bug, so the random stories were not needed; they run once "
    "every named scenario holds"
)


@dataclass(frozen=True)
class Options:
    """How every submission of a batch is graded."""

    rubric: Rubric
    seed: int = 0
    budget_s: float = capacity.BUDGET_S
    workers: int = 3
    sandbox: str = options.SANDBOX.default
    sandbox_limit: str | None = None
    only: tuple[str, ...] = ()  # scenario names to run (all when empty)
    shrink_s: float | None = None  # the machine's failure is shrunk this long at most (None: the grade budget's 10 s);
    # its grade does not depend on it
    hunt: bool = False  # the machine runs and counts even when a named scenario has failed


def expected(opts: Options) -> list[tuple[str, str]]:
    """(name, set) of every scenario a full grade runs, in order; `only` narrows it."""
    rows = [(n, opts.rubric.set_of(n)) for n in ALL] + [(p.stem, opts.rubric.set_of(p.stem)) for p in REGRESSION_FILES]
    for set_name, folder in sorted(opts.rubric.folders.items()):
        rows += [(p.stem, set_name) for p in sorted(folder.glob("*.y*ml"))]
    rows.append((STATEFUL, opts.rubric.set_of(STATEFUL)))
    return [r for r in rows if not opts.only or r[0] in opts.only]


def _pytest(manifest: Path, out: Path, results: Path, opts: Options) -> list[str]:
    """The suite's command line for a grade: the named scenarios, the scenario files and the state machine
    (its budget `grade`, the grade's seed and shrinking), `only` narrowing them."""
    values: dict[str, object] = {"sandbox": opts.sandbox, "sandbox_limit": opts.sandbox_limit}
    values |= {"budget": "grade", "seed": opts.seed, "shrink_s": opts.shrink_s, "hunt": opts.hunt}
    extra = ["-rN"]
    workers = min(opts.workers, len(expected(opts)))  # no worker without a scenario
    extra += ["-n", str(workers)] if workers > 1 else []
    extra += [a for s, f in sorted(opts.rubric.folders.items()) for a in ("--relaychaos-scenarios", f"{s}={f}")]
    if opts.only:
        names = [n for n in opts.only if n != STATEFUL] + (["test_random_stories"] if STATEFUL in opts.only else [])
        extra += ["-k", " or ".join(names) if names else "no-such-scenario"]
    return suite_command(manifest, out, results, values, extra)


def _start(argv: list[str], log: Path, cwd: Path) -> subprocess.Popen:
    return start(argv, log, cwd, dict(os.environ, RELAYCHAOS_FOUND_DIR=str(cwd / "found")))


def _stop(proc: subprocess.Popen) -> None:
    """Stop the suite's run: its whole process group (its workers, their relays), 5 s to close its stacks."""
    stop(proc, grace_s=5)
    clear_abandoned()  # the sandbox slots of workers killed before they could close them


def read_results(path: Path) -> list[ScenarioResult]:
    """The scenarios a run's results file lists so far; [] while it has not been written."""
    try:
        return RunResults.read(path).scenarios
    except (OSError, ValueError):
        return []


def name_of(nodeid: str) -> tuple[str, str | None]:
    """(scenario name, the set its folder gave it, if any) of a suite test's node id."""
    if "test_random_stories" in nodeid:
        return STATEFUL, None
    m = re.search(r"\[(.*)\]$", nodeid)
    param = m.group(1) if m else nodeid
    if "test_scenario_file_of_a_set" in nodeid and ":" in param:
        set_name, _, stem = param.partition(":")
        return stem, set_name
    return param, None


@dataclass
class Ran:
    """What a grade's run left: the scenarios' results, whether the budget cut them, why the machine's did
    not count (a named scenario failed), whether the relay never started anywhere."""

    scenarios: list[ScenarioResult]
    timed_out: bool = False
    machine_why: str | None = None
    never_started: bool = False


@dataclass
class NoGrade:
    """Why a run is no grade (the record's error); `harness_failed`: the grader's failure, not the relay's."""

    error: str
    harness_failed: bool = False


SUITE_RESULTS, SUITE_LOG = "suite.json", "suite.log"  # the run's results and output, in the submission's folder


def run_suite(manifest: Path, out: Path, opts: Options, progress: Callable[[dict], None]) -> Ran:
    """Run the suite on the relay of `manifest` within the budget."""
    results = out / SUITE_RESULTS
    deadline = time.monotonic() + opts.budget_s
    run = _start(_pytest(manifest, out, results, opts), out / SUITE_LOG, out)
    timed_out, never_started = False, False
    try:
        while run.poll() is None:
            done = read_results(results)
            progress({"done": done})
            if time.monotonic() > deadline:
                timed_out = True
                break
            if len(done) >= 2 and all(_never_started(s) for s in done):
                never_started = True  # the rest would show the same: every rule broken, at a budget's cost
                break
            time.sleep(0.25)
    finally:
        _stop(run)
    scenarios = read_results(results)
    failed = _failed(scenarios)
    if failed and not opts.hunt:  # whatever the timing: the same grade on every regrade
        named = [s for s in scenarios if name_of(s.nodeid)[0] != STATEFUL]
        return Ran(named, timed_out, why_not(failed), never_started)
    return Ran(scenarios, timed_out, None, never_started)


def _failed(results: list[ScenarioResult]) -> list[str]:
    """The names of the named scenarios that failed."""
    return [n for n in (name_of(s.nodeid)[0] for s in results if s.outcome == "failed") if n != STATEFUL]


def _never_started(result: ScenarioResult) -> bool:
    return result.outcome == "failed" and any(v.rule == "serve-ready" for v in result.verdicts)


def grade(sub: Submission, out: Path, opts: Options, progress: Callable[[dict], None] = lambda _: None) -> GradeRecord:
    """Grade one submission into `out` (its own folder): the record, also written as out/grade.json."""
    out.mkdir(parents=True, exist_ok=True)
    os.chmod(out, 0o700)
    (out / LOG_BUDGET).unlink(missing_ok=True)  # the submission's logs start from nothing on every grade
    started = time.monotonic()
    common: dict[str, Any] = {"sandbox": probe(opts.sandbox, opts.sandbox_limit), "notes": list(sub.notes)}
    common["folder"] = out.name
    try:
        manifest = _check_manifest(sub, sandboxed=opts.sandbox != "off")
        why = start_probe(manifest, out, opts.sandbox, opts.sandbox_limit, out / LOG_BUDGET)
        if why:
            raise HarnessError(why)
    except HarnessError as e:
        took = round(time.monotonic() - started, 2)
        return graded.save(_no_grade(sub, opts, f"could not start: {e}", out, **common, execution_time_s=took), out)
    ran = run_suite(manifest, out, opts, progress)
    outcomes = _outcomes(ran, opts, sub, out)
    common |= {"timed_out": ran.timed_out, "execution_time_s": round(time.monotonic() - started, 2)}
    common["stateful"] = _stateful(ran)
    places = _places(sub, out)
    common["notes"] = sorted({*sub.notes, *(clean(n, {}, places) for s in ran.scenarios for n in s.notes)})
    no_grade = _ungradable(ran, outcomes, opts, out / SUITE_LOG)
    if no_grade is not None and no_grade.harness_failed:  # nothing the relay did is known: no points either way
        return graded.save(_no_grade(sub, opts, no_grade.error, out, harness_failed=True, **common), out)
    if no_grade is not None:
        common |= {"gradable": False, "error": no_grade.error}
    scored = graded.scored(outcomes, opts.rubric, unchecked(manifest))
    return graded.save(graded.record(sub, opts.rubric, opts.seed, *scored, **common), out)


def _no_grade(sub: Submission, opts: Options, error: str, out: Path, **fields: Any) -> GradeRecord:
    """A record of no grade: every item at zero, gradable False, `error` cleaned of paths like all a student reads."""
    error = clean(error, {}, _places(sub, out)) or error
    return graded.record(
        sub, opts.rubric, opts.seed, graded.zero(opts.rubric), [], gradable=False, error=error, **fields
    )


def _ungradable(ran: Ran, outcomes: list[Outcome], opts: Options, suite_log: Path) -> NoGrade | None:
    """The record's error (and gradable False) when the run is no grade: the relay never started, the
    budget cut the run, or no scenario finished (the harness's failure, as a relay's faults are verdicts:
    `harness_failed`, with the error suite.log shows). Nothing when it is a grade."""
    started_none = [o for o in outcomes if any(v.rule == "serve-ready" for v in o.verdicts)]
    counted = [o for o in outcomes if o.counts()]
    if ran.never_started or (started_none and len(started_none) == len(counted)):
        first = next(v for v in started_none[0].verdicts if v.rule == "serve-ready")
        return NoGrade(f"could not start: {first.summary}")
    if ran.timed_out:  # what the rest would show depends on the machine's speed: not a grade
        named = [o for o in outcomes if o.name != STATEFUL]
        finished = sum(1 for o in named if o.outcome in ("passed", "failed", "error"))
        return NoGrade(
            f"{CUT}: the grading budget of {opts.budget_s:g} s ended after {finished} "
            f"of {len(named)} scenarios (a grade cut short is not scored: the "
            "instructor regrades it with a larger --budget-s)"
        )
    if any(o.name != STATEFUL for o in outcomes) and all(
        o.outcome in ("error", "not-run") for o in outcomes if o.name != STATEFUL
    ):
        return NoGrade(
            f"{HARNESS_FAILED}: the grader failed before any scenario finished, which is not the relay's "
            f"doing ({_first_error(suite_log)}); the instructor fixes the grader's installation "
            "(bash scripts/bootstrap.sh) and regrades",
            harness_failed=True,
        )
    return None


HARNESS_FAILED = "could not run"  # the error of a grade the harness itself could not run begins so
_ERROR_LINE = re.compile(r"^(?:INTERNALERROR>\s*E?\s*|E\s+)?((?!Assertion)\w+(?:Error|Exception): .+)$", re.M)


def _first_error(log: Path) -> str:
    """The first exception a pytest log names (e.g. ModuleNotFoundError: No module named 'x'), or where to look."""
    try:
        found = _ERROR_LINE.search(log.read_text(errors="replace"))
    except OSError:
        found = None
    return found.group(1).strip() if found else f"its log: {log.name} in the submission's gradebook folder"


def _stateful(ran: Ran) -> Stateful:
    """The record's account of the random stories: whether they ran, were shrunk, and how long it took."""
    machine = next((s for s in ran.scenarios if name_of(s.nodeid)[0] == STATEFUL), None)
    info = machine.stateful if machine is not None and machine.stateful is not None else MachineAccount()
    return Stateful(
        ran=machine is not None,
        shrunk=info.shrunk is True,
        examples=None if info.examples is UNSET else info.examples,
        shrink_s=None if info.shrink_s is UNSET else info.shrink_s,
        slowest_example_s=None if info.slowest_example_s is UNSET else info.slowest_example_s,
        examples_after_failure=None if info.examples_after_failure is UNSET else info.examples_after_failure,
        why_not=MACHINE_SKIPPED if ran.machine_why else (None if machine else "not run"),
    )


CUT = "ran out of time"  # the error of a grade cut at its wall budget begins so


def _check_manifest(sub: Submission, sandboxed: bool) -> Path:
    """The submission's relay.toml; HarnessError when it has none usable, its code lies outside its folder, or a
    command's program is not there to be run (in the sandbox's copy, when `sandboxed`)."""
    if sub.manifest is None:
        raise HarnessError(
            "no relay.toml in the submission's folder",
            fix="a submission is a folder holding relay.toml (the relay contract, section 1)",
        )
    loaded = manifest.load(sub.manifest)
    inside = loaded.code == sub.folder.resolve() or sub.folder.resolve() in loaded.code.parents
    if not inside and loaded.code != paths.bundled_relays():  # the bundled relays share their package
        raise HarnessError(
            "relay.toml's root lies outside the submission",
            where="relay.toml",
            fix="a submission holds all its code: drop `root`, or name a folder inside the submission",
        )
    manifest.runnable(loaded, commands_path(on=sandboxed), sandboxed=sandboxed)
    return sub.manifest


def _places(sub: Submission, out: Path) -> dict[str, str]:
    """Folders a student's text may name, as the student knows them (see reports.student_text)."""
    places = {str(sub.folder): "", str(out): "", str(paths.suite()): "relaychaos/scenarios"}
    if sub.manifest is not None:
        places[str(sub.manifest.parent)] = ""
    return places


def provisional(sub: Submission, opts: Options, done: list[ScenarioResult], elapsed_s: float, out: Path) -> GradeRecord:
    """A record of what is known while the submission runs (what has not finished counts as not run yet),
    for graders that want results even when they stop the run: Gradescope kills at its own time-out."""
    outcomes = _outcomes(Ran(done), opts, sub, out)
    return graded.record(
        sub,
        opts.rubric,
        opts.seed,
        *graded.scored(outcomes, opts.rubric, unchecked(sub.manifest) if sub.manifest else {}),
        timed_out=True,
        execution_time_s=round(elapsed_s, 2),
        notes=["partial: the grading run was still going when these results were written"],
        stateful=Stateful(ran=False, shrunk=False, why_not="still running"),
    )


def _outcomes(ran: Ran, opts: Options, sub: Submission, out: Path) -> list[Outcome]:
    by_name = {name_of(s.nodeid)[0]: s for s in ran.scenarios}
    places = _places(sub, out)
    result = []
    for name, set_name in expected(opts):
        s = by_name.get(name)
        if s is None:
            skipped = name == STATEFUL and ran.machine_why
            result.append(Outcome(name, set_name, "skipped" if skipped else "not-run", cut=not skipped))
            continue
        o = graded.outcome(name, set_name, s, out, places)
        if o.outcome == "skipped" and name != STATEFUL:  # the suite skips what runs a command the relay lacks
            o.relay_lacks = (o.message or "").removeprefix("Skipped: ") or "the relay lacks a command the scenario runs"
        result.append(o)
    return result


def unchecked(path: Path) -> dict[str, str]:
    """The rules the relay of manifest `path` cannot be judged by, each with why (its profile: a keyed service's
    ledger and answers, the batch commands it lacks); nothing for a course relay on its SQLite ledger."""
    try:
        loaded = manifest.load(path)
    except HarnessError:
        return {}
    return not_checked(loaded.profile.provides(loaded.commands))
