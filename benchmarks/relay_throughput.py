"""Benchmark: transfers per second through the full stack, with 10% duplicate GUIDs.

    .venv/bin/python -m benchmarks.relay_throughput [--rounds 5] [--requests 10000] [--concurrency 32]

Path: load client → relay serve → Toxiproxy (account proxy) → account-system fixture, the
relay's ledger on disk. One request in ten reuses the GUID of an earlier one (a
resend: answered from the ledger, or E903 while in flight). Each round measures,
in the same run: the baseline (the same load sent straight through Toxiproxy to
the fixture, no relay), relay_base (no dedup) and the reference relay. It checks
that the reference made exactly one account call per distinct GUID.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import tempfile
from pathlib import Path

from relaychaos.run.definition import RunDefinition
from relaychaos.run.services import Services
from relaychaos.stack import manifest

from .load import closed_loop, median

ROOT = Path(__file__).resolve().parent.parent
RELAYS = {
    "base": ROOT / "relay_under_test/base/relay.toml",
    "reference": ROOT / "relay_under_test/reference/relay.toml",
}


def guid_plan(total: int, dup_share: float, seed: int) -> list[str]:
    """GUIDs for `total` requests, a dup_share of them repeating a GUID used earlier (nearby, to race too)."""
    rng = random.Random(seed)
    plan: list[str] = []
    for i in range(total):
        if plan and rng.random() < dup_share:
            plan.append(plan[max(0, len(plan) - rng.randint(1, 64))])
        else:
            plan.append(f"s{seed}-{i}")
    return plan


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--requests", type=int, default=10000)
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-relay-"))
    # sandbox off, as before Stack required one: the benchmark measures the relay, not the sandbox
    run = RunDefinition.build({"relay": RELAYS["reference"], "sandbox": "off"})
    results: dict[str, dict[str, list[float]]] = {
        k: {"rate": [], "p50": [], "p99": []} for k in ("baseline (no relay)", *RELAYS)
    }
    with Services(run, work) as services:
        for rnd in range(args.rounds):
            plan = guid_plan(args.requests, 0.10, rnd)
            body = lambda i, plan=plan: {"guid": plan[i], "from": "a", "to": "b", "amount": 1}  # noqa: E731
            for label, path in [("baseline (no relay)", RELAYS["reference"]), *RELAYS.items()]:
                with services.stack(
                    work / f"r{rnd}-{label.split()[0]}",
                    f"bench-{rnd}",
                    manifest=manifest.load(path),
                    accounts={"a": 10**12, "b": 0},
                    account_timeout_ms=2000,
                ) as stack:
                    if label.startswith("baseline"):
                        url = stack.proxies["account"].url + "/transfer"
                    else:
                        url = stack.start_relay().url + "/transfer"
                    res = asyncio.run(
                        closed_loop(url, body, args.requests, args.concurrency, check=lambda s, b: s == 200)
                    )
                    if label == "reference":
                        guids = stack.account.stats()["guids"]
                        assert set(guids) == set(plan) and all(g["calls"] == 1 for g in guids.values()), (
                            "the reference relay must call once per distinct GUID"
                        )
                    assert res.errors == 0, f"{label}: {res.errors} requests failed"
                for key, value in (("rate", res.rate), ("p50", res.percentile(50)), ("p99", res.percentile(99))):
                    results[label][key].append(value)
                print(
                    f"round {rnd + 1} {label:>20}: {res.rate:7,.0f} transfers/s  p50 {res.percentile(50):5.1f} ms"
                    f"  p99 {res.percentile(99):5.1f} ms",
                    flush=True,
                )
    base = median(results["baseline (no relay)"]["rate"])
    print(
        f"\nmedian of {args.rounds} rounds, {args.requests} transfers each (10% duplicate GUIDs), "
        f"concurrency {args.concurrency}:"
    )
    for label, r in results.items():
        print(
            f"  {label:>20}: {median(r['rate']):7,.0f} transfers/s ({median(r['rate']) / base:.2f}x baseline)"
            f"  p50 {median(r['p50']):5.1f} ms  p99 {median(r['p99']):5.1f} ms"
        )


if __name__ == "__main__":
    main()
