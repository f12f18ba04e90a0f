"""Ctrl-C during `relaychaos run`: one line, the finished scenarios written and marked partial, exit 130,
nothing left."""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import ROOT
from .leftovers import made_since, slots_left

pytestmark = pytest.mark.stack


def descendants(pid: int) -> set[int]:
    """Every process below pid, by walking /proc's parent links."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.add(child)
            todo.append(child)
    return out


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_ctrl_c_writes_the_partial_results_and_report_says_one_line_exits_130_and_leaves_nothing(tmp_path):
    out = tmp_path / "run"
    began = time.time()
    proc = subprocess.Popen(
        [sys.executable, "-m", "relaychaos.commands.cli", "run", "--out", str(out), "--", "-m", "not stateful"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own group: the terminal's Ctrl-C, as a test can send it
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # as in a terminal
    results = out / "results.json"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and proc.poll() is None:
        if results.exists() and json.loads(results.read_text())["scenarios"]:
            break
        time.sleep(0.2)
    assert proc.poll() is None, "the suite ended before it could be interrupted"
    below = descendants(proc.pid)
    os.killpg(proc.pid, signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=150)

    assert proc.returncode == 130, stdout + stderr
    m = re.search(r"relaychaos: interrupted after (\d+) of (\d+) scenarios; partial results and report in", stdout)
    assert m and 1 <= int(m.group(1)) < int(m.group(2)), stdout
    tail = stdout[stdout.index("relaychaos: running") :] + stderr
    for noise in ("Traceback", "KeyboardInterrupt", "PluggyTeardownRaisedWarning"):
        assert noise not in tail, tail
    data = json.loads(results.read_text())
    assert data["partial"] is True and len(data["scenarios"]) == int(m.group(1))
    assert data["expected"] == int(m.group(2))
    assert "Partial: the run was interrupted after" in (out / "report.html").read_text()
    time.sleep(0.5)
    left = [pid for pid in below if alive(pid)]
    assert not left, f"still running after the interrupt: {left}"
    left = {n: what for n, what in slots_left(set(made_since(began))).items() if what}
    assert not left, f"the run's sandbox slots were not cleared: {left}"
