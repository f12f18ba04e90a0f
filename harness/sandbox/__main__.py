"""The exec wrapper: `python -I -S .../relaychaos/sandbox/__main__.py PLAN_JSON -- ARGV...` (or `-m relaychaos.sandbox`).

Applies the plan to this very process, in an order where each layer can still be
set up (rlimits, mounts and the Landlock ruleset while root; then the uid; then
the parent-death signal, which a uid change clears; then Landlock itself) and
`execve`s ARGV, found on the environment's PATH. Nothing is left between fork
and exec in the harness. When a layer cannot be applied the command does not
run: the wrapper prints one line naming the layer and exits 126 (127 when ARGV
cannot be found). It imports no package (the plan is plain JSON; see plan.py),
so it starts in a few milliseconds with `-S`.
"""
from __future__ import annotations

import ctypes
import json
import os
import resource
import signal
import sys

_libc = ctypes.CDLL(None, use_errno=True)
_PR_SET_PDEATHSIG = 1
_CLONE_NEWNS = 0x00020000
_MS_NOSUID, _MS_NODEV, _MS_REMOUNT, _MS_BIND, _MS_REC, _MS_PRIVATE = 2, 4, 32, 4096, 16384, 1 << 18
_MS_RDONLY = 1


class LayerError(Exception):
    """A layer of the plan that could not be applied: (layer, why)."""


def _check(result: int, layer: str, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise LayerError(layer, f"{what}: {os.strerror(err)}")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None, layer: str) -> None:
    enc = (lambda s: s.encode() if s is not None else None)
    _check(_libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)), layer,
           f"mount {source or ''} on {target}")


def apply_tmpfs(mounts: list[dict]) -> None:
    """A private mount namespace in which each Tmpfs hides what lies beneath it but its `keep` paths."""
    if not mounts:
        return
    _check(_libc.unshare(_CLONE_NEWNS), "mounts", "unshare(CLONE_NEWNS)")
    _mount(None, "/", None, _MS_REC | _MS_PRIVATE, None, "mounts")
    for m in mounts:
        kept = {p: os.open(p, os.O_PATH | os.O_CLOEXEC) for p in m["keep"] if os.path.isdir(p)}
        _mount("tmpfs", m["at"], "tmpfs", _MS_NOSUID | _MS_NODEV, f"mode={m['mode']},size={m['size_mib']}m",
               "mounts")
        for path, fd in sorted(kept.items()):
            os.makedirs(path, 0o755, exist_ok=True)
            _mount(f"/proc/self/fd/{fd}", path, None, _MS_BIND | _MS_REC, None, "mounts")
            if path not in m["writable"]:
                _mount(None, path, None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY, None, "mounts")
            os.close(fd)


def _landlock():
    if __package__:
        from relaychaos.sandbox import landlock  # noqa: PLC0415
    else:  # run as a script under -I -S: the sibling module, without importing the package
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import landlock  # noqa: PLC0415
    return landlock


def apply(plan: dict) -> None:
    """Apply every layer of the plan to this process (see the module doc for the order)."""
    for name, limit in plan["rlimits"].items():
        try:
            resource.setrlimit(getattr(resource, "RLIMIT_" + name.upper()), (limit, limit))
        except (ValueError, OSError) as e:
            raise LayerError("rlimits", f"{name} = {limit}: {e}") from None
    apply_tmpfs(plan["tmpfs"])
    if plan["cwd"]:
        os.chdir(plan["cwd"])
    ruleset = None
    if plan["landlock_abi"]:
        landlock = _landlock()
        try:
            ruleset = landlock.Ruleset(plan["landlock_abi"])
            for path in plan["read_only"]:
                ruleset.allow_path(path, landlock.READ_ONLY)
            for path in plan["read_write"]:
                ruleset.allow_path(path, landlock.READ_WRITE)
            for port in plan["bind"]:
                ruleset.allow_port(port, landlock.BIND_TCP)
            for port in plan["connect"]:
                ruleset.allow_port(port, landlock.CONNECT_TCP)
        except OSError as e:
            raise LayerError("landlock", str(e)) from None
    if plan["uid"] is not None:
        uid, gid = plan["uid"], plan["gid"]
        try:
            os.setgroups([])
            os.setresgid(gid, gid, gid)
            os.setresuid(uid, uid, uid)
        except OSError as e:
            raise LayerError("uid", f"switching to uid {uid}: {e}") from None
    _check(_libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "parent", "prctl(PR_SET_PDEATHSIG)")
    if os.getppid() != plan["parent"]:  # the harness died before the signal was armed
        os._exit(1)
    if plan["umask"] is not None:
        os.umask(plan["umask"])
    if ruleset is not None:
        try:
            ruleset.restrict_self()
        except OSError as e:
            raise LayerError("landlock", str(e)) from None


def main(args: list[str]) -> None:
    if len(args) < 3 or args[1] != "--":
        sys.stderr.write("usage: python -m relaychaos.sandbox PLAN_JSON -- ARGV...\n")
        os._exit(2)
    argv = args[2:]
    try:
        apply(json.loads(args[0]))
    except LayerError as e:
        layer, why = e.args
        sys.stderr.write(f"relaychaos sandbox: layer '{layer}' could not be applied: {why}; "
                         f"`{argv[0]}` was not run\n")
        sys.stderr.flush()
        os._exit(126)
    try:
        os.execvpe(argv[0], argv, os.environ)
    except OSError as e:
        sys.stderr.write(f"relaychaos sandbox: cannot run `{argv[0]}`: {e.strerror} "
                         f"(PATH={os.environ.get('PATH', '')})\n")
        sys.stderr.flush()
        os._exit(127 if isinstance(e, FileNotFoundError) else 126)


if __name__ == "__main__":
    main(sys.argv[1:])
