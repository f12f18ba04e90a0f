"""A reconstruction written as a scenario file (relaychaos.engine.scenario_file), a comment on every step.

    lines = render(plan, bundle, head=Head(name=..., ...))        # the file's lines, made as they are written
    write(lines, Path("night.yaml"), plan.steps, plan.relays)

The file starts with what was imported and what was inferred (the notes: clock offset,
opening balances, skipped lines), then the scenario's keys, an `expect` block naming the
rules the incident broke, an `incident` block (the labels' production GUIDs, which labels
broke which rule, what the channel got for each label in production), and the steps, each
preceded by the log lines it came from. Steps are written as YAML flow mappings by a
formatter of their plain values (no YAML library per step: linear in the night's length).
`write` keeps the file only once its steps pass the scenario file's checks, replacing the
file whole.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

import yaml

from relaychaos.engine import scenario_file
from relaychaos.engine import steps as S

PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
YAML_WORDS = {"true", "false", "yes", "no", "on", "off", "null", "y", "n"}
LOADED_BELOW = 5000  # a file with fewer steps is also loaded back as a check; a longer one's steps are checked


@dataclass(frozen=True)
class Head:
    """The scenario file's keys and the expectation, as given to the import."""

    name: str
    description: str
    account_timeout_ms: int
    relay: str | None
    holds_on: list[str]
    source: str  # what the file was made from, for its first line


def scalar(value) -> str:
    """One plain value as YAML: a bare word where YAML reads it back as the same string, else JSON."""
    if isinstance(value, str):
        return value if PLAIN.fullmatch(value) and value.lower() not in YAML_WORDS else json.dumps(value)
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(scalar(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{scalar(str(k))}: {scalar(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"not a plain value: {value!r}")


def step_line(step) -> str:
    args = S.changed_fields(step)
    return f"  - {S.kind(step)}: {scalar(args)}" if args else f"  - {S.kind(step)}"


def _block(key: str, value) -> list[str]:
    return [f"{key}:"] + [f"  {scalar(str(k))}: {scalar(v)}" for k, v in value.items()] if value else []


def render(plan, bundle, head: Head, steps=None, labels=None, extra: Iterable[str] = ()) -> Iterator[str]:
    """The file's lines (see the module doc); `steps` and `labels` narrow it to a story of the night."""
    labels = set(plan.labels.values()) if labels is None else set(labels)
    steps = plan.steps if steps is None else steps
    yield f"# Incident imported by `relaychaos incident import {head.source}`."
    yield (f"# {len(bundle.channel)} channel records, {len(bundle.account)} account records, "
           f"{len(bundle.operations)} operations records{', the ledger ' + bundle.ledger_file if bundle.ledger_file else ''}.")
    for line in extra:
        yield f"# {line}"
    yield "# GUIDs are labels here (the harness makes them unique per run); the incident block names production's."
    for note in plan.notes:
        yield f"# Note: {note}"
    if plan.rules:
        yield f"# The logs show the incident broke: {', '.join(plan.rules)}."
    if not head.relay:
        yield "# The relay that ran is not named (incident.toml `relay`, or --relay): expect lists only holds_on."
    data = {"name": head.name, "description": head.description, "account_timeout_ms": head.account_timeout_ms,
            "accounts": plan.accounts, "relays": list(plan.relays)}
    expect: dict = {"holds_on": head.holds_on}
    if head.relay and plan.rules:
        expect["breaks"] = {head.relay: plan.rules}
    data["expect"] = expect
    yield yaml.safe_dump(data, sort_keys=False, default_flow_style=False, allow_unicode=True, width=100).rstrip()
    yield "incident:"
    yield f"  rules: {scalar(plan.rules)}"
    broke = {rule: [x for x in found if x in labels] for rule, found in plan.broke.items()}
    yield from (f"  {line}" for line in _block("broke", broke))
    guids = {label: guid for guid, label in plan.labels.items() if label in labels}
    yield from (f"  {line}" for line in _block("guids", guids))
    yield from (f"  {line}" for line in _block("answers", {k: v for k, v in plan.answers.items() if k in labels}))
    ledger = {label: _ledger_word(bundle.ledger.get(guid)) for guid, label in plan.labels.items()
              if label in labels and guid in bundle.ledger}
    yield from (f"  {line}" for line in _block("ledger", ledger))
    yield "steps:"
    for planned in steps:
        yield f"  # {planned.comment}"
        yield step_line(planned.step)


def _ledger_word(row: dict | None) -> str:
    """The ledger's last word on a GUID: `DONE 0000 after 2 attempt(s)`."""
    return " ".join(str(x) for x in (row.get("status"), row.get("resp_code") or "", "after", row.get("attempts"),
                                       "attempt(s)") if x != "")


def write(lines: Iterable[str], out: Path, steps: list, relays: tuple[str, ...]) -> Path:
    """Check the steps (ScenarioFileError naming the problem), write the file whole, and load it back when short."""
    out = Path(out)
    scenario_file.check([p.step for p in steps], relays, out)
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(f".{out.name}.partial")
    with open(partial, "w", encoding="utf-8") as f:
        for line in lines:
            f.write(line)
            f.write("\n")
    os.replace(partial, out)
    if len(steps) < LOADED_BELOW:
        scenario_file.load(out)
    return out
