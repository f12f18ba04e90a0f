"""The soak figures: the reference and three mutants soaked at one rate, faults on; a table to compare.

    .venv/bin/python -m benchmarks.soak --rate 500 --duration 10m --mutant-duration 90s --seed 1

Each relay gets one `relaychaos soak` (a fresh process, its own run folder under
--out). The reference should hold every rule; check_then_insert, memory_ledger and
timeout_as_failed should each be caught within the first minute. Prints, per relay:
the exit status, transfers/s achieved of those asked, violations, the first one's
rule and time, the check's time, the harness's peak memory. Exit 0 when the
reference held and every mutant was caught within a minute.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MUTANTS = ("check_then_insert", "memory_ledger", "timeout_as_failed")
CAUGHT_WITHIN_S = 60.0


def soak(relay: Path, duration: str, args: argparse.Namespace, out: Path) -> dict:
    argv = [
        sys.executable,
        "-m",
        "relaychaos.commands.cli",
        "soak",
        "--relay",
        str(relay),
        "--duration",
        duration,
        "--rate",
        str(args.rate),
        "--seed",
        str(args.seed),
        "--out",
        str(out),
    ]
    t0 = time.monotonic()
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
    summary = json.loads((out / "summary.json").read_text()) if (out / "summary.json").exists() else {}
    return {
        "exit": proc.returncode,
        "wall_s": round(time.monotonic() - t0, 1),
        **summary,
        "tail": proc.stdout.strip().splitlines()[-4:] + proc.stderr.strip().splitlines()[-4:],
    }


def row(name: str, r: dict) -> str:
    fv = r.get("first_violation") or {}
    first = f"{fv['rule']} after {fv['after_s']:g} s" if fv else "-"
    return (
        f"| {name} | {r['exit']} | {r.get('duration_s', '?')} s | {r.get('rate_achieved', '?')} of "
        f"{r.get('rate_asked', '?')} | {r.get('transfers_sent', '?')} | {r.get('faults_done', '?')} | "
        f"{r.get('violations', '?')} | {first} | {r.get('history_events', '?')} events in "
        f"{r.get('check_s', '?')} s | {r.get('peak_rss_mib', '?')} MiB |"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=500)
    parser.add_argument("--duration", default="10m", help="the reference's soak")
    parser.add_argument("--mutant-duration", default="90s", help="each mutant's soak")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", default=f"runs/soak-bench-{time.strftime('%Y%m%d-%H%M%S')}")
    parser.add_argument("--only", help="comma-separated: reference and/or mutant names")
    args = parser.parse_args(argv)
    out = Path(args.out).resolve()
    relays = {"reference": (ROOT / "relay_under_test" / "reference" / "relay.toml", args.duration)}
    relays.update(
        {m: (ROOT / "relay_under_test" / "mutants" / m / "relay.toml", args.mutant_duration) for m in MUTANTS}
    )
    if args.only:
        relays = {k: v for k, v in relays.items() if k in args.only.split(",")}
    print(
        "| relay | exit | soaked | transfers/s achieved of asked | transfers | faults | violations | first "
        "violation | check | peak memory |\n|---|---|---|---|---|---|---|---|---|---|",
        flush=True,
    )
    results, ok = {}, True
    for name, (relay, duration) in relays.items():
        results[name] = r = soak(relay, duration, args, out / name)
        print(row(name, r), flush=True)
        fv = r.get("first_violation")
        if name == "reference":
            ok &= r["exit"] == 0
        else:
            ok &= r["exit"] == 1 and bool(fv) and fv["after_s"] <= CAUGHT_WITHIN_S
        if r["exit"] not in (0, 1):
            print("\n".join(f"    {line}" for line in r["tail"]), flush=True)
    (out / "bench.json").write_text(json.dumps(results, indent=2) + "\n")
    print(f"results in {out}/bench.json")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
