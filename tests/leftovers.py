"""What of the sandbox's slots is on the machine: for the tests that say nothing is left.

A slot's resources are named for its number N: the network namespace relaychaos-sN (with its veth
pair rcN-h/rcN-r and the machine's nftables table relaychaos-sN), the cgroups relaychaos-sN, the
home /run/relaychaos/slot-N (a tmpfs, with overlays inside), and processes of its uid
relaychaos-relay-N. A slot whose lock nobody holds must have none of them once its harness process
has closed it, or once whoever killed that process has cleared it (policy.clear_abandoned). The cgroups
are those under this process's own (where the harnesses it starts make theirs); a machine whose
processes sit in several memory cgroups may hold other harnesses' groups of the same name elsewhere.
"""

from __future__ import annotations

import fcntl
import os
import pwd
import re
import subprocess
import time
from pathlib import Path

from relaychaos.sandbox.cgroups import SlotCgroups
from relaychaos.sandbox.policy import clear_slot

SLOT_USER = re.compile(r"^relaychaos-relay-(\d+)$")


def relay_uids() -> dict[int, int]:
    """uid -> slot number of every sandbox user on the machine."""
    return {p.pw_uid: int(m.group(1)) for p in pwd.getpwall() if (m := SLOT_USER.match(p.pw_name))}


def processes() -> dict[int, dict]:
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            status = Path(f"/proc/{entry}/status").read_text()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            try:
                cwd = os.readlink(f"/proc/{entry}/cwd")
            except OSError:
                cwd = ""
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if fields.get("State", "").strip().startswith("Z"):
            continue
        found[int(entry)] = {"uid": int(fields["Uid"].split()[0]), "cmdline": cmdline, "cwd": cwd}
    return found


def slot_leftovers(slot: int) -> list[str]:
    """What of sandbox slot `slot` is still on the machine (checked while holding its lock, so no one claims it
    meanwhile); None if another harness holds the slot now."""
    left = []
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
    if f"relaychaos-s{slot}" in netns:
        left.append(f"network namespace relaychaos-s{slot}")
    if subprocess.run(["ip", "link", "show", f"rc{slot}-h"], capture_output=True).returncode == 0:
        left.append(f"veth rc{slot}-h")
    if subprocess.run(["nft", "list", "table", "inet", f"relaychaos-s{slot}"], capture_output=True).returncode == 0:
        left.append(f"nftables table relaychaos-s{slot}")
    if subprocess.run(["nft", "list", "table", "inet", f"relaychaos-s{slot}-uid"], capture_output=True).returncode == 0:
        left.append(f"nftables table relaychaos-s{slot}-uid")
    left += [f"cgroup {path}" for path in SlotCgroups.named(f"relaychaos-s{slot}").groups.values() if path.exists()]
    home = Path(f"/run/relaychaos/slot-{slot}")
    if home.exists():
        left.append(f"slot home {home} holding {[str(p) for p in list(home.rglob('*'))[:5]]}")
    root = Path(f"/run/relaychaos/slot-{slot}.root")
    if root.exists() and any(root.iterdir()):
        left.append(f"view root {root} not empty")
    home_mount, root_mount = f"/run/relaychaos/slot-{slot}", f"/run/relaychaos/slot-{slot}.root"
    mounts = [
        m
        for m in (line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines())
        if m in (home_mount, root_mount) or m.startswith(home_mount + "/")
    ]
    left += [f"mount {m}" for m in mounts]
    uid = next((u for u, n in relay_uids().items() if n == slot), None)
    left += [
        f"process {pid} of relaychaos-relay-{slot}: {p['cmdline'][:100]}"
        for pid, p in processes().items()
        if p["uid"] == uid
    ]
    return left


def slots_left(slots: set[int], wait_s: float = 20.0, tidy_after: bool = False) -> dict[int, list[str] | None]:
    """slot_leftovers of each slot, taken under its lock (None: another harness holds it throughout); with
    tidy_after, what was found is then removed (the machine is left as the next claim would make it)."""
    found: dict[int, list[str] | None] = {}
    deadline = time.monotonic() + wait_s
    todo = set(slots)
    while todo and time.monotonic() < deadline:
        for slot in sorted(todo):
            fd = os.open(f"/run/relaychaos/slot-{slot}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            try:
                found[slot] = slot_leftovers(slot)
                if tidy_after and found[slot]:
                    clear_slot(slot)  # as the next claim of the slot would
            finally:
                os.close(fd)
            todo.discard(slot)
        time.sleep(0.5)
    return found | {slot: None for slot in todo}


def ipc_objects() -> list[str]:
    """SysV IPC objects of the machine's (the harness's) IPC namespace made by a relay: the red team's keys, or
    a sandbox user as creator or owner."""
    uids = relay_uids()
    left = []
    for kind, path in (("shm", "/proc/sysvipc/shm"), ("msg", "/proc/sysvipc/msg"), ("sem", "/proc/sysvipc/sem")):
        lines = Path(path).read_text().splitlines()
        header = lines[0].split()
        for line in lines[1:]:
            row = dict(zip(header, line.split(), strict=False))
            key = int(row["key"]) & 0xFFFFFFFF
            if key >> 8 == 0x52544D or int(row["uid"]) in uids or int(row["cuid"]) in uids:
                left.append(f"{kind} key {key:#x} owner {row['uid']} creator {row['cuid']}")
    return left


def free_slots() -> list[int]:
    """Slot numbers whose lock no process holds now."""
    free = []
    for lock in sorted(Path("/run/relaychaos").glob("slot-*.lock")):
        fd = os.open(lock, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            free.append(int(lock.stem.split("-")[1]))
        except BlockingIOError:
            pass
        finally:
            os.close(fd)
    return free


def made_since(since: float) -> list[int]:
    """Free slots with a network namespace or home made at or after `since` (a time.time()): what a harness that
    began then and has ended would have left."""

    def young(path: Path) -> bool:
        try:
            return path.lstat().st_mtime >= since
        except OSError:
            return False

    return [
        n
        for n in free_slots()
        if young(Path(f"/run/netns/relaychaos-s{n}")) or young(Path(f"/run/relaychaos/slot-{n}"))
    ]
