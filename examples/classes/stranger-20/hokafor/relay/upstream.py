"""Calls to the account system over a plain socket, with one overall deadline."""
import json
import socket
import time

from .config import Config


class NoAnswer(Exception):
    """Request went out but no usable answer came back."""


def _exchange(cfg: Config, method: str, path: str, body: bytes):
    deadline = time.monotonic() + cfg.timeout_s
    sock = socket.create_connection((cfg.account_host, cfg.account_port), timeout=cfg.timeout_s)
    try:
        head = (f"{method} {cfg.account_prefix}{path} HTTP/1.1\r\n"
                f"Host: {cfg.account_host}:{cfg.account_port}\r\n"
                "Content-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n"
                "Connection: close\r\n\r\n").encode("ascii")
        sock.settimeout(max(deadline - time.monotonic(), 0.001))
        sock.sendall(head + body)
        buf = bytearray()
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise socket.timeout("account deadline")
            sock.settimeout(left)
            chunk = sock.recv(65536)
            if not chunk:
                break
            buf += chunk
            if b"\r\n\r\n" in buf:
                hdr, _, rest = bytes(buf).partition(b"\r\n\r\n")
                for line in hdr.split(b"\r\n")[1:]:
                    k, _, v = line.partition(b":")
                    if k.strip().lower() == b"content-length" and len(rest) >= int(v):
                        return _parse(bytes(buf))
        if b"\r\n\r\n" not in buf:
            raise ConnectionError("account system closed the connection without answering")
        hdr, _, rest = bytes(buf).partition(b"\r\n\r\n")
        for line in hdr.split(b"\r\n")[1:]:
            k, _, v = line.partition(b":")
            if k.strip().lower() == b"content-length" and len(rest) < int(v):
                raise ConnectionError("answer cut short")
        return _parse(bytes(buf))
    finally:
        sock.close()


def _parse(raw: bytes):
    hdr, _, rest = raw.partition(b"\r\n\r\n")
    status = int(hdr.split(b"\r\n", 1)[0].split()[1])
    for line in hdr.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            rest = rest[:int(v)]
    return status, rest


def out(guid, code, message):
    return json.dumps({"guid": guid, "code": code, "message": message})


def post_transfer(cfg: Config, req: dict):
    """Returns (ledger_status, code, response_text)."""
    g = req["guid"]
    payload = json.dumps({"guid": g, "from": req["from"], "to": req["to"],
                          "amount": req["amount"]}).encode()
    try:
        status, body = _exchange(cfg, "POST", "/transfer", payload)
    except socket.timeout:
        return "UNKNOWN", "E901", out(g, "E901", "account system did not answer in time")
    except ConnectionError:
        # refused / reset / closed: the account system is down, nothing was applied
        return "FAILED", "E902", out(g, "E902", "account system unavailable")
    except Exception:
        return "UNKNOWN", "E901", out(g, "E901", "no usable answer")
    try:
        data = json.loads(body)
        code = data["code"]
        if not isinstance(code, str) or not code:
            raise ValueError(code)
    except Exception:
        return "UNKNOWN", "E901", out(g, "E901", "unreadable answer")
    return "DONE", code, out(g, code, str(data.get("message", "")))


def query(cfg: Config, guid: str):
    """('found', code) | ('absent', None) | ('error', None)"""
    try:
        status, body = _exchange(cfg, "GET", f"/transfer/{guid}", b"")
        data = json.loads(body)
    except Exception:
        return "error", None
    if status == 200 and data.get("found") is True and isinstance(data.get("code"), str):
        return "found", data["code"]
    if status == 404 and data.get("found") is False:
        return "absent", None
    return "error", None
