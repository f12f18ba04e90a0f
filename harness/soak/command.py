"""`relaychaos soak`: minutes of open-loop traffic against a relay under a seeded nemesis, then every rule.

    relaychaos soak [--relay relay.toml] [--duration 10m] [--rate 500] [--seed N] [--out DIR] [--sandbox ...]

Writes into the run folder: history.jsonl (every event), summary.json (rates,
answers by code, faults done, time to first violation, peak memory), incident.txt
(the first violating GUID's timeline) and the processes' logs. Ctrl-C stops the
traffic; the history so far is converged, checked and reported (a second Ctrl-C
abandons the checks). Exit status: 0 every rule held at the rate asked, 1 a rule
was broken, 2 the harness could not run, or every rule held but the machine could
not sustain the rate asked.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType

from relaychaos import options, run_folder
from relaychaos.atomic import write_text
from relaychaos.errors import HarnessError
from relaychaos.history import History, StreamedHistory
from relaychaos.recorder import Recorder
from relaychaos.run.chaos import check_path
from relaychaos.run.definition import RunDefinition
from relaychaos.run.services import Services
from relaychaos.soak.findings import closing_lines, evidence_times, excerpt, incidents, summarize
from relaychaos.soak.generator import ACCOUNTS
from relaychaos.soak.schedule import Schedule, draw
from relaychaos.soak.session import Soak, SoakResult
from relaychaos.soak.status import Status
from relaychaos.stack.world import Stack

# The scenarios' 300 ms is too short at production rates on a small machine: a call can spend longer than that
# in queues on its way to the account system, and a relay that gave up on it rightly marks it UNKNOWN while it
# is still in transit, which the account system then sees (write-before-send). The contract's promise (§6)
# holds only for delays the harness knows of; 1 s keeps queueing below the time-out.
SOAK_ACCOUNT_TIMEOUT_MS = 1000
DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|s|m|h)?")
UNITS = {None: 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "ms": 0.001}


def duration_s(text: str) -> float:
    """'10m', '90s', '1.5h' or plain seconds, as seconds; argparse.ArgumentTypeError otherwise."""
    m = DURATION.fullmatch(text.strip())
    if not m or float(m.group(1)) <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration: write e.g. 10m, 90s or 1h")
    return float(m.group(1)) * UNITS[m.group(2)]


def positive_rate(text: str) -> float:
    try:
        rate = float(text)
    except ValueError:
        rate = 0.0
    if rate <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a rate: give transfers per second, e.g. 500")
    return rate


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("soak", help="open-loop traffic at a rate for minutes under a seeded nemesis, then every rule")
    p.add_argument("--relay", help="the relay.toml to soak (default: the bundled reference relay)")
    p.add_argument("--duration", type=duration_s, default=600.0, help="how long: 10m (the default), 90s, 1h")
    p.add_argument("--rate", type=positive_rate, default=500.0, help="transfers per second (default 500)")
    p.add_argument("--seed", type=int, default=0, help="the nemesis schedule's seed: the same seed, the same schedule")
    p.add_argument("--out", help="the run folder (default: runs/soak-YYYYmmdd-HHMMSS)")
    p.add_argument(
        "--account-timeout-ms",
        type=int,
        default=SOAK_ACCOUNT_TIMEOUT_MS,
        help=f"the relays' ACCOUNT_TIMEOUT_MS (default {SOAK_ACCOUNT_TIMEOUT_MS}, see below)",
    )
    p.add_argument("--limit", type=int, default=1, help="how many violations to render in incident.txt")
    options.add_to_argparse(p, (options.SANDBOX, options.SANDBOX_LIMIT))  # resolved by relaychaos.commands.cli.main
    p.set_defaults(func=cmd_soak)


def cmd_soak(args: argparse.Namespace) -> int:
    out = run_folder.out_folder(args, "soak-")
    status = Status(sys.stdout)
    stop = threading.Event()
    history: StreamedHistory | None = None
    previous = signal.signal(signal.SIGINT, _first_interrupt(stop, status))
    try:
        run = RunDefinition.build(vars(args))
        schedule = draw(args.seed, args.duration, args.account_timeout_ms).for_commands(run.relay.commands)
        out.mkdir(parents=True, exist_ok=True)
        os.chmod(out, 0o700)
        history = History.streaming(out / "history.jsonl")
        with Services(run, out) as services:
            status.say(
                f"soaking relay '{run.relay.name}' ({run.relay.path}) at {args.rate:g} transfers/s for "
                f"{args.duration:g} s, seed {args.seed}: {len(schedule.faults())} faults scheduled -> {out}\n"
                f"relaychaos: {services.sandbox.summary()}"
            )
            stack = services.stack(out, "soak", accounts=dict(ACCOUNTS), account_timeout_ms=args.account_timeout_ms)
            with stack:
                result = _session(stack, schedule, args, history, status).run(stop)
    except HarnessError as e:
        status.done()
        print(f"relaychaos: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        status.done()
        print(
            f"relaychaos: abandoned at the second Ctrl-C; every process stopped; what was recorded is in {out}",
            file=sys.stderr,
        )
        return 2
    finally:
        if history is not None:
            history.close()
        signal.signal(signal.SIGINT, previous)
    try:
        return _judge(history, result, out, run.relay.name, args, status)
    except KeyboardInterrupt:
        print(f"relaychaos: the checks were abandoned; the history is in {history.path}", file=sys.stderr)
        return 2


def _session(
    stack: Stack, schedule: Schedule, args: argparse.Namespace, history: StreamedHistory, status: Status
) -> Soak:
    """The soak session on a started stack: traffic at the rate asked, the schedule's faults, all recorded."""
    return Soak(
        stack,
        schedule,
        rate=args.rate,
        recorder=Recorder(history),
        status=status,
        account_timeout_ms=args.account_timeout_ms,
    )


