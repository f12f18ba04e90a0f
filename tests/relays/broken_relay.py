"""A relay that breaks the contract's interface in one chosen way, for the harness's own tests.

    python broken_relay.py MODE COMMAND [...]

MODE: non-json (answers text), http-500 (answers HTTP 500), e400-200 (answers E400 with HTTP 200),
no-table (never creates the ledger table), hang (batch commands never end), crash (batch commands
exit 3), huge-answer (answers 4 MiB), padded-ledger (its ledger table has a column of its own, a virtual
generated 100 MB blob, and a DONE row per transfer), huge-response (saves a 1 MB response in the ledger).
Otherwise it forwards like relay_base.
"""

import json
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
PAD = ", pad BLOB GENERATED ALWAYS AS (zeroblob(100000000)) VIRTUAL)"  # 100 MB a row, to whoever reads it


async def transfer(request: web.Request) -> web.Response:
    if MODE == "e400-200":
        return web.json_response({"guid": None, "code": "E400"}, status=200)
    body = await request.json()
    if MODE == "non-json":
        return web.Response(text="OK, done")
    if MODE == "http-500":
        return web.json_response({"guid": body["guid"], "code": "0000"}, status=500)
    if MODE == "huge-answer":
        return web.json_response({"guid": body["guid"], "code": "0000", "pad": "x" * (4 << 20)})
    async with ClientSession() as s, s.post(os.environ["ACCOUNT_URL"] + "/transfer", json=body) as r:
        answer = await r.json()
    if MODE in ("padded-ledger", "huge-response"):
        saved = json.dumps(answer) + (" " * 1_000_000 if MODE == "huge-response" else "")
        with sqlite3.connect(os.environ["LEDGER_PATH"]) as db:
            db.execute(
                "INSERT OR REPLACE INTO ledger (guid, status, resp_code, request, response, attempts, updated_at) "
                "VALUES (?, 'DONE', ?, ?, ?, 1, ?)",
                (body["guid"], answer.get("code"), json.dumps(body), saved, time.time()),
            )
    return web.json_response(answer)


if COMMAND == "serve":
    if MODE != "no-table":
        db = sqlite3.connect(os.environ["LEDGER_PATH"])
        db.execute(SCHEMA[:-1] + PAD if MODE == "padded-ledger" else SCHEMA)
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
