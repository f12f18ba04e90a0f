"""A reconstruction written as a scenario file (relaychaos.engine.scenario_file), a comment on every step.

    written = write(out, head_lines(plan, bundle, head), plan.walk(), plan, bundle, keep=...)

The file starts with what was imported and what was inferred (the notes: clock offset,
opening balances, skipped lines), then the scenario's keys and an `expect` block naming the
rules the incident broke; then the steps, each preceded by the log lines it came from; and
last the `incident` block: the rules production broke and by which labels, the labels'
production GUIDs, what the channel got for each label in production, how many calls the
account system received for each, and the ledger's last word on each (written last because
the answers are gathered while the steps are; a story gives the night's). Steps
are formatted from their plain values (no YAML library per step) and checked as they are
written, by the scenario file's own checks: linear in the night's length, and the night's
steps are never all in memory. The file replaces an earlier one whole, once it is complete.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from relaychaos.atomic import replacing
from relaychaos.engine import scenario_file
from relaychaos.engine import steps as S
from relaychaos.engine.story_checks import label_number
from relaychaos.incidents.faults import Planned, Unreceived
from relaychaos.incidents.spill import Runs

if TYPE_CHECKING:
    from relaychaos.incidents.balances import Accounts
    from relaychaos.incidents.bundle import Bundle
    from relaychaos.incidents.reconstruct import Plan

PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
YAML_WORDS = {"true", "false", "yes", "no", "on", "off", "null", "y", "n"}
LOADED_BELOW = 5000  # a file with fewer steps is also loaded back whole, as a check of its YAML


@dataclass(frozen=True)
class Head:
    """The scenario file's keys and the expectation, as given to the import."""

    name: str
    description: str
    account_timeout_ms: int
    relay: str | None
    holds_on: list[str]
    source: str  # what the file was made from, for its first line


class Answers:
    """What the channel got for each label in production, gathered as the sends are written (on disk past a run,
    spill.Runs: a night has a million labels) and read back in the labels' order (g1, g2, ...), a label's answers in
    the order written: one answer as a string (most labels), several as a list."""

    def __init__(self) -> None:
        self.rows = Runs()
        self.closed = False

    def __len__(self) -> int:
        return len(self.rows)

    def add(self, label: str, got: tuple[str, ...]) -> None:
        number = label_number(label)
        self.rows.add((1 << 62 if number is None else number, label, len(self.rows), got))

    def items(self) -> Iterator[tuple[str, str | list[str]]]:
        if not self.closed:
            self.rows.close()
            self.closed = True
        label, answers = None, []
        for _, this, _, got in self.rows:
            if this != label and label is not None:
                yield label, answers[0] if len(answers) == 1 else answers
                answers = []
            label = this
            answers += got
        if label is not None:
            yield label, answers[0] if len(answers) == 1 else answers

    def of(self, labels: set[str]) -> dict[str, str | list[str]]:
        """The answers of these labels."""
        return {label: got for label, got in self.items() if label in labels}


@dataclass
class Written:
    """A written scenario file: its path, how many steps, the steps kept for a story, and what the channel got
    for each label in production (from the sends written)."""

    path: Path
    steps: int = 0
    kept: list[Planned] = field(default_factory=list)
    answers: Answers = field(default_factory=Answers)


