"""Qian Zhang -- relay with a fixed worker pool.

HTTPServer accepts connections and hands each one to a ThreadPoolExecutor.
Per-GUID locks make the read-decide-write on the ledger a critical section.
"""
import json
import os
import re
import socket
import sqlite3
import sys
import threading
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, HTTPServer
from urllib.parse import urlsplit

CFG = {
    "host": os.environ.get("RELAY_HOST", "127.0.0.1"),
    "port": int(os.environ.get("RELAY_PORT", "0") or 0),
    "account": urlsplit(os.environ.get("ACCOUNT_URL", "http://127.0.0.1:1")),
    "ledger": os.environ.get("LEDGER_PATH", "ledger.sqlite"),
    "timeout": int(os.environ.get("ACCOUNT_TIMEOUT_MS", "2000")) / 1000.0,
}
GUID_RX = re.compile(r"[A-Za-z0-9_-]{1,64}")


def db():
    c = sqlite3.connect(CFG["ledger"], timeout=15, isolation_level=None)
    c.execute("PRAGMA busy_timeout=15000")
    c.execute("PRAGMA journal_mode=WAL")
    c.execute("""CREATE TABLE IF NOT EXISTS ledger (
        guid TEXT PRIMARY KEY,
        status TEXT NOT NULL,
        resp_code TEXT,
        request TEXT NOT NULL,
        response TEXT,
        attempts INTEGER NOT NULL,
        updated_at REAL NOT NULL)""")
    return c


def j(guid, code, message):
    return json.dumps({"guid": guid, "code": code, "message": message})


# ---------------------------------------------------------------- per-GUID locking

_locks_guard = threading.Lock()
_locks = defaultdict(threading.Lock)


def guid_lock(guid):
    with _locks_guard:
        return _locks[guid]


# ---------------------------------------------------------------- account system

def account_post(req):
    """Returns (status, code, response). Connection never made -> FAILED; else UNKNOWN unless answered."""
    acc, t = CFG["account"], CFG["timeout"]
    g = req["guid"]
    end = time.monotonic() + t
    try:
        s = socket.create_connection((acc.hostname, acc.port or 80), timeout=t)
    except OSError:
        return "FAILED", "E902", j(g, "E902", "account system not reachable")
    try:
        payload = json.dumps({k: req[k] for k in ("guid", "from", "to", "amount")}).encode()
        s.settimeout(max(end - time.monotonic(), 0.001))
        s.sendall(("POST %s/transfer HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
                   "Content-Length: %d\r\nConnection: close\r\n\r\n" % (acc.path.rstrip("/"), acc.netloc, len(payload))
                   ).encode() + payload)
        buf = b""
        while b"\r\n\r\n" not in buf:
            left = end - time.monotonic()
            if left <= 0:
                raise TimeoutError()
            s.settimeout(left)
            b = s.recv(65536)
            if not b:
                raise EOFError("headers cut")
            buf += b
        head, _, body = buf.partition(b"\r\n\r\n")
        status = int(head.split()[1])
        length = None
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        while length is None or len(body) < length:
            left = end - time.monotonic()
            if left <= 0:
                raise TimeoutError()
            s.settimeout(left)
            b = s.recv(65536)
            if not b:
                if length is None:
                    break
                raise EOFError("body cut")
            body += b
        ans = json.loads(body[:length] if length is not None else body)
        code = ans["code"]
        if not isinstance(code, str) or not code:
            raise ValueError("no code")
    except Exception as e:
        return "UNKNOWN", "E901", j(g, "E901", "sent, outcome unknown (%s)" % type(e).__name__)
    finally:
        s.close()
    return "DONE", code, j(g, code, str(ans.get("message", "")))


def account_query(guid):
    acc, t = CFG["account"], CFG["timeout"]
    end = time.monotonic() + t
    try:
        with socket.create_connection((acc.hostname, acc.port or 80), timeout=t) as s:
            s.sendall(("GET %s/transfer/%s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n"
                       % (acc.path.rstrip("/"), guid, acc.netloc)).encode())
            data = b""
            while True:
                left = end - time.monotonic()
                if left <= 0:
                    return "error", None
                s.settimeout(left)
                b = s.recv(65536)
                if not b:
                    break
                data += b
        head, _, body = data.partition(b"\r\n\r\n")
        status = int(head.split()[1])
        for line in head.split(b"\r\n")[1:]:
            k, _, v = line.partition(b":")
            if k.strip().lower() == b"content-length":
                if len(body) < int(v):
                    return "error", None
                body = body[:int(v)]
        obj = json.loads(body)
    except Exception:
        return "error", None
    if status == 200 and obj.get("found") is True and isinstance(obj.get("code"), str):
        return "found", obj["code"]
    if status == 404 and obj.get("found") is False:
        return "absent", None
    return "error", None


# ---------------------------------------------------------------- the relay logic

