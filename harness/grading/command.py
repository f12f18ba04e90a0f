"""`relaychaos grade` and `relaychaos gradebook merge`: the command line of grading.

    relaychaos grade SUBMISSIONS... --out GRADEBOOK [--rubric R] [--seed N] [--shard i/N] [--budget-s S]
    relaychaos grade --gradescope [/autograder]       # one submission, Gradescope's folders
    relaychaos grade --prairielearn [/grade]          # one submission, PrairieLearn's folders
    relaychaos gradebook merge SHARD_DIRS... --out GRADEBOOK

Exit status: 0 when every submission was graded (whatever the scores), 1 when some could
not be (no relay.toml, a relay that would not start: each still has its record and a 0),
2 when the batch could not run (a bad rubric or shard, no submissions), 130 after Ctrl-C
(the gradebook then holds what was graded).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from relaychaos import options, run_folder
from relaychaos.errors import HarnessError
from relaychaos.grading import batch, capacity, rubric, submissions
from relaychaos.grading.progress import Progress
from relaychaos.grading.run_one import HARNESS_FAILED, Options, grade, provisional
from relaychaos.reports import gradebook, gradescope, prairielearn
from relaychaos.sandbox.levels import probe

if TYPE_CHECKING:
    from relaychaos.grading.run_one import Options


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    g = sub.add_parser(
        "grade", help="grade a class of relays: a score per rule, Gradescope and PrairieLearn results, a gradebook"
    )
    g.add_argument("submissions", nargs="*", help="submission folders (each holding relay.toml), manifests, globs")
    g.add_argument("--out", help="the gradebook folder (default: runs/grade-YYYYmmdd-HHMMSS)")
    g.add_argument("--rubric", help="a rubric.toml (default: the shipped one, relaychaos/grading/rubric.toml)")
    g.add_argument("--seed", type=int, default=0, help="the stateful machine's seed: the same seed, the same grade")
    g.add_argument("--shard", help="grade only shard i of N (0-based), e.g. 0/4; merge with `gradebook merge`")
    g.add_argument(
        "--budget-s",
        default="auto",
        help="wall seconds per submission, or auto (the default: 120 on two "
        "CPUs or more, 120 x 2/CPUs on less); a submission cut at its "
        "budget is not graded, never scored",
    )
    g.add_argument(
        "--workers",
        default="auto",
        help="pytest-xdist workers for the named scenarios, or auto (the "
        "default: 3 on two cores or more, fewer on less CPU; see "
        "docs/grading.md)",
    )

    options.add_to_argparse(g)  # --sandbox, --sandbox-limit, --hunt (the machine counts even so), --shrink-s
    g.add_argument("--scenarios", help="only these scenarios (comma-separated names; `stateful` is the machine)")
    g.add_argument(
        "--gradescope",
        nargs="?",
        const="/autograder",
        metavar="ROOT",
        help="grade ROOT/submission into ROOT/results/results.json (Gradescope's autograder)",
    )
    g.add_argument(
        "--prairielearn",
        nargs="?",
        const="/grade",
        metavar="ROOT",
        help="grade ROOT/student into ROOT/results/results.json (PrairieLearn's external grader)",
    )
    g.set_defaults(func=cmd_grade)
    book = sub.add_parser("gradebook", help="a class's gradebook from its graded shards (gradebook merge)")
    books = book.add_subparsers(dest="gradebook_command", required=True)
    merge = books.add_parser("merge", help="join the gradebooks of shards into one")
    merge.add_argument("dirs", nargs="+", help="the shards' gradebook folders")
    merge.add_argument("--out", required=True, help="the merged gradebook folder")
    merge.set_defaults(func=cmd_merge)


def _options(args: argparse.Namespace) -> Options:
    # the options are resolved (flag, environment, default) by relaychaos.commands.cli.main (options.resolve_all)
    sandbox, sandbox_limit, shrink_s, hunt = args.sandbox, args.sandbox_limit, args.shrink_s, bool(args.hunt)
    probe(sandbox, sandbox_limit)  # strict refused here, before anything starts
    only = tuple(s.strip() for s in args.scenarios.split(",")) if args.scenarios else ()

    workers = capacity.workers(args.workers)
    for warning in capacity.warnings(capacity.measure()):
        print(f"relaychaos: {warning}", file=sys.stderr, flush=True)
    return Options(
        rubric.load(args.rubric),
        args.seed,
        capacity.budget_s(args.budget_s),
        workers,
        sandbox,
        sandbox_limit,
        only,
        shrink_s,
        hunt,
    )


def cmd_grade(args: argparse.Namespace) -> int:
    platform_root = args.gradescope or args.prairielearn
    try:
        opts = _options(args)
        if platform_root:
            return _grade_for_platform(Path(platform_root), "gradescope" if args.gradescope else "prairielearn", opts)
        if not args.submissions:
            raise HarnessError("no submissions given", fix="relaychaos grade path/to/submissions/*/ --out GRADEBOOK")
        found = submissions.find(args.submissions, lambda text: print(f"relaychaos: {text}", file=sys.stderr))
        subs = submissions.shard(found, *submissions.parse_shard(args.shard))
        out = run_folder.out_folder(args, "grade-")
    except HarnessError as e:
        print(f"relaychaos: {e}", file=sys.stderr)
        return 2
    print(
        f"relaychaos: grading {len(subs)} submission(s) with rubric '{opts.rubric.name}' "
        f"({opts.rubric.max_score:g} points), seed {opts.seed}, {opts.budget_s:g} s each -> {out}",
        flush=True,
    )
    try:
        records = batch.grade_all(subs, out, opts, Progress(len(subs)))
    except KeyboardInterrupt:
        print(f"\nrelaychaos: interrupted; the gradebook in {out} holds the submissions graded so far", file=sys.stderr)
        return 130
    ungradable = [r.submission for r in records if not r.gradable]
    print(f"relaychaos: {len(records)} graded; gradebook in {out / 'gradebook.html'} and {out / 'gradebook.csv'}")
    if records and all(r.harness_failed is True for r in records):
        why = (records[0].error or "").removeprefix(f"{HARNESS_FAILED}: ")
        print(f"relaychaos: the batch could not run: {why}", file=sys.stderr)
        return 2
    if ungradable:
        print(
            f"relaychaos: {len(ungradable)} could not be graded (a 0 each, the reason in the gradebook): "
            f"{', '.join(ungradable)}",
            file=sys.stderr,
        )
        return 1
    return 0


def _grade_for_platform(root: Path, platform: str, opts: Options) -> int:
    """One submission in a grading platform's folders: its results.json is rewritten as the run goes."""
    folder = root / ("submission" if platform == "gradescope" else "student")
    target = root / "results" / "results.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    writer = gradescope if platform == "gradescope" else prairielearn
    sub = submissions.located(folder.name, folder.resolve())
    work = Path(tempfile.mkdtemp(prefix="relaychaos-grade-"))
    started, last = time.monotonic(), [0.0]

    def partial(state: dict) -> None:
        if time.monotonic() - last[0] >= 5.0:
            last[0] = time.monotonic()
            writer.write(
                provisional(sub, opts, state.get("done", []), time.monotonic() - started, work / sub.slug), target
            )

    record = grade(sub, work / sub.slug, opts, partial)
    writer.write(record, target)
    batch.write_outputs(record, work / sub.slug)
    shutil.copy(work / sub.slug / "grade.json", target.with_name("grade.json"))
    print(f"relaychaos: {sub.name}: {record.score:g}/{record.max_score:g} -> {target}")
    return 0 if record.gradable else 1


def cmd_merge(args: argparse.Namespace) -> int:
    out = Path(args.out).resolve()
    try:
        records = gradebook.merge([Path(d) for d in args.dirs])
    except (ValueError, OSError) as e:
        print(f"relaychaos: cannot merge: {e}", file=sys.stderr)
        return 2
    out.mkdir(parents=True, exist_ok=True)
    copied = set()
    for d in args.dirs:
        for folder in sorted(Path(d).resolve().glob("submissions/*")):
            target = out / "submissions" / folder.name
            if folder == target or folder.name in copied:
                continue  # merged in place, or the same submission from another shard: its logs once
            copied.add(folder.name)
            shutil.copytree(folder, target, dirs_exist_ok=True)
    gradebook.write(records, out)
    print(f"relaychaos: merged {len(records)} submission(s) from {len(args.dirs)} gradebook(s) into {out}")
    return 0
