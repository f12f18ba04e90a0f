"""The runner's client: drives the channel on a loop thread, one channel per target, background sends.

A step can send in the background, then kill the relay while the call is in
flight, then collect the answer. Every call is recorded by the channel through
the run's Recorder.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable, Coroutine
from typing import Any

from relaychaos.engine import steps as S
from relaychaos.engine.loop_thread import LoopThread
from relaychaos.recorder import Recorder
from relaychaos.stack.channel import Channel, RetryPolicy, transfer
from relaychaos.stack.world import Stack
from relaychaos.tolerances import CURRENT as TOLERANCES


class Client:
    """The channel side of one run; `guid_of(label)` maps the scenario's labels to the run's GUIDs."""

    def __init__(self, stack: Stack, recorder: Recorder, account_timeout_ms: int, guid_of: Callable[[str], str]):
        self.stack, self.recorder, self.guid_of = stack, recorder, guid_of
        self.account_timeout_ms = account_timeout_ms
        self.loop = LoopThread()
        self.channels: dict[tuple, Channel] = {}
        self.pending: list[concurrent.futures.Future] = []

    def channel(self, slot: str, via_hub: bool, timeout_s: float | None) -> Channel:
        """The channel to slot (opened once per target and time-out)."""
        timeout = timeout_s if timeout_s is not None else TOLERANCES.channel_timeout_s(self.account_timeout_ms)
        key = (slot, via_hub, timeout)
        if key not in self.channels:
            ch = self.stack.channel(self.recorder, slot, via_hub=via_hub, timeout_s=timeout)
            ch.name = f"channel-{slot}{'' if via_hub else '-direct'}-{len(self.channels)}"
            self.loop.run(ch.__aenter__())
            self.channels[key] = ch
        return self.channels[key]

    def request(self, label: str, amount: int, src: str, dst: str) -> dict:
        return transfer(self.guid_of(label), src, dst, amount)

    def send(self, step: S.Send) -> None:
        """One send step: well-formed, raw, or a careless client's; waited for unless in the background."""
        ch = self.channel(step.slot, step.via_hub, step.timeout_s)
        coro: Coroutine[Any, Any, object]
        if step.raw is not None:
            body = step.raw.replace(S.GUID_PLACEHOLDER, self.guid_of(step.guid))
            coro = ch.send_raw(body.encode(), guid=self.guid_of(step.guid))
        elif step.careless:
            coro = self._careless(ch, step)
        else:
            coro = ch.send(
                self.request(step.guid, step.amount, step.src, step.dst), RetryPolicy(step.attempts), intent=step.guid
            )
        future = self.loop.submit(coro)
        if step.background:
            self.pending.append(future)
        else:
            future.result()

    async def _careless(self, ch: Channel, step: S.Send) -> None:
        """A client that mints a new GUID for every retry: the client-side incident."""
        for attempt in range(1, step.attempts + 1):
            label = step.guid if attempt == 1 else f"{step.guid}-retry{attempt}"
            outcome = await ch.send_once(
                self.request(label, step.amount, step.src, step.dst), attempt=attempt, intent=step.guid
            )
            if outcome.kind not in RetryPolicy().retry_on:
                return

    def race(self, step: S.Race) -> None:
        """n copies released together, split over the step's slots."""
        request = self.request(step.guid, step.amount, step.src, step.dst)
        slots = step.slots
        per_slot = [step.n // len(slots) + (i < step.n % len(slots)) for i in range(len(slots))]
        chans = [self.channel(slot, step.via_hub, None) for slot in slots]

        async def go() -> None:  # on several relays, every copy is released in one turn, once every connection is open
            release, waiting = (asyncio.Event(), [len(chans)]) if len(chans) > 1 else (None, [0])

            def ready() -> None:
                waiting[0] -= 1
                if waiting[0] == 0 and release is not None:  # only several relays wait for each other
                    release.set()

            await asyncio.gather(*(ch.race(request, k, release, ready) for ch, k in zip(chans, per_slot, strict=False)))

        self.loop.run(go())

    def collect(self, timeout_s: float = TOLERANCES.collect_timeout_s) -> None:
        """Wait for every background send to have its answer (or its time-out)."""
        pending, self.pending = self.pending, []
        concurrent.futures.wait(pending, timeout=timeout_s)

    def close(self) -> None:
        """Collect what is pending, close every channel, stop the loop."""
        try:
            self.collect()
            for ch in self.channels.values():
                self.loop.run(ch.__aexit__(None, None, None))
            self.channels.clear()
        finally:
            self.loop.close()