def validate(raw):
    try:
        text = raw.decode("utf-8")
        obj = json.loads(text)
    except ValueError:
        return None
    if not isinstance(obj, dict):
        return None
    try:
        g, a, b, amt = obj["guid"], obj["from"], obj["to"], obj["amount"]
    except KeyError:
        return None
    if not (isinstance(g, str) and GUID_RX.fullmatch(g) and isinstance(a, str) and isinstance(b, str)):
        return None
    if type(amt) is not int or amt <= 0:
        return None
    return obj, text


def relay_transfer(req, text):
    g = req["guid"]
    c = db()
    try:
        with guid_lock(g):
            row = c.execute("SELECT status, request, response FROM ledger WHERE guid=?", (g,)).fetchone()
            if row is None:
                c.execute("INSERT OR IGNORE INTO ledger (guid, status, request, attempts, updated_at) "
                          "VALUES (?, 'SENT', ?, 1, ?)", (g, text, time.time()))
            else:
                status, first, saved = row
                o = json.loads(first)
                if (o["from"], o["to"], o["amount"]) != (req["from"], req["to"], req["amount"]):
                    return j(g, "E904", "guid already used for a different request")
                if status == "DONE":
                    return saved
                if status == "UNKNOWN":
                    return j(g, "E901", "outcome unknown")
                if status in ("SENT", "RECEIVED"):
                    return j(g, "E903", "being sent")
                # FAILED: take it back and try again
                c.execute("UPDATE ledger SET status='SENT', attempts=attempts+1, updated_at=? WHERE guid=?",
                          (time.time(), g))
        # lock released: resends now see SENT and get E903 at once
        st, code, out = account_post(req)
        c.execute("UPDATE ledger SET status=?, resp_code=?, response=?, updated_at=? WHERE guid=? AND status='SENT'",
                  (st, code, out, time.time(), g))
        return out
    finally:
        c.close()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def send_json(self, status, text):
        data = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.send_json(200, '{"status": "ok"}') if self.path == "/health" else self.send_json(404, '{"code": "E404"}')

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path != "/transfer":
            return self.send_json(404, '{"code": "E404"}')
        v = validate(raw)
        if v is None:
            return self.send_json(400, j(None, "E400", "malformed request"))
        self.send_json(200, relay_transfer(*v))


class PoolServer(HTTPServer):
    request_queue_size = 128
    pool = ThreadPoolExecutor(max_workers=128, thread_name_prefix="relay")

    def process_request(self, request, client_address):
        self.pool.submit(self._work, request, client_address)

    def _work(self, request, client_address):
        try:
            self.finish_request(request, client_address)
        except Exception:
            self.handle_error(request, client_address)
        finally:
            self.shutdown_request(request)


# ---------------------------------------------------------------- batch commands

def flag(name, conv):
    args = sys.argv[2:]
    if name not in args:
        raise SystemExit("missing " + name)
    return conv(args[args.index(name) + 1])


def cmd_resolve():
    age = flag("--min-age", float)
    c = db()
    for g, st in c.execute("SELECT guid, status FROM ledger WHERE status IN ('UNKNOWN','SENT') AND updated_at <= ?",
                           (time.time() - age,)).fetchall():
        what, code = account_query(g)
        if what == "found":
            c.execute("UPDATE ledger SET status='DONE', resp_code=?, response=?, updated_at=? WHERE guid=? AND status=?",
                      (code, j(g, code, "resolved from account system"), time.time(), g, st))
        elif what == "absent":
            c.execute("UPDATE ledger SET status='FAILED', resp_code='E902', updated_at=? WHERE guid=? AND status=?",
                      (time.time(), g, st))
    c.close()


def cmd_reprocess():
    n = flag("--max-attempts", int)
    c = db()
    for g, text in c.execute("SELECT guid, request FROM ledger WHERE status='FAILED' AND attempts < ?",
                             (n,)).fetchall():
        cur = c.execute("UPDATE ledger SET status='SENT', attempts=attempts+1, updated_at=? "
                        "WHERE guid=? AND status='FAILED' AND attempts < ?", (time.time(), g, n))
        if cur.rowcount != 1:
            continue
        st, code, out = account_post(json.loads(text))
        c.execute("UPDATE ledger SET status=?, resp_code=?, response=?, updated_at=? WHERE guid=? AND status='SENT'",
                  (st, code, out, time.time(), g))
    c.close()


def cmd_purge():
    keep = flag("--retention", float)
    c = db()
    c.execute("DELETE FROM ledger WHERE status='DONE' AND updated_at <= ?", (time.time() - keep,))
    c.close()


def cmd_serve():
    db().close()
    PoolServer((CFG["host"], CFG["port"]), Handler).serve_forever()


if __name__ == "__main__":
    {"serve": cmd_serve, "resolve": cmd_resolve, "reprocess": cmd_reprocess, "purge": cmd_purge}[sys.argv[1]]()
