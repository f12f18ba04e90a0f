"""Benchmark: what the sandbox costs: a relay's start-to-healthy, and the suite's wall time.

    .venv/bin/python -m benchmarks.sandbox_cost [--starts 30] [--suite-rounds 3] [--relays reference,go]

1. Start-to-healthy: `serve` started by the supervisor and polled until GET /health
   answers 200, with `--sandbox off` and `--sandbox auto`, and, as the baseline, started
   bare (subprocess.Popen of its argv, no exec wrapper at all), in turn, so that the
   machine's load falls on all alike; the median of each. Off still goes through the
   exec wrapper (for the parent-death signal): auto - bare is the whole cost.
2. The suite (`pytest scenarios -n 2` on the reference relay) with RELAYCHAOS_SANDBOX=off
   and =auto, alternating; medians and their ratio.
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
    times: dict[str, list[float]] = {"bare": [], **{mode: [] for mode in boxes}}
    m = manifest.load(relay)
    try:
        for i in range(starts):
            times["bare"].append(bare_start(m, work / f"bare-{i}"))
            for mode, box in boxes.items():
                ledger = box.ledger_dir(f"bench-{i}", work / f"{mode}-{i}") / "ledger.sqlite"
                sup = Supervisor(m, workdir=work / f"{mode}-{i}", account_url="http://127.0.0.1:9",
                                 account_timeout_ms=300, ledger_path=ledger, sandbox=box)
                t0 = time.perf_counter()
                sup.start("a")
                times[mode].append(time.perf_counter() - t0)
                sup.close()
    finally:
        for box in boxes.values():
            box.close()
    return times


def bare_start(m, work: Path) -> float:
    """Start-to-healthy of serve spawned directly (no wrapper, no sandbox), as the supervisor would."""
    from relaychaos.stack.ports import lease_port
    from relaychaos.stack.processes import wait_http_ok

    work.mkdir(parents=True)
    port = lease_port()
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"],
               RELAY_HOST="127.0.0.1", RELAY_PORT=str(port), ACCOUNT_URL="http://127.0.0.1:9",
               LEDGER_PATH=str(work / "ledger.sqlite"), ACCOUNT_TIMEOUT_MS="300")
    t0 = time.perf_counter()
    proc = subprocess.Popen(list(m.commands["serve"]), cwd=m.folder, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    why = wait_http_ok(f"http://127.0.0.1:{port}/health", timeout_s=30)
    elapsed = time.perf_counter() - t0
    proc.kill()
    proc.wait()
    if why:
        sys.exit(f"bare start failed: {why}")
    return elapsed


def suite_times(rounds: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {"off": [], "auto": []}
    for _ in range(rounds):
        for mode in times:
            env = dict(os.environ, RELAYCHAOS_SANDBOX=mode)
            t0 = time.perf_counter()
            proc = subprocess.run([sys.executable, "-m", "pytest", "scenarios", "-n", "2", "-q", "-p",
                                   "no:cacheprovider"], cwd=ROOT, env=env, capture_output=True, text=True)
            if proc.returncode != 0:
                sys.exit(f"the suite failed with --sandbox {mode}:\n{proc.stdout[-3000:]}")
            times[mode].append(time.perf_counter() - t0)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--starts", type=int, default=30)
    parser.add_argument("--suite-rounds", type=int, default=3)
    parser.add_argument("--relays", default="reference,go,java")
    args = parser.parse_args()
    print("| relay | starts | bare (no wrapper) | --sandbox off | --sandbox auto | auto − bare |\n"
          "|---|---|---|---|---|---|")
    for name in args.relays.split(","):
        relay = ROOT / "relay_under_test" / name / "relay.toml"
        t = start_times(relay, args.starts)
        bare, off, auto = (statistics.median(t[k]) for k in ("bare", "off", "auto"))
        print(f"| {name} | {args.starts} | {bare * 1000:.0f} ms | {off * 1000:.0f} ms | {auto * 1000:.0f} ms | "
              f"{(auto - bare) * 1000:+.0f} ms |", flush=True)
    if args.suite_rounds:
        t = suite_times(args.suite_rounds)
        off, auto = statistics.median(t["off"]), statistics.median(t["auto"])
        print(f"\nsuite (pytest scenarios -n 2, reference), {args.suite_rounds} rounds each: off {off:.1f} s, "
              f"auto {auto:.1f} s, ratio {auto / off:.3f}")


if __name__ == "__main__":
    main()
