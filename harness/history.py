"""The append-only history of a run: every call, fault, process event and observation, in order.

Shaped after Jepsen's histories: each event has an index (its place in the log),
a monotonic time, the process that acted, a type (`invoke`, then `ok`/`fail`/
`info` for its completion; `info` when the outcome is indeterminate), a function
name `f` and a value. Events are never changed or removed; verdicts and
timelines are derived from the log alone, and a saved log can be checked again.
"""
from __future__ import annotations

import json
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Iterator

TYPES = ("invoke", "ok", "fail", "info")


@dataclass(frozen=True)
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


class History:
    """An append-only, thread-safe event log; `append` is the only way in."""

    def __init__(self, events: list[Event] | None = None):
        self._events: list[Event] = list(events or [])
        self._lock = threading.Lock()

    def append(self, process: str, type: str, f: str, at: float | None = None, **value: Any) -> Event:
        """Add one event at monotonic time `at` (now, if not given); see harness.recorder for the kinds."""
        if type not in TYPES:
            raise ValueError(f"event type must be one of {TYPES}, not {type!r}")
        with self._lock:
            event = Event(len(self._events), time.monotonic() if at is None else at, process, type, f, value)
            self._events.append(event)
        return event

    def __iter__(self) -> Iterator[Event]:
        return iter(list(self._events))

    def __len__(self) -> int:
        return len(self._events)

    def __getitem__(self, index: int) -> Event:
        return self._events[index]

    def where(self, *, f: str | None = None, type: str | None = None, guid: str | None = None,
              process: str | None = None) -> list[Event]:
        """The events matching every filter given, in history order."""
        return [e for e in self._events
                if (f is None or e.f == f) and (type is None or e.type == type)
                and (guid is None or e.guid == guid) and (process is None or e.process == process)]

    def dumps(self) -> str:
        """The log as JSON lines, one event a line (what a saved history file holds)."""
        return "".join(json.dumps(asdict(e), default=str) + "\n" for e in list(self._events))

    @classmethod
    def loads(cls, text: str) -> "History":
        """A history from its JSON lines."""
        return cls([Event(**json.loads(line)) for line in text.splitlines() if line.strip()])
