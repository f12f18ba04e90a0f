"""Checkers of the relay's answers: the code table, replay byte for byte, E903 at once, answers in time.

Every expected answer is an `Expectation` citing the contract clause that fixes it;
where the situation does not fix the answer (a resend, a race, a fault in front of
the relay, a call slow enough that the relay may rightly have timed out), nothing
is expected and every answer the contract allows is accepted.
"""

from __future__ import annotations

from dataclasses import dataclass

from relaychaos.checkers.calls import ChannelCall
from relaychaos.checkers.facts import ANY_DEFINITE, DEFINITE, Facts
from relaychaos.checkers.rulebook import rule
from relaychaos.checkers.verdict import Verdict
from relaychaos.contract import clause
from relaychaos.events import Op


@dataclass(frozen=True)
class Expectation:
    """The codes the contract allows for one call, the clause that says so, and why it applies."""

    codes: frozenset[str]
    clause: str
    why: str

    def __post_init__(self) -> None:
        clause(self.clause)  # a citation must name a real clause

    @property
    def http(self) -> int:
        return 400 if self.codes == {"E400"} else 200

    def allows(self, c: ChannelCall) -> bool:
        return c.code in self.codes and c.status == self.http


@rule(
    "done-replay",
    "resends of a DONE GUID get its first answer, byte for byte",
    contract=("3.done-replay", "5.resolve-found"),
    needs=("answers",),
)
def done_replay(facts: Facts) -> list[Verdict]:
    """Every definite answer for a GUID is the first one, byte for byte."""
    out = []
    for guid in facts.channel_guids:
        answers = [c for c in facts.channel_for(guid) if c.code in ANY_DEFINITE]
        if not answers:
            continue
        first = answers[0]
        for c in answers[1:]:
            if c.body != first.body:
                out.append(
                    Verdict(
                        "done-replay",
                        guid,
                        f"a resend of a DONE GUID was answered {c.body!r}, "
                        f"but the first answer was {first.body!r}; a DONE answer is replayed byte for byte",
                        first.events + c.events,
                        facts.call_seqs(guid),
                        clause="3.done-replay",
                    )
                )
                break
    return out


@rule(
    "e903-at-once",
    "a duplicate of a GUID being sent gets E903 at once, without waiting",
    contract=("3.e903",),
    needs=("contract-codes",),
)
def e903_at_once(facts: Facts) -> list[Verdict]:
    """A duplicate that reached the relay while its GUID was certainly being sent gets E903 at once."""
    tol = facts.tolerances
    for guid in facts.channel_guids:
        chan = facts.channel_for(guid)
        for call in facts.calls_for(guid):
            claimants = [c for c in chan if c.invoked_at <= call["received_at"]]
            if not claimants:
                continue
            deadline = claimants[-1].invoked_at + facts.timeout_ms / 1000  # the relay cannot give up before this
            answered = call.get("answered_at") or float("inf")
            for d in chan:
                if (
                    d is claimants[-1]
                    or not d.answered
                    or not d.timing_judged
                    or d.request != facts.channel_guids[guid]
                ):
                    continue
                t, done = d.sent_at, d.completed_at
                assert t is not None and done is not None  # timing_judged: sent and completed
                if (
                    not call["received_at"] < t
                    or t + tol.e903_window_s >= min(answered, deadline)
                    or facts.hub_disturbed(d.invoked_at, done)
                ):
                    continue
                took = done - t
                # at once: within e903_at_once_s, or well before what waiting would have taken (a slow machine)
                limit = max(tol.e903_at_once_s, tol.e903_wait_share * (min(answered, deadline) - t))
                if d.code != "E903" or took > limit:
                    return [
                        Verdict(
                            "e903-at-once",
                            guid,
                            f"a duplicate reached the relay while this GUID was being "
                            f"sent, and was answered {d.code} after {took:.3f} s; it should get E903 within "
                            f"{round(limit, 3):g} s, without waiting for the account system",
                            facts.events_for(guid),
                            facts.call_seqs(guid),
                            clause="3.e903",
                        )
                    ]
    return []


def expected(facts: Facts, c: ChannelCall, earlier: bool) -> Expectation | None:
    """What the contract fixes as the answer to this call, or None where it fixes nothing; `earlier`: whether
    the channel sent this request for this GUID before."""
    if c.malformed:
        return Expectation(frozenset({"E400"}), "3.malformed", "a malformed request")
    first_request = facts.channel_guids.get(c.guid) if c.guid is not None else None
    if c.request != first_request:
        return Expectation(frozenset({"E904"}), "3.e904", "a GUID already used for a different request")
    if earlier or _overlapping(facts, c):
        return None  # a resend, or racing another call of the GUID: which one claims it is not fixed
    faults = facts.faults_at(c.invoked_at)
    if faults.channel_side:
        return None
    if faults.account_down:
        return Expectation(
            frozenset({"E902"}),
            "3.refused",
            "a first send while the account system's address refused connections (proxy down)",
        )
    toxics = faults.account_toxics
    tol = facts.tolerances
    for t in toxics:
        a = t.get("attributes", {})
        if (
            t["kind"] == "timeout"
            or (t["kind"] == "latency" and a.get("latency", 0) > tol.certain_timeout_factor * facts.timeout_ms)
            or (t["kind"] == "limit_data" and t["stream"] == "downstream")
        ):
            return Expectation(
                frozenset({"E901"}),
                "3.in-doubt",
                f"a first send whose answer could not come back ({t['kind']} toxic, {t['stream']})",
            )
    end = c.completed_at if c.completed_at is not None else c.invoked_at
    if end - c.invoked_at >= facts.timeout_ms / 1000:
        return None  # slow enough that the relay may rightly have timed out on a busy machine
    disturbed = (
        toxics
        or c.guid in faults.held
        or faults.delay_ms > tol.disturbing_delay_factor * facts.timeout_ms
        or facts.happened("disturbing", c.invoked_at, end)
    )
    if not disturbed:
        return Expectation(
            frozenset(DEFINITE),
            "3.definite",
            "a first send of a new GUID with no fault anywhere (the account system's own answer)",
        )
    return None


