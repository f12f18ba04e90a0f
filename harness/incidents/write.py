"""A reconstruction written as a scenario file (relaychaos.engine.scenario_file), a comment on every step.

    text = render(plan, bundle, name=..., relay=..., holds_on=[...])

The file starts with what was imported and what was inferred (the GUIDs' labels, the
clock offset if one was applied, the ledger's last word on each GUID), then the
scenario's keys, an `expect` block naming the rules the incident broke, and the steps,
each preceded by the log lines it came from. `write` checks the file loads before
keeping it.
"""
from __future__ import annotations

from pathlib import Path

import yaml

from relaychaos.engine import scenario_file
from relaychaos.engine import steps as S
from relaychaos.incidents.bundle import Bundle
from relaychaos.incidents.reconstruct import Plan


def _flow(value) -> str:
    return yaml.safe_dump(value, default_flow_style=True, sort_keys=False, width=400, allow_unicode=True).strip()


def _step_line(step) -> str:
    args = {k: list(v) if isinstance(v, tuple) else v for k, v in S.changed_fields(step).items()}
    return f"  - {S.kind(step)}: {_flow(args)}" if args else f"  - {S.kind(step)}"


def render(plan: Plan, bundle: Bundle, *, name: str, description: str, account_timeout_ms: int,
           relay: str | None, holds_on: list[str]) -> str:
    """The scenario file's text."""
    head = [f"Incident imported by `relaychaos incident import {bundle.folder}`.",
            f"{len(bundle.channel)} channel lines, {len(bundle.account)} account lines, "
            f"{len(bundle.operations)} operations lines{', the ledger ' + bundle.ledger_file if bundle.ledger_file else ''}.",
            "GUIDs are labels here (the harness makes them unique per run):"]
    for guid, label in plan.labels.items():
        row = bundle.ledger.get(guid)
        ledger = f"; ledger: {row['status']} {row['resp_code'] or ''} after {row['attempts']} attempt(s)".replace(
            "  ", " ") if row else ""
        head.append(f"  {label} = {guid}{ledger}")
    head += [f"Clock: {n}" for n in plan.notes]
    if plan.rules:
        head.append(f"The logs show the incident broke: {', '.join(plan.rules)}.")
    if not relay:
        head.append("The relay that ran is not named (incident.toml `relay`, or --relay): expect lists only holds_on.")
    data = {"name": name, "description": description, "account_timeout_ms": account_timeout_ms,
            "accounts": plan.accounts, "relays": list(plan.relays)}
    expect: dict = {"holds_on": holds_on}
    if relay and plan.rules:
        expect["breaks"] = {relay: plan.rules}
    data["expect"] = expect
    body = yaml.safe_dump(data, sort_keys=False, default_flow_style=False, allow_unicode=True, width=100)
    lines = [f"# {line}" for line in head] + [body.rstrip(), "steps:"]
    for planned in plan.steps:
        lines.append(f"  # {planned.comment}")
        lines.append(_step_line(planned.step))
    return "\n".join(lines) + "\n"


def write(text: str, out: Path) -> Path:
    """Keep the file and check it loads as a scenario (ScenarioFileError, with its line, if it does not)."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    scenario_file.load(out)
    return out
