"""What one run costs the harness's side: its time, and the peak memory of the harness (this process), the account
system and Toxiproxy during it.

A process's peak resident set is reset before the run (`5` into /proc/PID/clear_refs, Linux 4.0+, as root for
another's), so that `resource.getrusage(RUSAGE_SELF).ru_maxrss` (this process) and VmHWM (the others) are the run's
own peak, whatever earlier runs of the worker took; memory freed before it is handed back first (gc, malloc_trim).
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import os
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TIME_RATIO, TIME_SLACK_S, MEMORY_MIB = 1.5, 1.5, 50  # the bounds: the reference's time x1.5 (+1.5 s of noise), +50 MiB
# Time is held only where the machine is quiet (benchmarks.harness_side sets this): under make test's four workers
# on two cores a run's time says more about its neighbours than about the harness; there it is reported
HOLD_TIME = os.environ.get("RELAYCHAOS_HOLD_TIME") == "1"


def kib(pid: int | str, key: str) -> int:
    """VmRSS, VmHWM, ... of a process in KiB (0 when it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def reset_peak(pid: int | str) -> None:
    with contextlib.suppress(OSError):
        Path(f"/proc/{pid}/clear_refs").write_text("5")


def trim() -> None:
    """Hand back to the system what this process has freed, so that its peak starts from what it holds."""
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def toxiproxy_pid(url: str) -> int | None:
    """The toxiproxy-server listening on `url`'s port, found by its command line (None: not a process here)."""
    port = url.rsplit(":", 1)[-1].strip("/")
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"toxiproxy-server") and port.encode() in argv:
            return int(entry.name)
    return None


class BeyondBounds(AssertionError):
    """A run of an attack cost the harness's side more than the bounds allow: what, against the reference."""


@dataclass
class Cost:
    """One run: seconds, and peak MiB above what each process held when it began."""

    seconds: float
    harness_mib: float
    fixture_mib: float
    toxiproxy_mib: float
    history_mib: float
    result: Any = field(repr=False, default=None)
    logs: str = field(repr=False, default="")  # the end of the stack's logs, for the attack's evidence
    fixture_after_mib: float = 0.0  # what the account system still holds once the stack is closed (reported)

    def said(self) -> str:
        return (
            f"{self.seconds:.1f} s, harness +{self.harness_mib:.0f} MiB, account system +{self.fixture_mib:.0f} MiB, "
            f"Toxiproxy +{self.toxiproxy_mib:.0f} MiB, history {self.history_mib:.1f} MiB, account system after the "
            f"stack closed +{self.fixture_after_mib:.0f} MiB"
        )

    def within(self, reference: Cost, owed_s: float = 0.0, unheld: tuple[str, ...] = ()) -> list[str]:
        """What of this run is beyond the bounds, against the reference's same run ([]: nothing); `owed_s`: time the
        relay may take on top (a time-out the channel waits out, its own start); `unheld`: figures only reported."""
        over = []
        if HOLD_TIME and self.seconds > reference.seconds * TIME_RATIO + TIME_SLACK_S + owed_s:
            over.append(
                f"time {self.seconds:.1f} s > {TIME_RATIO}x the reference's {reference.seconds:.1f} s"
                + (f" + {owed_s:g} s owed" if owed_s else "")
            )
        for what in sorted({"harness_mib", "fixture_mib", "toxiproxy_mib", "history_mib"} - set(unheld)):
            mine, theirs = getattr(self, what), getattr(reference, what)
            if mine > theirs + MEMORY_MIB:
                over.append(f"{what} {mine:.0f} > the reference's {theirs:.0f} + {MEMORY_MIB}")
        return over

    def hold(self, reference: Cost, owed_s: float = 0.0, unheld: tuple[str, ...] = ()) -> None:
        """BeyondBounds unless this run is within the bounds against the reference's (see within)."""
        over = self.within(reference, owed_s, unheld)
        if over:
            raise BeyondBounds(f"{'; '.join(over)} ({self.said()})")


def measured(run: Callable[[], Any], fixture_pid: int | None, toxiproxy: int | None) -> Cost:
    """Run `run()` (a ChaosResult, or anything with no history_path) and what it cost."""
    trim()
    pids = [p for p in (fixture_pid, toxiproxy) if p is not None]
    for pid in ("self", *pids):
        reset_peak(pid)
    start = {pid: kib(pid, "VmRSS") for pid in ("self", *pids)}
    began = time.monotonic()
    result = run()
    seconds = time.monotonic() - began
    harness = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - start["self"]

    def grew(pid: int | None) -> float:
        return 0.0 if pid is None else (kib(pid, "VmHWM") - start[pid]) / 1024

    path = getattr(result, "history_path", None)
    history = Path(path).stat().st_size / 2**20 if path is not None and Path(path).exists() else 0.0
    return Cost(seconds, harness / 1024, grew(fixture_pid), grew(toxiproxy), history, result)


def report(name: str, cost: Cost, reference: Cost) -> str:
    verdicts = sorted({v.rule for v in getattr(cost.result, "verdicts", ())})
    line = f"ATTACK {name}: {cost.said()}, verdicts {verdicts}; the reference's same run: {reference.said()}"
    print(line, flush=True)
    return line
