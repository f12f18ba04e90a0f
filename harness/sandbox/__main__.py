"""The exec wrapper: `python -I -S .../relaychaos/sandbox/__main__.py PLAN_JSON -- ARGV...`.

Every relay command starts here (relaychaos.stack.launch builds the command line) and gets
its plan (plan.py) applied before its own code runs. With isolation (root), three processes:

    outer   (the harness's child, outside the relay's namespaces) joins nothing; it puts init
            into the slot's cgroups, then copies the relay's output into its log within the
            submission's budget (logpump.py) and exits with the relay's status
    init    (PID 1 of a new PID namespace) joins the slot's network namespace, makes its own
            mount, IPC, UTS and cgroup namespaces, builds the filesystem view (view.py), forks
            the relay, answers its seccomp refusals (notify.Listener), forwards stop signals,
            reaps, and exits with the relay's status: every process left in the namespace dies
    relay   (PID 2) takes the rlimits, the slot's uid, Landlock and seccomp, and execs ARGV

Without isolation (no root) the wrapper applies what it can to itself (rlimits, Landlock,
seccomp) and execs ARGV in place. Either way, a layer that cannot be applied stops the
command: one line naming the layer, exit status 126 (127 when ARGV cannot be found). It
imports no package, only its sibling modules by path, so it starts in a few milliseconds.
"""

from __future__ import annotations

import json
import os
import resource
import select
import signal
import socket
import sys

# The type checker takes a name TYPE_CHECKING as true, so it reads the package's modules; typing
# itself is not imported, to keep the start fast.
TYPE_CHECKING = False
if TYPE_CHECKING or __package__:  # python -m relaychaos.sandbox
    from . import kernel, landlock, logpump, notify, seccomp, view
else:  # run as a script under -I -S: the sibling modules, without importing the package
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import kernel  # noqa: E402
    import landlock  # noqa: E402
    import logpump  # noqa: E402
    import notify  # noqa: E402
    import seccomp  # noqa: E402
    import view  # noqa: E402
if TYPE_CHECKING:
    from types import FrameType

LayerError = kernel.LayerError
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
RESET_SIGNALS = STOP_SIGNALS + (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGCHLD)


def _say(text: str) -> None:
    os.write(2, text.encode(errors="replace"))


# -- the layers of the relay's own process ---------------------------------------------------------
def _ruleset(rules: dict | None) -> landlock.Ruleset | None:
    """The Landlock ruleset of the plan, built while still root (paths are opened to be named)."""
    if not rules or not rules["abi"]:
        return None
    try:
        ruleset = landlock.Ruleset(rules["abi"])
        for rights, key in (
            (landlock.READ_ONLY, "read_only"),
            (landlock.READ_WRITE, "read_write"),
            (landlock.LEDGER, "ledger"),
        ):
            for path in rules[key]:
                ruleset.allow_path(path, rights)
        for port in rules["bind"]:
            ruleset.allow_port(port, landlock.BIND_TCP)
        for port in rules["connect"]:
            ruleset.allow_port(port, landlock.CONNECT_TCP)
    except OSError as e:
        raise LayerError("landlock", str(e)) from None
    return ruleset


def confine(plan: dict, notify: bool) -> int | None:
    """Apply the plan's per-process layers to this process, in an order where each can still be set up;
    the seccomp listener's fd when `notify`."""
    for sig in RESET_SIGNALS:  # what Python or the outer process ignored is not the relay's to inherit
        signal.signal(sig, signal.SIG_DFL)
    kernel.default_ignored_signals()  # and whatever the harness's own parent ignored
    for name, limit in plan["rlimits"].items():
        try:
            resource.setrlimit(getattr(resource, "RLIMIT_" + name.upper()), (limit, limit))
        except (ValueError, OSError) as e:
            raise LayerError("rlimits", f"{name} = {limit}: {e}") from None
    if plan["cwd"]:
        os.chdir(plan["cwd"])
    ruleset = _ruleset(plan["landlock"])
    if plan["uid"] is not None:
        uid, gid = plan["uid"], plan["gid"]
        try:
            os.setgroups([])
            os.setresgid(gid, gid, gid)
            os.setresuid(uid, uid, uid)
        except OSError as e:
            raise LayerError("uid", f"switching to uid {uid}: {e}") from None
    kernel.prctl(kernel.PR_SET_PDEATHSIG, signal.SIGKILL, "parent")  # a uid change clears it
    if plan["umask"] is not None:
        os.umask(plan["umask"])
    kernel.prctl(kernel.PR_SET_NO_NEW_PRIVS, 1, "no_new_privs")
    if ruleset is not None:
        try:
            ruleset.restrict_self()
        except OSError as e:
            raise LayerError("landlock", str(e)) from None
    if not plan["seccomp"]:
        return None
    try:
        return seccomp.install(notify, slow_locks=notify and plan.get("lock_delay_ms", 0) > 0)
    except OSError as e:
        raise LayerError("seccomp", str(e)) from None


