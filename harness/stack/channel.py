"""The channel: the client side of a transfer, recorded call by call through the run's Recorder.

A careful client: the GUID is minted before the first send and every retry
resends the *same* GUID; a time-out or a broken connection is recorded as
`info` (outcome unknown), never as a failure. Use it as
`async with Channel(recorder, target, timeout_s=2) as ch: await ch.send(req)`.
`race()` opens N connections first and releases N identical requests together
behind a barrier, so that they really arrive at once.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import time
import types
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import aiohttp

from relaychaos.recorder import Recorder
from relaychaos.stack import accept_queue, raw_http
from relaychaos.stack.speech import Course, HttpRequest, Speech
from relaychaos.tolerances import CURRENT as TOLERANCES

DEFAULT_RETRY_ON = frozenset({"info", "E902", "E903"})


def new_guid(prefix: str = "g") -> str:
    """A fresh GUID within the contract's alphabet and length (A-Z a-z 0-9 - _, at most 64)."""
    return f"{prefix}-{uuid.uuid4().hex[:20]}"


def transfer(guid: str, src: str, dst: str, amount: int) -> dict:
    """The request body of a transfer, as the contract spells it."""
    return {"guid": guid, "from": src, "to": dst, "amount": amount}


@dataclass(frozen=True)
class RetryPolicy:
    """How often to send one GUID, and after which outcomes (`info` or an answer code) to resend."""

    attempts: int = 1
    retry_on: frozenset[str] = DEFAULT_RETRY_ON


@dataclass(frozen=True)
class Outcome:
    """What one attempt learned: `ok` with the relay's answer, or `info` when nothing definite came."""

    guid: str | None
    attempt: int
    type: str
    status: int | None = None
    code: str | None = None
    body: str | None = None
    error: str | None = None
    timed_out: bool = False  # the channel gave up waiting (an `info` outcome)
    sent_at: float | None = None  # when the request was written on an established connection
    retransmits: int = 0  # TCP retransmits after the request was written (an overflowing accept queue)

    @property
    def kind(self) -> str:
        """The answer code, or 'info' when there was none: what retry policies match on."""
        return self.code if self.type == "ok" and self.code else "info"


