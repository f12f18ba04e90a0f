"""`python relay_under_test/run.py reference {serve|resolve|reprocess|purge} [...]`, configured by the
contract's environment: RELAY_HOST, RELAY_PORT, ACCOUNT_URL, LEDGER_PATH, ACCOUNT_TIMEOUT_MS (and LEDGER_URL
when its relay.toml keeps the ledger in PostgreSQL: relay_under_test/reference/postgres)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sqlite3
import sys

from .account import Account
from .ledger import Ledger, PostgresLedger
from .relay import Relay


def main(
    argv: list[str] | None = None,
    *,
    relay_cls: type[Relay] = Relay,
    ledger_cls: type[Ledger] = Ledger,
    account_cls: type[Account] = Account,
) -> int:
    """Run one command; a mutant passes its own class for the one part it changes."""
    parser = argparse.ArgumentParser(prog="relay")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("serve")
    sub.add_parser("resolve").add_argument("--min-age", type=float, required=True)
    sub.add_parser("reprocess").add_argument("--max-attempts", type=int, required=True)
    sub.add_parser("purge").add_argument("--retention", type=float, required=True)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s {args.command}[%(process)d] %(message)s")
    env = os.environ
    try:
        # LEDGER_URL: the harness gives a PostgreSQL ledger (relay.toml's [ledger] kind = "postgresql")
        ledger = PostgresLedger(env["LEDGER_URL"]) if env.get("LEDGER_URL") else ledger_cls(env["LEDGER_PATH"])
    except (sqlite3.Error, OSError) as e:
        logging.error(
            "cannot open the ledger %s: %s; refusing to run", env.get("LEDGER_URL") or env.get("LEDGER_PATH"), e
        )
        return 1
    except KeyError as e:
        logging.error("missing environment variable %s (see the relay contract, section 1)", e)
        return 1

    def relay(pooled: bool = True) -> Relay:
        return relay_cls(ledger, account_cls(env["ACCOUNT_URL"], int(env["ACCOUNT_TIMEOUT_MS"]), pooled=pooled))

    if args.command == "serve":
        from aiohttp import web

        from .serve import make_app

        web.run_app(make_app(relay), host=env["RELAY_HOST"], port=int(env["RELAY_PORT"]), access_log=None, print=None)
        return 0

    async def batch() -> None:
        r = relay(pooled=False)  # a batch is short and sequential: no aiohttp, a fast start
        try:
            if args.command == "resolve":
                await r.resolve(args.min_age)
            elif args.command == "reprocess":
                await r.reprocess(args.max_attempts)
            else:
                await r.purge(args.retention)
        finally:
            await r.account.close()

    asyncio.run(batch())
    return 0


if __name__ == "__main__":
    sys.exit(main())
