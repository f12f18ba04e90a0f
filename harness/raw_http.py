"""A minimal HTTP/1.1 exchange over a socket opened in advance: for requests that must race.

aiohttp opens connections lazily, so N requests "released together" would
really be spread over N connection set-ups. Here the connections are opened
first and the requests written only when the barrier falls, so all N reach the
relay within one event-loop turn.
"""
from __future__ import annotations

import asyncio
import json
import socket
import struct
import time
from dataclasses import dataclass

TCPI_TOTAL_RETRANS = 100  # offset of tcpi_total_retrans in Linux's struct tcp_info


@dataclass
class Wire:
    """What the socket saw of one exchange: when the request was written, and TCP retransmits since connect.

    Retransmits on loopback mean the peer's kernel dropped our segments: its accept
    queue was full, so the request reached the relay later than it was written.
    """

    sent_at: float | None = None
    retransmits_at_connect: int = 0
    retransmits: int = 0


def tcp_retransmits(writer: asyncio.StreamWriter) -> int:
    """Segments this connection has retransmitted so far (0 where TCP_INFO is not available)."""
    sock = writer.get_extra_info("socket")
    try:
        info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, TCPI_TOTAL_RETRANS + 4)
        return struct.unpack_from("I", info, TCPI_TOTAL_RETRANS)[0]
    except (OSError, AttributeError, struct.error):
        return 0


class RawResponse:
    """Status and body of an answer read to the end of the connection."""

    def __init__(self, status: int, body: bytes):
        self.status, self.body = status, body


async def connect(host: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection(host, port)


def request_bytes(host: str, port: int, path: str, payload: dict) -> bytes:
    body = json.dumps(payload).encode()
    head = (f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n")
    return head.encode() + body


async def exchange(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, data: bytes,
                   wire: Wire | None = None) -> RawResponse:
    """Write one request, read the whole answer (Content-Length, chunked, or to EOF); `wire` is filled in
    even when the exchange fails or is cancelled."""
    wire = wire or Wire()
    try:
        writer.write(data)
        await writer.drain()
        wire.sent_at = time.monotonic()
        head = await reader.readuntil(b"\r\n\r\n")
        status_line, *header_lines = head.decode("latin-1").split("\r\n")
        status = int(status_line.split()[1])
        headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in header_lines if h)}
        if "content-length" in headers:
            body = await reader.readexactly(int(headers["content-length"]))
        elif headers.get("transfer-encoding", "").lower() == "chunked":
            body = await _read_chunked(reader)
        else:
            body = await reader.read()
        return RawResponse(status, body)
    finally:
        wire.retransmits = max(0, tcp_retransmits(writer) - wire.retransmits_at_connect)
        writer.close()


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    parts = []
    while True:
        size = int((await reader.readline()).split(b";")[0].strip(), 16)
        if size == 0:
            await reader.readline()
            return b"".join(parts)
        parts.append(await reader.readexactly(size))
        await reader.readline()
