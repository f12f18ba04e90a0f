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

    @classmethod
    def not_judged(cls, rule: str, error: BaseException) -> Verdict:
        """The verdict of a rule whose checker raised: `unknown` (Jepsen's :unknown), never "held" and never a
        fault of the relay; it names the rule and the exception, and the other rules still judge."""
        what = f"{type(error).__name__}: {error}"
        return cls(
            rule,
            None,
            f"unknown: the checker of this rule raised {what}; the rule was not judged (a harness bug, not the "
            "relay's: report it with the history)",
            details={"unknown": True, "error": what},
        )

    @property
    def unknown(self) -> bool:
        """The rule was not judged (its checker raised): neither held nor broken."""
        return bool(self.details.get("unknown"))

    def to_dict(self) -> dict:
        return asdict(self)