def _judge(
    history: StreamedHistory, result: SoakResult, out: Path, relay_name: str, args: argparse.Namespace, status: Status
) -> int:
    """Check the saved history in one pass, write the summary and the first incident; the exit status."""
    status.say(f"checking {len(history)} events in {history.path} ...")
    t0 = time.monotonic()
    verdicts = check_path(history.path)
    check_s = time.monotonic() - t0
    shown = excerpt(history.path, verdicts)  # the few events the verdicts name: timelines need no more
    times = evidence_times(shown, verdicts)
    summary = summarize(
        result,
        verdicts,
        times,
        relay=relay_name,
        rate=args.rate,
        duration_s=args.duration,
        seed=args.seed,
        check_s=check_s,
        history_events=len(history),
        history_path=str(history.path),
    )
    if verdicts:
        first = min(times, key=times.__getitem__) if times else 0
        told = [verdicts[first]] + [v for i, v in enumerate(verdicts) if i != first][: max(0, args.limit - 1)]
        write_text(out / "incident.txt", incidents(shown, told, args.limit))
    write_text(out / "verdicts.json", json.dumps([v.to_dict() for v in verdicts], indent=1) + "\n")
    write_text(out / "summary.json", json.dumps(summary, indent=2) + "\n")
    for text in closing_lines(summary, str(out)):
        status.say(text)
    if verdicts:
        return 1
    return 0 if summary["rate_sustained"] else 2


def _first_interrupt(stop: threading.Event, status: Status) -> Callable[[int, FrameType | None], None]:
    """The SIGINT handler: the first Ctrl-C stops the soak gently; the next one raises KeyboardInterrupt."""

    def handler(signum: int, frame: FrameType | None) -> None:
        stop.set()
        signal.signal(signal.SIGINT, signal.default_int_handler)
        status.say(
            "Ctrl-C: stopping the traffic; the history so far will be converged and checked (Ctrl-C again to abandon)"
        )

    return handler
