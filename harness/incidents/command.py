"""`relaychaos incident import BUNDLE --out FOLDER` and `relaychaos incident verify SCENARIO --relay R`.

    relaychaos incident import examples/incidents/reprocess-resent-timeouts --out incident/
        # incident/night.yaml: the whole night; incident/story.yaml: the night shrunk to its story
    relaychaos incident verify incident/story.yaml --relay the-relay-that-ran/relay.toml   # 0: reproduced
    relaychaos replay incident/story.yaml                                                # 0: the fix holds

import exits 0 written (and, when it was replayed, the story reproduced), 1 written but the story did not
reproduce on the relay it was replayed on (saying what is missing), 2 the bundle cannot be imported (one
message: file, line, fix).
verify exits 0 when the relay breaks every expected rule for every production GUID the logs
show breaking it (on every one of --runs replays), 1 when it does not (saying which are
missing), 2 when it cannot run.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from relaychaos import run_folder
from relaychaos.errors import HarnessError

if TYPE_CHECKING:
    from relaychaos.incidents.bundle import Bundle
    from relaychaos.incidents.reconstruct import Plan
    from relaychaos.incidents.write import Head, Written
from relaychaos import options, paths
from relaychaos.engine import scenario_file
from relaychaos.incidents import bundle as bundles
from relaychaos.incidents import story
from relaychaos.incidents.reconstruct import reconstruct
from relaychaos.incidents.telling import involved, relay_path, tell
from relaychaos.incidents.verify import Replayer, describe, reproduced
from relaychaos.incidents.write import Head, head_lines, write

REFERENCE = "relay_under_test/reference/relay.toml"
OUTPUTS = ("night.yaml", "story.yaml", "replays")  # what an import writes into --out, removed before it starts


def _sandbox_options(p: argparse.ArgumentParser) -> None:
    options.add_to_argparse(p, (options.SANDBOX, options.SANDBOX_LIMIT))  # resolved by relaychaos.commands.cli.main


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    incident = sub.add_parser("incident", help="incident bundles: production logs turned into scenarios")
    incidents = incident.add_subparsers(dest="incident_command", required=True)
    p = incidents.add_parser(
        "import",
        help="write the scenario that reproduces an incident bundle, and its story (docs/incident-bundle.md); "
        "exit 1 when the story does not reproduce",
    )
    p.add_argument("bundle", help="the bundle's folder: channel and account logs, optional operations and ledger")
    p.add_argument(
        "--out",
        required=True,
        help="the folder to write night.yaml and story.yaml into (an earlier import's files there are replaced)",
    )
    p.add_argument(
        "--mapping",
        metavar="FILE",
        help="read the bundle through this TOML file instead of its incident.toml (same keys; `files` and `relay` "
        "paths stay relative to the bundle's folder)",
    )
    p.add_argument(
        "--relay",
        help="the relay.toml of the relay that ran that night (expect.breaks, and the relay "
        "the story is shrunk against); default: incident.toml's `relay`",
    )
    p.add_argument(
        "--account-clock-offset",
        type=float,
        default=None,
        metavar="SECONDS",
        help="add this to every account-log time (default: estimated when the clocks disagree)",
    )
    p.add_argument("--name", help="the scenario's name (default: incident.toml's, else the bundle folder's)")
    p.add_argument("--no-shrink", action="store_true", help="write the story without replaying it (no relay runs)")
    p.add_argument(
        "--shrink-runs",
        type=int,
        default=80,
        help="at most this many candidates while shrinking (each replayed up to 3 times)",
    )
    _sandbox_options(p)
    p.set_defaults(func=cmd_import)
    v = incidents.add_parser("verify", help="did the replay reproduce the incident? exit 0 yes, 1 no, 2 cannot run")
    v.add_argument("scenario", help="a scenario written by incident import (night.yaml or story.yaml)")
    v.add_argument("--relay", help="the relay to replay it on (default: the one its expect block says breaks)")
    v.add_argument("--runs", type=int, default=1, help="replay this many times; every one must reproduce")
    v.add_argument("--out", help="where to keep the runs (default: runs/verify-YYYYmmdd-HHMMSS; run-N per run)")
    _sandbox_options(v)
    v.set_defaults(func=cmd_verify)


def relay_ref(relay: str | None, base: Path, named_in: str = "--relay") -> str | None:
    """A relay as the expect block names it: found from `base` (the bundle's folder, or the working folder for
    --relay), the project, or the working folder; written relative to the project when it is there (as scenario
    files name the bundled relays), else absolute. HarnessError when it is in none of them."""
    if not relay:
        return None
    return _found_ref(relay, base, named_in)


def _found_ref(relay: str, base: Path, named_in: str = "--relay") -> str:
    """relay_ref of a relay that is named (not empty)."""
    root = paths.bundled_relays().parent
    found = next((p.resolve() for p in (base / relay, root / relay, Path(relay)) if p.exists()), None)
    if found is None:
        raise HarnessError(
            f"the relay {relay!r} is not there: looked in {base.resolve()}, {root} and the working folder",
            where=named_in,
            fix="give a path from the bundle's folder or the project "
            "(relay_under_test/mutants/NAME/relay.toml), or --relay",
        )
    return str(found.relative_to(root)) if found.is_relative_to(root) else str(found)


def _fresh(out: Path) -> None:
    """An --out folder with no earlier import's files in it."""
    out.mkdir(parents=True, exist_ok=True)
    for name in OUTPUTS:
        target = out / name
        if target.is_dir():
            shutil.rmtree(target)
        else:
            target.unlink(missing_ok=True)