@dataclass
class Channel:
    """Sends transfers to a relay (directly or through a hub proxy), recording every call."""

    recorder: Recorder
    target: str | Callable[[], str]
    timeout_s: float = 2.0
    name: str = "channel"
    delivery_cap_s: float = TOLERANCES.delivery_cap_s  # racers wait this long for the relay to take their request
    connections: int = 256  # pooled connections at most (a soak keeps many calls in flight)
    netns: str | None = None  # the network namespace of the relay it talks to directly (a sandbox slot's)
    speech: Speech = field(default_factory=Course)  # how the relay is spoken to (relaychaos.stack.speech)
    _session: aiohttp.ClientSession | None = field(default=None, init=False, repr=False)
    _procs: itertools.count = field(default_factory=itertools.count, init=False, repr=False)

    async def __aenter__(self) -> Channel:
        trace = aiohttp.TraceConfig()
        trace.on_request_headers_sent.append(_note_sent)
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=self.connections),
            timeout=aiohttp.ClientTimeout(total=self.timeout_s),
            trace_configs=[trace],
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def base_url(self) -> str:
        return self.target() if callable(self.target) else self.target

    def _process(self) -> str:
        return f"{self.name}-{next(self._procs)}"

    # -- sending -----------------------------------------------------------------------
    async def send(
        self, request: dict, policy: RetryPolicy = RetryPolicy(), *, intent: str | None = None
    ) -> list[Outcome]:
        """Send one transfer, resending the same GUID as the policy says; every attempt's outcome.

        `intent` names the payment the client means to make (recorded with each call), so that
        a client that changes GUIDs between attempts can still be held to one debit per payment.
        """
        process = self._process()
        outcomes: list[Outcome] = []
        for attempt in range(1, policy.attempts + 1):
            outcome = await self.send_once(request, attempt=attempt, process=process, intent=intent)
            outcomes.append(outcome)
            if outcome.kind not in policy.retry_on:
                break
        return outcomes

    async def send_once(
        self, request: dict, *, attempt: int = 1, process: str | None = None, intent: str | None = None
    ) -> Outcome:
        """One transfer request in the relay's profile (the contract's POST /transfer by default), recorded as
        invoke then ok/info."""
        process = process or self._process()
        guid = str(request.get("guid"))
        self.recorder.transfer_sent(process, guid, attempt, request=request, intent=intent)
        return await self._post(process, guid, attempt, self.speech.request(request))

    async def send_raw(self, body: bytes, *, guid: str | None = None) -> Outcome:
        """Send a body as the contract spells it (a malformed request, say), in the relay's profile (Speech.raw:
        a keyed service gets it in its own shape, malformed the same way), recorded like any other call."""
        process = self._process()
        self.recorder.transfer_sent(process, guid, 1, raw=body.decode(errors="replace"))
        return await self._post(process, guid, 1, self.speech.raw(body, guid))

    async def _post(self, process: str, guid: str | None, attempt: int, request: HttpRequest) -> Outcome:
        """The request itself and the recording of its completion."""
        assert self._session is not None, "use `async with Channel(...)`"
        sent = types.SimpleNamespace(at=None)
        url = self.base_url() + request.path
        headers = {"Content-Type": "application/json", **request.headers}
        try:
            async with self._session.request(
                request.method, url, data=request.body, headers=headers, trace_request_ctx=sent
            ) as resp:
                body, over = await _body_within(resp)
                outcome = _answered(guid, attempt, resp.status, body, self.speech, over)
        except TimeoutError:
            outcome = Outcome(guid, attempt, "info", error=f"no answer within {self.timeout_s:g} s", timed_out=True)
        except aiohttp.ClientError as e:
            outcome = Outcome(guid, attempt, "info", error=f"{type(e).__name__}: {e}")
        outcome = dataclasses.replace(outcome, sent_at=sent.at)
        self._record(process, outcome)
        return outcome

    async def race(
        self, request: dict, n: int, release: asyncio.Event | None = None, ready: Callable[[], None] | None = None
    ) -> list[Outcome]:
        """Send n copies of one transfer at the same instant, each on its own fresh connection.

        The connections are opened first, paced to the relay's accept queue (see accept_queue);
        then every request is written in one event-loop turn: when this channel's connections
        are open (or, given `release`, once it is set: `ready()` says this channel's are open, so
        that races on several relays are released in the same turn). A racer waits up to
        `delivery_cap_s` for the relay to take its request (its accept queue may be full),
        then `timeout_s` for the answer; one never taken is aborted with a reset,
        so no request of this run reaches the relay after the run has moved on.
        """
        url = urlsplit(self.base_url())
        host, port = url.hostname or "127.0.0.1", url.port or 80
        wire_request = self.speech.request(request)
        data = raw_http.request_bytes(
            host, port, wire_request.path, wire_request.body, method=wire_request.method, headers=wire_request.headers
        )
        guid = str(request.get("guid"))
        conns = await accept_queue.open_paced(port, n, lambda: raw_http.connect(host, port), netns=self.netns)
        barrier = release or asyncio.Event()

        async def racer(conn: tuple[asyncio.StreamReader, asyncio.StreamWriter] | BaseException) -> Outcome:
            process = self._process()
            wire = raw_http.Wire()
            if not isinstance(conn, BaseException):
                wire.retransmits_at_connect = raw_http.tcp_retransmits(conn[1])
            await barrier.wait()
            self.recorder.transfer_sent(process, guid, 1, request=request, race=n)
            if isinstance(conn, BaseException):
                outcome = Outcome(guid, 1, "info", error=f"connect failed: {conn!r}")
            else:
                reader, writer = conn
                try:
                    raw = await raw_http.exchange(
                        reader, writer, data, wire, deliver_within_s=self.delivery_cap_s, answer_within_s=self.timeout_s
                    )
                    outcome = _answered(guid, 1, raw.status, raw.body, self.speech, raw.over)
                except TimeoutError:
                    outcome = Outcome(
                        guid, 1, "info", error=f"no answer within {self.timeout_s:g} s of delivery", timed_out=True
                    )
                except raw_http.NotDelivered as e:
                    outcome = Outcome(guid, 1, "info", error=str(e), timed_out=True)
                except (OSError, asyncio.IncompleteReadError, ValueError, IndexError) as e:
                    outcome = Outcome(guid, 1, "info", error=f"{type(e).__name__}: {e}")
            outcome = dataclasses.replace(outcome, sent_at=wire.sent_at, retransmits=wire.retransmits)
            if wire.retransmits:
                self.recorder.accept_delay(process, guid, wire.retransmits, n)
            self._record(process, outcome)
            return outcome

        tasks = [asyncio.create_task(racer(c)) for c in conns]
        await asyncio.sleep(0)  # let every racer reach the barrier
        if release is None:
            barrier.set()
        elif ready is not None:
            ready()
        return list(await asyncio.gather(*tasks))

    def _record(self, process: str, o: Outcome) -> None:
        if o.type == "ok":
            assert o.status is not None and o.body is not None, "an `ok` outcome carries the answer"
            self.recorder.transfer_answered(
                process,
                o.guid,
                o.attempt,
                status=o.status,
                code=o.code,
                body=o.body,
                sent_at=o.sent_at,
                retransmits=o.retransmits,
            )
        else:
            assert o.error is not None, "an `info` outcome says why"
            self.recorder.transfer_unanswered(
                process,
                o.guid,
                o.attempt,
                error=o.error,
                timed_out=o.timed_out,
                sent_at=o.sent_at,
                retransmits=o.retransmits,
            )


async def _note_sent(
    session: aiohttp.ClientSession,
    trace_config_ctx: types.SimpleNamespace,
    params: aiohttp.TraceRequestHeadersSentParams,
) -> None:
    """aiohttp trace hook: the request's headers are written on an established connection."""
    ctx = trace_config_ctx.trace_request_ctx
    if ctx is not None and ctx.at is None:
        ctx.at = time.monotonic()


OVER_ANSWER = f"(an answer body of over {raw_http.ANSWER_BYTES >> 10} KiB: the harness read none of it)"


def _answered(guid: str | None, attempt: int, status: int, raw: bytes, speech: Speech, over: bool = False) -> Outcome:
    """An HTTP answer: `ok`, with its code in the contract's words (the speech's reading of it); one whose body was
    over raw_http.ANSWER_BYTES is recorded with OVER_ANSWER for its body, read as the speech reads an empty one."""
    if over:
        return Outcome(guid, attempt, "ok", status=status, code=speech.code(status, b""), body=OVER_ANSWER)
    return Outcome(guid, attempt, "ok", status=status, code=speech.code(status, raw), body=raw.decode(errors="replace"))


async def _body_within(resp: aiohttp.ClientResponse) -> tuple[bytes, bool]:
    """(the answer's body, False), or (b"", True) as soon as it is over raw_http.ANSWER_BYTES: no more is read."""
    body = bytearray()
    async for chunk in resp.content.iter_chunked(16 << 10):
        body += chunk
        if len(body) > raw_http.ANSWER_BYTES:
            return b"", True
    return bytes(body), False
