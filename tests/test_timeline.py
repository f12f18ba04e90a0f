"""The timeline of a history: a lane per actor, a box per operation coloured by its outcome, faults shaded,
kills and starts marked, the verdicts' events highlighted; and the plots drawn from the same model."""

import gzip
import json
import re

import pytest

from relaychaos.history import History
from relaychaos.records.results import ResultsFile, RuleScore, ScenarioResult
from relaychaos.reports import plots, timeline
from relaychaos.reports.timeline_model import build

from .history_builder import HistoryBuilder
from .stories import double_debit


def lane_of(model, name):
    return [b for b in model.boxes if b.lane == name]


def test_concurrent_channel_calls_get_rows_of_their_own_and_later_calls_reuse_them():
    h = HistoryBuilder()
    h.send("g1", at=0.0, answered_at=0.3)
    h.send("g2", at=0.1, answered_at=0.2)
    h.send("g3", at=0.25, answered_at=0.4)  # g2's row is free again
    h.send("g4", at=0.5, answered_at=0.6)
    model = build(h.build())
    assert dict(model.lanes)["channel"] == 2
    rows = {b.guid: b.row for b in lane_of(model, "channel")}
    assert rows == {"g1": 0, "g2": 1, "g3": 1, "g4": 0}


def test_every_actor_has_its_lane_in_order():
    model = build(double_debit().build())  # a literal history has no runner steps, so no steps lane
    assert [name for name, _ in model.lanes] == ["faults", "channel", "relay a", "batch runs", "account system"]


def test_each_operation_is_coloured_ok_definite_failure_or_indeterminate():
    model = build(double_debit().build())
    channel = [(b.guid, b.outcome) for b in lane_of(model, "channel")]
    assert channel == [("g1", "info"), ("g1", "ok"), ("g2", "info")]  # E901, 0000, no answer
    account = [(b.guid, b.outcome) for b in lane_of(model, "account system")]
    assert account == [("g1", "ok"), ("g1", "ok"), ("g2", "info")]  # debited twice; g2's call never answered
    [batch] = lane_of(model, "batch runs")
    assert batch.outcome == "fail" and "resolve" in batch.label


def test_fault_windows_name_the_toxic_and_the_proxy_and_close_when_removed_or_healed():
    model = build(double_debit().build())
    shift = lane_of(model, "channel")[0].t0 - 0.2  # story time -> seconds since the first event
    windows = sorted((round(w.t0 - shift, 3), round(w.t1 - shift, 3), w.side, w.label) for w in model.windows)
    assert windows[0][:3] == (0.1, 0.5, "account") and "timeout downstream on account" in windows[0][3]
    assert windows[1][:3] == (0.7, 1.0, "channel") and windows[1][3] == "hub-a proxy disabled"
    assert any(m.kind == "nemesis" and "heal" in m.label for m in model.marks)


def test_kills_and_starts_are_marks_in_the_relays_lane_with_its_serving_spans():
    model = build(double_debit().build())
    marks = [(m.lane, m.kind) for m in model.marks if m.lane == "relay a"]
    assert marks == [("relay a", "start"), ("relay a", "kill"), ("relay a", "start")]
    assert [b.outcome for b in lane_of(model, "relay a")] == ["up", "up"]


def test_the_double_debit_verdict_names_the_rule_sentence_and_highlights_both_account_calls():
    model = build(double_debit().build())
    group = next(v for v in model.verdicts if v["rule"] == "one-account-call")
    assert group["guid"] == "g1" and group["text"] == "at most one account call per GUID"
    assert group["clause"].startswith("§3:")
    calls = {b.call for b in lane_of(model, "account system") if b.guid == "g1"}
    assert set(group["calls"]) == calls and len(calls) == 2
    assert set(group["events"]) & {i for b in lane_of(model, "channel") if b.guid == "g1" for i in b.events}


def test_the_page_is_one_self_contained_file_with_its_data_and_script():
    page = timeline.render(double_debit().build())
    assert not re.search(r"<(link|img)\b|\b(src|href)\s*=\s*['\"]?(https?:)?//", page), "nothing is fetched"
    data = json.loads(re.search(r"<script id=data type='application/json'>(.*?)</script>", page, re.S).group(1))
    assert len(data["boxes"]) > 0 and data["lanes"][0][0] == "faults"
    assert "at most one account call per GUID" in page and "function draw()" in page


def test_a_script_end_tag_inside_a_recorded_body_cannot_end_the_data_early():
    h = HistoryBuilder()
    h.send(None, raw='{"guid": "</script><script>alert(1)</script>"}', at=0.0, answered_at=0.1, code="E400")
    page = timeline.render(h.build())
    data = re.search(r"<script id=data type='application/json'>(.*?)</script>", page, re.S).group(1)
    assert "</script>" not in data and json.loads(data)["events"]


def test_a_saved_history_is_read_plain_or_gzipped_and_a_bad_line_is_named(tmp_path):
    history = double_debit().build()
    plain, packed = tmp_path / "h.jsonl", tmp_path / "h.jsonl.gz"
    plain.write_text(history.dumps())
    packed.write_bytes(gzip.compress(history.dumps().encode()))
    assert [e.f for e in History.read(packed)] == [e.f for e in History.read(plain)]
    plain.write_text("{not json\n" + history.dumps())
    with pytest.raises(ValueError, match="line 1: not a history event"):
        History.read(plain)


def test_the_latency_plot_has_a_dot_per_answered_channel_call_over_shaded_faults():
    model = build(double_debit().build())
    svg = plots.latency_svg(model)
    assert svg.count("<circle") == 3 and svg.count('fill-opacity="0.18"') == len(model.windows)
    assert "<title>g1 E901: 250.0 ms</title>" in svg


def test_the_account_rate_plot_counts_debited_and_other_calls_apart():
    svg = plots.account_rate_svg(build(double_debit().build()))
    assert "1 call(s) debited" in svg and "1 call(s) not debited" in svg


def test_the_score_sheet_shows_held_rules_and_bars_for_broken_ones():
    results = ResultsFile(
        relay="relay.toml",
        scenarios=[ScenarioResult(nodeid=f"t[{n}]", outcome="passed", duration_s=1.0) for n in "abc"],
        rules={
            "one-debit": RuleScore(
                what="at most one applied debit per GUID", contract="", held=False, broken_in=["a", "b"]
            ),
            "balances": RuleScore(what="balances", contract="", held=True, broken_in=[]),
        },
    )
    svg = plots.score_sheet_svg(results)
    assert "broken in 2 of 3 scenarios: a, b" in svg and "✓ held" in svg and svg.count("<rect") == 1


@pytest.mark.slow
def test_a_history_of_thousands_of_events_is_drawn_in_well_under_seconds():
    import time

    from relaychaos import checkers

    h = HistoryBuilder()
    for i in range(1500):
        h.send(f"g{i}", at=i * 0.01, answered_at=i * 0.01 + 0.05)
        h.account_call(f"g{i}", received_at=i * 0.01 + 0.01)
    history = h.build()
    verdicts = checkers.check(history)  # judged once, as the run does; drawing is what is timed
    t0 = time.monotonic()
    page = timeline.render(history, verdicts)
    took = time.monotonic() - t0
    assert len(history) > 3000 and page.count('"lane": "channel"') == 1500
    assert took < 3, f"{took:.1f} s to draw {len(history)} events (about 0.3 s on two idle cores)"
