"""A class written by a stranger, from the contract alone (examples/classes/stranger-20, its answer key in
ANSWERS.md): the scenarios catch the bugs it planted that once escaped them, and pass its correct relays.

The Go relay (tnakamura) is kept as source only; docs/grading.md gives the whole class's grades.
"""

import pytest

from relaychaos.scenarios import ALL
from relaychaos.stack import manifest

from .conftest import ROOT

pytestmark = pytest.mark.stack
CLASS = ROOT / "examples" / "classes" / "stranger-20"


def relay(name: str):
    return manifest.load(CLASS / name / "relay.toml")


@pytest.mark.parametrize(
    "student, scenario",
    [
        ("qzhang", "race-pairs-two-relays"),  # a process-local lock around a microsecond check-then-insert
        (
            "rfernandes",
            "kill-after-applied-before-done",
        ),  # the claim committed only after the call, `Connection: close`
    ],
)
def test_a_bug_that_once_escaped_is_shown_as_the_double_debit_it_is(run_chaos, student, scenario):
    result = run_chaos(ALL[scenario], manifest=relay(student))
    assert "one-account-call" in {v.rule for v in result.verdicts}, result.report()


@pytest.mark.parametrize("student", ["akowalski", "mbrennan"])
@pytest.mark.parametrize("scenario", ["race-pairs-two-relays", "kill-after-applied-before-done", "min-age-trap"])
def test_the_stranger_s_correct_relays_hold(run_chaos, student, scenario):
    result = run_chaos(ALL[scenario], manifest=relay(student))
    assert result.ok, result.report()
