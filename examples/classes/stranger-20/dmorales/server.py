"""Diego Morales -- relay.

Threaded http.server front end. Includes a "protect the account system"
mode: once the account system has shown trouble (a time-out or a broken
connection), the relay stops hammering it and parks new transfers as
UNKNOWN; resolve + reprocess deliver them later, safely, one at a time.
"""
import json
import os
import re
import socket
import sqlite3
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

LEDGER = os.environ.get("LEDGER_PATH", "ledger.db")
ACCOUNT = urlsplit(os.environ.get("ACCOUNT_URL", "http://127.0.0.1:1"))
TIMEOUT = int(os.environ.get("ACCOUNT_TIMEOUT_MS", "2000")) / 1000.0
GUID_RE = re.compile(r"[A-Za-z0-9_-]{1,64}")


class Guard:
    """Process-wide: has the account system misbehaved since we started?"""
    def __init__(self):
        self.lock = threading.Lock()
        self.tripped = False

    def trip(self):
        with self.lock:
            self.tripped = True

    def is_tripped(self):
        with self.lock:
            return self.tripped


GUARD = Guard()


def open_db():
    c = sqlite3.connect(LEDGER, timeout=15, isolation_level=None)
    c.execute("PRAGMA busy_timeout=15000")
    c.execute("PRAGMA journal_mode=WAL")
    c.execute("CREATE TABLE IF NOT EXISTS ledger (guid TEXT PRIMARY KEY, status TEXT NOT NULL, resp_code TEXT, "
              "request TEXT NOT NULL, response TEXT, attempts INTEGER NOT NULL, updated_at REAL NOT NULL)")
    return c


def reply(guid, code, message):
    return json.dumps({"guid": guid, "code": code, "message": message})


def call_account(method, path, body=b""):
    """(connected, status, body). Raises after connecting if no full answer came in time."""
    end = time.monotonic() + TIMEOUT
    try:
        s = socket.create_connection((ACCOUNT.hostname, ACCOUNT.port or 80), timeout=TIMEOUT)
    except OSError:
        return False, None, None
    try:
        s.settimeout(max(end - time.monotonic(), 0.001))
        s.sendall(("%s %s%s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
                   "Connection: close\r\n\r\n" % (method, ACCOUNT.path.rstrip("/"), path, ACCOUNT.netloc, len(body))
                   ).encode() + body)
        data = b""
        while True:
            left = end - time.monotonic()
            if left <= 0:
                raise TimeoutError
            s.settimeout(left)
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
            head, sep, rest = data.partition(b"\r\n\r\n")
            if sep:
                m = re.search(rb"(?im)^content-length:\s*(\d+)", head)
                if m and len(rest) >= int(m.group(1)):
                    break
        head, sep, rest = data.partition(b"\r\n\r\n")
        if not sep:
            raise ConnectionError("no answer")
        m = re.search(rb"(?im)^content-length:\s*(\d+)", head)
        if m:
            if len(rest) < int(m.group(1)):
                raise ConnectionError("short body")
            rest = rest[:int(m.group(1))]
        return True, int(head.split()[1]), rest
    finally:
        s.close()


def send(req):
    g = req["guid"]
    payload = json.dumps({"guid": g, "from": req["from"], "to": req["to"], "amount": req["amount"]}).encode()
    try:
        connected, status, body = call_account("POST", "/transfer", payload)
    except Exception:
        GUARD.trip()
        return "UNKNOWN", "E901", reply(g, "E901", "no answer from account system")
    if not connected:
        GUARD.trip()
        return "FAILED", "E902", reply(g, "E902", "account system unreachable")
    try:
        ans = json.loads(body)
        code = ans["code"]
        assert isinstance(code, str) and code
    except Exception:
        GUARD.trip()
        return "UNKNOWN", "E901", reply(g, "E901", "unreadable answer")
    return "DONE", code, reply(g, code, str(ans.get("message", "")))


def finish(c, g, st, code, out):
    c.execute("UPDATE ledger SET status=?, resp_code=?, response=?, updated_at=? WHERE guid=? AND status='SENT'",
              (st, code, out, time.time(), g))


