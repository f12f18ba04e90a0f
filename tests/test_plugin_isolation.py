"""Installing relaychaos changes nothing in another project's pytest runs: the plugin only adds."""

import pytest

from relaychaos import options
from relaychaos.engine.budget import BUDGETS, budget_settings, default_budget
from relaychaos.plugin import hooks

pytest_plugins = ["pytester"]

PLAIN_PROPERTY_TEST = """
from hypothesis import given, settings, strategies as st

RUNS = []

@given(st.integers())
def test_counts(x):
    RUNS.append(x)

def test_report():
    print("EXAMPLES", len(RUNS), "MAX", settings.default.max_examples)
"""


@pytest.mark.parametrize("ci", ["", "true"])
@pytest.mark.process
def test_a_plain_hypothesis_test_keeps_its_default_100_examples(pytester, monkeypatch, ci):
    monkeypatch.setenv("CI", ci)
    pytester.makepyfile(test_plain=PLAIN_PROPERTY_TEST)
    result = pytester.runpytest_subprocess("-s", "-p", "no:cacheprovider", "-p", "no:randomly")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*EXAMPLES 100 MAX 100*"])  # the plugin is loaded (next test), yet changed nothing


@pytest.mark.process
def test_the_plugin_is_loaded_in_another_project(pytester):
    pytester.makepyfile(
        test_plain="def test_x(pytestconfig):\n    assert pytestconfig.pluginmanager.has_plugin('relaychaos')\n"
    )
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)


@pytest.mark.process
def test_a_projects_own_stack_fixture_gets_no_marker_from_relaychaos(pytester):
    pytester.makepyfile(
        test_own="import pytest\n\n@pytest.fixture\ndef stack():\n    return []\n\n"
        "def test_uses_its_own_stack(stack):\n    assert stack == []\n"
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-m", "not stack")
    result.assert_outcomes(passed=1)


def test_the_plugin_imports_no_private_hypothesis_module():
    with open(hooks.__file__) as f:
        source = f.read()
    assert "hypothesis._" not in source and "load_profile" not in source and "register_profile" not in source


def test_the_budget_choices_are_the_budgets():
    assert tuple(BUDGETS) == options.BUDGETS


@pytest.mark.parametrize(
    "env, budget",
    [({}, "quick"), ({"CI": "true"}, "ci"), ({"CI": "0"}, "quick"), ({"CI": "1"}, "ci"), ({"CI": "off"}, "quick")],
)
def test_the_default_budget_follows_ci(env, budget):
    assert default_budget(env) == budget


def test_each_budget_is_a_settings_object_and_an_unknown_one_is_named():
    assert budget_settings("nightly").max_examples == 300 and budget_settings("ci").derandomize
    with pytest.raises(ValueError, match="quick, nightly, ci"):
        budget_settings("forever")
