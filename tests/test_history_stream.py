"""Histories streamed to disk: one JSON line per event as it happens, gzipped when large, read back in one pass."""

import gzip
import json
import threading
import tracemalloc

import pytest

from relaychaos import checkers
from relaychaos.history import History, HistoryFile, StreamedHistory, iter_events
from relaychaos.recorder import Recorder
from relaychaos.run.chaos import check_path

from .history_builder import HistoryBuilder


def test_each_event_is_on_disk_as_soon_as_it_is_appended(tmp_path):
    h = StreamedHistory(tmp_path / "h.jsonl")
    first = h.append("runner", "ok", "scenario", at=1.0, name="x")
    h.append("channel-0", "invoke", "transfer", at=2.0, guid="g1")
    lines = (tmp_path / "h.jsonl").read_text().splitlines()  # not closed yet
    assert [json.loads(line)["index"] for line in lines] == [0, 1]
    assert first.index == 0 and len(h) == 2
    assert [e.f for e in iter_events(h.path)] == ["scenario", "transfer"]
    assert h.close() == tmp_path / "h.jsonl"  # small: left as it is


def test_a_large_history_is_gzipped_on_close_and_still_read_back(tmp_path):
    with History.streaming(tmp_path / "big.jsonl", compress_over=1000) as h:
        for n in range(100):
            h.append("channel-0", "ok", "transfer", at=float(n), guid=f"g{n}")
    assert h.path == tmp_path / "big.jsonl.gz" and not (tmp_path / "big.jsonl").exists()
    with gzip.open(h.path) as f:
        assert f.readline().startswith(b'{"index": 0')
    assert [e.value["guid"] for e in iter_events(tmp_path / "big.jsonl")] == [f"g{n}" for n in range(100)]
    assert len(list(HistoryFile(h.path))) == 100


def test_appends_from_many_threads_get_distinct_indices_in_file_order(tmp_path):
    h = StreamedHistory(tmp_path / "h.jsonl")

    def send(n):
        for k in range(500):
            h.append(f"channel-{n}", "invoke", "transfer", guid=f"g{n}-{k}")

    threads = [threading.Thread(target=send, args=(n,)) for n in range(4)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    h.close()
    assert [e.index for e in iter_events(h.path)] == list(range(2000))


@pytest.mark.slow
def test_memory_stays_flat_however_many_events_are_appended(tmp_path):
    h = StreamedHistory(tmp_path / "h.jsonl")
    tracemalloc.start()
    try:
        for n in range(20_000):
            h.append("channel-0", "ok", "transfer", at=float(n), guid=f"g{n}", body="x" * 100)
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    h.close()
    assert held < 200_000, f"{held} bytes held after 20k events"


def test_appending_after_close_says_so(tmp_path):
    h = StreamedHistory(tmp_path / "h.jsonl")
    h.close()
    with pytest.raises(ValueError, match="closed"):
        h.append("runner", "ok", "heal")


def test_a_last_line_cut_short_is_skipped_and_a_bad_line_elsewhere_named(tmp_path):
    path = tmp_path / "h.jsonl"
    path.write_text(
        '{"index": 0, "time": 1.0, "process": "runner", "type": "ok", "f": "heal", "value": {}}\n'
        '{"index": 1, "time": 2.0, "proc'
    )
    assert [e.index for e in iter_events(path)] == [0]
    path.write_text('not json\n{"index": 0, "time": 1.0, "process": "runner", "type": "ok", "f": "heal"}\n')
    with pytest.raises(ValueError, match="line 1"):
        list(iter_events(path))


def _violating() -> HistoryBuilder:
    h = HistoryBuilder(accounts={"alice": 100, "bob": 0})
    h.send("g1", at=0.0, answered_at=0.05)
    h.account_call("g1", received_at=0.01)
    h.send("g1", at=0.2, answered_at=0.25)
    h.account_call("g1", received_at=0.21)  # sent twice: debited twice
    h.snapshot({"g1": {"status": "DONE", "resp_code": "0000", "attempts": 1, "updated_at": 0.3}}, at=0.3)
    return h


def test_a_recorder_writes_through_a_streamed_history_and_the_file_checks_like_the_memory(tmp_path):
    built = _violating().build()
    streamed = StreamedHistory(tmp_path / "h.jsonl", compress_over=100)
    recorder = Recorder(streamed)
    for e in built:
        recorder.history.append(e.process, e.type, e.f, at=e.time, **e.value)
    path = streamed.close()
    assert path.name == "h.jsonl.gz"
    verdicts = check_path(path)
    assert verdicts == checkers.check(built)
    assert {v.rule for v in verdicts} >= {"one-account-call", "one-debit"}
