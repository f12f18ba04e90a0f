"""Payment relay -- A. Kowalski.

asyncio server with a hand-written HTTP/1.1 parser; SQLite work runs in worker
threads (asyncio.to_thread) so a busy ledger never stalls the event loop.
"""
import argparse
import asyncio
import json
import os
import re
import sqlite3
import sys
import time
from urllib.parse import urlsplit

GUID_RE = re.compile(r"[A-Za-z0-9_-]{1,64}")

SCHEMA = """
CREATE TABLE IF NOT EXISTS ledger (
  guid       TEXT PRIMARY KEY,
  status     TEXT NOT NULL,
  resp_code  TEXT,
  request    TEXT NOT NULL,
  response   TEXT,
  attempts   INTEGER NOT NULL,
  updated_at REAL NOT NULL
)
"""

REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed",
           413: "Payload Too Large", 500: "Internal Server Error"}


# --------------------------------------------------------------------- ledger

def db_open():
    path = os.environ["LEDGER_PATH"]
    conn = sqlite3.connect(path, timeout=10.0, isolation_level=None)  # autocommit
    conn.execute("PRAGMA busy_timeout=10000")
    try:
        conn.execute("PRAGMA journal_mode=WAL")
    except sqlite3.OperationalError:
        pass  # someone else is switching it right now; WAL is persistent anyway
    conn.execute(SCHEMA)
    return conn


def db_run(fn, *args):
    conn = db_open()
    try:
        return fn(conn, *args)
    finally:
        conn.close()


def q_get(conn, guid):
    return conn.execute(
        "SELECT status, resp_code, request, response, attempts FROM ledger WHERE guid=?",
        (guid,)).fetchone()


def q_claim_new(conn, guid, raw):
    cur = conn.execute(
        "INSERT INTO ledger (guid, status, resp_code, request, response, attempts, updated_at) "
        "VALUES (?, 'SENT', NULL, ?, NULL, 1, ?) ON CONFLICT(guid) DO NOTHING",
        (guid, raw, time.time()))
    return cur.rowcount == 1


def q_claim_failed(conn, guid, max_attempts=None):
    sql = ("UPDATE ledger SET status='SENT', attempts=attempts+1, updated_at=? "
           "WHERE guid=? AND status='FAILED'")
    args = [time.time(), guid]
    if max_attempts is not None:
        sql += " AND attempts < ?"
        args.append(max_attempts)
    return conn.execute(sql, args).rowcount == 1


def q_finish(conn, guid, status, code, response):
    conn.execute(
        "UPDATE ledger SET status=?, resp_code=?, response=?, updated_at=? "
        "WHERE guid=? AND status='SENT'",
        (status, code, response, time.time(), guid))


# -------------------------------------------------------------- account call

def reply_body(guid, code, message):
    return json.dumps({"guid": guid, "code": code, "message": message})


async def call_account(req, timeout_s):
    """POST /transfer once. Returns (status, code, body_text).

    FAILED  - the TCP connection could not be made: nothing left this process.
    UNKNOWN - anything after the connection was up (time-out, reset, junk).
    DONE    - an HTTP answer carrying a code.
    """
    guid = req["guid"]
    u = urlsplit(os.environ["ACCOUNT_URL"])
    host, port = u.hostname, u.port or 80
    base = u.path.rstrip("/")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s

    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout_s)
    except (OSError, asyncio.TimeoutError) as exc:
        return "FAILED", "E902", reply_body(guid, "E902", "account system unreachable: %s" % type(exc).__name__)

    payload = json.dumps({"guid": guid, "from": req["from"], "to": req["to"],
                          "amount": req["amount"]}).encode()
    head = ("POST %s/transfer HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/json\r\n"
            "Content-Length: %d\r\nConnection: close\r\n\r\n" % (base, host, port, len(payload))).encode()

    async def exchange():
        writer.write(head + payload)
        await writer.drain()
        status_line = await reader.readline()
        parts = status_line.decode("latin-1").split()
        if len(parts) < 2 or not parts[0].startswith("HTTP/"):
            raise ValueError("no status line")
        status = int(parts[1])
        length = None
        chunked = False
        while True:
            line = await reader.readline()
            if not line:
                raise ConnectionError("eof in headers")
            if line in (b"\r\n", b"\n"):
                break
            k, _, v = line.decode("latin-1").partition(":")
            k = k.strip().lower()
            if k == "content-length":
                length = int(v.strip())
            elif k == "transfer-encoding" and "chunked" in v.lower():
                chunked = True
        if chunked:
            body = b""
            while True:
                size = int((await reader.readline()).split(b";")[0].strip(), 16)
                if size == 0:
                    await reader.readline()
                    break
                body += await reader.readexactly(size)
                await reader.readexactly(2)
        elif length is not None:
            body = await reader.readexactly(length)
        else:
            body = await reader.read()
        return status, body

    try:
        status, body = await asyncio.wait_for(exchange(), max(0.0, deadline - loop.time()))
    except Exception as exc:  # time-out, reset, truncated body, garbage: the request may be out
        return "UNKNOWN", "E901", reply_body(guid, "E901", "no answer from account system: %s" % type(exc).__name__)
    finally:
        writer.close()

    try:
        data = json.loads(body)
        code = data["code"]
        if not isinstance(code, str) or not code:
            raise ValueError
    except Exception:
        return "UNKNOWN", "E901", reply_body(guid, "E901", "unreadable answer (HTTP %d)" % status)
    msg = data.get("message", "")
    return "DONE", code, reply_body(guid, code, msg if isinstance(msg, str) else str(msg))


