"""Every slack and time constant the harness judges by, each with a name and a one-line reason.

The values in force are written into each history's header (`Tolerances.as_dict`),
and checkers read them back from the history (`Tolerances.from_dict`), so a
saved history is re-judged by the tolerances it ran under. A history written
before tolerances were recorded is judged by `V1`, the values of that time.
Change a value here and every newly recorded history carries the new one.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace

# Default ACCOUNT_TIMEOUT_MS of a scenario and of a stack built without one.
DEFAULT_ACCOUNT_TIMEOUT_MS = 300


@dataclass(frozen=True)
class Tolerances:
    """The numbers the checkers and the runner use; see REASONS for why each has its value."""

    answer_extra_s: float = 1.0
    answer_slack_s: float = 0.25
    e903_at_once_s: float = 0.25
    e903_window_s: float = 0.5
    e903_wait_share: float = 0.5
    clock_slack_s: float = 0.05
    min_age_margin_s: float = 0.15
    channel_timeout_margin_s: float = 1.5
    delivery_cap_s: float = 10.0
    certain_timeout_factor: float = 2.0
    disturbing_delay_factor: float = 0.5
    retention_slack_s: float = 0.25
    collect_timeout_s: float = 30.0

    def as_dict(self) -> dict[str, float]:
        return asdict(self)

    @classmethod
    def from_dict(cls, recorded: dict | None) -> Tolerances:
        """The tolerances a history recorded; V1 for a history that recorded none."""
        if not recorded:
            return V1
        known = {f.name for f in fields(cls)}
        return replace(V1, **{k: v for k, v in recorded.items() if k in known})

    def answer_limit_s(self, account_timeout_ms: float) -> float:
        """The contract's limit on an answer (§3), before the harness's own slack."""
        return account_timeout_ms / 1000 + self.answer_extra_s

    def channel_timeout_s(self, account_timeout_ms: float) -> float:
        """How long the channel waits for an answer by default: past the limit and its slack."""
        return account_timeout_ms / 1000 + self.channel_timeout_margin_s


REASONS: dict[str, str] = {
    "answer_extra_s": "the contract's own figure (§3): an answer within ACCOUNT_TIMEOUT_MS + 1 s",
    "answer_slack_s": "the harness's scheduling between the relay writing its answer and the channel recording it",
    "e903_at_once_s": "'at once' in numbers: a duplicate's E903 needs no account call, only a ledger read",
    "e903_window_s": "a duplicate is judged only when the GUID is certainly still SENT this long after it arrived",
    "e903_wait_share": "'without waiting' in numbers while the harness holds the call: an E903 within this share "
    "of the relay's time-out is at once (an E903 before the account system answered never waited for it; "
    "e903_at_once_s is the least)",
    "clock_slack_s": "the relay's updated_at (its wall clock) against the harness's wall clock and rounding",
    "min_age_margin_s": "added to ACCOUNT_TIMEOUT_MS + the longest injected delay for the final resolve's "
    "--min-age (§6: larger than both); the delay as injected: a latency toxic counts for the time it was on its "
    "proxy, at most its latency (Toxiproxy lets what it holds go when it is removed), so a 10 s hold lifted "
    "after 30 ms adds 30 ms",
    "channel_timeout_margin_s": "the channel waits ACCOUNT_TIMEOUT_MS + this, more than the contract's 1 s "
    "plus answer_slack_s",
    "delivery_cap_s": "a racer waits this long for the relay's kernel to take its request (an overflowing "
    "accept queue retransmits for seconds), then aborts it with a reset; its answer time "
    "counts from delivery",
    "certain_timeout_factor": "a latency toxic above this × ACCOUNT_TIMEOUT_MS certainly outlasts the relay's "
    "time-out, so E901 is fixed",
    "disturbing_delay_factor": "a processing delay above this × ACCOUNT_TIMEOUT_MS may make a relay time out, "
    "so the answer's code is not fixed",
    "retention_slack_s": "purge is required to delete a DONE row only once it is this much older than "
    "--retention when purge starts",
    "collect_timeout_s": "how long the runner waits for background sends before the final phase goes on",
}

CURRENT = Tolerances()
# What the checkers used before tolerances were recorded (histories of relaychaos 0.1); a field a history did not
# record (added since) takes its value here, the rule as it was then.
V1 = Tolerances(retention_slack_s=float("inf"), e903_wait_share=0.0)
