"""Benchmark: the chaos suite's wall time, and how fast each broken relay is caught.

    .venv/bin/python -m benchmarks.suite_speed [--rounds 3]

1. `pytest scenarios -n 2` against the reference relay, timed end to end (process
   start to exit), against a baseline measured in the same run: the same command
   selecting only `happy-path` (the fixed cost of pytest, xdist, Toxiproxy and the
   account system starting).
2. Every broken relay against each scenario meant to catch it (tests/test_kill_matrix.py),
   one at a time: seconds from the scenario's start to its verdict.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from relaychaos.relay_under_test.mutants.table import MUTANTS
from relaychaos.run.chaos import run_and_check
from relaychaos.run.definition import RunDefinition
from relaychaos.run.services import Services
from relaychaos.scenarios import ALL
from relaychaos.stack import manifest

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "relay_under_test" / "reference" / "relay.toml"


def timed(argv: list[str]) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"benchmark run failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}")
    return time.perf_counter() - t0


def catch_times() -> list[tuple[str, str, float, bool]]:
    work = Path(tempfile.mkdtemp(prefix="bench-catch-"))
    # sandbox off, as before Stack required one: the benchmark measures the relay and the harness, not the sandbox
    run = RunDefinition.build({"relay": REFERENCE, "sandbox": "off"})
    out = []
    with Services(run, work) as services:
        for mutant in MUTANTS:
            relay = mutant.name
            for name in mutant.caught_by:
                sc = ALL[name]
                with services.stack(
                    work / f"{relay}-{name}",
                    name,
                    manifest=manifest.load(mutant.manifest),
                    accounts=sc.accounts,
                    account_timeout_ms=sc.account_timeout_ms,
                ) as stack:
                    t0 = time.perf_counter()
                    result = run_and_check(stack, sc)
                    out.append((relay, name, time.perf_counter() - t0, not result.ok))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    py = [sys.executable, "-m", "pytest", "scenarios", "-n", "2", "-q", "-p", "no:cacheprovider"]
    suite, base = [], []
    for rnd in range(args.rounds):
        base.append(timed(py + ["-k", "happy-path"]))
        suite.append(timed(py))
        print(
            f"round {rnd + 1}: whole suite {suite[-1]:.1f} s, baseline (happy-path only) {base[-1]:.1f} s", flush=True
        )
    catches = catch_times()
    for relay, name, secs, caught in catches:
        print(f"  {relay:>24} by {name:<32} {secs:5.2f} s {'caught' if caught else 'NOT CAUGHT'}")
    s, b = statistics.median(suite), statistics.median(base)
    secs = [c[2] for c in catches]
    print(
        f"\nwhole suite against the reference, -n 2: median {s:.1f} s over {args.rounds} rounds "
        f"(baseline {b:.1f} s; {s / b:.1f}x)"
    )
    print(
        f"broken relays caught: {sum(c[3] for c in catches)}/{len(catches)} pairs; seconds from scenario start to "
        f"verdict: median {statistics.median(secs):.2f}, max {max(secs):.2f}"
    )


if __name__ == "__main__":
    main()