# ------------------------------------------------------------------ handling

def validate(raw_bytes):
    try:
        text = raw_bytes.decode("utf-8")
        obj = json.loads(text)
    except Exception:
        return None, None
    if not isinstance(obj, dict):
        return None, None
    for f in ("guid", "from", "to", "amount"):
        if f not in obj:
            return None, None
    g, a = obj["guid"], obj["amount"]
    if not isinstance(g, str) or not GUID_RE.fullmatch(g):
        return None, None
    if not isinstance(obj["from"], str) or not isinstance(obj["to"], str):
        return None, None
    if isinstance(a, bool) or not isinstance(a, int) or a <= 0:
        return None, None
    return obj, text


def same_request(stored_text, req):
    try:
        old = json.loads(stored_text)
    except Exception:
        return False
    return (old.get("from") == req["from"] and old.get("to") == req["to"]
            and old.get("amount") == req["amount"] and type(old.get("amount")) is int)


async def handle_transfer(body, timeout_s):
    req, text = validate(body)
    if req is None:
        g = None
        try:
            o = json.loads(body)
            if isinstance(o, dict) and isinstance(o.get("guid"), str):
                g = o["guid"]
        except Exception:
            pass
        return 400, json.dumps({"guid": g, "code": "E400", "message": "malformed request"})
    guid = req["guid"]

    won = await asyncio.to_thread(db_run, q_claim_new, guid, text)
    if not won:
        row = await asyncio.to_thread(db_run, q_get, guid)
        if row is None:  # purged between the two statements: try once more
            won = await asyncio.to_thread(db_run, q_claim_new, guid, text)
            if not won:
                return 200, reply_body(guid, "E903", "being sent")
        else:
            status, resp_code, stored_req, response, _ = row
            if not same_request(stored_req, req):
                return 200, reply_body(guid, "E904", "guid already used for a different request")
            if status == "DONE":
                return 200, response
            if status == "UNKNOWN":
                return 200, reply_body(guid, "E901", "outcome unknown")
            if status in ("SENT", "RECEIVED"):
                return 200, reply_body(guid, "E903", "being sent")
            if status == "FAILED":
                if not await asyncio.to_thread(db_run, q_claim_failed, guid):
                    return 200, reply_body(guid, "E903", "being sent")
            else:
                return 200, reply_body(guid, "E903", "being sent")

    st, code, out = await call_account(req, timeout_s)
    await asyncio.to_thread(db_run, q_finish, guid, st, code, out)
    return 200, out


class Server:
    def __init__(self):
        self.timeout_s = int(os.environ.get("ACCOUNT_TIMEOUT_MS", "2000")) / 1000.0

    async def send(self, writer, status, body, keep):
        data = body.encode("utf-8")
        head = ("HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
                "Connection: %s\r\n\r\n" % (status, REASONS.get(status, "X"), len(data),
                                              "keep-alive" if keep else "close"))
        writer.write(head.encode("latin-1") + data)
        await writer.drain()

    async def client(self, reader, writer):
        try:
            while True:
                line = await reader.readline()
                if not line:
                    break
                if line in (b"\r\n", b"\n"):
                    continue
                parts = line.decode("latin-1").split()
                if len(parts) != 3:
                    await self.send(writer, 400, json.dumps({"guid": None, "code": "E400", "message": "bad request line"}), False)
                    break
                method, target, version = parts
                headers = {}
                while True:
                    h = await reader.readline()
                    if not h:
                        return
                    if h in (b"\r\n", b"\n"):
                        break
                    k, _, v = h.decode("latin-1").partition(":")
                    headers[k.strip().lower()] = v.strip()
                keep = version == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
                if "chunked" in headers.get("transfer-encoding", "").lower():
                    body = b""
                    while True:
                        size = int((await reader.readline()).split(b";")[0].strip() or b"0", 16)
                        if size == 0:
                            while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                                pass
                            break
                        body += await reader.readexactly(size)
                        await reader.readexactly(2)
                else:
                    n = int(headers.get("content-length", "0") or 0)
                    if n > 1 << 20:
                        await self.send(writer, 413, json.dumps({"guid": None, "code": "E400", "message": "too large"}), False)
                        break
                    body = await reader.readexactly(n) if n else b""
                path = target.split("?", 1)[0]
                if path == "/health":
                    await self.send(writer, 200, '{"status": "ok"}', keep)
                elif path == "/transfer" and method == "POST":
                    status, out = await handle_transfer(body, self.timeout_s)
                    await self.send(writer, status, out, keep)
                elif path == "/transfer":
                    await self.send(writer, 405, json.dumps({"guid": None, "code": "E405", "message": "method not allowed"}), keep)
                else:
                    await self.send(writer, 404, json.dumps({"guid": None, "code": "E404", "message": "not found"}), keep)
                if not keep:
                    break
        except (ConnectionError, asyncio.IncompleteReadError, ValueError):
            pass
        finally:
            try:
                writer.close()
            except Exception:
                pass


