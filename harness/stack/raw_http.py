"""A minimal HTTP/1.1 exchange over a socket opened in advance: for requests that must race.

aiohttp opens connections lazily, so N requests "released together" would
really be spread over N connection set-ups. Here the connections are opened
first and the requests written only when the barrier falls, so all N reach the
relay within one event-loop turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import time
from dataclasses import dataclass

TCPI_UNACKED = 24  # offsets in Linux's struct tcp_info
TCPI_TOTAL_RETRANS = 100
DELIVERY_POLL_S = 0.005


class NotDelivered(Exception):
    """The request's bytes were never acknowledged by the relay's kernel within the time allowed."""


@dataclass
class Wire:
    """What the socket saw of one exchange: when the request reached the relay, and TCP retransmits.

    `sent_at` is the moment the relay's kernel had acknowledged every byte of the
    request: it has reached the relay on an established connection (contract §3,
    v1.1). Retransmits on loopback mean the peer's kernel dropped our segments: its
    accept queue was full.
    """

    sent_at: float | None = None
    retransmits_at_connect: int = 0
    retransmits: int = 0


def _tcp_info(writer: asyncio.StreamWriter, offset: int) -> int | None:
    sock = writer.get_extra_info("socket")
    try:
        info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, TCPI_TOTAL_RETRANS + 4)
        return struct.unpack_from("I", info, offset)[0]
    except (OSError, AttributeError, struct.error):
        return None  # no TCP_INFO here: take what was written as delivered


def tcp_retransmits(writer: asyncio.StreamWriter) -> int:
    """Segments this connection has retransmitted so far (0 where TCP_INFO is not available)."""
    return _tcp_info(writer, TCPI_TOTAL_RETRANS) or 0


async def delivered(writer: asyncio.StreamWriter, within_s: float) -> float:
    """Wait until every byte written has been acknowledged by the peer's kernel; when that was seen.

    An observation, polled: the harness learns when the request reached the relay,
    it does not order events by sleeping. NotDelivered after within_s.
    """
    deadline = time.monotonic() + within_s
    while _tcp_info(writer, TCPI_UNACKED):
        if time.monotonic() > deadline:
            raise NotDelivered(f"the relay's kernel had not acknowledged the request after {within_s:g} s")
        await asyncio.sleep(DELIVERY_POLL_S)
    return time.monotonic()


ANSWER_BYTES = 64 << 10  # the most of an answer's body the harness reads: the contract's answer is a small object


class RawResponse:
    """Status and body of an answer read to the end of the connection; `over`: the body was over ANSWER_BYTES, and
    none of it was kept."""

    def __init__(self, status: int, body: bytes, over: bool = False):
        self.status, self.body, self.over = status, body, over


async def connect(host: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection(host, port)


def request_bytes(
    host: str, port: int, path: str, body: bytes, *, method: str = "POST", headers: dict[str, str] | None = None
) -> bytes:
    """One HTTP/1.1 request on a connection of its own (`Connection: close`); Content-Type JSON unless given."""
    fields = {"Content-Type": "application/json", **(headers or {})}
    head = f"{method} {path} HTTP/1.1\r\nHost: {host}:{port}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in fields.items())
    return (head + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + body


async def exchange(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    data: bytes,
    wire: Wire | None = None,
    *,
    deliver_within_s: float = 30.0,
    answer_within_s: float | None = None,
) -> RawResponse:
    """Write one request, wait for it to be delivered, then read the whole answer (Content-Length, chunked,
    or to EOF) within answer_within_s of delivery. NotDelivered or asyncio.TimeoutError otherwise;
    `wire` is filled in even when the exchange fails."""
    wire = wire or Wire()
    try:
        writer.write(data)
        await writer.drain()
        wire.sent_at = await delivered(writer, deliver_within_s)
        return await asyncio.wait_for(_read_answer(reader), answer_within_s)
    finally:
        wire.retransmits = max(0, tcp_retransmits(writer) - wire.retransmits_at_connect)
        if wire.sent_at is None:
            abort(writer)
        else:
            writer.close()


def abort(writer: asyncio.StreamWriter) -> None:
    """Close with a reset: bytes the peer has not taken die with the connection.

    A plain close would keep retransmitting them, and a relay whose accept queue
    was full could then receive the request long after the channel gave up on it.
    """
    sock = writer.get_extra_info("socket")
    with contextlib.suppress(OSError, AttributeError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


async def _read_answer(reader: asyncio.StreamReader) -> RawResponse:
    """One HTTP answer, read to its end, or as far as ANSWER_BYTES of its body (ValueError: a head over the stream
    reader's limit, 64 KiB)."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.LimitOverrunError:
        raise ValueError("the answer's head is over 64 KiB: the harness reads no more") from None
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    status = int(status_line.split()[1])
    headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in header_lines if h)}
    if "content-length" in headers:
        length = int(headers["content-length"])
        if length > ANSWER_BYTES:
            return RawResponse(status, b"", over=True)
        body = await reader.readexactly(length)
    elif headers.get("transfer-encoding", "").lower() == "chunked":
        chunked = await _read_chunked(reader)
        if chunked is None:
            return RawResponse(status, b"", over=True)
        body = chunked
    else:
        body = await reader.read(ANSWER_BYTES + 1)
        while len(body) <= ANSWER_BYTES and (more := await reader.read(ANSWER_BYTES + 1 - len(body))):
            body += more
    return RawResponse(status, b"", over=True) if len(body) > ANSWER_BYTES else RawResponse(status, body)


async def _read_chunked(reader: asyncio.StreamReader) -> bytes | None:
    """A chunked body, joined; None as soon as it is over ANSWER_BYTES (nothing more is read)."""
    parts: list[bytes] = []
    total = 0
    while True:
        size = int((await reader.readline()).split(b";")[0].strip(), 16)
        if size == 0:
            await reader.readline()
            return b"".join(parts)
        if total + size > ANSWER_BYTES:
            return None
        parts.append(await reader.readexactly(size))
        total += size
        await reader.readline()
