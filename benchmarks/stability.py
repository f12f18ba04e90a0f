"""Same code, same verdicts, under load: the whole suite (or the kill matrix) N times beside CPU burners.

    .venv/bin/python -m benchmarks.stability --relay relay_under_test/go/relay.toml --runs 20 --burners 2
    .venv/bin/python -m benchmarks.stability --kill-matrix --runs 20 --burners 2

Each run is a fresh `pytest` process (`scenarios/` against the relay, or the kill
matrix's named-rule test against every broken relay), with `--burners` processes
spinning `while True: pass` for the whole loop. Prints one line per run and a
summary (runs green, the tests that failed and how often, median wall time); exit
0 when every run was green. The burners are killed however the loop ends.
"""

from __future__ import annotations

import argparse
import collections
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BURN = "while True: pass"


def command(args: argparse.Namespace) -> list[str]:
    base = [sys.executable, "-m", "pytest", "-n", "2", "-q", "-p", "no:cacheprovider", "-rf"]
    if args.kill_matrix:
        return base + ["tests/test_kill_matrix.py", "-k", "named_by_the_rule or meant_for"]
    return base + ["scenarios", "--relay", args.relay]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--relay", default="relay_under_test/reference/relay.toml")
    parser.add_argument("--kill-matrix", action="store_true", help="loop the kill matrix instead of the suite")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--burners", type=int, default=2, help="CPU burner processes beside the runs")
    args = parser.parse_args(argv)
    cmd = command(args)
    burners = [subprocess.Popen([sys.executable, "-c", BURN]) for _ in range(args.burners)]
    failures: collections.Counter[str] = collections.Counter()
    walls, green = [], 0
    try:
        for i in range(1, args.runs + 1):
            t0 = time.monotonic()
            done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
            walls.append(time.monotonic() - t0)
            failed = re.findall(r"^(?:FAILED|ERROR) (\S+)", done.stdout, re.M)
            failures.update(failed)
            green += done.returncode == 0
            tail = (done.stdout.strip().splitlines() or ["(no output)"])[-1]
            print(f"run {i:2}/{args.runs}: exit {done.returncode}, {walls[-1]:5.1f} s, {tail}", flush=True)
            for name in failed:
                print(f"         failed: {name}", flush=True)
    finally:
        for b in burners:
            b.kill()
            b.wait()
    what = "kill matrix" if args.kill_matrix else f"suite against {args.relay}"
    print(
        f"\n{what}, {args.burners} CPU burners: {green}/{len(walls)} runs green, "
        f"median {statistics.median(walls):.1f} s"
    )
    for name, n in failures.most_common():
        print(f"  {n}x {name}")
    return 0 if green == len(walls) else 1


if __name__ == "__main__":
    sys.exit(main())