async def serve():
    db_run(lambda c: None)  # create the schema before we say we are ready
    srv = Server()
    server = await asyncio.start_server(srv.client, os.environ.get("RELAY_HOST", "127.0.0.1"),
                                        int(os.environ["RELAY_PORT"]), backlog=256)
    async with server:
        await server.serve_forever()


# -------------------------------------------------------------- batch jobs

def query_account(guid, timeout_s):
    """GET /transfer/{guid}: ('found', code) / ('missing', None) / ('error', None)."""
    import http.client
    u = urlsplit(os.environ["ACCOUNT_URL"])
    try:
        conn = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=timeout_s)
        conn.request("GET", "%s/transfer/%s" % (u.path.rstrip("/"), guid))
        resp = conn.getresponse()
        body = resp.read()
        conn.close()
        data = json.loads(body)
    except Exception:
        return "error", None
    if resp.status == 200 and data.get("found") is True and isinstance(data.get("code"), str):
        return "found", data["code"]
    if resp.status == 404 and data.get("found") is False:
        return "missing", None
    return "error", None


def cmd_resolve(min_age):
    timeout_s = int(os.environ.get("ACCOUNT_TIMEOUT_MS", "2000")) / 1000.0
    conn = db_open()
    cutoff = time.time() - min_age
    rows = conn.execute(
        "SELECT guid, status, updated_at FROM ledger WHERE status IN ('UNKNOWN','SENT') AND updated_at <= ?",
        (cutoff,)).fetchall()
    for guid, status, updated in rows:
        kind, code = query_account(guid, timeout_s)
        if kind == "found":
            conn.execute("UPDATE ledger SET status='DONE', resp_code=?, response=?, updated_at=? "
                         "WHERE guid=? AND status=? AND updated_at=?",
                         (code, reply_body(guid, code, "resolved by query"), time.time(), guid, status, updated))
        elif kind == "missing":
            conn.execute("UPDATE ledger SET status='FAILED', resp_code='E902', updated_at=? "
                         "WHERE guid=? AND status=? AND updated_at=?",
                         (time.time(), guid, status, updated))
    conn.close()


def cmd_reprocess(max_attempts):
    timeout_s = int(os.environ.get("ACCOUNT_TIMEOUT_MS", "2000")) / 1000.0
    conn = db_open()
    rows = conn.execute("SELECT guid FROM ledger WHERE status='FAILED' AND attempts < ?",
                        (max_attempts,)).fetchall()
    for (guid,) in rows:
        if not q_claim_failed(conn, guid, max_attempts):
            continue  # somebody else took it
        row = q_get(conn, guid)
        req = json.loads(row[2])
        st, code, out = asyncio.run(call_account(req, timeout_s))
        q_finish(conn, guid, st, code, out)
    conn.close()


def cmd_purge(retention):
    conn = db_open()
    conn.execute("DELETE FROM ledger WHERE status='DONE' AND updated_at <= ?", (time.time() - retention,))
    conn.close()


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("serve")
    sub.add_parser("resolve").add_argument("--min-age", type=float, required=True)
    sub.add_parser("reprocess").add_argument("--max-attempts", type=int, required=True)
    sub.add_parser("purge").add_argument("--retention", type=float, required=True)
    a = p.parse_args()
    if a.cmd == "serve":
        asyncio.run(serve())
    elif a.cmd == "resolve":
        cmd_resolve(a.min_age)
    elif a.cmd == "reprocess":
        cmd_reprocess(a.max_attempts)
    else:
        cmd_purge(a.retention)


if __name__ == "__main__":
    sys.exit(main())
