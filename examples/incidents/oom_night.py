"""Writes the bundle of a night as three production stacks log it: the relay OOMKilled with two debits in flight,
and a resolve at restart that ignored --min-age.

    python examples/incidents/oom_night.py examples/incidents/oom-early-resolve          # the example (300 transfers)
    python examples/incidents/oom_night.py /tmp/big --transfers 1000000 --noise 2        # the import benchmark's input

The night (02:00 to 02:35 Europe/Berlin, 21 November 2026): a transfer every ~7 s from two channel pods to
the relay pod; from 02:20 the core banking system takes ~3 s a call. At 02:24:10.5 the relay pod is
OOMKilled while two debits are being processed (sent 02:24:08.9 and 02:24:09.8, answered 02:24:11.8 and
02:24:12.84); the kubelet restarts it at 02:24:11.3; the relay-resolve CronJob starts at 02:24:11.9 and the
build that ran queried every SENT row whatever its age: the first GUID was found (DONE), the second was
still being processed (404) and marked FAILED. The channel, which got ECONNRESET for both, resent them:
the first got its saved 0000, the second was claimed back and sent again: debited twice. One transfer sent
while the pod was down got ECONNREFUSED and was resent. Two customers were refused for insufficient funds;
one merchant payout debits 184 999 minor units.

Logs: the channel's zap JSON lines (one file per channel pod, epoch milliseconds, `transfer started`,
`transfer finished` and noise lines), the core banking journal as CSV (local times without a zone, its own
column names and outcome words, a clock 80 ms behind), Kubernetes events as JSON lines (OOMKilling,
Started, Pulled, Scheduled, the CronJob's SuccessfulCreate, the job pod's own events), the relay's SQLite
ledger as it was at 02:40. `incident.toml` maps them. Deterministic: the same seed writes the same files.
"""
from __future__ import annotations

import argparse
import csv
import json
import random
import sqlite3
from datetime import datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

BERLIN = ZoneInfo("Europe/Berlin")
START = datetime(2026, 11, 21, 2, 0, 0, tzinfo=BERLIN).timestamp()
KILL, RESTART, RESOLVE = START + 24 * 60 + 10.5, START + 24 * 60 + 11.3, START + 24 * 60 + 11.9
SLOW_FROM = START + 20 * 60
ACCOUNT_CLOCK_BEHIND = 0.080
POD, CRON = "relay-7d9f8-x2k4p", "relay-resolve"

