"""The class gradebook: a CSV any spreadsheet reads back, one offline HTML page, and shards merged or refused."""

import csv
import io
import json
import re
import subprocess
import sys

import pytest

from relaychaos.records.gradebook import Gradebook
from relaychaos.reports import gradebook

from .conftest import ROOT
from .grade_records import class_of_records, record, ungradable, write_shard
from .schema_check import problems

ITEMS = ["claim", "sends-once", "answer-codes", "settled"]


def rows(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text, newline="")))


def test_the_csv_reads_back_with_every_awkward_name_as_it_was():
    records = class_of_records()
    read = rows(gradebook.csv_text(records, ITEMS))
    names = [r["submission"] for r in read]
    assert set(names) == {r.submission for r in records} - {'=HYPERLINK("x")'} | {'\'=HYPERLINK("x")'}
    assert 'eve "the <script>" o\'neil, jr.' in names and "dörte" in names and "名前 `tick`" in names
    assert names == sorted(names, key=lambda n: n.lstrip("'").casefold()), "one row per submission, by name"


def test_a_name_a_spreadsheet_would_run_as_a_formula_is_kept_as_text():
    read = rows(gradebook.csv_text([record('=HYPERLINK("x")'), record("+1"), record("@sum")], ITEMS))
    assert [r["submission"] for r in read] == ["'+1", '\'=HYPERLINK("x")', "'@sum"]


def test_the_csv_columns_are_the_fixed_ones_then_an_item_each_summed_over_its_sets_every_cell_one_line():
    bob = record("bob", broken={"one-account-call": ["race-32-one-relay", "min-age-trap"]})
    text = gradebook.csv_text([bob, ungradable("carol", "could not start:\nno relay.toml, at all")], ITEMS)
    assert text.splitlines()[0] == (
        "submission,score,max_score,gradable,timed_out,error,seed,claim,sends-once,answer-codes,settled"
    )
    assert "\r\n" in text, "RFC 4180 rows"
    assert len(text.splitlines()) == 3, "one line per row: no cell spans lines"
    b, c = rows(text)
    assert (b["score"], b["claim"], b["sends-once"], b["gradable"]) == ("63.33", "0", "13.33", "true")
    assert (c["score"], c["gradable"], c["error"]) == (
        "0",
        "false",
        "could not start: | last printed: no relay.toml, at all",
    )


def test_items_missing_from_the_order_given_are_added_after_it_not_dropped():
    header = gradebook.csv_text([record("a")], ["settled"]).splitlines()[0]
    assert header.endswith("seed,settled,claim,sends-once,answer-codes")


def test_the_page_has_what_graded_statistics_over_everyone_and_a_histogram_with_the_ungradable_apart():
    page = gradebook.html(class_of_records())
    assert "<b>graded</b></td><td>2026-12-01</td>" in page and "test (v2, 100 points)" in page
    assert "<b>seed</b></td><td>12345</td>" in page and "<b>relaychaos</b></td><td>0.1.0</td>" in page
    assert "Over all 7 submissions (a submission that could not be graded counts as 0): median 80%" in page
    assert "lowest 0%" in page and "5 graded, 2 could not be graded (1 of them ran out of time" in page
    assert page.count("<svg") == 1 and page.count("<rect") == 11
    assert "<title>not graded: 2</title>" in page and "<title>0–10%: 0</title>" in page


def test_the_grid_has_a_row_per_student_a_cell_per_item_and_links_to_each_students_page():
    page = gradebook.html(class_of_records())
    grid = page.split("<table class=grid>")[1].split("</table>")[0]
    assert grid.count("<tr>") == 1 + 7
    assert '<a href="submissions/626f62-' in grid
    assert "<td class=lost" in grid and "<td class=full" in grid and "<td class=none" in grid


def test_each_items_most_common_failure_is_shown_from_its_own_part_of_the_incident():
    page = gradebook.html(class_of_records())
    assert "<h3>claims a GUID atomically: copies racing never both send it: lost by 1 of 5</h3>" in page, (
        "of the submissions graded"
    )
    assert "Most often in scenario <code>race-32-one-relay</code> (1 submission(s)); from" in page
    example = page.split("Most often in scenario <code>happy-path</code>")[1].split("</pre>")[0]
    assert "[answer-codes] GUID g1" in example and "[one-debit]" not in example, "the item's own part"
    assert "white-space: pre-wrap" in page, "long lines wrap"


def test_the_page_needs_no_network_and_escapes_what_students_wrote():
    records = class_of_records() + [ungradable("x", "could not start: serve never answered http://127.0.0.1:9/health")]
    page = gradebook.html(records)
    assert not re.search(r"src\s*=|url\(|@import|<link|<script", page, re.I), "no resource is fetched"
    assert not re.search(r'href="(?!submissions/[0-9a-f]+-[0-9]+/report\.html")', page), "links to the pages only"
    assert "https://" not in page and page.count("http://") == 2, "a URL in an error is text, not a reference"
    assert "eve &quot;the &lt;script&gt;&quot; o&#x27;neil, jr." in page


def test_an_empty_class_still_renders():
    assert "0 submissions" in gradebook.html([])


