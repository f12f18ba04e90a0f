"""Grade records made on the spot, as `relaychaos grade` writes them (reports.grade_record), for the writers' tests.

    record("alice smith")                       # full marks: every rule held in every scenario
    record("bob", broken={"one-account-call": ["race-32-one-relay"]})   # that rule loses its share
    ungradable("carol", "could not start: no relay.toml in /class/carol")
"""
from __future__ import annotations

import copy
import json
from pathlib import Path

# (rule, group, what, set, max_points, scenarios)
RUBRIC = [
    ("one-account-call", "money", "at most one account call per GUID", "visible", 15.0, 10),
    ("one-account-call", "money", "at most one account call per GUID", "hidden", 15.0, 10),
    ("answer-codes", "answers", "the relay's answer codes follow the contract's table", "visible", 20.0, 8),
    ("converged", "ledger", "after the final heal, resolve and reprocess, no row is left SENT or UNKNOWN",
     "after_due_date", 50.0, 4),
]
SCENARIOS = [("race-32-one-relay", "visible"), ("happy-path", "visible"), ("min-age-trap", "hidden"),
             ("stateful", "hidden"), ("kill-before-account-call", "after_due_date")]
SANDBOX = {"mode": "auto", "enforced": True,
           "layers": {"uid": "user relaychaos-relay-0 (999) of its own", "rlimits": "data 2048 MiB",
                      "landlock": "ABI 7 (filesystem, tcp-bind)"}, "missing": {}}


def incident(rule: str, scenario: str) -> str:
    return (f"[{rule}] GUID g1-{abs(hash(scenario)) % 10**8:08d} (scenario label g1)\n"
            f"  rule: {rule}\n  what happened: the account system received 2 calls for this GUID\n"
            f"  timeline (seconds since the scenario started):\n"
            f"  +  0.169s  #11   channel sends 10 alice→bob, attempt 1\n"
            f"  +  0.172s  acct#1  account system receives the transfer")


def record(name: str, *, broken: dict[str, list[str]] | None = None, seed: int = 12345,
           timed_out: bool = False, notes: list[str] | None = None, root: str = "/class") -> dict:
    """A gradable record: each rule in `broken` breaks in those scenarios (of the rule entry's set) and loses
    one scenario's share of points per scenario."""
    broken = broken or {}
    rules = []
    for rule, group, what, set_, max_points, n in RUBRIC:
        scenario_set = {s for s, st in SCENARIOS if st == set_}
        where = [s for s in broken.get(rule, []) if s in scenario_set]
        held = n - len(where)
        rules.append({"rule": rule, "group": group, "what": what, "set": set_,
                      "points": round(max_points * held / n, 2), "max_points": max_points,
                      "held_in": held, "scenarios": n, "broken_in": where,
                      "incidents": [incident(rule, s) for s in where]})
    failed = {s for ss in broken.values() for s in ss}
    scenarios = [{"name": s, "set": st, "outcome": "failed" if s in failed else "passed", "seconds": 1.5,
                  "verdicts": [], "message": incident("?", s) if s in failed else None} for s, st in SCENARIOS]
    if timed_out:
        scenarios[-1].update(outcome="not-run", seconds=0.0)
    return {"submission": name, "path": f"{root}/{name}", "manifest": f"{root}/{name}/relay.toml", "seed": seed,
            "gradable": True, "error": None, "execution_time_s": 18.2, "timed_out": timed_out,
            "sandbox": copy.deepcopy(SANDBOX), "rubric": {"name": "default", "max_score": 100.0},
            "score": round(sum(r["points"] for r in rules), 2), "max_score": 100.0, "rules": rules,
            "scenarios": scenarios, "notes": list(notes or []),
            "stateful": {"ran": True, "shrunk": "stateful" in failed, "why_not": None}}


def ungradable(name: str, error: str, *, seed: int = 12345) -> dict:
    r = record(name, seed=seed)
    for rule in r["rules"]:
        rule.update(points=0.0, held_in=0, broken_in=[], incidents=[])
    for sc in r["scenarios"]:
        sc.update(outcome="not-run", seconds=0.0)
    r.update(gradable=False, error=error, score=0.0, manifest=None, execution_time_s=0.4,
             stateful={"ran": False, "shrunk": False, "why_not": "the relay did not start"})
    return r


def class_of_records() -> list[dict]:
    """Every kind the writers must handle: full marks, partial, ungradable, timed out, awkward names."""
    return [record("alice smith"),
            record("bob", broken={"one-account-call": ["race-32-one-relay", "min-age-trap"],
                                  "converged": ["kill-before-account-call"]}),
            ungradable("carol", "could not start: no relay.toml in /class/carol; add one (see the relay contract)"),
            record("dörte", timed_out=True, broken={"answer-codes": ["happy-path"]},
                   notes=["race-32-one-relay: its accept queue overflowed", "min-age-trap: a hidden note"]),
            record('eve "the <script>" o\'neil, jr.', broken={"one-account-call": ["stateful"]}),
            record("=HYPERLINK(\"x\")"),
            record("名前 `tick`", broken={"answer-codes": ["race-32-one-relay", "happy-path"]})]


def write_shard(folder: Path, records: list[dict]) -> Path:
    """A shard's output folder as relaychaos grade lays it out: <folder>/submissions/<safe-name>/grade.json."""
    for i, r in enumerate(records):
        target = folder / "submissions" / f"{i:03d}-{''.join(c if c.isalnum() else '_' for c in r['submission'])}"
        target.mkdir(parents=True, exist_ok=True)
        (target / "grade.json").write_text(json.dumps(r, ensure_ascii=False), encoding="utf-8")
    return folder
