"""One entry of a history (Jepsen-shaped): its index, monotonic time, process, type, function and value.

Kept apart from relaychaos.history, which also writes and reads history files:
the checkers import this module and stay free of I/O.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

TYPES = ("invoke", "ok", "fail", "info")


@dataclass(frozen=True, slots=True)
class Event:
    """One entry of the history. `time` is CLOCK_MONOTONIC seconds, shared by all local processes."""

    index: int
    time: float
    process: str
    type: str
    f: str
    value: dict[str, Any] = field(default_factory=dict)

    @property
    def guid(self) -> str | None:
        return self.value.get("guid")
