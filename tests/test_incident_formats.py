"""Log formats production has, read through the mapping: CSV with any delimiter and quoting (a semicolon-separated
journal, a tab-separated one, a quoted column holding the delimiter), and the error that names the delimiter when a
file's columns are split by another one."""

import json

import pytest

from relaychaos.engine import scenario_file
from relaychaos.engine import steps as S
from relaychaos.incidents.verify import reproduced

from .conftest import ROOT
from .test_incident_bad_input import run_import, small_bundle, spoil

JOURNAL = "ledger-journal.csv"


def as_the_plain_night(tmp_path, capsys, change):
    """Import the small bundle as it is and again after `change(bundle)`: the same steps (and incident block);
    returns what the second import said on stdout."""
    code, _, err, plain = run_import(small_bundle(tmp_path / "plain"), tmp_path / "a", capsys)
    assert code == 0, err
    bundle = small_bundle(tmp_path / "b")
    change(bundle)
    code, said, err, other = run_import(bundle, tmp_path / "b-out", capsys)
    assert code == 0, err
    got, want = scenario_file.load(other / "night.yaml"), scenario_file.load(plain / "night.yaml")
    assert got.scenario.steps == want.scenario.steps and got.scenario.incident == want.scenario.incident
    assert len(got.scenario.steps) > 5
    return said


def _resplit(bundle, delimiter, quote='"'):
    """The small bundle's account journal written with `delimiter`, and a memo column, quoted, holding it."""
    path = bundle / JOURNAL
    rows = [line.split(",") for line in path.read_text().splitlines()]
    rows[0].insert(1, "memo")  # before the mapped columns: split at its delimiter, it would shift them
    for row in rows[1:]:
        row.insert(1, f"{quote}nightly{delimiter} booked{quote}")
    path.write_text("\n".join(delimiter.join(row) for row in rows) + "\n")


@pytest.mark.parametrize(
    "delimiter, written, quote",
    [(";", '";"', '"'), ("\t", '"\\t"', '"'), ("|", "'|'", "'")],
    ids=["semicolon", "tab", "pipe-single-quotes"],
)
def test_a_csv_journal_with_its_own_delimiter_and_quoting_reads_as_the_comma_one(
    tmp_path, capsys, delimiter, written, quote
):
    def change(bundle):
        _resplit(bundle, delimiter, quote)
        spoil(bundle, "incident.toml", 'time = "local"', f'delimiter = {written}\nquote = {quote!r}\ntime = "local"')

    as_the_plain_night(tmp_path, capsys, change)


def test_a_journal_split_by_another_character_than_the_mapping_says_is_named_with_the_fix(tmp_path, capsys):
    bundle = small_bundle(tmp_path / "b")
    _resplit(bundle, ";")
    code, _, err, _ = run_import(bundle, tmp_path, capsys)
    assert code == 2
    assert "ledger-journal.csv, line 1: the header lacks the column(s)" in err, err
    assert "its columns are split by ';', not ',': add delimiter = \";\" to [logs.account] in incident.toml" in err


def test_a_logfmt_gateway_log_reads_as_the_json_one_its_keys_whole(tmp_path, capsys):
    """The gateway's lines as logfmt (key=value, a quoted message with spaces and an escaped quote, keys with dots
    read whole): the same night as from its JSON lines."""

    def change(bundle):
        for name in ("gateway-0.log", "gateway-1.log"):
            lines = []
            for line in (bundle / name).read_text().splitlines():
                d = json.loads(line)
                req, resp = d.get("req", {}), d.get("resp", {})
                pairs = [f"event={d['event']}", f"t_us={d['t_us']}", 'msg="a \\"gateway\\" line"']
                if req:
                    pairs += [f"req.id={req['id']}", f"req.debtor={req['debtor']}", f"req.creditor={req['creditor']}"]
                    pairs += [f"req.minor={req['minor']}", f"resp.code={resp['code']}", f"upstream={d['upstream']}"]
                lines.append(" ".join(pairs))
            (bundle / name).write_text("\n".join(lines) + "\n\n")
        spoil(bundle, "incident.toml", 'format = "jsonl"', 'format = "logfmt"')

    as_the_plain_night(tmp_path, capsys, change)


def test_files_one_per_pod_are_tied_to_relay_instances_by_their_names(tmp_path, capsys):
    """gateway-0.log and gateway-1.log are two pods' logs: relay = {file = regex} reads the instance from the
    file's name, and [pods] maps it to a slot; p3, in gateway-1.log, went to relay b."""
    bundle = small_bundle(tmp_path / "b")
    spoil(bundle, "incident.toml", 'relay = "upstream"}', 'relay = {file = "gateway-(\\\\d+)\\\\.log"}}')
    spoil(bundle, "incident.toml", '"relay-6c9d-*" = "a"', '"0" = "a"\n"1" = "b"')
    code, _, err, out = run_import(bundle, tmp_path, capsys)
    assert code == 0, err
    night = (out / "night.yaml").read_text()
    assert "p1 (g1) 500 acme→zed on relay a" in night and "p3 (g3) 900 acme→zed on relay b" in night, night


