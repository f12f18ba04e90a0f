"""Checkers of the relay's answers: the code table, replay byte for byte, E903 at once, answers in time.

Every expected answer is an `Expectation` citing the contract clause that fixes it;
where the situation does not fix the answer (a resend, a race, a fault in front of
the relay, a call slow enough that the relay may rightly have timed out), nothing
is expected and every answer the contract allows is accepted.

A keyed service (the idempotency-key profile) is judged by the same situations and its own
table (relaychaos.idempotency_key: the channel recorded its statuses in the contract's words):
409 for a duplicate of a key in flight, 422 only for a key reused with another payload, 400
for a malformed request, 2xx or another 4xx where the contract fixes a definite answer, and
5xx where it fixes E901; its verdicts name the key, the status and the PSP.
"""

from __future__ import annotations

from dataclasses import dataclass

from relaychaos import idempotency_key
from relaychaos.checkers.calls import ChannelCall
from relaychaos.checkers.facts import ANY_DEFINITE, DEFINITE, Facts
from relaychaos.checkers.rulebook import rule
from relaychaos.checkers.verdict import Verdict
from relaychaos.contract import clause
from relaychaos.events import REFUSED, Op

KEYED = "idempotency-key"  # the profile whose answers are HTTP statuses (relaychaos.idempotency_key)
KEYED_WORDS = frozenset(word for _, _, word, _ in idempotency_key.ANSWERS)  # what a keyed answer can be read as


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

    def allows(self, c: ChannelCall, keyed: bool = False) -> bool:
        """Whether the answer is one of these codes (a keyed service: its status carries one, by its table)."""
        return c.code in self.codes and (keyed or c.status == self.http)

    def shown(self, keyed: bool) -> str:
        """The answers allowed, as the profile's table names them."""
        if keyed:
            return idempotency_key.statuses(self.codes)
        codes = "one of " + "/".join(sorted(self.codes)) if len(self.codes) > 1 else next(iter(self.codes))
        return f"HTTP {self.http} {codes}"


