"""The reference relay, plus output the harness may read back: lines without end, of bytes that are not UTF-8 and
a character beyond the BMP (so that a reader decoding the log holds four bytes a character).

ATTACK=start: serve prints 40 MiB of that, no newline, and exits before it is ready (a start the harness then
diagnoses, reading its log); ATTACK=batch: every batch command prints 30 MiB of it and exits 3.
"""

import os
import sys

from .reference.__main__ import main

FLOOD = b"\xff" * (1 << 20) + "\U0001f600".encode()


def flood(mib: int) -> None:
    for _ in range(mib):
        os.write(1, FLOOD)


if __name__ == "__main__":
    attack = os.environ.get("ATTACK", "start")
    command = sys.argv[1]
    if attack == "start" and command == "serve":
        flood(40)
        sys.exit(1)
    if attack == "batch" and command != "serve":
        flood(30)
        sys.exit(3)
    sys.exit(main(sys.argv[1:]))
