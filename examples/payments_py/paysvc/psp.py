"""The PSP's payout API: POST /v2/payouts (not idempotent) and GET /v2/payouts?client_ref=KEY.

Every call has one deadline for the whole exchange (connect, send, read). What a failure means:
  - no TCP connection (refused, unreachable, connect time-out): nothing was sent -> NOT_SENT
  - anything after the connection was made (time-out, reset, half an answer): -> UNKNOWN
"""

from __future__ import annotations

import json
import socket
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit

from paysvc import config

APPLIED = "applied"
DECLINED = "declined"
REJECTED = "rejected"      # the PSP refused our request itself (4xx other than a decline)
UNKNOWN = "unknown"
NOT_SENT = "not_sent"

STATUS_APPLIED = 200
STATUS_DECLINED = 402
STATUS_NOT_FOUND = 404


class _NotSent(Exception):
    pass


class _Unknown(Exception):
    def __init__(self, reason: str, timed_out: bool = False) -> None:
        super().__init__(reason)
        self.timed_out = timed_out


@dataclass
class PayoutResult:
    kind: str
    http_status: int | None = None
    payout_id: str | None = None
    decline_code: str | None = None
    detail: str = ""
    timed_out: bool = False


@dataclass
class LookupResult:
    kind: str                  # "found", "not_found", "failed"
    payout_id: str | None = None
    detail: str = ""


def _exchange(base_url: str, method: str, target: str, body: bytes | None,
              deadline: float) -> tuple[int, bytes]:
    parts = urlsplit(base_url)
    host = parts.hostname or "127.0.0.1"
    port = parts.port or (443 if parts.scheme == "https" else 80)
    prefix = parts.path.rstrip("/")
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise _NotSent("no time left before connecting")
    try:
        sock = socket.create_connection((host, port), timeout=remaining)
    except OSError as exc:
        raise _NotSent(f"connect failed: {exc!r}") from exc
    try:
        head = [
            f"{method} {prefix}{target} HTTP/1.1",
            f"Host: {host}:{port}",
            "Accept: application/json",
            "Connection: close",
            "User-Agent: payments_py/1.0",
        ]
        if body is not None:
            head += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
        raw = ("\r\n".join(head) + "\r\n\r\n").encode() + (body or b"")
        buf = b""
        try:
            sock.settimeout(max(0.001, deadline - time.monotonic()))
            sock.sendall(raw)
            while True:
                status, payload, complete = _parse(buf)
                if complete:
                    return status, payload
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise _Unknown("PSP time-out", timed_out=True)
                sock.settimeout(remaining)
                chunk = sock.recv(65536)
                if not chunk:
                    status, payload, complete = _parse(buf, eof=True)
                    if complete:
                        return status, payload
                    raise _Unknown("PSP closed the connection before a full answer")
                buf += chunk
        except socket.timeout as exc:
            raise _Unknown("PSP time-out", timed_out=True) from exc
        except OSError as exc:
            raise _Unknown(f"connection broke: {exc!r}") from exc
    finally:
        sock.close()


def _parse(buf: bytes, eof: bool = False) -> tuple[int, bytes, bool]:
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        return 0, b"", False
    lines = buf[:end].decode("latin-1").split("\r\n")
    try:
        status = int(lines[0].split(" ", 2)[1])
    except (IndexError, ValueError):
        raise _Unknown(f"bad status line {lines[0]!r}")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    rest = buf[end + 4:]
    if "content-length" in headers:
        length = int(headers["content-length"])
        return status, rest[:length], len(rest) >= length
    if headers.get("transfer-encoding", "").lower() == "chunked":
        decoded = _dechunk(rest)
        return status, decoded or b"", decoded is not None
    return status, rest, eof


def _dechunk(data: bytes) -> bytes | None:
    out = b""
    while True:
        line_end = data.find(b"\r\n")
        if line_end < 0:
            return None
        size = int(data[:line_end].split(b";")[0] or b"0", 16)
        if size == 0:
            return out
        chunk = data[line_end + 2: line_end + 2 + size]
        if len(chunk) < size:
            return None
        out += chunk
        data = data[line_end + 4 + size:]


def _json(payload: bytes) -> dict[str, Any]:
    try:
        value = json.loads(payload or b"{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def payout_request(key: str, charge: dict[str, Any]) -> bytes:
    body = {
        "client_ref": key,
        "value": {"amount": charge["amount"], "currency": charge["currency"]},
        "debit_account": charge["source"],
        "credit_account": charge["destination"],
        "memo": charge.get("description") or "",
    }
    return json.dumps(body, separators=(",", ":")).encode()


def create_payout(base_url: str, key: str, charge: dict[str, Any], deadline: float) -> PayoutResult:
    try:
        status, payload = _exchange(base_url, "POST", "/v2/payouts", payout_request(key, charge),
                                    deadline)
    except _NotSent as exc:
        return PayoutResult(NOT_SENT, detail=str(exc))
    except _Unknown as exc:
        if exc.timed_out and config.VARIANT == "m1":
            return PayoutResult(NOT_SENT, detail=str(exc))
        return PayoutResult(UNKNOWN, detail=str(exc), timed_out=exc.timed_out)
    doc = _json(payload)
    if status == STATUS_APPLIED:
        return PayoutResult(APPLIED, status, payout_id=str(doc.get("id") or "") or None)
    if status == STATUS_DECLINED:
        return PayoutResult(DECLINED, status, decline_code=str(doc.get("code") or "declined"),
                            detail=str(doc.get("error") or ""))
    if 400 <= status < 500:
        return PayoutResult(REJECTED, status, detail=payload[:200].decode("utf-8", "replace"))
    return PayoutResult(UNKNOWN, status, detail=f"PSP answered {status}")


def lookup_payout(base_url: str, key: str, deadline: float) -> LookupResult:
    try:
        status, payload = _exchange(base_url, "GET", f"/v2/payouts?client_ref={quote(key, safe='')}",
                                    None, deadline)
    except (_NotSent, _Unknown) as exc:
        return LookupResult("failed", detail=str(exc))
    if status == 200:
        doc = _json(payload)
        return LookupResult("found", payout_id=str(doc.get("id") or "") or None)
    if status == STATUS_NOT_FOUND:
        return LookupResult("not_found")
    return LookupResult("failed", detail=f"PSP answered {status}")
