"""Whether a run's faults met the transfers they were aimed at: each landing claim judged on the history alone.

    landings = judge(history)        # [Landing(claim, status, why, events), ...]

The claims come from the history's header (relaychaos.checkers.claims, recorded by the runner), and
every wait step adds its own (what it waited for happened). Each is LANDED, MISSED or UNKNOWN (the
history lacks what the claim reads: an unreadable ledger, say, or a claim whose judge raised, as
check-safe): a pure function of the history, like the rules, so `recheck` judges a kept history again.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from relaychaos.checkers import claims as C
from relaychaos.checkers.claim_judges import JUDGES, Run, Unjudgeable
from relaychaos.checkers.facts import Facts
from relaychaos.checkers.rulebook import CAPABILITIES, RENAMED
from relaychaos.events import Event, Op
from relaychaos.records.base import UNSET

LANDED, MISSED, UNKNOWN = "LANDED", "MISSED", "UNKNOWN"
NOT_APPLICABLE = "N/A"  # the claim reads what this relay does not offer (CAPABILITIES): neither landed nor missed


@dataclass(frozen=True)
class Landing:
    """One claim's outcome: `claim` its text, `kind` its name, `status` LANDED, MISSED or UNKNOWN, `why` what the
    history shows, `events` the history indices that show it."""

    claim: str
    kind: str
    status: str
    why: str
    events: tuple[int, ...] = ()

    @property
    def landed(self) -> bool:
        return self.status == LANDED

    @property
    def missed(self) -> bool:
        """MISSED or UNKNOWN: the run cannot show that the fault met its transfer."""
        return self.status in (MISSED, UNKNOWN)

    def to_dict(self) -> dict:
        return {"claim": self.claim, "kind": self.kind, "status": self.status, "why": self.why, "events": self.events}


# What a claim reads beyond the money and the account system's record (relaychaos.checkers.CAPABILITIES): on a
# relay that does not offer it the claim is not applicable (a keyed service's own ledger table, say).
NEEDS: dict[type, tuple[str, ...]] = {
    C.KilledBeforeCall: ("ledger-status",),
    C.Queried: ("batch-command",),
    C.HeldThrough: ("batch-command",),
    C.BatchMet: ("ledger-times", "batch-command"),
    C.AttemptsAtCap: ("ledger-attempts", "reprocess"),
}


def needs(claim: C.Claim) -> tuple[str, ...]:
    """What the claim reads of the relay: a batch's rows by status alone need no times (`older=None`)."""
    if isinstance(claim, C.BatchMet) and claim.older is None:
        return ("ledger-status", "batch-command")
    return NEEDS.get(type(claim), ())


if set(JUDGES) != set(C.CLAIM_KINDS.values()):
    raise ImportError("every claim kind needs its judge in relaychaos.checkers.landing.JUDGES")


def judge(history: Iterable[Event] | Facts) -> list[Landing]:
    """Every claim of the history's header, and every wait's, judged; [] when the scenario claims nothing."""
    facts = history if isinstance(history, Facts) else Facts(history)
    run = Run(facts)
    out = [_waited(run, e) for e in run.events if e.f in (Op.WAIT_CALLS, Op.WAIT_ROW) and e.process == "runner"]
    for raw in facts.header.claims if facts.header.claims is not UNSET else []:
        try:
            claim = C.from_dict(raw)
        except ValueError as e:
            out.append(Landing(str(raw), str(raw.get("claim")), UNKNOWN, f"the claim cannot be read: {e}"))
            continue
        lacking = _lacking(facts, needs(claim)) or _never_shown(facts, claim)
        if lacking:
            out.append(Landing(claim.text(), C.KIND_OF[type(claim)], NOT_APPLICABLE, lacking))
        else:
            out.append(_judged(run, claim))
    return out


def _lacking(facts: Facts, needs: tuple[str, ...]) -> str:
    """Why a claim needing `needs` cannot apply to the history's relay ('' when it can): its header's `provides`
    lacks one (a ledger whose snapshots showed the contract's rows is read, whatever the header says)."""
    provides = facts.header.provides
    if provides is UNSET:
        return ""
    offered = set(provides).union(*(RENAMED.get(n, ()) for n in provides))  # an older history's names too
    shown = {"ledger-times": _rows_with(facts, "updated_at"), "ledger-attempts": _rows_with(facts, "attempts")}
    lacking = [n for n in needs if n not in offered and not shown.get(n)]
    return "; and ".join(
        f"not applicable: the claim reads {CAPABILITIES[n].reads}: {CAPABILITIES[n].missing}" for n in lacking
    )


def _never_shown(facts: Facts, claim: C.Claim) -> str:
    """Why a claim on rows of a status the relay's ledger never shows cannot apply ('' when it can): a service whose
    [ledger] statuses map none of its values to FAILED has no row a purge could wrongly delete as FAILED."""
    shown = facts.header.statuses
    if shown is UNSET or not isinstance(claim, C.BatchMet) or any(s in shown for s in claim.statuses):
        return ""
    return (
        f"not applicable: the relay's ledger has no {' or '.join(claim.statuses)} row ([ledger] statuses maps "
        f"none of its values to {' or '.join(claim.statuses)})"
    )


def _rows_with(facts: Facts, column: str) -> bool:
    """Whether some snapshot showed a row with the contract's `column` (a course relay's table, or a service's
    with [ledger] mapping it)."""
    return any(column in row for s in facts.snapshots for row in s.value["rows"].values())


def _judged(run: Run, claim: C.Claim) -> Landing:
    kind = C.KIND_OF[type(claim)]
    try:
        landed, why, events = JUDGES[type(claim)](run, claim)
    except Unjudgeable as e:
        return Landing(claim.text(), kind, UNKNOWN, str(e))
    except Exception as e:  # check-safe: a judge's bug leaves its claim unknown, never landed
        return Landing(claim.text(), kind, UNKNOWN, f"the claim's judge raised {type(e).__name__}: {e}")
    return Landing(claim.text(), kind, LANDED if landed else MISSED, why, tuple(sorted(set(events))))


def _waited(run: Run, e: Event) -> Landing:
    v = e.value
    label = run.facts.labels.get(v.get("guid", ""), v.get("guid"))
    if e.f == Op.WAIT_CALLS:
        claim = f"the account system received {v.get('wanted')} call(s) of {label} before the scenario went on"
        got = f"{v.get('calls')} call(s)"
    else:
        claim = f"the ledger showed {label}'s row {v.get('wanted')} before the scenario went on"
        got = f"the row {v.get('status') or 'absent or unreadable'}"
    if e.f == Op.WAIT_ROW and (lacking := _lacking(run.facts, ("ledger-status",))):
        return Landing(claim, "waited", NOT_APPLICABLE, lacking, (e.index,))
    if e.type == "ok":
        return Landing(claim, "waited", LANDED, f"{got} at +{e.time - run.facts.start:.3f} s", (e.index,))
    return Landing(claim, "waited", MISSED, f"the wait gave up with {got}", (e.index,))