def test_a_file_name_the_regex_does_not_match_is_a_counted_warning(tmp_path, capsys):
    bundle = small_bundle(tmp_path / "b")
    spoil(bundle, "incident.toml", 'relay = "upstream"}', 'relay = {file = "pod-(\\\\w+)\\\\.log"}}')
    code, _, err, _ = run_import(bundle, tmp_path, capsys)
    assert code == 0, err
    assert "fields.relay: the regex 'pod-(\\\\w+)\\\\.log' matched nothing in the file's name on 3 of 3 records" in err


def test_a_time_plus_a_duration_is_one_time_booked_plus_its_processing_milliseconds(tmp_path, capsys):
    """The journal's booked time written as the received time plus the milliseconds it took: answered_at =
    {path = "received", plus = "proc_ms", unit = "ms"} gives the night the booked column gave."""

    def change(bundle):
        journal = bundle / JOURNAL
        rows = [line.split(",") for line in journal.read_text().splitlines()]
        rows[0][2] = "proc_ms"
        for row in rows[1:]:
            row[2] = "10"  # each booked 10 ms after it was received (the plain journal's booked column)
        journal.write_text("\n".join(",".join(row) for row in rows) + "\n")
        spoil(bundle, "incident.toml", 'answered_at = "booked"', 'answered_at = {path = "received", plus = "proc_ms"}')

    as_the_plain_night(tmp_path, capsys, change)


def test_a_duration_that_is_not_a_number_names_the_line(tmp_path, capsys):
    bundle = small_bundle(tmp_path / "b")
    spoil(bundle, "incident.toml", 'answered_at = "booked"', 'answered_at = {path = "received", plus = "debit"}')
    code, _, err, _ = run_import(bundle, tmp_path, capsys)
    assert code == 2
    assert "ledger-journal.csv, line 2: answered_at's duration 'acme' is not a number" in err, err


def test_several_batch_sources_each_with_its_own_arguments_make_one_operations_log(tmp_path, capsys):
    """The operations log in two tables ([[logs.operations]]): the text file of batch runs, and two CronJobs'
    events, each table with its own defaults (a purge job of retention 60, a resolve job of min-age 2): every run
    is in the night with its own argument."""
    bundle = small_bundle(tmp_path / "b")
    toml = (bundle / "incident.toml").read_text()
    head, ops = toml.split("[logs.operations]\n")
    ops, ledger = ops.split("[logs.ledger]\n")
    jobs = [("purge-job.jsonl", "purge", 60, "2026-11-23T09:07:30Z"), ("resolve-job.jsonl", "resolve", 2, None)]
    tables = "[[logs.operations]]\n" + ops
    for name, command, argument, at in jobs:
        (bundle / name).write_text(json.dumps({"ts": at or "2026-11-23T09:07:20Z", "job": name}) + "\n")
        tables += (
            f'[[logs.operations]]\nfiles = ["{name}"]\ntime = "iso"\nfields = {{at = "ts"}}\n'
            f'defaults = {{event = "batch", command = "{command}", argument = "{argument}"}}\n'
        )
    (bundle / "incident.toml").write_text(head + tables + "[logs.ledger]\n" + ledger)
    code, _, err, out = run_import(bundle, tmp_path, capsys)
    assert code == 0, err
    steps = scenario_file.load(out / "night.yaml").scenario.steps
    batch = [s for s in steps if isinstance(s, (S.Reprocess, S.Resolve, S.Purge))]
    assert batch == [
        S.Reprocess(max_attempts=3),
        S.Resolve(min_age_s=0.45, since="age-2"),
        S.Purge(retention_s=0.0, since="age-3"),
    ], batch
    assert "resolve --min-age 2 (the time since mark age-2" in (out / "night.yaml").read_text()


def test_a_resolve_or_purge_before_anything_was_sent_runs_at_once_on_the_empty_ledger(tmp_path, capsys):
    """A resolve --min-age 300 and a purge at 09:06:30, ten seconds before the night's first send: aged from a
    mark, the resolve would wait its safe --min-age for a ledger with nothing in it. They run at once, unaged, and
    say why; a resolve after the sends (09:07:20) is still aged from its mark, made where the night passed it."""
    bundle = small_bundle(tmp_path / "b")
    (bundle / "ops.txt").write_text(
        "2026-11-23T09:06:30Z batch resolve --min-age 300\n2026-11-23T09:06:30Z batch purge --retention 30\n"
        "2026-11-23T09:07:10Z batch reprocess --max-attempts 3\n2026-11-23T09:07:20Z batch resolve --min-age 2\n"
    )
    code, _, err, out = run_import(bundle, tmp_path, capsys)
    assert code == 0, err
    steps = scenario_file.load(out / "night.yaml").scenario.steps
    first_send = next(n for n, s in enumerate(steps) if isinstance(s, S.Send))
    assert list(steps[:first_send]) == [S.Resolve(min_age_s=60.0), S.Purge(retention_s=30.0)], steps[:first_send]
    assert [s for s in steps if isinstance(s, (S.Mark, S.Resolve))][1:] == [
        S.Mark("age-4", wait_s=0.5),
        S.Resolve(min_age_s=0.45, since="age-4"),
    ]
    assert "(60: nothing was sent before it, so the ledger is empty" in (out / "night.yaml").read_text()


