"""The faults that explain what the channel got: fault windows around sends, races, the account system's pace.

    planner = FaultPlanner(account_timeout_ms)
    planner.send(send, calls, label)      # a step, inside the fault window its answer needs
    planner.out                            # the Planned steps so far

| the logs show | the scenario gets |
| E901/E902 for a call the account system received | the answer dropped between it and the relay |
| E901, no call | the request lost on the way (upstream timeout toxic on the account proxy) |
| E902, no call | the account proxy disabled |
| `timeout` for an applied call | the relay's answer dropped on its way to the channel (hub proxy) |
| `timeout`, no call | the request never reached the relay (upstream toxic on the hub proxy) |
| resends within 50 ms | a race of as many copies, paced at the account system's median time to answer |
Consecutive sends explained by the same fault share one window. A request the contract calls
malformed (an amount not above 0, a GUID not of its form) is sent as its body, verbatim
(`raw`), as production's client sent it: the relay must answer it E400.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from relaychaos.checkers.calls import classify_body
from relaychaos.engine import steps as S
from relaychaos.incidents.records import AccountLine, ChannelLine, OpLine

SLOW_MS = 50  # an account system taking this long keeps the copies of a burst in flight together
PACE_SHARE = 0.8  # of ACCOUNT_TIMEOUT_MS at most, so a paced call is still answered in time

WHY = {
    "answer-lost": "the account system applied it but the relay never got the answer (dropped between them, or given "
    "after the relay's ACCOUNT_TIMEOUT_MS): the answer is dropped between them",
    "request-lost": "the relay timed out and the account system never saw it: the request was lost on the way",
    "account-down": "refused, and the account system never saw it: the account system could not be reached",
    "channel-answer-lost": "the channel timed out on a call the account system applied: the relay's answer was "
    "dropped on its way to the channel",
    "channel-request-lost": "the channel timed out and the account system never saw it: the request never "
    "reached the relay",
}


@dataclass(frozen=True)
class Planned:
    """One step of the scenario and the log lines it came from."""

    step: S.Step
    comment: str
    sent: tuple[str, ...] = ()  # for a batch run: the labels of the calls it sent
    got: tuple[str, ...] = ()  # for a send or race: what the channel got in production, one answer per copy


@dataclass(frozen=True)
class Unreceived:
    """Sends no relay received (its instance was down): the night says so in a comment, and replays no step."""

    comment: str
    step: None = None


def lines(records: Sequence[ChannelLine | AccountLine | OpLine]) -> str:
    """`channel.csv lines 3-5; account.csv line 9`: where records came from, by file."""
    by_file: dict[str, list[int]] = {}
    for r in records:
        by_file.setdefault(r.file, []).append(r.line)
    parts = []
    for file, found in by_file.items():
        found = sorted(found)
        span = (
            str(found[0])
            if len(found) == 1
            else (
                f"{found[0]}-{found[-1]}"
                if found == list(range(found[0], found[-1] + 1))
                else ", ".join(map(str, found[:12])) + (" ..." if len(found) > 12 else "")
            )
        )
        parts.append(f"{file} line{'s' if len(found) > 1 else ''} {span}")
    return "; ".join(parts)


def _fault(send: ChannelLine, calls: list[AccountLine], timeout_s: float) -> tuple[str, S.Step, S.Step] | None:
    """(window key, the step opening it, the step closing it) that explains this send's answer; None if none.
    `timeout_s`: production's ACCOUNT_TIMEOUT_MS, in seconds."""
    result, applied = send.result, [c for c in calls if c.code == "0000"]
    hub = f"hub-{send.relay}"
    late = [c for c in applied if c.answered_at is not None and c.answered_at - c.at > timeout_s]
    if (result in ("E901", "E902") and calls) or (result == "timeout" and late):
        # the relay got no answer: dropped, or (late) given after the relay had stopped waiting for it
        return (
            "answer-lost",
            S.AddToxic("account", "timeout", name="answer-lost", attributes={"timeout": 0}),
            S.RemoveToxic("account", "answer-lost"),
        )
    if result == "E901":
        return (
            "request-lost",
            S.AddToxic("account", "timeout", stream="upstream", name="request-lost", attributes={"timeout": 0}),
            S.RemoveToxic("account", "request-lost"),
        )
    if result == "E902":
        return ("account-down", S.DisableProxy("account"), S.EnableProxy("account"))
    if result == "timeout" and applied:
        return (
            f"channel-answer-lost-{hub}",
            S.AddToxic(hub, "timeout", name="channel-answer-lost", attributes={"timeout": 0}),
            S.RemoveToxic(hub, "channel-answer-lost"),
        )
    if result == "timeout":
        return (
            f"channel-request-lost-{hub}",
            S.AddToxic(hub, "timeout", stream="upstream", name="channel-request-lost", attributes={"timeout": 0}),
            S.RemoveToxic(hub, "channel-request-lost"),
        )
    return None


