"""The class gradebook: a CSV any spreadsheet reads back, one offline HTML page, and shards merged or refused."""
import csv
import io
import json
import re
import subprocess
import sys

import pytest

from relaychaos.reports import gradebook

from .conftest import ROOT
from .grade_records import class_of_records, record, ungradable, write_shard

RULES = ["one-account-call", "answer-codes", "converged"]


def rows(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text, newline="")))


def test_the_csv_reads_back_with_every_awkward_name_as_it_was():
    records = class_of_records()
    read = rows(gradebook.csv_text(records, RULES))
    names = [r["submission"] for r in read]
    assert set(names) == {r["submission"] for r in records} - {'=HYPERLINK("x")'} | {'\'=HYPERLINK("x")'}
    assert 'eve "the <script>" o\'neil, jr.' in names and "dörte" in names and "名前 `tick`" in names
    assert names == sorted(names, key=lambda n: n.lstrip("'").casefold()), "one row per submission, by name"


def test_a_name_a_spreadsheet_would_run_as_a_formula_is_kept_as_text():
    read = rows(gradebook.csv_text([record("=HYPERLINK(\"x\")"), record("+1"), record("@sum")], RULES))
    assert [r["submission"] for r in read] == ["'+1", "'=HYPERLINK(\"x\")", "'@sum"]


def test_the_csv_columns_are_the_fixed_ones_then_a_rule_each_summed_over_its_sets():
    bob = record("bob", broken={"one-account-call": ["race-32-one-relay", "min-age-trap"]})
    text = gradebook.csv_text([bob, ungradable("carol", "could not start:\nno relay.toml, at all")], RULES)
    assert text.splitlines()[0] == ("submission,score,max_score,gradable,timed_out,error,seed,"
                                    "one-account-call,answer-codes,converged")
    assert "\r\n" in text, "RFC 4180 rows"
    b, c = rows(text)
    assert (b["score"], b["one-account-call"], b["answer-codes"], b["gradable"]) == ("97", "27", "20", "true")
    assert (c["score"], c["gradable"], c["error"]) == ("0", "false", "could not start:\nno relay.toml, at all")


def test_rules_missing_from_the_order_given_are_added_after_it_not_dropped():
    header = gradebook.csv_text([record("a")], ["converged"]).splitlines()[0]
    assert header.endswith("seed,converged,one-account-call,answer-codes")


def test_the_page_holds_a_histogram_the_pass_rates_the_most_broken_rules_and_every_submission():
    page = gradebook.html(class_of_records())
    assert page.count("<svg") == 1 and page.count("<rect") == 10
    assert "<title>90–100%: 5</title>" in page and "<title>80–90%: 1</title>" in page, "bob alone under 90"
    assert "<title>0–10%: 0</title>" in page, "carol could not be graded: not a score of 0"
    assert "<h2>Rules: share of the class at full points</h2>" in page and "4 of 6 (66.67%)" in page
    assert "<h2>Rules most often broken</h2>" in page
    assert "<h3><code>one-account-call</code>: broken by 2 of 6 submissions</h3>" in page
    assert "Example from <b>bob</b>, broken in race-32-one-relay, min-age-trap" in page, "the first by name"
    assert "<pre>[one-account-call] GUID g1-" in page
    assert "could not start: no relay.toml in /class/carol" in page


def test_the_page_needs_no_network_and_escapes_what_students_wrote():
    records = class_of_records() + [ungradable("x", "could not start: serve never answered http://127.0.0.1:9/health")]
    page = gradebook.html(records)
    assert not re.search(r"(src|href)\s*=|url\(|@import|<link|<script", page, re.I), "no resource is fetched"
    assert "https://" not in page and page.count("http://") == 1, "a URL in an error is text, not a reference"
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
    assert [r["submission"] for r in merged][:3] == ['=HYPERLINK("x")', "alice smith", "bob"]


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
    with pytest.raises(ValueError, match=r"submission /class/bob differently \(fields rules, scenarios, score\)"):
        gradebook.merge([tmp_path / "a", tmp_path / "b"])


def test_a_missing_folder_a_stray_record_or_an_unusable_one_is_refused(tmp_path):
    with pytest.raises(ValueError, match="no such gradebook folder"):
        gradebook.merge([tmp_path / "nope"])
    (tmp_path / "nested" / "x").mkdir(parents=True)
    (tmp_path / "nested" / "x" / "grade.json").write_text(json.dumps(record("a")))
    with pytest.raises(ValueError, match=r"is not where relaychaos grade writes a record"):
        gradebook.merge([tmp_path / "nested"])
    bad = record("b")
    del bad["seed"]
    write_shard(tmp_path / "bad", [bad])
    with pytest.raises(ValueError, match=r"grade\.json: not a usable grade record: record: missing field 'seed'"):
        gradebook.merge([tmp_path / "bad"])


def test_write_puts_both_files_in_the_folder(tmp_path):
    paths = gradebook.write(class_of_records(), tmp_path / "gradebook", RULES)
    assert [p.name for p in paths] == ["gradebook.csv", "gradebook.html"]
    assert sorted(p.name for p in (tmp_path / "gradebook").iterdir()) == ["gradebook.csv", "gradebook.html"]


def test_the_merge_command_writes_the_gradebook_and_exits_2_when_it_refuses(tmp_path):
    records = class_of_records()
    for i in range(2):
        write_shard(tmp_path / f"gradebook-{i}", records[i::2])
    cmd = [sys.executable, "-m", "relaychaos.cli", "gradebook", "merge",
           str(tmp_path / "gradebook-0"), str(tmp_path / "gradebook-1"), "--out", str(tmp_path / "gradebook")]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert len(rows((tmp_path / "gradebook" / "gradebook.csv").read_text(encoding="utf-8"))) == len(records)
    proc = subprocess.run(cmd[:5] + [str(tmp_path / "nope"), "--out", str(tmp_path / "x")], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "no such gradebook folder" in proc.stderr
