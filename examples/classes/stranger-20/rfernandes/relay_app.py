# Relay assignment - Rui Fernandes
# run: python relay_app.py serve|resolve|reprocess|purge
import json, os, re, socket, sqlite3, sys, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse

LEDGER = os.environ.get("LEDGER_PATH", "ledger.db")
ACCOUNT = urlparse(os.environ.get("ACCOUNT_URL", "http://127.0.0.1:9"))
TIMEOUT = int(os.environ.get("ACCOUNT_TIMEOUT_MS", "2000")) / 1000


def get_db():
    db = sqlite3.connect(LEDGER, timeout=10)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("""CREATE TABLE IF NOT EXISTS ledger (
        guid TEXT PRIMARY KEY, status TEXT NOT NULL, resp_code TEXT,
        request TEXT NOT NULL, response TEXT, attempts INTEGER NOT NULL,
        updated_at REAL NOT NULL)""")
    db.commit()
    return db


def msg(guid, code, text):
    return json.dumps({"guid": guid, "code": code, "message": text})


# ---- talking to the account system -------------------------------------

def http_call(method, path, body=b""):
    """returns (connected, status, body_bytes); raises on any trouble after connecting"""
    deadline = time.monotonic() + TIMEOUT
    try:
        s = socket.create_connection((ACCOUNT.hostname, ACCOUNT.port or 80), timeout=TIMEOUT)
    except OSError:
        return False, None, None
    try:
        req = (f"{method} {ACCOUNT.path.rstrip('/')}{path} HTTP/1.1\r\n"
               f"Host: {ACCOUNT.hostname}\r\nContent-Type: application/json\r\n"
               f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + body
        s.settimeout(max(0.001, deadline - time.monotonic()))
        s.sendall(req)
        data = b""
        need = None
        while True:
            if need is None and b"\r\n\r\n" in data:
                head, rest = data.split(b"\r\n\r\n", 1)
                m = re.search(rb"(?im)^content-length:\s*(\d+)", head)
                need = len(head) + 4 + int(m.group(1)) if m else -1
            if need is not None and need >= 0 and len(data) >= need:
                break
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("deadline")
            s.settimeout(left)
            chunk = s.recv(65536)
            if not chunk:
                if need == -1:
                    break  # no length: body ends at EOF
                raise ConnectionError("closed before full answer")
            data += chunk
        head, rest = data.split(b"\r\n\r\n", 1)
        status = int(head.split(b" ")[1])
        if need is not None and need >= 0:
            rest = rest[:need - len(head) - 4]
        return True, status, rest
    finally:
        s.close()


def send_transfer(req):
    """one POST; returns (status, code, response text)"""
    g = req["guid"]
    payload = json.dumps({"guid": g, "from": req["from"], "to": req["to"], "amount": req["amount"]}).encode()
    try:
        connected, status, body = http_call("POST", "/transfer", payload)
    except Exception as e:
        return "UNKNOWN", "E901", msg(g, "E901", "no answer from account system (%s)" % e.__class__.__name__)
    if not connected:
        return "FAILED", "E902", msg(g, "E902", "account system not reachable")
    try:
        ans = json.loads(body)
        code = ans["code"]
        if not isinstance(code, str) or code == "":
            raise ValueError
    except Exception:
        return "UNKNOWN", "E901", msg(g, "E901", "garbled answer from account system")
    return "DONE", code, msg(g, code, str(ans.get("message", "")))


# ---- request handling ---------------------------------------------------

GUID = re.compile(r"^[A-Za-z0-9_-]{1,64}\Z")


def validate(raw):
    try:
        text = raw.decode("utf-8")
        d = json.loads(text)
    except Exception:
        return None, None
    if not isinstance(d, dict):
        return None, None
    if not all(k in d for k in ("guid", "from", "to", "amount")):
        return None, None
    if not isinstance(d["guid"], str) or not GUID.match(d["guid"]):
        return None, None
    if not isinstance(d["from"], str) or not isinstance(d["to"], str):
        return None, None
    if type(d["amount"]) is not int or d["amount"] <= 0:
        return None, None
    return d, text


def handle(req, text):
    g = req["guid"]
    db = get_db()
    try:
        cur = db.execute(
            "INSERT OR IGNORE INTO ledger (guid, status, request, attempts, updated_at) VALUES (?, 'SENT', ?, 1, ?)",
            (g, text, time.time()))
        if cur.rowcount != 1:
            row = db.execute("SELECT status, request, response FROM ledger WHERE guid=?", (g,)).fetchone()
            if row is None:
                return msg(g, "E903", "in progress, try again")
            status, stored, response = row
            old = json.loads(stored)
            if [old.get("from"), old.get("to"), old.get("amount")] != [req["from"], req["to"], req["amount"]]:
                return msg(g, "E904", "guid already used for another transfer")
            if status == "DONE":
                return response
            if status == "UNKNOWN":
                return msg(g, "E901", "outcome unknown")
            if status != "FAILED":
                return msg(g, "E903", "in progress")
            cur = db.execute(
                "UPDATE ledger SET status='SENT', attempts=attempts+1, updated_at=? WHERE guid=? AND status='FAILED'",
                (time.time(), g))
            if cur.rowcount != 1:
                return msg(g, "E903", "in progress")
        # row is ours now -> call the account system
        status, code, out = send_transfer(req)
        db.execute("UPDATE ledger SET status=?, resp_code=?, response=?, updated_at=? WHERE guid=?",
                   (status, code, out, time.time(), g))
        db.commit()
        return out
    finally:
        db.close()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def answer(self, code, text):
        b = text.encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)

    def do_GET(self):
        if self.path == "/health":
            self.answer(200, '{"status":"up"}')
        else:
            self.answer(404, '{"code":"E404"}')

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(n)
        if self.path != "/transfer":
            return self.answer(404, '{"code":"E404"}')
        req, text = validate(raw)
        if req is None:
            return self.answer(400, msg(None, "E400", "malformed request"))
        self.answer(200, handle(req, text))


