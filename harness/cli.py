"""`relaychaos`: the command line. `relaychaos run` is the main job.

    relaychaos run [--relay relay.toml] [--out DIR] [-n N] [-- extra pytest args]

Runs the chaos suite (scenarios/) against a relay (the bundled reference by
default) and writes results.json and junit.xml into a fresh run folder.
Exit status: 0 every check held, 1 a check failed, 2 the harness could not run.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from .errors import HarnessError

ROOT = Path(__file__).resolve().parent.parent
SUITE = ROOT / "scenarios"
DEFAULT_RELAY = ROOT / "relay_under_test" / "reference" / "relay.toml"


def preflight(relay: Path, out: Path) -> None:
    """Fail fast, with one message, on what would stop every scenario: the manifest, Toxiproxy."""
    from . import manifest, toxiproxy_server

    manifest.load(relay)
    toxiproxy_server.acquire(out).close()


def cmd_run(args: argparse.Namespace) -> int:
    relay = Path(args.relay).resolve() if args.relay else DEFAULT_RELAY
    out = Path(args.out) if args.out else Path("runs") / time.strftime("%Y%m%d-%H%M%S")
    out = out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    try:
        preflight(relay, out)
    except HarnessError as e:
        print(f"relaychaos: {e}", file=sys.stderr)
        return 2
    argv = [sys.executable, "-m", "pytest", str(SUITE), "--rootdir", str(ROOT), "-c", str(ROOT / "pyproject.toml"),
            "--relay", str(relay), "--junitxml", str(out / "junit.xml"),
            "--relaychaos-results", str(out / "results.json"), "-p", "no:cacheprovider", "-q"]
    if args.workers != "0":
        argv += ["-n", args.workers]
    argv += args.pytest_args
    print(f"relaychaos: running the suite against {relay} -> {out}", flush=True)
    rc = subprocess.call(argv, cwd=ROOT)
    results = out / "results.json"
    if rc in (0, 1) and results.exists():
        summary = json.loads(results.read_text())["summary"]
        print(f"relaychaos: {summary['passed']} passed, {summary['failed']} failed, {summary['error']} errors; "
              f"report in {out}")
        return 0 if rc == 0 else 1
    print(f"relaychaos: the suite could not run (pytest exit status {rc}); see the output above", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="relaychaos", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run the chaos suite against a relay and write a report")
    run.add_argument("--relay", help="the relay.toml to test (default: the bundled reference relay)")
    run.add_argument("--out", help="the run folder (default: runs/YYYYmmdd-HHMMSS)")
    run.add_argument("-n", "--workers", default="2", help="pytest-xdist workers; 0 runs in one process")
    run.add_argument("pytest_args", nargs="*", help="extra pytest arguments, after --")
    run.set_defaults(func=cmd_run)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
