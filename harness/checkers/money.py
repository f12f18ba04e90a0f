"""Checkers of the money: one account call and one debit per GUID, nothing lost, balances that add up."""

from __future__ import annotations

from relaychaos.checkers.calls import TRANSFER_FIELDS
from relaychaos.checkers.facts import ANY_DEFINITE, Facts
from relaychaos.checkers.rulebook import rule
from relaychaos.checkers.verdict import Verdict


def _transfer(request: dict | None) -> dict:
    """The four fields of a transfer (a relay may drop fields beyond them, or forward them)."""
    return {k: (request or {}).get(k) for k in TRANSFER_FIELDS}


class _Origins:
    """The GUIDs the channel sent, by their request less the GUID: where a call under an unknown GUID came from."""

    def __init__(self, sent: dict[str, dict]):
        self.sent = sent
        self.index: dict[tuple, list[str]] | None = {}  # None: requests that cannot be keys
        try:
            for g, r in sent.items():
                self.index.setdefault(self._key(r), []).append(g)
        except TypeError:  # a request field that cannot be a key: compare one by one
            self.index = None

    @staticmethod
    def _key(request: dict | None) -> tuple:
        return tuple(_transfer(request)[k] for k in TRANSFER_FIELDS[1:])

    def of(self, request: dict | None) -> list[str]:
        """The GUIDs sent with this request's fields but the GUID, in the order they were first sent."""
        if self.index is not None:
            try:
                return list(self.index.get(self._key(request), []))
            except TypeError:
                pass
        body = {**_transfer(request), "guid": None}
        return [g for g, r in self.sent.items() if {**_transfer(r), "guid": None} == body]


@rule(
    "one-account-call",
    "at most one account call per GUID",
    contract=(
        "3.claim-new",
        "3.unknown",
        "3.e903",
        "1.sigkill",
        "1.two-serves",
        "5.reprocess-not-unknown",
        "5.reprocess-races",
        "5.resolve-min-age",
        "5.purge-keeps",
    ),
)
def one_account_call(facts: Facts) -> list[Verdict]:
    out = []
    for guid in sorted({c["guid"] for c in facts.account_calls if c.get("guid")}):
        calls = facts.calls_for(guid)
        blind = [c for c in calls[1:] if not facts.asked_before(guid, c)]  # a resend after a not-found answer is asked
        if blind and len(calls) > 1 and any(len(life) > 1 for life in facts.lives(guid)):
            purged = (
                " (counted per life of its ledger row: a purge deleted it in between)" if facts.purged.get(guid) else ""
            )
            out.append(
                Verdict(
                    "one-account-call",
                    guid,
                    f"the account system received this GUID more than once{purged}; a relay may send a GUID at most "
                    "once",
                    facts.events_for(guid),
                    facts.call_seqs(guid),
                    details={"calls": len(calls), "answers": [c.get("code") for c in calls]},
                    clause="3.claim-new",
                )
            )
    return out


def _debits_per_life(facts: Facts, guid: str) -> int:
    """The most debits of one life of the GUID's ledger row (a purge, deleting it, starts a new life)."""
    return max(sum(1 for c in life if c.get("applied")) for life in facts.lives(guid))


def _lives_debited(facts: Facts, guid: str) -> int:
    """How many lives of the GUID's ledger row were debited: what its balance moves may be."""
    return sum(1 for life in facts.lives(guid) if any(c.get("applied") for c in life))


@rule("one-debit", "at most one applied debit per GUID", contract=("3.claim-new", "1.two-serves", "5.reprocess-races"))
def one_debit(facts: Facts) -> list[Verdict]:
    out = []
    for guid, summary in facts.stats.get("guids", {}).items():
        if summary.get("debits", 0) > 1 and _debits_per_life(facts, guid) > 1:
            out.append(
                Verdict(
                    "one-debit",
                    guid,
                    "this GUID was debited more than once",
                    facts.events_for(guid),
                    facts.call_seqs(guid),
                    details={"debits": summary["debits"]},
                    clause="3.claim-new",
                )
            )
    return out


@rule(
    "guid-preserved",
    "every account call carries a GUID the channel sent, with the channel's request",
    contract=("3.failed-resend", "5.reprocess"),
)
def guid_preserved(facts: Facts) -> list[Verdict]:
    """Every account call carries a GUID the channel sent, with the channel's own request."""
    out = []
    sent = facts.channel_guids
    origins = None
    for call in facts.account_calls:
        guid, req = call.get("guid"), call.get("request")
        if guid not in sent:
            origins = origins or _Origins(sent)
            origin = origins.of(req)
            events = tuple(sorted({i for g in origin for i in facts.events_for(g)}))
            seqs = tuple(sorted({call["seq"], *(s for g in origin for s in facts.call_seqs(g))}))
            came_from = f" (the channel's request looks like {', '.join(origin)})" if origin else ""
            out.append(
                Verdict(
                    "guid-preserved",
                    guid,
                    f"the account system received GUID {guid}, which the channel never sent{came_from}; "
                    "a relay must resend with the same GUID",
                    events,
                    seqs,
                    clause="5.reprocess",
                )
            )
        elif _transfer(req) != _transfer(sent[guid]):
            out.append(
                Verdict(
                    "guid-preserved",
                    guid,
                    f"the account system received {req} for this GUID, but the channel sent {sent[guid]}",
                    facts.events_for(guid),
                    (call["seq"],),
                    clause="5.reprocess",
                )
            )
    return out


