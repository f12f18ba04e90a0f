"""The relay's logic: claim the GUID, commit, then call; answer from the ledger otherwise.

| ledger row | answer                          | account call |
|------------|---------------------------------|--------------|
| none       | claim SENT, commit, call        | one          |
| SENT       | E903 at once                    | none         |
| DONE       | the saved response, verbatim    | none         |
| UNKNOWN    | E901                            | none         |
| FAILED     | claim back to SENT, call again  | one          |
A GUID reused with a different request gets E904; a malformed request E400.
The batch jobs (resolve, reprocess, purge) are methods here too, so a mutant
relay is this class with one method changed.
"""

from __future__ import annotations

import json
import logging
import re
import sqlite3

from .account import Account, answer
from .ledger import Ledger

log = logging.getLogger("relay")
GUID = re.compile(r"[A-Za-z0-9_-]{1,64}")
FIELDS = {"guid", "from", "to", "amount"}


def parse(raw: bytes) -> dict | None:
    """The transfer if it is well-formed (contract section 3), else None."""
    try:
        req = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(req, dict) or set(req) != FIELDS:
        return None
    guid, src, dst, amount = req["guid"], req["from"], req["to"], req["amount"]
    ok = (
        isinstance(guid, str)
        and GUID.fullmatch(guid)
        and isinstance(src, str)
        and src
        and isinstance(dst, str)
        and dst
        and type(amount) is int
        and amount > 0
    )
    return req if ok else None


class Relay:
    """Transfers and batch jobs over one ledger and one account client."""

    RESOLVABLE: tuple[str, ...] = ("UNKNOWN", "SENT")  # SENT rows old enough were orphaned by a crash

    def __init__(self, ledger: Ledger, account: Account):
        self.ledger, self.account = ledger, account

    # -- serve -----------------------------------------------------------------------
    async def transfer(self, raw: bytes) -> tuple[int, str]:
        """(HTTP status, body) for one POST /transfer."""
        req = parse(raw)
        if req is None:
            return 400, answer(_guid_of(raw), "E400")
        try:
            return 200, await self.handle(req, raw.decode())
        except sqlite3.Error as e:  # a locked or broken ledger: never send without a committed row
            log.error("ledger error for %s, not sent: %s", req["guid"], e)
            return 200, answer(req["guid"], "E902", f"ledger unavailable: {e}")

    async def handle(self, req: dict, text: str) -> str:
        guid = req["guid"]
        if self.ledger.claim_new(guid, text):
            return await self.send(req)
        row = self.ledger.get(guid)
        if row is None:  # purged between our claim and this read: it is new again
            return await self.send(req) if self.ledger.claim_new(guid, text) else answer(guid, "E903")
        if json.loads(row.request) != req:
            return answer(guid, "E904")
        if row.status == "DONE":
            assert row.response is not None  # a DONE row is written with its response (finish, settle)
            return row.response
        if row.status == "UNKNOWN":
            return answer(guid, "E901")
        if row.status == "FAILED" and self.ledger.claim_failed(guid):
            return await self.send(req)
        return answer(guid, "E903")

    async def send(self, req: dict) -> str:
        """Call the account system for a row this process has claimed, and record the outcome."""
        outcome = await self.account.transfer(req)
        body = answer(req["guid"], outcome.code, outcome.message)
        self.ledger.finish(req["guid"], outcome.status, outcome.code, body if outcome.status == "DONE" else None)
        return body

    # -- batch jobs --------------------------------------------------------------------
    async def resolve(self, min_age_s: float) -> None:
        """Ask the query API about UNKNOWN rows, and SENT rows orphaned by a crash, old enough."""
        for row in self.ledger.older_than(self.RESOLVABLE, min_age_s):
            found = await self.account.query(row.guid)
            if found is None:
                continue  # the query failed: leave the row for a later run
            if found is False:
                self.ledger.settle(row, "FAILED", None, None)
            else:
                self.ledger.settle(row, "DONE", found, answer(row.guid, found, "resolved by query"))

    async def reprocess(self, max_attempts: int) -> None:
        """Resend FAILED rows below the attempt cap, each claimed first, with the same GUID."""
        for row in self.ledger.failed_below(max_attempts):
            if self.ledger.claim_failed(row.guid, max_attempts):
                await self.send(json.loads(row.request))

    async def purge(self, retention_s: float) -> None:
        """Delete DONE rows at least retention_s old; undecided rows are never deleted."""
        log.info("purged %d DONE rows", self.ledger.purge_done(retention_s))


def _guid_of(raw: bytes) -> str | None:
    try:
        guid = json.loads(raw).get("guid")
        return guid if isinstance(guid, str) else None
    except (ValueError, AttributeError, UnicodeDecodeError):
        return None
