"""Checkers of the relay's answers and interface: the code table, replay byte for byte, E903 at once,
answers in time, and the commands the contract says must run."""
from __future__ import annotations

import json

from ..verdict import Verdict
from .facts import DEFINITE, KNOWN_CODES, ChannelCall, Facts

E903_WINDOW_S = 0.5  # the row is certainly SENT for this long after a duplicate arrives...
E903_AT_ONCE_S = 0.25  # ...and the duplicate must be answered within this


def done_replay(f: Facts) -> list[Verdict]:
    """Every definite answer for a GUID is the first one, byte for byte."""
    out = []
    for guid in f.channel_guids:
        answers = [c for c in f.channel_for(guid) if c.code in DEFINITE]
        first = answers[0] if answers else None
        for c in answers[1:]:
            if c.body != first.body:
                out.append(Verdict("done-replay", guid, f"a resend of a DONE GUID was answered {c.body!r}, "
                                   f"but the first answer was {first.body!r}; a DONE answer is replayed byte for byte",
                                   first.events + c.events, f.call_seqs(guid)))
                break
    return out


def e903_at_once(f: Facts) -> list[Verdict]:
    """A duplicate that arrives while its GUID is certainly being sent gets E903 at once."""
    out = []
    timeout_s = f.scenario.get("account_timeout_ms", 0) / 1000
    for guid in f.channel_guids:
        chan = f.channel_for(guid)
        for call in f.calls_for(guid):
            claimants = [c for c in chan if c.invoke.time <= call["received_at"]]
            if not claimants:
                continue
            deadline = claimants[-1].invoke.time + timeout_s  # the relay cannot give up before this
            answered = call.get("answered_at") or float("inf")
            for d in chan:
                t = d.invoke.time
                if d is claimants[-1] or not d.answered or not (call["received_at"] < t):
                    continue
                if t + E903_WINDOW_S < min(answered, deadline):
                    took = d.completion.time - t
                    if d.code != "E903" or took > E903_AT_ONCE_S:
                        out.append(Verdict("e903-at-once", guid, f"a duplicate arrived while this GUID was being "
                                           f"sent, and was answered {d.code} after {took:.3f} s; it should get E903 "
                                           f"within {E903_AT_ONCE_S} s, without waiting for the account system",
                                           f.events_for(guid), f.call_seqs(guid)))
                        return out
    return out


def _expected(f: Facts, c: ChannelCall, earlier: list[ChannelCall]) -> tuple[set[str], str] | None:
    """(codes allowed, why) where the contract fixes the answer to this call, else None."""
    if c.raw is not None:
        return {"E400"}, "a malformed request"
    first_request = f.channel_guids.get(c.guid)
    if c.request != first_request:
        return {"E904"}, "its GUID was already used for a different request"
    if earlier or _overlapping(f, c):
        return None  # a resend, or racing another call of the GUID: which one claims it is not fixed
    faults = f.faults_at(c.invoke.time)
    if any(p.startswith("hub-") for p in list(faults["toxics"]) + list(faults["disabled"])):
        return None
    if "account" in faults["disabled"]:
        return {"E902"}, "the account system's address refused the connection (proxy down), so nothing was sent"
    toxics = faults["toxics"].get("account", {})
    timeout_ms = f.scenario.get("account_timeout_ms", 0)
    for t in toxics.values():
        a = t.get("attributes", {})
        if t["kind"] == "timeout" or (t["kind"] == "latency" and a.get("latency", 0) > 2 * timeout_ms) or \
                (t["kind"] == "limit_data" and t["stream"] == "downstream"):
            return {"E901"}, f"the account system's answer could not come back ({t['kind']} toxic, {t['stream']})"
    end = c.completion.time if c.completion else c.invoke.time
    if end - c.invoke.time >= timeout_ms / 1000:
        return None  # slow enough that the relay may rightly have timed out on a busy machine
    disturbed = toxics or c.guid in faults["held"] or faults["delay_ms"] > timeout_ms / 2 or any(
        e.f in ("kill", "server-fault", "add-toxic", "disable-proxy") and c.invoke.time <= e.time <= end
        for e in f.events)
    if not disturbed:
        return DEFINITE, "a first send of a new GUID with no fault anywhere (the account system's own answer)"
    return None


