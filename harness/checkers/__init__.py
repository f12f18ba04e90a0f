"""The checkers: small pure functions of a history, each returning the verdicts of one rule.

`check(history)` runs them all; `RULES` is the rule book (rule id → Rule: its
line, the contract clauses it enforces, its checker), in the order reports list
them (money first); see rulebook.py. Shaped after Jepsen's checker.clj:
compose independent checks over one recorded history.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Iterable

from relaychaos.checkers.collection import no_collection
from relaychaos.checkers.facts import Facts
from relaychaos.checkers.rulebook import CAPABILITIES, RENAMED, RULES, Rule
from relaychaos.checkers.verdict import Verdict
from relaychaos.events import Event
from relaychaos.records.base import UNSET
from relaychaos.words import Words

# The rule modules register their rules on import; their order here is the rule book's order.
# isort: off
from relaychaos.checkers import money, ledger_rules, answers, interface  # noqa: F401, E402
# isort: on

__all__ = ["CAPABILITIES", "RULES", "Rule", "Verdict", "check", "not_checked", "notes", "partly_checked"]


def not_checked(provides: Collection[str] | None = None) -> dict[str, str]:
    """rule id -> why it is not checked on a relay offering `provides` (None: everything; see CAPABILITIES): what
    to map or add, e.g. "not checked: map `attempts` in [ledger] (...)"."""
    return _lacking(provides, lambda r: r.needs, "not checked: ")


def partly_checked(provides: Collection[str] | None = None) -> dict[str, str]:
    """rule id -> the part of it a relay offering `provides` leaves unjudged, and what to map (Rule.partly)."""
    return _lacking(provides, lambda r: r.partly, "partly checked: ")


def _lacking(provides: Collection[str] | None, reads: Callable[[Rule], tuple[str, ...]], said: str) -> dict[str, str]:
    if provides is None:
        return {}
    offered = set(provides).union(*(RENAMED.get(n, ()) for n in provides))  # an older history's names too
    out = {}
    for r in RULES.values():
        lacking = [CAPABILITIES[n].missing for n in reads(r) if n not in offered]
        if lacking:
            out[r.id] = said + "; and ".join(lacking)
    return out


def check(history: Iterable[Event], provides: Collection[str] | None = None, *, so_far: bool = False) -> list[Verdict]:
    """Every verdict of every checker on this history, ordered by the rule book, then by GUID label.

    Each rule is judged apart (Jepsen's check-safe): a checker that raises gives its rule one
    `unknown` verdict naming the exception (Verdict.not_judged), and every other rule still judges.
    A history that cannot be read is an error (HistoryError, ValueError), not a verdict.

    `history`: a History, a list of events, or a relaychaos.history.HistoryFile (a saved
    file, read in one pass and never held in memory whole). `provides`: what the relay offers
    (Profile.provides; None: what the history's header records, else everything, the course
    profile on SQLite); a rule needing more is left out, and `not_checked` says why. `so_far`: the
    story is judged before its final phase (the state machine's, at the step that broke an invariant),
    and the rules of WHOLE_STORY_RULES, which judge what the final phase leaves, are left out.
    """
    with no_collection():
        facts = Facts(history)
        if provides is None and facts.header.provides is not UNSET:
            provides = facts.header.provides  # recorded by the run: what its relay offered
        skipped = not_checked(provides) | (dict.fromkeys(WHOLE_STORY_RULES, "") if so_far else {})
        words = facts.words  # each verdict says what happened in its relay's profile's words
        verdicts = [_spoken(v, words) for r in RULES.values() if r.id not in skipped for v in _judged(r, facts)]
    order = {rule: n for n, rule in enumerate(RULES)}
    return sorted(verdicts, key=lambda v: (order.get(v.rule, len(order)), facts.guid_order(v.guid)))


# Rules whose verdict on a story so far stands whatever comes after (a prefix that breaks one, the whole story breaks),
# judged after every step of the state machine beside the account system's counts: its story stops at the first
# step where one breaks, so what it reports is that step's, not what later steps made of it
STEP_RULES = ("transitions",)
# Rules that judge what the final phase (relaychaos.engine.final_phase) leaves: not judged on a story so far
WHOLE_STORY_RULES = ("converged",)


def broken_now(history: Iterable[Event]) -> bool:
    """Whether the story so far breaks one of STEP_RULES (an `unknown` verdict is no finding)."""
    with no_collection():
        facts = Facts(history)
        return any(not v.unknown for r in STEP_RULES for v in _judged(RULES[r], facts))


def _spoken(verdict: Verdict, words: Words) -> Verdict:
    """The verdict as its relay's profile says it (relaychaos.words); a course relay's unchanged."""
    return verdict if words.course else dataclasses.replace(verdict, summary=words.say(verdict.summary))


def _judged(rule: Rule, facts: Facts) -> list[Verdict]:
    try:
        return list(rule.check(facts))
    except Exception as e:  # check-safe: one rule's bug loses no other rule's verdicts
        return [Verdict.not_judged(rule.id, e)]


def notes(history: Iterable[Event]) -> list[str]:
    """What the run noticed about the relay that is not a verdict (e.g. an overflowing accept queue)."""
    return answers.accept_notes(Facts(history))
