"""Benchmark: the bundled relays graded as a class, and regraded: wall times, and the same scores every time.

    .venv/bin/python -m benchmarks.grade_class [--rounds 10] [--seed 0] [--out runs/grade-bench]
        [--also DIR ...]

Each round is one `relaychaos grade relay_under_test/*/ relay_under_test/mutants/*/` (the
correct relays, base, every mutant), in a fresh gradebook folder. Prints, for each round,
the total wall time, the per-submission wall times (median and max, for the correct relays
and the broken ones apart) against the targets (20 s and 30 s), and the load average when
it ended (these machines are shared: compare rounds at a like load); then, over every
round, each submission's score, and whether every round gave it the same one. `--also`
adds the gradebooks of earlier rounds (e.g. of an earlier commit) to the comparison.
Exit 1 when a correct relay lacks full marks, a broken one has them, or a regrade differed.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORRECT = {"reference", "go", "stdlib", "java"}


def load_records(out: Path) -> dict[str, dict]:
    return {r["submission"]: r for r in (json.loads(p.read_text()) for p in out.glob("submissions/*/grade.json"))}


def timing(records: dict[str, dict]) -> str:
    times = {name: r["execution_time_s"] for name, r in records.items()}
    good = [t for name, t in times.items() if name in CORRECT]
    bad = [t for name, t in times.items() if name not in CORRECT]
    return (f"correct relays median {statistics.median(good):.1f} s, max {max(good):.1f} s (target 20 s); broken "
            f"relays median {statistics.median(bad):.1f} s, max {max(bad):.1f} s (target 30 s)")


def one_round(out: Path, seed: int) -> tuple[float, dict[str, dict]]:
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "relaychaos.cli", "grade", "relay_under_test/*/",
                           "relay_under_test/mutants/*/", "--out", str(out), "--seed", str(seed)], cwd=ROOT,
                          capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        sys.exit(f"grade failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return wall, load_records(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="runs/grade-bench")
    parser.add_argument("--also", nargs="*", default=[], help="gradebook folders of earlier rounds to compare with")
    args = parser.parse_args()
    rounds = [load_records(Path(d)) for d in args.also]
    for n in range(args.rounds):
        wall, records = one_round((ROOT / args.out / f"round{n + 1}").resolve(), args.seed)
        rounds.append(records)
        print(f"round {n + 1}/{args.rounds}: class of {len(records)} in {wall:.0f} s; {timing(records)}; load "
              f"average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)
    first = rounds[-1]
    times = {name: r["execution_time_s"] for name, r in first.items()}
    print(f"\n{len(rounds)} rounds compared ({len(args.also)} earlier, {args.rounds} now)\n")
    print("| submission | score | seconds (last round) | same score in every round |\n|---|---|---|---|")
    problems = []
    for name in sorted(first, key=lambda n: (n not in CORRECT, n)):
        scores = [r[name]["score"] for r in rounds]
        same = len(set(scores)) == 1
        print(f"| {name} | {scores[0]:g} | {times[name]:.1f} | {'yes' if same else 'NO: ' + str(scores)} |")
        if not same:
            problems.append(f"{name}: regrades differ {scores}")
        if (name in CORRECT) != (scores[0] == first[name]["max_score"]):
            problems.append(f"{name}: {scores[0]} of {first[name]['max_score']}")
    if problems:
        print("\nproblems:\n  " + "\n  ".join(problems))
        sys.exit(1)


if __name__ == "__main__":
    main()
