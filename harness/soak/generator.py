"""The soak's open-loop generator: transfers at a fixed rate, whatever the relay's answers, on one event loop.

    gen = Generator(stack, recorder, rate=500, seed=7, tag="ab12cd34", account_timeout_ms=300)
    await gen.run(stop)          # until `stop` (an asyncio.Event) is set, then waits for calls in flight

Open loop, as Jepsen's generators at a fixed rate: a call is started at its
time whether or not earlier ones have been answered. Most calls carry a new
GUID; about 10 % resend a GUID first sent in the last few seconds (the same
request, as a careful client does); a few are refused by the account system
(an amount above any balance: B201; an unknown account: B202); every couple of
seconds a burst of concurrent duplicates goes straight to a relay. Every call
is recorded by the channel, invoke then ok/info. When the machine cannot keep
up, calls more than a second late are not sent and are counted as `missed`,
so the achieved rate is honest. While `hold(now)` says so (just before the
nemesis lifts an account-side fault, see schedule.ACCOUNT_SIDE) calls are not
started either: they are counted as `held`, and the rate achieved is reckoned
over the time the generator was not holding.
"""

from __future__ import annotations

import asyncio
import collections
import random
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from relaychaos.recorder import Recorder
from relaychaos.stack.channel import Channel, RetryPolicy, transfer
from relaychaos.stack.world import Stack
from relaychaos.tolerances import CURRENT as TOLERANCES

RESEND_SHARE = 0.10
REFUSED_SHARE = 0.03
RESEND_WINDOW_S = 5.0  # only GUIDs first sent this recently are resent (far below purge's retention)
BURST_EVERY_S = 2.0
BURST_SIZE = 8
LATE_LIMIT_S = 1.0  # a call this late is not sent: counted as missed
ACCOUNTS = {"alice": 10**9, "bob": 10**9, "carol": 10**9, "dave": 10**9}
REFUSED_AMOUNT = 10**12  # above any balance: B201
UNKNOWN_ACCOUNT = "mallory"  # not an account of the fixture: B202
CONNECTIONS = 4096
LAUNCH_AT_ONCE = 200  # calls started before lateness is looked at again


@dataclass
class Counts:
    """What the generator did so far: calls started, answers by code ('no answer' for none), missed calls."""

    sent: int = 0
    bursts: int = 0
    missed: int = 0
    held: int = 0
    rate: float = 1.0  # asked
    in_flight: int = 0
    codes: collections.Counter = field(default_factory=collections.Counter)
    started_at: float | None = None
    stopped_at: float | None = None

    @property
    def held_s(self) -> float:
        return self.held / self.rate

    def achieved_rate(self, now: float | None = None) -> float:
        """Calls started per second of generating, the time held not counted (nor the bursts' copies)."""
        if self.started_at is None:
            return 0.0
        elapsed = (self.stopped_at or now or time.monotonic()) - self.started_at - self.held_s
        return self.sent / elapsed if elapsed > 0 else 0.0


