"""Text a student reads, made the same on every regrade: no absolute paths, ports, pids, workers or GUIDs.

    clean(text, labels={guid: "g1"}, places={"/class/alice": ""})

A run leases ports at random, names its sandbox folders at random, mints GUIDs from a
random run tag, and runs scenarios on whichever xdist worker is free; none of that is the
student's to read, and all of it would make two gradings of the same relay differ. Each
GUID becomes its scenario label (the history records label -> GUID), `places` maps
folders to what the student knows them as (the submission's folder to nothing), the
sandbox's copies of a relay to the relay's own folder name, and what is left of a path
to its last two parts. Timeline times stay: they are what the student needs, and a
regrade comparison sets them aside (`masked`).
"""

from __future__ import annotations

import re

GUID = re.compile(r"\b[0-9a-f]{12}-[0-9a-f]{8}\b")
LABELLED = re.compile(r"(GUID|key) (\S+) \(scenario label ([^)]+)\)")  # a course GUID, a keyed service's key
WORKER_LINE = re.compile(r"^\[gw\d+\] \S+ -- Python .*$\n?", re.M)
HISTORY_LINE = re.compile(r"^\s*history: .*$\n?", re.M)
SLOT_COPY = re.compile(r"/run/relaychaos/slot-\d+/relays/[0-9a-f]+/")
SLOT_LEDGER = re.compile(r"/run/relaychaos/slot-\d+/ledgers/[0-9a-f]+/ledger\.sqlite")
SLOT_ANY = re.compile(r"/run/relaychaos/slot-\d+/[^\s'\",:)]*")
URL_HOST = re.compile(r"\bhttps?://\d{1,3}(?:\.\d{1,3}){3}:\d+")
HOST_PORT = re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}:\d{2,5}\b")
PORT = re.compile(r"\bport \d{2,5}\b")
PID_AFTER = re.compile(r", pid \d+\b")
PID = re.compile(r"\bpid \d+\b")
WORKER = re.compile(r"\[?\bgw\d+\b\]?\s?")
EVENT_INDEX = re.compile(r"(?<=s  )#\d+ +")
ABS_PATH = re.compile(r"(?<![\w.:/])(?:/[\w.@+-]+){3,}")
TIMING = re.compile(r"(?:[+-]\s*)?\d+(?:\.\d+)?\s?(?:ms|s)\b")


def clean(text: str | None, labels: dict[str, str] | None = None, places: dict[str, str] | None = None) -> str:
    """`text` as a student reads it (see the module doc); '' for None."""
    if not text:
        return ""
    labels = labels or {}
    out = WORKER_LINE.sub("", text)
    out = HISTORY_LINE.sub("", out)
    out = LABELLED.sub(lambda m: f"{m.group(1)} {m.group(3)}", out)
    out = GUID.sub(lambda m: labels.get(m.group(0), "<guid>"), out)
    for folder, shown in sorted((places or {}).items(), key=lambda kv: -len(kv[0])):
        if folder and folder != "/":
            out = out.replace(folder.rstrip("/") + "/", shown.rstrip("/") + "/" if shown else "")
            out = out.replace(folder.rstrip("/"), shown or ".")
    out = SLOT_LEDGER.sub("LEDGER_PATH", out)
    out = SLOT_COPY.sub("", out)
    out = SLOT_ANY.sub("(a sandbox folder)", out)
    out = URL_HOST.sub("http://RELAY_HOST:RELAY_PORT", out)
    out = HOST_PORT.sub("HOST:PORT", out)
    out = PORT.sub("port PORT", out)
    out = PID_AFTER.sub("", out)
    out = PID.sub("a process", out)
    out = WORKER.sub("", out)
    out = EVENT_INDEX.sub("", out)
    out = ABS_PATH.sub(lambda m: ".../" + "/".join(m.group(0).split("/")[-2:]), out)
    return out.strip("\n")


def masked(text: str) -> str:
    """`text` with its timings replaced, to compare two gradings' texts (timings aside)."""
    return TIMING.sub("<t>", text)


def tail(text: str, lines: int = 12) -> str:
    """The last `lines` non-empty lines of a log: what a program said last before it stopped."""
    kept = [line for line in text.splitlines() if line.strip() and not line.startswith("--- ")]
    return "\n".join(kept[-lines:])
