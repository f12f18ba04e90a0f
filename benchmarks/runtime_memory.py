"""Benchmark: what each relay runtime needs inside the sandbox, to choose its limits.

    .venv/bin/python -m benchmarks.runtime_memory [--relays reference,go,java] [--scenarios race-32-two-relays,...]

For each relay, with the sandbox on (auto, as root: a uid of its own):
1. the named scenarios are run while every process of the sandbox's uid is sampled
   every 20 ms: the peak VmData (what RLIMIT_DATA counts), the peak VmHWM (resident
   memory) of any one process, and the peak number of tasks (threads, which
   RLIMIT_NPROC counts) of the uid altogether;
2. the smallest data limit (`--sandbox-limit data_mib`, in steps of 8 MiB) with
   which `serve` still starts and answers /health, found by bisection.
"""

from __future__ import annotations

import argparse
import tempfile
import threading
from pathlib import Path

from relaychaos.errors import RelayError
from relaychaos.run.chaos import run_and_check
from relaychaos.run.definition import RunDefinition
from relaychaos.run.services import Services
from relaychaos.sandbox.policy import Limits, Sandbox
from relaychaos.sandbox.slots import mib, statuses
from relaychaos.scenarios import ALL
from relaychaos.stack import manifest
from relaychaos.stack.supervisor import Supervisor

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = (
    "race-32-two-relays,dropped-response-downstream,kill-after-applied-before-done,reprocess-races-channel-resend"
)


def sample(uid: int, stop: threading.Event, peaks: dict[str, int]) -> None:
    while not stop.wait(0.02):
        tasks = 0
        for _, fields in statuses(uid):
            tasks += int(fields.get("Threads", "1"))
            for key in ("VmData", "VmHWM"):
                peaks[key] = max(peaks[key], mib(fields, key))
        peaks["tasks"] = max(peaks["tasks"], tasks)


def peaks_under_scenarios(relay: Path, names: list[str]) -> dict[str, int]:
    run = RunDefinition.build({"relay": relay, "sandbox": "auto"})  # the sandbox's needs are what is measured
    peaks = {"VmData": 0, "VmHWM": 0, "tasks": 0}
    stop = threading.Event()
    work = Path(tempfile.mkdtemp(prefix="bench-mem-"))
    with Services(run, work) as services:
        sampler = threading.Thread(target=sample, args=(services.sandbox.slot.uid, stop, peaks), daemon=True)
        sampler.start()
        try:
            for name in names:
                sc = ALL[name]
                with services.stack(
                    work / name, name, accounts=sc.accounts, account_timeout_ms=sc.account_timeout_ms
                ) as st:
                    result = run_and_check(st, sc)
                    if not result.ok:
                        print(f"  note: {relay.parent.name} broke a rule in {name}: {result.verdicts[0].summary}")
        finally:
            stop.set()
            sampler.join()
    return peaks


def smallest_data_limit(relay: Path) -> int:
    """A supervisor alone (no Toxiproxy, no account system: only whether serve starts), in a sandbox of its own
    with the data limit tried."""

    def starts(mib: int) -> bool:
        box = Sandbox.create("auto", Limits(data_mib=mib))
        work = Path(tempfile.mkdtemp(prefix="bench-mem-min-"))
        sup = Supervisor(
            manifest.load(relay),
            workdir=work,
            account_url="http://127.0.0.1:9",
            account_timeout_ms=300,
            ledger_path=box.ledger_dir(work) / "ledger.sqlite",
            sandbox=box,
        )
        sup._diagnose = lambda argv, port: None  # only whether it starts
        try:
            sup.start("a")
            return True
        except RelayError:
            return False
        finally:
            sup.close()
            box.close()

    low, high = 8, 4096  # low fails (assumed), high starts
    if not starts(high):
        return -1
    while high - low > 8:
        mid = (low + high) // 2
        low, high = (low, mid) if starts(mid) else (mid, high)
    return high


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--relays", default="reference,go,java")
    parser.add_argument("--scenarios", default=SCENARIOS)
    args = parser.parse_args()
    print(
        "| relay | peak VmData (one process) | peak resident (VmHWM) | peak tasks of the uid | smallest data_mib "
        "that starts |\n|---|---|---|---|---|"
    )
    for name in args.relays.split(","):
        relay = ROOT / "relay_under_test" / name / "relay.toml"
        p = peaks_under_scenarios(relay, args.scenarios.split(","))
        print(
            f"| {name} | {p['VmData']} MiB | {p['VmHWM']} MiB | {p['tasks']} | {smallest_data_limit(relay)} MiB |",
            flush=True,
        )


if __name__ == "__main__":
    main()