def handle(req, text):
    g = req["guid"]
    c = open_db()
    try:
        won = c.execute("INSERT INTO ledger (guid, status, request, attempts, updated_at) VALUES (?, 'SENT', ?, 1, ?) "
                        "ON CONFLICT(guid) DO NOTHING", (g, text, time.time())).rowcount == 1
        if not won:
            row = c.execute("SELECT status, request, response FROM ledger WHERE guid=?", (g,)).fetchone()
            if row is None:
                return reply(g, "E903", "being sent")
            status, first, saved = row
            o = json.loads(first)
            if (o.get("from"), o.get("to"), o.get("amount")) != (req["from"], req["to"], req["amount"]):
                return reply(g, "E904", "guid already used for a different request")
            if status == "DONE":
                return saved
            if status == "UNKNOWN":
                return reply(g, "E901", "outcome unknown")
            if status == "FAILED" and GUARD.is_tripped():
                return reply(g, "E902", "account system unreachable")
            if status != "FAILED":
                return reply(g, "E903", "being sent")
            if c.execute("UPDATE ledger SET status='SENT', attempts=attempts+1, updated_at=? "
                         "WHERE guid=? AND status='FAILED'", (time.time(), g)).rowcount != 1:
                return reply(g, "E903", "being sent")
        if GUARD.is_tripped():
            # protect mode: park it, resolve/reprocess will deliver it
            out = reply(g, "E901", "no answer from account system")
            finish(c, g, "UNKNOWN", "E901", out)
            return out
        st, code, out = send(req)
        finish(c, g, st, code, out)
        return out
    finally:
        c.close()


def valid(raw):
    try:
        text = raw.decode("utf-8")
        d = json.loads(text)
    except ValueError:
        return None
    if not isinstance(d, dict) or not all(k in d for k in ("guid", "from", "to", "amount")):
        return None
    if not isinstance(d["guid"], str) or not GUID_RE.fullmatch(d["guid"]):
        return None
    if not isinstance(d["from"], str) or not isinstance(d["to"], str):
        return None
    if type(d["amount"]) is not int or d["amount"] <= 0:
        return None
    return d, text


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def out(self, code, text):
        b = text.encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)

    def do_GET(self):
        self.out(200, '{"ok": true}') if self.path == "/health" else self.out(404, '{"code": "E404"}')

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path != "/transfer":
            return self.out(404, '{"code": "E404"}')
        v = valid(raw)
        if v is None:
            return self.out(400, reply(None, "E400", "malformed request"))
        self.out(200, handle(*v))


def serve():
    c = open_db()
    # a restart after a crash, or a ledger with unsettled rows: be careful from the start
    if c.execute("SELECT 1 FROM ledger WHERE status IN ('SENT','UNKNOWN','FAILED') LIMIT 1").fetchone():
        GUARD.trip()
    c.close()
    srv = ThreadingHTTPServer((os.environ.get("RELAY_HOST", "127.0.0.1"), int(os.environ["RELAY_PORT"])), H)
    srv.daemon_threads = True
    srv.serve_forever()


def opt(name, conv):
    a = sys.argv[2:]
    return conv(a[a.index(name) + 1])


def resolve():
    age = opt("--min-age", float)
    c = open_db()
    for g, st in c.execute("SELECT guid, status FROM ledger WHERE status IN ('UNKNOWN','SENT') AND updated_at <= ?",
                           (time.time() - age,)).fetchall():
        try:
            connected, status, body = call_account("GET", "/transfer/" + g)
            d = json.loads(body) if connected else None
        except Exception:
            continue
        if not d:
            continue
        if status == 200 and d.get("found") is True and isinstance(d.get("code"), str):
            c.execute("UPDATE ledger SET status='DONE', resp_code=?, response=?, updated_at=? WHERE guid=? AND status=?",
                      (d["code"], reply(g, d["code"], "resolved"), time.time(), g, st))
        elif status == 404 and d.get("found") is False:
            c.execute("UPDATE ledger SET status='FAILED', resp_code='E902', updated_at=? WHERE guid=? AND status=?",
                      (time.time(), g, st))
    c.close()


def reprocess():
    n = opt("--max-attempts", int)
    c = open_db()
    for g, text in c.execute("SELECT guid, request FROM ledger WHERE status='FAILED' AND attempts < ?", (n,)).fetchall():
        if c.execute("UPDATE ledger SET status='SENT', attempts=attempts+1, updated_at=? "
                     "WHERE guid=? AND status='FAILED' AND attempts < ?", (time.time(), g, n)).rowcount != 1:
            continue
        st, code, out = send(json.loads(text))
        finish(c, g, st, code, out)
    c.close()


def purge():
    keep = opt("--retention", float)
    c = open_db()
    c.execute("DELETE FROM ledger WHERE status='DONE' AND updated_at <= ?", (time.time() - keep,))
    c.close()


if __name__ == "__main__":
    {"serve": serve, "resolve": resolve, "reprocess": reprocess, "purge": purge}[sys.argv[1]]()
