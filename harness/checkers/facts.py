"""Views of a history that the checkers share: channel calls, account calls, snapshots, batches, faults.

Everything here is derived from the history alone (the account system's call
log arrives in it as the final `account-stats` observation), so checks can be
re-run on a saved history.
"""
from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field
from functools import cached_property

from relaychaos.history import Event, History
from relaychaos.tolerances import Tolerances

DEFINITE = {"0000", "B201", "B202", "B203", "E500"}
KNOWN_CODES = DEFINITE | {"E400", "E901", "E902", "E903", "E904"}
TRANSFER_FIELDS = ("guid", "from", "to", "amount")
BATCH_COMMANDS = ("resolve", "reprocess", "purge")
GUID_FORM = re.compile(r"[A-Za-z0-9_-]{1,64}")


def classify_body(raw: str) -> tuple[dict | None, tuple[str, ...]]:
    """(the transfer, its extra field names) when a body is well-formed per contract §3, else (None, ()).

    Malformed means: not a JSON object, a missing field, a field of the wrong type, or
    a value outside the ranges (guid 1-64 of A-Z a-z 0-9 - _, amount an integer > 0).
    Fields beyond the four do not make a body malformed (v1.1): they are returned apart.
    """
    try:
        body = json.loads(raw)
    except ValueError:
        return None, ()
    if not isinstance(body, dict):
        return None, ()
    guid, src, dst, amount = (body.get(k) for k in TRANSFER_FIELDS)
    if not (isinstance(guid, str) and GUID_FORM.fullmatch(guid) and isinstance(src, str) and isinstance(dst, str)
            and type(amount) is int and amount > 0):
        return None, ()
    return {k: body[k] for k in TRANSFER_FIELDS}, tuple(sorted(set(body) - set(TRANSFER_FIELDS)))


@dataclass
class ChannelCall:
    """One channel request and its completion (None while it never completed).

    A raw body that is a well-formed transfer counts as a send of its GUID (with extra
    fields set aside); only a malformed one is `malformed`.
    """

    invoke: Event
    completion: Event | None
    request: dict | None = field(init=False)
    extra_fields: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        self.request, self.extra_fields = self.invoke.value.get("request"), ()
        if self.raw is not None:
            self.request, self.extra_fields = classify_body(self.raw)

    @property
    def guid(self) -> str | None:
        return self.request["guid"] if self.request else self.invoke.value.get("guid")

    @property
    def raw(self) -> str | None:
        return self.invoke.value.get("raw")

    @property
    def body_guid(self) -> str | None:
        """The `guid` field of a raw body, as written (even when it is malformed)."""
        try:
            body = json.loads(self.raw or "")
        except ValueError:
            return None
        return body.get("guid") if isinstance(body, dict) and isinstance(body.get("guid"), str) else None

    @property
    def malformed(self) -> bool:
        return self.raw is not None and self.request is None

    @property
    def sent_at(self) -> float | None:
        """When the request was on an established connection (None: it never was); invoke time in old histories."""
        if self.completion is None or "sent_at" not in self.completion.value:
            return self.invoke.time
        return self.completion.value["sent_at"]

    @property
    def delayed_accept(self) -> bool:
        """Whether the connection needed TCP retransmits (the relay's accept queue overflowed)."""
        return bool(self.completion and self.completion.value.get("retransmits"))

    @property
    def timing_judged(self) -> bool:
        """Whether this call's time to answer is judged (contract §3 v1.1: counted once the request reached it)."""
        return self.completion is not None and self.sent_at is not None and not self.delayed_accept

    @property
    def answered(self) -> bool:
        return self.completion is not None and self.completion.type == "ok"

    @property
    def code(self) -> str | None:
        return self.completion.value.get("code") if self.answered else None

    @property
    def status(self) -> int | None:
        return self.completion.value.get("status") if self.answered else None

    @property
    def body(self) -> str | None:
        return self.completion.value.get("body") if self.answered else None

    @property
    def events(self) -> tuple[int, ...]:
        return (self.invoke.index,) + ((self.completion.index,) if self.completion else ())


