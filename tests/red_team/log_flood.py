"""Red team, class 15: gigabyte logs.

In `purge` (the last command of a scenario), after serve and every other command have said what they had to:
1 GiB on stdout, 1 GiB on stderr, then 256 MiB in one line without a newline. Each attempt first says
`refused` (what the log keeps if the submission's log budget holds), then floods, then says `ACHIEVED`: that
last line is in the log only if everything before it was kept, past the 64 MiB budget.
"""

import os
import sys

from .evidence import Attack, emit, whoami
from .reference.__main__ import main

NAME = "log_flood"
ATTEMPTS = ("stdout-gigabyte", "stderr-gigabyte", "one-line")
A = Attack(NAME)
MIB = 1 << 20
FLOODS = (
    ("stdout-gigabyte", 1, 1024, b"red team flood on stdout " * 40 + b"\n"),
    ("stderr-gigabyte", 2, 1024, b"red team flood on stderr " * 40 + b"\n"),
    ("one-line", 1, 256, b"x" * 1000),
)


def flood(fd: int, mib: int, pattern: bytes) -> None:
    chunk = (pattern * (MIB // len(pattern) + 1))[:MIB]
    for _ in range(mib):
        view = memoryview(chunk)
        while view:
            view = view[os.write(fd, view) :]


if __name__ == "__main__":
    whoami(NAME, sys.argv[1])
    if sys.argv[1] == "purge":
        for attempt, _, mib, _ in FLOODS:
            A.refused(
                attempt,
                f"about to write {mib} MiB; if the log budget holds, this is the last line of this attempt in the log",
            )
        for attempt, fd, mib, pattern in FLOODS:
            flood(fd, mib, pattern)
            emit("")
            A.achieved(attempt, f"all {mib} MiB and this line reached the log: no budget held it")
    sys.exit(main(sys.argv[1:]))
