"""A history's header: the value of its `scenario` event, the first thing the runner records of a run.

    header = HistoryHeader(name=..., relay=..., guids=..., tolerances=TOLERANCES.as_dict(), ...)
    recorder.scenario(header)                  # the event's value is header.to_builtins()
    header = HistoryHeader.from_builtins(event.value)   # as the checkers and recheck read it

Its fields are what a saved history needs to be judged again on its own: the scenario, its GUIDs
by label, the relay and (for a relay that offers less than every capability) its profile and what
it offers, the contract's version and the tolerances in force. Older histories and hand-built ones
lack some fields: each has a default, and the fields a header holds only sometimes (`profile`,
`provides`, `commands`, `statuses`, `tolerances`, `claims`, `incident`) are UNSET when absent. Published as
docs/schemas/history-header.schema.json (relaychaos.records.schemas).
"""

from __future__ import annotations

from typing import Any

from .base import UNSET, OpenRecord, UnsetType


class IncidentLabels(OpenRecord, kw_only=True):
    """A scenario imported from production (relaychaos.incidents): its GUIDs and what they broke there."""

    guids: dict[str, str] | None = None  # label -> the production GUID
    broke: dict[str, list[str]] | None = None  # rule -> the labels that broke it
    rules: list[str] | None = None  # the rules production broke


class HistoryHeader(OpenRecord, kw_only=True):
    """The `scenario` event's value: what a saved history needs to be judged again on its own."""

    name: str = "?"
    family: str = ""
    description: str = ""
    accounts: dict[str, int] = {}  # account -> its opening balance
    account_timeout_ms: int = 0
    max_attempts: int = 3  # the attempt cap of the final reprocess
    safe_min_age_s: float | UnsetType = UNSET  # the final --min-age at most (less when faults lifted sooner)
    guids: dict[str, str] = {}  # label -> the run's GUID
    steps: list[str] = []  # each step as words
    claims: list[dict[str, Any]] | UnsetType = UNSET  # {"claim": kind, **fields} (relaychaos.checkers.claims)
    relay: str = "?"
    profile: str | UnsetType = UNSET  # a relay of another profile than the course's
    provides: list[str] | UnsetType = UNSET  # what it offers the rules, when less than everything
    commands: dict[str, str] | UnsetType = UNSET  # a keyed service's batch commands in its words (relaychaos.words)
    statuses: list[str] | UnsetType = UNSET  # the contract's statuses a service's own ledger can show (unset: all)
    tag: str = ""
    contract: str = ""  # the contract's version
    tolerances: dict[str, float] | UnsetType = UNSET  # the tolerances in force (absent: relaychaos 0.1's, V1)
    incident: IncidentLabels | UnsetType = UNSET

    def label_of(self) -> dict[str, str]:
        """Real GUID -> the scenario's label for it."""
        return {real: label for label, real in self.guids.items()}
