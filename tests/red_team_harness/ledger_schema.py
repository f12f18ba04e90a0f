"""The reference relay, plus a ledger file whose schema is small on disk and large in a reader's memory: before
serve starts, 3,000 triggers on a table of its own (never on `ledger`, so its own writes stay fast), each under
1 KiB of SQL (within the account system's 1 KiB length limit and the harness's 64 KiB) holding an IN list of 400
constants. SQLite parses the whole schema on a connection's first statement and keeps it while the connection
lives: about 50 bytes of memory a byte of schema, in whoever reads the file.
"""

import os
import sqlite3
import sys

from .reference.__main__ import main

TRIGGERS, ITEMS = 3000, 400


def big_schema(path: str) -> None:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("CREATE TABLE IF NOT EXISTS side (x INTEGER)")
    items = ",".join(["1"] * ITEMS)
    db.execute("BEGIN")
    for n in range(TRIGGERS):
        db.execute(f"CREATE TRIGGER IF NOT EXISTS t{n} AFTER INSERT ON side BEGIN SELECT 1 IN ({items}); END")
    db.execute("COMMIT")
    db.close()
    print(f"ATTACK ledger_schema/triggers: {TRIGGERS} triggers, {os.path.getsize(path) >> 20} MiB on disk", flush=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["serve"]:
        big_schema(os.environ["LEDGER_PATH"])
    sys.exit(main(sys.argv[1:]))