def _overlapping(f: Facts, c: ChannelCall) -> bool:
    """Whether another channel call of the same GUID was in flight at some moment of this one."""
    end = c.completion.time if c.completion else float("inf")
    for d in f.channel_for(c.guid):
        if d is not c and d.invoke.time < end and (d.completion is None or d.completion.time > c.invoke.time):
            return True
    return False


def answer_codes(f: Facts) -> list[Verdict]:
    """Answers follow the contract's table where the situation fixes the code."""
    out = []
    seen: dict[str, list[ChannelCall]] = {}
    for c in f.channel:
        earlier = seen.setdefault(str(c.guid), [])
        want = _expected(f, c, [e for e in earlier if e.request == c.request])
        earlier.append(c)
        if not c.answered or want is None:
            continue
        codes, why = want
        http = 400 if codes == {"E400"} else 200
        if c.code not in codes or c.status != http:
            shown = "one of " + "/".join(sorted(codes)) if len(codes) > 1 else next(iter(codes))
            out.append(Verdict("answer-codes", c.guid, f"the relay answered HTTP {c.status} {c.code}, but for {why} "
                               f"the contract says HTTP {http} {shown}", f.events_for(c.guid) if c.guid else c.events,
                               f.call_seqs(c.guid) if c.guid else ()))
    return out


def interface(f: Facts) -> list[Verdict]:
    """Every answer is HTTP 200 (400 for E400) with a JSON object holding guid and a known code."""
    out = []
    for c in f.channel:
        if not c.answered:
            continue
        problem = None
        try:
            body = json.loads(c.body or "")
        except ValueError:
            body = None
        if not isinstance(body, dict):
            problem = f"the answer is not a JSON object: {str(c.body)[:80]!r}"
        elif "code" not in body or "guid" not in body:
            problem = f"the answer lacks {'code' if 'code' not in body else 'guid'}: {c.body[:80]!r}"
        elif body["code"] not in KNOWN_CODES:
            problem = f"the answer's code {body['code']!r} is not one of the contract's"
        elif c.status != (400 if body["code"] == "E400" else 200):
            problem = f"code {body['code']} came with HTTP {c.status}"
        if problem:
            out.append(Verdict("interface", c.guid, problem + "; contract section 3", c.events))
            break
    return out


def answered_in_time(f: Facts) -> list[Verdict]:
    """With no fault in front of the relay, it answers within ACCOUNT_TIMEOUT_MS + 1 s."""
    limit = f.scenario.get("account_timeout_ms", 0) / 1000 + 1.0
    kills = [e.time for e in f.events if e.f == "kill"]
    for c in f.channel:
        if c.completion is None:
            continue
        t0, t1 = c.invoke.time, c.completion.time
        faults = f.faults_at(t0)
        if any(p.startswith("hub-") for p in list(faults["toxics"]) + list(faults["disabled"])):
            continue
        if any(t0 <= k <= t1 for k in kills) or any(e.f == "heal" and t0 <= e.time <= t1 for e in f.events):
            continue
        late = t1 - t0 > limit + 0.25 if c.answered else "no answer within" in str(c.completion.value.get("error"))
        if late:
            return [Verdict("answered-in-time", c.guid, f"the relay took {t1 - t0:.2f} s "
                            f"{'to answer' if c.answered else 'and never answered'}; it must answer within "
                            f"ACCOUNT_TIMEOUT_MS + 1 s = {limit:g} s", c.events)]
    return []


def batch_runs(f: Facts) -> list[Verdict]:
    out = []
    for b in f.batches:
        rc = b.end.value.get("returncode") if b.end else None
        if b.end is None or rc != 0:
            how = "was killed at its time limit" if b.end and rc is None else f"exited with status {rc}"
            out.append(Verdict("batch-runs", None, f"`{' '.join(b.invoke.value.get('argv', []))}` {how}; a batch "
                               "command exits 0 when it ran through (contract section 1)",
                               (b.invoke.index,) + ((b.end.index,) if b.end else ())))
    return out


def serve_ready(f: Facts) -> list[Verdict]:
    for e in f.events:
        if e.f == "step" and e.type == "fail":
            return [Verdict("serve-ready", None, f"step {e.value.get('step')} failed: "
                            f"{str(e.value.get('error')).splitlines()[0]}", (e.index,),
                            details={"error": e.value.get("error")})]
    return []
