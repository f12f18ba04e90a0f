"""One entry of a history (Jepsen-shaped): its index, monotonic time, process, type, function and value.

Kept apart from relaychaos.history, which also writes and reads history files:
the checkers import this module and stay free of I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

TYPES = ("invoke", "ok", "fail", "info")  # Jepsen's: fail had no effect for certain; info's effect is unknown


class Op:
    """The op names (`Event.f`): one spelling, shared by the recorder that writes them and whatever reads them."""

    SCENARIO = "scenario"  # the header
    GUID = "guid"  # a scenario label and the GUID it stands for
    STEP = "step"
    CONVERGE = "converge"
    AGE = "age"
    WAIT_CALLS = "wait-calls"
    WAIT_ROW = "wait-row"
    TRANSFER = "transfer"  # a channel call
    ACCEPT_DELAY = "accept-delay"
    ADD_TOXIC = "add-toxic"
    REMOVE_TOXIC = "remove-toxic"
    ENABLE_PROXY = "enable-proxy"
    DISABLE_PROXY = "disable-proxy"
    SERVER_FAULT = "server-fault"
    RELEASE = "release"
    HEAL = "heal"
    KILL = "kill"
    START = "start"
    RESOLVE = "resolve"  # the batch commands: their op is the command's name
    REPROCESS = "reprocess"
    PURGE = "purge"
    TAMPERED = "tampered"
    LEDGER_SNAPSHOT = "ledger-snapshot"
    LEDGER_SCHEMA = "ledger-schema"
    ACCOUNT_STATS = "account-stats"


BATCH_COMMANDS = (Op.RESOLVE, Op.REPROCESS, Op.PURGE)

# The code a keyed service's definite refusal is recorded with (relaychaos.stack.speech): a 4xx other than
# 400, 409 and 422, nothing moved, replayed like any first answer. The course profile's refusals are B20x.
REFUSED = "REFUSED"


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