def execute(argv: list[str]) -> None:
    try:
        os.execvpe(argv[0], argv, os.environ)
    except OSError as e:
        _say(f"relaychaos sandbox: cannot run `{argv[0]}`: {e.strerror} (PATH={':'.join(os.get_exec_path())})\n")
        os._exit(127 if isinstance(e, FileNotFoundError) else 126)


# -- init: PID 1 of the relay's namespaces -----------------------------------------------------------
def _namespaces(isolation: dict) -> None:
    if isolation["netns"]:
        kernel.setns(isolation["netns"], kernel.CLONE_NEWNET, "network")
    flags = kernel.CLONE_NEWNS | kernel.CLONE_NEWIPC | kernel.CLONE_NEWUTS
    kernel.unshare(flags | (kernel.CLONE_NEWCGROUP if isolation["view"]["cgroups"] else 0), "namespaces")
    socket.sethostname(isolation["hostname"])
    view.build(isolation["view"])


def _spawn_relay(plan: dict, argv: list[str]) -> tuple[int, int | None]:
    """Fork the relay (it confines itself and execs argv); (its pid, the seccomp listener's fd or None)."""
    here, there = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    pid = os.fork()
    if pid == 0:
        here.close()
        try:
            fd = confine(plan, notify=True)
            if fd is not None:
                socket.send_fds(there, [b"L"], [fd])
                os.close(fd)
        except LayerError as e:
            _refuse(e, argv)
        there.close()
        execute(argv)
    there.close()
    _, fds, _, _ = socket.recv_fds(here, 1, 1)  # nothing when the relay failed before its filter
    here.close()
    return pid, (fds[0] if fds else None)


def _supervise(relay: int, listener_fd: int | None, allowed: dict | None, lock_delay_ms: int = 0) -> int:
    """Answer refusals, forward stop signals, reap; the relay's exit status once it has exited. `allowed`: the plan's
    Ports (None: no port is looked at)."""
    wake_r = _wake_on_signals()
    _forward_stop_signals(relay)
    ports = {"bind": tuple(allowed["bind"]), "connect": tuple(allowed["connect"])} if allowed else {}
    listener = (
        notify.Listener(listener_fd, _say, lock_delay_s=lock_delay_ms / 1000, **ports)
        if listener_fd is not None
        else None
    )
    poller = select.poll()
    poller.register(wake_r, select.POLLIN)
    if listener is not None:
        poller.register(listener.fd, select.POLLIN)
    while True:
        status = _reaped(relay)
        if status is not None:
            return status
        for fd, _ in poller.poll(listener.timeout_ms() if listener is not None else None):
            if fd != wake_r:
                assert listener is not None  # the only other fd polled is the listener's
                listener.answer()
            else:
                _drain(wake_r)
        if listener is not None:
            listener.release_due()


def _wake_on_signals() -> int:
    """A pipe every signal writes to (SIGCHLD among them), so a poll wakes when one arrives; its read end."""
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    return wake_r


def _forward_stop_signals(relay: int) -> None:
    """Stop signals sent to init are the relay's: sent on to it, unless it is in init's process group."""

    def forward(sig: int, _frame: FrameType | None) -> None:  # a group signal reached the relay already
        try:
            if os.getpgid(relay) != os.getpgid(0):
                os.kill(relay, sig)
        except OSError:
            pass

    for sig in STOP_SIGNALS:
        signal.signal(sig, forward)


