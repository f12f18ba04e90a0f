"""Benchmark: how often each scenario's faults land, per correct relay, over several runs of the suite.

    .venv/bin/python -m benchmarks.landing_rates [--rounds 5] [--relays reference,go,...] [--save out.json]

Each round runs `relaychaos run --relay R -n 2` for every relay (the bundled correct ones of both
profiles by default, the strangers' among them) and reads its results.json: per scenario, whether it
passed with every claim LANDED, was not exercised (a claim MISSED or UNKNOWN), not applicable, not
run (a batch command the relay lacks), or failed. Prints one Markdown table (scenario x relay, each
cell `landed/rounds`, with `n/a`, `not run` or the other outcomes spelled out) and the count of
passes that did not land, which must be 0. Exit 1 when a correct relay failed a scenario or a
scenario was not exercised.
"""

from __future__ import annotations

import argparse
import collections
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from relaychaos.records.results import ResultsFile, ScenarioResult

ROOT = Path(__file__).resolve().parent.parent
RELAYS = {
    "reference": "relay_under_test/reference/relay.toml",
    "go": "relay_under_test/go/relay.toml",
    "stdlib": "relay_under_test/stdlib/relay.toml",
    "java": "relay_under_test/java/relay.toml",
    "rust": "relay_under_test/rust/relay.toml",
    "payments_go": "relay_under_test/payments_go/relay.toml",
    "payments_node": "relay_under_test/payments_node/relay.toml",
}


def outcome(entry: ScenarioResult) -> str:
    """landed | not exercised | not applicable | not run | failed | error | skipped."""
    if entry.outcome == "passed":
        return "landed" if all(x.status in ("LANDED", "N/A") for x in entry.landing) else "passed?"
    message = entry.message or ""
    if entry.outcome == "skipped":
        return "not applicable" if message.startswith("not applicable") else "not run"
    return entry.outcome


def one_run(relay: str, folder: Path) -> dict[str, str]:
    """scenario -> outcome of one `relaychaos run` against relay."""
    out = folder / relay
    subprocess.run(
        [str(ROOT / ".venv/bin/relaychaos"), "run", "--relay", str(ROOT / RELAYS[relay]), "--out", str(out), "-n", "2"],
        cwd=ROOT,
        capture_output=True,
        check=False,
    )
    data = ResultsFile.from_json((out / "results.json").read_bytes())
    return {s.nodeid.split("[", 1)[-1].rstrip("]").split("::")[-1]: outcome(s) for s in data.scenarios}


def cell(counts: collections.Counter, rounds: int) -> str:
    landed = counts.pop("landed", 0)
    parts = [f"{landed}/{rounds}"] if landed or not counts else []
    short = {"not applicable": "n/a", "not run": "not run"}
    parts += [f"{short.get(k, k)}" + (f" {n}" if n != rounds else "") for k, n in sorted(counts.items())]
    return ", ".join(parts)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--relays", default=",".join(RELAYS))
    parser.add_argument("--save", type=Path, help="write every run's outcomes as JSON")
    args = parser.parse_args()
    relays = args.relays.split(",")
    seen: dict[tuple[str, str], collections.Counter] = collections.defaultdict(collections.Counter)
    runs: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="landing-rates-") as tmp:
        for n in range(1, args.rounds + 1):
            for relay in relays:
                got = one_run(relay, Path(tmp) / f"round{n}")
                runs.append({"round": n, "relay": relay, "outcomes": got})
                for scenario, what in got.items():
                    seen[(scenario, relay)][what] += 1
                bad = sorted(s for s, w in got.items() if w not in ("landed", "not applicable", "not run"))
                print(f"round {n} {relay}: {len(got)} scenarios; {', '.join(bad) or 'all landed'}", flush=True)
    scenarios = sorted({s for s, _ in seen})
    print(f"\n| scenario | {' | '.join(relays)} |\n|---|{'---|' * len(relays)}")
    for s in scenarios:
        print(f"| `{s}` | " + " | ".join(cell(seen[(s, r)].copy(), args.rounds) for r in relays) + " |")
    unlanded = sum(c["passed?"] for c in seen.values())
    bad = sum(c[k] for c in seen.values() for k in ("not exercised", "failed", "error"))
    print(f"\npasses that did not land: {unlanded}; failed or not exercised: {bad}")
    if args.save:
        args.save.write_text(json.dumps({"rounds": args.rounds, "relays": relays, "runs": runs}, indent=1))
    return 1 if bad or unlanded else 0


if __name__ == "__main__":
    sys.exit(main())
