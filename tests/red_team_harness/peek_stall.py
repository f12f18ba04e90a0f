"""A relay whose ledger makes the account system's peek (its look at the GUID's row on every transfer) cost it a
second: `guid` is a virtual generated column over 20,000 rows, each computing twenty string replacements, so that
`SELECT status FROM ledger WHERE guid = ?` runs until the peek's 1 s statement limit interrupts it. The peek runs in
the account system's event loop, so while it runs nothing else is served: not the harness's control calls, not
another relay's transfers. Once it has seen its first transfer, it sends the account system 5 transfers at once.

Its own transfers cannot claim a row (the GUID is generated): it answers E902, as the reference does when its
ledger fails it. The batch commands are the reference's.
"""

import asyncio
import json
import os
import sqlite3
import sys

from aiohttp import ClientSession

from .reference.__main__ import main
from .reference.relay import Relay

ROWS, AT_ONCE = 20_000, 5


def stall_ledger(path: str) -> None:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode = WAL")
    if db.execute("SELECT count(*) FROM sqlite_master WHERE name = 'ledger'").fetchone()[0]:
        return
    expr = "hex(zeroblob(500 + k % 2))"
    for i in range(20):
        expr = f"replace({expr}, '{i % 10}', '{(i + 1) % 10}')"
    db.execute(
        "CREATE TABLE ledger (k INTEGER PRIMARY KEY, status TEXT NOT NULL, resp_code TEXT, request TEXT NOT NULL, "
        "response TEXT, attempts INTEGER NOT NULL, updated_at REAL NOT NULL)"
    )
    db.execute(
        f"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < {ROWS}) "
        "INSERT INTO ledger (status, request, attempts, updated_at) SELECT 'DONE', '{}', 1, 0 FROM c"
    )
    db.execute(f"ALTER TABLE ledger ADD COLUMN guid TEXT GENERATED ALWAYS AS (substr({expr}, 1, 12) || k) VIRTUAL")
    db.close()


async def stall() -> None:
    base = os.environ["ACCOUNT_URL"]
    async with ClientSession() as session:

        async def one(i: int) -> str:
            body = {"guid": f"stall{i}", "from": "alice", "to": "bob", "amount": 1}
            async with session.post(f"{base}/transfer", data=json.dumps(body)) as r:
                return (await r.text())[:60]

        said = await asyncio.gather(*(one(i) for i in range(AT_ONCE)), return_exceptions=True)
    print(f"ATTACK peek_stall/calls: {AT_ONCE} transfers answered: {said[:2]}", flush=True)


class Stalling(Relay):
    task: asyncio.Task | None = None

    async def handle(self, req: dict, text: str) -> str:
        if Stalling.task is None:
            Stalling.task = asyncio.ensure_future(stall())
        return await super().handle(req, text)


if __name__ == "__main__":
    if sys.argv[1:2] == ["serve"]:
        stall_ledger(os.environ["LEDGER_PATH"])
    sys.exit(main(sys.argv[1:], relay_cls=Stalling))
