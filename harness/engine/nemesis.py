"""The nemesis: every fault in one place, each recorded as it is done.

Toxics on a proxy, a proxy down, account-system faults (processing delay, E500,
GUIDs held until released), healing, and SIGKILL of a relay. Toxics always have
toxicity 1.0, so the harness, not chance, decides what a run meets.

It also keeps the longest delay the run has injected so far, as the final phase's --min-age needs it
(contract §6): a latency toxic delays data by its latency at most, and no longer than it stays on its proxy,
since Toxiproxy lets what a latency toxic holds go at once when the toxic is removed (v2.12: the interrupted
LatencyToxic.Pipe passes on its chunk, and ToxicLink.RemoveToxic empties the toxic's buffer into the next stage);
an account-system processing delay counts in full.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from relaychaos.engine import steps as S
from relaychaos.recorder import Recorder
from relaychaos.stack.world import Stack


class Nemesis:
    """Does and records the fault steps of one run; `guid_of` maps labels to the run's GUIDs."""

    def __init__(
        self,
        stack: Stack,
        recorder: Recorder,
        guid_of: Callable[[str], str],
        clock: Callable[[], float] = time.monotonic,
    ):
        self.stack, self.recorder, self.guid_of, self.clock = stack, recorder, guid_of, clock
        self._latency: dict[tuple[str, str], tuple[float, float]] = {}  # (proxy, toxic) -> (added at, latency s)
        self._longest_s = 0.0  # the longest delay of the faults already lifted, and of the server's delays

    def longest_delay_s(self) -> float:
        """The longest delay injected so far: each latency toxic's latency (with its jitter), cut at the time it
        has been (or was) on its proxy; the account system's processing delay in full."""
        now = self.clock()
        held = [min(latency, now - added) for added, latency in self._latency.values()]
        return max([self._longest_s, *held])

    def _lifted(self, key: tuple[str, str]) -> None:
        if key in self._latency:
            added, latency = self._latency.pop(key)
            self._longest_s = max(self._longest_s, min(latency, self.clock() - added))

    def add_toxic(self, step: S.AddToxic) -> None:
        name = step.name or f"{step.kind}_{step.stream}"
        side = self.stack.side(step.proxy)
        self.recorder.toxic_adding(step.proxy, side, name, step.kind, step.stream, dict(step.attributes))
        if step.delay_s:  # a name already on the proxy is refused there: the toxic in force keeps its own time
            self._latency.setdefault((step.proxy, name), (self.clock(), step.delay_s))
        self.stack.add_toxic(step.proxy, step.kind, stream=step.stream, name=name, **step.attributes)
        self.recorder.toxic_added(step.proxy, side, name)

    def remove_toxic(self, step: S.RemoveToxic) -> None:
        self.stack.remove_toxic(step.proxy, step.name)
        self._lifted((step.proxy, step.name))
        self.recorder.toxic_removed(step.proxy, self.stack.side(step.proxy), step.name)

    def disable_proxy(self, step: S.DisableProxy) -> None:
        self.stack.set_proxy_enabled(step.proxy, False)
        self.recorder.proxy_set(step.proxy, self.stack.side(step.proxy), False)

    def enable_proxy(self, step: S.EnableProxy) -> None:
        self.stack.set_proxy_enabled(step.proxy, True)
        self.recorder.proxy_set(step.proxy, self.stack.side(step.proxy), True)

    def server_fault(self, step: S.ServerFault) -> None:
        spec: dict = {}
        if step.delay_ms is not None:
            spec["delay_ms"] = step.delay_ms
            self._longest_s = max(self._longest_s, step.delay_ms / 1000)
        if step.e500_next is not None:
            spec["e500_next"] = step.e500_next
        spec["e500_guids"] = [self.guid_of(g) for g in step.e500_guids]
        spec["hold_guids"] = [self.guid_of(g) for g in step.hold_guids]
        if step.e500_once:
            spec["e500_once"] = [self.guid_of(g) for g in step.e500_once]
        self.stack.account.set_faults(**spec)
        self.recorder.server_fault(**spec)

    def release(self, step: S.Release) -> None:
        guids = None if step.guids is None else [self.guid_of(g) for g in step.guids]
        self.stack.account.release(guids)
        self.recorder.released(guids)

    def heal(self, step: S.Heal) -> None:
        self.stack.heal()
        for key in list(self._latency):
            self._lifted(key)
        self.recorder.healed()

    def kill(self, step: S.Kill) -> None:
        relay = self.stack.supervisor.relays.get(step.slot)
        if relay is None:
            return
        self.recorder.killing(step.slot, relay.child.pid)
        killed = self.stack.kill_relay(step.slot)
        assert killed is not None  # the slot was running: checked above
        pid, status = killed
        self.recorder.killed(step.slot, pid, status)
