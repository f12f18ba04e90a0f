"""Calling the account system, and classifying what came back as DONE, UNKNOWN or FAILED.

An HTTP answer with a code is definite (DONE). A connection that could not be
made is FAILED: nothing was sent. Anything else (a time-out, a connection that
broke after the request may have gone out, an answer we cannot read) is
UNKNOWN: the debit may have happened, so the transfer is never resent blindly.
"""
from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass

import aiohttp

DEFINITE_CODES = {"0000", "B201", "B202", "B203", "E500"}
MESSAGES = {"E901": "sent, no answer: outcome unknown", "E902": "not sent: account system unreachable",
            "E903": "this GUID is being sent right now", "E904": "GUID already used for a different request",
            "E400": "malformed request"}


@dataclass(frozen=True)
class Outcome:
    status: str  # DONE | UNKNOWN | FAILED
    code: str
    message: str | None = None


class Account:
    """An HTTP client for ACCOUNT_URL with the contract's time-out (one per process)."""

    def __init__(self, base_url: str, timeout_ms: int):
        self.base_url = base_url.rstrip("/")
        self.session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout_ms / 1000))

    async def close(self) -> None:
        await self.session.close()

    async def transfer(self, request: dict) -> Outcome:
        try:
            async with self.session.post(f"{self.base_url}/transfer", json=request) as resp:
                body = await resp.json(content_type=None)
                code, message = body.get("code"), body.get("message")
        except aiohttp.ClientConnectorError:
            return Outcome("FAILED", "E902")
        except (asyncio.TimeoutError, aiohttp.ClientError, ValueError, AttributeError):
            return Outcome("UNKNOWN", "E901")
        return Outcome("DONE", code, message) if code in DEFINITE_CODES else Outcome("UNKNOWN", "E901")

    async def query(self, guid: str) -> str | None | bool:
        """The code of the GUID's first processing; False if never processed; None if we cannot tell."""
        try:
            async with self.session.get(f"{self.base_url}/transfer/{guid}") as resp:
                if resp.status == 404:
                    return False
                body = await resp.json(content_type=None)
                return body.get("code") if resp.status == 200 and body.get("found") else None
        except (asyncio.TimeoutError, aiohttp.ClientError, ValueError, AttributeError):
            return None


def answer(guid: str | None, code: str, message: str | None = None) -> str:
    """The JSON body the relay answers with (and saves, for DONE)."""
    return json.dumps({"guid": guid, "code": code, "message": message or MESSAGES.get(code, "")})
