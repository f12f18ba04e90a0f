"""Benchmark: transfers per second the account-system fixture sustains on this machine.

    .venv/bin/python -m benchmarks.account_system [--rounds 5] [--requests 20000] [--concurrency 64]

Each round sends the same load to (1) a bare aiohttp server that answers a
constant JSON body — the baseline, measured in the same run — and (2) the
fixture, peeking at a real ledger file on every transfer. It prints the
median rate of each and their ratio. Needs nothing else running.
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import sys
import tempfile
from pathlib import Path

from relaychaos.ports import lease_port
from relaychaos.run.definition import RunDefinition
from relaychaos.run.services import Services
from relaychaos.stack.processes import spawn, wait_http_ok

from .load import closed_loop, median

REFERENCE = Path(__file__).resolve().parent.parent / "relay_under_test" / "reference" / "relay.toml"

BARE_SERVER = """
import sys
from aiohttp import web
async def h(request):
    await request.read()
    return web.json_response({"guid": "g", "code": "0000", "message": "applied"})
app = web.Application(); app.router.add_post("/transfer", h); app.router.add_get("/health", lambda r: web.Response())
web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), access_log=None, print=None)
"""


def make_ledger(path: Path) -> None:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(
        "CREATE TABLE ledger (guid TEXT PRIMARY KEY, status TEXT NOT NULL, resp_code TEXT, "
        "request TEXT NOT NULL, response TEXT, attempts INTEGER NOT NULL, updated_at REAL NOT NULL)"
    )
    db.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--concurrency", type=int, default=64)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-account-"))
    make_ledger(work / "ledger.sqlite")
    port = lease_port()
    bare = spawn("bare", [sys.executable, "-c", BARE_SERVER, str(port)], log_path=work / "bare.log")
    assert wait_http_ok(f"http://127.0.0.1:{port}/health", timeout_s=10, child=bare) is None
    # the reference relay's run, for its account system (the course contract's shape); no stack, so no sandbox is
    # made: "off" only says so
    services = Services(RunDefinition.build({"relay": REFERENCE, "sandbox": "off"}), work)
    fixture = services.account
    rates: dict[str, list[float]] = {"bare aiohttp (baseline)": [], "account system": []}
    p99: list[float] = []
    try:
        for rnd in range(args.rounds):
            body = lambda i, rnd=rnd: {"guid": f"r{rnd}-{i}", "from": "a", "to": "b", "amount": 1}  # noqa: E731
            base = asyncio.run(closed_loop(f"http://127.0.0.1:{port}/transfer", body, args.requests, args.concurrency))
            fixture.reset(ledger_path=work / "ledger.sqlite", accounts={"a": 10**12, "b": 0})
            fix = asyncio.run(
                closed_loop(
                    f"{fixture.url}/transfer",
                    body,
                    args.requests,
                    args.concurrency,
                    check=lambda s, b: b.get("code") == "0000",
                )
            )
            stats = fixture.stats()
            assert sum(g["debits"] for g in stats["guids"].values()) == args.requests and fix.errors == 0
            assert all(c["ledger_error"] is None for c in stats["calls"][:10]), "the ledger peek must work"
            rates["bare aiohttp (baseline)"].append(base.rate)
            rates["account system"].append(fix.rate)
            p99.append(fix.percentile(99))
            print(
                f"round {rnd + 1}: baseline {base.rate:,.0f}/s, account system {fix.rate:,.0f}/s "
                f"(p99 {fix.percentile(99):.1f} ms)",
                flush=True,
            )
    finally:
        services.close()
        bare.stop()
    b, f = median(rates["bare aiohttp (baseline)"]), median(rates["account system"])
    print(f"\nmedian of {args.rounds} rounds, {args.requests} transfers each, concurrency {args.concurrency}:")
    print(f"  bare aiohttp server (baseline): {b:,.0f} req/s")
    print(
        f"  account system fixture:         {f:,.0f} transfers/s  (p99 {median(p99):.1f} ms; {f / b:.2f}x the baseline)"
    )


if __name__ == "__main__":
    main()
