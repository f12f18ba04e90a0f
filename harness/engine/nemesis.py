"""The nemesis: every fault in one place, each recorded as it is done.

Toxics on a proxy, a proxy down, account-system faults (processing delay, E500,
GUIDs held until released), healing, and SIGKILL of a relay. Toxics always have
toxicity 1.0, so the harness, not chance, decides what a run meets.
"""

from __future__ import annotations

from collections.abc import Callable

from relaychaos.engine import steps as S
from relaychaos.recorder import Recorder
from relaychaos.stack.world import Stack


class Nemesis:
    """Does and records the fault steps of one run; `guid_of` maps labels to the run's GUIDs."""

    def __init__(self, stack: Stack, recorder: Recorder, guid_of: Callable[[str], str]):
        self.stack, self.recorder, self.guid_of = stack, recorder, guid_of

    def add_toxic(self, step: S.AddToxic) -> None:
        name = step.name or f"{step.kind}_{step.stream}"
        side = self.stack.side(step.proxy)
        self.recorder.toxic_adding(step.proxy, side, name, step.kind, step.stream, dict(step.attributes))
        self.stack.add_toxic(step.proxy, step.kind, stream=step.stream, name=name, **step.attributes)
        self.recorder.toxic_added(step.proxy, side, name)

    def remove_toxic(self, step: S.RemoveToxic) -> None:
        self.stack.remove_toxic(step.proxy, step.name)
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
        if step.e500_next is not None:
            spec["e500_next"] = step.e500_next
        spec["e500_guids"] = [self.guid_of(g) for g in step.e500_guids]
        spec["hold_guids"] = [self.guid_of(g) for g in step.hold_guids]
        self.stack.account.set_faults(**spec)
        self.recorder.server_fault(**spec)

    def release(self, step: S.Release) -> None:
        guids = None if step.guids is None else [self.guid_of(g) for g in step.guids]
        self.stack.account.release(guids)
        self.recorder.released(guids)

    def heal(self, step: S.Heal) -> None:
        self.stack.heal()
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
