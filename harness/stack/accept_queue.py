"""How full a listening socket's accept queue is, read from the kernel (sock_diag), as `ss -lnt` does.

    listen_queue(8080)  ->  Queue(waiting=2, size=5)   (None where the kernel cannot say)

Racers open their connections before the barrier falls; a relay with a short listen backlog
(Python's http.server keeps 5) would see 32 connections arrive in one instant, its kernel would
drop the handshakes past 5, and each dropped one would come back only after TCP's 1 s, 3 s, 7 s
retransmit timers. `open_paced` opens them one at a time instead, each when the queue has room:
the requests are still released together, on connections the relay's kernel has taken, and a
race no longer waits out retransmit timers that say nothing about the relay's dedup.
"""

from __future__ import annotations

import asyncio
import socket
import struct
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from relaychaos.sandbox.netns import socket_in

NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
NLM_F_REQUEST, NLM_F_DUMP = 0x1, 0x300
NLMSG_DONE, NLMSG_ERROR = 3, 2
TCP_LISTEN = 10
HEADER = struct.Struct("=IHHII")  # struct nlmsghdr
REQUEST = struct.Struct("=BBBBI48s")  # struct inet_diag_req_v2: family, protocol, ext, pad, states, sockid
MESSAGE = struct.Struct("=BBBB2s2s32s4s8sIIIII")  # struct inet_diag_msg (sport, dport big-endian)
ROOM_POLL_S = 0.001
T = TypeVar("T")


@dataclass(frozen=True)
class Queue:
    """A listener's accept queue: connections the kernel has completed and the relay not yet accepted."""

    waiting: int
    size: int  # the backlog the relay asked for, as the kernel caps it

    @property
    def has_room(self) -> bool:
        return self.waiting < self.size


def listen_queue(port: int, netns: str | None = None) -> Queue | None:
    """The accept queue of the TCP listener on `port` (IPv4 or IPv6), in this network namespace or the one at
    `netns` (a sandboxed relay's), or None if none is found or readable."""
    for family in (socket.AF_INET, socket.AF_INET6):
        try:
            for sport, waiting, size, _ in listeners(family, netns):
                if sport == port:
                    return Queue(waiting, size)
        except OSError:
            return None  # no sock_diag here (not Linux, or forbidden): pacing is skipped
    return None


def listeners(family: int, netns: str | None = None) -> list[tuple[int, int, int, int]]:
    """(port, waiting, size, inode) of every TCP listener of one address family, in this network namespace (or
    the one at `netns`).

    OSError where sock_diag is missing or refuses.
    """
    request = REQUEST.pack(family, socket.IPPROTO_TCP, 0, 0, 1 << TCP_LISTEN, bytes(48))
    kind = (socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_SOCK_DIAG)
    with socket.socket(*kind) if netns is None else socket_in(netns, *kind) as nl:
        nl.sendto(
            HEADER.pack(HEADER.size + len(request), SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST | NLM_F_DUMP, 1, 0) + request,
            (0, 0),
        )
        found: list[tuple[int, int, int, int]] = []
        while True:
            data = nl.recv(65536)
            offset = 0
            while offset + HEADER.size <= len(data):
                length, kind, _, _, _ = HEADER.unpack_from(data, offset)
                if kind == NLMSG_DONE:
                    return found
                if kind == NLMSG_ERROR or length < HEADER.size:
                    raise OSError("sock_diag refused the request")
                msg = MESSAGE.unpack_from(data, offset + HEADER.size)
                found.append((int.from_bytes(msg[4], "big"), msg[10], msg[11], msg[13]))  # sport, rqueue, wqueue, inode
                offset += (length + 3) & ~3


async def open_paced(
    port: int, n: int, connect: Callable[[], Awaitable[T]], *, stall_s: float = 0.25, netns: str | None = None
) -> list[T | BaseException]:
    """Open n connections to the listener on `port`, one at a time, each when its accept queue has room.

    Where the queue cannot be read, all n are opened at once (as before). A relay that stops
    accepting (one that serves a connection at a time, say) is waited for `stall_s` at most;
    then the rest are opened without waiting, and their delays show as retransmits, reported.
    """
    if listen_queue(port, netns) is None:
        return list(await asyncio.gather(*(connect() for _ in range(n)), return_exceptions=True))
    conns: list[T | BaseException] = []
    pacing = True
    for _ in range(n):
        if pacing:
            pacing = await _room(port, stall_s, netns)
        try:
            conns.append(await connect())
        except (TimeoutError, OSError) as e:
            conns.append(e)
    return conns


async def _room(port: int, stall_s: float, netns: str | None) -> bool:
    """Wait until the listener's queue has room for one more; False if it stayed full for stall_s."""
    deadline = time.monotonic() + stall_s
    while True:
        queue = listen_queue(port, netns)
        if queue is None or queue.has_room:
            return True
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(ROOM_POLL_S)
