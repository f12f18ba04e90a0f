"""The night told as its story: cut to the GUIDs that broke a rule (story.py), shrunk against the relay that
reproduces it (shrink.py), confirmed, and written as story.yaml beside night.yaml.

    told = tell(plan, bundle, head, out, args, night)      # night: the Written night.yaml (its kept steps, answers)
    told.path, told.not_reproduced                         # story.yaml; why it did not reproduce (None: it did, or
                                                           # it was not replayed)

Without a relay to replay on (--relay or incident.toml's `relay`), or with --no-shrink, the
story is written as cut, unshrunk, and the file says so. With one: the cut story is
replayed; if it reproduces, ddmin shrinks it; the result is kept only after it reproduced
on CONFIRM_RUNS further replays and held once on each relay of `holds_on`, else the cut
story is kept, and the file's head says why. Replays run in out/replays/.

A story's incident block holds production's answers and account calls for its GUIDs (the
night's, not those of the steps it kept). When the cut story reproduces faithfully (its
GUIDs get production's answers and calls, verify.Reproduction.faithful), a candidate must
too: the shrunk story keeps the faults, resends and batch runs that made production's
answers and calls, rather than letting the harness's closing phase make the second call.
Otherwise the rules alone are judged, and the file's head says what differs.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from relaychaos import paths
from relaychaos.engine import scenario_file
from relaychaos.engine import steps as S
from relaychaos.incidents import story
from relaychaos.incidents.faults import Planned
from relaychaos.incidents.shrink import Budget, ddmin
from relaychaos.incidents.verify import Replayer, Reproduction, describe, reproduced
from relaychaos.incidents.write import Head, Written, head_lines, write

if TYPE_CHECKING:
    from relaychaos.incidents.bundle import Bundle
    from relaychaos.incidents.reconstruct import Plan
    from relaychaos.run.chaos import ChaosResult

    Replay = Callable[[list[Planned], str], tuple[S.Scenario, ChaosResult]]  # a candidate's steps, a relay -> its run

CONFIRM_RUNS = 3  # replays a told story must reproduce on, after the one that found it


def relay_path(ref: str) -> Path:
    """A relay.toml named by an incident bundle: absolute, or relative to the bundled relays' folder."""
    p = Path(ref)
    return p if p.is_absolute() else paths.bundled_relays().parent / p


def _write(
    plan: Plan,
    bundle: Bundle,
    head: Head,
    steps: list[Planned],
    involved: set[str],
    path: Path,
    extra: list[str],
    answers: dict[str, str | list[str]],
    opened: dict[str, int],
) -> Path:
    """Write a story (or a candidate) whose accounts are those of `opened` its steps touch."""
    story_head = Head(
        f"{head.name}-story", head.description, head.account_timeout_ms, head.relay, head.holds_on, head.source
    )
    lines = head_lines(plan, bundle, story_head, extra, story.accounts([p.step for p in steps], opened))
    return write(path, lines, steps, plan, bundle, involved, answers=answers).path


@dataclass(frozen=True)
class Told:
    """story.yaml as written, and why it did not reproduce on the relay it was replayed on (None: it reproduced, or
    there was no replay: --no-shrink, no relay)."""

    path: Path
    not_reproduced: str | None = None


def involved(plan: Plan) -> set[str]:
    """The labels of the GUIDs that broke a rule in production."""
    return {label for found in plan.broke.values() for label in found}


