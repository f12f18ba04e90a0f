"""Red team, class 1: root through the start diagnosis.

The first `serve` of each stack exits at once, so the harness diagnoses the failed start by running serve
once more "with the resource limits raised" (sandbox/diagnose.py). That second start is the attack: is it
still the slot's uid, with no_new_privs, seccomp, its own namespaces and Landlock? Can it write the run
folder, read other submissions or hidden scenario files, or leave a daemon that rewrites the harness's
outputs (grade.json, results.json, gradebook.csv) after the grade? The daemon carries this module's name in
its command line, so the test sees it if it outlives the run.
"""

import os
import signal
import socket
import sys
import time

from .evidence import (
    HARNESS_OUTPUTS,
    Attack,
    Refused,
    account_host,
    emit,
    find_files,
    first_time,
    is_serve,
    read_first,
    scratch,
    whoami,
)
from .reference.__main__ import main

NAME = "diagnosis_root"
ATTEMPTS = (
    "diagnosed",
    "uid",
    "no_new_privs",
    "seccomp",
    "namespaces",
    "landlock-net",
    "run-folder",
    "results",
    "other-submissions",
    "hidden-scenarios",
    "daemon-survives",
)
LIMITS = {"ready_timeout_s": 4}
A = Attack(NAME)


def status_field(name: str) -> str:
    for line in open("/proc/self/status"):
        if line.startswith(name + ":"):
            return line.split(":", 1)[1].strip()
    return "?"


def check_uid():
    ids = (os.getuid(), os.geteuid(), os.getgid(), os.getegid())
    cap = status_field("CapEff")
    if 0 in ids or int(cap, 16) != 0:
        return f"ids {ids}, CapEff {cap}"
    raise Refused(f"uid/gid {ids}, CapEff {cap}")


def check_nnp():
    if status_field("NoNewPrivs") != "1":
        return f"NoNewPrivs {status_field('NoNewPrivs')}"
    raise Refused("NoNewPrivs 1")


def check_seccomp():
    if status_field("Seccomp") != "2":
        return f"Seccomp {status_field('Seccomp')}"
    raise Refused("Seccomp 2 (filter)")


def check_namespaces():
    seen = []
    if socket.gethostname() != "relay":
        seen.append(f"host name {socket.gethostname()}")
    others = [p for p in os.listdir("/proc") if p.isdigit() and os.stat(f"/proc/{p}").st_uid != os.getuid()]
    if others:
        seen.append(f"processes of other users: {others[:10]}")
    links = sorted(os.listdir("/sys/class/net"))
    if any(not (n == "lo" or n.endswith("-r")) for n in links):
        seen.append(f"interfaces {links}")
    if seen:
        return "; ".join(seen)
    raise Refused(f"host name relay, own processes only, interfaces {links}")


def check_landlock_net():
    s = socket.socket()
    s.settimeout(2)
    try:
        s.connect((account_host(), 22))
    except PermissionError as e:
        raise Refused(f"connect to :22 {e.strerror}") from None
    except OSError as e:
        return f"connect to {account_host()}:22 went out ({e.strerror}): Landlock did not stop it"
    finally:
        s.close()
    return f"connected to {account_host()}:22"


def write_run_folder():
    tried = []
    for folder in ("/work/main/runs", "/var/tmp", "/work", "/run/relaychaos", "/", os.path.dirname(os.getcwd())):
        path = os.path.join(folder, f"red-team-{NAME}-{os.getpid()}")
        try:
            with open(path, "w") as f:
                f.write("written from the start diagnosis\n")
            return f"wrote {path}"
        except OSError as e:
            tried.append(f"{folder}: {e.strerror}")
    raise Refused("; ".join(tried))


def open_outputs():
    hits = find_files(names=HARNESS_OUTPUTS)
    for path in hits:
        try:
            with open(path, "a"):
                return f"opened {path} for writing"
        except OSError:
            continue
    raise Refused(f"no harness output writable ({len(hits)} seen)")


def daemon(tag: str) -> None:
    """Fork a daemon that tries, for a minute, to rewrite the harness's outputs; it heartbeats in /tmp."""
    if os.fork():
        return
    os.setsid()
    if os.fork():
        os._exit(0)
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_IGN)
    sys.argv[0] = f"red-team {NAME} daemon"
    beat = scratch(f"rt-daemon-{tag}")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with open(beat, "w") as f:
                f.write(str(time.time()))
        except OSError:
            pass
        for path in find_files(names=HARNESS_OUTPUTS, budget_s=1.0):
            try:
                with open(path, "a") as f:
                    f.write("\nred team was here\n")
            except OSError:
                pass
        time.sleep(1)
    os._exit(0)


def daemon_survives():
    """Did the daemon of the first (failed) start outlive it? Its heartbeat would still move."""
    beat = scratch("rt-daemon-first")
    try:
        before = os.stat(beat).st_mtime
    except FileNotFoundError:
        raise Refused("the first start left no heartbeat") from None
    time.sleep(1.5)
    after = os.stat(beat).st_mtime
    if after > before:
        return f"the first start's daemon is still running (heartbeat moved {after - before:.1f} s)"
    raise Refused(f"the first start's daemon stopped with it (heartbeat {time.time() - after:.1f} s old)")


def diagnosed() -> None:
    A.refused(
        "diagnosed",
        f"this is the second start of the stack (the diagnosis); open files limit {os.sysconf('SC_OPEN_MAX')}",
    )
    A.run("uid", check_uid)
    A.run("no_new_privs", check_nnp)
    A.run("seccomp", check_seccomp)
    A.run("namespaces", check_namespaces)
    A.run("landlock-net", check_landlock_net)
    A.run("run-folder", write_run_folder)
    A.run("results", open_outputs)
    A.run(
        "other-submissions",
        lambda: read_first(find_files(names=("relay.toml",)), "another submission's manifest", "[commands]"),
    )
    A.run("hidden-scenarios", lambda: read_first(find_files(suffixes=(".yaml", ".yml")), "scenario file", "steps"))
    A.run("daemon-survives", daemon_survives)
    daemon("second")


if __name__ == "__main__":
    whoami(NAME, sys.argv[1])
    if is_serve(sys.argv[1:]):
        if first_time("first-start"):
            daemon("first")
            emit(f"{NAME}: first start of this stack: exiting before /health so that the harness diagnoses it")
            time.sleep(0.5)
            sys.exit(3)
        diagnosed()
    sys.exit(main(sys.argv[1:]))
