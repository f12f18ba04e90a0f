"""Checkers of the contract's interface: answers that parse, the ledger table, batch commands, /health."""

from __future__ import annotations

import json

from relaychaos import idempotency_key
from relaychaos.checkers.facts import KNOWN_CODES, Facts
from relaychaos.checkers.rulebook import rule
from relaychaos.checkers.verdict import Verdict
from relaychaos.contract import LEDGER_COLUMNS
from relaychaos.events import Op


@rule(
    "interface",
    "answers are JSON objects with guid and a known code, with the right HTTP status (a keyed service: a status "
    "of its profile's table)",
    contract=("3.answer", "3.malformed"),
    needs=("answers",),
)
def interface(facts: Facts) -> list[Verdict]:
    """Every answer is HTTP 200 with a JSON object holding guid and a known code; E400 comes with HTTP 400.

    The contract asks for `guid` in the HTTP 200 answers only: an E400 answer to a
    body that had no usable GUID may leave it out. A keyed service (the idempotency-key
    profile) answers with a status of its profile's table instead, and a verdict quotes it.
    """
    if facts.header.profile == "idempotency-key":
        return _keyed_interface(facts)
    for c in facts.channel:
        if not c.answered:
            continue
        problem, cited = None, "3.answer"
        text = c.body or ""
        try:
            body = json.loads(text)
        except ValueError:
            body = None
        if not isinstance(body, dict):
            problem = f"the answer is not a JSON object: {str(c.body)[:80]!r}"
        elif "code" not in body:
            problem = f"the answer lacks code: {text[:80]!r}"
        elif body["code"] not in KNOWN_CODES:
            problem = f"the answer's code {body['code']!r} is not one of the contract's"
        elif body["code"] == "E400":
            if c.status != 400:
                problem, cited = f"code E400 came with HTTP {c.status}", "3.malformed"
        elif "guid" not in body:
            problem = f"the answer lacks guid: {text[:80]!r}"
        elif c.status != 200:
            problem = f"code {body['code']} came with HTTP {c.status}"
        if problem:
            return [Verdict("interface", c.guid, problem, c.events, clause=cited)]
    return []


def _keyed_interface(facts: Facts) -> list[Verdict]:
    """The first answer whose status is outside the idempotency-key profile's table."""
    for c in facts.channel:
        if c.answered and c.status is not None and idempotency_key.code(c.status) is None:
            return [
                Verdict(
                    "interface",
                    c.guid,
                    f"the service answered HTTP {c.status}, which is not in {idempotency_key.SOURCE}: "
                    f"{idempotency_key.table()}",
                    c.events,
                    details={"source": idempotency_key.SOURCE},
                    clause="3.answer",  # the course's sentence it stands for; reports cite the source instead
                )
            ]
    return []


@rule(
    "ledger-schema",
    "the ledger has the contract's table and columns (a keyed service's: those [ledger] maps), and can be read",
    contract=("4.schema", "4.readers"),
    needs=("ledger-status",),
)
def ledger_schema(facts: Facts) -> list[Verdict]:
    """The table the run read at its end has the columns it must (the contract's, §4; of a keyed service's own
    table, those relay.toml's [ledger] maps: `required`), and every snapshot could be read. A run whose serve
    never became ready (a start failed and none succeeded) is `serve-ready`'s alone: no relay ever made the table."""
    if facts.never_served:
        return []
    out = []
    for e in facts.schema_events:
        if e.f == Op.LEDGER_SCHEMA:
            if facts.header.profile == "idempotency-key" and "required" not in e.value:
                continue  # an older history's reading of a keyed service: not its own table's
            required = e.value.get("required") or LEDGER_COLUMNS
            missing = [c for c in required if c not in e.value.get("columns", [])]
            if missing:
                why = e.value.get("error") or "the table exists"
                table, mapped = e.value.get("table"), " [ledger] maps" if "required" in e.value else ""
                where = (
                    "the ledger at LEDGER_PATH lacks table `ledger` or its columns"
                    if table is None
                    else f"the ledger's table `{table}` lacks the columns{mapped}"
                )
                out.append(
                    Verdict(
                        "ledger-schema",
                        None,
                        f"{where} {', '.join(missing)} ({why})",
                        (e.index,),
                        clause="4.schema",
                    )
                )
        elif e.f == Op.LEDGER_SNAPSHOT and e.type == "fail":
            out.append(
                Verdict(
                    "ledger-schema",
                    None,
                    f"the ledger could not be read after step {e.value.get('after_step')}: {e.value.get('error')}",
                    (e.index,),
                    clause="4.readers",
                )
            )
            break
    return out


