"""A relay that breaks the contract's interface in one chosen way, for the harness's own tests.

    python broken_relay.py MODE COMMAND [...]

MODE: non-json (answers text), http-500 (answers HTTP 500), e400-200 (answers E400 with HTTP 200),
no-table (never creates the ledger table), hang (batch commands never end), crash (batch commands
exit 3). Otherwise it forwards like relay_base.
"""

import os
import sqlite3
import sys
import time

from aiohttp import ClientSession, web

MODE, COMMAND = sys.argv[1], sys.argv[2]
SCHEMA = (
    "CREATE TABLE IF NOT EXISTS ledger (guid TEXT PRIMARY KEY, status TEXT NOT NULL, resp_code TEXT, "
    "request TEXT NOT NULL, response TEXT, attempts INTEGER NOT NULL, updated_at REAL NOT NULL)"
)


async def transfer(request: web.Request) -> web.Response:
    if MODE == "e400-200":
        return web.json_response({"guid": None, "code": "E400"}, status=200)
    body = await request.json()
    if MODE == "non-json":
        return web.Response(text="OK, done")
    if MODE == "http-500":
        return web.json_response({"guid": body["guid"], "code": "0000"}, status=500)
    async with ClientSession() as s, s.post(os.environ["ACCOUNT_URL"] + "/transfer", json=body) as r:
        return web.json_response(await r.json())


if COMMAND == "serve":
    if MODE != "no-table":
        db = sqlite3.connect(os.environ["LEDGER_PATH"])
        db.execute(SCHEMA)
        db.close()
    app = web.Application()
    app.router.add_post("/transfer", transfer)
    app.router.add_get("/health", lambda r: web.Response(text="ok"))
    web.run_app(app, host=os.environ["RELAY_HOST"], port=int(os.environ["RELAY_PORT"]), print=None)
elif MODE == "hang":
    time.sleep(3600)
elif MODE == "crash":
    print("Traceback (most recent call last): something broke", file=sys.stderr)
    sys.exit(3)