def test_a_log_of_several_tables_names_each_table_s_files(tmp_path, capsys):
    bundle = small_bundle(tmp_path / "b")
    spoil(bundle, "incident.toml", "[logs.operations]\n", "[[logs.operations]]\n")
    spoil(bundle, "incident.toml", "[logs.ledger]\n", '[[logs.operations]]\ntime = "iso"\n[logs.ledger]\n')
    code, _, err, _ = run_import(bundle, tmp_path, capsys)
    assert code == 2 and "[[logs.operations]] number 2: a log of several tables names the files of each" in err, err


def e500_night(tmp_path):
    """The small night with p3's call answered E500 by core banking (ERR), and the channel given E500 for it."""
    bundle = small_bundle(tmp_path / "b")
    spoil(bundle, JOURNAL, "2026-11-23 10:06:42.030,acme,zed,900,BOOKED", "2026-11-23 10:06:42.030,acme,zed,900,ERR")
    spoil(bundle, "incident.toml", 'codes = {BOOKED = "0000"', 'codes = {ERR = "E500", BOOKED = "0000"')
    spoil(bundle, "incident.toml", "codes = {APPROVED", 'codes = {FAILED = "E500", APPROVED')
    spoil(bundle, "gateway-1.log", '"code": "APPROVED"', '"code": "FAILED"')
    return bundle


def test_a_call_core_banking_answered_e500_is_answered_e500_again_before_its_send(tmp_path, capsys):
    code, _, err, out = run_import(e500_night(tmp_path), tmp_path, capsys)
    assert code == 0, err
    steps = list(scenario_file.load(out / "night.yaml").scenario.steps)
    fault = steps.index(S.ServerFault(e500_once=("g3",)))
    send = next(i for i, s in enumerate(steps) if isinstance(s, S.Send) and s.guid == "g3")
    assert fault < send and not any("g3" in S.guids_of(s) for s in steps[fault + 1 : send]), steps[fault : send + 1]
    assert (
        "ledger-journal.csv line 4: the account system answered E500 (nothing applied)"
        in (out / "night.yaml").read_text()
    )


@pytest.mark.stack
def test_the_e500_night_replays_with_production_s_answer_for_it(tmp_path, capsys, run_chaos):
    """Replayed, g3 gets core banking's E500 as in production (before, the replay applied it and answered 0000)."""
    code, _, err, out = run_import(e500_night(tmp_path), tmp_path, capsys)
    assert code == 0, err
    night = scenario_file.load(out / "night.yaml").scenario
    found = reproduced(run_chaos(night, manifest=ROOT / "relay_under_test/mutants/reprocess_unknown/relay.toml"), night)
    assert found.compared == 3 and not [d for d in found.differ if d[0] == "g3"], found


def test_a_time_minus_a_duration_is_the_request_s_start_from_its_end(tmp_path, capsys):
    """The journal's received time written as the booked time minus the milliseconds it took: at = {path =
    "booked", minus = "took_ms"} gives the night the received column gave."""

    def change(bundle):
        journal = bundle / JOURNAL
        rows = [line.split(",") for line in journal.read_text().splitlines()]
        rows[0][1] = "took_ms"
        for row in rows[1:]:
            row[1] = "10"
        journal.write_text("\n".join(",".join(row) for row in rows) + "\n")
        spoil(bundle, "incident.toml", 'at = "received"', 'at = {path = "booked", minus = "took_ms"}')

    as_the_plain_night(tmp_path, capsys, change)


def test_loki_s_nanosecond_times_read_as_epoch_ns(tmp_path, capsys):
    def change(bundle):
        for name in ("gateway-0.log", "gateway-1.log"):
            lines = [json.loads(line) for line in (bundle / name).read_text().splitlines()]
            (bundle / name).write_text("".join(json.dumps({**d, "t_us": str(d["t_us"] * 1000)}) + "\n" for d in lines))
        spoil(bundle, "incident.toml", 'time = "epoch_us"', 'time = "epoch_ns"')

    as_the_plain_night(tmp_path, capsys, change)


def test_a_log_exported_newest_first_is_read_in_time_order_without_blame(tmp_path, capsys):
    code, out_plain, err, folder = run_import(small_bundle(tmp_path / "plain"), tmp_path / "a", capsys)
    assert code == 0, err
    bundle = small_bundle(tmp_path / "b")
    journal = bundle / JOURNAL
    head, *rows = journal.read_text().splitlines()
    journal.write_text("\n".join([head, *reversed(rows)]) + "\n")  # as an export lists it: the newest first
    code, said, err, other = run_import(bundle, tmp_path / "b-out", capsys)
    assert code == 0, err
    assert "ledger-journal.csv: newest first, as log exports" in said and "correct them" not in said, said
    got, want = scenario_file.load(other / "night.yaml"), scenario_file.load(folder / "night.yaml")
    assert got.scenario.steps == want.scenario.steps