def _overlapping(facts: Facts, c: ChannelCall) -> bool:
    """Whether another channel call of the same GUID was in flight at some moment of this one."""
    end = c.completed_at if c.completed_at is not None else float("inf")
    for d in facts.channel_for(c.guid):
        if d is not c and d.invoked_at < end and (d.completed_at is None or d.completed_at > c.invoked_at):
            return True
    return False


def _extra_fields_refused(c: ChannelCall) -> bool:
    """A body whose only fault is fields beyond the four, answered E400: allowed either way (v1.1)."""
    return bool(c.extra_fields) and c.code == "E400" and c.status == 400


@rule(
    "answer-codes",
    "the relay's answer codes follow the contract's table",
    contract=("3.malformed", "3.e904", "3.definite", "3.refused", "3.in-doubt", "3.unknown"),
    needs=("contract-codes",),
)
def answer_codes(facts: Facts) -> list[Verdict]:
    """Answers follow the contract's table where the situation fixes the code."""
    out = []
    seen: dict[str, list[dict | None]] = {}  # GUID -> the distinct requests sent for it so far
    for c in facts.channel:
        requests = seen.setdefault(str(c.guid), [])
        earlier = any(r == c.request for r in requests)
        if not earlier:
            requests.append(c.request)
        want = expected(facts, c, earlier)
        if not c.answered or want is None or want.allows(c) or _extra_fields_refused(c):
            continue
        shown = "one of " + "/".join(sorted(want.codes)) if len(want.codes) > 1 else next(iter(want.codes))
        out.append(
            Verdict(
                "answer-codes",
                c.guid,
                f"the relay answered HTTP {c.status} {c.code}, but for {want.why} "
                f"the contract says HTTP {want.http} {shown}",
                facts.events_for(c.guid) if c.guid else c.events,
                facts.call_seqs(c.guid) if c.guid else (),
                clause=want.clause,
            )
        )
    return out


@rule(
    "answered-in-time",
    "the relay answers within ACCOUNT_TIMEOUT_MS + 1 s of the request reaching it",
    contract=("3.in-time",),
)
def answered_in_time(facts: Facts) -> list[Verdict]:
    """With no fault in front of the relay, it answers within ACCOUNT_TIMEOUT_MS + 1 s of the request reaching it.

    Time is counted from the moment the request was written on an established
    connection; calls whose connection needed retransmits (an overflowing accept
    queue) are reported as notes, not judged. A channel that gave up before the
    limit has passed proves nothing.
    """
    tol = facts.tolerances
    limit = tol.answer_limit_s(facts.timeout_ms)
    for c in facts.channel:
        if not c.timing_judged:
            continue
        t0, t1 = c.sent_at, c.completed_at
        assert t0 is not None and t1 is not None  # timing_judged: sent and completed
        if facts.hub_disturbed(c.invoked_at, t1):
            continue
        if facts.happened(Op.KILL, t0, t1) or facts.happened(Op.HEAL, t0, t1):
            continue
        if t1 - t0 > limit + tol.answer_slack_s:
            how = "to answer" if c.answered else "and had not answered when the channel gave up"
            return [
                Verdict(
                    "answered-in-time",
                    c.guid,
                    f"the relay took {t1 - t0:.2f} s {how}, counted from the "
                    f"request reaching it; it must answer within ACCOUNT_TIMEOUT_MS + 1 s = {limit:g} s",
                    c.events,
                    clause="3.in-time",
                )
            ]
    return []


def accept_notes(facts: Facts) -> list[str]:
    """Notes on the relay that are not verdicts: connections its accept queue made wait (contract §3, v1.1)."""
    delayed = [c for c in facts.channel if c.delayed_accept]
    if not delayed:
        return []
    widest = max((c.race or 1) for c in delayed)
    retrans = sorted(c.retransmits for c in delayed if c.retransmits)  # every one (delayed_accept)
    waits = sorted(c.sent_at - c.invoked_at for c in delayed if c.sent_at is not None)
    slowest = f"; the longest wait for the relay to take a request was {waits[-1]:.2f} s" if waits else ""
    burst = f"under {widest} simultaneous connections" if widest > 1 else "on a single connection"
    return [
        f"its accept queue overflowed {burst}: {len(delayed)} request(s) needed TCP retransmits "
        f"({retrans[0]}-{retrans[-1]} each, ~1 s apart){slowest}; this time was reported, not judged "
        f"({clause('3.accept-wait').cite()})"
    ]