TOML = '''# Written by examples/incidents/oom_night.py: the relay OOMKilled with two debits in flight, then an early resolve.
name = "oom-early-resolve-2026-11-21"
description = """Core banking slowed to about 3 s a call; the relay pod was OOMKilled while two debits were being
processed. On restart the relay-resolve job ran at once and ignored --min-age: it found one GUID still being
processed (404) and marked it FAILED; the channel resent it and it was debited twice."""
relay = "relay_under_test/mutants/resolve_ignores_min_age/relay.toml"
account_timeout_ms = 300

[pods]
"relay-7d9f8-*" = "a"
"relay-resolve" = "a"

[logs.channel]
files = ["channel-*.jsonl"]
time = "epoch_ms"
take = {msg = "transfer finished"}
fields = {guid = "transfer.guid", at = "start_ts", from = "transfer.from", to = "transfer.to", amount = "transfer.amount", result = "code", relay = "relay_pod"}
codes = {OK = "0000", ECONNRESET = "timeout", ECONNREFUSED = "timeout"}

[logs.account]
files = ["core-banking-journal.csv"]
time = "local"
zone = "Europe/Berlin"
fields = {guid = "txn_ref", at = "received", answered_at = "posted", from = "debit_account", to = "credit_account", amount = "amount_minor", code = "outcome"}
codes = {POSTED = "0000", REJECTED_NSF = "B201", REJECTED_ACCOUNT = "B202"}

[logs.operations]
files = ["k8s-events.jsonl"]
time = "iso"
take = {"involvedObject.name" = ["relay-7d9f8-*", "relay-resolve"]}
fields = {at = "eventTime", event = "reason", relay = "involvedObject.name", command = {path = "involvedObject.name", regex = "relay-(resolve|reprocess|purge)"}}
codes = {OOMKilling = "kill", Started = "start", SuccessfulCreate = "batch", Pulled = "-", Created = "-", Scheduled = "-"}
defaults = {argument = 300}    # the CronJob runs `relay resolve --min-age 300`

[logs.ledger]
files = ["ledger.sqlite"]
'''


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _local(t: float) -> str:
    return datetime.fromtimestamp(t, BERLIN).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def _transfers(n: int, rng: random.Random, customers: int = 40) -> list[dict]:
    """The night's transfers in send order, with their production fate, between `customers` accounts."""
    customers = [f"cust-{i:04d}" for i in range(1, customers + 1)]
    gap = 35 * 60 / (n + 4)
    out, t = [], START + 2.0
    for i in range(n):
        t += gap * rng.uniform(0.6, 1.4)
        src, dst = rng.sample(customers, 2)
        out.append({"guid": f"tx-{rng.getrandbits(64):016x}", "at": t, "from": src, "to": dst,
                    "amount": rng.randint(100, 9000), "pod": i % 2})
    out.sort(key=lambda x: x["at"])
    out = [x for x in out if not KILL - 3.0 < x["at"] < RESTART + 4.0]  # the minute of the kill is written below
    out.append({"guid": "tx-payout-merchant-0042", "at": START + 600.0, "from": "merchant-payouts",
                "to": "cust-0007", "amount": 184_999, "pod": 0})
    for k, who in enumerate(("cust-0013", "cust-0021")):
        out.append({"guid": f"tx-nsf-{k}", "at": START + 900.0 + 300 * k, "from": who, "to": "cust-0001",
                    "amount": 900_000, "pod": 1, "refused": True})
    out += [{"guid": "tx-9c41d2e07b5a4f18", "at": KILL - 1.6, "from": "cust-0003", "to": "cust-0030", "amount": 4200,
             "pod": 0, "story": "found"},
            {"guid": "tx-5e8a0b7c3d2f6914", "at": KILL - 0.7, "from": "cust-0011", "to": "cust-0025", "amount": 7350,
             "pod": 1, "story": "doubled"},
            {"guid": "tx-a1b2c3d4e5f60718", "at": KILL + 0.4, "from": "cust-0019", "to": "cust-0002", "amount": 510,
             "pod": 0, "story": "refused"}]
    return sorted(out, key=lambda x: x["at"])


def _night(n: int, seed: int, customers: int = 40) -> tuple[list, list, list]:
    """(channel lines (pod, line), account rows, events): every request, call and event of the night."""
    rng = random.Random(seed)
    channel, account = [], []
    for x in _transfers(n, rng, customers):
        took = rng.uniform(2.7, 3.3) if x["at"] >= SLOW_FROM else rng.uniform(0.02, 0.09)
        recv = x["at"] + rng.uniform(0.02, 0.05)
        story = x.get("story")
        if story == "found":
            recv, took = KILL - 1.57, KILL + 1.3 - (KILL - 1.57)
        elif story == "doubled":
            recv, took = KILL - 0.66, KILL + 2.34 - (KILL - 0.66)
        code = "B201" if x.get("refused") else "0000"
        if story == "refused":
            channel.append((x, x["at"], x["at"] + 0.002, "ECONNREFUSED"))
            x2 = {**x, "at": RESTART + 6.0}
            channel.append((x2, x2["at"], x2["at"] + 3.1, "OK"))
            account.append((x2, x2["at"] + 0.03, x2["at"] + 3.05, code))
            continue
        if story in ("found", "doubled"):
            channel.append((x, x["at"], KILL + 0.001, "ECONNRESET"))
            account.append((x, recv, recv + took, code))
            resend = KILL + (2.7 if story == "found" else 3.1)
            channel.append(({**x, "pod": x["pod"]}, resend, resend + (0.004 if story == "found" else 3.0), "OK"))
            if story == "doubled":
                account.append((x, resend + 0.05, resend + 2.99, code))
            continue
        channel.append((x, x["at"], recv + took + 0.01, "OK" if code == "0000" else code))
        account.append((x, recv, recv + took, code))
    events = [(START - 300.0, "Scheduled", POD), (START - 298.0, "Pulled", POD), (START - 297.5, "Created", POD),
              (START - 297.0, "Started", POD), (KILL, "OOMKilling", POD), (RESTART - 0.3, "Pulled", POD),
              (RESTART - 0.1, "Created", POD), (RESTART, "Started", POD), (RESOLVE, "SuccessfulCreate", CRON),
              (RESOLVE + 0.4, "Scheduled", "relay-resolve-29391864-7xk2p"),
              (RESOLVE + 0.9, "Started", "relay-resolve-29391864-7xk2p")]
    return channel, account, events


