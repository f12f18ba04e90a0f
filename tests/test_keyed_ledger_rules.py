"""A keyed service's own ledger table is judged like the course's, by every rule whose columns [ledger] maps.

Each rule needs only what it reads (relaychaos.checkers.CAPABILITIES): a row's status, its last change, its
attempts, and the batch commands whose runs it judges. A relay that lacks one leaves the rule "not checked",
saying what to map or add; the checkers judge a keyed service's rows (its statuses in the contract's words)
as they judge the course's table. Pure: manifests and literal histories, no processes.
"""

from __future__ import annotations

from datetime import UTC, datetime

from relaychaos import checkers
from relaychaos.checkers import CAPABILITIES, RULES
from relaychaos.stack import manifest
from relaychaos.stack.api_profile import Api, Ledger, Profile
from relaychaos.stack.ledger_tables import contract_row

from .conftest import ROOT
from .literal_support import story
from .test_api_profile import SERVICE, problems_of, write

KEYED = Api(profile="idempotency-key", path="/payments")
SERVE = ("serve",)
ALL_BATCH = ("serve", "resolve", "reprocess", "purge")
LEDGER_RULES = {
    "ledger-agrees",
    "transitions",
    "converged",
    "purge-retention",
    "resolve-min-age",
    "resolve-keeps-unanswered",
    "attempt-cap",
    "ledger-schema",
    "batch-runs",
}
NODE = manifest.load(ROOT / "relay_under_test" / "payments_node")
GO = manifest.load(ROOT / "relay_under_test" / "payments_go")


def keyed(**mapped: str) -> Profile:
    return Profile(api=KEYED, ledger=Ledger(kind="postgresql", **mapped))


# -- what a relay offers ------------------------------------------------------------------------------------


def test_a_keyed_services_table_offers_its_status_and_each_column_its_ledger_maps():
    assert keyed().provides(SERVE) == {"answers", "ledger-status"}
    assert keyed(updated_at="updated_at").provides(SERVE) == {"answers", "ledger-status", "ledger-times"}
    assert keyed(attempts="tries").provides(SERVE) == {"answers", "ledger-status", "ledger-attempts"}
    assert keyed(answer="response_status").provides(SERVE) == {"answers", "ledger-status", "ledger-answer"}


def test_each_batch_command_is_offered_on_its_own_and_any_of_them_is_a_batch_command():
    assert keyed().provides(("serve", "purge")) == {"answers", "ledger-status", "purge", "batch-command"}
    assert {"resolve", "reprocess", "purge", "batch-command"} <= keyed().provides(ALL_BATCH)
    assert not {"resolve", "reprocess", "purge", "batch-command"} & keyed().provides(SERVE)


def test_the_course_profile_keeps_the_contracts_whole_table_on_sqlite_and_on_postgresql():
    assert Profile().provides() == frozenset(CAPABILITIES)
    assert Profile(ledger=Ledger(kind="postgresql")).provides() == frozenset(CAPABILITIES)


def test_a_black_box_offers_no_ledger_column_whatever_it_maps():
    assert not {c for c in Profile(api=KEYED, ledger=Ledger(kind="none")).provides(ALL_BATCH) if "ledger" in c}


def test_the_answer_column_is_mapped_and_checked_like_the_others(tmp_path):
    text = SERVICE.replace('unknown = "UNKNOWN" }', 'unknown = "UNKNOWN" }\nanswer = "response_status"')
    ledger = manifest.load(write(tmp_path, text)).profile.ledger
    assert ledger.columns == ("key", "status", "response_status")
    bad = SERVICE.replace('unknown = "UNKNOWN" }', 'unknown = "UNKNOWN" }\nanswer = "response status"')
    assert "[ledger] answer must name a column (letters, digits, _), got 'response status'" in problems_of(
        tmp_path, bad
    )


def test_a_keyed_row_reads_as_the_contracts_with_each_column_its_ledger_maps():
    ledger = Ledger("postgresql", None, "t", "k", "s", {"ok": "DONE"}, "changed", "tries", "http")
    when = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    row = {"k": "g1", "s": "ok", "changed": when, "tries": 2, "http": 201}
    assert contract_row(ledger, "g1", row) == {
        "guid": "g1",
        "status": "DONE",
        "updated_at": when.timestamp(),
        "attempts": 2,
        "answer": 201,
    }
    assert contract_row(ledger, "g1", {**row, "changed": None, "http": None}) == {
        "guid": "g1",
        "status": "DONE",
        "attempts": 2,
    }


# -- why a rule is not checked -------------------------------------------------------------------------------


def test_an_unmapped_column_leaves_the_rules_reading_it_not_checked_naming_what_to_map():
    skipped = checkers.not_checked(keyed().provides(ALL_BATCH))
    assert skipped["attempt-cap"] == (
        "not checked: map `attempts` in [ledger] (the column counting the calls made for a key)"
    )
    assert skipped["purge-retention"].startswith("not checked: map `updated_at` in [ledger] (the column of a row's")
    assert skipped["resolve-min-age"] == skipped["purge-retention"]
    assert {"transitions", "ledger-agrees", "converged", "resolve-keeps-unanswered"}.isdisjoint(skipped)


