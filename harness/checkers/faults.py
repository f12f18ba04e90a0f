"""What the nemesis had in force, and when: the fault state after each nemesis event, found by bisection.

A history's events are in index order but their times need not be (threads read
the clock before they append), so "the events up to time t" means the events
before the first one later than t, found on the running maximum of the times.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import accumulate

from relaychaos.events import Event, Op


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
        if e.f == Op.ADD_TOXIC and e.type == "invoke":
            self.toxics.setdefault(v["proxy"], {})[v["toxic"]] = v
        elif e.f == Op.REMOVE_TOXIC:
            self.toxics.get(v["proxy"], {}).pop(v["toxic"], None)
            if not self.toxics.get(v["proxy"], True):
                del self.toxics[v["proxy"]]
        elif e.f == Op.DISABLE_PROXY:
            self.disabled.add(v["proxy"])
        elif e.f == Op.ENABLE_PROXY:
            self.disabled.discard(v["proxy"])
        elif e.f == Op.SERVER_FAULT:
            self.held |= set(v.get("hold_guids") or ())
            self.delay_ms = float(v.get("delay_ms", self.delay_ms) or 0)
        elif e.f == Op.RELEASE:
            self.held = set() if v.get("guids") is None else self.held - set(v["guids"])
        elif e.f == Op.HEAL:
            self.toxics.clear()
            self.disabled.clear()
            self.held.clear()
            self.delay_ms = 0.0

    def copy(self) -> FaultState:
        """A copy to keep (the toxics' add events are shared: nothing changes them)."""
        return FaultState(
            {p: dict(t) for p, t in self.toxics.items()},
            set(self.disabled),
            dict(self.sides),
            set(self.held),
            self.delay_ms,
        )

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


class FaultTimeline:
    """Fed every nemesis event in order (`see`), then every event's time (`done`); then answers fault
    questions about any time in O(log n).

    states[k] is the fault state after the first k nemesis events (states[0]: none).
    Holds one float per event (the running maximum of the times) and one state per
    nemesis event; never the events themselves.
    """

    def __init__(self) -> None:
        self._latest = array("d")  # running maximum of event times, by index
        self._indices: list[int] = []  # history index of each nemesis event
        self._times: list[float] = []
        self._reached: list[float] = []  # the running maximum at each nemesis event: when it is applied
        self._state = FaultState()
        self.states: list[FaultState] = [FaultState()]
        self._hub: list[bool] = [False]  # whether states[k] has a hub proxy disturbed
        self._hub_on = [0]  # how many of states[0..k] do
        self._sorted = True  # whether the nemesis events' times never go back

    def done(self, times: array) -> None:
        """Every event's time, by index (once every nemesis event was seen)."""
        self._latest = array("d", accumulate(times, max))
        self._reached = [self._latest[i] for i in self._indices]

    def see(self, e: Event) -> None:
        """A nemesis event, in history order."""
        if self._times and e.time < self._times[-1]:
            self._sorted = False
        self._indices.append(e.index)
        self._times.append(e.time)
        self._state.apply(e)
        self.states.append(self._state.copy())
        self._hub.append(self.states[-1].channel_side)
        self._hub_on.append(self._hub_on[-1] + self._hub[-1])

    def _applied(self, t: float) -> int:
        """How many nemesis events come before the first event later than t (the ones a scan up to t applies)."""
        return bisect_right(self._reached, t)

    def moments(self, t0: float, t1: float) -> list[int]:
        """Which states were in force from t0 to t1: the one at t0, then the one after each nemesis event
        from t0 up to t1 (as numbers k of states[k])."""
        applied, before_t0 = self._applied(t1), self._applied(t0)
        later: Sequence[int]
        if self._sorted:
            later = range(bisect_left(self._times, t0, 0, applied) + 1, applied + 1)
        else:
            later = [k + 1 for k in range(applied) if self._times[k] >= t0]
        # the state at t0 is taken at the first event later than t0 (if one comes by t1), unless a nemesis
        # event at t0 came before it
        start, end = bisect_right(self._latest, t0), bisect_right(self._latest, t1)
        at_t0 = start < end and not (later and self._indices[later[0] - 1] < start)
        out = ([before_t0] if at_t0 else []) + list(later)
        return out or [applied]

    def hub_disturbed(self, t0: float, t1: float) -> bool:
        """Whether a hub proxy (channel → relay) had a toxic or was down at some moment from t0 to t1."""
        applied, before_t0 = self._applied(t1), self._applied(t0)
        if not self._sorted:
            return any(self._hub[k] for k in self.moments(t0, t1))
        lo = bisect_left(self._times, t0, 0, applied)
        if lo < applied and self._hub_on[applied] - self._hub_on[lo]:
            return True  # a state after one of the nemesis events from t0 on
        if not (self._hub[before_t0] or self._hub[applied]):
            return False  # neither other state that may be in force
        start, end = bisect_right(self._latest, t0), bisect_right(self._latest, t1)
        at_t0 = start < end and not (lo < applied and self._indices[lo] < start)
        if at_t0 or lo == applied:
            return self._hub[before_t0 if at_t0 else applied]
        return False

    def at(self, t: float) -> FaultState:
        """The fault state at time t (shared: do not change it)."""
        return self.states[self._applied(t)]
