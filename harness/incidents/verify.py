"""Did the replay reproduce the incident? Runs on real stacks, and the judgement of one run.

    with Replayer(out, "auto") as replayer:
        result = replayer.run(scenario, relay)            # a ChaosResult, in out/run-N/
    found = reproduced(result, scenario, rules)          # Reproduction: missing (rule, label) pairs, ...

A Replayer keeps the run's services (relaychaos.run.services: one Toxiproxy server, one
account-system fixture in the shape the relays call) for all its runs (a shrink replays tens
of candidates) and gives each run a fresh stack in a folder of its own
(out/run-1, out/run-2, ...: a reused folder never mixes two runs). The incident was
reproduced when every rule expected broke for every production GUID the logs show breaking
it (a rule without a GUID, such as balances, broke at all). The replay's answers are
compared with production's per GUID (`answers`), and so are the calls the account system
received before the run's closing phase (`calls`; the closing phase's resolve and reprocess
are the harness's, not production's): what differs is counted and shown. A reproduction is
faithful when, besides, nothing differs: the story is production's, not another way to the
same verdicts.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from relaychaos.checkers.facts import Facts
from relaychaos.engine import steps as S
from relaychaos.history import header
from relaychaos.run.chaos import ChaosResult, run_and_check
from relaychaos.run.definition import RunDefinition
from relaychaos.run.services import Services
from relaychaos.stack import manifest

EXAMPLES_SHOWN = 5


@dataclass
class Reproduction:
    """One run judged against what the logs show."""

    expected: list[tuple[str, str | None]]  # (rule, label or None)
    missing: list[tuple[str, str | None]] = field(default_factory=list)
    differ: list[tuple[str, list[str], list[str]]] = field(default_factory=list)  # (label, production, replay)
    compared: int = 0
    calls_differ: list[tuple[str, int, int]] = field(default_factory=list)  # (label, production, replay)
    calls_compared: int = 0

    @property
    def ok(self) -> bool:
        return not self.missing

    @property
    def faithful(self) -> bool:
        """Reproduced, with production's answers and account calls for every GUID compared."""
        return self.ok and not self.differ and not self.calls_differ


def expected(scenario: S.Scenario, rules: list[str] | None = None) -> list[tuple[str, str | None]]:
    """(rule, label) pairs the incident block says production broke, for these rules; (rule, None) for a rule
    that names no GUID there."""
    broke = scenario.incident.get("broke", {})
    rules = scenario.incident.get("rules", []) if rules is None else rules
    out = []
    for rule in rules:
        out += [(rule, label) for label in broke.get(rule, [])] or [(rule, None)]
    return out


def reproduced(result: ChaosResult, scenario: S.Scenario, rules: list[str] | None = None) -> Reproduction:
    """Judge one run: which expected (rule, GUID) broke, and how the answers compare with production's."""
    label_of = header(result.history).label_of()
    seen = {(v.rule, label_of.get(v.guid) if v.guid else None) for v in result.verdicts}
    rules_seen = {v.rule for v in result.verdicts}
    want = expected(scenario, rules)
    missing = [
        (rule, label)
        for rule, label in want
        if (label is None and rule not in rules_seen) or (label is not None and (rule, label) not in seen)
    ]
    out = Reproduction(want, missing)
    facts = Facts(result.history)
    _compare(out, facts, scenario.incident.get("answers", {}), label_of)
    closing = next((e.time for e in result.history.where(f="converge", type="invoke")), float("inf"))
    _count_calls(out, facts, closing, scenario.incident.get("calls", {}), label_of)
    return out


def _compare(out: Reproduction, facts: Facts, production: dict, label_of: dict) -> None:
    """Per label: what the channel got in the replay against what it got in production (as multisets)."""
    replay: dict[str, list[str]] = {}
    for call in facts.channel:
        label = label_of.get(call.guid)
        if label is not None:
            replay.setdefault(label, []).append(call.code if call.code else "timeout")
    for label, answers in production.items():
        answers = [answers] if isinstance(answers, str) else list(answers)
        got = replay.get(label, [])
        out.compared += 1
        if Counter(answers) != Counter(got):
            out.differ.append((label, answers, got))


