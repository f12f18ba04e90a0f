# Minimal HTTP/1.1 client on a raw socket so that we know exactly whether the
# request could have left this machine, and so that one deadline covers the
# whole exchange (http.client's timeout is per socket operation).
import json
import socket
import time
from urllib.parse import urlsplit

NOT_SENT = "FAILED"
NO_ANSWER = "UNKNOWN"
ANSWERED = "DONE"


class Unanswered(Exception):
    pass


def _recv_until(sock, deadline, buf, pred):
    while not pred(buf):
        left = deadline - time.monotonic()
        if left <= 0:
            raise Unanswered("timeout")
        sock.settimeout(left)
        chunk = sock.recv(65536)
        if not chunk:
            raise Unanswered("connection closed early")
        buf += chunk
    return buf


def http_request(base_url, method, path, body, timeout_s):
    """Returns (kind, status, body). kind NOT_SENT only if no connection was made."""
    u = urlsplit(base_url)
    host, port = u.hostname, u.port or 80
    deadline = time.monotonic() + timeout_s
    try:
        sock = socket.create_connection((host, port), timeout=timeout_s)
    except OSError:
        return NOT_SENT, None, None
    try:
        data = body or b""
        head = (f"{method} {u.path.rstrip('/')}{path} HTTP/1.1\r\nHost: {host}:{port}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n"
                f"Connection: close\r\n\r\n").encode()
        left = deadline - time.monotonic()
        if left <= 0:
            raise Unanswered("timeout")
        sock.settimeout(left)
        sock.sendall(head + data)
        buf = _recv_until(sock, deadline, b"", lambda b: b"\r\n\r\n" in b)
        head_raw, _, rest = buf.partition(b"\r\n\r\n")
        lines = head_raw.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        hdrs = {}
        for ln in lines[1:]:
            k, _, v = ln.partition(":")
            hdrs[k.strip().lower()] = v.strip()
        if "content-length" in hdrs:
            n = int(hdrs["content-length"])
            rest = _recv_until(sock, deadline, rest, lambda b: len(b) >= n)[:n]
        elif "chunked" in hdrs.get("transfer-encoding", "").lower():
            rest = _recv_until(sock, deadline, rest, lambda b: b"\r\n0\r\n" in b or b.startswith(b"0\r\n"))
            out, pos = b"", 0
            while True:
                eol = rest.index(b"\r\n", pos)
                size = int(rest[pos:eol].split(b";")[0], 16)
                if size == 0:
                    break
                out += rest[eol + 2:eol + 2 + size]
                pos = eol + 2 + size + 2
            rest = out
        else:
            while True:  # read to EOF
                left = deadline - time.monotonic()
                if left <= 0:
                    raise Unanswered("timeout")
                sock.settimeout(left)
                chunk = sock.recv(65536)
                if not chunk:
                    break
                rest += chunk
        return ANSWERED, status, rest
    except Exception:
        # the request may well have reached the account system
        return NO_ANSWER, None, None
    finally:
        sock.close()


def make_body(guid, code, message):
    return json.dumps({"guid": guid, "code": code, "message": message})


def transfer(base_url, req, timeout_s):
    """One POST /transfer. Returns (ledger_status, code, response_text)."""
    g = req["guid"]
    payload = json.dumps({"guid": g, "from": req["from"], "to": req["to"], "amount": req["amount"]}).encode()
    kind, status, body = http_request(base_url, "POST", "/transfer", payload, timeout_s)
    if kind == NOT_SENT:
        return "FAILED", "E902", make_body(g, "E902", "could not connect to the account system")
    if kind == NO_ANSWER:
        return "UNKNOWN", "E901", make_body(g, "E901", "sent, no answer")
    try:
        obj = json.loads(body)
        code = obj["code"]
        assert isinstance(code, str) and code
    except Exception:
        return "UNKNOWN", "E901", make_body(g, "E901", f"unreadable answer, HTTP {status}")
    return "DONE", code, make_body(g, code, str(obj.get("message", "")))


def lookup(base_url, guid, timeout_s):
    """Query API. Returns ('found', code), ('absent', None) or ('error', None)."""
    kind, status, body = http_request(base_url, "GET", f"/transfer/{guid}", None, timeout_s)
    if kind != ANSWERED:
        return "error", None
    try:
        obj = json.loads(body)
    except Exception:
        return "error", None
    if status == 200 and obj.get("found") is True and isinstance(obj.get("code"), str):
        return "found", obj["code"]
    if status == 404 and obj.get("found") is False:
        return "absent", None
    return "error", None
