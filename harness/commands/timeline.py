"""`relaychaos timeline HISTORY [--out FILE]`: the timeline page of one saved history, on demand.

    relaychaos timeline runs/<stamp>/histories/race-32-two-relays.jsonl.gz
    relaychaos timeline /tmp/.../stack0/history.jsonl --out race.html

A history kept in a run's histories/ folder gets its page in the run's timelines/ folder
(where report.html links it once rewritten); any other lands beside the history, named
after it. Verdicts are re-judged from the history (relaychaos.checkers). Exit 0 when the
page is written, 2 when the history cannot be read (one message naming the file and the fix).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from relaychaos import checkers
from relaychaos.history import History
from relaychaos.reports import timeline


def default_out(history: Path) -> Path:
    """runs/X/histories/NAME.jsonl[.gz] -> runs/X/timelines/NAME.html; elsewhere: beside it, NAME.html."""
    name = history.name.removesuffix(".gz").removesuffix(".jsonl")
    folder = history.parent.parent / "timelines" if history.parent.name == "histories" else history.parent
    return folder / f"{name}.html"


def cmd_timeline(args: argparse.Namespace) -> int:
    path = Path(args.history)
    try:
        history = History.read(path)
    except OSError as e:
        print(
            f"relaychaos: {path}: cannot read the history ({e.strerror or e}); fix: give the path of a saved "
            "history (runs/<stamp>/histories/<scenario>.jsonl[.gz], or a stack folder's history.jsonl)",
            file=sys.stderr,
        )
        return 2
    except (ValueError, TypeError, EOFError) as e:
        print(
            f"relaychaos: {path}: not a history (JSON lines of events, plain or gzip): {e}; fix: give a file the "
            "harness saved, unedited",
            file=sys.stderr,
        )
        return 2
    if not len(history):
        print(f"relaychaos: {path}: the history is empty; fix: give the history of a run that started", file=sys.stderr)
        return 2
    verdicts = checkers.check(history)
    out = timeline.write(history, Path(args.out) if args.out else default_out(path), verdicts)
    print(f"relaychaos: timeline of {len(history)} events, {len(verdicts)} verdict(s) -> {out}")
    return 0


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    t = sub.add_parser("timeline", help="draw the timeline page (HTML) of a saved history")
    t.add_argument("history", help="a saved history: runs/<stamp>/histories/<scenario>.jsonl[.gz], or history.jsonl")
    t.add_argument("--out", help="the page to write (default: the run's timelines/ folder, else beside the history)")
    t.set_defaults(func=cmd_timeline)
