"""Verdicts: what a checker found, for whom, and the events that show it.

A verdict names the rule, the GUID (when the rule is about one), a one-line
summary, the contract clause broken, and the history events (and account calls)
that show it. Turning it into text is the reports' job (relaychaos.reports.incident).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass(frozen=True)
class Verdict:
    """A broken rule. `events` are history indices; `calls` are account-call sequence numbers;
    `clause` the contract clause broken (relaychaos.contract; None: the rule's first)."""

    rule: str
    guid: str | None
    summary: str
    events: tuple[int, ...] = ()
    calls: tuple[int, ...] = ()
    details: dict = field(default_factory=dict)
    clause: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)
