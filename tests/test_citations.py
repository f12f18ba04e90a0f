"""Every expectation of the harness cites the contract, and every rule sentence of the contract is exercised.

Nothing here starts a process: it reads the contract, the rule book, the checkers'
source and the scenarios.
"""

import ast
from pathlib import Path

import pytest

from relaychaos import checkers, contract
from relaychaos.contract import CLAUSES
from relaychaos.engine import scenario_file
from relaychaos.scenarios import ALL, INCIDENT_FILES, REGRESSION_FILES

from .conftest import ROOT

CHECKERS_DIR = ROOT / "harness" / "checkers"
CONTRACT = ROOT / "docs" / "relay-contract.md"  # the published contract
OBLIGATIONS = [c for c in CLAUSES.values() if c.kind == "obligation"]


def test_every_quote_stands_word_for_word_in_the_published_contract():
    missing = contract.missing_quotes(CONTRACT.read_text())
    assert not missing, [f"{c.id}: {c.quote!r}" for c in missing]


def test_the_published_contract_is_the_binding_one():
    binding = ROOT.parent / "shared" / "relay-contract.md"
    if not binding.exists():
        pytest.skip(f"no binding copy at {binding} (only in the project's own workspace)")
    published = CONTRACT.read_text().split("\n", 1)[1]  # less the provenance comment
    assert published == binding.read_text(), "docs/relay-contract.md differs from shared/relay-contract.md"
    assert f"(v{contract.VERSION})" in published.splitlines()[0]


def test_every_rule_cites_clauses_of_the_contract():
    for rule in checkers.RULES.values():
        assert rule.contract and all(c in CLAUSES for c in rule.contract), rule.id


def test_every_obligation_of_the_contract_is_enforced_by_a_rule():
    cited = {c for rule in checkers.RULES.values() for c in rule.contract}
    assert [c.id for c in OBLIGATIONS if c.id not in cited] == []


def _calls(name: str):
    """(file, call node) for every call of `name` in the checkers' source."""
    for path in sorted(CHECKERS_DIR.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == name:
                yield path.name, node


def test_every_expectation_in_the_checkers_cites_a_real_clause():
    found = list(_calls("Expectation"))
    assert found, "the answer checker builds its expectations with Expectation(...)"
    for file, node in found:
        cited = node.args[1] if len(node.args) > 1 else next(k.value for k in node.keywords if k.arg == "clause")
        assert isinstance(cited, ast.Constant) and cited.value in CLAUSES, f"{file}:{node.lineno}"


def test_every_verdict_a_checker_gives_names_the_clause_it_broke():
    for file, node in _calls("Verdict"):
        cited = [k.value for k in node.keywords if k.arg == "clause"]
        assert cited, f"{file}:{node.lineno}: Verdict(...) without clause="
        if isinstance(cited[0], ast.Constant):
            assert cited[0].value in CLAUSES, f"{file}:{node.lineno}: unknown clause {cited[0].value!r}"


def test_every_named_scenario_says_which_sentences_it_exercises():
    for scenario in ALL.values():
        assert scenario.covers, f"scenario {scenario.name} has no covers=(...)"
        assert set(scenario.covers) <= set(CLAUSES), scenario.name


def test_every_rule_sentence_of_the_contract_has_a_named_scenario():
    """The state machine is the second net, not the first: each obligation has a named scenario."""
    covered = {c for s in ALL.values() for c in s.covers}
    assert [c.id for c in OBLIGATIONS if c.id not in covered] == []


@pytest.mark.parametrize("path", REGRESSION_FILES + INCIDENT_FILES, ids=lambda p: p.stem)
def test_scenario_files_expect_only_rules_of_the_rule_book(path: Path):
    story = scenario_file.load(path)
    for relay, rules in story.breaks.items():
        assert set(rules) <= set(checkers.RULES), f"{path.name}: {relay} expects unknown rules"


RULES_PAGE = ROOT / "docs" / "rules.md"  # the rules and coverage tables live there


def test_the_docs_show_each_rule_with_its_contract_section():
    assert contract.rules_table(checkers.RULES) in RULES_PAGE.read_text(), (
        "regenerate the rules table in docs/rules.md: .venv/bin/python scripts/readme_tables.py --write"
    )


def test_the_docs_show_which_scenarios_exercise_each_sentence():
    assert contract.coverage_table(ALL.values(), checkers.RULES) in RULES_PAGE.read_text(), (
        "regenerate the coverage table in docs/rules.md: .venv/bin/python scripts/readme_tables.py --write"
    )
