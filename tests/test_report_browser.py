"""The report and a failing scenario's timeline, loaded in a real headless Chromium: lanes and boxes drawn, the
verdict highlighted, details on click, and not one console error. Skips, saying why, where no Chromium is
installed (scripts/chromium.sh installs one; CI runs it)."""

from __future__ import annotations

import json

import pytest

from relaychaos import checkers
from relaychaos.records.results import VerdictRecord
from relaychaos.reports import html
from relaychaos.reports.results import RunResults

from . import browser
from .conftest import ROOT
from .test_report_page import make_run

pytestmark = pytest.mark.skipif(
    browser.find() is None,
    reason="no Chromium on this machine (chromium, "
    "chromium-browser, google-chrome or RELAYCHAOS_CHROMIUM): run scripts/chromium.sh",
)

DRAWN = {
    "lanes": "Array.from(document.querySelectorAll('#lanes .lanename')).map(e => e.textContent)",
    "boxes": "document.querySelectorAll('#chart rect.box').length",
    "expected": "JSON.parse(document.getElementById('data').textContent).boxes.length",
    "hits": "document.querySelectorAll('#chart rect.box.hit').length",
    "selected": "document.getElementById('selected').textContent",
}


@pytest.mark.process
def test_a_failing_scenarios_timeline_draws_every_lane_and_box_and_highlights_the_verdict(tmp_path):
    html.write(make_run(tmp_path))
    page = browser.load((tmp_path / "timelines" / "double-debit.html").as_uri(), DRAWN)
    assert page.errors == []
    v = page.values
    assert v["lanes"] == ["faults", "channel", "relay a", "batch runs", "account system"]
    assert v["boxes"] == v["expected"] > 0 and v["hits"] > 0
    assert "at most one account call per GUID" in v["selected"] and "contract §3" in v["selected"]


@pytest.mark.process
def test_hovering_a_box_says_what_it_was_and_clicking_it_shows_its_events_fields(tmp_path):
    html.write(make_run(tmp_path))
    box = "document.querySelector('#chart rect.box.ok')"
    page = browser.load(
        (tmp_path / "timelines" / "double-debit.html").as_uri(),
        {
            "tip": f"{box}.dispatchEvent(new MouseEvent('mousemove', {{bubbles: true, clientX: 50, clientY: 50}}));"
            "document.getElementById('tip').textContent",
            "detail": f"{box}.dispatchEvent(new MouseEvent('click', {{bubbles: true}}));"
            "document.getElementById('detail').textContent",
            "all": "document.getElementById('all').click(); document.querySelectorAll('#chart rect.box.hit').length",
            "zoomed": "const w = +document.getElementById('chart').getAttribute('width');"
            "document.getElementById('zoomin').click(); +document.getElementById('chart').getAttribute('width') / w",
        },
    )
    assert page.errors == []
    assert "channel sends 1 alice→bob" in page.values["tip"]
    assert '"guid": "g1"' in page.values["detail"] and "transfer" in page.values["detail"]
    assert page.values["all"] == 0, "show all: nothing singled out"
    assert page.values["zoomed"] > 1.5


@pytest.mark.process
def test_the_report_loads_without_console_errors_and_links_timelines_that_exist(tmp_path):
    html.write(make_run(tmp_path))
    page = browser.load(
        (tmp_path / "report.html").as_uri(),
        {
            "links": "Array.from(document.querySelectorAll('a[href^=\"timelines/\"]'))"
            ".map(a => a.getAttribute('href'))",
            "plots": "document.querySelectorAll('svg.plot').length",
        },
    )
    assert page.errors == []
    assert page.values["links"] and all((tmp_path / link).is_file() for link in page.values["links"])
    assert page.values["plots"] >= 3  # the score sheet, and a failing scenario's two


@pytest.mark.process
def test_the_browser_check_does_see_a_page_that_fails(tmp_path):
    bad = tmp_path / "bad.html"
    bad.write_text("<!doctype html><script>console.error('shown'); undefinedThing.go();</script>")
    page = browser.load(bad.as_uri(), {})
    assert any("shown" in e for e in page.errors) and any("undefinedThing" in e for e in page.errors)


@pytest.mark.stack
def test_a_real_race_on_a_check_then_insert_relay_draws_its_timeline_in_the_browser(make_stack, tmp_path):
    from relaychaos.run.chaos import run_and_check
    from relaychaos.scenarios import ALL

    scenario = ALL["race-32-one-relay"]
    stack = make_stack(
        ROOT / "relay_under_test" / "mutants" / "check_then_insert" / "relay.toml",
        accounts=scenario.accounts,
        account_timeout_ms=scenario.account_timeout_ms,
    )
    result = run_and_check(stack, scenario)
    assert not result.ok, "check-then-insert double-sends under 32 concurrent copies"
    run = tmp_path / "run"
    (run / "histories").mkdir(parents=True)
    (run / "histories" / f"{scenario.name}.jsonl").write_text(result.history.dumps())
    results = RunResults(str(stack.manifest.path), "check_then_insert")
    nodeid = f"scenarios/test_suite.py::test_scenario[{scenario.name}]"
    results.add(
        nodeid,
        "call",
        "failed",
        1.0,
        result.report(),
        [
            VerdictRecord.from_builtins(json.loads(json.dumps({**v.to_dict(), "scenario": scenario.name})))
            for v in result.verdicts
        ],
    )
    results.add(nodeid, "teardown", "passed", 0.0, None)
    results.write(run / "results.json")
    data = json.loads((run / "results.json").read_text())
    data["scenarios"][0]["history"] = f"histories/{scenario.name}.jsonl"
    (run / "results.json").write_text(json.dumps(data))
    html.write(run / "results.json")
    page = browser.load((run / "timelines" / f"{scenario.name}.html").as_uri(), DRAWN)
    assert page.errors == []
    assert {"faults", "steps", "channel", "relay a", "account system"} <= set(page.values["lanes"])
    assert page.values["boxes"] == page.values["expected"] >= 32 and page.values["hits"] > 0
    assert any(v.rule == "one-account-call" for v in checkers.check(result.history))
