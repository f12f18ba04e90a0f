"""`relaychaos incident import BUNDLE --out scenario.yaml`: a production night's logs as a scenario file.

    relaychaos incident import examples/incidents/reprocess-resent-timeouts --out incident.yaml
    relaychaos replay incident.yaml --relay the-relay-that-ran/relay.toml     # breaks the rule ...
    relaychaos replay incident.yaml                                           # ... and the fix holds

Exit status: 0 written, 2 the bundle cannot be imported (one message: file, line, fix).
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from relaychaos.errors import HarnessError

REFERENCE = "relay_under_test/reference/relay.toml"


def add_parsers(sub) -> None:
    incident = sub.add_parser("incident", help="incident bundles: production logs turned into scenarios")
    incidents = incident.add_subparsers(dest="incident_command", required=True)
    p = incidents.add_parser("import", help="write the scenario file that reproduces an incident bundle "
                                            "(docs/incident-bundle.md)")
    p.add_argument("bundle", help="the bundle's folder: channel and account logs, optional operations and ledger")
    p.add_argument("--out", required=True, help="the scenario file to write (YAML)")
    p.add_argument("--relay", help="the relay.toml of the relay that ran that night (the expect block's `breaks`); "
                                   "default: incident.toml's `relay`")
    p.add_argument("--account-clock-offset", type=float, default=None, metavar="SECONDS",
                   help="add this to every account-log time (default: estimated when the clocks disagree)")
    p.add_argument("--name", help="the scenario's name (default: incident.toml's, else the bundle folder's)")
    p.set_defaults(func=cmd_import)


def _relay_ref(relay: str | None, base: Path) -> str | None:
    """A relay as the expect block names it: relative to the project when it is there (as scenario files
    name the bundled relays), else absolute; a path found neither from `base` nor the project stays as given."""
    from relaychaos import paths

    if not relay:
        return None
    found = next((p.resolve() for p in (base / relay, Path(relay)) if p.exists()), None)
    if found is None:
        return relay
    root = paths.bundled_relays().parent
    return str(found.relative_to(root)) if found.is_relative_to(root) else str(found)


def cmd_import(args: argparse.Namespace) -> int:
    from relaychaos.incidents import bundle as bundles
    from relaychaos.incidents.reconstruct import reconstruct
    from relaychaos.incidents.write import render, write

    try:
        b = bundles.read(Path(args.bundle))
        meta = b.meta
        timeout_ms = int(meta.get("account_timeout_ms", 300))
        plan = reconstruct(b, timeout_ms, args.account_clock_offset)
        name = args.name or meta.get("name") or re.sub(r"[^A-Za-z0-9_-]", "-", b.folder.resolve().name)
        relay = _relay_ref(args.relay, Path.cwd()) if args.relay else _relay_ref(meta.get("relay"), b.folder)
        text = render(plan, b, name=name, description=" ".join(str(meta.get("description", f"imported from {b.folder}")).split()),
                      account_timeout_ms=timeout_ms, relay=relay, holds_on=list(meta.get("holds_on", [REFERENCE])))
        out = write(text, Path(args.out))
    except HarnessError as e:
        print(f"relaychaos: {e}", file=sys.stderr)
        return 2
    print(f"relaychaos: wrote {out}: {len(plan.steps)} steps from {len(b.channel)} channel, {len(b.account)} account "
          f"and {len(b.operations)} operations lines")
    for note in plan.notes:
        print(f"relaychaos: {note}")
    print(f"relaychaos: the logs show: {', '.join(plan.rules) or 'no GUID sent twice'}; replay it with "
          f"`relaychaos replay {out} --relay {relay or 'RELAY'}`")
    return 0
