"""Long histories made of real recorded ones, with a few violations injected at known GUIDs.

    injected = build(Path("h.jsonl.gz"), events=100_000)   # [(rule, guid, what was done), ...]

The templates are histories recorded against the reference relay (tests/data/recorded,
every rule held), all under the same account time-out. Copies of them are laid end to
end, one after another in time (each ends healed): each copy's GUIDs and intents get a
suffix of their own and its times are shifted past the copy before. One header starts
the history; the account system's log (calls renumbered, per-GUID summaries, balances
moved by every copy) and one ledger snapshot holding every copy's final rows end it.
The copies' own snapshots are left out: a snapshot shows the whole ledger, and the
copies' ledgers were not one. So the ledger-transition and batch-window rules meet no
snapshot pairs here; everything else is judged as in the recorded runs.
"""

from __future__ import annotations

import gzip
import json
import re
from dataclasses import dataclass
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "recorded"
TEMPLATES = (
    "race-32-two-relays",
    "race-32-one-relay",
    "check-then-insert-short-resends",
    "dropped-response-downstream",
    "dropped-request-upstream",
    "dropped-response-to-channel",
    "latency-beyond-timeout",
    "proxy-down-refused",
    "reset-after-request-sent",
    "second-relay-joins",
    "happy-path",
    "resend-after-done",
    "reprocess-only-failed",
    "two-reprocess-runs-at-once",
    "resolve-query-fails",
    "malformed-requests",
    "account-e500",
)
TIMES = re.compile(r'"(time|sent_at|received_at|answered_at|wall|updated_at)": (-?[0-9][0-9.eE+-]*)')
INTENT = re.compile(r'("intent": "[^"]*)"')
LEFT_OUT = ("scenario", "ledger-snapshot", "ledger-schema", "account-stats")
START_BALANCE = 10**9


@dataclass
class Template:
    """One recorded history, ready to copy: its lines split around the times, its tag, its account log."""

    name: str
    tag: str
    header: dict
    lines: list[list]  # literal text and float times, alternating
    stats: dict
    final_rows: dict
    first: float
    last: float

    @classmethod
    def load(cls, name: str) -> Template:
        with gzip.open(DATA / f"ref-{name}.jsonl.gz", "rt") as f:
            events = [json.loads(line) for line in f]
        header = next(e["value"] for e in events if e["f"] == "scenario")
        stats = next(e["value"]["stats"] for e in events if e["f"] == "account-stats")
        rows = [e["value"]["rows"] for e in events if e["f"] == "ledger-snapshot" and e["type"] == "ok"]
        kept = [e for e in events if e["f"] not in LEFT_OUT]
        times = [e["time"] for e in events] + [
            t for c in stats["calls"] for t in (c["received_at"], c["answered_at"]) if t is not None
        ]
        return cls(
            name,
            header["tag"],
            header,
            [_split(e) for e in kept],
            stats,
            rows[-1] if rows else {},
            min(times),
            max(times),
        )

    def copy(self, n: int, offset: float, first_index: int) -> list[str]:
        """The copy's event lines: GUIDs and intents suffixed with `n`, times shifted by `offset`."""
        tag = f"{self.tag}k{n}"
        out = []
        for i, parts in enumerate(self.lines):
            text = "".join(p if type(p) is str else repr(p + offset) for p in parts)
            out.append(f'{{"index": {first_index + i}, ' + text.replace(self.tag, tag).replace("\x00", f"-k{n}"))
        return out

    def renamed(self, thing, n: int, offset: float):
        """Any JSON-able part of the template (its account log, its rows) with the copy's names and times."""
        text = TIMES.sub(lambda m: f'"{m[1]}": {float(m[2]) + offset!r}', json.dumps(thing))
        return json.loads(text.replace(self.tag, f"{self.tag}k{n}"))


def _split(event: dict) -> list:
    """An event's JSON line (less its index) as literal text and times; intents end with a NUL, the copy's mark."""
    text = json.dumps({k: v for k, v in event.items() if k != "index"})[1:] + "\n"
    text = INTENT.sub(lambda m: m[1] + '\x00"', text)
    parts, pos = [], 0
    for m in TIMES.finditer(text):
        parts += [text[pos : m.start(2)], float(m[2])]
        pos = m.end(2)
    return parts + [text[pos:]]