@rule(
    "batch-runs",
    "resolve, reprocess and purge (those the relay has) run through and exit 0",
    contract=("1.batch-exit",),
    needs=("batch-command",),
)
def batch_runs(facts: Facts) -> list[Verdict]:
    """A batch command exits 0 when it ran through; one killed at its time limit never did.

    A non-zero exit while the account system was unreachable is accepted: whether a
    batch "could not run" without it is the relay's call (the contract does not say). A run whose serve never
    became ready is `serve-ready`'s alone: its batch commands ran against a ledger no relay ever made.
    """
    if facts.never_served:
        return []
    out = []
    for b in facts.batches:
        rc = b.end.value.get("returncode") if b.end else None
        if b.end is not None and rc == 0:
            continue
        if b.end is not None and rc is not None and _account_unreachable(facts, b.invoke.time, b.end.time):
            continue
        how = "was killed at its time limit" if b.end and rc is None else f"exited with status {rc}"
        out.append(
            Verdict(
                "batch-runs",
                None,
                f"`{' '.join(b.invoke.value.get('argv', []))}` {how}; a batch command exits 0 when it ran through",
                (b.invoke.index,) + ((b.end.index,) if b.end else ()),
                clause="1.batch-exit",
            )
        )
    return out


@rule(
    "tampering",
    "the stack stays as the harness set it: toxics, proxies, the account system's faults",
    contract=("6.sandbox",),
)
def tampering(facts: Facts) -> list[Verdict]:
    """Whatever the harness set up and later found changed, not by itself: only the relay can have done it.

    The harness audits after every step and before the checks; each change is listed
    when first seen. A relay may reach only its port, the account proxy and its
    folders: the harness's controls are none of these.
    """
    return [
        Verdict(
            "tampering",
            None,
            f"first seen after step {e.value.get('after_step')}, "
            f"{e.time - facts.start:.2f} s into the run: the stack was no longer as the harness set it: "
            f"{'; '.join(e.value.get('changes', []))}",
            (e.index,),
            details={"changes": e.value.get("changes", [])},
            clause="6.sandbox",
        )
        for e in facts.tampered
    ]


@rule(
    "account-requests",
    "the relay's requests to the account system are transfers and queries, each sent whole",
    contract=("2.transfer",),
)
def account_requests(facts: Facts) -> list[Verdict]:
    """What the account system refused before it was a call: a body over its bound (8 KiB; a transfer is under
    1 KB), or one that had not arrived 10 s after its head while the account proxy passed everything (a fault the
    harness put on that proxy, which can hold a body back, excuses it). The account system keeps the first twenty
    in full and counts them all (relaychaos.fixtures.account_system.bounds)."""
    refused = [r for r in facts.stats.get("refused", []) if not _account_unreachable(facts, r["head_at"], r["at"])]
    if not refused:
        return []
    first, total = refused[0], facts.stats.get("refused_total", len(refused))
    return [
        Verdict(
            "account-requests",
            None,
            f"the account system refused {total} request(s) of the relay's before they were transfers; the first, "
            f"{first['head_at'] - facts.start:.2f} s into the run: {first['why']} (a transfer is a JSON object of "
            "four fields, under 1 KB, sent whole)",
            details={"refused": refused, "total": total},
            clause="2.transfer",
        )
    ]


def _account_unreachable(facts: Facts, t0: float, t1: float) -> bool:
    """Whether the account proxy was down, or cut or held answers, at some moment between t0 and t1."""
    return any(
        down or any(kind in ("timeout", "limit_data", "reset_peer") for kind, _ in toxics)
        for down, toxics in facts.account_states(t0, t1)
    )


@rule("serve-ready", "serve starts and answers GET /health", contract=("1.ready", "3.health"))
def serve_ready(facts: Facts) -> list[Verdict]:
    if not facts.failed_steps:
        return []
    e = facts.failed_steps[0]
    return [
        Verdict(
            "serve-ready",
            None,
            f"step {e.value.get('step')} failed: {(str(e.value.get('error')).splitlines() or [''])[0]}",
            (e.index,),
            details={"error": e.value.get("error")},
            clause="3.health",
        )
    ]
