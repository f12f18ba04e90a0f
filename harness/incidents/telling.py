"""The night told as its story: cut to the GUIDs that broke a rule (story.py), shrunk against the relay that
reproduces it (shrink.py), confirmed, and written as story.yaml beside night.yaml.

    path = tell(plan, bundle, head, out, args, kept)      # kept: the night's steps story.keeper kept

Without a relay to replay on (--relay or incident.toml's `relay`), or with --no-shrink, the
story is written as cut, unshrunk, and the file says so. With one: the cut story is
replayed; if it reproduces, ddmin shrinks it; the result is kept only after it reproduced
on CONFIRM_RUNS further replays and held once on each relay of `holds_on`, else the cut
story is kept, and the file's head says why. Replays run in out/replays/.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from relaychaos.engine import scenario_file
from relaychaos.incidents import story
from relaychaos.incidents.command import CONFIRM_RUNS, relay_path
from relaychaos.incidents.faults import Planned
from relaychaos.incidents.shrink import Budget, ddmin
from relaychaos.incidents.verify import Replayer, reproduced
from relaychaos.incidents.write import Head, head_lines, write


def _write(plan, bundle, head: Head, steps: list[Planned], involved: set[str], path: Path, extra: list[str]) -> Path:
    story_head = Head(f"{head.name}-story", head.description, head.account_timeout_ms, head.relay, head.holds_on,
                      head.source)
    return write(path, head_lines(plan, bundle, story_head, extra), steps, plan, bundle, involved).path


def involved(plan) -> set[str]:
    """The labels of the GUIDs that broke a rule in production."""
    return {label for found in plan.broke.values() for label in found}


def tell(plan, bundle, head: Head, out: Path, args: argparse.Namespace, kept: list[Planned], total: int) -> Path:
    """Write out/story.yaml (see the module doc) from the steps of the night a story may need; returns its path."""
    labels = involved(plan)
    cut = story.around(kept, labels, plan.relays)
    path = out / "story.yaml"
    said = [f"The story: the {len(labels)} GUID(s) that broke a rule and the faults and operations around them, "
            f"{len(cut)} of the night's {total} steps."]
    if args.no_shrink or not head.relay:
        why = "--no-shrink" if args.no_shrink else "no relay to replay it on (--relay, or incident.toml `relay`)"
        return _write(plan, bundle, head, cut, labels, path, said + [f"Not shrunk: {why}."])
    with Replayer(out / "replays", args.sandbox, args.sandbox_limit) as replayer:
        candidate = out / "replays" / "candidate.yaml"

        def run(steps: list[Planned], relay: str):
            loaded = scenario_file.load(_write(plan, bundle, head, steps, labels, candidate, said))
            return loaded.scenario, replayer.run(loaded.scenario, relay_path(relay))

        def reproduces(steps: list[Planned]) -> bool:
            sc, result = run(steps, head.relay)
            return reproduced(result, sc).ok

        print(f"relaychaos: shrinking the story ({len(cut)} steps) against {head.relay} ...", flush=True)
        if not reproduces(cut):
            return _write(plan, bundle, head, cut, labels, path, said + [
                f"Not shrunk: this story did not reproduce on {head.relay} (replayed in {out / 'replays'}); the "
                "whole night is in night.yaml: `relaychaos incident verify` it to see what is missing."])
        small, tried = ddmin(cut, reproduces, plan.relays, Budget(runs=args.shrink_runs))
        shrunk = (f"Shrunk by delta debugging against {head.relay}: {len(small)} steps, {tried.runs} replays, "
                  f"{tried.invalid} invalid candidates skipped, {tried.seconds:.0f} s"
                  f"{' (budget spent)' if tried.out_of_budget else ''}.")
        failed = _confirm(small, run, head)
        if failed:
            small, shrunk = cut, f"Not shrunk: the shrunk story ({len(small)} steps) {failed}; the cut story is kept."
        print(f"relaychaos: {shrunk}", flush=True)
        return _write(plan, bundle, head, small, labels, path, said + [shrunk])


def _confirm(steps: list[Planned], run, head: Head) -> str | None:
    """None when the story reproduced on CONFIRM_RUNS more replays and held on every holds_on relay; else why not."""
    for n in range(CONFIRM_RUNS):
        sc, result = run(steps, head.relay)
        if not reproduced(result, sc).ok:
            return f"did not reproduce on replay {n + 1} of {CONFIRM_RUNS} to confirm it"
    for relay in head.holds_on:
        sc, result = run(steps, relay)
        if not result.ok:
            return f"broke {', '.join(sorted({v.rule for v in result.verdicts}))} on {relay}, which must hold"
    return None