def scalar(value: object) -> str:
    """One plain value as YAML: a bare word where YAML reads it back as the same string, else JSON."""
    if type(value) is str:
        return (
            value
            if PLAIN.fullmatch(value) and (len(value) > 5 or value.lower() not in YAML_WORDS)
            else json.dumps(value)
        )
    if type(value) is int:
        return repr(value)
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(scalar(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{scalar(str(k))}: {scalar(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"not a plain value: {value!r}")


def step_line(step: S.Step) -> str:
    """`  - send: {guid: g1, amount: 75}`: the step's kind and the fields that differ from their defaults (field
    names are plain words; a bare value is written as it is)."""
    args = S.changed_fields(step)
    if not args:
        return f"  - {S.kind(step)}"
    parts = []
    for k, v in args.items():
        if type(v) is str and len(v) > 5 and PLAIN.fullmatch(v) or type(v) is int:
            parts.append(f"{k if k != 'n' else scalar(k)}: {v}")
        else:
            parts.append(f"{scalar(k)}: {scalar(v)}")
    return f"  - {S.kind(step)}: {{{', '.join(parts)}}}"


def head_lines(
    plan: Plan, bundle: Bundle, head: Head, extra: Iterable[str] = (), accounts: Accounts | None = None
) -> list[str | Iterator[str]]:
    """The file's comments and keys, up to `steps:`, a string each (several lines, some), and the accounts as
    lines read as they are written; `accounts`: the opening balances to write (default: every account the night
    opens)."""
    out: list[str | Iterator[str]] = [
        f"# Incident imported by `relaychaos incident import {head.source}`.",
        f"# {bundle.counts['channel']} channel records, {bundle.counts['account']} account records, "
        f"{bundle.counts['operations']} operations records"
        f"{', the ledger ' + bundle.ledger_file if bundle.ledger_file else ''}.",
    ]
    out += [f"# {line}" for line in extra]
    out.append(
        "# GUIDs are labels here (the harness makes them unique per run); the incident block at the end names "
        "production's."
    )
    out += [f"# Note: {note}" for note in bundle.notes + plan.notes]
    if plan.rules:
        out.append(f"# The logs show the incident broke: {', '.join(plan.rules)}.")
    if not head.relay:
        out.append("# The relay that ran is not named (incident.toml `relay`, or --relay): expect lists only holds_on.")
    data: dict = {"name": head.name, "description": head.description, "account_timeout_ms": head.account_timeout_ms}
    out.append(_dumped(data))
    # a night may open a million accounts: written a line each, as the steps are (a YAML library would hold a node
    # for each, hundreds of MB)
    opened = plan.accounts if accounts is None else accounts
    out.append("accounts:" if len(opened) else "accounts: {}")
    out.append((f"  {scalar(k)}: {scalar(v)}" for k, v in opened.items()))
    rest: dict = {"relays": list(plan.relays)}
    if plan.ledger_lock_delay_ms:
        rest["ledger_lock_delay_ms"] = plan.ledger_lock_delay_ms
    expect: dict = {"holds_on": head.holds_on}
    if head.relay and plan.rules:
        expect["breaks"] = {head.relay: plan.rules}
    rest["expect"] = expect
    out.append(_dumped(rest))
    return out


def _dumped(data: dict) -> str:
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=False, allow_unicode=True, width=100).rstrip()


def incident_lines(
    plan: Plan, bundle: Bundle, answers: Answers | dict[str, str | list[str]], labels: set[str] | None
) -> Iterator[str]:
    """The incident block; `labels` narrows it to a story's GUIDs."""

    def shown(label: str) -> bool:
        return labels is None or label in labels

    yield "incident:"
    yield f"  rules: {scalar(plan.rules)}"
    yield "  broke:"
    for rule, found in plan.broke.items():
        yield f"    {rule}: {scalar([x for x in found if shown(x)])}"
    yield "  guids:"
    yield from (f"    {label}: {scalar(guid)}" for label, guid, _, _ in plan.night.incident() if shown(label))
    if answers:
        yield "  answers:"
        yield from (f"    {label}: {scalar(got)}" for label, got in answers.items())
    yield "  calls:"  # the account system's calls per label in production (its log's lines)
    yield from (f"    {label}: {calls}" for label, _, calls, _ in plan.night.incident() if shown(label))
    words = ((label, word) for label, _, _, word in plan.night.incident() if word is not None and shown(label))
    first = next(words, None)
    if first is not None:
        yield "  ledger:"
        yield from (f"    {label}: {scalar(word)}" for label, word in itertools.chain((first,), words))


def write(
    out: Path,
    head: list[str | Iterator[str]],
    planned: Iterable[Planned | Unreceived],
    plan: Plan,
    bundle: Bundle,
    labels: set[str] | None = None,
    keep: Callable[[Planned], bool] | None = None,
    answers: dict[str, str | list[str]] | None = None,
) -> Written:
    """Write the scenario file (see the module doc): ScenarioFileError (and no file) if its steps do not check.
    `answers`: production's answers for the incident block (a story's, from its night) instead of those of the
    sends written."""
    out = Path(out)
    written = Written(out)
    with replacing(out) as f:  # a check that fails leaves no file
        for part in head:
            f.writelines([part + "\n"] if isinstance(part, str) else (line + "\n" for line in part))
        f.write("steps:\n")

        def steps() -> Iterator[S.Step]:
            for p in planned:
                f.write(f"  # {p.comment}\n")
                if p.step is None:
                    continue
                f.write(step_line(p.step) + "\n")
                written.steps += 1
                if p.got and isinstance(p.step, (S.Send, S.Race)):  # only a send or race has answers
                    written.answers.add(p.step.guid, p.got)
                if keep is not None and keep(p):
                    written.kept.append(p)
                yield p.step

        scenario_file.check(steps(), plan.relays, out)
        for line in incident_lines(plan, bundle, written.answers if answers is None else answers, labels):
            f.write(line + "\n")
    if written.steps < LOADED_BELOW:
        scenario_file.load(out)
    return written
