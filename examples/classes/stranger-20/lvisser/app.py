#!/usr/bin/env python3
# Lotte Visser -- transfer relay (asyncio, no third-party packages)
import asyncio
import json
import os
import re
import sqlite3
import sys
import time
import urllib.error
import urllib.request
from urllib.parse import urlsplit

ENV = os.environ
TIMEOUT = int(ENV.get("ACCOUNT_TIMEOUT_MS", "2000")) / 1000
ACC = urlsplit(ENV.get("ACCOUNT_URL", "http://127.0.0.1:1"))
VALID_GUID = re.compile(r"[A-Za-z0-9\-_]{1,64}")

S_SENT, S_DONE, S_UNKNOWN, S_FAILED = "SENT", "DONE", "UNKNOWN", "FAILED"


def connect():
    db = sqlite3.connect(ENV["LEDGER_PATH"], timeout=20, isolation_level=None)
    db.execute("PRAGMA busy_timeout = 20000")
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("CREATE TABLE IF NOT EXISTS ledger (guid TEXT PRIMARY KEY, status TEXT NOT NULL, "
               "resp_code TEXT, request TEXT NOT NULL, response TEXT, attempts INTEGER NOT NULL, "
               "updated_at REAL NOT NULL)")
    return db


def jbody(guid, code, message):
    return json.dumps({"guid": guid, "code": code, "message": message})


# ------------------------------------------------------------------------- ledger (sync)

def sql(stmt, args=()):
    db = connect()
    try:
        cur = db.execute(stmt, args)
        return cur.rowcount, cur.fetchall()
    finally:
        db.close()


async def asql(stmt, args=()):
    return await asyncio.to_thread(sql, stmt, args)


# ------------------------------------------------------------------------- account POST

async def post_transfer(req):
    g = req["guid"]
    loop = asyncio.get_running_loop()
    end = loop.time() + TIMEOUT
    try:
        r, w = await asyncio.wait_for(asyncio.open_connection(ACC.hostname, ACC.port or 80), TIMEOUT)
    except (OSError, asyncio.TimeoutError):
        return S_FAILED, "E902", jbody(g, "E902", "could not reach the account system")
    body = json.dumps({"guid": g, "from": req["from"], "to": req["to"], "amount": req["amount"]}).encode()
    try:
        w.write(b"POST " + (ACC.path.rstrip("/") + "/transfer").encode() + b" HTTP/1.1\r\n"
                b"Host: " + ACC.netloc.encode() + b"\r\nContent-Type: application/json\r\n"
                b"Connection: close\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)

        async def read_answer():
            await w.drain()
            head = await r.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            status = int(lines[0].split(" ")[1])
            clen = None
            for ln in lines[1:]:
                if ln.lower().startswith("content-length:"):
                    clen = int(ln.split(":", 1)[1])
            payload = await (r.readexactly(clen) if clen is not None else r.read())
            return status, payload

        status, payload = await asyncio.wait_for(read_answer(), max(end - loop.time(), 0))
        ans = json.loads(payload)
        code = ans["code"]
        if not isinstance(code, str) or not code:
            raise ValueError("no code")
    except Exception as e:
        return S_UNKNOWN, "E901", jbody(g, "E901", "no answer (%s)" % type(e).__name__)
    finally:
        w.close()
    return S_DONE, code, jbody(g, code, str(ans.get("message", "")))


# ------------------------------------------------------------------------- channel API

def parse(raw):
    try:
        text = raw.decode()
        obj = json.loads(text)
    except ValueError:
        return None
    if type(obj) is not dict:
        return None
    if not {"guid", "from", "to", "amount"} <= obj.keys():
        return None
    if type(obj["guid"]) is not str or not VALID_GUID.fullmatch(obj["guid"]):
        return None
    if type(obj["from"]) is not str or type(obj["to"]) is not str:
        return None
    if type(obj["amount"]) is not int or obj["amount"] < 1:
        return None
    return obj, text


async def on_transfer(req, text):
    g = req["guid"]
    n, _ = await asql("INSERT INTO ledger (guid, status, request, attempts, updated_at) "
                      "VALUES (?, 'SENT', ?, 1, ?) ON CONFLICT DO NOTHING", (g, text, time.time()))
    if n != 1:
        _, rows = await asql("SELECT status, request, response FROM ledger WHERE guid = ?", (g,))
        if not rows:
            n, _ = await asql("INSERT INTO ledger (guid, status, request, attempts, updated_at) "
                              "VALUES (?, 'SENT', ?, 1, ?) ON CONFLICT DO NOTHING", (g, text, time.time()))
            if n != 1:
                return jbody(g, "E903", "being sent")
        else:
            status, first, saved = rows[0]
            f = json.loads(first)
            if (f.get("from"), f.get("to"), f.get("amount")) != (req["from"], req["to"], req["amount"]):
                return jbody(g, "E904", "guid already used for a different transfer")
            if status == S_DONE:
                return saved
            if status == S_UNKNOWN:
                return jbody(g, "E901", "outcome unknown")
            if status != S_FAILED:
                return jbody(g, "E903", "being sent")
            n, _ = await asql("UPDATE ledger SET status='SENT', attempts=attempts+1, updated_at=? "
                              "WHERE guid=? AND status='FAILED'", (time.time(), g))
            if n != 1:
                return jbody(g, "E903", "being sent")
    st, code, out = await post_transfer(req)
    await asql("UPDATE ledger SET status=?, resp_code=?, response=?, updated_at=? WHERE guid=? AND status='SENT'",
               (st, code, out, time.time(), g))
    return out


async def conn_handler(reader, writer):
    try:
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, asyncio.LimitOverrunError):
                break
            lines = head.decode("latin-1").split("\r\n")
            try:
                method, path, version = lines[0].split(" ")
            except ValueError:
                break
            hdrs = {}
            for ln in lines[1:]:
                if ":" in ln:
                    k, v = ln.split(":", 1)
                    hdrs[k.strip().lower()] = v.strip()
            raw = await reader.readexactly(int(hdrs.get("content-length", 0)))
            status, text = 404, '{"code": "E404"}'
            if method == "GET" and path == "/health":
                status, text = 200, '{"ready": true}'
            elif method == "POST" and path == "/transfer":
                p = parse(raw)
                if p is None:
                    status, text = 400, jbody(None, "E400", "malformed request")
                else:
                    status, text = 200, await on_transfer(*p)
            data = text.encode()
            close = hdrs.get("connection", "").lower() == "close" or version != "HTTP/1.1"
            writer.write(b"HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n%s\r\n" % (
                status, {200: b"OK", 400: b"Bad Request"}.get(status, b"Not Found"), len(data),
                b"Connection: close\r\n" if close else b"") + data)
            await writer.drain()
            if close:
                break
    except (ConnectionError, asyncio.IncompleteReadError):
        pass
    finally:
        writer.close()


