"""Grading one submission: the suite run against it, within a wall budget, and its graded record.

Two pytest runs go at once, each in a process group of its own: the named scenarios and
scenario files (on `workers` xdist workers), and the stateful machine (seeded; a failure shrunk
within the shrinking budget, relaychaos.engine.shrink_budget, its first failing example counted).
When a named scenario fails, the machine is stopped and not counted, as in `relaychaos run`
(relaychaos.machine_gate: a bug the suite has already shown is not hunted again); with `hunt`
it runs to its end and counts. When the wall budget runs out, both are killed
and whatever had not finished counts against every rule (`not-run`). Both write their
results as they go (relaychaos.reports.results), so a cut run still leaves them. The
record (relaychaos.reports.grade_record) is the one source of every output.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from relaychaos import machine_options, paths
from relaychaos.grading.rubric import Rubric
from relaychaos.grading.score import Outcome, score
from relaychaos.grading.submissions import Submission
from relaychaos.reports.atomic import write_text

STATEFUL = "stateful"


@dataclass(frozen=True)
class Options:
    """How every submission of a batch is graded."""

    rubric: Rubric
    seed: int = 0
    budget_s: float = 120.0
    workers: int = 3
    sandbox: str = "auto"
    sandbox_limit: str | None = None
    only: tuple[str, ...] = ()  # scenario names to run (all when empty)
    shrink_s: float | None = None  # the machine's failure is shrunk this long at most (None: the grade budget's 10 s);
    # its grade does not depend on it
    hunt: bool = False  # the machine runs and counts even when a named scenario has failed


def expected(opts: Options) -> list[tuple[str, str]]:
    """(name, set) of every scenario a full grade runs, in order; `only` narrows it."""
    from relaychaos.scenarios import ALL, REGRESSION_FILES

    rows = [(n, opts.rubric.set_of(n)) for n in ALL] + [(p.stem, opts.rubric.set_of(p.stem)) for p in REGRESSION_FILES]
    for set_name, folder in sorted(opts.rubric.folders.items()):
        rows += [(p.stem, set_name) for p in sorted(folder.glob("*.y*ml"))]
    rows.append((STATEFUL, opts.rubric.set_of(STATEFUL)))
    return [r for r in rows if not opts.only or r[0] in opts.only]


def _pytest(manifest: Path, out: Path, results: Path, opts: Options, machine: bool) -> list[str]:
    argv = [sys.executable, "-m", "pytest", str(paths.suite()), "--rootdir", str(paths.suite()), "-c",
            str(out / "pytest.ini"), "--relay", str(manifest), "--relaychaos-results", str(results), "-q", "-rN",
            "--sandbox", opts.sandbox, "-p", "no:cacheprovider", "-m", "stateful" if machine else "not stateful"]
    argv += ["--sandbox-limit", opts.sandbox_limit] if opts.sandbox_limit else []
    if machine:
        argv += ["--relaychaos-budget", "grade", "--relaychaos-seed", str(opts.seed)]
        argv += machine_options.pytest_args({"shrink_s": opts.shrink_s})
    else:
        argv += ["-n", str(opts.workers)] if opts.workers > 1 else []
        argv += [a for s, f in sorted(opts.rubric.folders.items()) for a in ("--relaychaos-scenarios", f"{s}={f}")]
    names = [n for n in opts.only if n != STATEFUL]
    if opts.only and not machine:
        argv += ["-k", " or ".join(names) if names else "no-such-scenario"]
    return argv


def _start(argv: list[str], log: Path, cwd: Path) -> subprocess.Popen:
    with open(log, "ab") as f:
        env = dict(os.environ, RELAYCHAOS_FOUND_DIR=str(cwd / "found"))
        return subprocess.Popen(argv, cwd=cwd, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=env, start_new_session=True)


def _stop(proc: subprocess.Popen | None) -> None:
    """Kill a pytest run's whole process group (its workers, their relays) and wait for it."""
    if proc is None:
        return
    try:
        os.killpg(proc.pid, signal.SIGINT)  # pytest closes its stacks on an interrupt ...
        proc.wait(timeout=5)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # ... and whatever is left goes now
    except ProcessLookupError:
        pass
    proc.wait()
    from relaychaos.sandbox.policy import clear_abandoned

    clear_abandoned()  # the sandbox slots of workers killed before they could close them


def read_results(path: Path) -> list[dict]:
    try:
        return json.loads(path.read_text()).get("scenarios", [])
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


