"""A night's records on disk (relaychaos.incidents.spill): what a pass reads is what it would read in memory, in time
order, with the account clock's offset, however many runs the records were written in, and nothing is left behind;
an import that holds only a window's GUIDs (guids.Night) writes what one holding them all would."""

import random

from relaychaos.commands.cli import main
from relaychaos.incidents import guids, spill
from relaychaos.incidents.records import AccountLine
from relaychaos.incidents.spill import Log, Runs

from .conftest import ROOT

EXAMPLE = ROOT / "examples" / "incidents" / "oom-early-resolve"


def calls(n: int) -> list[AccountLine]:
    rng = random.Random(7)
    return [
        AccountLine("journal.csv", i, float(rng.randrange(50)), f"g{i}", "a", "b", 5, "0000", None if i % 3 else 60.0)
        for i in range(n)
    ]


def test_a_log_read_from_many_runs_is_in_time_order_and_at_equal_times_in_the_order_added():
    records = calls(1000)
    log = Log(AccountLine, run=64)
    for r in records:
        log.add(r)
    log.close()
    assert len(log) == 1000
    assert [(r.at, r.line) for r in log] == sorted((r.at, r.line) for r in records)
    assert [r.line for r in log] == [r.line for r in log], "every pass reads the same"


def test_the_offset_moves_both_times_of_every_record_a_pass_reads_and_the_records_are_made_afresh():
    log = Log(AccountLine, run=64)
    for r in calls(200):
        log.add(r)
    log.close()
    first = next(iter(log))
    first.at = -1.0
    log.offset = 2.5
    moved = list(log)
    assert moved[0].at == 2.5 and all(r.at >= 2.5 for r in moved), "a record a pass changed is not the next pass's"
    assert all(r.answered_at in (None, 62.5) for r in moved)


def test_rows_sort_by_their_values_and_the_runs_files_go_with_them():
    rows = Runs(run=10)
    values = [("p" + str(i % 7), i, i % 3) for i in range(100)]
    for v in random.Random(1).sample(values, len(values)):
        rows.add(v)
    rows.close()
    files = rows.files
    assert list(rows) == sorted(values) and len(files) == 10 and all(f.exists() for f in files)
    del rows
    assert not any(f.exists() for f in files)


def test_an_import_in_runs_of_50_records_letting_go_of_each_guid_a_second_after_its_first_send_writes_the_same_files(
    tmp_path, monkeypatch
):
    """The GUIDs whose records reach past that second (resends, late answers, batch runs) are kept whole."""
    assert main(["incident", "import", str(EXAMPLE), "--out", str(tmp_path / "memory"), "--no-shrink"]) == 0
    monkeypatch.setattr(spill, "RUN", 50)
    monkeypatch.setattr(guids, "WINDOW_S", 1.0)
    assert main(["incident", "import", str(EXAMPLE), "--out", str(tmp_path / "disk"), "--no-shrink"]) == 0
    for name in ("night.yaml", "story.yaml"):
        memory, disk = (
            (tmp_path / kind / name).read_text().replace(str(tmp_path / kind), "OUT") for kind in ("memory", "disk")
        )
        assert memory == disk, name
