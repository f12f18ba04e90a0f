"""Checkers of the ledger: write before send, agreement with the account system, legal transitions,
convergence, and the batch jobs' own limits (min-age, retention, attempt cap).

Each rule needs only what it reads (relaychaos.checkers.CAPABILITIES): a row's status, its last change,
its attempts, and the batch commands whose runs it judges. So a keyed service's own table, read through
relay.toml's [ledger] mapping (its statuses in the contract's words), is judged by every rule whose columns
it maps, as the course's table is.
"""

from __future__ import annotations

from relaychaos.checkers.facts import Facts
from relaychaos.checkers.row_agreement import course_disagreement, keyed_disagreement
from relaychaos.checkers.rulebook import rule
from relaychaos.checkers.verdict import Verdict

UNDECIDED = {"SENT", "UNKNOWN", "RECEIVED"}
# status before -> statuses any step may lead to (claims, sends and their outcomes; background calls included)
ANY_STEP = {
    None: {"RECEIVED", "SENT", "DONE", "UNKNOWN", "FAILED"},
    "RECEIVED": {"SENT", "DONE", "UNKNOWN", "FAILED"},
    "SENT": {"DONE", "UNKNOWN", "FAILED"},
    "FAILED": {"SENT", "DONE", "UNKNOWN"},
}
BY_RESOLVE = {"UNKNOWN": {"DONE", "FAILED"}, "SENT": {"DONE", "FAILED"}, "RECEIVED": {"DONE", "FAILED"}}
# where a keyed service's serve may move an UNKNOWN row once the PSP's query API answered about its key
# (docs/production-api.md, "Asked before resending"): settled as found, or claimed again and sent
BY_ASKING = {"SENT", "DONE", "FAILED"}


def _keyed(facts: Facts) -> bool:
    """Whether the history's relay is a keyed service (the idempotency-key profile)."""
    return facts.header.profile == "idempotency-key"


@rule(
    "write-before-send",
    "the account system receives a transfer only after its SENT row was committed",
    contract=("3.claim-new", "3.failed-resend", "5.reprocess"),
    needs=("ledger-status",),
)
def write_before_send(facts: Facts) -> list[Verdict]:
    """Each account call found a committed SENT row, or it is a GUID's first call found UNKNOWN. One verdict
    per GUID names every call that did not (how many copies of a race got there first is a timing).

    UNKNOWN follows only SENT: a first call that arrives after the relay gave up waiting for
    it (its request slow on the way, or queued for a connection within the time-out) was
    claimed and committed before it was sent. Any later call finding UNKNOWN is a resend of an
    UNKNOWN row, and a second call (one-account-call says so too).
    """
    early: dict[str, list[dict]] = {}  # GUID -> its calls that found no committed SENT row, in order
    called: set[str] = set()
    for call in facts.account_calls:
        guid = call.get("guid")
        first, late = guid not in called, call.get("ledger_status") == "UNKNOWN"
        if guid is None:
            continue
        called.add(guid)
        asked = call.get("ledger_status") in UNDECIDED and facts.asked_before(guid, call)
        if call.get("sent_row") is True or (first and late) or asked:
            continue
        early.setdefault(guid, []).append(call)
    return [
        Verdict(
            "write-before-send",
            guid,
            "the account system received this transfer before a SENT row for it was committed: the relay sent "
            "before writing its ledger",
            facts.events_for(guid),
            tuple(c["seq"] for c in calls),
            details={"ledger_rows": [c.get("ledger_error") or c.get("ledger_status") or "missing" for c in calls]},
            clause="3.claim-new",
        )
        for guid, calls in early.items()
    ]


