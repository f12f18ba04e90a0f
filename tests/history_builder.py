"""Literal histories for testing the checkers alone: what a run would have recorded, written by hand.

    h = HistoryBuilder(account_timeout_ms=300, accounts={"alice": 100, "bob": 0})
    h.send("g1", at=0.0, answered_at=0.05)
    h.account_call("g1", received_at=0.01, answered_at=0.02)
    verdicts = checkers.check(h.build())

Times are CLOCK_MONOTONIC seconds of the story (any origin); a ledger row's `updated_at` and the
`wall` of snapshots and batches are wall-clock seconds, by default equal to the monotonic time.
`build()` replays the calls in time order (ties keep their order) through the harness's own
Recorder with a story clock, header first and the account system's statistics last: the events
have the shapes a real run records, by construction.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable

from relaychaos import contract, idempotency_key
from relaychaos.checkers.claims import as_dict
from relaychaos.contract import LEDGER_COLUMNS
from relaychaos.fixtures.account_system.bank import MESSAGES
from relaychaos.history import History
from relaychaos.recorder import Recorder
from relaychaos.records.header import HistoryHeader
from relaychaos.stack.channel import transfer
from relaychaos.tolerances import CURRENT, Tolerances

FLAGS = {"resolve": "--min-age", "reprocess": "--max-attempts", "purge": "--retention"}
MESSAGES = {**MESSAGES, "E901": "outcome unknown", "E902": "not sent", "E903": "being sent", "E904": "guid reused"}


def row(
    status: str,
    code: str | None = None,
    *,
    updated_at: float = 0.0,
    attempts: int = 1,
    request: dict | None = None,
    response: str | None = None,
) -> dict:
    """One ledger row as `ledger_file.rows` returns it (the contract's seven columns)."""
    return {
        "guid": None,
        "status": status,
        "resp_code": code,
        "request": json.dumps(request or {}),
        "response": response,
        "attempts": attempts,
        "updated_at": updated_at,
    }


def answer(guid: str | None, code: str) -> str:
    """The body a relay answers with: `{"guid": ..., "code": ..., "message": ...}`."""
    return json.dumps({"guid": guid, "code": code, "message": MESSAGES.get(code, code)})


class HistoryBuilder:
    """Writes the events of one literal run; `build()` returns the History the checkers judge."""

    def __init__(
        self,
        *,
        account_timeout_ms: int = 300,
        accounts: dict[str, int] | None = None,
        tolerances: Tolerances | None = CURRENT,
        name: str = "literal",
        max_attempts: int = 3,
        claims: tuple = (),
    ):
        """The scenario header's fields; tolerances=None records a history of before tolerances (V1)."""
        self.header = dict(
            name=name,
            family="literal",
            description="a literal history",
            accounts=dict(accounts or {}),
            account_timeout_ms=account_timeout_ms,
            max_attempts=max_attempts,
            guids={},
            steps=[],
            relay="literal",
            tag="lit",
            contract=contract.VERSION,
        )
        if claims:
            self.header["claims"] = [as_dict(c) for c in claims]
        if tolerances is not None:
            self.header["tolerances"] = tolerances.as_dict()
        self.events: list[tuple[float, Callable[[Recorder], object]]] = []  # (time, what the recorder writes)
        self.requests: dict[str, dict] = {}  # GUID -> the last well-formed request the channel sent
        self.calls: list[dict] = []
        self.balances: dict[str, int] | None = None  # None: derived from the applied calls, as the bank does
        self.columns, self.schema_error = list(LEDGER_COLUMNS), None
        self.schema_table: str | None = None  # a PostgreSQL ledger's table (None: the SQLite file's)
        self.schema_required: list[str] | None = None  # the columns a keyed service's [ledger] maps
        self.queries: list[dict] = []  # the query API's answers (bank.Bank.queried)
        self.refused: list[dict] = []  # requests refused before they were calls (bank.Bank.refuse)
        self._procs, self._batches, self._steps = itertools.count(), itertools.count(1), itertools.count(1)

    def at(self, at: float, write: Callable[[Recorder], object]) -> None:
        """Have the recorder write something at story time `at`."""
        self.events.append((at, write))

    def add(self, at: float, process: str, type: str, f: str, **value) -> None:
        """Any event at all, for what the recorder's methods do not cover."""
        self.at(at, lambda r: r.history.append(process, type, f, at=at, **value))

    def send(
        self,
        guid: str | None,
        at: float = 0.0,
        answered_at: float | None = 0.05,
        code: str = "0000",
        status: int | None = None,
        body: str | None = None,
        sent_at: float | None = None,
        retransmits: int = 0,
        raw: str | None = None,
        race: int | None = None,
        request: dict | None = None,
        *,
        amount: int = 1,
        intent: str | None = None,
        gave_up_at: float | None = None,
        error: str | None = None,
        process: str | None = None,
        attempt: int = 1,
    ) -> str:
        """One channel call (invoke, then ok; or info at gave_up_at; or nothing when both are None); its process."""
        process = process or f"channel-a-{next(self._procs)}"
        if raw is None:
            request = request or transfer(guid, "alice", "bob", amount)
            self.requests[guid] = request
        self.at(
            at, lambda r: r.transfer_sent(process, guid, attempt, request=request, raw=raw, intent=intent, race=race)
        )
        wire = dict(sent_at=at if sent_at is None else sent_at, retransmits=retransmits)
        end = answered_at if answered_at is not None else gave_up_at
        if end is not None and retransmits:
            self.at(end, lambda r: r.accept_delay(process, guid, retransmits, race or 1))
        if answered_at is not None:
            body = answer(guid, code) if body is None else body
            try:
                parsed = json.loads(body)
                code = parsed.get("code") if isinstance(parsed, dict) else None
            except ValueError:
                code = None
            status = status if status is not None else (400 if code == "E400" else 200)
            code = code if isinstance(code, str) else None
            if self.header.get("profile") == "idempotency-key":
                code = idempotency_key.code(status)  # a keyed service's answer is read from its status
            self.at(
                answered_at,
                lambda r: r.transfer_answered(process, guid, attempt, status=status, code=code, body=body, **wire),
            )
        elif gave_up_at is not None:
            why = error or f"no answer within {gave_up_at - at:g} s"
            self.at(
                gave_up_at,
                lambda r: r.transfer_unanswered(process, guid, attempt, error=why, timed_out=error is None, **wire),
            )
        return process

    def account_call(
        self,
        guid: str | None,
        received_at: float,
        answered_at: float | None = None,
        code: str | None = "0000",
        applied: bool | None = None,
        ledger_status: str | None = "SENT",
        ledger_error: str | None = None,
        request: dict | None = None,
    ) -> None:
        """One POST the account system received (default request: the channel's last for this GUID)."""
        self.calls.append(
            dict(
                guid=guid,
                request=request or self.requests.get(guid),
                received_at=received_at,
                ledger_status=ledger_status,
                ledger_error=ledger_error,
                code=code,
                applied=(code == "0000") if applied is None else applied,
                answered_at=received_at + 0.001 if answered_at is None and code else answered_at,
                sent_row=None if ledger_error else ledger_status == "SENT",
            )
        )

    def _stats(self) -> dict:
        """The account system's statistics (bank.Bank.stats): calls by arrival, per-GUID summaries, balances."""
        calls = [{"seq": n, **c} for n, c in enumerate(sorted(self.calls, key=lambda c: c["received_at"]), 1)]
        balances, guids = dict(self.header["accounts"]), {}
        for c in calls:
            req = c["request"] or {}
            if c["applied"] and {"from", "to", "amount"} <= set(req):
                balances[req["from"]] = balances.get(req["from"], 0) - req["amount"]
                balances[req["to"]] = balances.get(req["to"], 0) + req["amount"]
            if c["guid"] is not None:
                s = guids.setdefault(c["guid"], {"calls": 0, "debits": 0, "codes": [], "first_code": c["code"]})
                s.update(calls=s["calls"] + 1, debits=s["debits"] + c["applied"], codes=s["codes"] + [c["code"]])
        return {
            "balances": balances if self.balances is None else self.balances,
            "guids": guids,
            "calls": calls,
            "faults": {},
            **({"queries": self.queries} if self.queries else {}),
            **({"refused": self.refused, "refused_total": len(self.refused)} if self.refused else {}),
        }

    def refused_request(self, why: str, head_at: float, at: float) -> None:
        """A request the account system refused before it was a call: its head at head_at, refused at `at`."""
        self.refused.append({"why": why, "head_at": head_at, "at": at})

    def snapshot(
        self,
        rows: dict[str, dict] | None,
        at: float,
        kind: str = "send",
        after_step=None,
        wall: float | None = None,
        error: str | None = None,
    ) -> None:
        """A ledger snapshot after a step (`observer ok ledger-snapshot`); with error, one that failed."""
        n = next(self._steps) if after_step is None else after_step
        if error is not None:
            return self.at(at, lambda r: r.ledger_unreadable(n, kind, error))
        rows = {g: {**row_, "guid": g} for g, row_ in (rows or {}).items()}
        self.at(at, lambda r: r.ledger_snapshot(n, kind, rows, at if wall is None else wall))

    def schema(
        self, columns: list[str], error: str | None = None, table: str | None = None, required: list[str] | None = None
    ) -> None:
        """The ledger's columns as the runner finally reads them (replaces the default: all required); `table` and
        `required` as a PostgreSQL ledger's reading records them (a keyed service: the columns [ledger] maps)."""
        self.columns, self.schema_error, self.schema_table, self.schema_required = columns, error, table, required

    def query(self, guid: str, at: float, found: bool) -> None:
        """The account system's query API answered about the GUID (found, or not found)."""
        self.queries.append({"guid": guid, "at": at, "found": found})

    def step(self, n: int, text: str, start: float, end: float | None) -> None:
        """Step n of the scenario ran from `start` to `end` (None: it never ended)."""
        self.at(start, lambda r: r.step_started(n, text))
        if end is not None:
            self.at(end, lambda r: r.step_done(n))

    def waited(self, guid: str, at: float, reached: bool = True) -> None:
        """A wait for the GUID's call at the account system, which came (or gave up)."""
        self.at(at, lambda r: r.waited_calls(guid, 1 if reached else 0, 1))

    def step_fail(self, step: str, error: str, at: float, n: int = 1) -> None:
        """A step the runner could not run (a relay that would not start, say)."""
        self.at(at, lambda r: r.step_started(n, step))
        self.at(at, lambda r: r.step_failed(n, step, error))

    def batch(
        self,
        command: str,
        arg: float,
        start: float,
        end: float | None,
        returncode: int | None = 0,
        wall: float | None = None,
        end_wall: float | None = None,
    ) -> None:
        """One run of resolve/reprocess/purge (`batch-N` invoke, then ok/fail; returncode None: killed)."""
        run, arg_s = next(self._batches), str(arg) if isinstance(arg, int) else repr(float(arg))
        argv = ["relay", command, FLAGS[command], arg_s]
        self.at(start, lambda r: r.batch_started(run, command, float(arg), argv, start if wall is None else wall))
        if end is not None:
            self.at(
                end,
                lambda r: r.batch_ended(
                    run, command, returncode, end - start, end if end_wall is None else end_wall, returncode is None
                ),
            )

    def kill(self, slot: str, at: float) -> None:
        """SIGKILL of a relay slot (`relay-SLOT` invoke/ok kill)."""
        self.at(at, lambda r: r.killing(slot, 4242))
        self.at(at, lambda r: r.killed(slot, 4242, -9))

    def start(self, slot: str, at: float) -> None:
        """A relay slot started (`relay-SLOT` invoke/ok start)."""
        self.at(at, lambda r: r.starting(slot, ["relay", "serve"]))
        self.at(at, lambda r: r.started(slot, 40000, 4242))

    def toxic(
        self,
        proxy: str,
        kind: str,
        at: float,
        stream: str = "downstream",
        attributes: dict | None = None,
        name: str | None = None,
    ) -> str:
        """A toxic on proxy 'account' or 'hub-SLOT' (nemesis invoke/ok add-toxic); its name."""
        name = name or f"{kind}_{stream}"
        self.at(at, lambda r: r.toxic_adding(proxy, side(proxy), name, kind, stream, dict(attributes or {})))
        self.at(at, lambda r: r.toxic_added(proxy, side(proxy), name))
        return name

    def remove_toxic(self, proxy: str, name: str, at: float) -> None:
        """One toxic removed."""
        self.at(at, lambda r: r.toxic_removed(proxy, side(proxy), name))

    def disable(self, proxy: str, at: float) -> None:
        """The proxy stops listening."""
        self.at(at, lambda r: r.proxy_set(proxy, side(proxy), False))

    def enable(self, proxy: str, at: float) -> None:
        """The proxy listens again."""
        self.at(at, lambda r: r.proxy_set(proxy, side(proxy), True))

    def server_fault(self, at: float, **spec) -> None:
        """Account-system faults (delay_ms, e500_next, e500_guids, hold_guids)."""
        self.at(at, lambda r: r.server_fault(**{"e500_guids": [], "hold_guids": [], **spec}))

    def heal(self, at: float) -> None:
        """Every toxic removed, every proxy enabled, server faults cleared."""
        self.at(at, lambda r: r.healed())

    def tampered(self, at: float, after_step, *changes: str) -> None:
        """The harness's audit found parts of the stack changed behind its back."""
        self.at(at, lambda r: r.tampered(after_step, list(changes)))

    def build(self) -> History:
        """The History: header first, events by time, final schema and account statistics last."""
        events = sorted(self.events, key=lambda e: e[0])  # stable: ties keep their order
        times = [t for t, _ in events] + [
            t for c in self.calls for t in (c["received_at"], c["answered_at"]) if t is not None
        ]
        first, last = min(times, default=0.0) - 1.0, max(times, default=0.0) + 1.0
        self.header["guids"] = {g: g for g in self.requests}
        now = [first]
        recorder = Recorder(clock=lambda: now[0])
        recorder.scenario(HistoryHeader.from_builtins(self.header))
        for t, write in events:
            now[0] = t
            write(recorder)
        now[0] = last
        recorder.ledger_schema(self.columns, self.schema_error, self.schema_table, self.schema_required)
        recorder.account_stats(self._stats())
        return recorder.history


def side(proxy: str) -> str:
    """The side a proxy is on, named as the Stack names them: 'account', or 'channel' for a hub."""
    return "account" if proxy == "account" else "channel"
