"""results.json of a run: the typed record that relaychaos.reports.results writes and every reader reads.

    data = ResultsFile.from_json(path.read_text())   # ValueError naming the field when it is not one
    data.scenarios[0].verdicts[0].rule               # what was a string-key lookup
    path.write_text(data.to_json())                  # the file as it has always been (indent 2, ASCII)

One entry per finished scenario (`ScenarioResult`), and what is derived from them: the summary's
counts, each rule held or not (`rules`), the notes, the state machine's account
(`random_stories`) and the coverage grid. A field the file holds only sometimes (`provides`,
`unfinished`, `rechecked`; a verdict's `scenario`) is UNSET when absent. Published as
docs/schemas/results.schema.json (relaychaos.records.schemas).
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from .base import UNSET, Record, UnsetType

Outcome = Literal["passed", "failed", "error", "skipped", "not exercised"]


class VerdictRecord(Record, kw_only=True):
    """A broken rule as results.json keeps it (relaychaos.checkers.verdict.Verdict, its tuples as lists)."""

    rule: str
    guid: str | None
    summary: str
    events: list[int] = []  # history indices that show it
    calls: list[int] = []  # account-call sequence numbers
    details: dict[str, Any] = {}  # the checker's own account; `unknown: true` when the rule was not judged
    clause: str | None = None  # the contract clause broken
    scenario: str | UnsetType = UNSET  # the scenario that showed it

    @property
    def unknown(self) -> bool:
        """The rule was not judged (its checker raised)."""
        return bool(self.details.get("unknown"))


class LandingRecord(Record, kw_only=True):
    """A landing claim's outcome (relaychaos.checkers.landing.Landing)."""

    claim: str
    kind: str
    status: str  # landed | missed | unknown | not applicable
    why: str
    events: list[int] = []
    scenario: str | UnsetType = UNSET


class MachineAccount(Record, kw_only=True):
    """The state machine's own account of its run (scenarios/test_stateful.py); absent keys are UNSET."""

    examples: int | None | UnsetType = UNSET
    exercised: int | None | UnsetType = UNSET  # examples in which some fault met a transfer
    unexercised: int | None | UnsetType = UNSET  # examples whose faults all met nothing
    seed: int | None | UnsetType = UNSET
    first_report: str | None | UnsetType = UNSET
    last_report: str | None | UnsetType = UNSET
    ran: bool | UnsetType = UNSET
    why_not: str | None | UnsetType = UNSET  # why it did not run (a named scenario had shown a bug)
    shrunk: bool | UnsetType = UNSET
    shrink_s: float | None | UnsetType = UNSET
    shrink_budget_s: float | None | UnsetType = UNSET
    slowest_example_s: float | None | UnsetType = UNSET
    examples_after_failure: int | None | UnsetType = UNSET  # real runs after the first failure (shrinking's)
    cut_candidates: int | None | UnsetType = UNSET


class ScenarioResult(Record, kw_only=True):
    """One scenario of the run: its outcome, verdicts, notes and what the run folder kept of it."""

    nodeid: str
    outcome: Outcome  # not exercised: every rule held, a landing claim missed
    duration_s: float
    verdicts: list[VerdictRecord] = []
    message: str | None = None
    notes: list[str] = []  # observations that are not verdicts
    stateful: MachineAccount | None = None  # the stateful machine's own account: examples, seed, first failure
    history: str | None = None  # the history judged (histories/<name>.jsonl[.gz]), relative to the run folder
    histories: list[str] = []  # every history the test kept (most keep one)
    logs: str | None = None  # its relay logs' folder (logs/<name>), relative to the run folder
    landing: list[LandingRecord] = []  # each landing claim: claim, kind, status, why, events
    cells: list[list[str]] = []  # (fault, row state) its faults reached (checkers.coverage)

    @property
    def name(self) -> str:
        """The scenario's name: the last part of its node id."""
        return self.nodeid.split("::")[-1]


class Summary(Record, kw_only=True):
    """How many finished scenarios ended each way."""

    passed: int = 0
    failed: int = 0
    error: int = 0
    skipped: int = 0
    not_exercised: int = msgspec.field(default=0, name="not exercised")


class RuleScore(Record, kw_only=True):
    """One rule of the rule book: held or not, where it broke; `held` null when it could not be judged."""

    what: str
    contract: str
    held: bool | None
    broken_in: list[str] = []
    not_checked: str | UnsetType = UNSET  # why the relay could not be judged by it (its profile)


class RandomStories(Record, kw_only=True):
    """Whether the state machine ran and, when it did not, why; its counts when it did."""

    ran: bool
    why_not: str | None = None
    examples_stopped: int | None | UnsetType = UNSET  # examples run before it was stopped
    examples: int | None | UnsetType = UNSET
    exercised: int | None | UnsetType = UNSET
    unexercised: int | None | UnsetType = UNSET
    shrunk: bool | None | UnsetType = UNSET
    shrink_s: float | None | UnsetType = UNSET


class Rechecked(Record, kw_only=True):
    """What `relaychaos recheck` last did: when, how many histories, which scenarios it judged differently."""

    at: float
    histories: int
    changed: list[str] = []


class ResultsFile(Record, kw_only=True):
    """results.json: a run's scenarios with their outcomes and verdicts, and the score sheet made from them."""

    rechecked: Rechecked | UnsetType = UNSET
    relay: str  # the relay.toml run
    relay_name: str = ""
    sandbox: dict[str, Any] = {}  # the level enforced (relaychaos.sandbox.levels)
    started_at: float = 0.0
    finished_at: float | None = None
    expected: int | None = None  # how many scenarios the run collected
    partial: bool = False  # cut short (Ctrl-C): only what finished is here
    summary: Summary = msgspec.field(default_factory=Summary)
    ok: bool = True  # every rule held
    exercised: bool = True  # every scenario's faults met their transfers
    rules: dict[str, RuleScore] = {}
    notes: list[str] = []
    random_stories: RandomStories | None = None
    coverage: dict[str, dict[str, list[str]]] = {}  # fault -> row state -> the scenarios that reached it
    scenarios: list[ScenarioResult] = []
    provides: list[str] | UnsetType = UNSET  # what the relay offers the rules, when less than everything
    profile: str | UnsetType = UNSET  # a relay of another profile than the course's (its words: relaychaos.words)
    commands: dict[str, str] | UnsetType = UNSET  # a keyed service's batch commands in its own words
    unfinished: list[str] | UnsetType = UNSET  # scenarios started but not finished (a run cut short)
    relay_env: dict[str, str] | UnsetType = UNSET  # the relay's own variables ([env] of its relay.toml), as given