@rule(
    "ledger-agrees",
    "the ledger's status and code agree with what the account system did",
    contract=("3.definite", "3.refused", "5.resolve-found", "5.resolve-404"),
    needs=("ledger-status",),
    partly=("ledger-answer",),
)
def ledger_agrees(facts: Facts) -> list[Verdict]:
    """Each final row's status (and, where the ledger keeps one, its answer) agrees with the account system's
    record of the GUID: DONE with the code it answered, FAILED only for what it never received (a keyed
    service: never executed, as its query answered)."""
    keyed, out = _keyed(facts), []
    for guid, row in facts.final_rows.items():
        problem, cited = (keyed_disagreement if keyed else course_disagreement)(facts, guid, row)
        if problem:
            out.append(
                Verdict("ledger-agrees", guid, problem, facts.events_for(guid), facts.call_seqs(guid), clause=cited)
            )
    return out


@rule(
    "transitions",
    "ledger statuses move only along the contract's transitions",
    contract=("3.unknown", "3.done-replay", "5.purge-keeps", "5.reprocess-not-unknown"),
    needs=("ledger-status",),
)
def transitions(facts: Facts) -> list[Verdict]:
    """Between consecutive snapshots, each row moves only along the contract's transitions (a keyed service's
    statuses in the contract's words). A keyed service may also settle or send again an UNKNOWN key once its
    PSP's query API answered about it (query before resending)."""
    out, flagged = [], set()
    asked = _first_queries(facts) if _keyed(facts) else {}
    for before, after in zip(facts.snapshots, facts.snapshots[1:], strict=False):
        kind = after.value.get("kind")
        rows0, rows1 = before.value["rows"], after.value["rows"]
        for guid in sorted(set(rows0) | set(rows1)):
            s0 = rows0.get(guid, {}).get("status")
            s1 = rows1.get(guid, {}).get("status")
            if s0 == s1 or guid in flagged:
                continue
            allowed: set[str | None] = set(ANY_STEP.get(s0, set()))  # None: the row deleted
            if kind == "resolve":
                allowed |= BY_RESOLVE.get(s0, set())
            if kind == "purge" and s0 == "DONE":
                allowed.add(None)
            if s0 == "UNKNOWN" and asked.get(guid, after.time + 1) <= after.time:
                allowed |= BY_ASKING
            if s1 not in allowed:
                flagged.add(guid)
                via = f"during step {after.value.get('after_step')} ({kind})"
                what = "deleted" if s1 is None else f"moved to {s1}"
                out.append(
                    Verdict(
                        "transitions",
                        guid,
                        f"the ledger row went from {s0} and was {what} {via}; "
                        f"the contract allows {s0} → {', '.join(sorted(map(str, allowed))) or 'nothing'} "
                        "there",
                        facts.events_for(guid) + (before.index, after.index),
                        facts.call_seqs(guid),
                        clause=_broken_clause(s0, s1, kind),
                    )
                )
    return out


def _first_queries(facts: Facts) -> dict[str, float]:
    """GUID -> when the account system's query API first answered about it (the account system's clock, which
    is the history's: both monotonic)."""
    out: dict[str, float] = {}
    for q in facts.stats.get("queries", []):
        guid = q.get("guid")
        if isinstance(guid, str) and guid not in out:
            out[guid] = q["at"]
    return out


def _broken_clause(before: str | None, after: str | None, kind: str | None) -> str:
    """The contract sentence a forbidden move breaks."""
    if after is None:
        return "5.purge-keeps"
    if before == "DONE":
        return "3.done-replay"
    if before == "UNKNOWN" and kind == "reprocess":
        return "5.reprocess-not-unknown"
    return "3.unknown"


