"""A payment relay in plain Python (standard library only), per relay contract v1.1.

    python relay.py serve
    python relay.py resolve --min-age SECONDS
    python relay.py reprocess --max-attempts N
    python relay.py purge --retention SECONDS

Environment: RELAY_HOST, RELAY_PORT, ACCOUNT_URL, LEDGER_PATH, ACCOUNT_TIMEOUT_MS.
Each GUID is claimed in the SQLite ledger (committed) before the account call,
so a GUID is sent at most once per claim, whichever process or thread asks.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sqlite3
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# Run as a script from its folder, it imports its siblings by name; the type checker, which takes a
# name TYPE_CHECKING as true, reads them as the package's modules (typing itself is not imported).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from . import account, ledger
    from .account import Transfer
    from .ledger import Row
else:
    import account
    import ledger

GUID_RE = re.compile(r"[A-Za-z0-9_-]{1,64}")
MAX_BODY = 1 << 20


def answer(guid: str | None, code: str | None, message: str) -> str:
    return json.dumps({"guid": guid, "code": code, "message": message})


def parse_transfer(text: str) -> Transfer | None:
    """The request's four fields, or None when it is malformed."""
    try:
        body = json.loads(text)
    except ValueError:
        return None
    if not isinstance(body, dict):
        return None
    guid, amount = body.get("guid"), body.get("amount")
    if not isinstance(guid, str) or not GUID_RE.fullmatch(guid):
        return None
    if not isinstance(body.get("from"), str) or not isinstance(body.get("to"), str):
        return None
    if not isinstance(amount, int) or isinstance(amount, bool) or amount <= 0:
        return None
    return {"guid": guid, "from": body["from"], "to": body["to"], "amount": amount}


def same_request(row: Row, fields: Transfer) -> bool:
    try:
        stored = ledger.stored_transfer(row["request"])
    except (ValueError, KeyError, TypeError):
        return False
    return all(stored[k] == fields[k] and type(stored[k]) is type(fields[k]) for k in ("from", "to", "amount"))


def send_and_record(conn: sqlite3.Connection, fields: Transfer) -> str:
    """Call the account system for a GUID we hold as SENT; record, then answer."""
    guid = fields["guid"]
    try:
        status, code, message = account.transfer(fields)
    except Exception as exc:  # when in doubt, the outcome is unknown
        status, code, message = "UNKNOWN", None, repr(exc)
    if status == "DONE":
        body = answer(guid, code, message)
        resp_code = code
    elif status == "FAILED":
        resp_code, body = "E902", answer(guid, "E902", "not sent: " + message)
    else:
        resp_code, body = "E901", answer(guid, "E901", "outcome unknown: " + message)
    saved = body if status == "DONE" else None
    for _ in range(3):
        try:
            ledger.record(conn, guid, status, resp_code, saved)
            return body
        except Exception:
            time.sleep(0.05)
    # The outcome could not be recorded: the row stays SENT for resolve.
    return answer(guid, "E901", "outcome not recorded")


def handle_transfer(conn: sqlite3.Connection, raw: str, fields: Transfer) -> str:
    """The contract's table: what to do with a GUID given its ledger row."""
    guid = fields["guid"]
    for _ in range(10):
        if ledger.claim_new(conn, guid, raw):
            return send_and_record(conn, fields)
        row = ledger.get(conn, guid)
        if row is None:  # purged in between: try again
            continue
        if not same_request(row, fields):
            return answer(guid, "E904", "GUID already used for a different request")
        if row["status"] in ("SENT", "RECEIVED"):
            return answer(guid, "E903", "GUID is being sent right now")
        if row["status"] == "DONE":
            return row["response"]
        if row["status"] == "UNKNOWN":
            return answer(guid, "E901", "outcome unknown")
        if row["status"] == "FAILED":
            if ledger.claim_failed(conn, guid):
                return send_and_record(conn, fields)
            continue  # someone else claimed it: look again
        return answer(guid, "E901", f"unexpected ledger status {row['status']}")
    return answer(guid, "E903", "GUID is busy")


