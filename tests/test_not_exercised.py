"""A scenario whose fault is made to miss is "not exercised", never "passed": in the result, in results.json,
JUnit, the report and the exit status.

The miss is made on purpose: kill-before-account-call with the kill delayed past the relay's answer
(an await_sends before the kill), so SIGKILL meets an idle relay and no crash between claim and call
is tested. Every rule still holds.
"""

import dataclasses
import json
import subprocess
import sys

import pytest

from relaychaos.checkers.claims import KilledBeforeCall, Queried
from relaychaos.checkers.landing import LANDED, MISSED
from relaychaos.engine import scenario_file
from relaychaos.engine.steps import AwaitSends
from relaychaos.reports.results import NOT_EXERCISED
from relaychaos.scenarios import ALL

from .conftest import ROOT

pytestmark = pytest.mark.stack


def late_kill():
    """kill-before-account-call with the kill after the channel has its answer (E901, after the time-out)."""
    s = ALL["kill-before-account-call"]
    steps = s.steps[:3] + (AwaitSends(),) + s.steps[3:]
    return dataclasses.replace(
        s, name="kill-after-the-answer", steps=steps, claims=(KilledBeforeCall("g1", step=5), Queried("g1", False))
    )


def test_a_kill_delayed_past_the_answer_is_not_exercised_and_says_which_claim_missed(run_chaos):
    result = run_chaos(late_kill())
    assert result.ok, result.report()  # every rule held: the relay did nothing wrong
    by_kind = {x.kind: x for x in result.landing}
    assert by_kind["killed_before_call"].status == MISSED, result.landing
    assert "no send of g1 was in flight" in by_kind["killed_before_call"].why
    assert by_kind["waited"].status == LANDED
    assert result.outcome == NOT_EXERCISED


def test_relaychaos_run_reports_it_not_exercised_and_exits_3(tmp_path):
    folder = tmp_path / "set"
    folder.mkdir()
    (folder / "kill-after-the-answer.yaml").write_text(scenario_file.dump(late_kill()))
    out = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "relaychaos.commands.cli", "run", "--out", str(out), "-n", "0", "--"]
        + ["--relaychaos-scenarios", f"late={folder}", "-k", "late: or happy-path"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "1 not exercised" in proc.stdout and "NOT EXERCISED" in proc.stdout
    results = json.loads((out / "results.json").read_text())
    (entry,) = [s for s in results["scenarios"] if "late:" in s["nodeid"]]
    assert entry["outcome"] == NOT_EXERCISED and entry["message"].startswith("not exercised")
    assert [x["status"] for x in entry["landing"] if x["kind"] == "killed_before_call"] == [MISSED]
    assert (results["ok"], results["exercised"], results["summary"][NOT_EXERCISED]) == (True, False, 1)
    junit = (out / "junit.xml").read_text()
    assert '<skipped type="pytest.skip" message="not exercised' in junit, "JUnit: not a pass"
    page = (out / "report.html").read_text()
    assert "but 1 scenario was not exercised" in page and "MISSED</b>: the kill (step 5)" in page
    again = subprocess.run(
        [sys.executable, "-m", "relaychaos.commands.cli", "recheck", str(out)], cwd=ROOT, capture_output=True, text=True
    )
    assert again.returncode == 3 and "1 not exercised" in again.stdout, again.stdout + again.stderr