@rule(
    "converged",
    "after the final heal, resolve and reprocess, no row is left SENT or UNKNOWN",
    contract=("5.resolve-asks", "5.resolve-found", "5.resolve-404"),
    needs=("ledger-status", "resolve", "reprocess"),
)
def converged(facts: Facts) -> list[Verdict]:
    """No row is undecided once the final phase (relaychaos.engine.final_phase) has run resolve, reprocess and
    resolve again. It needs both commands: resolve settles what the account system executed (DONE) and what it
    never did (FAILED), and reprocess sends the FAILED again; a relay without one (a keyed service that leaves
    a key its PSP never executed UNKNOWN until the client retries it) cannot be told to converge."""
    return [
        Verdict(
            "converged",
            guid,
            f"after the final heal, resolve and reprocess the row is still {row['status']}",
            facts.events_for(guid),
            facts.call_seqs(guid),
            clause="5.resolve-asks",
        )
        for guid, row in sorted(facts.final_rows.items())
        if row.get("status") in UNDECIDED
    ]


@rule(
    "purge-retention",
    "purge deletes the DONE rows at least --retention old, and no younger ones",
    contract=("5.purge",),
    needs=("ledger-times", "purge"),
)
def purge_retention(facts: Facts) -> list[Verdict]:
    out = []
    tol = facts.tolerances
    for b, end_wall, rows0, rows1, _ in facts.batch_windows("purge"):
        for guid, row in rows0.items():
            if row.get("status") != "DONE" or row.get("updated_at") is None:  # a time the table left empty
                continue
            age = end_wall - row["updated_at"]
            if guid not in rows1 and age < b.argument - tol.clock_slack_s:
                out.append(
                    Verdict(
                        "purge-retention",
                        guid,
                        f"purge --retention {b.argument:g} deleted this DONE row when it was only {age:.2f} s old",
                        facts.events_for(guid),
                        facts.call_seqs(guid),
                        clause="5.purge",
                    )
                )
            old = b.wall - row["updated_at"]
            if (
                guid in rows1
                and rows1[guid].get("updated_at") == row["updated_at"]
                and old >= b.argument + tol.retention_slack_s
            ):
                out.append(
                    Verdict(
                        "purge-retention",
                        guid,
                        f"purge --retention {b.argument:g} kept this DONE row "
                        f"although it was {old:.2f} s old when purge started",
                        facts.events_for(guid),
                        facts.call_seqs(guid),
                        clause="5.purge",
                    )
                )
    return out


@rule(
    "resolve-min-age",
    "resolve leaves rows younger than --min-age alone",
    contract=("5.resolve-min-age",),
    needs=("ledger-times", "resolve"),
)
def resolve_min_age(facts: Facts) -> list[Verdict]:
    out = []
    for b, end_wall, rows0, rows1, _ in facts.batch_windows("resolve"):
        for guid, row in rows0.items():
            if row.get("status") != "UNKNOWN" or row.get("updated_at") is None:  # a time the table left empty
                continue
            new = rows1.get(guid, {}).get("status")
            age = end_wall - row["updated_at"]
            if new != "UNKNOWN" and age < b.argument - facts.tolerances.clock_slack_s:
                out.append(
                    Verdict(
                        "resolve-min-age",
                        guid,
                        f"resolve --min-age {b.argument:g} settled this UNKNOWN "
                        f"row as {new} when it was only {age:.2f} s old; the account system may still "
                        "have been processing it",
                        facts.events_for(guid),
                        facts.call_seqs(guid),
                        clause="5.resolve-min-age",
                    )
                )
    return out


@rule(
    "resolve-keeps-unanswered",
    "resolve leaves a row as it is when its query fails or times out",
    contract=("5.resolve-query-fails",),
    needs=("ledger-status", "resolve"),
)
def resolve_keeps_unanswered(facts: Facts) -> list[Verdict]:
    """While the query API cannot answer (account proxy down, or answers held), resolve changes no row."""
    out = []
    for b, _, rows0, rows1, _ in facts.batch_windows("resolve"):
        if not _queries_cannot_answer(facts, b.invoke.time, b.end.time):
            continue
        for guid, row in rows0.items():
            after = rows1.get(guid)
            if row.get("status") == "UNKNOWN" and (after or {}).get("status") != "UNKNOWN":
                code = f" (code {after['resp_code']})" if after and after.get("resp_code") is not None else ""
                now = "deleted" if after is None else f"{after['status']}{code}"
                out.append(
                    Verdict(
                        "resolve-keeps-unanswered",
                        guid,
                        f"resolve ran while the account system's query "
                        f"API could not answer, and moved this UNKNOWN row to {now}; a query that fails "
                        "or times out leaves the row as it is",
                        facts.events_for(guid),
                        facts.call_seqs(guid),
                        clause="5.resolve-query-fails",
                    )
                )
    return out