class Merged:
    """The account system's log and the ledger's final rows over every copy; injections change them."""

    def __init__(self, accounts: set[str]):
        self.calls: list[dict] = []
        self.guids: dict[str, dict] = {}
        self.balances = {a: START_BALANCE for a in accounts}
        self.rows: dict[str, dict] = {}

    def add_stats(self, stats: dict, t: Template) -> None:
        """One copy's account log (renamed): its calls numbered after the others, its balances' moves added."""
        for c in stats["calls"]:
            c["seq"] = len(self.calls) + 1
            self.calls.append(c)
        self.guids.update(stats["guids"])
        for a, v in stats["balances"].items():
            self.balances[a] = self.balances.get(a, START_BALANCE) + v - t.header["accounts"].get(a, 0)

    def stats(self) -> dict:
        return {"balances": self.balances, "guids": self.guids, "calls": self.calls, "faults": {}}


DEFINITE = ("0000", "B201", "B202", "B203", "E500")


def _first(calls: list[dict], test) -> int | None:
    return next((i for i, c in enumerate(calls) if c.get("guid") and test(c)), None)


def _told(lines: list[str], code: str) -> set[str]:
    """The GUIDs the channel was answered `code` for."""
    return {
        json.loads(line)["value"]["guid"]
        for line in lines
        if '"type": "ok", "f": "transfer"' in line and f'"code": "{code}"' in line
    }


def _double_debit(calls, stats, lines, rows):
    """The account system gets a GUID twice and debits it twice."""
    i = _first(calls, lambda c: c["applied"])
    if i is None:
        return None
    c = dict(calls[i], received_at=calls[i]["received_at"] + 1e-4, answered_at=calls[i]["answered_at"] + 1e-4)
    calls.insert(i + 1, c)
    s = stats["guids"][c["guid"]]
    s.update(calls=s["calls"] + 1, debits=s["debits"] + 1, codes=s["codes"] + [c["code"]])
    stats["balances"][c["request"]["from"]] -= c["request"]["amount"]
    stats["balances"][c["request"]["to"]] += c["request"]["amount"]
    return [("one-account-call", c["guid"]), ("one-debit", c["guid"]), ("balances", c["guid"])]


def _resent_unknown(calls, stats, lines, rows):
    """A GUID the relay left UNKNOWN (it answered E901) is sent to the account system again."""
    i = _first(calls, lambda c: c["guid"] in _told(lines, "E901"))
    if i is None:
        return None
    c = dict(
        calls[i],
        code="E500",
        applied=False,
        received_at=calls[i]["answered_at"] + 1e-4,
        answered_at=calls[i]["answered_at"] + 2e-4,
    )
    calls.insert(i + 1, c)
    s = stats["guids"][c["guid"]]
    s.update(calls=s["calls"] + 1, codes=s["codes"] + ["E500"])
    return [("one-account-call", c["guid"])]


def _lost(calls, stats, lines, rows):
    """The channel was told 0000, but the account system never debited the GUID."""
    told = _told(lines, "0000")
    i = _first(calls, lambda c: c["applied"] and c["guid"] in told and stats["guids"][c["guid"]]["calls"] == 1)
    if i is None:
        return None
    c = calls[i]
    c["applied"] = False
    stats["guids"][c["guid"]]["debits"] = 0
    stats["balances"][c["request"]["from"]] += c["request"]["amount"]
    stats["balances"][c["request"]["to"]] -= c["request"]["amount"]
    return [("exactly-once", c["guid"])]


def _sent_before_written(calls, stats, lines, rows):
    """The account system received a transfer with no SENT row in the ledger."""
    i = _first(calls, lambda c: c["sent_row"])
    if i is None:
        return None
    calls[i].update(sent_row=False, ledger_status=None)
    return [("write-before-send", calls[i]["guid"])]