def test_a_missing_batch_command_is_named_with_the_line_that_would_add_it():
    skipped = checkers.not_checked(keyed(updated_at="u", attempts="a").provides(("serve", "resolve")))
    assert skipped["purge-retention"] == (
        "not checked: there is no `purge` command ([commands] purge = [...] in relay.toml)"
    )
    assert skipped["attempt-cap"] == (
        "not checked: there is no `reprocess` command ([commands] reprocess = [...] in relay.toml)"
    )
    assert {"resolve-min-age", "resolve-keeps-unanswered", "batch-runs"}.isdisjoint(skipped)


def test_converged_needs_both_commands_that_settle_an_undecided_row():
    """resolve settles what the PSP executed or never did; reprocess sends the FAILED again."""
    skipped = checkers.not_checked(keyed().provides(("serve", "resolve", "purge")))
    assert skipped["converged"] == (
        "not checked: there is no `reprocess` command ([commands] reprocess = [...] in relay.toml)"
    )
    assert "converged" not in checkers.not_checked(keyed().provides(ALL_BATCH))


def test_a_rule_missing_two_things_names_both():
    skipped = checkers.not_checked(keyed().provides(SERVE))
    assert skipped["attempt-cap"] == (
        "not checked: map `attempts` in [ledger] (the column counting the calls made for a key); and there is no "
        "`reprocess` command ([commands] reprocess = [...] in relay.toml)"
    )


def test_without_an_answer_column_ledger_agrees_judges_the_status_and_says_what_it_leaves_out():
    assert "ledger-agrees" not in checkers.not_checked(keyed().provides(SERVE))
    assert checkers.partly_checked(keyed().provides(SERVE))["ledger-agrees"] == (
        "partly checked: map `answer` in [ledger] (the column of the HTTP status the service saved for a key and "
        "replays)"
    )
    assert "ledger-agrees" not in checkers.partly_checked(keyed(answer="response_status").provides(SERVE))
    assert checkers.partly_checked(Profile().provides()) == {}


def test_the_node_service_is_judged_by_every_ledger_rule():
    """payments_node maps updated_at and attempts and has resolve, reprocess and purge."""
    skipped = checkers.not_checked(NODE.profile.provides(NODE.commands))
    assert LEDGER_RULES.isdisjoint(skipped), {r: skipped[r] for r in LEDGER_RULES & set(skipped)}


def test_the_go_service_with_serve_alone_is_judged_by_its_statuses_and_told_which_command_each_rule_needs():
    skipped = checkers.not_checked(GO.profile.provides(SERVE))
    assert {"transitions", "ledger-agrees", "ledger-schema", "write-before-send"}.isdisjoint(skipped)
    for rule in ("converged", "resolve-min-age", "resolve-keeps-unanswered"):
        assert "there is no `resolve` command ([commands] resolve = [...]" in skipped[rule], rule
    assert "there is no `purge` command" in skipped["purge-retention"]
    assert "there is no `reprocess` command" in skipped["attempt-cap"]
    assert skipped["batch-runs"] == (
        "not checked: there is no batch command ([commands] resolve, reprocess or purge = [...] in relay.toml)"
    )


def test_every_need_and_every_part_a_rule_reads_is_a_capability():
    assert all(n in CAPABILITIES for r in RULES.values() for n in r.needs + r.partly)


def test_an_older_historys_names_still_mean_what_they_offered():
    """Histories recorded before the capabilities were split name `batch` (all three commands) and
    `ledger-rows` (the contract's table)."""
    assert checkers.not_checked(["answers", "contract-codes", "ledger-status", "ledger-rows", "batch"]) == {}
    skipped = checkers.not_checked(["answers", "ledger-status", "batch"])
    assert "converged" not in skipped and "batch-runs" not in skipped
    assert "map `updated_at`" in skipped["purge-retention"]


# -- the rules on a keyed service's rows --------------------------------------------------------------------


def keyed_story(profile: Profile = NODE.profile, commands=NODE.commands):
    h = story()
    h.header.update(profile="idempotency-key", provides=sorted(profile.provides(commands)))
    return h


def verdicts(h, rule: str) -> list:
    return [v for v in checkers.check(h.build()) if v.rule == rule]


def unknown_then_done(h, *, asked_at: float | None) -> None:
    """g1's first call timed out (its row UNKNOWN); a retry's serve settled it DONE, asking its PSP first or not."""
    h.send("g1", at=0.0, answered_at=0.5, status=504)
    h.account_call("g1", 0.01, 0.02)
    h.snapshot({"g1": {"status": "UNKNOWN"}}, at=0.6)
    if asked_at is not None:
        h.query("g1", at=asked_at, found=True)
    h.send("g1", at=0.8, answered_at=0.9, status=201)
    h.snapshot({"g1": {"status": "DONE"}}, at=1.0)


