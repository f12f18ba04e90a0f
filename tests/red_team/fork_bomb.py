"""Red team, class 12: fork bombs.

Before the first `serve` of each stack answers (so that it is done before the scenario goes on), from a child
in a session of its own: fork until the kernel refuses, each child a `sleep` ignoring the stop signals, and
count how many run at once (the slot's pids.current) against `tasks` (512, every process and thread of the
relay); then threads the same way. The children carry this module's name as their argv[0]: if any outlives
the grade, the test finds it.
"""

import os
import signal
import sys
import threading
import time

from .evidence import Attack, Refused, first_time, is_serve, whoami
from .reference.__main__ import main

NAME = "fork_bomb"
ATTEMPTS = ("processes", "threads")
A = Attack(NAME)
TASKS, HOLD_S = 512, 3.0
LIMITS = {"ready_timeout_s": 30}


def bomb() -> str:
    """Fork until refused, from a session leader child; how many were made."""
    r, w = os.pipe()
    leader = os.fork()
    if leader == 0:
        os.close(r)
        os.setsid()
        made, why = 0, "no refusal"
        while made < 4 * TASKS:
            try:
                pid = os.fork()
            except OSError as e:
                why = e.strerror
                break
            if pid == 0:
                for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
                    signal.signal(sig, signal.SIG_IGN)
                os.execv("/bin/sleep", [f"red-team-{NAME}", f"{HOLD_S:g}"])
            made += 1
        try:
            current = open("/sys/fs/cgroup/pids/pids.current").read().strip()
        except OSError:
            current = "?"
        os.write(w, f"{made} {current} {why}".encode())
        os.close(w)
        time.sleep(HOLD_S)
        os.killpg(0, signal.SIGKILL)
    os.close(w)
    said = os.read(r, 4096).decode().split(" ", 2)
    os.close(r)
    os.waitpid(leader, 0)
    made, current, why = int(said[0]), said[1], said[2]
    if current.isdigit() and int(current) > TASKS:
        return f"{current} tasks running at once in the slot (tasks limit {TASKS}; {made} forks)"
    raise Refused(f"{made} processes, then: {why} (slot's pids.current {current})")


def threads() -> str:
    for _ in range(100):  # the bomb's processes are reaped by the namespace's init first
        if int(open("/sys/fs/cgroup/pids/pids.current").read()) < 50:
            break
        time.sleep(0.1)
    stop, made, why = threading.Event(), 0, "no refusal"
    try:
        while made < 4 * TASKS:
            threading.Thread(target=stop.wait, daemon=True).start()
            made += 1
    except RuntimeError as e:
        why = str(e)
    finally:
        stop.set()
    if made > TASKS:
        return f"{made} threads at once (tasks limit {TASKS})"
    raise Refused(f"{made} threads, then: {why}")


def attack() -> None:
    A.run("processes", bomb)
    A.run("threads", threads)


if __name__ == "__main__":
    whoami(NAME, sys.argv[1])
    if is_serve(sys.argv[1:]) and first_time(NAME):
        attack()
    sys.exit(main(sys.argv[1:]))