def _reaped(relay: int) -> int | None:
    """Reap every child that has exited (the relay's orphans are init's); the relay's exit status once it is one
    of them (1 when no child is left), else None."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return 1
        if pid == 0:
            return None
        if pid == relay:
            return _exit_code(status)


def _drain(fd: int) -> None:
    """Read a non-blocking pipe until it is empty."""
    try:
        while os.read(fd, 512):
            pass
    except BlockingIOError:
        pass


def _init(plan: dict, argv: list[str], go: int) -> None:
    kernel.prctl(kernel.PR_SET_PDEATHSIG, signal.SIGKILL, "parent")
    if os.read(go, 1) != b"g":  # the outer process died before it let init go
        os._exit(1)
    try:
        _namespaces(plan["isolation"])
        relay, listener_fd = _spawn_relay(plan, argv)
    except LayerError as e:
        _refuse(e, argv)
    os._exit(
        _supervise(
            relay,
            listener_fd,
            plan.get("ports"),
            plan.get("lock_delay_ms", 0),
        )
    )


# -- outer: the harness's own child --------------------------------------------------------------------
def _arm_parent_death(parent: int) -> None:
    kernel.prctl(kernel.PR_SET_PDEATHSIG, signal.SIGKILL, "parent")
    if os.getppid() != parent:  # the harness died before the signal was armed
        os._exit(1)


def _exit_code(status: int) -> int:
    return os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)


def _child(plan: dict, argv: list[str], go: int) -> None:
    """The forked child: init of the relay's namespaces, or (without isolation) the relay itself."""
    if plan["isolation"]:
        _init(plan, argv, go)
    if os.read(go, 1) != b"g":
        os._exit(1)
    try:
        confine(plan, notify=False)
    except LayerError as e:
        _refuse(e, argv)
    execute(argv)


def outer(plan: dict, argv: list[str]) -> int:
    """Run argv as a child (in the plan's namespaces, if any) with its output pumped into the log; its status."""
    out_r, out_w = os.pipe()
    go_r, go_w = os.pipe()
    if plan["isolation"]:
        kernel.unshare(kernel.CLONE_NEWPID, "namespaces")
    child = os.fork()
    if child == 0:
        for fd in (go_w, out_r):
            os.close(fd)
        os.dup2(out_w, 1)
        os.dup2(out_w, 2)
        os.close(out_w)
        _child(plan, argv, go_r)
    os.close(go_r)
    os.close(out_w)
    for procs in plan["isolation"]["cgroup_procs"] if plan["isolation"] else ():
        try:
            with open(procs, "w") as f:
                f.write(str(child))
        except OSError as e:
            os.kill(child, signal.SIGKILL)
            raise LayerError("cgroups", f"joining {os.path.dirname(procs)}: {e.strerror}") from None
    os.write(go_w, b"g")
    for sig in STOP_SIGNALS:  # the stop signal is the relay's to answer; outer keeps copying its output
        signal.signal(sig, signal.SIG_IGN)
    log = plan["log"]
    logpump.pump(out_r, 1, logpump.Budget(log["budget"], log["cap"]) if log else None)
    return _exit_code(os.waitpid(child, 0)[1])


def _refuse(error: LayerError, argv: list[str]) -> None:
    layer, why = error.args
    _say(f"relaychaos sandbox: layer '{layer}' could not be applied: {why}; `{argv[0]}` was not run\n")
    os._exit(126)


def main(args: list[str]) -> None:
    if len(args) < 3 or args[1] != "--":
        _say("usage: python -m relaychaos.sandbox PLAN_JSON -- ARGV...\n")
        os._exit(2)
    plan, argv = json.loads(args[0]), args[2:]
    try:
        _arm_parent_death(plan["parent"])
        if plan["isolation"] or plan["log"]:
            os._exit(outer(plan, argv))
        confine(plan, notify=False)
    except LayerError as e:
        _refuse(e, argv)
    execute(argv)


if __name__ == "__main__":
    main(sys.argv[1:])