def run_suite(sub: Submission, out: Path, opts: Options, progress: Callable[[dict], None]) -> dict:
    """Run both pytest runs within the budget; {'scenarios': [...results entries], 'timed_out', 'machine'}."""
    (out / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider\n")
    named_json, machine_json = out / "named.json", out / "machine.json"
    want_machine = any(n == STATEFUL for n, _ in expected(opts))
    deadline = time.monotonic() + opts.budget_s
    named = _start(_pytest(sub.manifest, out, named_json, opts, machine=False), out / "named.log", out)
    machine = _start(_pytest(sub.manifest, out, machine_json, opts, machine=True), out / "machine.log", out) \
        if want_machine else None
    timed_out, machine_why, never_started = False, None, False
    try:
        while named.poll() is None or (machine is not None and machine.poll() is None):
            done = read_results(named_json)
            progress({"done": done, "machine": machine is not None and machine.poll() is None})
            if _failed(done) and not opts.hunt and machine is not None and machine.poll() is None:
                _stop(machine)  # its result would not count (below): no need to wait for it
            if time.monotonic() > deadline:
                timed_out = True
                break
            if len(done) >= 2 and all(_never_started(s) for s in done):
                never_started = True  # the rest would show the same: every rule broken, at a budget's cost
                break
            time.sleep(0.25)
    finally:
        _stop(named)
        _stop(machine)
    scenarios = read_results(named_json)
    if _failed(scenarios) and not opts.hunt:  # whatever the timing: the same grade on every regrade
        from relaychaos.machine_gate import why_not

        machine_why = why_not(_failed(scenarios))
    elif want_machine:
        scenarios += read_results(machine_json)
    return {"scenarios": scenarios, "timed_out": timed_out, "machine_why": machine_why, "never_started": never_started}


def _failed(results: list[dict]) -> list[str]:
    """The names of the named scenarios that failed."""
    return [name_of(s["nodeid"])[0] for s in results if s["outcome"] == "failed"]


def _never_started(result: dict) -> bool:
    return result["outcome"] == "failed" and any(v.get("rule") == "serve-ready" for v in result.get("verdicts", []))


def grade(sub: Submission, out: Path, opts: Options, progress: Callable[[dict], None] = lambda _: None) -> dict:
    """Grade one submission into `out` (its own folder): the record, also written as out/grade.json."""
    from relaychaos.checkers import RULES
    from relaychaos.errors import HarnessError
    from relaychaos.sandbox.levels import probe
    from relaychaos.stack import manifest

    from relaychaos.run_folder import LOG_BUDGET

    out.mkdir(parents=True, exist_ok=True)
    os.chmod(out, 0o700)
    (out / LOG_BUDGET).unlink(missing_ok=True)  # the submission's logs start from nothing on every grade
    started = time.monotonic()
    record = _record(sub, opts, sandbox=probe(opts.sandbox, opts.sandbox_limit))
    try:
        if sub.manifest is None:
            raise HarnessError(f"no relay.toml in {sub.folder}", fix="a submission is a folder holding relay.toml "
                                                                     "(the relay contract, section 1)")
        loaded = manifest.load(sub.manifest)
        inside = loaded.code == sub.folder.resolve() or sub.folder.resolve() in loaded.code.parents
        if not inside and loaded.code != paths.bundled_relays():  # the bundled relays share their package
            raise HarnessError(f"relay.toml's root ({loaded.code}) lies outside the submission {sub.folder}",
                               where=str(sub.manifest), fix="a submission holds all its code: drop `root`, or "
                                                            "name a folder inside the submission")
    except HarnessError as e:
        record.update(gradable=False, error=f"could not start: {e}", score=0.0, rules=_zero(opts, RULES),
                      scenarios=[], execution_time_s=round(time.monotonic() - started, 2))
        return _save(record, out)
    ran = run_suite(sub, out, opts, progress)
    outcomes = _outcomes(ran, opts)
    record.update(_scored(outcomes, opts), timed_out=ran["timed_out"],
                  execution_time_s=round(time.monotonic() - started, 2))
    started_none = [s for s in ran["scenarios"] if _never_started(s)]
    if ran["never_started"] or (started_none and len(started_none) == len(ran["scenarios"])):
        first = next(v for v in started_none[0]["verdicts"] if v.get("rule") == "serve-ready")
        record.update(error=f"could not start: {first.get('summary')}", gradable=False)
    elif any(o.name != STATEFUL for o in outcomes) and \
            all(o.outcome in ("error", "not-run") for o in outcomes if o.name != STATEFUL):
        record["error"] = "could not run: no scenario finished; see the first scenario's report"
    machine = next((s for s in ran["scenarios"] if name_of(s["nodeid"])[0] == STATEFUL), None)
    info = (machine or {}).get("stateful") or {}
    record["stateful"] = {"ran": machine is not None, "shrunk": bool(info.get("shrunk")), "examples": info.get("examples"),
                          "shrink_s": info.get("shrink_s"), "slowest_example_s": info.get("slowest_example_s"),
                          "why_not": ran["machine_why"] or (None if machine else "not run")}
    record["notes"] = sorted({n for s in ran["scenarios"] for n in s.get("notes", [])})
    return _save(record, out)


def provisional(sub: Submission, opts: Options, done: list[dict], elapsed_s: float) -> dict:
    """A record of what is known while the submission runs (what has not finished counts as not run yet),
    for graders that want results even when they stop the run: Gradescope kills at its own time-out."""
    outcomes = _outcomes({"scenarios": done, "machine_why": None}, opts)
    return _record(sub, opts, timed_out=True, execution_time_s=round(elapsed_s, 2), **_scored(outcomes, opts),
                   notes=["partial: the grading run was still going when these results were written"],
                   stateful={"ran": False, "shrunk": False, "why_not": "still running"})


def _record(sub: Submission, opts: Options, **fields) -> dict:
    """A record's fields for one submission (see relaychaos.reports.grade_record), `fields` on top."""
    return {"submission": sub.name, "path": str(sub.folder), "manifest": str(sub.manifest) if sub.manifest else None,
            "seed": opts.seed, "gradable": True, "error": None, "timed_out": False, "sandbox": {},
            "rubric": opts.rubric.describe(), "max_score": opts.rubric.max_score, "notes": [],
            "stateful": {"ran": False, "shrunk": False, "why_not": None}, **fields}


def _scored(outcomes: list[Outcome], opts: Options) -> dict:
    """The record's score, rules and scenarios for these outcomes."""
    from relaychaos.checkers import RULES

    total, rules = score(outcomes, opts.rubric, {r.id: r.text for r in RULES.values()})
    return {"score": total, "rules": rules, "scenarios": [o.to_dict() for o in outcomes]}


def _outcomes(ran: dict, opts: Options) -> list[Outcome]:
    by_name = {name_of(s["nodeid"])[0]: s for s in ran["scenarios"]}
    out = []
    for name, set_name in expected(opts):
        s = by_name.get(name)
        if s is None:
            skipped = name == STATEFUL and ran["machine_why"]
            out.append(Outcome(name, set_name, "skipped" if skipped else "not-run", cut=not skipped))
            continue
        message = s.get("message")
        if name == STATEFUL and (s.get("stateful") or {}).get("first_report"):
            message = _machine_message(s["stateful"])
        out.append(Outcome(name, set_name, s["outcome"], s.get("verdicts", []), message, s.get("duration_s", 0.0)))
    return out


def _machine_message(info: dict) -> str:
    """What a student reads of the machine's failure: the shrunk story, or the first found if none was kept.

    The grade counts the first failing example as found (the same on every regrade); the story
    shown is the shortest that shrinking reached within its time budget, said so when it was cut.
    """
    last = info.get("last_report")
    if not last or info.get("shrink_s") is None:
        return info["first_report"] + "\n\n(not shrunk: this is the failing example as first found)"
    how = ("shrunk to its end" if info.get("shrunk") else
           f"not fully shrunk: the time budget ended the shrinking after {info['shrink_s']:g} s, so the story "
           "may be longer than it needs to be")
    first = info["first_report"].split("\n", 1)[0]
    return f"{last}\n\n({how}; the grade counts the first failing example, {first.split(': ', 1)[-1]})"


def _zero(opts: Options, rules) -> list[dict]:
    return [{"rule": r, "group": opts.rubric.group_of[r], "what": rules[r].text, "set": "visible", "points": 0.0,
             "max_points": p, "held_in": 0, "scenarios": 0, "broken_in": [], "incidents": []}
            for r, p in opts.rubric.points.items()]


def _save(record: dict, out: Path) -> dict:
    write_text(out / "grade.json", json.dumps(record, indent=2, ensure_ascii=False))
    return record