def _queries_cannot_answer(facts: Facts, t0: float, t1: float) -> bool:
    """Whether, from t0 to t1 throughout, the account proxy was down or held every answer (timeout toxic)."""
    return all(down or ("timeout", "downstream") in toxics for down, toxics in facts.account_states(t0, t1))


@rule(
    "malformed-no-effect",
    "a malformed request (or one refused with E400) leaves no ledger row and makes no account call",
    contract=("3.malformed",),
    needs=("answers",),
    partly=("ledger-status",),  # no ledger row: judged where the ledger is read; no account call: everywhere
)
def malformed_no_effect(facts: Facts) -> list[Verdict]:
    """For GUIDs the channel only ever sent malformed or had refused with E400: no row, no account call.

    A malformed body's GUID field is matched as it was written (an over-long or spaced
    GUID), besides the run's GUID for the step.
    """
    out = []
    by_guid: dict[str, list] = {}
    for c in facts.channel:
        if c.sent_guid:
            by_guid.setdefault(c.sent_guid, []).append(c)
    for guid, calls in by_guid.items():
        if not all(c.malformed or (c.answered and c.code == "E400") for c in calls):
            continue
        names = {guid} | {c.body_guid for c in calls if c.body_guid}
        rows = sorted(names & facts.snapshot_guids)
        sent = sorted((c for g in names for c in facts.calls_for(g)), key=lambda c: c["seq"])
        if rows or sent:
            what = ", ".join(
                ([f"a ledger row ({', '.join(rows)})"] if rows else [])
                + ([f"{len(sent)} account call(s)"] if sent else [])
            )
            out.append(
                Verdict(
                    "malformed-no-effect",
                    guid,
                    f"every request of this GUID was malformed or answered E400, yet it left {what}",
                    facts.events_for(guid),
                    tuple(c["seq"] for c in sent),
                    clause="3.malformed",
                )
            )
    return out


@rule(
    "attempt-cap",
    "reprocess stops at --max-attempts",
    contract=("5.reprocess",),
    needs=("ledger-attempts", "reprocess"),
)
def attempt_cap(facts: Facts) -> list[Verdict]:
    out = []
    for b, _, rows0, rows1, since in facts.batch_windows("reprocess"):
        cap = int(b.argument)
        for guid, row in rows0.items():
            later = rows1.get(guid, {})
            if (
                row.get("status") == "FAILED"
                and isinstance(row.get("attempts"), int)
                and row["attempts"] >= cap
                and later.get("attempts", 0) > row["attempts"]
                and not _resent_by_channel(facts, guid, since, b.end.time)
            ):
                out.append(
                    Verdict(
                        "attempt-cap",
                        guid,
                        f"reprocess --max-attempts {cap} tried this GUID again "
                        f"although it had already been tried {row['attempts']} time(s) "
                        f"(attempts went to {later['attempts']})",
                        facts.events_for(guid),
                        facts.call_seqs(guid),
                        clause="5.reprocess",
                    )
                )
    return out


def _resent_by_channel(facts: Facts, guid: str, t0: float, t1: float) -> bool:
    """Whether a channel call of the GUID was in flight at some moment from t0 to t1 (and so may have made an
    attempt)."""
    return any(c.invoked_at <= t1 and (c.completed_at is None or c.completed_at >= t0) for c in facts.channel_for(guid))
