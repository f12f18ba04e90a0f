"""The suite's pytest process, as `relaychaos run` and `relaychaos grade` build, start and stop it.

    argv = suite_command(relay, out, out / "results.json", {"sandbox": "auto", "shrink_s": 5.0}, extra)
    rc, interrupted, mid_line = run_suite(argv, cwd)          # relaychaos run: output passed through
    proc = start(argv, log, cwd); ...; stop(proc, grace_s=5)   # relaychaos grade: output to a log

`suite_command` is the one builder of the suite's command line: its own pytest.ini in the
run's folder, the relay, the results file, and the options of relaychaos.options by name.
pytest runs in a process group of its own, with SIGINT at its default (set by a small exec
wrapper: a command started in the background of a script inherits SIGINT ignored), so that
a Ctrl-C reaches the command line alone; `stop` sends one SIGINT to the whole group (pytest
and its xdist workers, which close their stacks and write the results that finished), and
kills the group if it has not finished within `grace_s`. `run_suite` stops passing the
output on once interrupted, so the person sees one line and no traceback. The relays and
fixtures run in sessions of their own (stack.processes) and are closed by the workers, as
on any interrupt.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, BinaryIO

from relaychaos import options, paths

STOP_WAIT_S = 60.0  # for the workers to close their stacks and pytest to write the results
# --assert=plain: pytest would rewrite the assertions of every module of relaychaos (the package of a pytest11
# plugin), about 0.9 CPU-seconds per pytest process where bytecode is not cached (PYTHONDONTWRITEBYTECODE); the
# suite's verdicts carry their own words (ChaosResult.assert_holds), so nothing is lost
SUITE_INI = "[pytest]\naddopts = -p no:cacheprovider --assert=plain\n"
# SIGINT back at its default, then the command: the one change a child needs before it runs
INTERRUPTIBLE = (
    "-c",
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])",
)


def suite_command(
    relay: Path, folder: Path, results: Path, values: Mapping[str, object], extra: Sequence[str] = ()
) -> list[str]:
    """The pytest command line of the chaos suite against `relay`: its pytest.ini written into `folder`,
    its results to `results`, the options named in `values` (relaychaos.options) passed on, `extra` last."""
    (folder / "pytest.ini").write_text(SUITE_INI)
    suite = str(paths.suite())
    head = [sys.executable, "-m", "pytest", suite, "--rootdir", suite, "-c", str(folder / "pytest.ini")]
    head += ["--relay", str(relay), "--relaychaos-results", str(results), "-q"]
    return head + options.pytest_args(values, options.OPTIONS) + list(extra)


def interruptible(argv: Sequence[str]) -> list[str]:
    """`argv` run with SIGINT at its default, whatever this process inherited."""
    return [sys.executable, *INTERRUPTIBLE, *argv]


def start(argv: Sequence[str], log: Path, cwd: Path, env: Mapping[str, str] | None = None) -> subprocess.Popen:
    """The suite in a process group of its own, its output appended to `log`."""
    with open(log, "ab") as f:
        return subprocess.Popen(
            interruptible(argv),
            cwd=cwd,
            stdout=f,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=None if env is None else dict(env),
            process_group=0,
        )


def _pump(source: IO[bytes], target: BinaryIO, echo: threading.Event, last: dict[BinaryIO, bytes]) -> None:
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


def run_suite(argv: list[str], cwd: str | Path) -> tuple[int, bool, bool]:
    """Run pytest; (its exit status, whether the person interrupted it, whether its output stopped mid-line)."""
    proc = subprocess.Popen(
        interruptible(argv),
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        process_group=0,
    )
    echo = threading.Event()
    echo.set()
    last: dict[BinaryIO, bytes] = {}
    pumps = [
        threading.Thread(target=_pump, args=(pipe, stream.buffer, echo, last), daemon=True)
        for pipe, stream in ((proc.stdout, sys.stdout), (proc.stderr, sys.stderr))
    ]
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


def stop(proc: subprocess.Popen | None, grace_s: float = STOP_WAIT_S) -> None:
    """One SIGINT to pytest's group (it closes its stacks), a kill of the group if it has not finished within
    `grace_s`; then whatever is left of the group goes."""
    if proc is None:
        return
    for sig in (signal.SIGINT, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:  # the group is gone already
            break
        deadline = time.monotonic() + grace_s
        while True:
            try:
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
                break
            except subprocess.TimeoutExpired:
                break
            except KeyboardInterrupt:  # another Ctrl-C: the stop is under way, wait on
                continue
        if proc.returncode is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # a worker pytest left behind
            break
    proc.wait()
