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
from pathlib import Path
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

    def line(self) -> str:
        """A one-line rendering for timelines: `#12 +0.153s channel-0 ok transfer guid=g1 code=0000`."""
        shown = " ".join(f"{k}={_short(v)}" for k, v in self.value.items() if k not in ("request", "body"))
        return f"#{self.index} {self.process} {self.type} {self.f} {shown}".rstrip()


class History:
    """An append-only, thread-safe event log; `append` is the only way in."""

    def __init__(self, events: list[Event] | None = None):
        self._events: list[Event] = list(events or [])
        self._lock = threading.Lock()

    def append(self, process: str, type: str, f: str, **value: Any) -> Event:
        if type not in TYPES:
            raise ValueError(f"event type must be one of {TYPES}, not {type!r}")
        with self._lock:
            event = Event(len(self._events), time.monotonic(), process, type, f, value)
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

    def save(self, path: Path) -> None:
        """Write the log as JSON lines, one event a line."""
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w") as out:
            for e in list(self._events):
                out.write(json.dumps(asdict(e), default=str) + "\n")

    @classmethod
    def load(cls, path: Path) -> "History":
        with open(path) as src:
            return cls([Event(**json.loads(line)) for line in src if line.strip()])


def _short(value: Any, limit: int = 80) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"