def test_serve_may_settle_an_unknown_key_once_its_psp_answered_about_it():
    h = keyed_story()
    unknown_then_done(h, asked_at=0.85)
    assert not verdicts(h, "transitions")


def test_serve_settling_an_unknown_key_without_asking_breaks_transitions():
    h = keyed_story()
    unknown_then_done(h, asked_at=None)
    [v] = verdicts(h, "transitions")
    assert v.summary.startswith("the ledger row went from UNKNOWN and was moved to DONE during step")
    assert v.clause == "3.unknown"


def test_a_row_done_for_a_key_its_psp_never_executed_or_refused_breaks_ledger_agrees():
    h = keyed_story()
    h.send("g1", at=0.0, answered_at=0.05, status=201)
    h.snapshot({"g1": {"status": "DONE"}}, at=0.1)
    [v] = verdicts(h, "ledger-agrees")
    assert "the ledger says DONE, but the PSP never executed or refused this key" in v.summary


def test_a_row_done_for_a_refused_key_agrees_with_its_psp():
    h = keyed_story()
    h.send("g1", at=0.0, answered_at=0.05, status=402)
    h.account_call("g1", 0.01, 0.02, code="B201")
    h.snapshot({"g1": {"status": "DONE"}}, at=0.1)
    assert not verdicts(h, "ledger-agrees")


def test_a_saved_answer_of_another_kind_than_the_psps_breaks_ledger_agrees_where_the_answer_is_mapped():
    for saved, broken in ((201, False), (402, True)):
        h = keyed_story(keyed(answer="response_status"), ALL_BATCH)
        h.send("g1", at=0.0, answered_at=0.05, status=saved)
        h.account_call("g1", 0.01, 0.02)
        h.snapshot({"g1": {"status": "DONE", "answer": saved}}, at=0.1)
        found = verdicts(h, "ledger-agrees")
        assert bool(found) == broken, saved
    assert found[0].summary == "the ledger says DONE with a saved answer of HTTP 402, but the PSP executed it"


def test_a_row_failed_after_its_psp_debited_it_breaks_ledger_agrees():
    h = keyed_story()
    h.send("g1", at=0.0, answered_at=0.05, status=503)
    h.account_call("g1", 0.01, 0.02)
    h.snapshot({"g1": {"status": "FAILED"}}, at=0.1)
    [v] = verdicts(h, "ledger-agrees")
    assert "the ledger says FAILED (definitely not executed), but the PSP debited it 1 time(s)" in v.summary


def test_a_key_its_psp_received_and_did_not_execute_may_be_failed():
    h = keyed_story()
    h.send("g1", at=0.0, answered_at=0.05, status=502)
    h.account_call("g1", 0.01, 0.02, code="E500")
    h.query("g1", at=0.5, found=False)
    h.snapshot({"g1": {"status": "FAILED"}}, at=0.6)
    assert not verdicts(h, "ledger-agrees")


def test_a_key_left_unknown_after_the_final_phase_breaks_converged():
    h = keyed_story()
    h.send("g1", at=0.0, answered_at=0.5, status=504)
    h.account_call("g1", 0.01, 0.02)
    h.batch("resolve", 0.5, 1.0, 1.1)
    h.snapshot({"g1": {"status": "UNKNOWN", "updated_at": 0.0}}, at=1.2, kind="end", after_step="end")
    [v] = verdicts(h, "converged")
    assert v.summary == "after the final heal, resolve and reprocess the row is still UNKNOWN"


def test_a_resolve_settling_a_young_unknown_key_breaks_resolve_min_age():
    h = keyed_story()
    h.send("g1", at=0.0, answered_at=0.5, status=504)
    h.account_call("g1", 0.01, 0.02)
    h.snapshot({"g1": {"status": "UNKNOWN", "updated_at": 0.5, "attempts": 1}}, at=0.6)
    h.batch("resolve", 5, 0.7, 0.8)
    h.snapshot({"g1": {"status": "DONE", "updated_at": 0.75, "attempts": 1}}, at=0.9, kind="resolve")
    [v] = verdicts(h, "resolve-min-age")
    assert v.summary.startswith("resolve --min-age 5 settled this UNKNOWN row as DONE when it was only 0.30 s old")


def test_a_keyed_table_lacking_a_mapped_column_breaks_ledger_schema_naming_it():
    h = keyed_story()
    mapped = list(NODE.profile.ledger.columns)
    h.schema([c for c in mapped if c != "attempts"], table="idempotency_keys", required=mapped)
    [v] = verdicts(h, "ledger-schema")
    assert (
        v.summary == "the ledger's table `idempotency_keys` lacks the columns [ledger] maps attempts (the table exists)"
    )


def test_a_keyed_table_with_every_mapped_column_keeps_ledger_schema():
    h = keyed_story()
    mapped = list(NODE.profile.ledger.columns)
    h.schema(mapped + ["request_hash"], table="idempotency_keys", required=mapped)
    assert not verdicts(h, "ledger-schema")
