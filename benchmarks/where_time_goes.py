"""Benchmark: where the time of a suite run and of a grade goes: setup, relay starts, deliberate waits, the rest.

    .venv/bin/python -m benchmarks.where_time_goes [--relays reference,go] [--rounds 3] [--today DIR]
                                                   [--skip-grade] [--grade-workers 3]
                                                   [--suite-workers 4] [--today-suite-workers 2]

Per relay and round: `relaychaos run --relay R -n 4` (each checkout as its `relaychaos run` runs by default: -n 2
before 4 became the default) and `relaychaos grade <R's folder> --workers 3`, each timed from process start to
exit (wall) and charged the user + system CPU of the process and every descendant (this process is their
subreaper, so a relay whose sandbox wrapper ended first is counted too). Each run's worker-seconds (workers x
wall: -n for the run, the grade's --workers, + 1 for a checkout whose grade ran the state machine in a pytest of
its own) are split by the run's results and histories into:

- setup + idle: worker-seconds outside every test (pytest and xdist starting, Toxiproxy and the account
  system, collecting, the final report, the grade's start probe, a worker idle while the other finishes);
- relay starts: `serve` until ready, and each batch command (resolve, reprocess, purge) from start to exit;
- deliberate waits: Wait steps (min-age and retention), the final phase's age waits, wait_calls, wait_row,
  await_sends, account-system holds (until released or healed), latency toxics and processing delays
  (until removed or healed); time a relay start overlaps is counted as a start, never twice;
- rest: the tests' other time: sending and answering, snapshots, and outside their histories the test's own
  setup, checking and reporting (the state machine's history holds one example: its others land here).

With --today DIR (an earlier checkout with its own .venv) the same commands run with that checkout too,
alternating run by run; each figure is printed beside the earlier one with the ratio now/today. Medians of
--rounds. The Markdown table at the end is ready for docs/performance.md.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from subprocess import DEVNULL, STDOUT, Popen

from relaychaos.events import Event
from relaychaos.history import iter_events
from relaychaos.reports.results import RunResults

ROOT = Path(__file__).resolve().parent.parent
BATCH_COMMANDS = ("resolve", "reprocess", "purge")
WAIT_STEPS = ("wait", "wait_calls", "wait_row", "await_sends")
Interval = tuple[float, float]


@dataclass(frozen=True)
class TimedTest:
    """One test of a run: its duration (pytest's, setup to teardown) and the histories it recorded."""

    duration_s: float
    histories: tuple[tuple[Event, ...], ...] = ()


@dataclass(frozen=True)
class Split:
    """Worker-seconds of one run by category; `rest_outside` is the part of `rest` outside any history."""

    setup: float
    starts: float
    waits: float
    rest: float
    rest_outside: float

    @property
    def total(self) -> float:
        return self.setup + self.starts + self.waits + self.rest


def merged(intervals: Iterable[Interval]) -> list[Interval]:
    """The intervals as sorted disjoint ones."""
    out: list[Interval] = []
    for a, b in sorted(i for i in intervals if i[1] > i[0]):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def measure(intervals: Sequence[Interval]) -> float:
    return sum(b - a for a, b in intervals)


def overlap(xs: Sequence[Interval], ys: Sequence[Interval]) -> float:
    """Seconds in both of two sorted disjoint interval lists."""
    i = j = 0
    total = 0.0
    while i < len(xs) and j < len(ys):
        total += max(0.0, min(xs[i][1], ys[j][1]) - max(xs[i][0], ys[j][0]))
        if xs[i][1] < ys[j][1]:
            i += 1
        else:
            j += 1
    return total


def start_intervals(events: Sequence[Event]) -> list[Interval]:
    """Each serve start (invoke to ready or failure) and batch command (invoke to exit), by process."""
    opened: dict[tuple[str, str], float] = {}
    out: list[Interval] = []
    for e in events:
        if not (e.f == "start" and e.process.startswith("relay-")) and not (
            e.f in BATCH_COMMANDS and e.process.startswith("batch-")
        ):
            continue
        key = (e.process, e.f)
        if e.type == "invoke":
            opened[key] = e.time
        elif key in opened:
            out.append((opened.pop(key), e.time))
    end = events[-1].time if events else 0.0
    return out + [(t, end) for t in opened.values()]  # still starting when the history ends


def wait_intervals(events: Sequence[Event]) -> list[Interval]:
    """The deliberate waits: wait steps, age waits, holds, latency toxics and processing delays."""
    end = events[-1].time if events else 0.0
    return step_waits(events, end) + hold_waits(events, end) + delay_waits(events, end)


def step_waits(events: Sequence[Event], end: float) -> list[Interval]:
    """Wait, wait_calls, wait_row and await_sends steps (invoke to the runner's next step end); age waits."""
    out: list[Interval] = []
    since: float | None = None
    for e in events:
        if e.process == "runner" and e.f == "step":
            if e.type == "invoke":
                since = e.time if str(e.value.get("step", "")).split(" ")[0] in WAIT_STEPS else None
            elif since is not None:
                out.append((since, e.time))
                since = None
        elif e.f == "age":
            out.append((e.time, e.time + float(e.value.get("seconds") or 0)))
    return out + ([(since, end)] if since is not None else [])


def hold_waits(events: Sequence[Event], end: float) -> list[Interval]:
    """While the account system holds a GUID: from a server fault holding it until released or healed."""
    out: list[Interval] = []
    held: set[str] = set()
    since = 0.0
    for e in events:
        if e.f == "server-fault" and e.value.get("hold_guids"):
            since = since if held else e.time
            held |= set(e.value["hold_guids"])
        elif held and e.f in ("release", "heal"):
            guids = e.value.get("guids") if e.f == "release" else None
            held = set() if guids is None else held - set(guids)
            out += [] if held else [(since, e.time)]
    return out + ([(since, end)] if held else [])


def delay_waits(events: Sequence[Event], end: float) -> list[Interval]:
    """Latency toxics (added until removed or healed) and the account system's processing delay."""
    out: list[Interval] = []
    opened: dict[tuple[str, str], float] = {}  # (proxy, toxic) or ("server", "delay") -> since
    for e in events:
        key = (str(e.value.get("proxy")), str(e.value.get("toxic")))
        if e.f == "add-toxic" and e.type == "invoke" and e.value.get("kind") == "latency":
            opened.setdefault(key, e.time)
        elif e.f == "remove-toxic" and key in opened:
            out.append((opened.pop(key), e.time))
        elif e.f == "server-fault" and e.value.get("delay_ms"):
            opened.setdefault(("server", "delay"), e.time)
        elif (e.f == "server-fault" and ("server", "delay") in opened) or e.f == "heal":
            keys = list(opened) if e.f == "heal" else [("server", "delay")]
            out += [(opened.pop(k), e.time) for k in keys]
    return out + [(t, end) for t in opened.values()]


def split(tests: Sequence[TimedTest], worker_seconds: float) -> Split:
    """Split a run's worker-seconds: outside the tests (setup + idle), then within each history relay starts,
    deliberate waits (where no start overlaps them) and the rest; a test's time outside its histories is rest."""
    starts = waits = in_rest = outside = 0.0
    for test in tests:
        spans = 0.0
        for events in test.histories:
            if not events:
                continue
            lo, hi = events[0].time, events[-1].time
            clip = [(lo, hi)]
            s = merged(start_intervals(events))
            w = merged(wait_intervals(events))
            s_time = overlap(s, clip)
            w_time = overlap(w, clip) - overlap(w, merged((max(a, lo), min(b, hi)) for a, b in s))
            starts += s_time
            waits += w_time
            in_rest += (hi - lo) - s_time - w_time
            spans += hi - lo
        outside += max(0.0, test.duration_s - spans)
    busy = starts + waits + in_rest + outside
    return Split(worker_seconds - busy, starts, waits, in_rest + outside, outside)


# ---- measuring -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Measured:
    """One timed command: wall and CPU seconds, and the split of its worker-seconds."""

    wall: float
    cpu: float
    split: Split


@dataclass(frozen=True)
class Failed:
    label: str
    code: int
    tail: str


def load() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def read_history(path: Path) -> tuple[Event, ...]:
    """A kept history's events in time order (relaychaos.history.iter_events: plain or gzipped); () when gone."""
    if not path.exists() and not path.with_name(path.name + ".gz").exists():
        return ()
    return tuple(sorted(iter_events(path), key=lambda e: e.time))


def read_tests(folder: Path, results: Iterable[Path]) -> list[TimedTest]:
    """The tests a run's results files list, each with its histories (paths relative to `folder`)."""
    tests = []
    for path in results:
        for s in RunResults.read(path).scenarios:
            names = s.histories or ([s.history] if s.history else [])
            tests.append(TimedTest(s.duration_s, tuple(read_history(folder / n) for n in names)))
    return tests


PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h
ORPHANS_WAIT_S = 30.0


def timed(argv: list[str], cwd: Path, log: Path) -> tuple[float, float, int]:
    """(wall, CPU of the process and of every descendant, exit code) of one command. This process is the children's
    subreaper: a descendant whose parent ended before it (a relay's serve, killed after its sandbox wrapper) is
    reparented here and reaped, so its CPU counts too (os.wait4 of the command alone leaves it out)."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(log, "wb") as out:
        t0 = time.perf_counter()
        proc = Popen(argv, cwd=cwd, stdout=out, stderr=STDOUT, stdin=DEVNULL)
        _, status, _ = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    _reap_orphans(argv[1] if len(argv) > 1 else argv[0])
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return wall, cpu, proc.returncode


def _reap_orphans(what: str) -> None:
    """Wait for the descendants reparented here; a command that leaves one running is a failure of its own."""
    deadline = time.monotonic() + ORPHANS_WAIT_S
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            if time.monotonic() > deadline:
                sys.exit(f"`{what}` left a process running {ORPHANS_WAIT_S:g} s after it ended")
            time.sleep(0.05)


def suite(checkout: Path, relay: Path, out: Path, workers: int) -> tuple[float, float, int, Split | None]:
    cli = str(checkout / ".venv" / "bin" / "relaychaos")
    argv = [cli, "run", "--relay", str(relay / "relay.toml"), "-n", str(workers), "--out", str(out)]
    wall, cpu, code = timed(argv, checkout, out.with_suffix(".log"))
    if code != 0 or not (out / "results.json").exists():
        return wall, cpu, code, None
    return wall, cpu, code, split(read_tests(out, [out / "results.json"]), workers * wall)


def grade(checkout: Path, relay: Path, out: Path, workers: int) -> tuple[float, float, int, Split | None]:
    cli = str(checkout / ".venv" / "bin" / "relaychaos")
    argv = [cli, "grade", str(relay), "--workers", str(workers), "--out", str(out)]
    wall, cpu, code = timed(argv, checkout, out.with_suffix(".log"))
    folders = sorted((out / "submissions").glob("*/"))
    if code != 0 or len(folders) != 1:
        return wall, cpu, code or 1, None
    sub = folders[0]
    # one run (suite.json) now; a checkout from before ran the machine in a pytest of its own (named + machine.json)
    results = [p for p in (sub / "suite.json", sub / "named.json", sub / "machine.json") if p.exists()]
    runs = workers if (sub / "suite.json").exists() else workers + 1
    return wall, cpu, code, split(read_tests(sub, results), runs * wall)


def relay_folder(checkout: Path, name: str) -> Path | None:
    """The checkout's own relay folder; for go only once built (bin/relay); None when it cannot run."""
    folder = checkout / "relay_under_test" / name
    if not (folder / "relay.toml").exists():
        return None
    if name == "go" and not (folder / "bin" / "relay").exists():
        return None
    return folder


# ---- reporting -------------------------------------------------------------------------------------------------

CATEGORIES = (("setup", "setup + idle"), ("starts", "relay starts"), ("waits", "deliberate waits"), ("rest", "rest"))


def median_split(splits: Sequence[Split]) -> Split:
    return Split(*(statistics.median(getattr(s, f.name) for s in splits) for f in fields(Split)))


def median_measured(runs: Sequence[Measured]) -> Measured:
    return Measured(
        statistics.median(r.wall for r in runs),
        statistics.median(r.cpu for r in runs),
        median_split([r.split for r in runs]),
    )


def cell(now: float, today: float | None, unit: str, share: float | None = None) -> str:
    text = f"{now:.1f} {unit}" + (f" ({share:.0%})" if share is not None else "")
    if today is None:
        return text
    return f"{text}; today {today:.1f} {unit}, **{now / today:.2f}×**" if today else f"{text}; today 0 {unit}"


def row(relay: str, what: str, now: Measured, today: Measured | None) -> str:
    cells = [relay, what, cell(now.wall, today and today.wall, "s"), cell(now.cpu, today and today.cpu, "s")]
    for attr, _ in CATEGORIES:
        value = getattr(now.split, attr)
        before = getattr(today.split, attr) if today else None
        cells.append(cell(value, before, "w-s", value / now.split.total if now.split.total else 0.0))
    return "| " + " | ".join(cells) + " |"


def table(figures: dict[tuple[str, str], dict[str, list[Measured]]], with_today: bool) -> list[str]:
    head = ["relay", "measured", "wall", "CPU"] + [title for _, title in CATEGORIES]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (relay, what), by in figures.items():
        if by["now"]:
            today = median_measured(by["today"]) if with_today and by["today"] else None
            lines.append(row(relay, what, median_measured(by["now"]), today))
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--relays", default="reference,go", help="bundled relays (comma-separated folder names)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--today", type=Path, help="an earlier checkout (with its .venv) to time the same commands")
    parser.add_argument("--skip-grade", action="store_true", help="time the suite run only")
    parser.add_argument("--grade-workers", type=int, default=3, help="the grade's --workers (auto is 3 on 2 CPUs)")
    parser.add_argument("--suite-workers", type=int, default=4, help="this checkout's run -n (its default)")
    parser.add_argument("--today-suite-workers", type=int, default=2, help="the earlier checkout's -n (its default)")
    args = parser.parse_args(argv)
    if args.today and not (args.today / ".venv" / "bin" / "relaychaos").exists():
        parser.error(f"{args.today} has no .venv/bin/relaychaos")
    checkouts = [("now", ROOT)] + ([("today", args.today.resolve())] if args.today else [])
    relays: list[str] = []
    for name in filter(None, args.relays.split(",")):
        missing = [label for label, checkout in checkouts if relay_folder(checkout, name) is None]
        if missing:
            why = "its build, bin/relay, is missing" if name == "go" else "no relay.toml"
            print(f"skipping {name}: relay_under_test/{name} cannot run ({why}) in {', '.join(missing)}")
        else:
            relays.append(name)
    kinds = ["suite"] + ([] if args.skip_grade else ["grade"])
    work = Path(tempfile.mkdtemp(prefix="bench-where-time-goes-"))
    print(f"load average at start: {' '.join(Path('/proc/loadavg').read_text().split()[:3])}; runs in {work}")
    figures: dict[tuple[str, str], dict[str, list[Measured]]] = {
        (r, k): {"now": [], "today": []} for r in relays for k in kinds
    }
    failed: list[Failed] = []
    for rnd in range(args.rounds):
        for name in relays:
            for kind in kinds:
                order = checkouts if rnd % 2 == 0 else checkouts[::-1]
                for label, checkout in order:
                    relay = relay_folder(checkout, name)
                    assert relay is not None
                    out = work / f"{kind}-{name}-{label}-{rnd}"
                    if kind == "suite":
                        workers = args.suite_workers if label == "now" else args.today_suite_workers
                        wall, cpu, code, got = suite(checkout, relay, out, workers)
                    else:
                        wall, cpu, code, got = grade(checkout, relay, out, args.grade_workers)
                    tag = f"round {rnd + 1} {name} {kind} ({label})"
                    if got is None:
                        tail = out.with_suffix(".log").read_text(errors="replace")[-3000:]
                        failed.append(Failed(tag, code, tail))
                        print(f"{tag:<36} {wall:6.1f} s  exit {code}: FAILED  load {load()}\n{tail}", flush=True)
                        continue
                    figures[(name, kind)][label].append(Measured(wall, cpu, got))
                    parts = "  ".join(f"{t} {getattr(got, a):5.1f}" for a, t in CATEGORIES)
                    print(
                        f"{tag:<36} wall {wall:5.1f} s  CPU {cpu:5.1f} s  worker-s: {parts} "
                        f"(rest outside histories {got.rest_outside:.1f})  load {load()}",
                        flush=True,
                    )
    print(
        f"\nmedians of {args.rounds} round(s); categories in worker-seconds (w-s: workers x wall, "
        f"{args.suite_workers} for the suite ({args.today_suite_workers} today), {args.grade_workers} for the "
        "grade, + 1 where its state machine ran apart), each with its share of the total"
    )
    print("\n".join(table(figures, bool(args.today))))
    for (name, kind), by in figures.items():
        if by["now"]:
            m = median_measured(by["now"])
            print(f"  {name} {kind}: of the rest, {m.split.rest_outside:.1f} w-s lie outside the histories")
    print(f"load average at the end: {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
    for f in failed:
        print(f"PROBLEM: {f.label} exited {f.code}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
