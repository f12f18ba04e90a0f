#!/usr/bin/env python3
"""Relay, M. Brennan -- ThreadingHTTPServer front end, raw-socket account client."""
import json
import os
import re
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import account
from ledger import Ledger

ACCOUNT_URL = os.environ.get("ACCOUNT_URL", "")
TIMEOUT = float(os.environ.get("ACCOUNT_TIMEOUT_MS", "2000")) / 1000.0
GUID_OK = re.compile(r"[A-Za-z0-9_-]{1,64}")


class BadRequest(Exception):
    pass


def parse_transfer(raw):
    try:
        text = raw.decode("utf-8")
        obj = json.loads(text)
    except (UnicodeDecodeError, ValueError):
        raise BadRequest("not json")
    if type(obj) is not dict:
        raise BadRequest("not an object")
    try:
        guid, src, dst, amount = obj["guid"], obj["from"], obj["to"], obj["amount"]
    except KeyError:
        raise BadRequest("missing field")
    if type(guid) is not str or not GUID_OK.fullmatch(guid):
        raise BadRequest("bad guid")
    if type(src) is not str or type(dst) is not str:
        raise BadRequest("bad account")
    if type(amount) is not int or amount <= 0:
        raise BadRequest("bad amount")
    return obj, text


def process(ledger, req, text):
    g = req["guid"]
    if not ledger.try_insert_sent(g, text):
        row = ledger.row(g)
        if row is None:
            # purged in between; treat like a fresh request
            if not ledger.try_insert_sent(g, text):
                return account.make_body(g, "E903", "in flight")
        else:
            old = json.loads(row["request"])
            if (old.get("from"), old.get("to"), old.get("amount")) != (req["from"], req["to"], req["amount"]):
                return account.make_body(g, "E904", "guid reused for a different transfer")
            st = row["status"]
            if st == "DONE":
                return row["response"]
            if st == "UNKNOWN":
                return account.make_body(g, "E901", "outcome unknown")
            if st != "FAILED" or not ledger.try_reclaim(g):
                return account.make_body(g, "E903", "in flight")
    status, code, body = account.transfer(ACCOUNT_URL, req, TIMEOUT)
    ledger.settle(g, status, code, body)
    return body


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "relay-mb/1.0"

    def log_message(self, fmt, *args):
        pass

    def reply(self, code, text):
        data = text.encode("utf-8")
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path.split("?")[0] == "/health":
            self.reply(200, '{"ok": true}')
        else:
            self.reply(404, '{"code": "E404"}')

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length > 0 else b""
        if self.path.split("?")[0] != "/transfer":
            self.reply(404, '{"code": "E404"}')
            return
        try:
            req, text = parse_transfer(raw)
        except BadRequest as e:
            self.reply(400, json.dumps({"guid": None, "code": "E400", "message": str(e)}))
            return
        self.reply(200, process(self.server.ledger, req, text))


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256
    allow_reuse_address = True


def serve():
    srv = Server((os.environ.get("RELAY_HOST", "127.0.0.1"), int(os.environ["RELAY_PORT"])), Handler)
    srv.ledger = Ledger(os.environ["LEDGER_PATH"])
    srv.serve_forever()


def arg(name):
    try:
        return sys.argv[sys.argv.index(name) + 1]
    except (ValueError, IndexError):
        sys.exit(f"missing {name}")


def resolve():
    min_age = float(arg("--min-age"))
    led = Ledger(os.environ["LEDGER_PATH"])
    c = led.conn()
    now = time.time()
    for guid, status, ts in c.execute(
            "SELECT guid, status, updated_at FROM ledger WHERE status IN ('UNKNOWN', 'SENT') AND updated_at <= ?",
            (now - min_age,)).fetchall():
        what, code = account.lookup(ACCOUNT_URL, guid, TIMEOUT)
        if what == "found":
            c.execute("UPDATE ledger SET status='DONE', resp_code=?, response=?, updated_at=? "
                      "WHERE guid=? AND status=? AND updated_at=?",
                      (code, account.make_body(guid, code, "settled by resolve"), time.time(), guid, status, ts))
        elif what == "absent":
            c.execute("UPDATE ledger SET status='FAILED', resp_code='E902', updated_at=? "
                      "WHERE guid=? AND status=? AND updated_at=?",
                      (time.time(), guid, status, ts))
        # 'error': leave the row alone


def reprocess():
    limit = int(arg("--max-attempts"))
    led = Ledger(os.environ["LEDGER_PATH"])
    for (guid,) in led.conn().execute(
            "SELECT guid FROM ledger WHERE status='FAILED' AND attempts < ?", (limit,)).fetchall():
        if not led.try_reclaim(guid, below=limit):
            continue
        req = json.loads(led.row(guid)["request"])
        status, code, body = account.transfer(ACCOUNT_URL, req, TIMEOUT)
        led.settle(guid, status, code, body)


def purge():
    keep = float(arg("--retention"))
    led = Ledger(os.environ["LEDGER_PATH"])
    led.conn().execute("DELETE FROM ledger WHERE status='DONE' AND updated_at <= ?", (time.time() - keep,))


if __name__ == "__main__":
    cmds = {"serve": serve, "resolve": resolve, "reprocess": reprocess, "purge": purge}
    if len(sys.argv) < 2 or sys.argv[1] not in cmds:
        sys.exit("usage: main.py serve|resolve|reprocess|purge")
    cmds[sys.argv[1]]()