def _changed_replay(calls, stats, lines, rows):
    """A resend of a DONE GUID gets an answer other than its first."""
    definite: dict[str, list[int]] = {}
    for n, line in enumerate(lines):
        if '"type": "ok", "f": "transfer"' in line:
            v = json.loads(line)["value"]
            if v.get("code") in DEFINITE and v.get("guid"):
                definite.setdefault(v["guid"], []).append(n)
    twice = [ns for ns in definite.values() if len(ns) > 1]
    if not twice:
        return None
    event = json.loads(lines[twice[0][-1]])
    body = json.loads(event["value"]["body"])
    event["value"]["body"] = json.dumps({**body, "message": "replayed differently"})
    lines[twice[0][-1]] = json.dumps(event) + "\n"
    return [("done-replay", event["value"]["guid"])]


def _left_unknown(calls, stats, lines, rows):
    """A row is still UNKNOWN after the final heal, resolve and reprocess."""
    done = [g for g, r in rows.items() if r["status"] == "DONE"]
    if not done:
        return None
    rows[done[0]]["status"] = "UNKNOWN"
    return [("converged", done[0])]


INJECTIONS = (_double_debit, _resent_unknown, _lost, _sent_before_written, _changed_replay, _left_unknown)


def build(
    path: Path, events: int, templates: tuple[str, ...] = TEMPLATES
) -> tuple[list[tuple[str, str, str]], list[str]]:
    """Write a history of about `events` events to `path` (gzipped if it ends .gz).

    Returns what was injected, (rule, GUID, how) for each verdict the checkers must give
    (and they must give no other), and the injections no copy could take (none with the
    default templates, from a few thousand events on), spread over the history.
    """
    loaded = [Template.load(name) for name in templates]
    base = loaded[0].header
    merged = Merged({a for t in loaded for a in t.header["accounts"]})
    header = dict(
        base,
        name=f"synthetic-{events}",
        description=f"{len(loaded)} recorded histories copied end to end",
        accounts=dict(merged.balances),
        guids={},
        steps=[],
        tag="synthetic",
    )
    opener = gzip.open if path.suffix == ".gz" else open
    injected, todo, count, n, at = [], list(INJECTIONS), 1, 0, base.get("start", loaded[0].first)
    with opener(path, "wt", encoding="utf-8") as out:
        out.write(
            json.dumps({"index": 0, "time": at, "process": "runner", "type": "ok", "f": "scenario", "value": header})
            + "\n"
        )
        while count < events - 2:
            t = loaded[n % len(loaded)]
            offset = at + 1.0 - t.first
            lines = t.copy(n, offset, count)
            stats = t.renamed(t.stats, n, offset)
            rows = t.renamed(t.final_rows, n, offset)
            for inject in [f for f in todo if count >= events * (INJECTIONS.index(f) + 0.5) / len(INJECTIONS)]:
                found = inject(stats["calls"], stats, lines, rows)  # one per copy, where the copy allows it
                if found:
                    todo.remove(inject)
                    injected += [(rule, guid, inject.__doc__) for rule, guid in found]
                    break
            merged.add_stats(stats, t)
            merged.rows.update(rows)
            out.writelines(lines)
            count, n, at = count + len(lines), n + 1, t.last + offset
        at += 1.0
        out.write(
            json.dumps(
                {
                    "index": count,
                    "time": at,
                    "process": "observer",
                    "type": "ok",
                    "f": "ledger-snapshot",
                    "value": {"after_step": "final", "kind": "final", "wall": at, "rows": merged.rows},
                }
            )
            + "\n"
        )
        out.write(
            json.dumps(
                {
                    "index": count + 1,
                    "time": at,
                    "process": "observer",
                    "type": "ok",
                    "f": "ledger-schema",
                    "value": {
                        "columns": ["guid", "status", "resp_code", "request", "response", "attempts", "updated_at"],
                        "error": None,
                    },
                }
            )
            + "\n"
        )
        out.write(
            json.dumps(
                {
                    "index": count + 2,
                    "time": at,
                    "process": "observer",
                    "type": "ok",
                    "f": "account-stats",
                    "value": {"stats": merged.stats()},
                }
            )
            + "\n"
        )
    return injected, [f.__doc__ for f in todo]