def _write_channel(folder: Path, channel: list, noise: int, rng: random.Random) -> None:
    files = [open(folder / f"channel-{p}.jsonl", "w") for p in (0, 1)]
    try:
        lines: list[tuple[float, int, str]] = []
        for x, at, done, code in channel:
            tx = {"guid": x["guid"], "from": x["from"], "to": x["to"], "amount": x["amount"]}
            start = {"level": "info", "ts": round(at * 1000, 3), "logger": "channel.transfer",
                     "caller": "transfer/client.go:88", "msg": "transfer started", "transfer": tx, "relay_pod": POD}
            end = {**start, "ts": round(done * 1000, 3), "caller": "transfer/client.go:131", "msg": "transfer finished",
                   "start_ts": round(at * 1000, 3), "code": code, "latency_ms": round((done - at) * 1000, 1)}
            lines += [(at, x["pod"], json.dumps(start)), (done, x["pod"], json.dumps(end))]
            for _ in range(noise):
                t = at + rng.uniform(0, 5)
                lines.append((t, x["pod"], json.dumps({"level": "debug", "ts": round(t * 1000, 3),
                                                       "msg": rng.choice(("health probe ok", "metrics flushed")),
                                                       "series": rng.randint(10, 99)})))
        for _, pod, line in sorted(lines):
            files[pod].write(line + "\n")
    finally:
        for f in files:
            f.close()


def write(folder: Path, transfers: int = 300, noise: int = 1, seed: int = 21, customers: int = 40) -> Path:
    """Write the bundle into folder (see the module doc); returns the folder."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    channel, account, events = _night(transfers, seed, customers)
    _write_channel(folder, channel, noise, random.Random(seed + 1))
    with open(folder / "core-banking-journal.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["journal_id", "txn_ref", "received", "posted", "debit_account", "credit_account", "amount_minor",
                    "currency", "outcome"])
        for n, (x, recv, done, code) in enumerate(sorted(account, key=lambda a: a[1]), 1):
            w.writerow([f"J{n:08d}", x["guid"], _local(recv - ACCOUNT_CLOCK_BEHIND), _local(done - ACCOUNT_CLOCK_BEHIND),
                        x["from"], x["to"], x["amount"], "EUR", "POSTED" if code == "0000" else "REJECTED_NSF"])
    with open(folder / "k8s-events.jsonl", "w") as f:
        for n, (t, reason, name) in enumerate(events):
            kind = "CronJob" if name == CRON else "Pod"
            f.write(json.dumps({"kind": "Event", "apiVersion": "v1", "metadata": {"name": f"{name}.{n:x}",
                                "namespace": "payments"}, "involvedObject": {"kind": kind, "name": name,
                                "namespace": "payments"}, "reason": reason, "eventTime": _iso(t),
                                "type": "Warning" if reason == "OOMKilling" else "Normal"}) + "\n")
    _ledger(folder / "ledger.sqlite", channel, account)
    (folder / "incident.toml").write_text(TOML)
    return folder


def _ledger(path: Path, channel: list, account: list) -> None:
    path.unlink(missing_ok=True)
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE ledger (guid TEXT PRIMARY KEY, status TEXT NOT NULL, resp_code TEXT, request TEXT NOT "
               "NULL, response TEXT, attempts INTEGER NOT NULL, updated_at REAL NOT NULL)")
    calls: dict[str, list] = {}
    for x, recv, done, code in account:
        calls.setdefault(x["guid"], []).append((done, code))
    for x, _, _, _ in channel:
        made = calls.get(x["guid"], [])
        code = made[-1][1] if made else "E902"
        req = json.dumps({"guid": x["guid"], "from": x["from"], "to": x["to"], "amount": x["amount"]})
        db.execute("INSERT OR REPLACE INTO ledger VALUES (?, 'DONE', ?, ?, ?, ?, ?)",
                   (x["guid"], code, req, json.dumps({"guid": x["guid"], "code": code}), max(len(made), 1),
                    made[-1][0] if made else x["at"]))
    db.commit()
    db.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out")
    parser.add_argument("--transfers", type=int, default=300)
    parser.add_argument("--noise", type=int, default=1, help="noise lines per transfer in the channel logs")
    parser.add_argument("--seed", type=int, default=21)
    parser.add_argument("--customers", type=int, default=40, help="the accounts the ordinary transfers move between")
    a = parser.parse_args()
    print(write(Path(a.out), a.transfers, a.noise, a.seed, a.customers))