class Handler(BaseHTTPRequestHandler):
    timeout = 60  # seconds a connection may sit idle mid-request

    def log_message(self, format: str, *args: object) -> None:  # keep stderr quiet
        pass

    def reply(self, http_status: int, body: str | bytes) -> None:
        data = body.encode() if isinstance(body, str) else body
        self.send_response(http_status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path == "/health":
            self.reply(200, json.dumps({"status": "ok"}))
        else:
            self.reply(404, json.dumps({"error": "not found"}))

    def do_POST(self) -> None:
        if self.path != "/transfer":
            self.reply(404, json.dumps({"error": "not found"}))
            return
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if length < 0 or length > MAX_BODY:
            self.reply(400, answer(None, "E400", "bad Content-Length"))
            return
        try:
            text = self.rfile.read(length).decode("utf-8")
        except UnicodeDecodeError:
            text = None
        fields = parse_transfer(text) if text is not None else None
        if text is None or fields is None:
            self.reply(400, answer(_guess_guid(text), "E400", "malformed request"))
            return
        try:
            conn = ledger.connect()
            try:
                body = handle_transfer(conn, text, fields)
            finally:
                conn.close()
        except Exception as exc:  # the ledger could not be used: nothing was sent
            body = answer(fields["guid"], "E902", f"ledger unavailable: {exc!r}")
        self.reply(200, body)


def _guess_guid(text: str | None) -> str | None:
    if text is None:  # not UTF-8: no GUID to read
        return None
    try:
        guid = json.loads(text).get("guid")
    except Exception:
        return None
    return guid if isinstance(guid, str) else None


def serve(_args: argparse.Namespace) -> None:
    ledger.init()
    host = os.environ.get("RELAY_HOST", "127.0.0.1")
    port = int(os.environ["RELAY_PORT"])
    server = ThreadingHTTPServer((host, port), Handler)  # default listen backlog
    server.daemon_threads = True
    server.serve_forever()


def resolve(args: argparse.Namespace) -> int:
    ledger.init()
    conn = ledger.connect()
    cutoff = time.time() - args.min_age
    rows = conn.execute(
        "SELECT guid FROM ledger WHERE status IN ('UNKNOWN', 'SENT') AND updated_at <= ?", (cutoff,)
    ).fetchall()
    for (guid,) in rows:
        try:
            row = ledger.get(conn, guid)
            if row is None or row["status"] not in ("UNKNOWN", "SENT"):
                continue
            if row["updated_at"] > time.time() - args.min_age:
                continue
            found, code = account.query(guid)
            if found == "found":
                ledger.settle(conn, row, "DONE", code, answer(guid, code, "outcome found by query"))
            elif found == "not-found":
                ledger.settle(conn, row, "FAILED", "E902", None)
        except Exception as exc:
            print(f"resolve: {guid}: {exc!r}", file=sys.stderr)
    return 0


def reprocess(args: argparse.Namespace) -> int:
    ledger.init()
    conn = ledger.connect()
    rows = conn.execute(
        "SELECT guid FROM ledger WHERE status = 'FAILED' AND attempts < ?", (args.max_attempts,)
    ).fetchall()
    for (guid,) in rows:
        try:
            if not ledger.claim_failed(conn, guid, args.max_attempts):
                continue
            row = ledger.get(conn, guid)
            assert row is not None  # claimed SENT just now, and purge deletes only DONE rows
            send_and_record(conn, ledger.stored_transfer(row["request"]))
        except Exception as exc:
            print(f"reprocess: {guid}: {exc!r}", file=sys.stderr)
    return 0


def purge(args: argparse.Namespace) -> int:
    ledger.init()
    conn = ledger.connect()
    conn.execute("DELETE FROM ledger WHERE status = 'DONE' AND updated_at <= ?", (time.time() - args.retention,))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="relay.py", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("serve").set_defaults(func=serve)
    p = sub.add_parser("resolve")
    p.add_argument("--min-age", type=float, required=True)
    p.set_defaults(func=resolve)
    p = sub.add_parser("reprocess")
    p.add_argument("--max-attempts", type=int, required=True)
    p.set_defaults(func=reprocess)
    p = sub.add_parser("purge")
    p.add_argument("--retention", type=float, required=True)
    p.set_defaults(func=purge)
    args = parser.parse_args(argv)
    return args.func(args) or 0


if __name__ == "__main__":
    sys.exit(main())
