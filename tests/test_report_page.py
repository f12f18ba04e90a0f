"""The run's report: every scenario with its verdicts, plots and timeline, from results.json and the kept histories;
and `relaychaos timeline HISTORY` for a timeline on demand."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from relaychaos import checkers
from relaychaos.records.results import VerdictRecord
from relaychaos.reports import html
from relaychaos.reports.results import RunResults

from .conftest import ROOT
from .stories import double_debit, happy


def make_run(run: Path, *, keep_histories: bool = True) -> Path:
    """A run folder as `relaychaos run` leaves it: results.json (each entry naming its history) and histories/."""
    results = RunResults(str(run / "relay.toml"), "broken-relay")
    stories = {"double-debit": double_debit().build(), "happy": happy().build()}
    for name, history in stories.items():
        found = json.loads(json.dumps([{**v.to_dict(), "scenario": name} for v in checkers.check(history)]))
        verdicts = [VerdictRecord.from_builtins(v) for v in found]
        outcome, message = ("failed", f"[{verdicts[0].rule}] GUID g1 ...") if verdicts else ("passed", None)
        nodeid = f"scenarios/test_suite.py::test_scenario[{name}]"
        results.add(nodeid, "call", outcome, 1.5, message, verdicts)
        results.add(nodeid, "teardown", "passed", 0.0, None)  # a scenario is listed once it has finished
    results.write(run / "results.json")
    data = json.loads((run / "results.json").read_text())
    if keep_histories:
        (run / "histories").mkdir()
        packed = gzip.compress(stories["double-debit"].dumps().encode())
        (run / "histories" / "double-debit.jsonl.gz").write_bytes(packed)
        (run / "histories" / "happy.jsonl").write_text(stories["happy"].dumps())
        for entry in data["scenarios"]:
            name = entry["nodeid"].split("[")[1].rstrip("]")
            entry["history"] = f"histories/{name}.jsonl" + (".gz" if name == "double-debit" else "")
    (run / "results.json").write_text(json.dumps(data))
    return run / "results.json"


def test_a_failing_scenario_gets_its_timeline_and_the_report_links_it_with_its_verdicts_and_plots(tmp_path):
    page = html.write(make_run(tmp_path)).read_text()
    assert (tmp_path / "timelines" / "double-debit.html").is_file()
    assert not (tmp_path / "timelines" / "happy.html").exists(), "passing scenarios get theirs on demand"
    assert "href='timelines/double-debit.html'" in page and "href='histories/double-debit.jsonl.gz'" in page
    assert "href='histories/happy.jsonl'" in page and "timelines/happy.html" not in page
    assert "at most one account call per GUID" in page and "contract §3:" in page
    assert page.count('<svg class="plot latency"') == 2 and 'class="plot score-sheet"' in page
    assert "rules were broken" in page and "[one-account-call] GUID g1" in page


def test_the_timeline_shows_the_verdicts_the_run_recorded(tmp_path):
    html.write(make_run(tmp_path))
    timeline = (tmp_path / "timelines" / "double-debit.html").read_text()
    recorded = {v["rule"] for v in json.loads((tmp_path / "results.json").read_text())["scenarios"][0]["verdicts"]}
    assert recorded and all(f"<span class=rule>{rule}</span>" in timeline for rule in recorded)


def test_results_without_kept_histories_still_make_a_report_without_timelines(tmp_path):
    page = html.write(make_run(tmp_path, keep_histories=False)).read_text()
    assert not (tmp_path / "timelines").exists() and "timeline</a>" not in page
    assert "at most one account call per GUID" in page, "the verdicts are on the page all the same"


def test_an_unreadable_history_costs_its_timeline_not_the_report(tmp_path):
    results = make_run(tmp_path)
    (tmp_path / "histories" / "double-debit.jsonl.gz").write_bytes(b"not gzip, not json")
    page = html.write(results).read_text()
    assert "double-debit: its timeline could not be drawn from histories/double-debit.jsonl.gz: ValueError:" in page
    assert "line 1: not a history event" in page
    assert "happy" in page


def relaychaos(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "relaychaos.commands.cli", *args], cwd=ROOT, capture_output=True, text=True, timeout=120
    )


@pytest.mark.process
def test_relaychaos_timeline_draws_any_kept_history_into_the_runs_timelines_and_the_report_links_it(tmp_path):
    results = make_run(tmp_path)
    proc = relaychaos("timeline", str(tmp_path / "histories" / "happy.jsonl"))
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "timelines" / "happy.html").is_file() and "0 verdict(s)" in proc.stdout
    assert "href='timelines/happy.html'" in html.write(results).read_text()


@pytest.mark.process
def test_relaychaos_timeline_writes_where_it_is_told(tmp_path):
    history = tmp_path / "history.jsonl"
    history.write_text(double_debit().build().dumps())
    proc = relaychaos("timeline", str(history), "--out", str(tmp_path / "out" / "t.html"))
    assert proc.returncode == 0 and (tmp_path / "out" / "t.html").is_file()
    assert relaychaos("timeline", str(history)).returncode == 0 and (tmp_path / "history.html").is_file()


@pytest.mark.process
def test_relaychaos_timeline_on_a_missing_or_bad_file_exits_2_naming_it_and_the_fix(tmp_path):
    proc = relaychaos("timeline", str(tmp_path / "nope.jsonl"))
    assert proc.returncode == 2 and "nope.jsonl: cannot read the history" in proc.stderr and "fix:" in proc.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text("oops\n" + happy().build().dumps())
    proc = relaychaos("timeline", str(bad))
    assert (
        proc.returncode == 2
        and "bad.jsonl: not a history" in proc.stderr
        and "line 1: not a history event" in proc.stderr
    )
    assert "Traceback" not in proc.stderr