@rule(
    "done-replay",
    "resends of a DONE GUID get its first answer, byte for byte",
    contract=("3.done-replay", "5.resolve-found"),
    needs=("answers",),
)
def done_replay(facts: Facts) -> list[Verdict]:
    """Every definite answer for a GUID is the first one, byte for byte: its body and its HTTP status (Stripe:
    "saving the resulting status code and body of the first request")."""
    out = []
    for guid in facts.channel_guids:
        answers = [c for c in facts.channel_for(guid) if c.code in ANY_DEFINITE]
        if not answers:
            continue
        first = answers[0]
        for c in answers[1:]:
            if (c.status, c.body) != (first.status, first.body):
                out.append(
                    Verdict(
                        "done-replay",
                        guid,
                        f"a resend of a DONE GUID was answered HTTP {c.status} {c.body!r}, "
                        f"but the first answer was HTTP {first.status} {first.body!r}; a DONE answer is replayed "
                        "byte for byte, its status too",
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
    needs=("answers",),
)
def e903_at_once(facts: Facts) -> list[Verdict]:
    """A duplicate that reached the relay while its GUID was certainly being sent gets E903 at once.

    "At once" is within e903_at_once_s, or within e903_wait_share of what waiting would have
    taken: until the account system answered the call, or, while the harness held the call
    (which it releases only once the duplicates have their answers), until the relay's time-out.
    A keyed service's in-flight answer is 409 (the IETF draft), read as E903. A duplicate the
    relay did not answer before the channel gave up waited too, unless the relay was killed
    meanwhile. An E903 the channel had before the account system answered the call did not wait for
    it, however long a loaded machine took to answer a burst of copies.
    """
    tol = facts.tolerances
    keyed = facts.header.profile == KEYED
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
                    or not (d.answered or d.end_type == "info")
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
                # at once: within e903_at_once_s, or well before what waiting would have taken (a slow machine):
                # until the account system's answer, or, while the harness holds the call (and releases it only
                # once the duplicates are answered), until the relay's own time-out
                held = guid in facts.faults_at(done).held
                limit = max(
                    tol.e903_at_once_s, tol.e903_wait_share * ((deadline if held else min(answered, deadline)) - t)
                )
                if not d.answered and (took <= limit or facts.happened(Op.KILL, t, done)):
                    continue  # cut off early (not a wait), or the relay was killed meanwhile
                if not held and d.answered and d.code == "E903" and done < answered:
                    continue  # its E903 came back before the account system answered: it did not wait for it
                    # (a loaded machine queues a burst of copies; a relay that waits answers after the call)
                if d.code != "E903" or took > limit:
                    return [_waited(facts, guid, d, took, limit, keyed)]
    return []


def _waited(facts: Facts, guid: str, d: ChannelCall, took: float, limit: float, keyed: bool) -> Verdict:
    """The e903-at-once verdict on a duplicate `d`, in its profile's words."""
    at_once = f"{round(limit, 3):g} s"
    if keyed:
        how = f"was answered HTTP {d.status}" if d.answered else "had no answer when the channel gave up"
        text = (
            f"a duplicate reached the service while this key's PSP call was in flight, and {how} after "
            f"{took:.3f} s; it should get 409 within {at_once}, without waiting for the PSP"
        )
    else:
        how = f"was answered {d.code}" if d.answered else "had no answer when the channel gave up"
        text = (
            f"a duplicate reached the relay while this GUID was being sent, and {how} after {took:.3f} s; "
            f"it should get E903 within {at_once}, without waiting for the account system"
        )
    return Verdict("e903-at-once", guid, text, facts.events_for(guid), facts.call_seqs(guid), clause="3.e903")


def expected(facts: Facts, c: ChannelCall, earlier: bool) -> Expectation | None:
    """What the contract fixes as the answer to this call, or None where it fixes nothing; `earlier`: whether
    the channel sent this request for this GUID before. A keyed service's: `expected_keyed`."""
    if c.malformed:
        return Expectation(frozenset({"E400"}), "3.malformed", "a malformed request")
    first_request = facts.channel_guids.get(c.guid) if c.guid is not None else None
    if c.request != first_request:
        return Expectation(frozenset({"E904"}), "3.e904", "a GUID already used for a different request")
    if earlier or _overlapping(facts, c):
        return None  # a resend, or racing another call of the GUID: which one claims it is not fixed
    return _first_send(facts, c)


def expected_keyed(facts: Facts, c: ChannelCall, earlier: bool) -> Expectation:
    """What a keyed service's table allows as the answer to this call, in the contract's words (its statuses
    read by relaychaos.idempotency_key): where the situation fixes no answer, any but 422, which is only for a
    key reused with another payload."""
    if c.malformed:
        return Expectation(
            frozenset({"E400"}),
            "3.malformed",
            "a malformed request (no key, a body that is not a JSON object, a missing field or a wrong value)",
        )
    first_request = facts.channel_guids.get(c.guid) if c.guid is not None else None
    if c.request != first_request:
        # while the key's first request is in flight, 409 says as truly that nothing new was done
        codes = {"E904", "E903"} if _overlapping(facts, c) else {"E904"}
        return Expectation(frozenset(codes), "3.e904", "a key already used with another payload")
    not_reused = Expectation(KEYED_WORDS - {"E904"}, "3.e904", "a request with its key's first payload")
    if earlier or _overlapping(facts, c):
        return not_reused
    fixed = _first_send(facts, c)
    if fixed is None:
        return not_reused
    if fixed.codes == {"E902"}:  # the table has no "definitely not sent": unknown, or refused and replayed
        return Expectation(frozenset({"E901", REFUSED}), "3.refused", fixed.why.replace("account system", "PSP"))
    if fixed.codes == {"E901"}:
        return Expectation(fixed.codes, "3.in-doubt", fixed.why)
    codes = {"0000", REFUSED}
    if any(a.get("code") == "E500" for a in facts.calls_for(str(c.guid))):
        codes.add("E901")  # the PSP's 500: whether it executed, a service cannot know
    return Expectation(frozenset(codes), "3.definite", "a first send of a new key with no fault anywhere")


def _first_send(facts: Facts, c: ChannelCall) -> Expectation | None:
    """What the contract fixes for a first send of a new GUID, by the faults in force, or None."""
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
    "the relay's answer codes follow the contract's table (a keyed service: its profile's table)",
    contract=("3.malformed", "3.e904", "3.definite", "3.refused", "3.in-doubt", "3.unknown"),
    needs=("answers",),
)
def answer_codes(facts: Facts) -> list[Verdict]:
    """Answers follow the contract's table where the situation fixes the code; a keyed service's follow its
    profile's table, and a 2xx (executed) comes only once the PSP executed a call of the key."""
    keyed = facts.header.profile == KEYED
    out = []
    seen: dict[str, list[dict | None]] = {}  # GUID -> the distinct requests sent for it so far
    for c in facts.channel:
        requests = seen.setdefault(str(c.guid), [])
        earlier = any(r == c.request for r in requests)
        if not earlier:
            requests.append(c.request)
        if not c.answered or _extra_fields_refused(c):
            continue
        if keyed and c.code == "0000" and facts.has_stats and not _executed_before(facts, c):
            out.append(_never_executed(facts, c))
            continue
        want = expected_keyed(facts, c, earlier) if keyed else expected(facts, c, earlier)
        if want is None or want.allows(c, keyed):
            continue
        if keyed:
            text = (
                f"the service answered HTTP {c.status}, but for {want.why} {idempotency_key.SOURCE} "
                f"allows {want.shown(keyed)}"
            )
        else:
            text = (
                f"the relay answered HTTP {c.status} {c.code}, but for {want.why} the contract says {want.shown(keyed)}"
            )
        out.append(
            Verdict(
                "answer-codes",
                c.guid,
                text,
                facts.events_for(c.guid) if c.guid else c.events,
                facts.call_seqs(c.guid) if c.guid else (),
                clause=want.clause,
            )
        )
    return out


def _executed_before(facts: Facts, c: ChannelCall) -> bool:
    """Whether the account system had received a call of this call's GUID that it applied, before the answer."""
    end = c.completed_at if c.completed_at is not None else float("inf")
    return any(a.get("applied") and a["received_at"] <= end for a in facts.calls_for(str(c.guid)))


def _never_executed(facts: Facts, c: ChannelCall) -> Verdict:
    """A keyed service's 2xx for a key the PSP had not executed: the payment never happened."""
    sent = facts.calls_for(str(c.guid))
    what = f"none of its {len(sent)} PSP call(s) was executed" if sent else "no PSP call of this key was ever made"
    return Verdict(
        "answer-codes",
        c.guid,
        f"the service answered HTTP {c.status} (executed), but when it answered {what}; a 2xx says the payment "
        f"executed ({idempotency_key.SOURCE})",
        facts.events_for(str(c.guid)),
        facts.call_seqs(str(c.guid)),
        clause="3.definite",
    )


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
