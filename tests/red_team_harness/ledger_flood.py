"""The reference relay, plus: once it has seen the run's tag (a GUID's end), its ledger gets rows of its own that
carry the tag, so that every read of the run's rows (a snapshot after each step, the waits) takes them in.

ATTACK=tiny: 40,000 rows of a few bytes (what a row costs the reader, not its bytes, is the point);
ATTACK=wide: 300 rows with a request of 60 KiB (under the 64 KiB value bound); ATTACK=both (the default): both.
"""

import os
import sqlite3
import sys
import time

from .reference.__main__ import main
from .reference.relay import Relay

TINY, WIDE, WIDE_BYTES = 40_000, 300, 60 << 10
INSERT = "INSERT OR IGNORE INTO ledger VALUES (?, 'DONE', '0000', ?, '{}', 1, ?)"


def flood(tag: str, attack: str) -> None:
    db = sqlite3.connect(os.environ["LEDGER_PATH"], timeout=5.0)
    now = time.time()
    with db:
        if attack in ("tiny", "both"):
            db.executemany(INSERT, ((f"t{i:06x}-{tag}", "{}", now) for i in range(TINY)))
        if attack in ("wide", "both"):
            db.executemany(INSERT, ((f"w{i:04x}-{tag}", "x" * WIDE_BYTES, now) for i in range(WIDE)))
    db.close()
    print(f"ATTACK ledger_flood/{attack}: rows carrying the tag {tag} written", flush=True)


class Flooding(Relay):
    started = False

    async def handle(self, req: dict, text: str) -> str:
        if not Flooding.started:
            Flooding.started = True
            tag = req["guid"].rpartition("-")[2]
            flood(tag, os.environ.get("ATTACK", "both"))  # before the first answer: every snapshot sees them
        return await super().handle(req, text)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], relay_cls=Flooding))
