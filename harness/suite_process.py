"""The suite's pytest process as `relaychaos run` starts it: output passed through, Ctrl-C turned into a clean stop.

    rc, interrupted, mid_line = run_suite(argv, cwd)

pytest runs in a process group of its own, with SIGINT at its default, so that a Ctrl-C
reaches the command line alone; it then sends one SIGINT to the whole group (pytest and its xdist workers, which
close their stacks and write the results that finished) and stops passing their output
on, so the person sees one line and no traceback. A group still running 60 s later is
killed. The relays and fixtures run in sessions of their own (stack.processes) and are
closed by the workers, as on any interrupt.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

STOP_WAIT_S = 60.0  # for the workers to close their stacks and pytest to write the results


def _pump(source, target, echo: threading.Event, last: dict) -> None:
    """Copy a pipe to one of our streams as it comes, while `echo` is set (then read and drop);
    `last[target]` is the last byte passed on."""
    fd = source.fileno()
    while chunk := os.read(fd, 65536):
        if echo.is_set():
            try:
                target.write(chunk)
                target.flush()
                last[target] = chunk[-1:]
            except (OSError, ValueError):
                echo.clear()


def _interruptible() -> None:
    """In the child before exec: SIGINT at its default (a command started in the background of a script
    inherits it ignored), so that stop()'s SIGINT reaches pytest and its workers."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run_suite(argv: list[str], cwd) -> tuple[int, bool, bool]:
    """Run pytest; (its exit status, whether the person interrupted it, whether its output stopped mid-line)."""
    proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, process_group=0, preexec_fn=_interruptible)
    echo = threading.Event()
    echo.set()
    last: dict = {}
    pumps = [threading.Thread(target=_pump, args=(pipe, stream.buffer, echo, last), daemon=True)
             for pipe, stream in ((proc.stdout, sys.stdout), (proc.stderr, sys.stderr))]
    for t in pumps:
        t.start()
    interrupted = False
    try:
        proc.wait()
    except KeyboardInterrupt:
        interrupted = True
        echo.clear()
        stop(proc)
    for t in pumps:
        t.join(timeout=5)
    return proc.returncode, interrupted, last.get(sys.stdout.buffer, b"\n") != b"\n"


def stop(proc: subprocess.Popen) -> None:
    """One SIGINT to pytest's group; a kill of the group if it has not finished within STOP_WAIT_S."""
    for sig in (signal.SIGINT, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:  # the group is gone already
            break
        deadline = time.monotonic() + STOP_WAIT_S
        while True:
            try:
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
                return
            except subprocess.TimeoutExpired:
                break
            except KeyboardInterrupt:  # another Ctrl-C: the stop is under way, wait on
                continue
    proc.wait()
