"""The one table of broken relays: what each one gets wrong, and the scenarios and rules that catch it.

Read by the kill matrix (tests/test_kill_matrix.py), the power check (tests/test_power.py),
the benchmarks, and the kill-matrix table of docs/relays.md (checked by the tests). Pure data: the harness's
scenario and rule names as strings; nothing here imports the harness.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .catalogue import description

RELAYS = Path(__file__).resolve().parent.parent  # relay_under_test/


@dataclass(frozen=True)
class Mutant:
    """One broken relay: `caught_by` are the named scenarios meant to catch it; the first of them must
    name `rules[0]` among its verdicts; `needs_interleaving` bugs are the state machine's power check."""

    name: str
    bug: str
    caught_by: tuple[str, ...]
    rules: tuple[str, ...]
    needs_interleaving: bool = False

    @property
    def folder(self) -> Path:
        return RELAYS / ("base" if self.name == "base" else f"mutants/{self.name}")

    @property
    def manifest(self) -> Path:
        return self.folder / "relay.toml"


def _m(name: str, caught_by: tuple[str, ...], rules: tuple[str, ...], needs_interleaving: bool = False) -> Mutant:
    return Mutant(name, description(name), caught_by, rules, needs_interleaving)


MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "base",
        "Forwards every request it receives, with no duplicate protection: a resend is a second debit.",
        ("dropped-response-to-channel", "race-32-one-relay"),
        ("one-account-call",),
        True,
    ),
    _m("check_then_insert", ("race-32-one-relay",), ("one-account-call",), True),
    _m("process_lock", ("race-pairs-two-relays",), ("one-account-call",)),
    _m("write_after_call", ("happy-path", "kill-after-applied-before-done"), ("write-before-send",), True),
    _m("memory_ledger", ("restart-keeps-the-ledger", "race-32-two-relays"), ("one-account-call",), True),
    _m(
        "timeout_as_failed",
        ("dropped-response-downstream", "latency-beyond-timeout"),
        ("answer-codes", "one-account-call"),
        True,
    ),
    _m("refused_as_unknown", ("proxy-down-refused",), ("answer-codes",)),
    _m("unknown_resent", ("dropped-response-downstream",), ("one-account-call",)),
    _m("fresh_done_response", ("resend-after-done",), ("done-replay",)),
    _m("e903_waits", ("resend-while-in-flight",), ("e903-at-once",)),
    _m("no_e904", ("guid-reused",), ("answer-codes",)),
    _m("reprocess_unknown", ("reprocess-only-failed",), ("one-account-call",)),
    _m("reprocess_new_guid", ("reprocess-same-guid",), ("guid-preserved",)),
    _m("no_attempt_cap", ("reprocess-attempt-cap",), ("attempt-cap",)),
    _m("resolve_ignores_min_age", ("min-age-trap",), ("resolve-min-age", "one-account-call")),
    _m("resolve_skips_orphans", ("kill-after-applied-before-done",), ("converged",)),
    _m("query_failure_as_not_found", ("resolve-query-fails",), ("resolve-keeps-unanswered",)),
    _m("purge_undecided", ("purge-keeps-undecided",), ("transitions", "one-account-call")),
    _m("purge_ignores_retention", ("purge-retention",), ("purge-retention",)),
)
BY_NAME = {m.name: m for m in MUTANTS}


def readme_table() -> str:
    """The kill-matrix table of docs/relays.md."""
    lines = ["| broken relay | caught by | rule |", "|---|---|---|"]
    lines += [
        f"| {'base (no dedup)' if m.name == 'base' else m.name} | {', '.join(m.caught_by)} | {', '.join(m.rules)} |"
        for m in MUTANTS
    ]
    return "\n".join(lines)
