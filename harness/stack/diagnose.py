"""Why a relay's serve would not start in the sandbox: a limit that starves it, or what the sandbox refused it.

Called only after a failed start, and it never loosens isolation: the uid, the namespaces,
the filesystem view, Landlock, seccomp and no_new_privs stay as they were. It starts serve
once more with the resource limits raised (no rlimits, the slot's cgroup limits fourfold);
if serve then answers /health, a limit starved it, and the message gives what it used and
the `--sandbox-limit` that fits. Otherwise it reads the relay's log for what the sandbox
refused (the seccomp refusals its init process wrote there) and for the errors a sandboxed
relay typically meets (a port other than RELAY_PORT, a file outside its folders), and names
the layer. None when nothing points at the sandbox: the relay itself is at fault.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from pathlib import Path

from relaychaos.sandbox.policy import Sandbox
from relaychaos.sandbox.slots import mib, statuses
from relaychaos.stack.processes import Child, tail_text, wait_http_ok

REFUSAL = re.compile(r"^relaychaos sandbox: (seccomp refused .*)$", re.M)
HINTS = (  # (a pattern in the relay's own log, what the sandbox allows)
    (
        re.compile(
            r"(bind|listen|address)[^\n]{0,120}(Permission denied|EACCES)|(Permission denied|EACCES)[^\n]{0,120}"
            r"(bind|listen)",
            re.I,
        ),
        "network (Landlock): serve may listen only on RELAY_PORT ({port}), on RELAY_HOST",
    ),
    (
        re.compile(r"(connect|dial)[^\n]{0,160}(Permission denied|EACCES|Network is unreachable|ENETUNREACH)", re.I),
        "network (its own namespace and Landlock): a relay may connect only to ACCOUNT_URL",
    ),
    (
        re.compile(r"Read-only file system|EROFS", re.I),
        "filesystem (its own root): only its folder, the ledger's folder and /tmp are writable",
    ),
    (
        re.compile(r"No such file or directory[^\n]{0,20}['\"]?(/[^'\"\s]+)", re.I),
        "filesystem (its own root): a path outside its folder, the ledger's folder, /tmp and the system's runtime "
        "folders does not exist for the relay ({path})",
    ),
)


def diagnose(
    start: Callable[[bool], Child], health_url: str, timeout_s: float, sandbox: Sandbox, log_path: Path, port: int
) -> str | None:
    """What keeps serve from starting (see the module doc); `start(relaxed)` starts it once more."""
    limits, groups = sandbox.limits, sandbox.cgroups
    if groups is not None:
        groups.set(memory_mib=limits.memory_mib * 4, tasks=limits.tasks * 4)
        groups.reset_peak()
    child = start(True)
    try:
        if wait_http_ok(health_url, timeout_s=timeout_s, child=child) is None:
            return _starved(child, sandbox)
    finally:
        child.kill()
        if groups is not None:
            groups.set(memory_mib=limits.memory_mib, tasks=limits.tasks)
    return refusals(log_path, port)


def refusals(log_path: Path, port: int | None = None) -> str | None:
    """What the sandbox refused the relay, as its log shows it (one sentence), or None."""
    try:
        text = tail_text(log_path, 200_000)
    except OSError:
        return None
    found = list(dict.fromkeys(REFUSAL.findall(text)))
    for pattern, said in HINTS:
        match = pattern.search(text)
        if match:
            path = match.group(1) if match.lastindex and match.group(1) and match.group(1).startswith("/") else ""
            found.append(said.format(port=port, path=path))
    if not found:
        return None
    return (
        "the sandbox refused what serve asked for: "
        + "; ".join(found)
        + "; fix: keep what the relay needs in its own folder, listen on RELAY_HOST:RELAY_PORT and call only "
        "ACCOUNT_URL (contract section 6), or run a relay you trust with --sandbox off"
    )


def _starved(child: Child, sandbox: Sandbox) -> str:
    """The message for a serve that starts once its limits are raised: what it used, and the flag that fits."""
    limits = sandbox.limits
    memory, tasks = sandbox.cgroups.usage() if sandbox.cgroups else (0, 0)
    data = max((mib(f, "VmData") for pid, f in statuses() if pid in _tree(child.pid)), default=0)
    need = (
        f"once ready with its limits raised it used {memory} MiB of memory (limit memory_mib="
        f"{limits.memory_mib}, the relay as a whole), {tasks} tasks (limit tasks={limits.tasks}) and "
        f"{data} MiB of data in its largest process (limit data_mib={limits.data_mib})"
    )
    if memory >= limits.memory_mib * 0.8:
        fix = f"--sandbox-limit memory_mib={_round_up(memory * 2)}"
    elif data >= limits.data_mib * 0.8:
        fix = f"--sandbox-limit data_mib={_round_up(data * 2)}"
    elif tasks >= limits.tasks * 0.5:
        fix = f"--sandbox-limit tasks={_round_up(tasks * 4)}"
    else:
        fix = (
            "--sandbox-limit with a larger memory_mib, tasks, data_mib or nofile (it may need more while starting "
            "than once ready)"
        )
    return f"the sandbox's resource limits starve serve: it starts with them raised; {need}; fix: {fix}"


def _tree(pid: int) -> set[int]:
    """pid and its descendants (from /proc)."""
    children: dict[int, list[int]] = {}
    for other, fields in statuses():
        children.setdefault(int(fields.get("PPid", "0")), []).append(other)
    found, todo = set(), [pid]
    while todo:
        p = todo.pop()
        found.add(p)
        todo += children.get(p, [])
    return found


def _round_up(value: float, step: int = 256) -> int:
    return int(math.ceil(value / step) * step)
