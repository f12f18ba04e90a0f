"""The results JSON of a run: one entry per scenario with its outcome and, when it failed, why.

Written by the pytest plugin as the session goes (`--relaychaos-results PATH`), after each
scenario finishes, on the xdist controller only, from the reports every worker sent back.
Each entry names its kept history and relay logs (`history`, `logs`: paths relative to the
run folder, relaychaos.run_folder); `partial` is true when the run was cut short, and then
`unfinished` names the scenarios that had started but not finished. `random_stories` says whether
the state machine ran and, when it did not, why (a named scenario had already shown a bug,
relaychaos.plugin.machine_gate). `relaychaos recheck`
loads a file with `RunResults.load` and writes it again with new verdicts.

`RunResults` gathers a run as it goes; what it writes is a typed record, relaychaos.records.results
(`RunResults.record()`), published as docs/schemas/results.schema.json.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from relaychaos.atomic import write_text
from relaychaos.checkers import RULES, not_checked
from relaychaos.checkers.coverage import FAULTS, STATES
from relaychaos.records.base import UNSET
from relaychaos.records.results import (
    LandingRecord,
    MachineAccount,
    RandomStories,
    Rechecked,
    ResultsFile,
    RuleScore,
    ScenarioResult,
    Summary,
    VerdictRecord,
)
from relaychaos.words import Words

__all__ = ["NOT_EXERCISED", "Kept", "RunResults", "ScenarioResult"]
NOT_EXERCISED = "not exercised"  # the outcome of a scenario whose rules held but whose fault met nothing
KNOWN = frozenset(f.encode_name for f in msgspec.structs.fields(ResultsFile))


@dataclass
class Kept:
    """What the run folder kept of a test: its histories and its relay logs' folder (relative paths)."""

    histories: list[str] = field(default_factory=list)
    logs: str | None = None


