"""Benchmark: what the sandbox costs: a relay's start-to-healthy, and the suite's wall time.

    .venv/bin/python -m benchmarks.sandbox_cost [--starts 30] [--suite-rounds 3] [--relays reference,go]

1. Start-to-healthy: `serve` started by the supervisor (through relaychaos.stack.launch, the
   one way relay code starts) and polled until GET /health answers 200, with `--sandbox off`
   (the baseline: the command as it is, with the parent-death signal) and `--sandbox auto`, in
   turn, so that the machine's load falls on both alike; the median of each and the difference.
2. The suite (`pytest scenarios -n 2`) with RELAYCHAOS_SANDBOX=off and =auto, alternating;
   medians and their ratio.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def start_times(relay: Path, starts: int) -> dict[str, list[float]]:
    from relaychaos.sandbox.policy import Sandbox
    from relaychaos.stack import manifest
    from relaychaos.stack.supervisor import Supervisor

    work = Path(tempfile.mkdtemp(prefix="bench-sandbox-"))
    boxes = {"off": Sandbox.create("off"), "auto": Sandbox.create("auto")}
    times: dict[str, list[float]] = {mode: [] for mode in boxes}
    m = manifest.load(relay)
    try:
        for i in range(starts):
            for mode, box in boxes.items():
                ledger = box.ledger_dir(work / f"{mode}-{i}") / "ledger.sqlite"
                sup = Supervisor(
                    m,
                    workdir=work / f"{mode}-{i}",
                    account_url=f"http://{box.account_host}:9",
                    account_timeout_ms=300,
                    ledger_path=ledger,
                    sandbox=box,
                )
                t0 = time.perf_counter()
                sup.start("a")
                times[mode].append(time.perf_counter() - t0)
                sup.close()
    finally:
        for box in boxes.values():
            box.close()
    return times


def suite_times(rounds: int, relay: Path) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {"off": [], "auto": []}
    for _ in range(rounds):
        for mode in times:
            env = dict(os.environ, RELAYCHAOS_SANDBOX=mode)
            t0 = time.perf_counter()
            proc = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pytest",
                    "scenarios",
                    "-n",
                    "2",
                    "-q",
                    "-p",
                    "no:cacheprovider",
                    "--relay",
                    str(relay),
                ],
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
            )
            if proc.returncode != 0:
                sys.exit(f"the suite failed with --sandbox {mode}:\n{proc.stdout[-3000:]}")
            times[mode].append(time.perf_counter() - t0)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--starts", type=int, default=30)
    parser.add_argument("--suite-rounds", type=int, default=3)
    parser.add_argument("--relays", default="reference,go,stdlib,java")
    parser.add_argument("--suite-relays", default="reference,java")
    args = parser.parse_args()
    print(f"load average at the start: {os.getloadavg()[0]:.2f}")
    print("| relay | starts | `--sandbox off` | `--sandbox auto` | auto − off |\n|---|---|---|---|---|")
    for name in args.relays.split(","):
        relay = ROOT / "relay_under_test" / name / "relay.toml"
        t = start_times(relay, args.starts)
        off, auto = (statistics.median(t[k]) for k in ("off", "auto"))
        print(
            f"| {name} | {args.starts} | {off * 1000:.0f} ms | {auto * 1000:.0f} ms | {(auto - off) * 1000:+.0f} ms |",
            flush=True,
        )
    for name in args.suite_relays.split(",") if args.suite_rounds else ():
        t = suite_times(args.suite_rounds, ROOT / "relay_under_test" / name / "relay.toml")
        off, auto = statistics.median(t["off"]), statistics.median(t["auto"])
        print(
            f"suite (pytest scenarios -n 2, {name}), {args.suite_rounds} rounds each: off {off:.1f} s, "
            f"auto {auto:.1f} s, ratio {auto / off:.3f}",
            flush=True,
        )
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
