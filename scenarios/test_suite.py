"""Every named scenario, run against the relay under test; a broken rule fails with its incident report."""
import pytest

from scenarios import ALL


@pytest.mark.parametrize("scenario", [pytest.param(s, marks=getattr(pytest.mark, s.family), id=s.name)
                                      for s in ALL.values()])
def test_scenario(run_chaos, scenario):
    run_chaos(scenario).assert_holds()
