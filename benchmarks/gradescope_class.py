"""Benchmark: the bundled class graded one submission at a time inside Gradescope's smallest container (emulated).

    .venv/bin/python -m benchmarks.gradescope_class [--rounds 1] [--cpus 0.5] [--memory-mib 768]
        [--budget-s auto] [--parallel 1] [--baseline DIR] [--out runs/gradescope-bench]

Each submission of the class (benchmarks.grade_class.CLASS) is graded by
scripts/gradescope_emulation.py: `relaychaos grade --gradescope` in a cgroup of `--cpus` CPU and
`--memory-mib` MiB, killed at 600 s as Gradescope would; `--parallel` containers side by side,
as a Gradescope host runs several (each keeps its own CPU quota). Prints per submission (the correct relays
first) its score, its wall time, peak memory, OOM kills and CPU throttling; then the class's total
time, the medians, the ratio of the medians to the baseline's, and the load average. The baseline
is the class on free cores: the gradebook of a `benchmarks.grade_class` round given with
--baseline (read when the rounds are done, so it may be graded meanwhile), else one graded first
in this run. Exit 1 when a score differs from the baseline's, an OOM kill happened, or a
submission ran into the 10-minute limit.
The records of each round land in OUT/roundN/<name>/results/ (each named "submission", as on
Gradescope: they are known here by their folder); then every round is compared with the
baseline as benchmarks.grade_class compares its rounds: the same score and the same words.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.grade_class import CORRECT, compare, fingerprints, load_records, one_round

ROOT = Path(__file__).resolve().parent.parent
LIMIT_S = 600.0


def submissions() -> list[Path]:
    """The bundled class, the correct relays first (a false alarm on them matters most), then the broken ones."""
    from benchmarks.grade_class import CLASS
    from relaychaos.grading.submissions import find

    found = [s.folder for s in find([str(ROOT / pattern) for pattern in CLASS])]
    return sorted(found, key=lambda f: f.name not in CORRECT)


def emulate(folder: Path, root: Path, cpus: float, memory_mib: int, budget_s: str) -> dict:
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "gradescope_emulation.py"),
            str(folder),
            "--root",
            str(root),
            "--cpus",
            str(cpus),
            "--memory-mib",
            str(memory_mib),
            "--timeout-s",
            str(LIMIT_S),
            "--",
            "--budget-s",
            budget_s,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        sys.exit(f"the emulation of {folder.name} failed:\n{done.stdout}\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--cpus", type=float, default=0.5)
    parser.add_argument("--memory-mib", type=int, default=768)
    parser.add_argument("--budget-s", default="auto", help="relaychaos grade's --budget-s inside")
    parser.add_argument("--parallel", type=int, default=1, help="emulated containers side by side")
    parser.add_argument("--baseline", type=Path, help="a gradebook of the class graded on free cores")
    parser.add_argument("--out", default="runs/gradescope-bench")
    args = parser.parse_args()
    out = (ROOT / args.out).resolve()
    if not args.baseline:
        wall, _ = one_round(out / "baseline", 0)
        print(
            f"baseline on free cores: class of {len(_)} in {wall:.0f} s, load average {os.getloadavg()[0]:.1f}",
            flush=True,
        )
    where = args.baseline or out / "baseline"  # read once the rounds are done: it may be graded meanwhile
    rounds, problems = [], []
    for n in range(1, args.rounds + 1):
        print(
            f"\nround {n}: | submission | score | wall s | peak MiB | OOM kills | throttled s |\n"
            "|---|---|---|---|---|---|",
            flush=True,
        )
        started, rows = time.monotonic(), []
        with concurrent.futures.ThreadPoolExecutor(max(1, args.parallel)) as pool:
            running = {
                pool.submit(
                    emulate, folder, out / f"round{n}" / folder.name, args.cpus, args.memory_mib, args.budget_s
                ): folder
                for folder in submissions()
            }
            finished = [(running[f], f.result()) for f in concurrent.futures.as_completed(running)]
        order = [f.name for f in submissions()]
        finished.sort(key=lambda pair: order.index(pair[0].name))
        for folder, row in finished:
            rows.append({**row, "name": folder.name})
            print(
                f"| {folder.name} | {row['score']} | {row['wall_s']} | {row['peak_mib']} | "
                f"{row['oom_kills']} | {row['throttled_s']} |",
                flush=True,
            )
            problems += [f"round {n} {folder.name}: {row['oom_kills']} OOM kill(s)"] * bool(row["oom_kills"])
            problems += [f"round {n} {folder.name}: killed at {LIMIT_S:g} s"] * row["killed_at_limit"]
        walls = [r["wall_s"] for r in rows]
        baseline = load_records(Path(where))
        free_med = statistics.median(r["execution_time_s"] for r in baseline.values())
        print(
            f"round {n}: class of {len(rows)} in {time.monotonic() - started:.0f} s at {args.cpus:g} CPU and "
            f"{args.memory_mib} MiB, {args.parallel} side by side; per submission median "
            f"{statistics.median(walls):.1f} s (correct relays "
            f"{statistics.median(r['wall_s'] for r in rows if r['name'] in CORRECT):.1f} s), max {max(walls):.1f} s; "
            f"ratio of medians to free cores {statistics.median(walls) / free_med:.2f}; peak memory max "
            f"{max(r['peak_mib'] for r in rows)} MiB; OOM kills {sum(r['oom_kills'] for r in rows)}; load average "
            f"{os.getloadavg()[0]:.1f}",
            flush=True,
        )
        rounds.append(fingerprints(load_records(out / f"round{n}")))
    for name, record in rounds[-1].items():
        free = baseline.get(name, {}).get("score")
        problems += [f"{name}: {record['score']} here, {free} on free cores"] * (record["score"] != free)
    problems += compare([fingerprints(baseline), *rounds])
    if problems:
        print("\nproblems:\n  " + "\n  ".join(problems))
        sys.exit(1)


if __name__ == "__main__":
    main()
