"""The results JSON of a run: one entry per scenario with its outcome and, when it failed, why.

Written by the pytest plugin at the end of a session (`--relaychaos-results PATH`),
on the xdist controller only, from the reports every worker sent back.
"""
from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from relaychaos.reports.atomic import write_text


@dataclass
class ScenarioResult:
    nodeid: str
    outcome: str  # passed | failed | error | skipped
    duration_s: float
    verdicts: list[dict] = field(default_factory=list)
    message: str | None = None
    notes: list[str] = field(default_factory=list)  # observations that are not verdicts
    stateful: dict | None = None  # the stateful machine's own account: examples, seed, first failure


@dataclass
class RunResults:
    relay: str
    relay_name: str
    sandbox: dict = field(default_factory=dict)  # the level enforced (relaychaos.sandbox.policy.probe)
    started_at: float = field(default_factory=time.time)
    scenarios: dict[str, ScenarioResult] = field(default_factory=dict)

    def add(self, nodeid: str, when: str, outcome: str, duration: float, message: str | None,
            verdicts: list[dict] | None = None, notes: list[str] | None = None,
            stateful: dict | None = None) -> None:
        """Fold one pytest phase report in: a failing setup/teardown is an `error` of the scenario."""
        entry = self.scenarios.setdefault(nodeid, ScenarioResult(nodeid, "passed", 0.0))
        entry.duration_s += duration
        if outcome == "failed":
            entry.outcome = "failed" if when == "call" else "error"
            entry.message = message
        elif outcome == "skipped" and entry.outcome == "passed":
            entry.outcome = "skipped"
        entry.verdicts += verdicts or []
        entry.notes += [n for n in notes or [] if n not in entry.notes]
        entry.stateful = stateful or entry.stateful

    def summary(self) -> dict[str, int]:
        counts = {"passed": 0, "failed": 0, "error": 0, "skipped": 0}
        for s in self.scenarios.values():
            counts[s.outcome] += 1
        return counts

    def by_rule(self) -> dict[str, dict]:
        """Per rule of the rule book: held or not, and which scenarios broke it (a grader's score sheet)."""
        from relaychaos.checkers import RULES

        broken: dict[str, set[str]] = {}
        for s in self.scenarios.values():
            for v in s.verdicts:
                broken.setdefault(v["rule"], set()).add(v.get("scenario") or s.nodeid)
        return {rule.id: {"what": rule.text, "contract": rule.sections, "held": rule.id not in broken,
                          "broken_in": sorted(broken.get(rule.id, ()))}
                for rule in RULES.values()}

    def notes(self) -> list[str]:
        """Every scenario's notes on the relay, each once, with the scenario it came from."""
        return [f"{s.nodeid.split('::')[-1]}: {n}" for s in sorted(self.scenarios.values(), key=lambda s: s.nodeid)
                for n in s.notes]

    def write(self, path: Path) -> None:
        """Write the results JSON atomically (a reader never sees half a file)."""
        data = {"relay": self.relay, "relay_name": self.relay_name, "sandbox": self.sandbox,
                "started_at": self.started_at,
                "finished_at": time.time(), "summary": self.summary(),
                "ok": self.summary()["failed"] == 0 and self.summary()["error"] == 0,
                "rules": self.by_rule(), "notes": self.notes(),
                "scenarios": [asdict(s) for s in sorted(self.scenarios.values(), key=lambda s: s.nodeid)]}
        write_text(path, json.dumps(data, indent=2))