# ---- batch commands -----------------------------------------------------

def option(name):
    i = sys.argv.index(name)
    return float(sys.argv[i + 1])


def resolve():
    min_age = option("--min-age")
    db = get_db()
    rows = db.execute("SELECT guid, status FROM ledger WHERE status IN ('UNKNOWN','SENT') AND updated_at <= ?",
                      (time.time() - min_age,)).fetchall()
    for g, st in rows:
        try:
            connected, status, body = http_call("GET", "/transfer/" + g)
            if not connected:
                continue
            d = json.loads(body)
        except Exception:
            continue
        if status == 200 and d.get("found") is True and isinstance(d.get("code"), str):
            db.execute("UPDATE ledger SET status='DONE', resp_code=?, response=?, updated_at=? WHERE guid=? AND status=?",
                       (d["code"], msg(g, d["code"], "resolved"), time.time(), g, st))
        elif status == 404 and d.get("found") is False:
            db.execute("UPDATE ledger SET status='FAILED', resp_code='E902', updated_at=? WHERE guid=? AND status=?",
                       (time.time(), g, st))
        db.commit()
    db.close()


def reprocess():
    max_att = int(option("--max-attempts"))
    db = get_db()
    rows = db.execute("SELECT guid, request FROM ledger WHERE status='FAILED' AND attempts < ?", (max_att,)).fetchall()
    for g, text in rows:
        cur = db.execute("UPDATE ledger SET status='SENT', attempts=attempts+1, updated_at=? "
                         "WHERE guid=? AND status='FAILED' AND attempts < ?", (time.time(), g, max_att))
        db.commit()
        if cur.rowcount != 1:
            continue
        status, code, out = send_transfer(json.loads(text))
        db.execute("UPDATE ledger SET status=?, resp_code=?, response=?, updated_at=? WHERE guid=?",
                   (status, code, out, time.time(), g))
        db.commit()
    db.close()


def purge():
    keep = option("--retention")
    db = get_db()
    db.execute("DELETE FROM ledger WHERE status='DONE' AND updated_at <= ?", (time.time() - keep,))
    db.commit()
    db.close()


def serve():
    get_db().close()
    srv = ThreadingHTTPServer((os.environ.get("RELAY_HOST", "127.0.0.1"), int(os.environ["RELAY_PORT"])), Handler)
    srv.daemon_threads = True
    srv.serve_forever()


if __name__ == "__main__":
    {"serve": serve, "resolve": resolve, "reprocess": reprocess, "purge": purge}[sys.argv[1]]()
