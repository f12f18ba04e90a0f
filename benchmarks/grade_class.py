"""Benchmark: the bundled relays graded as a class, and regraded: wall times, and the same scores and words every time.

    .venv/bin/python -m benchmarks.grade_class [--rounds 10] [--burners 2] [--seed 0] [--out runs/grade-bench]
        [--also DIR|FILE ...] [--save FILE --condition TEXT]
    .venv/bin/python -m benchmarks.grade_class --rounds 0 --also docs/regrades/*.json    # compare kept rounds

Each round is one `relaychaos grade` of CLASS (the course's correct relays, base, every mutant; the
production-style keyed service and the reference on PostgreSQL are not the course's), in a fresh
gradebook folder, with `--burners` processes spinning `while True: pass` beside it. Prints, for each
round, the total wall time, the
per-submission wall times (median and max, for the correct relays and the broken ones apart)
against the targets (20 s and 30 s), and the load average when it ended (these machines are
shared: compare rounds at a like load); then, over every round, each submission's score, the
rubric items it lost, and whether every round gave it the same score and the same words
(its Gradescope results.json, the execution time left out and timings masked:
reports.student_text.masked), and the same timelines: a timeline lists a scenario's events in the
order they happened, and under a race that order is itself a timing, so the words are compared
with the timelines' event lines aside, and the timelines apart. Rounds are compared by their
fingerprints: per submission the score, the items lost and sha256 digests of the words and of
the timelines. `--save` writes the fingerprints of this run's rounds (and of the folders given
with `--also`) to a JSON file, with the commit and `--condition`; docs/regrades/ keeps those of
the measured rounds, so rounds measured on other days (and machines) are compared with
`--also FILE`. `--also` adds gradebook folders (a round of this benchmark, or of
benchmarks.gradescope_class) or such files to the comparison. Exit 1 when a correct relay
lacks full marks, a broken one has them, or a regrade differed.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORRECT = {"reference", "go", "stdlib", "java"}
BURN = "while True: pass"
CLASS = tuple(f"relay_under_test/{name}/" for name in ("base", "go", "java", "reference", "stdlib", "mutants/*"))
TIMELINE_LINE = re.compile(r"^\s*<t>\s.*$\n?|^  \.\.\. \d+ more \.\.\.$\n?", re.M)  # incident.TIMELINE_LINE, masked


def load_record(path: Path) -> dict:
    """One grade.json, with `_words`: what its student reads (Gradescope's results.json, the execution time
    left out, timings masked, the timelines' event lines aside), as a regrade must give it again; and
    `_timelines`: the same with the timelines kept."""
    from relaychaos.records.grade import GradeRecord
    from relaychaos.reports import gradescope
    from relaychaos.reports.student_text import masked

    r = json.loads(path.read_text())
    data = gradescope.results(GradeRecord.from_builtins(r)).to_builtins()
    data.pop("execution_time")
    r["_timelines"] = masked(json.dumps(data, sort_keys=True, ensure_ascii=False))
    for part in [data, *data.get("tests", [])]:
        if "output" in part:
            part["output"] = TIMELINE_LINE.sub("", masked(part["output"]))
    r["_words"] = json.dumps(data, sort_keys=True, ensure_ascii=False)
    return r


def load_records(out: Path) -> dict[str, dict]:
    """submission -> its record (load_record), for every grade.json in a gradebook folder. A Gradescope
    record is named "submission" (benchmarks.gradescope_class): it is known by its folder,
    <name>/results/grade.json."""
    records = {}
    for path in sorted(out.rglob("grade.json")):
        r = load_record(path)
        records[r["submission"] if r["submission"] != "submission" else path.parents[1].name] = r
    return records


def fingerprint(record: dict) -> dict:
    """What a regrade must give again, small enough to keep: the score, the items lost, and sha256
    digests of the words and of the timelines (load_record); the seconds it took, for the table."""
    return {
        "score": record["score"],
        "max_score": record["max_score"],
        "lost": lost(record),
        "words": hashlib.sha256(record["_words"].encode()).hexdigest(),
        "timelines": hashlib.sha256(record["_timelines"].encode()).hexdigest(),
        "seconds": round(record["execution_time_s"], 1),
    }


def fingerprints(records: dict[str, dict]) -> dict[str, dict]:
    return {name: fingerprint(r) for name, r in records.items()}


def commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return done.stdout.strip() or "unknown"


def kept_rounds(source: Path) -> list[tuple[str, dict[str, dict]]]:
    """(label, fingerprints) of each round in a gradebook folder (one round) or in a --save file."""
    if source.is_dir():
        return [(source.name, fingerprints(load_records(source)))]
    try:
        kept = json.loads(source.read_text())
        return [(f"{source.name} {r['round']}", r["submissions"]) for r in kept["rounds"]]
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.exit(f"--also {source}: not a gradebook folder nor a file written by --save ({e}); fix: give one of those")


def kept_round(label: str, prints: dict[str, dict], measured: str, load: float | None, class_s: int | None) -> dict:
    """One round as `save` keeps it: its label, when it was measured, the load average and the class's seconds
    at its end (None when not known: a folder given with --also), and its fingerprints."""
    return {"round": label, "measured": measured, "load": load, "class_s": class_s, "submissions": prints}


def save(path: Path, graded: str, condition: str, rounds: list[dict]) -> None:
    """Write the fingerprints of `rounds` (each a kept_round), graded on commit `graded`, with the command that
    wrote them."""
    path.parent.mkdir(parents=True, exist_ok=True)
    command = "python -m benchmarks.grade_class " + shlex.join(sys.argv[1:])
    kept = {"commit": graded, "condition": condition, "command": command, "rounds": rounds}
    path.write_text(json.dumps(kept, indent=1, sort_keys=True) + "\n")
    print(f"fingerprints of {len(rounds)} round(s) written to {path}")


def lost(record: dict) -> str:
    items = {}
    for e in record.get("items", []):
        items[e["item"]] = items.get(e["item"], 0) + e["max_points"] - e["points"]
    cap = record.get("cap") or {}
    cap = f" (capped at {cap['at_most']:g})" if cap.get("lost") else ""
    return ", ".join(f"{k} -{v:g}" for k, v in items.items() if v > 1e-9) + cap or "none"


def timing(records: dict[str, dict]) -> str:
    times = {name: r["execution_time_s"] for name, r in records.items()}
    good = [t for name, t in times.items() if name in CORRECT]
    bad = [t for name, t in times.items() if name not in CORRECT]
    return (
        f"correct relays median {statistics.median(good):.1f} s, max {max(good):.1f} s (target 20 s); broken "
        f"relays median {statistics.median(bad):.1f} s, max {max(bad):.1f} s (target 30 s)"
    )


def one_round(out: Path, seed: int) -> tuple[float, dict[str, dict]]:
    t0 = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "relaychaos.commands.cli",
            "grade",
            *CLASS,
            "--out",
            str(out),
            "--seed",
            str(seed),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        sys.exit(f"grade failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return wall, load_records(out)


def compare(rounds: list[dict[str, dict]]) -> list[str]:
    """Print the class table over every round (each submission -> its fingerprint); the problems found.
    A submission missing from some round is a problem too."""
    last = rounds[-1]
    print(f"\n{len(rounds)} rounds compared\n")
    print(
        "| submission | score | items lost | seconds (last round) | same score | same words | same timelines |\n"
        "|---|---|---|---|---|---|---|"
    )
    problems = []
    for name in sorted(last, key=lambda n: (n not in CORRECT, n)):
        scores = [r[name]["score"] for r in rounds if name in r]
        same_words = len({r[name]["words"] for r in rounds if name in r}) == 1
        same_lines = len({r[name]["timelines"] for r in rounds if name in r}) == 1
        same = len(set(scores)) == 1
        print(
            f"| {name} | {scores[0]:g} | {last[name]['lost']} | {last[name]['seconds']:.1f} | "
            f"{'yes' if same else 'NO: ' + str(scores)} | {'yes' if same_words else 'NO'} | "
            f"{'yes' if same_lines else 'no (a race)'} |"
        )
        problems += [f"{name}: regrades differ {scores}"] * (not same) + [f"{name}: words differ"] * (not same_words)
        problems += [f"{name}: missing from {len(rounds) - len(scores)} round(s)"] * (len(scores) < len(rounds))
        if (name in CORRECT) != (scores[0] == last[name]["max_score"]):
            problems.append(f"{name}: {scores[0]} of {last[name]['max_score']}")
    identical = sum(1 for n in last if len({r[n]["score"] for r in rounds if n in r}) == 1)
    words = sum(1 for n in last if len({r[n]["words"] for r in rounds if n in r}) == 1)
    lines = sum(1 for n in last if len({r[n]["timelines"] for r in rounds if n in r}) == 1)
    print(
        f"\n{identical} of {len(last)} submissions got the same score in every round; {words} of {len(last)} the "
        f"same words; {lines} of {len(last)} the same timelines too"
    )
    return problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--burners", type=int, default=0, help="CPU burner processes beside every round")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="runs/grade-bench")
    parser.add_argument("--also", nargs="*", default=[], help="earlier rounds: gradebook folders or --save files")
    parser.add_argument("--save", type=Path, help="write the fingerprints of this run's rounds here (JSON)")
    parser.add_argument("--condition", default="", help="with --save: how the rounds ran (load, burners, machine)")
    parser.add_argument("--commit", help="with --save: the commit graded (default: this checkout's)")
    args = parser.parse_args()
    if args.save and not args.condition:
        parser.error("--save needs --condition: say how the rounds ran, e.g. 'two CPU burners, 2 cores'")
    rounds, to_save = [], []
    for source in map(Path, args.also):
        for label, prints in kept_rounds(source):
            rounds.append(prints)
            if source.is_dir():  # a --save file's rounds are kept there already
                ended = datetime.datetime.fromtimestamp(
                    max(p.stat().st_mtime for p in source.rglob("grade.json")), datetime.UTC
                )
                to_save.append(kept_round(label, prints, f"ended {ended:%Y-%m-%d %H:%M UTC}", None, None))
    burners = [subprocess.Popen([sys.executable, "-c", BURN]) for _ in range(args.burners)]
    try:
        for n in range(args.rounds):
            started = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
            wall, records = one_round((ROOT / args.out / f"round{n + 1}").resolve(), args.seed)
            rounds.append(fingerprints(records))
            to_save.append(kept_round(f"round{n + 1}", rounds[-1], started, round(os.getloadavg()[0], 1), round(wall)))
            print(
                f"round {n + 1}/{args.rounds}: class of {len(records)} in {wall:.0f} s; {timing(records)}; load "
                f"average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores, {args.burners} burner(s)",
                flush=True,
            )
    finally:
        for b in burners:
            b.kill()
    if args.save:
        save(args.save, args.commit or commit(), args.condition, to_save)
    if not rounds:
        sys.exit("no rounds to compare; fix: give --rounds N, or earlier rounds with --also")
    problems = compare(rounds)
    if problems:
        print("\nproblems:\n  " + "\n  ".join(problems))
        sys.exit(1)


if __name__ == "__main__":
    main()
