"""The verdicts as a page lists them: one entry per rule and GUID, the rule's sentence in the relay's words.

groups = verdict_groups(verdicts, facts.labels, facts.words)   # the timeline page, the HTML report
"""

from __future__ import annotations

from relaychaos.checkers import RULES
from relaychaos.checkers.verdict import Verdict
from relaychaos.contract import CLAUSES
from relaychaos.words import Words

COURSE = Words()


def verdict_groups(verdicts: list[Verdict], labels: dict[str, str], words: Words = COURSE) -> list[dict]:
    """The verdicts as the page lists them: one entry per rule and GUID (its events and calls merged, `count`
    saying how many verdicts), with the rule's sentence, the clause and the first verdict's summary."""
    out: dict[tuple, dict] = {}
    for v in verdicts:
        key = (v.rule, v.guid)
        if key in out:
            g = out[key]
            g["count"] += 1
            g["events"] = sorted(set(g["events"]) | set(v.events))
            g["calls"] = sorted(set(g["calls"]) | set(v.calls))
            continue
        rule = RULES.get(v.rule)
        cited = CLAUSES.get(v.clause or (rule.contract[0] if rule else ""))
        out[key] = {
            "rule": v.rule,
            "text": words.say(rule.text) if rule else "",
            "clause": cited.cite() if cited else "",
            "guid": v.guid,
            "label": labels.get(v.guid or "", ""),
            "summary": v.summary,
            "events": list(v.events),
            "calls": list(v.calls),
            "count": 1,
        }
    return list(out.values())
