"""A keyed service's own ledger rules catch its bugs on a real stack: relay_under_test/payments_node, broken.

The Node service maps `updated_at`, `attempts` and `answer` in [ledger] and has resolve, reprocess and
purge, so the ledger rules judge its table as the course's. Each mutant here is a copy of the service with
one line of its source changed; the named scenario catches it by the rule it breaks.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from relaychaos.run.chaos import run_and_check
from relaychaos.scenarios import ALL
from relaychaos.stack import manifest
from relaychaos.stack.account_system import AccountSystem

from .conftest import ROOT

pytestmark = pytest.mark.stack  # the service, its PostgreSQL, its PSP: real processes

SERVICE = ROOT / "relay_under_test" / "payments_node"
NODE = manifest.load(SERVICE)
# mutant -> (file, the line as written, the line broken, the scenario that catches it, the rule it breaks)
MUTANTS = {
    "purge_ignores_retention": (
        "src/db.js",
        "          AND updated_at <= ${NOW} - $1::double precision`,",
        "          AND $1::double precision >= 0`,",
        "purge-retention",
        "purge-retention",
    ),
}


@pytest.fixture(scope="module")
def node_psp(tmp_path_factory):
    """The account system in the Node service's PSP's shape."""
    system = AccountSystem.start(tmp_path_factory.mktemp("node-psp"), NODE.profile.downstream)
    yield system
    system.close()


def mutant(tmp_path: Path, name: str) -> manifest.Manifest:
    """A copy of the service with the mutant's one line changed."""
    path, line, broken = MUTANTS[name][:3]
    copy = tmp_path / name
    shutil.copytree(SERVICE, copy)
    source = (copy / path).read_text()
    assert source.count(line) == 1, f"{path} no longer holds the line the mutant {name} changes"
    (copy / path).write_text(source.replace(line, broken))
    return manifest.load(copy)


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_a_broken_keyed_service_is_caught_by_the_ledger_rule_it_breaks(make_stack, node_psp, tmp_path, name):
    assert (SERVICE / "node_modules" / "pg").is_dir(), "run scripts/bootstrap.sh (npm ci of payments_node)"
    scenario, rule = MUTANTS[name][3:]
    s = ALL[scenario]
    stack = make_stack(
        mutant(tmp_path, name), account=node_psp, accounts=s.accounts, account_timeout_ms=s.account_timeout_ms
    )
    result = run_and_check(stack, s)
    assert rule in {v.rule for v in result.verdicts}, result.report()


def test_the_correct_service_keeps_the_same_scenarios_ledger_rules(make_stack, node_psp):
    for scenario in sorted({m[3] for m in MUTANTS.values()}):
        s = ALL[scenario]
        stack = make_stack(NODE, account=node_psp, accounts=s.accounts, account_timeout_ms=s.account_timeout_ms)
        run_and_check(stack, s).assert_holds()
