"""A production-style service, judged as a team would judge theirs: relay_under_test/payments_go.

A Go service taking an `Idempotency-Key` header, keeping its keys in PostgreSQL and calling a
PSP, written from the IETF draft and Stripe's documentation by someone who had not read the
harness (its README says how). Its relay.toml describes it in the idempotency-key profile; the
account system speaks its PSP's shape and a throw-away PostgreSQL holds its ledger. The correct
service keeps every rule it can be judged by in every named scenario it can run; each of its six
deliberate bugs (`--mutant NAME`) is caught by a named scenario, by the rule it breaks.
"""

from __future__ import annotations

import shutil

import pytest

from relaychaos import checkers
from relaychaos.errors import RelayError
from relaychaos.ports import lease_port, release_port
from relaychaos.run.chaos import run_and_check
from relaychaos.scenarios import ALL
from relaychaos.stack import manifest
from relaychaos.stack.account_system import AccountSystem

from .conftest import ROOT

pytestmark = pytest.mark.stack  # the service, its PostgreSQL, its PSP: real processes

SERVICE = ROOT / "relay_under_test" / "payments_go"
CORRECT = manifest.load(SERVICE)
CAUGHT = {  # mutant -> the named scenario that catches it, and the rule it breaks there
    "check_then_insert": ("race-pairs-two-relays", "one-debit"),  # its ledger's answers slowed 20 ms
    "store_after_call": ("happy-path", "write-before-send"),
    "in_memory_keys": ("restart-keeps-the-ledger", "one-debit"),
    "retry_in_flight": ("resend-while-in-flight", "one-debit"),
    "resend_unknown": ("dropped-response-downstream", "one-debit"),
    "conflict_waits": ("race-while-held-two-relays", "e903-at-once"),  # 16 copies wait for the held PSP call
}
RUNNABLE = sorted(name for name, s in ALL.items() if s.batch_commands <= set(CORRECT.commands))


@pytest.fixture(scope="module")
def psp(tmp_path_factory):
    """The account system in the service's PSP's shape ([downstream] of its relay.toml)."""
    system = AccountSystem.start(tmp_path_factory.mktemp("psp"), CORRECT.profile.downstream)
    yield system
    system.close()


def test_the_service_is_described_in_the_idempotency_key_profile_with_a_postgres_ledger():
    assert (CORRECT.profile.name, CORRECT.profile.ledger.kind) == ("idempotency-key", "postgresql")
    assert set(CORRECT.commands) == {"serve", "resolve", "purge"}, "reconcile and expire; no reprocess"
    skipped = checkers.not_checked(CORRECT.profile.provides(CORRECT.commands))
    assert {"one-account-call", "one-debit", "write-before-send", "done-replay"}.isdisjoint(skipped)
    assert {"resolve-min-age", "purge-retention"}.isdisjoint(skipped) and "attempt-cap" in skipped


def test_the_scenarios_not_run_are_the_ones_that_need_reprocess():
    assert set(ALL) - set(RUNNABLE) == {n for n, s in ALL.items() if "reprocess" in s.batch_commands}
    assert {"purge-retention", "resolve-query-fails"} <= set(RUNNABLE) and len(RUNNABLE) >= 20


@pytest.mark.slow
@pytest.mark.parametrize("scenario", RUNNABLE)
def test_the_correct_service_keeps_every_rule_it_is_judged_by(make_stack, psp, scenario):
    s = ALL[scenario]
    stack = make_stack(CORRECT, account=psp, accounts=s.accounts, account_timeout_ms=s.account_timeout_ms)
    run_and_check(stack, s).assert_holds()


@pytest.mark.parametrize("mutant", sorted(CAUGHT))
def test_each_deliberate_bug_is_caught_by_its_scenario_and_named_by_its_rule(make_stack, psp, mutant):
    scenario, rule = CAUGHT[mutant]
    broken = manifest.load(SERVICE / "mutants" / mutant)
    s = ALL[scenario]
    stack = make_stack(broken, account=psp, accounts=s.accounts, account_timeout_ms=s.account_timeout_ms)
    result = run_and_check(stack, s)
    assert rule in {v.rule for v in result.verdicts}, result.report()


