"""What each attack on the harness's side costs, against the reference's same run, on a quiet machine.

    .venv/bin/python -m benchmarks.harness_side [--rounds 3]

Runs tests/test_red_team_harness.py in one process (no xdist), `rounds` times, with RELAYCHAOS_HOLD_TIME=1 so that
each attack is held to its time bound too (the reference's time x1.5, +1.5 s, and what the relay itself takes), and
prints a table of each attack's median figures: its run's time beside the reference's, and the peak memory the
harness's process, the account system and Toxiproxy gained in it, beside the reference's. Exits non-zero when any
round's tests failed. docs/sandbox.md has the figures.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINE = re.compile(
    r"ATTACK (?P<name>\S+): (?P<s>[\d.]+) s, harness \+(?P<h>-?[\d.]+) MiB, account system \+(?P<a>-?[\d.]+) MiB, "
    r"Toxiproxy \+(?P<t>-?[\d.]+) MiB.*?the reference's same run: (?P<rs>[\d.]+) s, harness \+(?P<rh>-?[\d.]+) MiB, "
    r"account system \+(?P<ra>-?[\d.]+) MiB, Toxiproxy \+(?P<rt>-?[\d.]+) MiB",
    re.M,
)


def one_round() -> tuple[int, list[dict[str, float | str]]]:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "tests/test_red_team_harness.py", "-q", "-s", "-p", "no:cacheprovider"],
        cwd=ROOT,
        env={**os.environ, "RELAYCHAOS_HOLD_TIME": "1"},
        capture_output=True,
        text=True,
        timeout=1800,
    )
    found = [
        {"name": m["name"], **{k: float(v) for k, v in m.groupdict().items() if k != "name"}}
        for m in LINE.finditer(done.stdout)
    ]
    if done.returncode != 0:
        print(done.stdout[-4000:], done.stderr[-2000:], sep="\n", file=sys.stderr)
    return done.returncode, found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    figures: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    failed = 0
    for n in range(args.rounds):
        code, found = one_round()
        failed += code != 0
        for row in found:
            for key, value in row.items():
                if key != "name":
                    figures[str(row["name"])][key].append(float(value))
        print(f"round {n + 1}: pytest exit {code}, {len(found)} attacks measured", flush=True)
    print(
        "| attack | run (s) | reference (s) | harness +MiB (ref) | account system +MiB (ref) | Toxiproxy +MiB (ref) |"
    )
    print("|---|---|---|---|---|---|")
    for name, f in sorted(figures.items()):
        m = {k: statistics.median(v) for k, v in f.items()}
        print(
            f"| `{name}` | {m['s']:.1f} | {m['rs']:.1f} | {m['h']:.0f} ({m['rh']:.0f}) | {m['a']:.0f} ({m['ra']:.0f}) "
            f"| {m['t']:.0f} ({m['rt']:.0f}) |"
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
