"""Calling the account system, and classifying what came back as DONE, UNKNOWN or FAILED.

An HTTP answer with a code is definite (DONE). A connection that could not be
made is FAILED: nothing was sent. Anything else (a time-out, a connection that
broke after the request may have gone out, an answer we cannot read) is
UNKNOWN: the debit may have happened, so the transfer is never resent blindly.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Literal

DEFINITE_CODES = {"0000", "B201", "B202", "B203", "E500"}
MESSAGES = {
    "E901": "sent, no answer: outcome unknown",
    "E902": "not sent: account system unreachable",
    "E903": "this GUID is being sent right now",
    "E904": "GUID already used for a different request",
    "E400": "malformed request",
}


@dataclass(frozen=True)
class Outcome:
    status: str  # DONE | UNKNOWN | FAILED
    code: str
    message: str | None = None


class Refused(Exception):
    """The connection could not be made: nothing was sent."""


class InDoubt(Exception):
    """No readable answer came: the request may have gone out."""


class Account:
    """An HTTP client for ACCOUNT_URL with the contract's time-out.

    `serve` uses a pooled aiohttp session (keep-alive, many calls at once); the batch
    commands, short-lived and sequential, use the standard library, so that they start fast.
    """

    def __init__(self, base_url: str, timeout_ms: int, *, pooled: bool = True):
        self.base_url, self.timeout_s = base_url.rstrip("/"), timeout_ms / 1000
        self.session = None
        if pooled:
            import aiohttp

            self.session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.timeout_s))

    async def close(self) -> None:
        if self.session is not None:
            await self.session.close()

    async def transfer(self, request: dict) -> Outcome:
        try:
            status, body = await self._call("POST", "/transfer", request)
        except Refused:
            return Outcome("FAILED", "E902")
        except InDoubt:
            return Outcome("UNKNOWN", "E901")
        code = body.get("code")
        return Outcome("DONE", code, body.get("message")) if code in DEFINITE_CODES else Outcome("UNKNOWN", "E901")

    async def query(self, guid: str) -> str | Literal[False] | None:
        """The code of the GUID's first processing; False if never processed; None if we cannot tell."""
        try:
            status, body = await self._call("GET", f"/transfer/{guid}")
        except (Refused, InDoubt):
            return None
        if status == 404:
            return False
        return body.get("code") if status == 200 and body.get("found") else None

    async def _call(self, method: str, path: str, payload: dict | None = None) -> tuple[int, dict]:
        """(HTTP status, JSON object) of one call; Refused or InDoubt when there is none."""
        if self.session is None:
            return self._call_stdlib(method, path, payload)
        import aiohttp

        try:
            async with self.session.request(method, self.base_url + path, json=payload) as resp:
                body = await resp.json(content_type=None)
                return resp.status, body if isinstance(body, dict) else {}
        except aiohttp.ClientConnectorError as e:
            raise Refused(e) from None
        except (TimeoutError, aiohttp.ClientError, ValueError) as e:
            raise InDoubt(e) from None

    def _call_stdlib(self, method: str, path: str, payload: dict | None) -> tuple[int, dict]:
        data = json.dumps(payload).encode() if payload is not None else None
        req = urllib.request.Request(
            self.base_url + path, data=data, method=method, headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                status, raw = resp.status, resp.read()
        except urllib.error.HTTPError as e:
            status, raw = e.code, e.read()
        except urllib.error.URLError as e:
            raise (Refused if isinstance(e.reason, ConnectionRefusedError) else InDoubt)(e) from None
        except (OSError, ValueError) as e:  # time-outs and broken connections
            raise InDoubt(e) from None
        try:
            body = json.loads(raw)
        except ValueError as e:
            raise InDoubt(e) from None
        return status, body if isinstance(body, dict) else {}


def answer(guid: str | None, code: str, message: str | None = None) -> str:
    """The JSON body the relay answers with (and saves, for DONE)."""
    return json.dumps({"guid": guid, "code": code, "message": message or MESSAGES.get(code, "")})
