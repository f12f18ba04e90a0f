"""Benchmark: `relaychaos run` as a CI job runs it, against every bundled broken relay and the correct ones.

    .venv/bin/python -m benchmarks.ci_run [--correct-rounds 3] [--today /path/to/earlier/checkout]
                                          [--today-broken unknown_resent,timeout_as_failed]

1. The correct relays (reference, go, stdlib, java), `--correct-rounds` times each: `relaychaos
   run --relay R` with the default budget (quick; ci where CI is set), timed from process start to
   exit; each must exit 0. With --today DIR (a checkout of an earlier commit, with its own .venv,
   tools/bin and built Go and Java relays), each is also run by that checkout's `relaychaos run`,
   alternating with this one's: the ratio now / today per relay.
2. Every bundled broken relay (relay_under_test/mutants/table.py: base and the mutants), once, each
   followed by a correct relay (the four in turn), so that both see the same load on a shared
   machine: the broken relays' median and max, and their ratio to the median of the correct runs
   interleaved with them. Each broken relay must exit 1: caught.
3. With --today-broken, those broken relays are also run by the earlier checkout (whose machine
   hunts and shrinks what the named scenarios found); with --hunt-broken, by this checkout with
   --hunt and CI=1 (the ci budget: the machine finds the bug and shrinks it within 10 s).

Each line is printed as it is measured, with the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORRECT = ("reference", "go", "stdlib", "java")


def load() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def run(checkout: Path, relay: Path, out: Path, *extra: str, env: dict | None = None) -> tuple[float, int, dict]:
    """(wall seconds, exit status, what results.json says of the machine) of one `relaychaos run`."""
    t0 = time.perf_counter()
    done = subprocess.run(
        [str(checkout / ".venv" / "bin" / "relaychaos"), "run", "--relay", str(relay), "--out", str(out), *extra],
        cwd=checkout,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
    )
    wall = time.perf_counter() - t0
    try:
        data = json.loads((out / "results.json").read_text())
        stateful = next((s for s in data["scenarios"] if "test_random_stories" in s["nodeid"]), {})
        info = stateful.get("stateful") or {}
        machine = {
            "outcome": stateful.get("outcome"),
            "failed": data["summary"]["failed"],
            "examples": info.get("examples"),
            "shrink_s": info.get("shrink_s"),
            "shrunk": info.get("shrunk"),
        }
    except (OSError, ValueError, KeyError):
        machine = {}
    return wall, done.returncode, machine


def line(label: str, wall: float, rc: int, machine: dict) -> None:
    examples = machine.get("examples")
    shrunk = (
        ""
        if machine.get("shrink_s") is None
        else f"  shrunk {machine['shrink_s']:g} s ({'to its end' if machine.get('shrunk') else 'cut by the budget'})"
    )
    print(
        f"{label:<34} {wall:6.1f} s  exit {rc}  failed {machine.get('failed', '?'):>2}  machine "
        f"{machine.get('outcome') or '-':<8} examples {'-' if examples is None else examples:<4}{shrunk}  "
        f"load {load()}",
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--correct-rounds", type=int, default=3, help="rounds of the correct relays (0: none)")
    parser.add_argument("--today", type=Path, help="an earlier checkout to time the correct relays against")
    parser.add_argument("--today-broken", default="", help="broken relays to time with the earlier checkout too")
    parser.add_argument("--hunt-broken", default="", help="broken relays to time with --hunt and CI=1 too")
    parser.add_argument("--only", default="", help="only these broken relays (comma-separated names)")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from relaychaos.relay_under_test.mutants.table import BY_NAME, MUTANTS

    work = Path(tempfile.mkdtemp(prefix="bench-ci-run-"))
    print(f"load average at start: {' '.join(Path('/proc/loadavg').read_text().split()[:3])}", flush=True)
    correct: dict[str, list[float]] = {name: [] for name in CORRECT}
    today: dict[str, list[float]] = {name: [] for name in CORRECT}
    bad = []
    for rnd in range(args.correct_rounds):
        for name in CORRECT:
            relay = ROOT / "relay_under_test" / name / "relay.toml"
            pairs = [("now", ROOT, correct)] + ([("today", args.today, today)] if args.today else [])
            for label, checkout, into in pairs if rnd % 2 == 0 else pairs[::-1]:
                wall, rc, machine = run(checkout, relay, work / f"{label}-{name}-{rnd}")
                into[name].append(wall)
                line(f"round {rnd + 1} {name} ({label})", wall, rc, machine)
                bad += [f"{name} ({label}) exited {rc}"] if rc != 0 else []
    broken: dict[str, float] = {}
    beside: list[float] = []  # the correct runs interleaved with the broken ones
    chosen = [m for m in MUTANTS if not args.only or m.name in args.only.split(",")]
    for i, mutant in enumerate(chosen):
        wall, rc, machine = run(ROOT, mutant.manifest, work / f"now-{mutant.name}")
        broken[mutant.name] = wall
        line(f"{mutant.name} (now)", wall, rc, machine)
        bad += [f"{mutant.name} exited {rc}, not caught"] if rc != 1 else []
        name = CORRECT[i % len(CORRECT)]
        wall, rc, machine = run(ROOT, ROOT / "relay_under_test" / name / "relay.toml", work / f"beside-{i}-{name}")
        beside.append(wall)
        line(f"  beside it: {name} (now)", wall, rc, machine)
        bad += [f"{name} (now) exited {rc}"] if rc != 0 else []
    for name in filter(None, args.today_broken.split(",")):
        wall, rc, machine = run(args.today, BY_NAME[name].manifest, work / f"today-{name}")
        line(f"{name} (today)", wall, rc, machine)
    for name in filter(None, args.hunt_broken.split(",")):
        wall, rc, machine = run(ROOT, BY_NAME[name].manifest, work / f"hunt-{name}", "--hunt", env={"CI": "1"})
        line(f"{name} (now, --hunt, CI=1)", wall, rc, machine)
    summarize(correct, today, broken, beside)
    for problem in bad:
        print(f"PROBLEM: {problem}")
    return 1 if bad else 0


def summarize(correct: dict, today: dict, broken: dict, beside: list[float]) -> None:
    every = [w for walls in correct.values() for w in walls]
    if every:
        print(f"\ncorrect relays, median of every run in the rounds: {statistics.median(every):.1f} s")
    for name, walls in correct.items():
        if not walls:
            continue
        vs = (
            f"; today {statistics.median(today[name]):.1f} s, ratio now/today "
            f"{statistics.median(walls) / statistics.median(today[name]):.2f}"
            if today[name]
            else ""
        )
        print(f"  {name:<10} median {statistics.median(walls):.1f} s over {len(walls)} runs{vs}")
    if broken:
        walls, base = sorted(broken.values()), statistics.median(beside)
        worst = max(broken, key=broken.get)
        print(
            f"broken relays ({len(walls)}): median {statistics.median(walls):.1f} s, max {walls[-1]:.1f} s "
            f"({worst}); the correct runs beside them: median {base:.1f} s, max {max(beside):.1f} s; ratio "
            f"broken / correct {statistics.median(walls) / base:.2f} (medians), {walls[-1] / base:.2f} (max)"
        )
    print(f"load average at the end: {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")


if __name__ == "__main__":
    sys.exit(main())