@dataclass
class RunResults:
    relay: str
    relay_name: str
    sandbox: dict[str, Any] = field(default_factory=dict)  # the level enforced (relaychaos.sandbox.policy.probe)
    started_at: float = field(default_factory=time.time)
    scenarios: dict[str, ScenarioResult] = field(default_factory=dict)
    expected: int | None = None  # how many scenarios the run collected (unknown until collection ends)
    partial: bool = False  # the run was cut short (Ctrl-C): only what finished is here
    finished: set[str] = field(default_factory=set)  # node ids whose teardown was reported
    finished_at: float | None = None  # kept from the file by load(); a live run writes the time of writing
    extra: dict[str, Any] = field(default_factory=dict)  # keys of a loaded file no record declares, kept as they are
    provides: list[str] | None = None  # what the relay offers the rules (Profile.provides); None: everything
    rechecked: Rechecked | None = None  # what relaychaos recheck last did
    unfinished: list[str] = field(default_factory=list)  # as a loaded file named them
    words: Words = field(default_factory=Words)  # the relay's profile's words, for what the rules say
    relay_env: dict[str, str] = field(default_factory=dict)  # [env] of its relay.toml: config, shown as it is

    def add(
        self,
        nodeid: str,
        when: str,
        outcome: str,
        duration: float,
        message: str | None,
        verdicts: list[VerdictRecord] | None = None,
        notes: list[str] | None = None,
        stateful: MachineAccount | None = None,
        kept: Kept | None = None,
        landing: list[LandingRecord] | None = None,
        cells: list[list[str]] | None = None,
    ) -> None:
        """Fold one pytest phase report in: a failing setup/teardown is an `error` of the scenario.

        A later phase's report repeats the earlier phases' properties: verdicts and histories are taken once."""
        entry = self.scenarios.setdefault(nodeid, ScenarioResult(nodeid=nodeid, outcome="passed", duration_s=0.0))
        entry.duration_s += duration
        if outcome == "failed":
            entry.outcome = "failed" if when == "call" else "error"
            entry.message = message
        elif outcome == "skipped" and entry.outcome == "passed":
            exercised = not (message or "").startswith(NOT_EXERCISED)
            entry.outcome, entry.message = "skipped" if exercised else "not exercised", message
        entry.landing += [x for x in landing or [] if x not in entry.landing]
        entry.cells += [list(c) for c in cells or [] if list(c) not in entry.cells]
        entry.verdicts += [v for v in verdicts or [] if v not in entry.verdicts]
        entry.notes += [n for n in notes or [] if n not in entry.notes]
        entry.stateful = stateful or entry.stateful
        kept = kept or Kept()
        entry.histories += [h for h in kept.histories if h not in entry.histories]
        entry.history = entry.histories[0] if entry.histories else None
        entry.logs = kept.logs or entry.logs
        if when not in ("setup", "call"):  # teardown, or xdist's "???" for a test whose worker crashed
            self.finished.add(nodeid)

    def summary(self) -> Summary:
        counts: Counter[str] = Counter(s.outcome for s in self.scenarios.values())
        return Summary(
            passed=counts["passed"],
            failed=counts["failed"],
            error=counts["error"],
            skipped=counts["skipped"],
            not_exercised=counts[NOT_EXERCISED],
        )

    def by_rule(self) -> dict[str, RuleScore]:
        """Per rule of the rule book: held or not, and which scenarios broke it (a grader's score sheet); a rule
        the relay could not be judged by (`provides`) is `held: null` with the reason in `not_checked`."""
        skipped = not_checked(self.provides)
        broken: dict[str, set[str]] = {}
        for s in self.scenarios.values():
            for v in s.verdicts:
                broken.setdefault(v.rule, set()).add(v.scenario if v.scenario is not UNSET and v.scenario else s.nodeid)
        return {
            rule.id: RuleScore(
                what=self.words.say(rule.text),
                contract=rule.sections,
                held=None if rule.id in skipped else rule.id not in broken,
                broken_in=sorted(broken.get(rule.id, ())),
                not_checked=skipped.get(rule.id, UNSET),
            )
            for rule in RULES.values()
        }

    def coverage(self) -> dict[str, dict[str, list[str]]]:
        """The coverage grid: {fault: {row state: [scenarios that reached it]}}, every cell listed (an empty list:
        nothing reached it); a scenario not exercised reaches nothing."""
        grid: dict[str, dict[str, list[str]]] = {f: {s: [] for s in STATES} for f in FAULTS}
        for s in sorted(self.scenarios.values(), key=lambda s: s.nodeid):
            if s.outcome not in ("passed", "failed"):
                continue
            for fault, state in s.cells:
                if fault in grid and state in grid[fault]:
                    grid[fault][state].append(s.name)
        return grid

    def notes(self) -> list[str]:
        """Every scenario's notes on the relay, each once, with the scenario it came from."""
        return [f"{s.name}: {n}" for s in sorted(self.scenarios.values(), key=lambda s: s.nodeid) for n in s.notes]

    def random_stories(self) -> RandomStories | None:
        """Whether the state machine ran (and why not), its counts when it did; None when the run had none."""
        info = next((s.stateful for s in self.scenarios.values() if s.stateful is not None), None)
        if info is None:
            return None
        if info.why_not is not UNSET and info.why_not:
            return RandomStories(ran=False, why_not=info.why_not, examples_stopped=_value(info.examples))
        return RandomStories(
            ran=True,
            why_not=None,
            examples=_value(info.examples),
            exercised=_value(info.exercised),
            unexercised=_value(info.unexercised),
            shrunk=_value(info.shrunk),
            shrink_s=_value(info.shrink_s),
        )

    def done(self) -> list[ScenarioResult]:
        """The scenarios that finished (their teardown reported), by node id: what results.json lists."""
        return [s for s in sorted(self.scenarios.values(), key=lambda s: s.nodeid) if s.nodeid in self.finished]

    def record(self) -> ResultsFile:
        """The results JSON's content: what `write` writes, and what the reports read of a loaded file."""
        done = RunResults(
            self.relay,
            self.relay_name,
            scenarios={s.nodeid: s for s in self.done()},
            provides=self.provides,
            words=self.words,
        )
        summary = done.summary()
        unfinished = sorted(set(self.unfinished) | (set(self.scenarios) - self.finished))
        return ResultsFile(
            rechecked=self.rechecked or UNSET,
            relay=self.relay,
            relay_name=self.relay_name,
            sandbox=self.sandbox,
            started_at=self.started_at,
            finished_at=self.finished_at or time.time(),
            expected=self.expected,
            partial=self.partial,
            summary=summary,
            ok=summary.failed == 0 and summary.error == 0,  # every rule held
            exercised=summary.not_exercised == 0,  # every scenario's faults met their transfers
            rules=done.by_rule(),
            notes=done.notes(),
            random_stories=done.random_stories(),
            coverage=done.coverage(),
            scenarios=list(done.scenarios.values()),
            provides=UNSET if self.provides is None else self.provides,
            profile=UNSET if self.words.course else self.words.profile,
            commands=dict(self.words.commands) or UNSET,
            unfinished=unfinished or UNSET,
            relay_env=self.relay_env or UNSET,
        )

    def write(self, path: Path) -> None:
        """Write the results JSON atomically (a reader never sees half a file)."""
        data = self.record().to_builtins()
        write_text(path, json.dumps({**self.extra, **data} if self.extra else data, indent=2))

    @classmethod
    def load(cls, path: Path) -> RunResults:
        """A results.json as written above (every scenario in it counts as finished); ValueError naming the field
        when it is not one."""
        data = json.loads(Path(path).read_text())
        if not isinstance(data, dict):
            raise ValueError(f"{path}: not a results.json: a JSON {type(data).__name__}, not an object")
        read = ResultsFile.from_builtins({k: v for k, v in data.items() if k in KNOWN}, "a results.json")
        scenarios = {s.nodeid: s for s in read.scenarios}
        return cls(
            read.relay,
            read.relay_name,
            read.sandbox,
            read.started_at,
            scenarios,
            read.expected,
            read.partial,
            set(scenarios),
            read.finished_at,
            {k: v for k, v in data.items() if k not in KNOWN},
            read.provides if read.provides is not UNSET else None,
            read.rechecked if read.rechecked is not UNSET else None,
            read.unfinished if read.unfinished is not UNSET else [],
            Words.of(read.profile, read.commands),
            read.relay_env if read.relay_env is not UNSET else {},
        )

    @classmethod
    def read(cls, path: Path) -> ResultsFile:
        """The record of a results.json, its summary and score sheet made again from its scenarios."""
        return cls.load(path).record()


def _value(x: Any) -> Any:
    """A field's value, None when the account did not hold it."""
    return None if x is UNSET else x
