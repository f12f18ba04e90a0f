"""The calls a history records, folded from their events: channel requests and batch runs.

A ChannelCall keeps only the fields the rules read (not its two events), so a
history of a million events fits in memory as its calls.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Protocol

from relaychaos.events import Event

TRANSFER_FIELDS = ("guid", "from", "to", "amount")
GUID_FORM = re.compile(r"[A-Za-z0-9_-]{1,64}")


def classify_body(raw: str) -> tuple[dict | None, tuple[str, ...]]:
    """(the transfer, its extra field names) when a body is well-formed per contract §3, else (None, ()).

    Malformed means: not a JSON object, a missing field, a field of the wrong type, or
    a value outside the ranges (guid 1-64 of A-Z a-z 0-9 - _, amount an integer > 0).
    Fields beyond the four do not make a body malformed (v1.1): they are returned apart.
    """
    try:
        body = json.loads(raw)
    except ValueError:
        return None, ()
    if not isinstance(body, dict):
        return None, ()
    guid, src, dst, amount = (body.get(k) for k in TRANSFER_FIELDS)
    if not (
        isinstance(guid, str)
        and GUID_FORM.fullmatch(guid)
        and isinstance(src, str)
        and isinstance(dst, str)
        and type(amount) is int
        and amount > 0
    ):
        return None, ()
    return {k: body[k] for k in TRANSFER_FIELDS}, tuple(sorted(set(body) - set(TRANSFER_FIELDS)))


class ChannelCall:
    """One channel request (its `invoke` event) and its completion (`ok`/`info`/`fail`; none if it never completed).

    A raw body that is a well-formed transfer counts as a send of its GUID (with extra
    fields set aside); only a malformed one is `malformed`. `guid` is the request's GUID (the
    invoke's `guid` field for a malformed body). `invoked_at`/`completed_at`
    are the events' times, `index`/`end_index` their places in the history.
    """

    __slots__ = (
        "index",
        "invoked_at",
        "sent_guid",
        "guid",
        "raw",
        "intent",
        "race",
        "request",
        "extra_fields",
        "end_index",
        "completed_at",
        "end_type",
        "code",
        "status",
        "body",
        "sent_at",
        "retransmits",
    )

    def __init__(self, invoke: Event):
        v = invoke.value
        self.index: int = invoke.index
        self.invoked_at: float = invoke.time
        self.sent_guid: str | None = v.get("guid")
        self.raw: str | None = v.get("raw")
        self.intent: str | None = v.get("intent")
        self.race: int | None = v.get("race")
        self.request: dict | None = v.get("request")
        self.extra_fields: tuple[str, ...] = ()
        if self.raw is not None:
            self.request, self.extra_fields = classify_body(self.raw)
        self.guid: str | None = self.request["guid"] if self.request else self.sent_guid
        # set by `complete` (all None while the call has not completed)
        self.end_index: int | None = None
        self.completed_at: float | None = None
        self.end_type: str | None = None
        self.code: str | None = None
        self.status: int | None = None
        self.body: str | None = None
        self.sent_at: float | None = invoke.time  # None: the request never was on an established connection
        self.retransmits: int | None = None

    def complete(self, e: Event) -> None:
        """Fold in the completion event."""
        v = e.value
        self.end_index, self.completed_at, self.end_type = e.index, e.time, e.type
        if e.type == "ok":
            self.code, self.status, self.body = v.get("code"), v.get("status"), v.get("body")
        if "sent_at" in v:
            self.sent_at = v["sent_at"]
        self.retransmits = v.get("retransmits")

    @property
    def completed(self) -> bool:
        return self.end_index is not None

    @property
    def body_guid(self) -> str | None:
        """The `guid` field of a raw body, as written (even when it is malformed)."""
        try:
            body = json.loads(self.raw or "")
        except ValueError:
            return None
        return body.get("guid") if isinstance(body, dict) and isinstance(body.get("guid"), str) else None

    @property
    def malformed(self) -> bool:
        return self.raw is not None and self.request is None

    @property
    def delayed_accept(self) -> bool:
        """Whether the connection needed TCP retransmits (the relay's accept queue overflowed)."""
        return bool(self.completed and self.retransmits)

    @property
    def timing_judged(self) -> bool:
        """Whether this call's time to answer is judged (contract §3 v1.1: counted once the request reached it).

        `sent_at`: when the request was on an established connection (None: it never was);
        the invoke time in old histories.
        """
        return self.completed and self.sent_at is not None and not self.delayed_accept

    @property
    def answered(self) -> bool:
        return self.end_type == "ok"

    @property
    def events(self) -> tuple[int, ...]:
        return (self.index,) if self.end_index is None else (self.index, self.end_index)


@dataclass
class Batch:
    """One run of resolve/reprocess/purge: its argument, wall-clock start, and how it ended."""

    command: str
    invoke: Event
    end: Event | None

    @property
    def argument(self) -> float | None:
        return self.invoke.value.get("argument")

    @property
    def wall(self) -> float:
        return self.invoke.value.get("wall", 0.0)


class EndedBatch(Protocol):
    """A Batch that ended and was given an argument: what Facts.batch_windows yields."""

    command: str
    invoke: Event
    end: Event

    @property
    def argument(self) -> float: ...

    @property
    def wall(self) -> float: ...
