"""The catalogue of broken relays: the reference with one bug each, named for the bug.

Every class changes one method of the reference (Relay, Ledger or Account) and
says in its first docstring line what is wrong. relay_base (no dedup at all)
lives in relay_under_test/base.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Literal

from ..reference.account import Account, Outcome, answer
from ..reference.ledger import Ledger, Row
from ..reference.relay import Relay


# -- the claim -----------------------------------------------------------------------------
class CheckThenInsert(Relay):
    """Reads the ledger, then inserts, instead of one atomic claim: concurrent duplicates all get through."""

    ROUND_TRIP_S = 0.02  # between the SELECT and the INSERT, as with a database across the network

    async def handle(self, req: dict, text: str) -> str:
        found = self.ledger.get(req["guid"])
        await asyncio.sleep(self.ROUND_TRIP_S)  # every duplicate arriving meanwhile reads the same "no row"
        if found is None:
            self.ledger.db.execute(
                "INSERT OR REPLACE INTO ledger (guid, status, request, attempts, updated_at) "
                "VALUES (?, 'SENT', ?, 1, ?)",
                (req["guid"], text, time.time()),
            )
            return await self.send(req)
        return await super().handle(req, text)


class ProcessLock(Relay):
    """Guards its check-then-insert with a lock of its own process, not an atomic claim: two relays on one ledger both send."""  # noqa: E501 (description() shows this first line whole)

    def __init__(self, ledger: Ledger, account: Account):
        super().__init__(ledger, account)
        self.lock = asyncio.Lock()  # every copy this process receives waits here: safe on one relay

    async def handle(self, req: dict, text: str) -> str:
        async with self.lock:  # between the SELECT and the INSERT, another relay's copy may read "no row" too
            claimed = self.ledger.get(req["guid"]) is None
            if claimed:
                self.ledger.db.execute(
                    "INSERT OR REPLACE INTO ledger (guid, status, request, attempts, updated_at) "
                    "VALUES (?, 'SENT', ?, 1, ?)",
                    (req["guid"], text, time.time()),
                )
        return await (self.send(req) if claimed else super().handle(req, text))


class WriteAfterCall(Relay):
    """Calls the account system first and writes the ledger after: a crash or a duplicate in between re-sends."""

    async def handle(self, req: dict, text: str) -> str:
        if self.ledger.get(req["guid"]) is None:
            outcome = await self.account.transfer(req)
            body = answer(req["guid"], outcome.code, outcome.message)
            self.ledger.db.execute(
                "INSERT OR REPLACE INTO ledger VALUES (?, ?, ?, ?, ?, 1, ?)",
                (
                    req["guid"],
                    outcome.status,
                    outcome.code,
                    text,
                    body if outcome.status == "DONE" else None,
                    time.time(),
                ),
            )
            return body
        return await super().handle(req, text)


class MemoryLedger(Ledger):
    """Keeps the ledger in a dict in memory (the table stays empty): a restart forgets every GUID."""

    def __init__(self, path: str):
        super().__init__(path)  # creates the table, so the harness can open it, and never writes it
        self.rows: dict[str, Row] = {}

    def _put(self, guid: str, **changes: str | int | None) -> None:
        self.rows[guid] = Row(**{**self.rows[guid].__dict__, **changes, "updated_at": time.time()})

    def get(self, guid: str) -> Row | None:
        return self.rows.get(guid)

    def claim_new(self, guid: str, request: str) -> bool:
        if guid in self.rows:
            return False
        self.rows[guid] = Row(guid, "SENT", None, request, None, 1, time.time())
        return True

    def claim_failed(self, guid: str, max_attempts: int | None = None) -> bool:
        row = self.rows.get(guid)
        if row is None or row.status != "FAILED" or (max_attempts is not None and row.attempts >= max_attempts):
            return False
        self._put(guid, status="SENT", attempts=row.attempts + 1)
        return True

    def finish(self, guid: str, status: str, code: str, response: str | None) -> None:
        if guid in self.rows and self.rows[guid].status == "SENT":
            self._put(guid, status=status, resp_code=code, response=response)

    def settle(self, row: Row, status: str, code: str | None, response: str | None) -> bool:
        self._put(row.guid, status=status, resp_code=code or row.resp_code, response=response)
        return True

    def older_than(self, statuses: tuple[str, ...], age_s: float) -> list[Row]:
        return [r for r in self.rows.values() if r.status in statuses and r.updated_at <= time.time() - age_s]

    def failed_below(self, max_attempts: int) -> list[Row]:
        return [r for r in self.rows.values() if r.status == "FAILED" and r.attempts < max_attempts]

    def purge_done(self, retention_s: float) -> int:
        old = [g for g, r in self.rows.items() if r.status == "DONE" and r.updated_at <= time.time() - retention_s]
        for guid in old:
            del self.rows[guid]
        return len(old)


# -- classifying the outcome ---------------------------------------------------------------
class TimeoutAsFailed(Account):
    """Takes a time-out (or a broken connection) as FAILED, definitely not sent: the channel's resend goes through."""

    async def transfer(self, request: dict) -> Outcome:
        outcome = await super().transfer(request)
        return Outcome("FAILED", "E902") if outcome.status == "UNKNOWN" else outcome


class RefusedAsUnknown(Account):
    """Takes a refused connection as UNKNOWN (E901) instead of FAILED (E902): a transfer never sent looks in doubt."""

    async def transfer(self, request: dict) -> Outcome:
        outcome = await super().transfer(request)
        return Outcome("UNKNOWN", "E901") if outcome.status == "FAILED" else outcome