@dataclass
class Batch:
    """One run of resolve/reprocess/purge: its argument, wall-clock start, and how it ended."""

    command: str
    invoke: Event
    end: Event | None

    @property
    def argument(self) -> float | None:
        return self.invoke.value.get("argument")

    @property
    def wall(self) -> float:
        return self.invoke.value.get("wall", 0.0)


@dataclass
class Facts:
    """The history, indexed for checking."""

    history: History
    events: list[Event] = field(init=False)

    def __post_init__(self) -> None:
        self.events = list(self.history)

    @cached_property
    def scenario(self) -> dict:
        found = [e.value for e in self.events if e.f == "scenario"]
        return found[0] if found else {}

    @cached_property
    def tolerances(self) -> Tolerances:
        """The tolerances this history was recorded under (see relaychaos.tolerances)."""
        return Tolerances.from_dict(self.scenario.get("tolerances"))

    @cached_property
    def timeout_ms(self) -> float:
        return float(self.scenario.get("account_timeout_ms", 0))

    @cached_property
    def start(self) -> float:
        return self.events[0].time if self.events else 0.0

    @cached_property
    def labels(self) -> dict[str, str]:
        """Real GUID -> the scenario's label for it."""
        out = {real: label for label, real in self.scenario.get("guids", {}).items()}
        out.update({e.value["guid"]: e.value["label"] for e in self.events if e.f == "guid"})
        return out

    @cached_property
    def intents(self) -> dict[str, set[str]]:
        """The payment each channel request meant (its intent label) -> the GUIDs it was sent under."""
        out: dict[str, set[str]] = {}
        for c in self.channel:
            if c.request is not None:
                out.setdefault(c.invoke.value.get("intent") or c.guid, set()).add(c.guid)
        return out

    @cached_property
    def channel(self) -> list[ChannelCall]:
        open_: dict[str, ChannelCall] = {}
        calls: list[ChannelCall] = []
        for e in self.events:
            if e.f != "transfer":
                continue
            if e.type == "invoke":
                open_[e.process] = ChannelCall(e, None)
                calls.append(open_[e.process])
            elif e.process in open_:
                open_.pop(e.process).completion = e
        return calls

    def channel_for(self, guid: str) -> list[ChannelCall]:
        return [c for c in self.channel if c.guid == guid]

    @cached_property
    def stats(self) -> dict:
        found = [e.value["stats"] for e in self.events if e.f == "account-stats"]
        return found[-1] if found else {"calls": [], "guids": {}, "balances": {}}

    @cached_property
    def account_calls(self) -> list[dict]:
        return self.stats.get("calls", [])

    def calls_for(self, guid: str) -> list[dict]:
        return [c for c in self.account_calls if c.get("guid") == guid]

    @cached_property
    def snapshots(self) -> list[Event]:
        return [e for e in self.events if e.f == "ledger-snapshot" and e.type == "ok"]

    @cached_property
    def final_rows(self) -> dict[str, dict]:
        return self.snapshots[-1].value["rows"] if self.snapshots else {}

    @cached_property
    def batches(self) -> list[Batch]:
        open_: dict[str, Batch] = {}
        out: list[Batch] = []
        for e in self.events:
            if "run" not in e.value or e.f not in BATCH_COMMANDS:
                continue
            if e.type == "invoke":
                open_[e.process] = Batch(e.f, e, None)
                out.append(open_[e.process])
            elif e.process in open_:
                open_.pop(e.process).end = e
        return out

    @cached_property
    def channel_guids(self) -> dict[str, dict]:
        """Every GUID the channel sent as a well-formed request, with its first request body.

        A body refused with E400 for fields beyond the four (v1.1) left nothing behind: it
        does not make its GUID used.
        """
        out: dict[str, dict] = {}
        for c in self.channel:
            refused = c.extra_fields and c.answered and c.code == "E400"
            if c.request is not None and c.guid not in out and not refused:
                out[c.guid] = c.request
        return out

    def hub_disturbed(self, t0: float, t1: float) -> bool:
        """Whether a hub proxy (channel → relay) had a toxic or was down at some moment from t0 to t1."""
        return any(faults.channel_side for faults in self._fault_moments(t0, t1))

    def events_for(self, guid: str) -> tuple[int, ...]:
        """Every history event naming the GUID, plus fault and process events, in order."""
        out = []
        for e in self.events:
            if e.f == "guid":
                continue
            if e.guid == guid or guid in (e.value.get("hold_guids") or ()) or guid in (e.value.get("guids") or ()):
                out.append(e.index)
            elif (e.process == "nemesis" and not (e.f == "add-toxic" and e.type == "ok")) or \
                    ("slot" in e.value and e.type != "invoke") or (e.f in BATCH_COMMANDS and "run" in e.value):
                out.append(e.index)
        return tuple(out)

    def call_seqs(self, guid: str) -> tuple[int, ...]:
        return tuple(c["seq"] for c in self.calls_for(guid))

    def _fault_moments(self, t0: float, t1: float) -> list["FaultState"]:
        """The fault state at t0 and after each fault event up to t1, folded in one pass."""
        state, states = FaultState(), []
        for e in self.events:
            if e.time > t1:
                break
            if e.time > t0 and not states:
                states.append(copy.deepcopy(state))  # the state at t0
            if e.process == "nemesis":
                state.apply(e)
                if e.time >= t0:
                    states.append(copy.deepcopy(state))
        return states or [state]

    def account_states(self, t0: float, t1: float) -> list[tuple[bool, set[tuple[str, str]]]]:
        """The account proxy's states from t0 to t1: (disabled, {(toxic kind, stream)}) at t0 and at each fault
        event up to t1."""
        states = []
        for faults in self._fault_moments(t0, t1):
            states.append((faults.account_down, {(x["kind"], x["stream"]) for x in faults.account_toxics}))
        return states

    def faults_at(self, t: float) -> "FaultState":
        """The fault state at monotonic time t: toxics and disabled proxies by side, held GUIDs, delay."""
        state = FaultState()
        for e in self.events:
            if e.time > t:
                break
            if e.process == "nemesis":
                state.apply(e)
        return state


