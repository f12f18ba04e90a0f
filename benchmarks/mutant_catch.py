"""How often a named scenario catches a broken relay: N runs, beside CPU burners or inside the Gradescope emulation.

    .venv/bin/python -m benchmarks.mutant_catch --mutant process_lock --runs 20 --burners 2
    .venv/bin/python -m benchmarks.mutant_catch --mutant process_lock --runs 10 --emulate

Each run grades the mutant on the scenario that catches it (relay_under_test/mutants/table.py:
the first of `caught_by`) with a fresh `relaychaos grade --scenarios NAME`, and counts the run
as a catch when that scenario broke the mutant's rule. `--emulate` runs each grade inside
scripts/gradescope_emulation.py (0.5 CPU, 768 MB). With `--also-correct`, the reference relay
is graded the same way after each run and must hold every time. Prints a line per run with
the load average, then the counts; exit 1 unless every run caught it (and every correct run held).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

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
    """The grade record of one run: a batch of one, or Gradescope's folders inside the emulation."""
    work = Path(tempfile.mkdtemp(prefix="mutant-catch-"))
    if emulate:
        done = subprocess.run(
            [
                sys.executable,
                str(ROOT / "scripts" / "gradescope_emulation.py"),
                str(folder),
                "--root",
                str(work / "autograder"),
                "--",
                "--scenarios",
                scenario,
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            sys.exit(f"the emulation failed:\n{done.stdout}\n{done.stderr}")
        return json.loads((work / "autograder" / "results" / "grade.json").read_text())
    subprocess.run(
        [sys.executable, "-m", "relaychaos.cli", "grade", str(folder), "--out", str(work), "--scenarios", scenario],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    (path,) = work.glob("submissions/*/grade.json")
    return json.loads(path.read_text())


def main(argv: list[str] | None = None) -> int:
    from relaychaos.relay_under_test.mutants.table import BY_NAME

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mutant", default="process_lock")
    parser.add_argument("--scenario", help="default: the first scenario meant to catch it")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--burners", type=int, default=0, help="CPU burner processes beside the runs")
    parser.add_argument("--emulate", action="store_true", help="grade inside the Gradescope emulation")
    parser.add_argument("--also-correct", action="store_true", help="grade the reference relay after each run")
    args = parser.parse_args(argv)
    mutant = BY_NAME[args.mutant]
    scenario, rule = args.scenario or mutant.caught_by[0], mutant.rules[0]
    burners = [subprocess.Popen([sys.executable, "-c", BURN]) for _ in range(args.burners)]
    caught = held = 0
    try:
        for n in range(1, args.runs + 1):
            t0 = time.monotonic()
            hit = broke(one_grade(mutant.folder, scenario, args.emulate), scenario, rule)
            caught += hit
            line = f"run {n}/{args.runs}: {args.mutant} {'caught' if hit else 'NOT caught'} by {scenario}"
            if args.also_correct:
                ok = one_grade(ROOT / "relay_under_test" / "reference", scenario, args.emulate)["score"] == 100
                held += ok
                line += f"; reference {'held' if ok else 'BROKE A RULE'}"
            print(f"{line} ({time.monotonic() - t0:.0f} s, load average {os.getloadavg()[0]:.1f})", flush=True)
    finally:
        for b in burners:
            b.kill()
    where = "inside the Gradescope emulation" if args.emulate else f"beside {args.burners} CPU burner(s)"
    print(
        f"\n{args.mutant}: caught by {scenario} ({rule}) in {caught} of {args.runs} runs {where}"
        + (f"; the reference held in {held} of {args.runs}" if args.also_correct else "")
    )
    return 0 if caught == args.runs and (not args.also_correct or held == args.runs) else 1


if __name__ == "__main__":
    sys.exit(main())