# -- answering a known GUID ----------------------------------------------------------------
class UnknownResent(Relay):
    """Resends an UNKNOWN GUID when the channel retries, as if it had FAILED: the first send may have been applied."""

    async def handle(self, req: dict, text: str) -> str:
        self.ledger.db.execute(
            "UPDATE ledger SET status = 'FAILED' WHERE guid = ? AND status = 'UNKNOWN'", (req["guid"],)
        )
        return await super().handle(req, text)


class FreshDoneResponse(Relay):
    """Answers a resend of a DONE GUID with a freshly built response instead of the saved one, byte for byte."""

    async def handle(self, req: dict, text: str) -> str:
        row = self.ledger.get(req["guid"])
        if row is not None and row.status == "DONE" and json.loads(row.request) == req:
            assert row.resp_code is not None, "a DONE row has its code"
            return answer(row.guid, row.resp_code)
        return await super().handle(req, text)


class E903Waits(Relay):
    """Makes a duplicate of a GUID in flight wait for the outcome instead of answering E903 at once."""

    async def handle(self, req: dict, text: str) -> str:
        for _ in range(200):
            row = self.ledger.get(req["guid"])
            if row is None or row.status != "SENT":
                break
            await asyncio.sleep(0.05)
        return await super().handle(req, text)


class NoE904(Relay):
    """Answers a GUID reused for a different request as if it were the first request, instead of E904."""

    async def handle(self, req: dict, text: str) -> str:
        row = self.ledger.get(req["guid"])
        if row is not None and json.loads(row.request) != req:
            return await super().handle(json.loads(row.request), row.request)
        return await super().handle(req, text)


# -- the batch jobs ------------------------------------------------------------------------
class ReprocessUnknown(Relay):
    """Reprocess resends every failure, UNKNOWN (timed-out) rows included: what was applied is applied again."""

    async def reprocess(self, max_attempts: int) -> None:
        self.ledger.db.execute("UPDATE ledger SET status = 'FAILED' WHERE status = 'UNKNOWN'")
        await super().reprocess(max_attempts)


class ReprocessNewGuid(Relay):
    """Reprocess resends a FAILED row under a newly minted GUID: the account system cannot match it to the first."""

    async def reprocess(self, max_attempts: int) -> None:
        for row in self.ledger.failed_below(max_attempts):
            if self.ledger.claim_failed(row.guid, max_attempts):
                req = {**json.loads(row.request), "guid": f"{row.guid[:56]}-r{row.attempts + 1}"}
                outcome = await self.account.transfer(req)
                self.ledger.finish(
                    row.guid,
                    outcome.status,
                    outcome.code,
                    answer(row.guid, outcome.code, outcome.message) if outcome.status == "DONE" else None,
                )


class NoAttemptCap(Relay):
    """Reprocess ignores --max-attempts: a FAILED row is retried on every run, forever."""

    async def reprocess(self, max_attempts: int) -> None:
        await super().reprocess(10**9)


class ResolveIgnoresMinAge(Relay):
    """Resolve queries rows of any age: a request still in transit is 'not found', marked FAILED, and resent."""

    async def resolve(self, min_age_s: float) -> None:
        await super().resolve(0)


class ResolveSkipsOrphans(Relay):
    """Resolve looks at UNKNOWN rows only: a SENT row orphaned by a crash stays stuck forever."""

    RESOLVABLE = ("UNKNOWN",)


class QueryFailureAsNotFound(Account):
    """Resolve takes a query that failed or timed out as 'not found': the row goes FAILED and reprocess resends it."""

    async def query(self, guid: str) -> str | Literal[False]:
        found = await super().query(guid)
        return False if found is None else found


class PurgeUndecided(Relay):
    """Purge deletes old rows of every status, UNKNOWN and FAILED included: a resend then goes out again."""

    async def purge(self, retention_s: float) -> None:
        self.ledger.db.execute("DELETE FROM ledger WHERE updated_at <= ?", (time.time() - retention_s,))


class PurgeIgnoresRetention(Relay):
    """Purge deletes every DONE row whatever its age: a late resend of a fresh transfer is sent again."""

    async def purge(self, retention_s: float) -> None:
        await super().purge(0)


# name -> the keyword arguments of reference main() that make the mutant
MUTANTS: dict[str, dict[str, type]] = {
    "check_then_insert": {"relay_cls": CheckThenInsert},
    "process_lock": {"relay_cls": ProcessLock},
    "write_after_call": {"relay_cls": WriteAfterCall},
    "memory_ledger": {"ledger_cls": MemoryLedger},
    "timeout_as_failed": {"account_cls": TimeoutAsFailed},
    "refused_as_unknown": {"account_cls": RefusedAsUnknown},
    "unknown_resent": {"relay_cls": UnknownResent},
    "fresh_done_response": {"relay_cls": FreshDoneResponse},
    "e903_waits": {"relay_cls": E903Waits},
    "no_e904": {"relay_cls": NoE904},
    "reprocess_unknown": {"relay_cls": ReprocessUnknown},
    "reprocess_new_guid": {"relay_cls": ReprocessNewGuid},
    "no_attempt_cap": {"relay_cls": NoAttemptCap},
    "resolve_ignores_min_age": {"relay_cls": ResolveIgnoresMinAge},
    "resolve_skips_orphans": {"relay_cls": ResolveSkipsOrphans},
    "query_failure_as_not_found": {"account_cls": QueryFailureAsNotFound},
    "purge_undecided": {"relay_cls": PurgeUndecided},
    "purge_ignores_retention": {"relay_cls": PurgeIgnoresRetention},
}


def description(name: str) -> str:
    """The first docstring line of the mutant's one changed class."""
    cls = next(iter(MUTANTS[name].values()))
    return (cls.__doc__ or "").strip().splitlines()[0]