class Generator:
    """Transfers at `rate` per second to slot a, and to slot b once it has joined (see the module doc)."""

    def __init__(
        self,
        stack: Stack,
        recorder: Recorder,
        *,
        rate: float,
        seed: int,
        tag: str,
        account_timeout_ms: int,
        hold: Callable[[float], bool] = lambda now: False,
    ):
        self.stack, self.recorder, self.rate, self.tag = stack, recorder, rate, tag
        self.rng = random.Random(f"generator-{seed}")
        self.hold = hold
        self.timeout_s = TOLERANCES.channel_timeout_s(account_timeout_ms)
        self.counts = Counts(rate=rate)
        self.recent: collections.deque[tuple[float, dict]] = collections.deque()
        self.channels: dict[tuple[str, bool], Channel] = {}
        self.tasks: set[asyncio.Task] = set()
        self._serial = 0

    async def channel(self, slot: str, via_hub: bool) -> Channel:
        key = (slot, via_hub)
        if key not in self.channels:
            ch = self.stack.channel(self.recorder, slot, via_hub=via_hub, timeout_s=self.timeout_s)
            ch.name, ch.connections = f"soak-{slot}{'' if via_hub else '-direct'}", CONNECTIONS
            self.channels[key] = await ch.__aenter__()
        return self.channels[key]

    def slots(self) -> list[str]:
        """The slots taking traffic: those whose hub proxy exists (b once it has joined)."""
        return [s for s in ("a", "b") if f"hub-{s}" in self.stack.proxies]

    def new_guid(self) -> str:
        self._serial += 1
        return f"t{self._serial:07d}-{self.tag}"

    def next_request(self, now: float) -> dict:
        """A resend of a recent GUID, a refused transfer, or a new one (see the module doc)."""
        while self.recent and now - self.recent[0][0] > RESEND_WINDOW_S:
            self.recent.popleft()
        draw = self.rng.random()
        if draw < RESEND_SHARE and self.recent:
            return self.rng.choice(self.recent)[1]
        src, dst = self.rng.sample(sorted(ACCOUNTS), 2)
        amount = self.rng.randint(1, 100)
        if draw < RESEND_SHARE + REFUSED_SHARE:
            if self.rng.random() < 0.5:
                amount = REFUSED_AMOUNT
            else:
                dst = UNKNOWN_ACCOUNT
        request = transfer(self.new_guid(), src, dst, amount)
        self.recent.append((now, request))
        return request

    async def run(self, stop: asyncio.Event) -> None:
        """Generate until `stop` is set; then wait for every call in flight (each ends within its time-out)."""
        c = self.counts
        c.started_at = start = time.monotonic()
        due, next_burst = 0, start + BURST_EVERY_S
        while not stop.is_set():
            now = time.monotonic()
            target = int((now - start) * self.rate)  # calls due by now
            late = (target - due) / self.rate
            if late > LATE_LIMIT_S:  # cannot keep up: skip what is too late rather than fall further behind
                skipped = int((late - LATE_LIMIT_S) * self.rate)
                c.missed += skipped
                due += skipped
            if self.hold(now):
                c.held += target - due
                due = target
                await asyncio.sleep(0.005)  # polling the nemesis's progress, not ordering by sleep
                continue
            if c.in_flight >= CONNECTIONS:  # every connection busy: more calls would only queue in the harness
                c.missed += target - due
                due = target
            slots, launched = self.slots(), 0
            while due < target and launched < LAUNCH_AT_ONCE and not self.hold(time.monotonic()):
                await self._launch(self.send(self.next_request(now), slots[due % len(slots)]))
                due, launched = due + 1, launched + 1
            if now >= next_burst:
                next_burst += BURST_EVERY_S
                await self._launch(self.burst(slots))
            await asyncio.sleep(max(0.0, start + (due + 1) / self.rate - time.monotonic()))
        c.stopped_at = time.monotonic()
        await self.drain()

    async def _launch(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        await asyncio.sleep(0)

    async def send(self, request: dict, slot: str) -> None:
        c = self.counts
        ch = await self.channel(slot, True)
        if self.hold(time.monotonic()):  # looked at again just before the call is recorded as begun
            c.held += 1
            return
        c.sent += 1
        c.in_flight += 1
        try:
            for outcome in await ch.send(request, RetryPolicy(1)):
                c.codes[outcome.code if outcome.type == "ok" and outcome.code else "no answer"] += 1
        finally:
            c.in_flight -= 1

    async def burst(self, slots: list[str]) -> None:
        """BURST_SIZE copies of one new transfer at once, straight to the relays (split over the slots)."""
        src, dst = self.rng.sample(sorted(ACCOUNTS), 2)
        request = transfer(self.new_guid(), src, dst, self.rng.randint(1, 100))
        per_slot = [BURST_SIZE // len(slots) + (i < BURST_SIZE % len(slots)) for i in range(len(slots))]
        self.counts.bursts += 1
        live = [s for s in slots if s in self.stack.supervisor.relays]  # a killed relay has no address to race to
        races = [
            (await self.channel(s, False)).race(request, k) for s, k in zip(slots, per_slot, strict=False) if s in live
        ]
        outcomes = await asyncio.gather(*races, return_exceptions=True)
        for result in outcomes:
            for outcome in result if isinstance(result, list) else ():
                self.counts.codes[outcome.code if outcome.type == "ok" and outcome.code else "no answer"] += 1

    async def drain(self, timeout_s: float = TOLERANCES.collect_timeout_s) -> None:
        """Wait for the calls in flight, then close the channels."""
        if self.tasks:
            await asyncio.wait(list(self.tasks), timeout=timeout_s)
        for ch in self.channels.values():
            await ch.__aexit__(None, None, None)
        self.channels.clear()
