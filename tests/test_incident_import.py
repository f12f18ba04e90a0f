"""`relaychaos incident import`: a bundle of production logs becomes a scenario that breaks the rule the night
broke, on the relay that ran, and holds on the reference; bad bundles get one message with file, line and fix."""
import json
import shutil
import sqlite3

import pytest

from relaychaos.cli import main
from relaychaos.engine import scenario_file
from relaychaos.engine import steps as S

from .conftest import ROOT

EXAMPLES = ROOT / "examples" / "incidents"
BUNDLES = {"reprocess-resent-timeouts": "reprocess_unknown", "check-then-insert-burst": "check_then_insert"}
RULES = ["one-account-call", "one-debit", "balances"]


def imported(bundle, tmp_path, *extra):
    out = tmp_path / f"{bundle.name}.yaml"
    assert main(["incident", "import", str(bundle), "--out", str(out), *extra]) == 0
    return scenario_file.load(out), out.read_text()


@pytest.mark.parametrize("name, mutant", BUNDLES.items())
def test_each_example_imports_into_a_scenario_whose_expect_names_the_rules_the_night_broke(tmp_path, name, mutant):
    loaded, text = imported(EXAMPLES / name, tmp_path)
    assert loaded.breaks == {f"relay_under_test/mutants/{mutant}/relay.toml": RULES}
    assert loaded.holds_on == ("relay_under_test/reference/relay.toml",)
    lines = text.splitlines()
    steps = [i for i, line in enumerate(lines) if line.startswith("  - ") and i > lines.index("steps:")]
    assert steps and all(lines[i - 1].startswith("  # ") for i in steps), "every step says where it came from"


def test_the_reprocess_night_drops_answers_refuses_one_and_puts_the_resends_down_to_the_batch_run(tmp_path):
    loaded, text = imported(EXAMPLES / "reprocess-resent-timeouts", tmp_path)
    steps = loaded.scenario.steps
    toxic = steps.index(S.AddToxic("account", "timeout", name="answer-lost", attributes={"timeout": 0}))
    assert [s.guid for s in steps[toxic + 1:toxic + 3]] == ["g2", "g3"]  # both lost answers in one fault window
    assert S.DisableProxy("account") in steps and S.Reprocess(max_attempts=3) in steps
    assert "account.csv lines 7-9: g2, g3, g5 sent by this run" in text
    assert "# Clock: the clocks disagree" in text and "every account time is moved by +1.765 s" in text
    assert "channel.csv line 3: 7f3a9c2e-0b1d-4e55-9a61-2c0d4b8e1f01 (g2) 120 alice→bob on relay a: E901" in text


def test_the_burst_night_restarts_the_relay_and_races_each_burst(tmp_path):
    loaded, text = imported(EXAMPLES / "check-then-insert-burst", tmp_path)
    steps = loaded.scenario.steps
    assert steps[:2] == (S.Kill("a"), S.Start("a"))  # the evening's deploy
    races = [s for s in steps if isinstance(s, S.Race)]
    assert [(r.n, r.amount) for r in races] == [(5, 60), (4, 45)]
    assert steps.index(S.ServerFault(delay_ms=200)) < steps.index(races[0]), "the evening's slow account system"
    assert "channel.jsonl lines 3-7; account.jsonl lines 3-7: 5 sends of w412-5f0e2b7c9d41 within 10 ms" in text
    assert "Clock" not in text, "these clocks agree"


@pytest.mark.stack
@pytest.mark.parametrize("name, mutant", BUNDLES.items())
def test_the_imported_scenario_breaks_the_rules_on_the_relay_that_ran_and_holds_on_the_reference_every_time(
        run_chaos, tmp_path, name, mutant):
    loaded, _ = imported(EXAMPLES / name, tmp_path)
    broken = []
    for _ in range(2):  # the same verdicts on every replay
        result = run_chaos(loaded.scenario, manifest=ROOT / "relay_under_test" / "mutants" / mutant / "relay.toml")
        broken.append(sorted({(v.rule, result.history.where(f="guid", guid=v.guid)[0].value["label"] if v.guid
                               else None) for v in result.verdicts}))
        assert set(RULES) <= {rule for rule, _ in broken[-1]}, result.report()
        run_chaos(loaded.scenario).assert_holds()
    assert broken[0] == broken[1], "the same rules broken for the same GUIDs on every replay"


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
    return "account.csv, line 10: GUID 9999aaaa-0000-4000-8000-000000000000 is in the account log but the channel " \
           "log never sent it", "add the channel's request for it"


def bad_result(b):
    edit_line(b / "channel.csv", 2, ",0000,a", ",OK,a")
    return "channel.csv, line 2: result = 'OK' is not a relay answer code", "or `timeout`"


def no_ledger_table(b):
    (b / "ledger.sqlite").unlink()
    sqlite3.connect(b / "ledger.sqlite").execute("CREATE TABLE rows (guid TEXT)").connection.commit()
    return "ledger.sqlite: no table `ledger` with the contract's columns", "contract section 4"


def too_small_offset(b):
    return "account.csv, line 5: with --account-clock-offset 1, GUID 0d9e8f7a-6b5c-4d3e-8f2a-1b0c9d8e7f03 still " \
           "reaches the account system 0.764 s before the channel sent it", "use an offset of at least 1.764"


@pytest.mark.parametrize("spoil", [bad_channel_header, bad_time, unknown_guid, bad_result, no_ledger_table,
                                   too_small_offset])
def test_a_bad_bundle_gets_one_message_naming_the_file_the_line_and_the_fix(tmp_path, capsys, spoil):
    bundle = copy(tmp_path, "reprocess-resent-timeouts")
    what, fix = spoil(bundle)
    extra = ["--account-clock-offset", "1"] if spoil is too_small_offset else []
    out = tmp_path / "out.yaml"
    assert main(["incident", "import", str(bundle), "--out", str(out), *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"relaychaos: {bundle}/") or err.startswith(f"relaychaos: {bundle}"), err
    assert what in err and "fix:" in err and fix in err, err
    assert "Traceback" not in err and not out.exists()


def test_a_json_record_without_a_field_is_named_by_its_line(tmp_path, capsys):
    bundle = copy(tmp_path, "check-then-insert-burst")
    lines = (bundle / "account.jsonl").read_text().splitlines()
    record = json.loads(lines[2])
    del record["code"]
    lines[2] = json.dumps(record)
    (bundle / "account.jsonl").write_text("\n".join(lines) + "\n")
    assert main(["incident", "import", str(bundle), "--out", str(tmp_path / "o.yaml")]) == 2
    err = capsys.readouterr().err
    assert f"{bundle}/account.jsonl, line 3: the record lacks code" in err and "fix: give every record" in err
