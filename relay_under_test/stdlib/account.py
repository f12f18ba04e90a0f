"""Calls to the account system, with an overall deadline and outcome classification.

Outcomes of a transfer call:
  ("DONE", code, message)   an HTTP answer with a code: definite
  ("FAILED", None, reason)  the connection could not be made: nothing was sent
  ("UNKNOWN", None, reason) time-out, broken connection, unreadable answer
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import socket
import threading
import urllib.parse
from typing import TypedDict, cast

# What one exchange came to: (phase, status, data, error), as _exchange returns it.
Exchange = tuple[str, int | None, bytes | None, BaseException | None]
# A transfer's four fields (contract section 3), as the relay took them from a request.
Transfer = TypedDict("Transfer", {"guid": str, "from": str, "to": str, "amount": int})


class _State(TypedDict):
    """What an exchange's worker thread shares with its caller."""

    cancelled: bool
    result: Exchange | None


def timeout_s() -> float:
    return int(os.environ.get("ACCOUNT_TIMEOUT_MS", "2000")) / 1000


def _target() -> tuple[str, int, str]:
    url = urllib.parse.urlsplit(os.environ["ACCOUNT_URL"])
    host = cast(str, url.hostname)  # ACCOUNT_URL is http://HOST:PORT (contract section 1)
    return host, url.port or 80, url.path.rstrip("/")


def _exchange(method: str, path: str, body: bytes | None, deadline_s: float) -> Exchange:
    """One HTTP exchange in a worker thread, abandoned at the deadline.

    Returns (phase, status, data, error): phase is "answer", "not-sent",
    "broken" or "timeout".
    """
    host, port, prefix = _target()
    conn = http.client.HTTPConnection(host, port, timeout=deadline_s)
    conn.auto_open = 0  # never reconnect behind our back
    lock = threading.Lock()
    state: _State = {"cancelled": False, "result": None}
    finished = threading.Event()

    def work() -> None:
        try:
            try:
                conn.connect()
            except OSError as exc:
                state["result"] = ("not-sent", None, None, exc)
                return
            with lock:
                if state["cancelled"]:
                    return
                # From here on the request may reach the account system.
                headers = {"Content-Type": "application/json"} if body is not None else {}
                conn.request(method, prefix + path, body=body, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
            state["result"] = ("answer", resp.status, data, None)
        except Exception as exc:  # reset, closed, incomplete read, time-out...
            state["result"] = ("broken", None, None, exc)
        finally:
            finished.set()

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    if not finished.wait(deadline_s):
        with lock:
            state["cancelled"] = True
            if not finished.is_set():
                _abort(conn)
        if not finished.is_set() or state["result"] is None:
            return ("timeout", None, None, None)
    conn.close()
    result = state["result"]
    if result is None:
        return ("timeout", None, None, None)
    return result


def _abort(conn: http.client.HTTPConnection) -> None:
    sock = conn.sock
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
    conn.close()


def transfer(fields: Transfer) -> tuple[str, str | None, str]:
    """POST /transfer with the four fields; returns (status, code, message)."""
    body = json.dumps(
        {"guid": fields["guid"], "from": fields["from"], "to": fields["to"], "amount": fields["amount"]}
    ).encode()
    phase, status, data, error = _exchange("POST", "/transfer", body, timeout_s())
    if phase == "not-sent":
        return ("FAILED", None, f"connection failed: {error!r}")
    if phase == "timeout":
        return ("UNKNOWN", None, "no answer within ACCOUNT_TIMEOUT_MS")
    if phase == "broken":
        return ("UNKNOWN", None, f"connection broken: {error!r}")
    answer = _json_object(data) or {}
    code = answer.get("code")
    if not isinstance(code, str) or not code:
        return ("UNKNOWN", None, f"unreadable answer (HTTP {status})")
    message = answer.get("message")
    return ("DONE", code, message if isinstance(message, str) else "")


def query(guid: str) -> tuple[str | None, str | None]:
    """GET /transfer/{guid}; returns ("found", code), ("not-found", None) or (None, None)."""
    path = "/transfer/" + urllib.parse.quote(guid, safe="")
    phase, status, data, _ = _exchange("GET", path, None, timeout_s())
    if phase != "answer":
        return (None, None)
    answer = _json_object(data)
    if answer is None:
        return (None, None)
    code = answer.get("code")
    if status == 200 and answer.get("found") is True and isinstance(code, str):
        return ("found", code)
    if status == 404 and answer.get("found") is False:
        return ("not-found", None)
    return (None, None)


def _json_object(data: bytes | None) -> dict[str, object] | None:
    """The JSON object an answer's body holds; None when it holds none."""
    if data is None:  # no answer: nothing to read
        return None
    try:
        value = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return None
    return value if isinstance(value, dict) else None
