"""Checkers of the ledger: write before send, agreement with the account system, legal transitions,
convergence, and the batch jobs' own limits (min-age, retention, attempt cap)."""
from __future__ import annotations

from ..verdict import Verdict
from .facts import Facts

REQUIRED_COLUMNS = ("guid", "status", "resp_code", "request", "response", "attempts", "updated_at")
UNDECIDED = {"SENT", "UNKNOWN", "RECEIVED"}
# status before -> statuses any step may lead to (claims, sends and their outcomes; background calls included)
ANY_STEP = {None: {"RECEIVED", "SENT", "DONE", "UNKNOWN", "FAILED"}, "RECEIVED": {"SENT", "DONE", "UNKNOWN", "FAILED"},
            "SENT": {"DONE", "UNKNOWN", "FAILED"}, "FAILED": {"SENT", "DONE", "UNKNOWN"}}
BY_RESOLVE = {"UNKNOWN": {"DONE", "FAILED"}, "SENT": {"DONE", "FAILED"}, "RECEIVED": {"DONE", "FAILED"}}
CLOCK_SLACK_S = 0.05


def write_before_send(f: Facts) -> list[Verdict]:
    out = []
    for call in f.account_calls:
        if call.get("guid") is None or call.get("sent_row") is True:
            continue
        seen = call.get("ledger_error") or f"the row was {call.get('ledger_status') or 'missing'}"
        out.append(Verdict("write-before-send", call["guid"],
                           f"the account system received this transfer when no committed SENT row existed "
                           f"({seen}): the relay sent before writing its ledger",
                           f.events_for(call["guid"]), (call["seq"],)))
    return out


def ledger_agrees(f: Facts) -> list[Verdict]:
    out = []
    for guid, row in f.final_rows.items():
        calls = f.calls_for(guid)
        debits = sum(1 for c in calls if c.get("applied"))
        first = calls[0].get("code") if calls else None
        status, code = row.get("status"), row.get("resp_code")
        problem = None
        if status == "DONE" and first is None:
            problem = f"the ledger says DONE with {code}, but the account system never processed this GUID"
        elif status == "DONE" and code != first:
            problem = f"the ledger says DONE with {code}, but the account system answered {first}"
        elif status == "FAILED" and calls:
            problem = (f"the ledger says FAILED (definitely not sent), but the account system received it "
                       f"{len(calls)} time(s) and debited it {debits} time(s)")
        if problem:
            out.append(Verdict("ledger-agrees", guid, problem, f.events_for(guid), f.call_seqs(guid)))
    return out


def transitions(f: Facts) -> list[Verdict]:
    """Between consecutive snapshots, each row moves only along the contract's transitions."""
    out, flagged = [], set()
    for before, after in zip(f.snapshots, f.snapshots[1:]):
        kind = after.value.get("kind")
        rows0, rows1 = before.value["rows"], after.value["rows"]
        for guid in sorted(set(rows0) | set(rows1)):
            s0 = rows0.get(guid, {}).get("status")
            s1 = rows1.get(guid, {}).get("status")
            if s0 == s1 or guid in flagged:
                continue
            allowed = set(ANY_STEP.get(s0, set()))
            if kind == "resolve":
                allowed |= BY_RESOLVE.get(s0, set())
            if kind == "purge" and s0 == "DONE":
                allowed.add(None)
            if s1 not in allowed:
                flagged.add(guid)
                via = f"during step {after.value.get('after_step')} ({kind})"
                what = "deleted" if s1 is None else f"moved to {s1}"
                out.append(Verdict("transitions", guid, f"the ledger row went from {s0} and was {what} {via}; "
                                   f"the contract allows {s0} → {', '.join(sorted(map(str, allowed))) or 'nothing'} "
                                   "there", f.events_for(guid) + (before.index, after.index), f.call_seqs(guid)))
    return out


def converged(f: Facts) -> list[Verdict]:
    return [Verdict("converged", guid, f"after the final heal, resolve and reprocess the row is still {row['status']}",
                    f.events_for(guid), f.call_seqs(guid))
            for guid, row in sorted(f.final_rows.items()) if row.get("status") in UNDECIDED]


def _batch_windows(f: Facts, command: str):
    """(batch, wall time it ended, ledger rows just before it, just after it) for each finished run."""
    for b in f.batches:
        if b.command != command or b.argument is None or b.end is None:
            continue
        before = [s for s in f.snapshots if s.index < b.invoke.index]
        after = [s for s in f.snapshots if s.index > b.end.index]
        if before and after:
            yield b, b.end.value.get("wall", b.wall), before[-1].value["rows"], after[0].value["rows"]


def purge_retention(f: Facts) -> list[Verdict]:
    out = []
    for b, end_wall, rows0, rows1 in _batch_windows(f, "purge"):
        for guid, row in rows0.items():
            age = end_wall - row["updated_at"]
            if guid not in rows1 and row.get("status") == "DONE" and age < b.argument - CLOCK_SLACK_S:
                out.append(Verdict("purge-retention", guid, f"purge --retention {b.argument:g} deleted this DONE row "
                                   f"when it was only {age:.2f} s old", f.events_for(guid), f.call_seqs(guid)))
    return out


def resolve_min_age(f: Facts) -> list[Verdict]:
    out = []
    for b, end_wall, rows0, rows1 in _batch_windows(f, "resolve"):
        for guid, row in rows0.items():
            new = rows1.get(guid, {}).get("status")
            age = end_wall - row["updated_at"]
            if row.get("status") == "UNKNOWN" and new != "UNKNOWN" and age < b.argument - CLOCK_SLACK_S:
                out.append(Verdict("resolve-min-age", guid, f"resolve --min-age {b.argument:g} settled this UNKNOWN "
                                   f"row as {new} when it was only {age:.2f} s old; the account system may still "
                                   "have been processing it", f.events_for(guid), f.call_seqs(guid)))
    return out


def attempt_cap(f: Facts) -> list[Verdict]:
    out = []
    for b, _, rows0, rows1 in _batch_windows(f, "reprocess"):
        cap = int(b.argument)
        for guid, row in rows0.items():
            later = rows1.get(guid, {})
            resent_by_channel = any(b.invoke.time <= c.invoke.time <= b.end.time for c in f.channel_for(guid))
            if (row.get("status") == "FAILED" and row["attempts"] >= cap and later.get("attempts", 0) > row["attempts"]
                    and not resent_by_channel):
                out.append(Verdict("attempt-cap", guid, f"reprocess --max-attempts {cap} tried this GUID again "
                                   f"although it had already been tried {row['attempts']} time(s) "
                                   f"(attempts went to {later['attempts']})", f.events_for(guid), f.call_seqs(guid)))
    return out


def ledger_schema(f: Facts) -> list[Verdict]:
    out = []
    for e in f.events:
        if e.f == "ledger-schema":
            missing = [c for c in REQUIRED_COLUMNS if c not in e.value.get("columns", [])]
            if missing:
                why = e.value.get("error") or "the table exists"
                out.append(Verdict("ledger-schema", None, f"the ledger at LEDGER_PATH lacks table `ledger` or its "
                                   f"columns {', '.join(missing)} ({why}); contract section 4", (e.index,)))
        elif e.f == "ledger-snapshot" and e.type == "fail":
            out.append(Verdict("ledger-schema", None, f"the ledger could not be read after step "
                               f"{e.value.get('after_step')}: {e.value.get('error')}; contract section 4", (e.index,)))
            break
    return out
