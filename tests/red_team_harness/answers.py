"""A relay whose serve answers the channel with HTTP that never ends or is too big, one way per transfer (its own
server on asyncio streams; the batch commands are the reference's):

1st transfer: a chunked body that never ends (a byte a millisecond); 2nd: a head promising 1,000 bytes of body and
10 of them, then nothing; 3rd: a head of 127 headers of 8,000 bytes; from the 4th (the racers' raw HTTP among
them): a chunked body whose every chunk is one byte under a chunk extension of 60,000 bytes, never ending.
"""

import asyncio
import itertools
import json
import os
import sys

from .reference.__main__ import main
from .reference.ledger import Ledger

OK = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
count = itertools.count(1)


async def endless(writer: asyncio.StreamWriter, chunk: bytes) -> None:
    writer.write(f"{OK}Transfer-Encoding: chunked\r\n\r\n".encode())
    while True:
        writer.write(chunk)
        await writer.drain()
        await asyncio.sleep(0.001)


async def answer(writer: asyncio.StreamWriter, guid: str) -> None:
    n = next(count)
    print(f"ATTACK answers/{n}: answering {guid}", flush=True)
    if n == 1:
        await endless(writer, b"1\r\nx\r\n")
    elif n == 2:
        writer.write(f'{OK}Content-Length: 1000\r\n\r\n{{"guid": "{guid}"'.encode())
        await writer.drain()
        await asyncio.sleep(3600)
    elif n == 3:
        body = json.dumps({"guid": guid, "code": "0000"}).encode()
        pads = "".join(f"X-Pad-{i}: {'a' * 8000}\r\n" for i in range(127))
        writer.write(f"{OK}{pads}Content-Length: {len(body)}\r\n\r\n".encode() + body)
        await writer.drain()
    else:
        await endless(writer, b"1;" + b"e" * 60000 + b"\r\nx\r\n")


async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            lengths = [int(h.split(b":")[1]) for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")]
            length = lengths[0] if lengths else 0
            body = await reader.readexactly(length)
            if head.startswith(b"GET /health"):
                writer.write(f"{OK}Content-Length: 2\r\n\r\n{{}}".encode())
                await writer.drain()
                continue
            guid = str(json.loads(body).get("guid"))
            await answer(writer, guid)
            return
    except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
        pass
    finally:
        writer.close()


async def serve_forever() -> None:
    server = await asyncio.start_server(serve, os.environ["RELAY_HOST"], int(os.environ["RELAY_PORT"]))
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    if sys.argv[1:2] == ["serve"]:
        Ledger(os.environ["LEDGER_PATH"])  # the contract's table, so that only the answers are wrong
        asyncio.run(serve_forever())
    else:
        sys.exit(main(sys.argv[1:]))