@rule(
    "exactly-once",
    "what the channel was told definitely matches what the account system did",
    contract=("3.definite", "3.done-replay"),
    needs=("answers",),
)
def exactly_once(facts: Facts) -> list[Verdict]:
    """What the channel was told definitely matches what the account system did."""
    out = []
    for guid in facts.channel_guids:
        debits = facts.stats.get("guids", {}).get(guid, {}).get("debits", 0)
        told = {c.code for c in facts.channel_for(guid) if c.code and c.request == facts.channel_guids[guid]}
        if "0000" in told and debits == 0:
            out.append(
                Verdict(
                    "exactly-once",
                    guid,
                    "the channel was told 0000 (applied) but the account system "
                    "never debited this GUID: the transfer was lost",
                    facts.events_for(guid),
                    facts.call_seqs(guid),
                    clause="3.definite",
                )
            )
        refused = told & (ANY_DEFINITE - {"0000"})
        if refused and debits > 0:
            out.append(
                Verdict(
                    "exactly-once",
                    guid,
                    f"the channel was told {'/'.join(sorted(refused))} (nothing "
                    f"applied) but the account system debited this GUID {debits} time(s)",
                    facts.events_for(guid),
                    facts.call_seqs(guid),
                    clause="3.definite",
                )
            )
    return out


@rule(
    "balances",
    "balances are conserved and equal what the applied GUIDs imply",
    contract=("3.claim-new", "1.two-serves"),
)
def balances(facts: Facts) -> list[Verdict]:
    """Final balances equal the initial ones moved once by every applied channel GUID, and sum the same."""
    initial = dict(facts.header.accounts)
    actual = facts.stats.get("balances", {})
    if not initial or not actual:
        return []
    expected = dict(initial)
    for guid, req in facts.channel_guids.items():
        if facts.stats.get("guids", {}).get(guid, {}).get("debits", 0) >= 1:
            times = _lives_debited(facts, guid) if facts.purged.get(guid) else 1
            expected[req["from"]] = expected.get(req["from"], 0) - req["amount"] * times
            expected[req["to"]] = expected.get(req["to"], 0) + req["amount"] * times
    out = []
    if sum(actual.values()) != sum(initial.values()):
        out.append(
            Verdict(
                "balances",
                None,
                f"money was created or destroyed: balances sum to "
                f"{sum(actual.values())}, started at {sum(initial.values())}",
                (),
                (),
                clause="3.claim-new",
            )
        )
    if actual != expected:
        off = {
            a: (expected.get(a), actual.get(a))
            for a in sorted(set(actual) | set(expected))
            if expected.get(a) != actual.get(a)
        }
        extra = sorted(
            (
                g
                for g, s in facts.stats.get("guids", {}).items()
                if (s.get("debits", 0) > 1 and _debits_per_life(facts, g) > 1)
                or (s.get("debits", 0) and g not in facts.channel_guids)
            ),
            key=facts.guid_order,
        )
        extras = set(extra)
        seqs = tuple(c["seq"] for c in facts.account_calls if c.get("guid") in extras and c.get("applied"))
        out.append(
            Verdict(
                "balances",
                extra[0] if len(extra) == 1 else None,
                (
                    f"final balances differ from what the applied GUIDs imply ({', '.join(off)}); debited more than "
                    f"once or under a GUID the channel never sent: {', '.join(extra)}"
                    if extra
                    else "final balances differ from what the applied GUIDs imply (account: expected, actual): "
                    + ", ".join(f"{a}: {e}, {x}" for a, (e, x) in off.items())
                ),
                (),
                seqs,
                details={"balances": {a: {"expected": e, "actual": x} for a, (e, x) in off.items()}},
                clause="3.claim-new",
            )
        )
    return out


@rule(
    "one-debit-per-payment",
    "a payment the client meant once is debited once, whatever GUIDs it carried "
    "(a rule for the client: a new GUID is a new transfer to the relay)",
    contract=("3.claim-new",),
)
def one_debit_per_payment(facts: Facts) -> list[Verdict]:
    """A payment the client meant to make once is debited at most once, whatever GUIDs it was sent under."""
    out = []
    guids = facts.stats.get("guids", {})
    for intent, sent in sorted(facts.intents.items()):
        if len(sent) < 2:
            continue
        debited = sorted((g for g in sent if guids.get(g, {}).get("debits", 0)), key=facts.guid_order)
        if len(debited) > 1:
            events = tuple(sorted({i for g in sent for i in facts.events_for(g)}))
            seqs = tuple(sorted(s for g in sent for s in facts.call_seqs(g)))
            listed = ", ".join(sorted(sent, key=facts.guid_order))
            out.append(
                Verdict(
                    "one-debit-per-payment",
                    debited[0],
                    f"the client's one payment {intent!r} went out under {len(sent)} GUIDs "
                    f"({listed}) and {len(debited)} of them were debited: the client "
                    "minted a new GUID instead of resending the same one",
                    events,
                    seqs,
                    clause="3.claim-new",
                )
            )
    return out
