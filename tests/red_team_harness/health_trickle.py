"""A relay whose serve answers GET /health with `HTTP/1.1 200 OK` and then a header a byte every 0.2 s, never
ending it, for 3 s a connection (then it closes it): every read of the harness's poll gets a byte within its 1 s
socket time-out, so the poll waits as long as the relay trickles, whatever [limits] ready_timeout_s says (1 s here).
The batch commands are the reference's.
"""

import asyncio
import os
import sys
import time

from .reference.__main__ import main

TRICKLE_S = 5.0


async def trickle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    began = time.monotonic()
    try:
        await reader.readuntil(b"\r\n\r\n")
        print("ATTACK health_trickle/poll: trickling a 200 to a poll, a byte every 0.2 s", flush=True)
        writer.write(b"HTTP/1.1 200 OK\r\nX-Slow: ")
        while time.monotonic() - began < TRICKLE_S:
            writer.write(b"a")
            await writer.drain()
            await asyncio.sleep(0.2)
        print(f"ATTACK health_trickle/poll: trickled {time.monotonic() - began:.1f} s to one poll", flush=True)
    except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
        print(
            f"ATTACK health_trickle/poll: refused, the poll gave up after {time.monotonic() - began:.1f} s", flush=True
        )
    finally:
        writer.close()


async def serve() -> None:
    server = await asyncio.start_server(trickle, os.environ["RELAY_HOST"], int(os.environ["RELAY_PORT"]))
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    if sys.argv[1:2] == ["serve"]:
        asyncio.run(serve())
    else:
        sys.exit(main(sys.argv[1:]))
