"""The filesystem a relay command sees: a fresh root holding only what its plan lists.

Built by the command's init process, in its own mount namespace, then made the root with
pivot_root; the machine's own root is gone from that namespace. What is there:
- read-only binds of the plan's folders (the system's runtime folders, /etc, the language
  runtime the command runs on), each at its own path, nosuid and nodev; `masks` are covered by
  an empty read-only tmpfs (the harness's own package, where a runtime folder holds it);
- read-write binds of the relay's working copy, its ledger folder and its /tmp (all on the
  slot's size-limited tmpfs: the disk quota); a bind is (source, where it appears, writable);
- a /dev of null, zero, full, random, urandom and a private /dev/shm; a /proc of the command's
  own PID namespace, showing only the relay's own processes (not its root-owned init); a /sys
  of its network namespace, with its own cgroups under /sys/fs/cgroup;
- the symbolic links of a merged /usr (/bin -> usr/bin, ...), as the machine has them.
Every folder on the way to a bind is a root-owned 0755 folder of the new root, so a path under
/root (such as a pyenv Python) is reachable and nothing else of /root is there.

    build(plan["view"])   # as root, after unshare(CLONE_NEWNS) and the other namespaces
"""

from __future__ import annotations

import os

# The type checker takes a name TYPE_CHECKING as true, so it reads the package's kernel module (as
# __main__ does); typing itself is not imported, to keep the start fast.
TYPE_CHECKING = False
if TYPE_CHECKING or __package__:  # relaychaos.sandbox.view
    from .kernel import (
        MS_BIND,
        MS_NODEV,
        MS_NOEXEC,
        MS_NOSUID,
        MS_PRIVATE,
        MS_RDONLY,
        MS_REC,
        MS_REMOUNT,
        mount,
        pivot_root,
    )
else:  # a sibling of the exec wrapper, imported by path
    from kernel import (
        MS_BIND,
        MS_NODEV,
        MS_NOEXEC,
        MS_NOSUID,
        MS_PRIVATE,
        MS_RDONLY,
        MS_REC,
        MS_REMOUNT,
        mount,
        pivot_root,
    )

DEVICES = ("null", "zero", "full", "random", "urandom")
DEV_LINKS = {
    "fd": "/proc/self/fd",
    "stdin": "/proc/self/fd/0",
    "stdout": "/proc/self/fd/1",
    "stderr": "/proc/self/fd/2",
}
SAFE = MS_NOSUID | MS_NODEV


def _inside(root: str, path: str) -> str:
    return os.path.join(root, path.lstrip("/"))


def _bind(root: str, source: str, at: str, writable: bool) -> None:
    target = _inside(root, at)
    if os.path.isdir(source):
        os.makedirs(target, 0o755, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), 0o755, exist_ok=True)
        if not os.path.exists(target):
            os.close(os.open(target, os.O_CREAT | os.O_WRONLY, 0o644))
    mount(source, target, None, MS_BIND | MS_REC)
    mount(None, target, None, MS_REMOUNT | MS_BIND | SAFE | (0 if writable else MS_RDONLY))


def _tmpfs(target: str, options: str, read_only: bool = False) -> None:
    os.makedirs(target, 0o755, exist_ok=True)
    mount("tmpfs", target, "tmpfs", SAFE | (MS_RDONLY if read_only else 0), options)


def _dev(root: str, shm_mib: int) -> None:
    dev = _inside(root, "/dev")
    _tmpfs(dev, "mode=0755,size=64k")
    for name in DEVICES:
        _bind_device(dev, name)
    for name, target in DEV_LINKS.items():
        os.symlink(target, os.path.join(dev, name))
    _tmpfs(os.path.join(dev, "shm"), f"mode=1777,size={shm_mib}m")
    mount(None, dev, None, MS_REMOUNT | MS_BIND | MS_NOSUID | MS_RDONLY)


def _bind_device(dev: str, name: str) -> None:
    target = os.path.join(dev, name)
    os.close(os.open(target, os.O_CREAT | os.O_WRONLY, 0o666))
    mount(f"/dev/{name}", target, None, MS_BIND)
    mount(None, target, None, MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NOEXEC)


def _kernel_filesystems(root: str, cgroups: list[str]) -> None:
    proc = _inside(root, "/proc")
    os.makedirs(proc, 0o555, exist_ok=True)
    mount("proc", proc, "proc", SAFE | MS_NOEXEC, "hidepid=invisible")  # not even its init: its argv is the harness's
    sys_dir = _inside(root, "/sys")
    os.makedirs(sys_dir, 0o555, exist_ok=True)
    mount("sysfs", sys_dir, "sysfs", SAFE | MS_NOEXEC | MS_RDONLY)
    cgroup_root = os.path.join(sys_dir, "fs", "cgroup")
    _tmpfs(cgroup_root, "mode=0755,size=16k")
    for controller in cgroups:  # v1 hierarchies, as the machine mounts them (e.g. "cpu", "cpu,cpuacct")
        target = os.path.join(cgroup_root, controller)
        os.makedirs(target, 0o755)
        mount("cgroup", target, "cgroup", SAFE | MS_NOEXEC | MS_RDONLY, controller)
    mount(None, cgroup_root, None, MS_REMOUNT | MS_BIND | SAFE | MS_NOEXEC | MS_RDONLY)


def build(view: dict) -> None:
    """Make the view the root of this mount namespace (see the module doc); LayerError naming what failed."""
    root = view["root"]
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    mount("tmpfs", root, "tmpfs", SAFE, "mode=0755,size=4m")
    for path, target in view["links"]:
        os.makedirs(os.path.dirname(_inside(root, path)), 0o755, exist_ok=True)
        os.symlink(target, _inside(root, path))
    for source, at, writable in sorted(view["binds"], key=lambda b: b[1].count("/")):  # outer ones first
        if os.path.exists(source):
            _bind(root, source, at, writable)
    for path in view["masks"]:
        if os.path.isdir(_inside(root, path)):
            _tmpfs(_inside(root, path), "mode=0555,size=4k", read_only=True)
    _dev(root, view["shm_mib"])
    _kernel_filesystems(root, view["cgroups"])
    mount(None, root, None, MS_REMOUNT | MS_BIND | SAFE | MS_RDONLY)
    pivot_root(root)
