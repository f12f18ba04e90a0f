"""The grading run's progress: one live line on a terminal, plain lines elsewhere (CI logs, files).

[3/19] alice: 21/34 scenarios, 2 verdicts, last race-32-one-relay (machine running) | 0:41 elapsed, ETA 4:10
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

from relaychaos.records.grade import GradeRecord
from relaychaos.records.results import ScenarioResult


def clock(seconds: float) -> str:
    seconds = int(max(0, seconds))
    return (
        f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"
        if seconds >= 3600
        else f"{seconds // 60}:{seconds % 60:02d}"
    )


class Progress:
    """Tells a person how the batch goes; `live` (a terminal) rewrites one line, else prints one per event."""

    def __init__(self, total: int, stream: TextIO = sys.stderr, live: bool | None = None):
        self.total, self.stream = total, stream
        self.live = stream.isatty() if live is None else live
        self.started = time.monotonic()
        self.finished = 0
        self.spent: list[float] = []
        self._last = ""

    def eta(self) -> str:
        if not self.spent:
            return "ETA unknown"
        return f"ETA {clock(sum(self.spent) / len(self.spent) * (self.total - self.finished))}"

    def update(self, index: int, name: str, expected: int, state: dict) -> None:
        """A running submission's state: the results so far (`done`)."""
        if not self.live:
            return
        done: list[ScenarioResult] = state.get("done", [])
        verdicts = sum(len(s.verdicts) for s in done)
        last = done[-1].nodeid.rsplit("[", 1)[-1].rstrip("]") if done else "starting"
        line = (
            f"[{index}/{self.total}] {name}: {len(done)}/{expected} scenarios, {verdicts} verdicts, last {last}"
            f" | {clock(time.monotonic() - self.started)} elapsed, {self.eta()}"
        )
        self._write(line)

    def finish(self, index: int, record: GradeRecord) -> None:
        """A submission graded: one line that stays."""
        self.finished += 1
        self.spent.append(record.execution_time_s)
        failed = sum(1 for s in record.scenarios if s.outcome == "failed")
        what = (record.error or "").split("\n")[0] or f"{failed} scenarios broke rules"
        cut = ", cut at the time budget" if record.timed_out else ""
        line = (
            f"[{index}/{self.total}] {record.submission}: {record.score:g}/{record.max_score:g} "
            f"({what}{cut}) in {record.execution_time_s:.1f} s | "
            f"{clock(time.monotonic() - self.started)} elapsed, {self.eta()}"
        )
        self._write(line, keep=True)

    def _write(self, line: str, keep: bool = False) -> None:
        if self.live:
            pad = max(0, len(self._last) - len(line))
            self.stream.write("\r" + line + " " * pad + ("\n" if keep else ""))
            self._last = "" if keep else line
        else:
            self.stream.write(line + "\n")
        self.stream.flush()