def _count_calls(out: Reproduction, facts: Facts, closing: float, production: dict, label_of: dict) -> None:
    """Per label: the account calls received before the closing phase began (at `closing`), against production's."""
    replay: Counter = Counter()
    for call in facts.account_calls:
        label = label_of.get(call.get("guid"))
        if label is not None and call.get("received_at", closing) < closing:
            replay[label] += 1
    for label, calls in production.items():
        out.calls_compared += 1
        if replay[label] != calls:
            out.calls_differ.append((label, calls, replay[label]))


def describe(found: Reproduction, production: dict[str, str], relay: str) -> list[str]:
    """What a person reads: reproduced or not (which rule and GUID is missing), and the answers compared."""

    def who(label: str | None) -> str:
        return f"{production.get(label, '?')} ({label})" if label else "(no GUID)"

    def pairs(found_pairs: list[tuple[str, str | None]]) -> str:
        return ", ".join(f"{rule} by {who(label)}" if label else rule for rule, label in found_pairs)

    lines = [
        f"reproduced on {relay}: {pairs(found.expected)}"
        if found.ok
        else f"NOT reproduced on {relay}: missing {pairs(found.missing)}"
    ]
    if found.differ:
        lines.append(
            f"answers: {len(found.differ)} of {found.compared} GUIDs got other answers than in production, "
            "e.g. "
            + "; ".join(
                f"{who(label)}: production {', '.join(p) or 'nothing'}, replay {', '.join(r) or 'nothing'}"
                for label, p, r in found.differ[:EXAMPLES_SHOWN]
            )
        )
    elif found.compared:
        lines.append(f"answers: all {found.compared} GUIDs got the answers they got in production")
    if found.calls_differ:
        lines.append(
            f"account calls: {len(found.calls_differ)} of {found.calls_compared} GUIDs were called another "
            "number of times than in production before the closing phase, e.g. "
            + "; ".join(
                f"{who(label)}: production {p}, replay {r}" for label, p, r in found.calls_differ[:EXAMPLES_SHOWN]
            )
        )
    elif found.calls_compared:
        lines.append(f"account calls: all {found.calls_compared} GUIDs were called as often as in production")
    return lines


def replay_notes(result: ChaosResult, scenario: S.Scenario) -> list[str]:
    """What `relaychaos replay` adds for an imported incident: the answers compared, and where reproduction is
    judged."""
    found = reproduced(result, scenario)
    lines = describe(found, scenario.incident.get("guids", {}), "this relay")[1:]
    return lines + [
        f"this is an imported incident (production broke {', '.join(scenario.incident.get('rules', []))}): "
        "replay judges the rules (exit 0: every rule held); `relaychaos incident verify` judges whether "
        "a relay reproduces the incident"
    ]


class Replayer:
    """Real stacks for several runs: the run's services (relaychaos.run.services: one Toxiproxy, one account system
    in each relay's shape), a fresh stack and folder per run."""

    def __init__(self, out: Path, sandbox: str, sandbox_limit: str | None = None):
        self.out, self.given = Path(out).resolve(), {"sandbox": sandbox, "sandbox_limit": sandbox_limit}
        self.services: list[Services] = []  # one per account-system shape the relays call
        self.runs = 0

    def __enter__(self) -> Replayer:
        self.out.mkdir(parents=True, exist_ok=True)
        os.chmod(self.out, 0o700)
        self.runs = max([int(p.name[4:]) for p in self.out.glob("run-*") if p.name[4:].isdigit()], default=0)
        return self

    def __exit__(self, *exc: object) -> None:
        services, self.services = self.services, []
        for each in services:
            each.close()

    def _services(self, relay: Path) -> Services:
        run = RunDefinition.build({**self.given, "relay": str(relay)})
        for each in self.services:
            if each.run.profile.downstream == run.profile.downstream:
                return each
        self.services.append(Services(run, self.out))
        return self.services[-1]

    def run(self, scenario: S.Scenario, relay: Path) -> ChaosResult:
        services = self._services(relay)
        self.runs += 1
        with services.stack(
            self.out / f"run-{self.runs}",
            scenario.name,
            manifest=manifest.load(relay),
            accounts=scenario.accounts,
            account_timeout_ms=scenario.account_timeout_ms,
        ) as stack:
            return run_and_check(stack, scenario)
