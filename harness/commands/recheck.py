"""`relaychaos recheck RUN_DIR|HISTORY`: judge kept histories again, by the tolerances each recorded.

    relaychaos recheck runs/20261130-081500                  # every scenario's history; results.json and
                                                             # the reports rewritten
    relaychaos recheck runs/.../histories/happy-path.jsonl   # one history: its verdicts printed

A run folder's results.json names each scenario's histories (relaychaos.run_folder); each
is checked again (relaychaos.run.chaos.check_path: the tolerances in force are read from the
history's header, the checkers are today's). Scenarios whose verdicts changed get their
outcome and incident report rewritten in results.json, junit.xml and report.html; a
scenario without a history (it could not run) stays as it was.
Each history's landing claims are judged again too: a scenario whose claims do not all land is "not exercised".
Exit status, as `relaychaos run`: 0 every check held and every scenario was exercised, 1 a check failed, 3 every
check held but a scenario was not exercised, 2 nothing could be rechecked.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from relaychaos import checkers
from relaychaos.checkers import landing
from relaychaos.errors import HarnessError
from relaychaos.history import History, header
from relaychaos.records.results import LandingRecord, Rechecked, VerdictRecord
from relaychaos.reports import junit
from relaychaos.reports.grade_record import MACHINE
from relaychaos.reports.html import write as write_html
from relaychaos.reports.incident import report
from relaychaos.reports.results import NOT_EXERCISED, RunResults

if TYPE_CHECKING:
    from relaychaos.checkers.verdict import Verdict
    from relaychaos.history import History
    from relaychaos.records.results import LandingRecord, Outcome, ScenarioResult


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "recheck", help="judge a run's kept histories (or one history file) again and rewrite its reports"
    )
    p.add_argument("target", help="a run folder (holding results.json) or a history file (.jsonl or .jsonl.gz)")
    p.add_argument("--limit", type=int, default=10, help="how many verdicts of a history file to print in full")
    p.set_defaults(func=cmd_recheck)


def cmd_recheck(args: argparse.Namespace) -> int:
    target = Path(args.target)
    try:
        if target.is_dir():
            return _recheck_run(target)
        return _recheck_file(target, args.limit)
    except HarnessError as e:
        print(f"relaychaos: {e}", file=sys.stderr)
        return 2


def judge(path: Path) -> tuple[History, list[Verdict], list[str]]:
    """(history, verdicts, notes) of one saved history; HarnessError naming the file if it cannot be read."""
    try:
        history = History.read(path)
    except OSError as e:
        raise HarnessError(
            f"cannot read the history: {e.strerror or e}",
            where=str(path),
            fix="give a history file kept by relaychaos run (histories/<scenario>.jsonl[.gz])",
        ) from None
    except (ValueError, TypeError, EOFError) as e:
        raise HarnessError(
            f"not a history (JSON lines of events): {e}",
            where=str(path),
            fix="give a history file kept by relaychaos run (histories/<scenario>.jsonl[.gz])",
        ) from None
    if not history.where(f="scenario"):
        raise HarnessError(
            "the file holds no scenario header",
            where=str(path),
            fix="give a whole history file, as relaychaos run keeps it",
        )
    return history, checkers.check(history), checkers.notes(history)


def _recheck_file(path: Path, limit: int) -> int:
    history, verdicts, notes = judge(path)
    print(f"relaychaos: rechecked {path} (tolerances as recorded in its header)")
    print(report(history, verdicts, limit))
    for note in notes:
        print(f"  note (not a verdict): {note}")
    landed = landing.judge(history)
    for x in landed:
        print(f"  claim {x.status}: {x.claim} -- {x.why}")
    if verdicts:
        return 1
    return 3 if any(x.missed for x in landed) else 0


def _recheck_run(folder: Path) -> int:
    path = folder / "results.json"
    if not path.exists():
        raise HarnessError(
            "no results.json here",
            where=str(folder),
            fix="give the run folder relaychaos run wrote, or one history file",
        )
    try:
        results = RunResults.load(path)
    except (ValueError, KeyError, TypeError) as e:
        raise HarnessError(
            f"results.json cannot be read: {e}", where=str(path), fix="give a run folder written by relaychaos run"
        ) from None
    checked, changed = 0, dict[str, tuple[str, str | None]]()
    for entry in results.scenarios.values():
        if entry.histories and entry.outcome in ("passed", "failed", NOT_EXERCISED):
            checked += len(entry.histories)
            if _rejudged(folder, entry):
                changed[entry.nodeid] = (entry.outcome, entry.message)
    if not checked:
        raise HarnessError(
            "results.json names no history to recheck",
            where=str(path),
            fix="run the suite again with this version of relaychaos run, which keeps every history",
        )
    results.rechecked = Rechecked(at=time.time(), histories=checked, changed=sorted(changed))
    results.write(path)
    write_html(path)
    if changed and (folder / "junit.xml").exists():
        junit.update(folder / "junit.xml", changed)
    counts = RunResults.load(path).summary()
    print(
        f"relaychaos: rechecked {checked} histories in {folder}: {counts.passed} passed, {counts.failed} "
        f"failed, {counts.error} errors, {counts.not_exercised} not exercised; {len(changed)} scenario(s) judged "
        "differently than before" + "".join(f"\n  {n}: now {changed[n][0]}" for n in sorted(changed))
    )
    if counts.failed or counts.error:
        return 1
    return 3 if counts.not_exercised else 0


def _rejudged(folder: Path, entry: ScenarioResult) -> bool:
    """Judge a scenario's kept histories again (rules and landing claims); whether its judgement changed."""
    verdicts: list[VerdictRecord] = []
    notes: list[str] = []
    texts: list[str] = []
    landed: list[LandingRecord] = []
    for rel in entry.histories:
        history, found, found_notes = judge(folder / rel)
        head = header(history)
        verdicts += [VerdictRecord.from_builtins(_as_read({**v.to_dict(), "scenario": head.name})) for v in found]
        notes += [n for n in found_notes if n not in notes]
        texts += [f"{report(history, found)}\n\nhistory: {folder / rel}"] if found else []
        if head.name != MACHINE:  # as the run judged it: a random story by the rules alone (the machine counts
            # its examples' faults as exercised or not, relaychaos.scenarios.machine)
            landed += [
                LandingRecord.from_builtins(_as_read({**x.to_dict(), "scenario": head.name}))
                for x in landing.judge(history)
            ]
    missed = [x for x in landed if x.status in (landing.MISSED, landing.UNKNOWN)]
    outcome: Outcome = "failed" if verdicts else "not exercised" if missed else "passed"
    if verdicts == entry.verdicts and outcome == entry.outcome and landed == entry.landing:
        return False
    entry.verdicts, entry.notes, entry.landing, entry.outcome = verdicts, notes, landed, outcome
    if outcome == NOT_EXERCISED:
        texts = [f"{NOT_EXERCISED}: every rule held, but a fault met nothing:\n" + _missed_text(missed)]
    entry.message = "\n\n".join(texts) or None
    return True


def _as_read(data: dict[str, Any]) -> Any:
    """Plain values as results.json has them (tuples as lists, every value JSON's)."""
    return json.loads(json.dumps(data))


def _missed_text(missed: list[LandingRecord]) -> str:
    return "\n".join(f"  {x.status}: {x.claim} -- {x.why}" for x in missed)