@pytest.mark.parametrize("scenario, settled", [("happy-path", False), ("kill-after-applied-before-done", True)])
def test_the_final_phase_waits_and_resolves_only_for_what_the_mapped_ledger_shows_undecided(
    make_stack, psp, scenario, settled
):
    """The service's [ledger] maps its statuses and times, so the harness sees its undecided keys as it sees a course
    relay's rows: after a happy path none is left, and the final phase neither waits for age nor runs reconcile;
    a service killed after the PSP applied a payment leaves its key started (SENT), and reconcile settles it once it
    is a safe age old."""
    s = ALL[scenario]
    stack = make_stack(CORRECT, account=psp, accounts=s.accounts, account_timeout_ms=s.account_timeout_ms)
    result = run_and_check(stack, s)
    result.assert_holds()
    aged = result.history.where(f="age")
    resolved = result.history.where(f="resolve", type="invoke")
    assert (bool(aged), bool(resolved)) == (settled, settled), (aged, resolved)


NODE = manifest.load(ROOT / "relay_under_test" / "payments_node")  # a stranger's, from docs/production-api.md


@pytest.fixture(scope="module")
def node_psp(tmp_path_factory):
    """The account system in the Node service's PSP's shape."""
    system = AccountSystem.start(tmp_path_factory.mktemp("node-psp"), NODE.profile.downstream)
    yield system
    system.close()


@pytest.mark.slow
@pytest.mark.parametrize("scenario", sorted(ALL))
def test_a_second_service_written_from_the_docs_alone_keeps_every_rule_and_lands(make_stack, node_psp, scenario):
    """relay_under_test/payments_node: Node.js, PostgreSQL, resolve, reprocess and purge of its own; every
    scenario held and exercised, or not applicable (a claim reading the contract's times or attempts)."""
    assert (NODE.folder / "node_modules" / "pg").is_dir(), "run scripts/bootstrap.sh (npm ci of payments_node)"
    s = ALL[scenario]
    stack = make_stack(NODE, account=node_psp, accounts=s.accounts, account_timeout_ms=s.account_timeout_ms)
    run_and_check(stack, s).assert_holds()


def test_every_mutant_folder_is_in_the_table():
    assert {p.parent.name for p in (SERVICE / "mutants").glob("*/relay.toml")} == set(CAUGHT)


def _variant(tmp_path, old: str, new: str):
    """A copy of the service whose relay.toml has one line changed."""
    text = (SERVICE / "relay.toml").read_text()
    assert old in text
    copy = tmp_path / "payments"
    shutil.copytree(SERVICE, copy, ignore=shutil.ignore_patterns("mutants", "*_test.go"))
    (copy / "relay.toml").write_text(text.replace(old, new))
    return copy / "relay.toml"


def test_a_ledger_url_that_cannot_be_reached_is_named_before_anything_starts(make_stack, psp, tmp_path):
    port = lease_port()  # held, and nothing listens there
    try:
        url = f"postgresql://u@127.0.0.1:{port}/db"
        bad = manifest.load(_variant(tmp_path, 'kind = "postgresql"', f'kind = "postgresql"\nurl = "{url}"'))
        with pytest.raises(RelayError) as e:
            make_stack(bad, account=psp)
    finally:
        release_port(port)
    assert "the [ledger] url cannot be reached" in str(e.value) and "fix: start that database" in str(e.value)


def test_a_mapping_to_columns_the_service_does_not_have_is_named_once_serve_is_ready(make_stack, psp, tmp_path):
    bad = manifest.load(_variant(tmp_path, 'status = "status"', 'status = "state"'))
    stack = make_stack(bad, account=psp)
    with pytest.raises(RelayError) as e:
        stack.start_relay()
    assert "[ledger] maps table 'payments_idempotency' and columns 'idempotency_key', 'state'" in str(e.value)
    assert 'column "state" does not exist' in str(e.value)
