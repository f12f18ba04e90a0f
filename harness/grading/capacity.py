"""The CPU and memory a grade is given, and what fits in them: the number of workers, and a warning up front.

    cap = measure()            # Capacity(cpus=0.5, memory_mib=768.0): cgroup v1 / v2 limits and CPU affinity
    workers("auto")            # pytest-xdist workers that fit cap.cpus
    budget_s("auto")           # a submission's wall budget for cap.cpus
    warnings(cap)              # [] when the grade holds there; else what is short and what holds

A container's CPU limit is a CFS quota (Gradescope's default: 0.5 vCPU, 768 MB); the
harness's own cgroup and each ancestor may have one, and the smallest counts. The sizes
below are Gradescope's smallest container, the one grades are meant to hold in; what was
measured there with scripts/gradescope_emulation.py is in docs/grading.md ("Gradescope's
smallest container").
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from relaychaos.errors import HarnessError

MIN_CPUS = 0.5  # Gradescope's smallest container: less is said up front
MIN_MEMORY_MIB = 768  # likewise, its memory
NO_LIMIT = 1 << 60


@dataclass(frozen=True)
class Capacity:
    cpus: float
    memory_mib: float | None  # None: no limit found


def _own(controller: str) -> Path | None:
    """This process's cgroup folder for a v1 controller (or the v2 one, controller ''), if mounted."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, names, path = line.split(":", 2)
        if controller in names.split(",") or (controller == "" and names == ""):
            for root in (
                Path("/sys/fs/cgroup") / controller,
                Path("/sys/fs/cgroup/cpu,cpuacct"),
                Path("/sys/fs/cgroup/unified"),
                Path("/sys/fs/cgroup"),
            ):
                if root.is_dir() and (root / path.lstrip("/")).is_dir():
                    return root / path.lstrip("/")
    return None


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _ancestors(folder: Path | None) -> Iterator[Path]:
    while folder is not None and folder.name and folder != folder.parent:
        yield folder
        if not (folder.parent / "cgroup.procs").exists():
            return
        folder = folder.parent


def cpu_limit() -> float:
    """CPUs this process may use: affinity, and the smallest CFS quota of its cgroups (v1, then v2)."""
    cpus = float(len(os.sched_getaffinity(0)))
    for folder in _ancestors(_own("cpu")):
        quota, period = _read(folder / "cpu.cfs_quota_us"), _read(folder / "cpu.cfs_period_us")
        if quota and period and int(quota) > 0:
            cpus = min(cpus, int(quota) / int(period))
    for folder in _ancestors(_own("")):
        spec = (_read(folder / "cpu.max") or "max").split()
        if spec[0] != "max":
            cpus = min(cpus, int(spec[0]) / int(spec[1]))
    return cpus


def memory_limit_mib() -> float | None:
    """The smallest memory limit of this process's cgroups (v1, then v2), in MiB; None: none."""
    limit = NO_LIMIT
    for folder in _ancestors(_own("memory")):
        value = _read(folder / "memory.limit_in_bytes")
        if value and value.isdigit():
            limit = min(limit, int(value))
    for folder in _ancestors(_own("")):
        value = _read(folder / "memory.max")
        if value and value.isdigit():
            limit = min(limit, int(value))
    return None if limit >= NO_LIMIT >> 4 else limit / 2**20


def measure() -> Capacity:
    return Capacity(cpu_limit(), memory_limit_mib())


def workers(arg: str | int, cap: Capacity | None = None) -> int:
    """`--workers`: a number as given, or for "auto" 3 on two CPUs or more (they mostly wait on timers), 2 on one,
    1 below."""
    if str(arg) != "auto":
        try:
            return max(1, int(arg))
        except ValueError:
            raise HarnessError(
                f"--workers {arg!r} is neither a number nor auto", fix="--workers auto, or e.g. 2"
            ) from None
    cpus = (cap or measure()).cpus
    return 3 if cpus >= 2 else 2 if cpus >= 1 else 1


BUDGET_S = 120.0  # a submission's wall budget on two free CPUs


def budget_s(arg: str | float, cap: Capacity | None = None) -> float:
    """`--budget-s`: seconds as given, or for "auto" 120 s on two CPUs or more and 120 x 2/CPUs on less (480 s at
    Gradescope's 0.5 CPU, within its 10 minutes): a grade cut at its budget is not scored, so the budget follows
    the CPU the grade is given."""
    if str(arg) != "auto":
        try:
            value = float(arg)
        except ValueError:
            value = 0.0
        if value <= 0:
            raise HarnessError(
                f"--budget-s {arg!r} is neither a positive number of seconds nor auto",
                fix="--budget-s auto, or e.g. 300",
            )
        return value
    cpus = (cap or measure()).cpus
    return round(BUDGET_S * max(1.0, 2.0 / max(cpus, 0.01)), 1)


def warnings(cap: Capacity) -> list[str]:
    """What is short of the smallest size a grade was shown to hold in, said before anything runs."""
    out = []
    if cap.cpus < MIN_CPUS:
        out.append(
            f"this grade has {cap.cpus:g} CPU (its cgroup's quota); grades are meant for "
            f"{MIN_CPUS:g} CPU or more (Gradescope's smallest container): below it, timing rules may fail correct "
            f"relays. Give it at least {MIN_CPUS:g} "
            "CPU (docs/grading.md)"
        )
    if cap.memory_mib is not None and cap.memory_mib < MIN_MEMORY_MIB:
        out.append(
            f"this grade has {cap.memory_mib:.0f} MiB of memory (its cgroup's limit); grades are meant for "
            f"{MIN_MEMORY_MIB} MiB or more: below it, the kernel may kill a relay or the harness. Give "
            f"it at least {MIN_MEMORY_MIB} MiB (docs/grading.md)"
        )
    return out