def test_merging_three_shards_equals_one_folder_holding_them_all(tmp_path):
    records = class_of_records()
    write_shard(tmp_path / "all", records)
    for i in range(3):
        write_shard(tmp_path / f"gradebook-{i}", records[i::3])
    merged = gradebook.merge([tmp_path / f"gradebook-{i}" for i in range(3)])
    assert merged == gradebook.merge([tmp_path / "all"])
    assert [r.submission for r in merged][:3] == ['=HYPERLINK("x")', "alice smith", "bob"]


def test_an_empty_shard_adds_nothing_and_the_same_record_twice_is_kept_once(tmp_path):
    records = class_of_records()
    write_shard(tmp_path / "a", records)
    write_shard(tmp_path / "b", records[:2])
    (tmp_path / "empty").mkdir()
    assert gradebook.merge([tmp_path / "a", tmp_path / "b", tmp_path / "empty"]) == gradebook.merge([tmp_path / "a"])


def test_the_same_submission_with_another_seed_is_refused_naming_both_files(tmp_path):
    write_shard(tmp_path / "a", [record("bob", seed=1)])
    write_shard(tmp_path / "b", [record("bob", seed=2)])
    with pytest.raises(ValueError) as e:
        gradebook.merge([tmp_path / "a", tmp_path / "b"])
    text = str(e.value)
    assert str(tmp_path / "a" / "submissions") in text and str(tmp_path / "b" / "submissions") in text
    assert "different seeds (1 and 2)" in text


def test_the_same_submission_graded_differently_is_refused_naming_the_fields(tmp_path):
    write_shard(tmp_path / "a", [record("bob")])
    write_shard(tmp_path / "b", [record("bob", broken={"converged": ["kill-before-account-call"]})])
    with pytest.raises(
        ValueError, match=r"submission /class/bob differently \(fields incidents, items, scenarios, score\)"
    ):
        gradebook.merge([tmp_path / "a", tmp_path / "b"])


def test_a_missing_folder_a_stray_record_or_an_unusable_one_is_refused(tmp_path):
    with pytest.raises(ValueError, match="no such gradebook folder"):
        gradebook.merge([tmp_path / "nope"])
    (tmp_path / "nested" / "x").mkdir(parents=True)
    (tmp_path / "nested" / "x" / "grade.json").write_text(record("a").to_json())
    with pytest.raises(ValueError, match=r"is not where relaychaos grade writes a record"):
        gradebook.merge([tmp_path / "nested"])
    bad = record("b").to_builtins()
    del bad["seed"]
    (tmp_path / "bad" / "submissions" / "b").mkdir(parents=True)
    (tmp_path / "bad" / "submissions" / "b" / "grade.json").write_text(json.dumps(bad))
    with pytest.raises(ValueError, match=r"grade\.json: not a grade record: Object missing required field `seed`"):
        gradebook.merge([tmp_path / "bad"])
    wrong = record("c")
    wrong.score = 99.0
    write_shard(tmp_path / "wrong", [wrong])
    with pytest.raises(ValueError, match=r"grade\.json: not a usable grade record: record: score 99.0 is not the sum"):
        gradebook.merge([tmp_path / "wrong"])


def test_the_csv_reads_back_as_its_typed_record_and_each_row_follows_the_published_schema():
    records = class_of_records()
    text = gradebook.csv_text(records, ITEMS)
    book = Gradebook.from_csv(text)
    assert book.to_csv() == text, "it writes back what it read"
    assert problems("gradebook", book.to_builtins()) == []
    carol = next(r for r in book.rows if r.submission == "carol")
    assert (carol.gradable, carol.score, carol.items["claim"]) == (False, 0.0, 0.0)
    assert '=HYPERLINK("x")' in {r.submission for r in book.rows}, "the apostrophe a spreadsheet needs is taken off"
    with pytest.raises(ValueError, match="row 2 of a gradebook: score must be a number"):
        Gradebook.from_csv(text.replace(text.splitlines()[1].split(",")[1], "lots", 1))


def test_write_puts_both_files_in_the_folder(tmp_path):
    paths = gradebook.write(class_of_records(), tmp_path / "gradebook", ITEMS)
    assert [p.name for p in paths] == ["gradebook.csv", "gradebook.html"]
    assert sorted(p.name for p in (tmp_path / "gradebook").iterdir()) == ["gradebook.csv", "gradebook.html"]


@pytest.mark.process
def test_the_merge_command_writes_the_gradebook_and_exits_2_when_it_refuses(tmp_path):
    records = class_of_records()
    for i in range(2):
        write_shard(tmp_path / f"gradebook-{i}", records[i::2])
    cmd = [
        sys.executable,
        "-m",
        "relaychaos.commands.cli",
        "gradebook",
        "merge",
        str(tmp_path / "gradebook-0"),
        str(tmp_path / "gradebook-1"),
        "--out",
        str(tmp_path / "gradebook"),
    ]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert len(rows((tmp_path / "gradebook" / "gradebook.csv").read_text(encoding="utf-8"))) == len(records)
    proc = subprocess.run(
        cmd[:5] + [str(tmp_path / "nope"), "--out", str(tmp_path / "x")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and "no such gradebook folder" in proc.stderr
