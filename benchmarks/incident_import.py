"""Benchmark: `relaychaos incident import` on a production-sized bundle: time and peak memory against its lines.

    .venv/bin/python -m benchmarks.incident_import [--lines 1000000,5000000] [--rounds 3] [--keep DIR] [--customers N]

1. For each size, a bundle is written by examples/incidents/oom_night.py (not kept unless --keep):
   the OOM night stretched to lines/5 transfers over its 35 minutes, as production logs them: per
   transfer, the channel's zap JSON lines `transfer started` and `transfer finished` and two noise
   lines (epoch milliseconds, two channel pods), one line of the core banking CSV journal (local
   times), the Kubernetes events, and the relay's SQLite ledger. About 220 bytes a line: 5 million
   lines are about 1.1 GB. The transfers move between --customers accounts (a million: most transfers
   touch an account no other did, as production's do; 5 million lines open about 860,000).
2. Each bundle is imported `--rounds` times, each in a fresh process (`incident import --no-shrink`,
   the whole night written as a scenario file, and its story cut, unshrunk). Reported per round: wall
   time, CPU time (user + system), the process's peak resident memory (its own rusage), and the load
   average (1 min) before and after; then the medians.

Exits 1 if an import fails, takes over 1 GiB of memory, or costs more than 12 reads of the logs --
medians. That cost is a ratio against a baseline measured beside it: the import's CPU time over the
CPU time of one plain read of the same logs in a fresh process (every JSON line parsed, every CSV row
split), taken just before and just after each round and averaged. This machine's CPU speed swings by
up to 2x from one minute to the next, so seconds and µs a line are printed, not judged (1M lines:
8.5 to 10.6 reads with the records on disk; a small bundle costs more reads, its start-up being a larger
part). The wall time also
counts the waits for a core, and is printed beside them with the load average.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from statistics import median

ROOT = Path(__file__).resolve().parent.parent
GENERATOR = ROOT / "examples" / "incidents" / "oom_night.py"
LINES_PER_TRANSFER = 5
# the import reads the night's records from disk in several passes (spill.py: reading, the census, the walk), so
# that its memory is a window's, not the night's: 10-11 reads of the logs, against 7.6 with the records in memory
READS_LIMIT, MEMORY_LIMIT_MIB = 12.0, 1024


def bundle(folder: Path, lines: int, customers: int = 1_000_000) -> int:
    """Write a bundle of about `lines` lines between `customers` accounts (in a process of its own: a child forked
    from a process holding the generator's gigabytes would count them in its peak memory); returns the lines
    written."""
    subprocess.run(
        [
            sys.executable,
            str(GENERATOR),
            str(folder),
            "--transfers",
            str(max(lines // LINES_PER_TRANSFER, 10)),
            "--noise",
            "2",
            "--customers",
            str(customers),
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return sum(sum(1 for _ in open(p, "rb")) for p in folder.iterdir() if p.suffix in (".jsonl", ".csv"))


READ = """
import csv, json, sys, time
from pathlib import Path
cpu = time.process_time()
for p in sorted(Path(sys.argv[1]).iterdir()):
    if p.suffix == ".jsonl":
        with open(p, encoding="utf-8") as f:
            for line in f:
                json.loads(line)
    elif p.suffix == ".csv":
        with open(p, encoding="utf-8", newline="") as f:
            for row in csv.reader(f):
                pass
print(time.process_time() - cpu)
"""


def read_cpu(folder: Path) -> float:
    """The CPU seconds of one plain read of the bundle's logs in a fresh process (every JSON line parsed, every
    CSV row split, nothing else): the baseline an import is judged against, measured beside it."""
    done = subprocess.run([sys.executable, "-c", READ, str(folder)], capture_output=True, text=True, check=True)
    return float(done.stdout.strip())


def one_round(folder: Path, out: Path) -> dict:
    """Import once in a fresh process: wall and CPU seconds, peak RSS, the load before and after, the output."""
    load0 = os.getloadavg()[0]
    t0 = time.monotonic()
    with tempfile.TemporaryFile("w+") as stdout, tempfile.TemporaryFile("w+") as stderr:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "relaychaos.commands.cli",
                "incident",
                "import",
                str(folder),
                "--out",
                str(out),
                "--no-shrink",
            ],
            stdout=stdout,
            stderr=stderr,
            text=True,
        )
        _, status, usage = os.wait4(proc.pid, 0)  # this child's own rusage: its CPU time and peak memory
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.monotonic() - t0
        stdout.seek(0)
        stderr.seek(0)
        return {
            "ok": proc.returncode == 0,
            "wall_s": wall,
            "cpu_s": usage.ru_utime + usage.ru_stime,
            "peak_mib": usage.ru_maxrss / 1024,
            "load": (load0, os.getloadavg()[0]),
            "stdout": stdout.read(),
            "stderr": stderr.read(),
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", default="1000000,5000000", help="bundle sizes, in lines, comma-separated")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--keep", help="keep the bundles and scenarios in this folder")
    parser.add_argument(
        "--customers",
        type=int,
        default=1_000_000,
        help="the accounts the transfers move between: by default a million, as production's nights touch a new "
        "account in most transfers (40: the example night's few customers, every account in many transfers)",
    )
    args = parser.parse_args(argv)
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="relaychaos-import-bench-"))
    failed = False
    try:
        for size in (int(s) for s in args.lines.split(",")):
            folder = work / f"bundle-{size}"
            shutil.rmtree(folder, ignore_errors=True)
            t0 = time.monotonic()
            lines = bundle(folder, size, args.customers)
            mb = sum(p.stat().st_size for p in folder.iterdir()) / 1e6
            print(f"bundle: {lines:,} lines, {mb:,.0f} MB (written in {time.monotonic() - t0:.0f} s)", flush=True)
            rounds = []
            for n in range(args.rounds):
                before = read_cpu(folder)
                r = one_round(folder, work / f"out-{size}")
                r["reads"] = r["cpu_s"] / ((before + read_cpu(folder)) / 2)
                rounds.append(r)
                print(
                    f"  round {n + 1}: {'ok' if r['ok'] else 'FAILED'}; wall {r['wall_s']:.1f} s, CPU "
                    f"{r['cpu_s']:.1f} s = {r['reads']:.1f} reads of the logs, peak {r['peak_mib']:.0f} MiB; "
                    f"load {r['load'][0]:.1f} → "
                    f"{r['load'][1]:.1f}",
                    flush=True,
                )
                if not r["ok"]:
                    print(r["stderr"][-2000:], file=sys.stderr)
                    failed = True
            cpu, peak, wall, reads = (median(r[k] for r in rounds) for k in ("cpu_s", "peak_mib", "wall_s", "reads"))
            loads = median(r["load"][0] for r in rounds)
            print(
                f"{lines:,} lines: median CPU {cpu:.1f} s ({cpu / lines * 1e6:.1f} µs a line, {reads:.1f} reads of "
                f"the logs), wall {wall:.1f} s "
                f"at load {loads:.1f}, peak {peak:.0f} MiB",
                flush=True,
            )
            progress = [line for r in rounds for line in r["stderr"].splitlines() if "reading" in line]
            if progress:
                print(f"  progress line, e.g.: {progress[0]}")
            if reads > READS_LIMIT or peak > MEMORY_LIMIT_MIB:
                print(f"over the limit: {READS_LIMIT:g} reads of the logs, and {MEMORY_LIMIT_MIB} MiB", file=sys.stderr)
                failed = True
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