def tell(plan: Plan, bundle: Bundle, head: Head, out: Path, args: argparse.Namespace, night: Written) -> Told:
    """Write out/story.yaml (see the module doc) from the steps of the night a story may need."""
    labels = involved(plan)
    answers = night.answers.of(labels)
    cut = story.around(night.kept, labels, plan.relays)
    opened = story.accounts([p.step for p in cut], plan.accounts)  # read once: every candidate is cut from `cut`
    path = out / "story.yaml"
    said = [
        f"The story: the {len(labels)} GUID(s) that broke a rule and the faults and operations around them, "
        f"{len(cut)} of the night's {night.steps} steps."
    ]
    if args.no_shrink or not head.relay:
        why = "--no-shrink" if args.no_shrink else "no relay to replay it on (--relay, or incident.toml `relay`)"
        return Told(_write(plan, bundle, head, cut, labels, path, said + [f"Not shrunk: {why}."], answers, opened))
    relay = head.relay  # a str from here on (checked above)
    with Replayer(out / "replays", args.sandbox, args.sandbox_limit) as replayer:
        candidate = out / "replays" / "candidate.yaml"

        def run(steps: list[Planned], relay: str) -> tuple[S.Scenario, ChaosResult]:
            loaded = scenario_file.load(_write(plan, bundle, head, steps, labels, candidate, said, answers, opened))
            return loaded.scenario, replayer.run(loaded.scenario, relay_path(relay))

        def judge(steps: list[Planned]) -> Reproduction:
            sc, result = run(steps, relay)
            return reproduced(result, sc)

        print(f"relaychaos: shrinking the story ({len(cut)} steps) against {head.relay} ...", flush=True)
        first = judge(cut)
        if not first.ok:
            said_of = describe(first, _production(plan, labels), relay)
            missing = "; ".join([said_of[0].removeprefix(f"NOT reproduced on {relay}: "), *said_of[1:]])
            why = f"the story did not reproduce on {relay}: {missing} (replayed in {out / 'replays'})"
            fix = "the whole night is in night.yaml: `relaychaos incident verify` it to see what is missing."
            return Told(
                _write(plan, bundle, head, cut, labels, path, said + [f"Not shrunk: {why}; {fix}"], answers, opened),
                why,
            )
        faithful = first.faithful
        fidelity = _fidelity(first, plan, labels, head.relay)
        replays = [0]
        small, tried = ddmin(
            cut,
            _in_a_row(judge, faithful, replays),
            plan.relays,
            Budget(runs=args.shrink_runs),
            story.gives_answers(answers) if faithful else None,
        )
        refused = f", {tried.refused} that could not give production's answers" if tried.refused else ""
        shrunk = (
            f"Shrunk by delta debugging against {head.relay}: {len(small)} steps, {replays[0]} replays, "
            f"{tried.invalid} invalid candidates skipped{refused}, {tried.seconds:.0f} s"
            f"{' (budget spent)' if tried.out_of_budget else ''}."
        )
        failed = _confirm(small, run, head, faithful)
        if failed:
            small, shrunk = cut, f"Not shrunk: the shrunk story ({len(small)} steps) {failed}; the cut story is kept."
        print(f"relaychaos: {shrunk} {fidelity}", flush=True)
        return Told(_write(plan, bundle, head, small, labels, path, said + [shrunk, fidelity], answers, opened))


def _fidelity(first: Reproduction, plan: Plan, labels: set[str], relay: str) -> str:
    """The sentence saying whether the cut story's replay kept production's answers and account calls."""
    if first.faithful:
        return "Every candidate kept production's answers and account calls for the story's GUIDs."
    return (
        "The cut story's answers or account calls differ from production's ("
        + "; ".join(describe(first, _production(plan, labels), relay)[1:])
        + "): the shrinking judged the rules alone."
    )


def _production(plan: Plan, labels: set[str]) -> dict[str, str]:
    """label -> production GUID, for the labels given."""
    return {label: guid for label, guid in plan.night.guid_of.items() if label in labels}


def _in_a_row(
    judge: Callable[[list[Planned]], Reproduction], faithful: bool, replays: list[int]
) -> Callable[[list[Planned]], bool]:
    """The shrinking's test: a smaller story is kept only when it reproduces on each of CONFIRM_RUNS replays in a row
    (counted in replays[0]): a candidate that reproduced once by a loaded machine's timing must not steer the search to
    a story the confirmation then refuses (the story told would change from one import to the next)."""

    def keeps(steps: list[Planned]) -> bool:
        for _ in range(CONFIRM_RUNS):
            replays[0] += 1
            if not _accepted(judge(steps), faithful):
                return False
        return True

    return keeps


def _accepted(found: Reproduction, faithful: bool) -> bool:
    """A candidate story is kept when it reproduces, and faithfully when the cut story did."""
    return found.faithful if faithful else found.ok


def _confirm(steps: list[Planned], run: Replay, head: Head, faithful: bool) -> str | None:
    """None when the story reproduced (faithfully, if asked) on CONFIRM_RUNS more replays and held on every
    holds_on relay; else why not."""
    assert head.relay is not None, "a story is confirmed on the relay it was shrunk against"  # tell checked it
    for n in range(CONFIRM_RUNS):
        sc, result = run(steps, head.relay)
        if not _accepted(reproduced(result, sc), faithful):
            return (
                f"did not reproduce{' faithfully' if faithful else ''} on replay {n + 1} of {CONFIRM_RUNS} to "
                "confirm it"
            )
    for relay in head.holds_on:
        sc, result = run(steps, relay)
        if not result.ok:
            return f"broke {', '.join(sorted({v.rule for v in result.verdicts}))} on {relay}, which must hold"
    return None