async def serve():
    await asyncio.to_thread(lambda: connect().close())
    srv = await asyncio.start_server(conn_handler, ENV.get("RELAY_HOST", "127.0.0.1"), int(ENV["RELAY_PORT"]))
    await srv.serve_forever()


# ------------------------------------------------------------------------- batch

_opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def lookup(guid):
    """Query API. Returns the found code, or None when the account system has no record of the GUID."""
    url = "%s://%s%s/transfer/%s" % (ACC.scheme, ACC.netloc, ACC.path.rstrip("/"), guid)
    try:
        with _opener.open(url, timeout=TIMEOUT) as resp:
            data = json.load(resp)
            return data["code"] if data.get("found") else None
    except urllib.error.HTTPError as e:
        if e.code == 404:
            return None
        raise
    except (urllib.error.URLError, OSError):
        # account system unreachable or silent: it has no record we could get
        return None


def resolve(min_age):
    db = connect()
    for guid, status in db.execute("SELECT guid, status FROM ledger WHERE status IN ('UNKNOWN','SENT') "
                                   "AND updated_at <= ?", (time.time() - min_age,)).fetchall():
        try:
            code = lookup(guid)
        except Exception:
            continue  # odd answer, leave the row for next time
        if code is not None:
            db.execute("UPDATE ledger SET status='DONE', resp_code=?, response=?, updated_at=? WHERE guid=? AND status=?",
                       (code, jbody(guid, code, "resolved"), time.time(), guid, status))
        else:
            db.execute("UPDATE ledger SET status='FAILED', resp_code='E902', updated_at=? WHERE guid=? AND status=?",
                       (time.time(), guid, status))
    db.close()


def reprocess(max_attempts):
    db = connect()
    for guid, text in db.execute("SELECT guid, request FROM ledger WHERE status='FAILED' AND attempts < ?",
                                 (max_attempts,)).fetchall():
        won = db.execute("UPDATE ledger SET status='SENT', attempts=attempts+1, updated_at=? "
                         "WHERE guid=? AND status='FAILED' AND attempts < ?",
                         (time.time(), guid, max_attempts)).rowcount == 1
        if not won:
            continue
        st, code, out = asyncio.run(post_transfer(json.loads(text)))
        db.execute("UPDATE ledger SET status=?, resp_code=?, response=?, updated_at=? WHERE guid=? AND status='SENT'",
                   (st, code, out, time.time(), guid))
    db.close()


def purge(retention):
    db = connect()
    db.execute("DELETE FROM ledger WHERE status='DONE' AND updated_at <= ?", (time.time() - retention,))
    db.close()


if __name__ == "__main__":
    cmd, rest = sys.argv[1], sys.argv[2:]
    opts = dict(zip(rest[::2], rest[1::2]))
    if cmd == "serve":
        asyncio.run(serve())
    elif cmd == "resolve":
        resolve(float(opts["--min-age"]))
    elif cmd == "reprocess":
        reprocess(int(opts["--max-attempts"]))
    elif cmd == "purge":
        purge(float(opts["--retention"]))
    else:
        sys.exit("unknown command " + cmd)
