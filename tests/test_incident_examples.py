"""The examples of incident bundles: every TOML example of docs/incident-bundle.md is valid TOML, and each bundle
shipped in examples/incidents/, spoiled, gets one message naming the file, the line and the fix."""

import json
import re
import shutil
import sqlite3
import tomllib

import pytest

from .conftest import ROOT
from .test_incident_bad_input import run_import

EXAMPLES = ROOT / "examples" / "incidents"


def test_every_toml_example_of_the_bundle_docs_is_valid_toml():
    doc = (ROOT / "docs" / "incident-bundle.md").read_text()
    examples = re.findall(r"```toml\n(.*?)```", doc, re.S)
    assert len(examples) >= 5
    for example in examples:
        tomllib.loads(example)


# -- the shipped bundles, spoiled -------------------------------------------------------------------
def copy(tmp_path, name):
    target = tmp_path / name
    shutil.copytree(EXAMPLES / name, target)
    return target


def edit_line(path, n, old, new):
    lines = path.read_text().splitlines(keepends=True)
    assert old in lines[n - 1]
    lines[n - 1] = lines[n - 1].replace(old, new)
    path.write_text("".join(lines))


def bad_channel_header(b):
    edit_line(b / "channel.csv", 1, ",result,", ",answer,")
    return "channel.csv, line 1: the header lacks the column(s) result", "add them to the first line"


def bad_time(b):
    edit_line(b / "channel.csv", 4, "2026-11-13T22:41:09.530Z", "yesterday 22:41")
    return "channel.csv, line 4: at = 'yesterday 22:41' is not a time", "ISO 8601"


def unknown_guid(b):
    with open(b / "account.csv", "a") as f:
        f.write("9999aaaa-0000-4000-8000-000000000000,2026-11-14T01:59:59.100Z,alice,bob,40,0000\n")
    return (
        "account.csv, line 10: GUID 9999aaaa-0000-4000-8000-000000000000 is in the account log but the channel "
        "log never sent it",
        "add the channel's request for it",
    )


def bad_result(b):
    edit_line(b / "channel.csv", 2, ",0000,a", ",OK,a")
    return "channel.csv, line 2: result = 'OK' is not a relay answer code", "or `timeout`"


def no_ledger_table(b):
    (b / "ledger.sqlite").unlink()
    sqlite3.connect(b / "ledger.sqlite").execute("CREATE TABLE rows (guid TEXT)").connection.commit()
    return "ledger.sqlite: no table `ledger` with the contract's columns", "contract section 4"


def too_small_offset(b):
    return (
        "account.csv, line 5: with --account-clock-offset 1, GUID 0d9e8f7a-6b5c-4d3e-8f2a-1b0c9d8e7f03 still "
        "reaches the account system 0.764 s before the channel sent it",
        "use an offset of at least 1.764",
    )


@pytest.mark.parametrize(
    "spoiled", [bad_channel_header, bad_time, unknown_guid, bad_result, no_ledger_table, too_small_offset]
)
def test_a_spoiled_example_gets_one_message_naming_the_file_the_line_and_the_fix(tmp_path, capsys, spoiled):
    bundle = copy(tmp_path, "reprocess-resent-timeouts")
    what, fix = spoiled(bundle)
    extra = ["--account-clock-offset", "1"] if spoiled is too_small_offset else []
    code, _, err, out = run_import(bundle, tmp_path, capsys, *extra)
    assert code == 2
    assert err.startswith(f"relaychaos: {bundle}"), err
    assert what in err and "fix:" in err and fix in err, err
    assert "Traceback" not in err and not (out / "night.yaml").exists()


def test_a_json_record_with_a_guid_but_without_another_field_is_named_by_its_line(tmp_path, capsys):
    bundle = copy(tmp_path, "check-then-insert-burst")
    lines = (bundle / "account.jsonl").read_text().splitlines()
    record = json.loads(lines[2])
    del record["code"]
    lines[2] = json.dumps(record)
    (bundle / "account.jsonl").write_text("\n".join(lines) + "\n")
    code, _, err, _ = run_import(bundle, tmp_path, capsys)
    assert code == 2
    assert f"{bundle}/account.jsonl, line 3: the record lacks code" in err and "fix: give every record" in err