def cmd_import(args: argparse.Namespace) -> int:
    out = Path(args.out)
    started = time.monotonic()
    try:
        if out.suffix in (".yaml", ".yml"):
            raise HarnessError(
                f"--out {out} names a file",
                fix="give a folder: the import writes night.yaml (the whole night) and story.yaml (its story) there",
            )
        _fresh(out)
        b = bundles.read(Path(args.bundle), mapping_file=Path(args.mapping) if args.mapping else None)
        meta = b.meta
        relay = (
            relay_ref(args.relay, Path.cwd())
            if args.relay
            else relay_ref(meta.get("relay"), b.folder, f"{b.toml}: relay")
        )
        timeout_ms = int(meta.get("account_timeout_ms", 300))
        plan = reconstruct(b, timeout_ms, args.account_clock_offset)
        head = _head(args, b, plan, relay)
        night = write(
            out / "night.yaml",
            head_lines(plan, b, head),
            plan.walk(),
            plan,
            b,
            keep=story.keeper(involved(plan)) if plan.rules else None,
        )
        _say_read(night, b, plan, started)
        if plan.rules:
            told = tell(plan, b, head, out, args, night)
            if told.not_reproduced:
                print(
                    f"relaychaos: wrote {told.path}, but {told.not_reproduced}. The mapping may misread a log, or "
                    "the night may hold what the import does not replay (docs/incident-bundle.md, what the import "
                    f"infers): `relaychaos incident verify {out / 'night.yaml'} --relay {relay}` replays the whole "
                    "night and says what is missing",
                    file=sys.stderr,
                )
                return 1
            print(
                f"relaychaos: wrote {told.path}; check it with `relaychaos incident verify {told.path} --relay "
                f"{relay or 'RELAY'}` (exit 0: reproduced) and `relaychaos replay {told.path}` (exit 0: the fix "
                "holds)"
            )
    except HarnessError as e:
        print(f"relaychaos: {e}", file=sys.stderr)
        return 2
    return 0


def _head(args: argparse.Namespace, b: Bundle, plan: Plan, relay: str | None) -> Head:
    """The head of the files an import writes: the scenario's name and description, the relay it names and
    the relays it holds on, from the command line or else the bundle's incident.toml."""
    meta = b.meta
    return Head(
        args.name or meta.get("name") or re.sub(r"[^A-Za-z0-9_-]", "-", b.folder.resolve().name),
        " ".join(str(meta.get("description", f"imported from {b.folder}")).split()),
        plan.account_timeout_ms,
        relay,
        [_held_on(h, b.folder, b.toml) for h in meta.get("holds_on", [REFERENCE])],
        str(args.bundle),
    )


def _held_on(relay: str | None, folder: Path, toml: Path | None) -> str:
    """relay_ref of one relay of the bundle's holds_on, which must name one."""
    where = f"{toml}: holds_on"
    ref = relay_ref(relay, folder, where)
    if ref is None:
        raise HarnessError(
            f"holds_on lists an empty relay ({relay!r})", where=where, fix="name each relay holds_on lists"
        )
    return ref


def _say_read(night: Written, b: Bundle, plan: Plan, started: float) -> None:
    """What the import read and found, said on stdout: the night written, the notes, the rules broken."""
    print(
        f"relaychaos: wrote {night.path}: {night.steps} steps from {b.counts['channel']} channel, "
        f"{b.counts['account']} account and {b.counts['operations']} operations records ({b.lines:,} lines read; "
        f"{time.monotonic() - started:.1f} s)"
    )
    for note in b.notes + plan.notes:
        print(f"relaychaos: note: {note}")
    for warning in b.warnings:
        print(f"relaychaos: warning: {warning}", file=sys.stderr)
    if b.warnings:
        print(
            f"relaychaos: {len(b.warnings)} warning(s): incident.toml maps what the logs do not have, so the night "
            "written may not be the night that ran",
            file=sys.stderr,
        )
    if plan.unreached:
        first = plan.unreached[0]
        print(
            f"relaychaos: note: {len(plan.unreached)} send(s) reached a relay instance while it was down "
            f"(first: {first.where}, relay {first.relay}): nothing received them, so they are not replayed"
        )
    print(f"relaychaos: the logs show: {', '.join(plan.rules) or 'no GUID sent twice'}")


def cmd_verify(args: argparse.Namespace) -> int:
    try:
        loaded = scenario_file.load(args.scenario)
        sc = loaded.scenario
        if not sc.incident.get("rules"):
            raise HarnessError(
                "the scenario has no incident block naming the rules production broke",
                where=str(args.scenario),
                fix="give a scenario written by relaychaos incident import",
            )
        if args.relay:
            ref = _found_ref(args.relay, Path.cwd())
        elif len(loaded.breaks) == 1:
            ref = next(iter(loaded.breaks))
        else:
            raise HarnessError(
                "which relay? the expect block names none (or several)",
                where=str(args.scenario),
                fix="give --relay path/to/relay.toml",
            )
        out = run_folder.out_folder(args, "verify-")
        failed = 0
        with Replayer(out, args.sandbox, args.sandbox_limit) as replayer:
            for n in range(1, args.runs + 1):
                t0 = time.monotonic()
                result = replayer.run(sc, relay_path(ref))
                found = reproduced(result, sc)
                failed += not found.ok
                print(f"relaychaos: run {n} of {args.runs} ({time.monotonic() - t0:.1f} s, {result.history_path}):")
                for line in describe(found, sc.incident.get("guids", {}), ref):
                    print(f"  {line}")
                if not found.ok:
                    print(result.report(limit=5))
    except HarnessError as e:
        print(f"relaychaos: {e}", file=sys.stderr)
        return 2
    print(f"relaychaos: reproduced on {args.runs - failed} of {args.runs} run(s)")
    return 1 if failed else 0
