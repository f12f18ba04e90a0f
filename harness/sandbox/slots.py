"""Sandbox slots: one unprivileged uid and one home folder per concurrent harness process.

A slot is claimed with an exclusive `flock` on `BASE/slot-N.lock`, held for the life of the
process (so parallel workers and parallel runs never share a uid, a network namespace or a
cgroup: they are all named for the slot), and its uid is a system user `relaychaos-relay-N`,
created with `useradd` the first time (root only). As root, BASE is /run/relaychaos (one
for the machine) and the slot's home is a size-limited tmpfs: the disk quota of everything
its relays may write (working copies, ledgers, /tmp). Claiming a slot kills every process
left under its uid and empties its home: whatever a previous run left behind.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pwd
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from relaychaos.errors import HarnessError
from relaychaos.sandbox import kernel

MAX_SLOTS = 64
USER_PREFIX = "relaychaos-relay-"  # one system user per slot: relaychaos-relay-0, -1, ...
ROOT_BASE = Path("/run/relaychaos")


def base_dir() -> Path:
    """The folder of every slot's lock and home: /run/relaychaos as root (mode 0711), else
    $TMPDIR/relaychaos-sandbox-<euid>."""
    base = ROOT_BASE if os.geteuid() == 0 else Path(tempfile.gettempdir()) / f"relaychaos-sandbox-{os.geteuid()}"
    try:
        base.mkdir(mode=0o711, parents=True, exist_ok=True)
        st = os.lstat(base)
    except OSError as e:
        raise HarnessError(
            f"cannot make the sandbox folder {base}: {e.strerror}",
            fix="make the temporary folder writable, or set TMPDIR elsewhere",
        ) from None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
        raise HarnessError(
            f"{base} is not a folder owned by uid {os.geteuid()}: someone else made it",
            fix=f"remove it (`rm -rf {base}`) and run again",
        )
    os.chmod(base, 0o711)
    return base


@dataclass
class Slot:
    """A claimed slot: its number, uid and gid (the harness's own when `separate` is False), home and lock;
    `quota_mib` is the size of the home's tmpfs (0: a plain folder)."""

    number: int
    uid: int
    gid: int
    user: str
    home: Path
    separate: bool
    quota_mib: int
    _lock_fd: int

    def sweep(self) -> int:
        """SIGKILL every process running under this slot's uid (a separate one only); how many there were."""
        return kill_uid(self.uid) if self.separate else 0

    def folder(self, *parts: str) -> Path:
        """A fresh, empty folder in the home (those on the way made as needed), owned by the slot's uid, 0700."""
        path = self.home.joinpath(*parts)
        shutil.rmtree(path, ignore_errors=True)
        for depth in range(1, len(parts) + 1):
            made = self.home.joinpath(*parts[:depth])
            if not made.is_dir():
                made.mkdir(mode=0o700)
                os.chown(made, self.uid, self.gid)
        return path

    def release(self) -> None:
        self.sweep()
        clear_home(self.home)
        os.close(self._lock_fd)


def claim(separate: bool, quota_mib: int = 0) -> Slot:
    """Claim the first free slot; with `separate` (root only) under its own system user, created if need be,
    and a home of `quota_mib` MiB (a tmpfs; 0: a plain folder)."""
    base = base_dir()
    for n in range(MAX_SLOTS):
        fd = os.open(base / f"slot-{n}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        user = f"{USER_PREFIX}{n}" if separate else pwd.getpwuid(os.geteuid()).pw_name
        uid, gid = ensure_user(user) if separate else (os.geteuid(), os.getegid())
        home = base / f"slot-{n}"
        slot = Slot(n, uid, gid, user, home, separate, quota_mib if separate else 0, fd)
        slot.sweep()
        clear_home(home)
        home.mkdir(mode=0o700)
        if slot.quota_mib:
            kernel.mount(
                "tmpfs",
                str(home),
                "tmpfs",
                kernel.MS_NOSUID | kernel.MS_NODEV,
                f"size={slot.quota_mib}m,mode=0700,uid={uid},gid={gid}",
                layer="disk quota",
            )
        os.chown(home, uid, gid)
        return slot
    raise HarnessError(
        f"all {MAX_SLOTS} sandbox slots in {base} are taken by running harness processes",
        fix="wait for some to finish, or run fewer in parallel",
    )


def free(base: Path) -> Iterator[int]:
    """The numbers of the slots no process holds, each locked while the caller looks at it."""
    for lock in sorted(base.glob("slot-*.lock")):
        fd = os.open(lock, os.O_RDWR | os.O_CLOEXEC)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        try:
            yield int(lock.stem.split("-")[1])
        finally:
            os.close(fd)


def clear_home(home: Path) -> None:
    """Unmount the home's tmpfs (if any) and remove the folder."""
    if os.path.ismount(home):
        with contextlib.suppress(kernel.LayerError):
            kernel.umount(str(home), kernel.MNT_DETACH, layer="disk quota")
    shutil.rmtree(home, ignore_errors=True)


def ensure_user(user: str) -> tuple[int, int]:
    """The (uid, gid) of system user `user`, created with useradd (no home, no login shell) when missing."""
    for attempt in range(20):
        try:
            entry = pwd.getpwnam(user)
            return entry.pw_uid, entry.pw_gid
        except KeyError:
            pass
        done = subprocess.run(
            [
                "useradd",
                "--system",
                "--user-group",
                "--no-create-home",
                "--home-dir",
                "/nonexistent",
                "--shell",
                "/usr/sbin/nologin",
                user,
            ],
            capture_output=True,
            text=True,
        )
        if done.returncode not in (0, 9):  # 9: made meanwhile by a parallel worker
            if "lock" in done.stderr and attempt < 19:  # /etc/passwd locked by a parallel useradd
                time.sleep(0.05 * (attempt + 1))
                continue
            raise HarnessError(
                f"could not create the sandbox user {user}: useradd said {done.stderr.strip() or done.returncode}",
                fix="install useradd (package passwd), or run with --sandbox off",
            )
    raise HarnessError(f"could not create the sandbox user {user}", fix="run with --sandbox off")


def made_users(prefix: str = USER_PREFIX) -> list[str]:
    """The sandbox's system users this machine has (relaychaos-relay-N), in slot order."""
    names = [p.pw_name for p in pwd.getpwall() if p.pw_name.startswith(prefix) and p.pw_name[len(prefix) :].isdigit()]
    return sorted(names, key=lambda name: int(name[len(prefix) :]))


def remove_users(prefix: str = USER_PREFIX) -> tuple[list[str], list[str]]:
    """Remove every sandbox user (and its group) whose slot no harness process holds, killing what runs under it
    first; each slot is locked while its user goes. (removed, kept: their slots in use by a running harness)."""
    base = base_dir()
    removed, kept = [], []
    for user in made_users(prefix):
        fd = os.open(base / f"slot-{user[len(prefix) :]}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                kept.append(user)
                continue
            kill_uid(pwd.getpwnam(user).pw_uid)
            done = subprocess.run(["userdel", user], capture_output=True, text=True)
            if done.returncode != 0:
                raise HarnessError(
                    f"could not remove the sandbox user {user}: userdel said {done.stderr.strip() or done.returncode}",
                    fix=f"remove it by hand (`userdel {user}`)",
                )
            removed.append(user)
        finally:
            os.close(fd)
    return removed, kept


def statuses(uid: int | None = None) -> Iterator[tuple[int, dict[str, str]]]:
    """(pid, fields of /proc/PID/status) of every live process (of real uid `uid`, if given); zombies left out."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as f:
                fields = dict(line.split(":", 1) for line in f if ":" in line)
        except OSError:
            continue
        if fields.get("State", "").strip().startswith("Z"):
            continue
        if uid is None or int(fields.get("Uid", "-1 0").split()[0]) == uid:
            yield int(entry), fields


def mib(fields: dict, key: str) -> int:
    """A /proc status size field (`VmData:  1234 kB`) in MiB."""
    return int(fields.get(key, "0 kB").split()[0]) >> 10


def uid_processes(uid: int) -> list[int]:
    """Pids whose real uid is `uid` and that are not zombies (from /proc)."""
    return [pid for pid, _ in statuses(uid)]


def kill_uid(uid: int) -> int:
    """SIGKILL every process of `uid`, again until none is left (a fork loop is bounded by RLIMIT_NPROC)."""
    if uid == 0 or uid == os.geteuid():
        raise ValueError(f"refusing to kill every process of uid {uid}: it is not a sandbox uid")
    return kill_until_gone(lambda: uid_processes(uid))


def kill_until_gone(pids: Callable[[], list[int]], rounds: int = 100) -> int:
    """SIGKILL every process `pids()` names, again until it names none; how many signals were sent."""
    killed = 0
    for _ in range(rounds):
        found = pids()
        if not found:
            break
        for pid in found:
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except ProcessLookupError:
                pass
        time.sleep(0.01)
    return killed
