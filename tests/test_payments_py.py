"""A third production-style service, judged blind: examples/payments_py.

A Python service (its own table `idem_requests`, its own statuses pending / completed / declined /
in_doubt / not_sent, its own PSP paths and JSON, its own batch commands and flags: `settle
--stale-after`, `retry-unsent --limit-attempts`, `expire-keys --ttl`) written from the docs alone by
someone who had not read the harness, with six mutants whose bugs its author sealed away before the
harness met them. Each is caught by the named scenario the sealed key expected, by the rule it breaks;
the correct service is judged by every rule of the rule book.
"""

from __future__ import annotations

import pytest

from relaychaos import checkers
from relaychaos.run.chaos import run_and_check
from relaychaos.scenarios import ALL
from relaychaos.stack import manifest
from relaychaos.stack.account_system import AccountSystem

from .conftest import ROOT

pytestmark = pytest.mark.stack  # the service, its PostgreSQL, its PSP: real processes

SERVICE = ROOT / "examples" / "payments_py"
CORRECT = manifest.load(SERVICE)
CAUGHT = {  # mutant -> the named scenario that catches it, and the rule it breaks there (as the sealed key said)
    "m1": ("latency-beyond-timeout", "one-debit"),  # a PSP time-out taken for "not sent", then sent again
    "m2": ("resend-after-done", "done-replay"),  # a replay answered 200 instead of the stored 201
    "m3": ("race-pairs-two-relays", "one-debit"),  # a check-then-insert guarded by a lock of one process
    "m4": ("purge-keeps-undecided", "one-debit"),  # expiry deletes undecided keys, sent again as new
    "m5": ("two-reprocess-runs-at-once", "one-debit"),  # an unguarded claim in retry-unsent
    "m6": ("happy-path", "write-before-send"),  # the claim committed only after the PSP answered
}
SAMPLE = (
    "happy-path",
    "kill-before-account-call",
    "race-pairs-two-relays",
    "two-reprocess-runs-at-once",
    "min-age-trap",
)


@pytest.fixture(scope="module")
def psp(tmp_path_factory):
    """The account system in the service's PSP's shape ([downstream] of its relay.toml)."""
    assert (SERVICE / "venv" / "bin" / "python").exists(), "run scripts/bootstrap.sh (payments_py's build.sh)"
    system = AccountSystem.start(tmp_path_factory.mktemp("py-psp"), CORRECT.profile.downstream)
    yield system
    system.close()


def test_the_service_is_judged_by_every_rule_of_the_rule_book():
    assert (CORRECT.profile.name, CORRECT.profile.ledger.kind) == ("idempotency-key", "postgresql")
    assert checkers.not_checked(CORRECT.profile.provides(CORRECT.commands)) == {}


def test_every_mutant_folder_is_in_the_table():
    assert {p.parent.name for p in (SERVICE / "mutants").glob("*/relay.toml")} == set(CAUGHT)


@pytest.mark.parametrize("scenario", SAMPLE)
def test_the_correct_service_keeps_every_rule(make_stack, psp, scenario):
    s = ALL[scenario]
    stack = make_stack(CORRECT, account=psp, accounts=s.accounts, account_timeout_ms=s.account_timeout_ms)
    run_and_check(stack, s).assert_holds()


@pytest.mark.parametrize("mutant", sorted(CAUGHT))
def test_each_sealed_bug_is_caught_by_the_scenario_its_author_expected(make_stack, psp, mutant):
    scenario, rule = CAUGHT[mutant]
    broken = manifest.load(SERVICE / "mutants" / mutant)
    s = ALL[scenario]
    stack = make_stack(broken, account=psp, accounts=s.accounts, account_timeout_ms=s.account_timeout_ms)
    result = run_and_check(stack, s)
    assert rule in {v.rule for v in result.verdicts}, result.report()