@dataclass
class FaultState:
    """What the nemesis had in force at one moment. Proxies are keyed by name, with their `side`:
    'channel' (a hub proxy in front of a relay) or 'account' (the proxy in front of the account system)."""

    toxics: dict[str, dict[str, dict]] = field(default_factory=dict)  # proxy -> toxic name -> its add event
    disabled: set[str] = field(default_factory=set)
    sides: dict[str, str] = field(default_factory=dict)
    held: set[str] = field(default_factory=set)
    delay_ms: float = 0.0

    def apply(self, e: Event) -> None:
        """Fold one nemesis event in."""
        v = e.value
        if "proxy" in v:
            self.sides[v["proxy"]] = v.get("side", "")
        if e.f == "add-toxic" and e.type == "invoke":
            self.toxics.setdefault(v["proxy"], {})[v["toxic"]] = v
        elif e.f == "remove-toxic":
            self.toxics.get(v["proxy"], {}).pop(v["toxic"], None)
            if not self.toxics.get(v["proxy"], True):
                del self.toxics[v["proxy"]]
        elif e.f == "disable-proxy":
            self.disabled.add(v["proxy"])
        elif e.f == "enable-proxy":
            self.disabled.discard(v["proxy"])
        elif e.f == "server-fault":
            self.held |= set(v.get("hold_guids") or ())
            self.delay_ms = float(v.get("delay_ms", self.delay_ms) or 0)
        elif e.f == "release":
            self.held = set() if v.get("guids") is None else self.held - set(v["guids"])
        elif e.f == "heal":
            self.toxics.clear()
            self.disabled.clear()
            self.held.clear()
            self.delay_ms = 0.0

    def _on(self, side: str) -> list[str]:
        return [p for p in set(self.toxics) | self.disabled if self.sides.get(p) == side]

    @property
    def channel_side(self) -> bool:
        """Whether any hub proxy (between the channel and a relay) has a toxic or is down."""
        return bool(self._on("channel"))

    @property
    def account_down(self) -> bool:
        return any(p in self.disabled for p in self._on("account"))

    @property
    def account_toxics(self) -> list[dict]:
        """The toxics in force on the account side (their add events: kind, stream, attributes)."""
        return [t for p in self._on("account") for t in self.toxics.get(p, {}).values()]
