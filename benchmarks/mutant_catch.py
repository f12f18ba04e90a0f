"""How often a named scenario catches a broken relay: N runs, beside CPU burners or inside the Gradescope emulation.

    .venv/bin/python -m benchmarks.mutant_catch --mutant process_lock --runs 20 --burners 2
    .venv/bin/python -m benchmarks.mutant_catch --mutant process_lock --runs 10 --emulate
    .venv/bin/python -m benchmarks.mutant_catch --mutant all --runs 10 --emulate --parallel 3

`--mutant` names one broken relay, several (comma-separated) or `all` (every row of the table, one
after another). Each run grades the mutant on the scenario that catches it (relay_under_test/mutants/table.py:
the first of `caught_by`) with a fresh `relaychaos grade --scenarios NAME`, and counts the run
as a catch when that scenario broke the mutant's rule. `--emulate` runs each grade inside
scripts/gradescope_emulation.py (0.5 CPU, 768 MB), `--parallel` containers side by side as a
Gradescope host runs several (each keeps its own CPU quota). With `--also-correct`, the reference relay
is graded the same way after each run and must hold every time. Prints a line per run with
the load average, then the counts, and with several mutants a table of them; exit 1 unless every
run caught its mutant (and every correct run held), 130 when stopped (Ctrl-C, SIGTERM to a grade).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from relaychaos.relay_under_test.mutants.table import BY_NAME, MUTANTS, Mutant

ROOT = Path(__file__).resolve().parent.parent
BURN = "while True: pass"


def broke(record: dict, scenario: str, rule: str) -> bool:
    return any(
        v.get("rule") == rule
        for s in record.get("scenarios", [])
        if s["name"] == scenario
        for v in s.get("verdicts", [])
    )


def one_grade(folder: Path, scenario: str, emulate: bool) -> dict:
    """The grade record of one run: a batch of one, or Gradescope's folders inside the emulation (in a temporary
    folder, removed after). A grade that was interrupted (Ctrl-C, SIGTERM) or could not run stops the benchmark."""
    with tempfile.TemporaryDirectory(prefix="mutant-catch-") as name:
        work = Path(name)
        if emulate:
            command = [
                sys.executable,
                str(ROOT / "scripts" / "gradescope_emulation.py"),
                str(folder),
                "--root",
                str(work / "autograder"),
                "--",
                "--scenarios",
                scenario,
            ]
        else:
            command = [
                sys.executable,
                "-m",
                "relaychaos.commands.cli",
                "grade",
                str(folder),
                "--out",
                str(work),
                "--scenarios",
                scenario,
            ]
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
        if done.returncode == 130 or done.returncode < 0:
            raise KeyboardInterrupt  # the grade was stopped: so is the benchmark
        if done.returncode not in ((0,) if emulate else (0, 1)):  # grade: 0 graded, 1 some submission could not be
            where = "the emulation" if emulate else f"the grade of {folder.name}"
            sys.exit(f"{where} failed (exit {done.returncode}):\n{done.stdout}\n{done.stderr}")
        if emulate:
            return json.loads((work / "autograder" / "results" / "grade.json").read_text())
        return json.loads(next(work.glob("submissions/*/grade.json")).read_text())


def catch_rate(mutant: Mutant, scenario: str | None, args: argparse.Namespace) -> tuple[str, str, int, int]:
    """(scenario, rule, caught, held) over args.runs runs of one mutant."""
    name = mutant.name
    scenario, rule = scenario or mutant.caught_by[0], mutant.rules[0]

    def one(n: int) -> tuple[bool, bool | None]:
        t0 = time.monotonic()
        hit = broke(one_grade(mutant.folder, scenario, args.emulate), scenario, rule)
        line = f"run {n}/{args.runs}: {name} {'caught' if hit else 'NOT caught'} by {scenario}"
        ok = None
        if args.also_correct:
            ok = one_grade(ROOT / "relay_under_test" / "reference", scenario, args.emulate)["score"] == 100
            line += f"; reference {'held' if ok else 'BROKE A RULE'}"
        print(f"{line} ({time.monotonic() - t0:.0f} s, load average {os.getloadavg()[0]:.1f})", flush=True)
        return hit, ok

    pool = concurrent.futures.ThreadPoolExecutor(max(1, args.parallel))
    try:
        outcomes = list(pool.map(one, range(1, args.runs + 1)))
    finally:  # stopped: the runs not yet started never start (those running were interrupted with it)
        pool.shutdown(wait=True, cancel_futures=True)
    caught, held = sum(hit for hit, _ in outcomes), sum(bool(ok) for _, ok in outcomes)
    where = (
        f"inside the Gradescope emulation ({args.parallel} side by side)"
        if args.emulate
        else f"beside {args.burners} CPU burner(s)"
    )
    print(
        f"\n{name}: caught by {scenario} ({rule}) in {caught} of {args.runs} runs {where}"
        + (f"; the reference held in {held} of {args.runs}" if args.also_correct else ""),
        flush=True,
    )
    return scenario, rule, caught, held


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mutant", default="process_lock", help="a name, names joined by commas, or all")
    parser.add_argument("--scenario", help="default: the first scenario meant to catch it")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--burners", type=int, default=0, help="CPU burner processes beside the runs")
    parser.add_argument("--emulate", action="store_true", help="grade inside the Gradescope emulation")
    parser.add_argument("--parallel", type=int, default=1, help="with --emulate: containers side by side")
    parser.add_argument("--also-correct", action="store_true", help="grade the reference relay after each run")
    args = parser.parse_args(argv)
    if args.parallel > 1 and not args.emulate:
        parser.error("--parallel is for --emulate (side by side beside burners would be more load than asked)")
    names = [m.name for m in MUTANTS] if args.mutant == "all" else args.mutant.split(",")
    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        parser.error(f"no broken relay {', '.join(unknown)} in relay_under_test/mutants/table.py")
    burners = [subprocess.Popen([sys.executable, "-c", BURN]) for _ in range(args.burners)]
    try:
        rates = {name: catch_rate(BY_NAME[name], args.scenario, args) for name in names}
    except KeyboardInterrupt:
        print("mutant_catch: stopped (a grade was interrupted); nothing is left running", file=sys.stderr)
        return 130
    finally:
        for b in burners:
            b.kill()
    if len(names) > 1:
        print("\n| broken relay | scenario | rule | caught |\n|---|---|---|---|")
        for name, (scenario, rule, caught, _) in rates.items():
            print(f"| {name} | {scenario} | {rule} | {caught} of {args.runs} |")
    every = all(
        caught == args.runs and (not args.also_correct or held == args.runs) for _, _, caught, held in rates.values()
    )
    return 0 if every else 1


if __name__ == "__main__":
    sys.exit(main())