def race(group: list[ChannelLine], calls: list[AccountLine], label: str) -> Planned:
    """Resends of one GUID closer than the burst window: one race of as many copies, each to the relay instance it
    reached (split over the slots as the race step splits its copies: one each, in order)."""
    first, answers = group[0], Counter(s.result for s in group)
    relays = tuple(s.relay for s in group)  # each copy to the instance it reached
    slots = relays if len(set(relays)) > 1 else (first.relay,)
    on = f" on relays {', '.join(relays)}" if len(slots) > 1 else ""
    return Planned(
        S.Race(label, n=len(group), amount=first.amount, src=first.src, dst=first.dst, slots=slots),
        f"{lines([*group, *calls])}: {len(group)} sends of {first.guid}{on} within "
        f"{(group[-1].at - first.at) * 1000:.0f} ms (answers: "
        f"{', '.join(f'{c} ×{n}' for c, n in answers.items())}), {len(calls)} account call(s) → they "
        "reached the relay together: a race",
        got=tuple(s.result for s in group),
    )


class FaultPlanner:
    """The steps being planned, with the fault window and the account system's pace in force."""

    def __init__(self, account_timeout_ms: int, production_ms: int | None = None):
        self.account_timeout_ms = account_timeout_ms  # the replay's
        self.production_ms = production_ms if production_ms is not None else account_timeout_ms  # the night's
        self.out: list[Planned | Unreceived] = []
        self.window: tuple[str, S.Step] | None = None  # (key, closing step)
        self.slow: int | None = None  # the account system's processing delay in force, in ms

    def close(self) -> None:
        if self.window:
            self.out.append(Planned(self.window[1], "the fault ends here"))
            self.window = None

    def slow_ms(self, calls: list[AccountLine]) -> int | None:
        """The account system's median time to answer these calls, to 10 ms, if SLOW_MS or more (at most
        PACE_SHARE of ACCOUNT_TIMEOUT_MS); else None."""
        took = sorted((c.answered_at - c.at) * 1000 for c in calls if c.answered_at is not None)
        ms = took[len(took) // 2] if took else 0
        return int(round(min(ms, PACE_SHARE * self.account_timeout_ms), -1)) if ms >= SLOW_MS else None

    def pace(self, ms: int | None, calls: list[AccountLine]) -> None:
        if ms != self.slow and self.slow:
            self.out.append(Planned(S.ServerFault(delay_ms=0), "the account system answers at its usual speed again"))
        if ms and ms != self.slow:
            self.out.append(
                Planned(
                    S.ServerFault(delay_ms=ms),
                    f"{lines(calls)}: the account system took about {ms} "
                    "ms to answer (answered_at - at): its processing is "
                    "delayed as much while the copies are in flight",
                )
            )
        self.slow = ms

    def send(self, send: ChannelLine, calls: list[AccountLine], label: str) -> None:
        """One send, inside the fault window that explains its answer."""
        self.pace(None, [])
        fault = _fault(send, calls, self.production_ms / 1000)
        if (fault[0] if fault else None) != (self.window[0] if self.window else None):
            self.close()
            if fault:
                self.out.append(Planned(fault[1], f"{WHY[fault[0].split('-hub-')[0]]} ({lines([send, *calls])})"))
                self.window = (fault[0], fault[2])
        gave_up = send.result == "timeout"
        step = send_step(label, send, timeout_s=round(self.account_timeout_ms / 1000 + 0.2, 3) if gave_up else None)
        seen = (
            "; account system: "
            + ", ".join(f"{c.where} answered {c.code}" for c in calls[:4])
            + (f" (+{len(calls) - 4})" if len(calls) > 4 else "")
            if calls
            else "; the account system has no call for it"
        )
        self.out.append(
            Planned(
                step,
                f"{send.where}: {send.guid} ({label}) {send.amount} {send.src}→{send.dst} on "
                f"relay {send.relay}: {send.result}{seen}",
                got=(send.result,),
            )
        )


def send_step(label: str, send: ChannelLine, *, timeout_s: float | None = None, background: bool = False) -> S.Send:
    """The channel's request as a send of `label`: by its fields, or, when the contract calls it malformed, by its
    body as production sent it (the label's GUID in it unless the GUID itself is what is malformed)."""
    body = {"guid": send.guid, "from": send.src, "to": send.dst, "amount": send.amount}
    if classify_body(json.dumps(body))[0] is not None:
        return S.Send(
            label,
            amount=send.amount,
            src=send.src,
            dst=send.dst,
            slot=send.relay,
            background=background,
            timeout_s=timeout_s,
        )
    if classify_body(json.dumps({**body, "guid": label}))[0] is None:  # the amount or a party: the GUID is not
        body["guid"] = S.GUID_PLACEHOLDER
    return S.Send(label, slot=send.relay, raw=json.dumps(body), background=background, timeout_s=timeout_s)
