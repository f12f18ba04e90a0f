"""`relaychaos`: the command line. `relaychaos run` is the main job; every command is listed below,
and `relaychaos COMMAND --help` gives its arguments.

    relaychaos run [--relay relay.toml] [--out DIR] [-n N] [--sandbox auto|strict|off] [--hunt] [--shrink-s S]
                   [-- extra pytest args]

`run` runs the chaos suite (scenarios/) against a relay (the bundled reference by
default) and writes results.json, junit.xml and report.html into a fresh run folder. When a
named scenario fails, the state machine's random stories do not run (the report says so);
--hunt runs them anyway, and --shrink-s bounds the shrinking of what they find.
Exit status: 0 every check held and every scenario was exercised, 1 a check failed, 3 every check held but
a scenario was not exercised (its fault met nothing), 2 the harness could not run (a relay whose serve never
starts included: the run stops at its first scenario), 130 after Ctrl-C or SIGTERM (the scenarios that finished
are written, marked partial, with their report).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections import Counter
from pathlib import Path

import relaychaos
from relaychaos import options, run_folder
from relaychaos.commands import doctor, recheck, setup, timeline
from relaychaos.engine import scenario_file
from relaychaos.engine.budget import BUDGETS, SHRINK_S
from relaychaos.errors import HarnessError, ManifestError
from relaychaos.grading import command as grading
from relaychaos.incidents import command as incidents
from relaychaos.incidents.verify import replay_notes
from relaychaos.plugin.results_recorder import manifest_name
from relaychaos.records.results import ResultsFile
from relaychaos.reports.html import write as write_html
from relaychaos.reports.results import RunResults
from relaychaos.run.chaos import run_and_check
from relaychaos.run.definition import RunDefinition
from relaychaos.run.services import Services
from relaychaos.run.suite import run_suite, suite_command
from relaychaos.run_folder import LOG_BUDGET, NOT_STARTED
from relaychaos.sandbox.levels import describe, probe
from relaychaos.sandbox.policy import clear_abandoned
from relaychaos.soak import command as soak
from relaychaos.stack import postgres, toxiproxy_reach, toxiproxy_server
from relaychaos.stack.manifest import Manifest

# The suite's pytest configuration, written into each run folder: the run needs no checkout.


def preflight(args: argparse.Namespace, out: Path) -> Manifest:
    """Fail fast, with one message, on what would stop every scenario: the manifest (--relay, else RELAYCHAOS_RELAY,
    else the bundled reference: the run definition's), every problem in it, each command's program and its [ledger]
    url (exit 2), Toxiproxy. The relay to test."""
    loaded = RunDefinition.build(vars(args)).relay
    toxiproxy_reach.can_run(loaded, toxiproxy_reach.reach())  # a server on another host serves this relay
    for warning in loaded.warnings:
        print(f"relaychaos: {loaded.path}: {warning}", file=sys.stderr)
    url = loaded.profile.ledger.url  # the team's own database: every scenario would meet it unreachable
    why = postgres.unreachable(url) if url else None
    if why:
        raise ManifestError(
            f"[ledger] url cannot be reached: {why}",
            where=str(loaded.path),
            fix="start that database (or correct the url), or leave `url` out and the harness starts one",
        )
    server = toxiproxy_server.acquire(out)
    if server.swept:
        print(
            f"relaychaos: removed {len(server.swept)} proxies from TOXIPROXY_URL={server.url} that runs killed on this "
            f"machine left there (listed in {out / 'toxiproxy-swept.log'})",
            file=sys.stderr,
        )
    server.close()
    return loaded


def relay_line(relay: Manifest) -> str:
    """The run header's account of the relay: its manifest, where its commands run and, when it has any, its own
    variables ([env]) with their values (its configuration, not secrets)."""
    line = (
        f"relaychaos: relay '{relay.name}' ({relay.profile.name} profile); commands run in {relay.where_commands_run}"
    )
    if relay.env:
        line += "; its own environment ([env]): " + " ".join(f"{k}={v}" for k, v in sorted(relay.env.items()))
    return line


BUDGET_USE = {
    "quick": "local work: the default",
    "ci": "the default when CI is set; derandomized, the same stories on every run",
    "grade": "what `relaychaos grade` runs: the stories drawn from RELAYCHAOS_SEED",
    "nightly": "a deeper search, e.g. with --hunt",
}


def _run_epilog() -> str:
    """`relaychaos run --help`'s last part: the budgets, set in the environment (run has no flag for them)."""
    lines = [f"budgets of the state machine's random stories: RELAYCHAOS_BUDGET={'|'.join(options.BUDGETS)}"]
    lines += ["(the environment, or `relaychaos run -- --relaychaos-budget NAME`; run has no flag of its own)"]
    for name in options.BUDGETS:
        b = BUDGETS[name]
        lines.append(
            f"  {name:8} {b['max_examples']} stories of up to {b['stateful_step_count']} steps, "
            f"{SHRINK_S[name]:g} s of shrinking a failure: {BUDGET_USE[name]}"
        )
    return "\n".join(lines)


def cmd_run(args: argparse.Namespace) -> int:
    out = run_folder.out_folder(args)
    out.mkdir(parents=True, exist_ok=True)
    os.chmod(out, 0o700)  # histories and logs: the harness's, not the relays'
    (out / LOG_BUDGET).unlink(missing_ok=True)  # this run's relay logs start from nothing
    (out / NOT_STARTED).unlink(missing_ok=True)  # a stop of an earlier run in this folder is not this one's
    try:
        # a server on another host: this machine's address for it is given, said before the server is asked
        reach = toxiproxy_reach.reach()
        loaded = preflight(args, out)
        without = toxiproxy_reach.sandbox_without(reach)
        sandbox_summary = describe(probe(args.sandbox, args.sandbox_limit, without))  # SandboxError: strict refused
    except HarnessError as e:
        print(f"relaychaos: {e}", file=sys.stderr)
        (out / NOT_STARTED).write_text(f"{e}\n")  # the run folder says why it is empty
        return 2
    relay = loaded.path
    argv = _suite_argv(args, relay, out)
    print(f"relaychaos: running the suite against {relay} -> {out}", flush=True)
    print(f"{relay_line(loaded)}\nrelaychaos: {sandbox_summary}", flush=True)
    rc, interrupted, mid_line = run_suite(argv, out)
    clear_abandoned()  # the sandbox slots of workers killed before they could close them
    results = out / "results.json"
    if interrupted:
        print(end="\n" if mid_line else "")  # pytest's progress dots end without a newline
        return _interrupted(relay, out)
    if (out / NOT_STARTED).exists():  # relaychaos.plugin.start_gate stopped it: a relay that cannot be tested
        print(end="\n" if mid_line else "", flush=True)
        if results.exists():
            write_html(results)  # the one scenario, with serve's log, in the report as ever
        print(f"relaychaos: {(out / NOT_STARTED).read_text().rstrip()}", file=sys.stderr)
        return 2
    return _reported(rc, results, out)


def _suite_argv(args: argparse.Namespace, relay: Path, out: Path) -> list[str]:
    """The suite's command line against `relay` (relaychaos.run.suite.suite_command), as `run` was asked."""
    extra = ["--junitxml", str(out / "junit.xml"), "--relaychaos-not-started", str(out / NOT_STARTED)]
    extra += ["-n", args.workers] if args.workers != "0" else []
    # verbose: -v twice, past suite_command's -q (the plugin shows relay logs at -v); else _failures' line a failure
    extra += ["-v", "-v"] if args.verbose else ["--tb=no", "-rN"]
    extra += [*args.pytest_args, *(["--color=yes"] if sys.stdout.isatty() else [])]
    values = {o.name: getattr(args, o.name) for o in options.COMMAND_OPTIONS}
    return suite_command(relay, out, out / "results.json", values, extra)


def _reported(rc: int, results: Path, out: Path) -> int:
    """After the suite ran: its HTML report and one summary line, and the exit status (2: it could not run)."""
    if rc not in (0, 1) or not results.exists():
        print(f"relaychaos: the suite could not run (pytest exit status {rc}); see the output above", file=sys.stderr)
        return 2
    write_html(results)
    data = RunResults.read(results)
    summary, machine = data.summary, data.random_stories
    for line in _failures(data):
        print(line)
    if machine is not None and machine.why_not:
        print(f"relaychaos: random stories not run: {machine.why_not}")
    missed = summary.not_exercised
    print(
        f"relaychaos: {summary.passed} passed, {summary.failed} failed, {summary.error} errors"
        + (f", {missed} not exercised (every rule held, but the fault met nothing)" if missed else "")
        + f"; report in {out}"
    )
    if data.ok and missed:
        return 3
    return 0 if rc == 0 else 1


def _failures(data: ResultsFile, most: int = 30) -> list[str]:
    """A line per failing scenario (at most `most`, then how many more): the rules it broke, how often, and the first
    GUID; a scenario that could not run, its message's first line. The report and -v have the timelines."""
    lines = []
    for result in data.scenarios:
        if result.outcome not in ("failed", "error"):
            continue
        name = result.nodeid.rpartition("[")[2].rstrip("]") or result.nodeid
        broken = Counter(v.rule for v in result.verdicts)
        if broken:
            first = result.verdicts[0]
            rules = ", ".join(f"{rule} ×{n}" if n > 1 else rule for rule, n in broken.items())
            lines.append(f"  FAILED {name}: {rules} (first: {first.rule}, GUID {first.guid or 'none'})")
        else:
            said = (result.message or "").strip().splitlines()
            lines.append(f"  {result.outcome.upper()} {name}: {said[0][:160] if said else 'no message'}")
    if len(lines) > most:
        lines = [*lines[:most], f"  ... and {len(lines) - most} more: see the report"]
    return lines


def _interrupted(relay: Path, out: Path) -> int:
    """After Ctrl-C: what finished, written and marked partial, with its report; exit status 130."""
    path = out / "results.json"
    try:
        results = RunResults.load(path)
    except (OSError, ValueError, KeyError):  # interrupted before any scenario finished
        results = RunResults(str(relay), manifest_name(relay))
    results.partial = True
    results.write(path)
    write_html(path)
    total = f" of {results.expected}" if results.expected else ""
    print(
        f"relaychaos: interrupted after {len(results.scenarios)}{total} scenarios; partial results and report in {out}",
        flush=True,
    )
    return 130


def cmd_replay(args: argparse.Namespace) -> int:
    """Run one scenario file against a relay and print the verdict with its per-GUID timeline."""
    out = run_folder.out_folder(args, "replay-")
    try:
        loaded = scenario_file.load(args.file)  # every problem in the file is found before anything starts
        run = RunDefinition.build(vars(args))
        sc = loaded.scenario
        with Services(run, out) as services:
            print(f"relaychaos: {services.sandbox.summary()}", flush=True)  # strict refuses before anything is made
            out.mkdir(parents=True, exist_ok=True)
            os.chmod(out, 0o700)
            stack = services.stack(out, sc.name, accounts=sc.accounts, account_timeout_ms=sc.account_timeout_ms)
            with stack:
                result = run_and_check(stack, sc)
    except HarnessError as e:
        print(f"relaychaos: {e}", file=sys.stderr)
        return 2
    print(f"relaychaos: replayed {args.file} against relay '{run.relay.name}' ({run.relay.path})")
    print(result.report(limit=args.limit))
    if sc.incident:  # an imported incident: its answers against production's, and how to check reproduction
        print("\n".join(f"relaychaos: {line}" for line in replay_notes(result, sc)))
    return 0 if result.ok else 1


def _formatter(prog: str) -> argparse.HelpFormatter:
    """The description as written, and each command's help on one line beside its name, at any terminal width."""
    return argparse.RawDescriptionHelpFormatter(prog, max_help_position=24, width=160)


def parser() -> argparse.ArgumentParser:
    """The whole command line: every command's parser, registered on `sub`; --help lists each with its help line."""
    parser = argparse.ArgumentParser(prog="relaychaos", description=__doc__, formatter_class=_formatter)
    parser.add_argument("--version", action="version", version=f"relaychaos {relaychaos.version()}")
    sub = parser.add_subparsers(dest="command", required=True, title="commands")
    run = sub.add_parser(
        "run",
        help="run the chaos suite against a relay and write a report",
        epilog=_run_epilog(),
        formatter_class=_formatter,
    )
    run.add_argument("--relay", help="the relay.toml to test (also RELAYCHAOS_RELAY; default: the bundled reference)")
    run.add_argument("--out", help="the run folder (default: runs/YYYYmmdd-HHMMSS)")
    run.add_argument(
        "-n",
        "--workers",
        default="4",
        help="pytest-xdist workers (default 4: the scenarios mostly wait on holds, time-outs and relays, so four "
        "share two cores; the suite on the reference in 15 s, against 20 s with two); 0 runs in one process",
    )
    run.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="each failing scenario's verdicts with their timelines and the tails of its relay logs (default: a line "
        "per failing scenario; the report has everything)",
    )
    run.add_argument("pytest_args", nargs="*", help="extra pytest arguments, after --")
    options.add_to_argparse(run)  # --sandbox, --sandbox-limit, --hunt, --shrink-s
    replay = sub.add_parser("replay", help="run one scenario file and print the verdict with its timeline")
    options.add_to_argparse(replay, (options.SANDBOX, options.SANDBOX_LIMIT))
    run.set_defaults(func=cmd_run)
    replay.add_argument("file", help="the scenario file (YAML), e.g. an incident written down")
    replay.add_argument(
        "--relay", help="the relay.toml to replay it on (also RELAYCHAOS_RELAY; default: the reference)"
    )
    replay.add_argument("--out", help="where to keep the history and logs (default: runs/replay-YYYYmmdd-HHMMSS)")
    replay.add_argument("--limit", type=int, default=10, help="how many verdicts to print in full")
    replay.set_defaults(func=cmd_replay)
    for module in (grading, soak, recheck, incidents, timeline, doctor, setup):  # each command's (add_parsers)
        module.add_parsers(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        options.resolve_all(args)
        options.check_environment()
    except ValueError as e:
        print(f"relaychaos: {e}", file=sys.stderr)
        return 2
    # SIGTERM (a cancelled CI job, `docker stop`, `timeout`) stops a command as Ctrl-C does: its suites are
    # interrupted, their stacks closed, what finished is written; nothing is left running
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        return args.func(args)
    finally:
        run_folder.hand_over(getattr(args, "out", None))  # under sudo: the invoking user's


if __name__ == "__main__":
    sys.exit(main())
