"""The results JSON of a run: one entry per scenario with its outcome and, when it failed, why.

Written by the pytest plugin as the session goes (`--relaychaos-results PATH`), after each
scenario finishes, on the xdist controller only, from the reports every worker sent back.
Each entry names its kept history and relay logs (`history`, `logs`: paths relative to the
run folder, relaychaos.run_folder); `partial` is true when the run was cut short, and then
`unfinished` names the scenarios that had started but not finished. `random_stories` says whether
the state machine ran and, when it did not, why (a named scenario had already shown a bug,
relaychaos.plugin.machine_gate). `relaychaos recheck`
loads a file with `RunResults.load` and writes it again with new verdicts.
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from relaychaos.reports.atomic import write_text

NOT_EXERCISED = "not exercised"  # the outcome of a scenario whose rules held but whose fault met nothing


@dataclass
class ScenarioResult:
    nodeid: str
    outcome: str  # passed | failed | error | skipped | not exercised (every rule held, a landing claim missed)
    duration_s: float
    verdicts: list[dict] = field(default_factory=list)
    message: str | None = None
    notes: list[str] = field(default_factory=list)  # observations that are not verdicts
    stateful: dict | None = None  # the stateful machine's own account: examples, seed, first failure
    history: str | None = None  # the history judged (histories/<name>.jsonl[.gz]), relative to the run folder
    histories: list[str] = field(default_factory=list)  # every history the test kept (most keep one)
    logs: str | None = None  # its relay logs' folder (logs/<name>), relative to the run folder
    landing: list[dict] = field(default_factory=list)  # each landing claim: claim, kind, status, why, events
    cells: list[list[str]] = field(default_factory=list)  # (fault, row state) its faults reached (checkers.coverage)


@dataclass
class RunResults:
    relay: str
    relay_name: str
    sandbox: dict = field(default_factory=dict)  # the level enforced (relaychaos.sandbox.policy.probe)
    started_at: float = field(default_factory=time.time)
    scenarios: dict[str, ScenarioResult] = field(default_factory=dict)
    expected: int | None = None  # how many scenarios the run collected (unknown until collection ends)
    partial: bool = False  # the run was cut short (Ctrl-C): only what finished is here
    finished: set[str] = field(default_factory=set)  # node ids whose teardown was reported
    finished_at: float | None = None  # kept from the file by load(); a live run writes the time of writing
    extra: dict = field(default_factory=dict)  # keys of a loaded file this class does not produce, kept as they are
    provides: list[str] | None = None  # what the relay offers the rules (Profile.provides); None: everything

    def add(
        self,
        nodeid: str,
        when: str,
        outcome: str,
        duration: float,
        message: str | None,
        verdicts: list[dict] | None = None,
        notes: list[str] | None = None,
        stateful: dict | None = None,
        kept: dict | None = None,
        landing: list[dict] | None = None,
        cells: list | None = None,
    ) -> None:
        """Fold one pytest phase report in: a failing setup/teardown is an `error` of the scenario.

        A later phase's report repeats the earlier phases' properties: verdicts and histories are taken once."""
        entry = self.scenarios.setdefault(nodeid, ScenarioResult(nodeid, "passed", 0.0))
        entry.duration_s += duration
        if outcome == "failed":
            entry.outcome = "failed" if when == "call" else "error"
            entry.message = message
        elif outcome == "skipped" and entry.outcome == "passed":
            exercised = not (message or "").startswith(NOT_EXERCISED)
            entry.outcome, entry.message = "skipped" if exercised else NOT_EXERCISED, message
        entry.landing += [x for x in landing or [] if x not in entry.landing]
        entry.cells += [list(c) for c in cells or [] if list(c) not in entry.cells]
        entry.verdicts += [v for v in verdicts or [] if v not in entry.verdicts]
        entry.notes += [n for n in notes or [] if n not in entry.notes]
        entry.stateful = stateful or entry.stateful
        kept = kept or {}
        entry.histories += [h for h in kept.get("histories", []) if h not in entry.histories]
        entry.history = entry.histories[0] if entry.histories else None
        entry.logs = kept.get("logs") or entry.logs
        if when not in ("setup", "call"):  # teardown, or xdist's "???" for a test whose worker crashed
            self.finished.add(nodeid)

    def summary(self) -> dict[str, int]:
        counts = {"passed": 0, "failed": 0, "error": 0, "skipped": 0, NOT_EXERCISED: 0}
        for s in self.scenarios.values():
            counts[s.outcome] += 1
        return counts

    def by_rule(self) -> dict[str, dict]:
        """Per rule of the rule book: held or not, and which scenarios broke it (a grader's score sheet); a rule
        the relay could not be judged by (`provides`) is `held: null` with the reason in `not_checked`."""
        from relaychaos.checkers import RULES, not_checked

        skipped = not_checked(self.provides)

        broken: dict[str, set[str]] = {}
        for s in self.scenarios.values():
            for v in s.verdicts:
                broken.setdefault(v["rule"], set()).add(v.get("scenario") or s.nodeid)
        return {
            rule.id: {
                "what": rule.text,
                "contract": rule.sections,
                "held": None if rule.id in skipped else rule.id not in broken,
                "broken_in": sorted(broken.get(rule.id, ())),
                **({"not_checked": skipped[rule.id]} if rule.id in skipped else {}),
            }
            for rule in RULES.values()
        }

    def coverage(self) -> dict:
        """The coverage grid: {fault: {row state: [scenarios that reached it]}}, every cell listed (an empty list:
        nothing reached it); a scenario not exercised reaches nothing."""
        from relaychaos.checkers.coverage import FAULTS, STATES

        grid: dict[str, dict[str, list[str]]] = {f: {s: [] for s in STATES} for f in FAULTS}
        for s in sorted(self.scenarios.values(), key=lambda s: s.nodeid):
            if s.outcome not in ("passed", "failed"):
                continue
            for fault, state in s.cells:
                if fault in grid and state in grid[fault]:
                    grid[fault][state].append(s.nodeid.split("::")[-1])
        return grid

    def notes(self) -> list[str]:
        """Every scenario's notes on the relay, each once, with the scenario it came from."""
        return [
            f"{s.nodeid.split('::')[-1]}: {n}"
            for s in sorted(self.scenarios.values(), key=lambda s: s.nodeid)
            for n in s.notes
        ]

    def random_stories(self) -> dict | None:
        """{ran, why_not, examples, shrunk} of the state machine, or None when the run had none."""
        info = next((s.stateful for s in self.scenarios.values() if s.stateful is not None), None)
        if info is None:
            return None
        if info.get("why_not"):
            return {"ran": False, "why_not": info["why_not"], "examples_stopped": info.get("examples")}
        return {
            "ran": True,
            "why_not": None,
            "examples": info.get("examples"),
            "exercised": info.get("exercised"),
            "unexercised": info.get("unexercised"),
            "shrunk": info.get("shrunk"),
            "shrink_s": info.get("shrink_s"),
        }

    def done(self) -> list[ScenarioResult]:
        """The scenarios that finished (their teardown reported), by node id: what results.json lists."""
        return [s for s in sorted(self.scenarios.values(), key=lambda s: s.nodeid) if s.nodeid in self.finished]

    def write(self, path: Path) -> None:
        """Write the results JSON atomically (a reader never sees half a file)."""
        write_text(path, json.dumps(self.as_dict(), indent=2))

    def as_dict(self) -> dict:
        """The results JSON's content: what `write` writes, and what the reports read of a loaded file."""
        done = RunResults(
            self.relay, self.relay_name, scenarios={s.nodeid: s for s in self.done()}, provides=self.provides
        )
        data = {
            **self.extra,
            "relay": self.relay,
            "relay_name": self.relay_name,
            "sandbox": self.sandbox,
            "started_at": self.started_at,
            "finished_at": self.finished_at or time.time(),
            "expected": self.expected,
            "partial": self.partial,
            "summary": done.summary(),
            "ok": done.summary()["failed"] == 0 and done.summary()["error"] == 0,  # every rule held
            "exercised": done.summary()[NOT_EXERCISED] == 0,  # every scenario's faults met their transfers
            "rules": done.by_rule(),
            "notes": done.notes(),
            "random_stories": done.random_stories(),
            "coverage": done.coverage(),
            "scenarios": [asdict(s) for s in done.scenarios.values()],
        }
        if self.provides is not None:
            data["provides"] = self.provides
        unfinished = sorted(set(self.scenarios) - self.finished)
        if unfinished:
            data["unfinished"] = unfinished
        return data

    @classmethod
    def load(cls, path: Path) -> RunResults:
        """A results.json as written above (every scenario in it counts as finished)."""
        data = json.loads(Path(path).read_text())
        known = {f.name for f in dataclasses.fields(ScenarioResult)}
        scenarios = {
            s["nodeid"]: ScenarioResult(**{k: v for k, v in s.items() if k in known}) for s in data.get("scenarios", [])
        }
        derived = {
            "summary",
            "ok",
            "exercised",
            "rules",
            "notes",
            "scenarios",
            "random_stories",
            "coverage",
        }  # made again; "unfinished" is kept as it was
        own = {"relay", "relay_name", "sandbox", "started_at", "finished_at", "expected", "partial", "provides"}
        return cls(
            data["relay"],
            data.get("relay_name", ""),
            data.get("sandbox") or {},
            data.get("started_at", time.time()),
            scenarios,
            data.get("expected"),
            bool(data.get("partial")),
            set(scenarios),
            data.get("finished_at"),
            {k: v for k, v in data.items() if k not in derived | own},
            data.get("provides"),
        )
