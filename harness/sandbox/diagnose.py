"""Why a relay's serve would not start in the sandbox: which layer stops it, and what it needs.

Called only after a failed start. It starts serve again with one layer loosened at
a time (the rlimits, then Landlock, then the whole sandbox), and the first variant
that answers /health names the layer. With the rlimits off it also measures what
the relay uses once ready (data size, threads), so that the message can give the
need and the `--sandbox-limit` that would fit it. None when serve fails even with
no sandbox: then the relay itself is at fault, and the ordinary message stands.
"""
from __future__ import annotations

import math
from dataclasses import replace
from typing import Callable

from relaychaos.sandbox.plan import Plan
from relaychaos.sandbox.policy import Limits
from relaychaos.sandbox.slots import mib, statuses
from relaychaos.stack.processes import Child, wait_http_ok


def usage(pgid: int) -> tuple[int, int]:
    """(largest VmData in MiB, threads in all) over the processes of process group `pgid`."""
    group = [f for _, f in statuses() if int(f.get("NSpgid", "0").split()[-1]) == pgid]
    return max((mib(f, "VmData") for f in group), default=0), sum(int(f.get("Threads", "1")) for f in group)


def diagnose(launch: Callable[[Plan], Child], plan: Plan, health_url: str, timeout_s: float,
             limits: Limits) -> str | None:
    """The layer that keeps serve from starting, with its need and the flag to change (see the module doc)."""
    variants = [("rlimits", replace(plan, rlimits={})), ("landlock", replace(plan, landlock_abi=0)),
                ("uid and mounts", Plan(cwd=plan.cwd))]
    for layer, variant in variants:
        child = launch(variant)
        try:
            if wait_http_ok(health_url, timeout_s=timeout_s, child=child) is not None:
                continue
            if layer == "rlimits":
                return _rlimits_message(*usage(child.pid), plan, limits)
            if layer == "landlock":
                return ("the Landlock layer refused something serve needs: it starts without it. A sandboxed "
                        "relay reaches only RELAY_PORT, the account proxy, its own folder, the ledger's folder and "
                        "its language runtime (contract section 6); fix: keep what it needs in its folder, or run a "
                        "relay you trust with --sandbox off")
            return ("the sandbox's uid or private mounts keep serve from starting: it starts unconfined. Its uid "
                    "owns only a copy of its folder and the ledger's folder, and sees a private /tmp; fix: make the "
                    "relay read nothing outside its folder, or run a relay you trust with --sandbox off")
        finally:
            child.kill()
    return None


def _rlimits_message(data_mib: int, threads: int, plan: Plan, limits: Limits) -> str:
    need = (f"once ready without limits it had {data_mib} MiB of data (limit data_mib={limits.data_mib}) and "
            f"{threads} threads (limit nproc={limits.nproc}, for all the relay's processes together)")
    if data_mib >= limits.data_mib * 0.8:
        fix = f"--sandbox-limit data_mib={_round_up(data_mib * 2)}"
    elif "nproc" in plan.rlimits and threads >= limits.nproc * 0.5:
        fix = f"--sandbox-limit nproc={_round_up(threads * 4)}"
    else:
        fix = ("--sandbox-limit with a larger data_mib, nproc or nofile (it may need more while starting than "
               "once ready)")
    return f"the sandbox's rlimits starve serve: it starts without them; {need}; fix: {fix}"


def _round_up(value: float, step: int = 256) -> int:
    return int(math.ceil(value / step) * step)
