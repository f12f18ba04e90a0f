"""Each rule says what it reads of a relay beyond the money; a relay that does not offer it leaves the rule
"not checked", with the reason, never "held"."""

from __future__ import annotations

from relaychaos import checkers
from relaychaos.checkers import CAPABILITIES, RULES
from relaychaos.stack.api_profile import Api, Ledger, Profile

from .literal_support import story

KEYED = Api(profile="idempotency-key", path="/payments")
SERVE = ("serve",)  # a service without batch jobs
MONEY = {"one-account-call", "one-debit", "guid-preserved", "balances", "one-debit-per-payment"}


def double_debit_before_any_claim():
    h = story()
    h.send("g1", at=0.0, answered_at=0.5)
    h.account_call("g1", 0.01, 0.02, ledger_status=None)
    h.account_call("g1", 0.2, 0.21, ledger_status=None)
    return h.build()


def test_the_course_profile_on_sqlite_offers_everything_every_rule_reads():
    assert Profile().provides() == frozenset(CAPABILITIES)
    assert checkers.not_checked(Profile().provides()) == {}


def test_the_money_rules_apply_to_every_profile_and_every_ledger():
    for ledger in (Ledger(), Ledger(kind="none"), Ledger(kind="postgresql")):
        for api in (Api(), KEYED):
            skipped = checkers.not_checked(Profile(api=api, ledger=ledger).provides())
            assert not MONEY & set(skipped), (api.profile, ledger.kind)


def test_a_keyed_service_on_postgres_is_judged_on_money_answers_and_its_ledgers_statuses():
    offered = Profile(api=KEYED, ledger=Ledger(kind="postgresql")).provides(SERVE)
    judged = set(RULES) - set(checkers.not_checked(offered))
    assert judged == MONEY | {
        "exactly-once",
        "write-before-send",
        "ledger-agrees",
        "transitions",
        "ledger-schema",
        "done-replay",
        "e903-at-once",
        "answer-codes",
        "malformed-no-effect",
        "interface",
        "answered-in-time",
        "tampering",
        "serve-ready",
        "account-requests",
    }


def test_a_black_box_service_leaves_the_ledger_rules_not_checked_and_says_why():
    skipped = checkers.not_checked(Profile(api=KEYED, ledger=Ledger(kind="none")).provides(SERVE))
    assert skipped["write-before-send"].startswith('not checked: there is no ledger to read (ledger = "none")')
    assert '[ledger] kind = "postgresql", table, key, status, statuses' in skipped["write-before-send"]
    assert skipped["batch-runs"] == (
        "not checked: there is no batch command ([commands] resolve, reprocess or purge = [...] in relay.toml)"
    )


def test_a_course_relay_without_batch_jobs_leaves_their_rules_not_checked():
    skipped = checkers.not_checked(Profile().provides(commands=()))
    batch = {"batch-command", "resolve", "reprocess", "purge"}
    assert set(skipped) == {r.id for r in RULES.values() if batch & set(r.needs)}


def test_a_rule_not_checked_gives_no_verdict_even_on_a_history_that_would_break_it():
    h = double_debit_before_any_claim()
    everything = {v.rule for v in checkers.check(h)}
    black_box = {v.rule for v in checkers.check(h, Profile(api=KEYED, ledger=Ledger(kind="none")).provides(SERVE))}
    assert "write-before-send" in everything and "write-before-send" not in black_box
    assert {"one-account-call", "one-debit", "balances"} <= black_box


def keyed_answer(status: int):
    h = story()
    h.header.update(
        profile="idempotency-key", provides=sorted(Profile(api=KEYED, ledger=Ledger("none")).provides(SERVE))
    )
    h.send("g1", at=0.0, answered_at=0.05, status=status, code=None)
    h.account_call("g1", 0.01, 0.02, ledger_status=None)  # no ledger: write-before-send would break
    return h.build()


def test_a_keyed_service_answering_outside_its_table_gets_an_interface_verdict_quoting_it():
    verdicts = [v for v in checkers.check(keyed_answer(302)) if v.rule == "interface"]
    assert len(verdicts) == 1 and verdicts[0].summary.startswith("the service answered HTTP 302, which is not in")
    assert "409 the key is in flight" in verdicts[0].summary and "5xx unknown" in verdicts[0].summary
    assert "draft-ietf-httpapi-idempotency-key-header" in verdicts[0].details["source"]


def test_a_keyed_service_answering_inside_its_table_keeps_the_interface_rule():
    assert not [v for v in checkers.check(keyed_answer(201)) if v.rule == "interface"]


def test_a_history_judged_again_skips_the_rules_its_run_could_not_check():
    """The header records what the relay offered: a later check (recheck, timeline) skips the same rules."""
    assert "write-before-send" not in {v.rule for v in checkers.check(keyed_answer(201))}
