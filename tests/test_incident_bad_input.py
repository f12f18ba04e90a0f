"""Bundles as production has them, and bundles that cannot be right: each mapping of incident.toml reads its log,
and each bad input gets one message (or a note in the scenario) naming the file, the line and what to do, never a
silently different scenario."""

import json

import pytest

from relaychaos.commands.cli import main
from relaychaos.engine import scenario_file
from relaychaos.engine import steps as S

# An inline table stays on one line in TOML: the two long `fields` lines are joined from two Python strings.
TOML = (
    """name = "small-night"
relay = "relay_under_test/mutants/reprocess_unknown/relay.toml"
[pods]
"relay-6c9d-*" = "a"
[logs.channel]
files = ["gateway-*.log"]
format = "jsonl"
time = "epoch_us"
take = {event = "transfer.done"}
fields = {guid = "req.id", at = "t_us", from = "req.debtor", to = "req.creditor", amount = "req.minor", """
    """result = "resp.code", relay = "upstream"}
codes = {APPROVED = "0000", GATEWAY_TIMEOUT = "timeout"}
[logs.account]
files = ["ledger-journal.csv"]
time = "local"
zone = "Europe/Berlin"
fields = {guid = "ref", at = "received", answered_at = "booked", from = "debit", to = "credit", amount = "cents", """
    """code = "status"}
codes = {BOOKED = "0000", NO_FUNDS = "B201"}
[logs.operations]
files = ["ops.txt"]
format = "text"
time = "iso"
pattern = '^(?P<at>\\d{4}-\\S+) (?P<event>\\w+)(?: (?P<command>\\w+) --\\S+ (?P<argument>[\\d.]+))?'
[logs.ledger]
files = ["ledger-dump.csv"]
"""
)

CHANNEL = [  # (t_us, id, minor, code, pod)
    (1795424800_000000, "p1", 500, "APPROVED", "relay-6c9d-aa"),
    (1795424801_000000, "p2", 700, "GATEWAY_TIMEOUT", "relay-6c9d-bb"),
    (1795424802_000000, "p3", 900, "APPROVED", "relay-6c9d-aa"),
]


def small_bundle(folder):
    """A small night: channel JSON lines (epoch µs, nested fields, noise) from two gateway files, a CSV journal
    in local time, plain-text operations, a psql CSV dump of the ledger. p2's answer was lost; reprocess sent it
    again."""
    folder.mkdir(parents=True)
    (folder / "incident.toml").write_text(TOML)
    for n, part in enumerate((CHANNEL[:2], CHANNEL[2:])):
        lines = [json.dumps({"event": "health", "t_us": part[0][0] - 5})]
        lines += [
            json.dumps(
                {
                    "event": "transfer.done",
                    "t_us": t,
                    "upstream": pod,
                    "req": {"id": g, "debtor": "acme", "creditor": "zed", "minor": m},
                    "resp": {"code": c},
                }
            )
            for t, g, m, c, pod in part
        ]
        (folder / f"gateway-{n}.log").write_text("\n".join(lines) + "\n")
    (folder / "ledger-journal.csv").write_text(
        "ref,received,booked,debit,credit,cents,status\n"
        "p1,2026-11-23 10:06:40.020,2026-11-23 10:06:40.030,acme,zed,500,BOOKED\n"
        "p2,2026-11-23 10:06:41.020,2026-11-23 10:06:41.030,acme,zed,700,BOOKED\n"
        "p3,2026-11-23 10:06:42.020,2026-11-23 10:06:42.030,acme,zed,900,BOOKED\n"
        "p2,2026-11-23 10:07:10.020,2026-11-23 10:07:10.030,acme,zed,700,BOOKED\n"
    )
    (folder / "ops.txt").write_text("2026-11-23T09:07:10Z batch reprocess --max-attempts 3\nsome banner line\n")
    (folder / "ledger-dump.csv").write_text(
        "guid,status,resp_code,request,response,attempts,updated_at\n"
        "p1,DONE,0000,{},{},1,1795300000.1\np2,DONE,0000,{},,2,1795300030.1\n"
        "p3,DONE,0000,{},{},1,1795300002.1\n"
    )
    return folder


def run_import(bundle, tmp_path, capsys, *extra):
    out = tmp_path / "out"
    code = main(["incident", "import", str(bundle), "--out", str(out), "--no-shrink", *extra])
    captured = capsys.readouterr()
    return code, captured.out, captured.err, out


def test_a_bundle_in_productions_own_formats_is_read_through_its_mapping(tmp_path, capsys):
    bundle = small_bundle(tmp_path / "b")
    code, out, err, folder = run_import(bundle, tmp_path, capsys)
    assert code == 0, err
    night = scenario_file.load(folder / "night.yaml")
    sc = night.scenario
    assert sc.incident["guids"] == {"g1": "p1", "g2": "p2", "g3": "p3"}
    assert sc.incident["broke"] == {"one-account-call": ["g2"], "one-debit": ["g2"]}
    assert S.Reprocess(max_attempts=3) in sc.steps
    assert sc.incident["ledger"]["g2"] == "DONE 0000 after 2 attempt(s)"
    assert "gateway-0.log: 1 line(s) skipped (first: line 1, not taken (take))" in out
    assert "ops.txt: 1 line(s) skipped (first: line 2, not matched by the pattern)" in out
    assert "channel: 2 files merged by time (gateway-0.log, gateway-1.log)" in out
    assert "Clock" not in out and "clocks disagree" not in out, (
        "local Berlin time read as Berlin time: the clocks agree"
    )


def spoil(bundle, name, old, new):
    path = bundle / name
    text = path.read_text()
    assert old in text, (name, old)
    path.write_text(text.replace(old, new, 1))


def ms_as_seconds(b):
    spoil(b, "incident.toml", 'time = "epoch_us"', 'time = "epoch_s"')
    return "gateway-0.log, line 2", "looks like unix microseconds", 'time = "epoch_us"'


def ms_in_auto(b):
    spoil(b, "incident.toml", 'time = "epoch_us"\n', "")
    return "gateway-0.log, line 2", "read as unix seconds", 'declare the unit: time = "epoch_us"'


def no_zone(b):
    spoil(b, "incident.toml", 'zone = "Europe/Berlin"\n', "")
    spoil(b, "incident.toml", 'time = "local"', 'time = "iso"')
    return "ledger-journal.csv, line 2", "has no zone", 'zone = "Europe/Berlin" (or "UTC")'


def out_of_order(b):
    lines = (b / "ledger-journal.csv").read_text().splitlines()
    lines[1], lines[2] = lines[2], lines[1]
    (b / "ledger-journal.csv").write_text("\n".join(lines) + "\n")
    return (
        "ledger-journal.csv: not in the order of at (line 3's is 1.000 s earlier",
        "its lines were sorted by at",
        "if each line was written at its at, the file's times are wrong: correct them",
    )


def call_far_before(b):
    spoil(b, "ledger-journal.csv", "p3,2026-11-23 10:06:42.020", "p3,2026-11-23 08:06:42.020")
    return "ledger-journal.csv, line 4", "one call far from the rest", "--account-clock-offset"


def call_far_after(b):
    (b / "ops.txt").write_text("")  # no reprocess run that could have sent it
    spoil(b, "ledger-journal.csv", "p2,2026-11-23 10:07:10.020,2026-11-23 10:07:10.030,acme,zed,700,BOOKED\n", "")
    spoil(
        b,
        "ledger-journal.csv",
        "p3,2026-11-23 10:06:42.020,2026-11-23 10:06:42.030",
        "p3,2026-11-23 12:06:42.020,2026-11-23 12:06:42.030",
    )
    return "ledger-journal.csv, line 4", "one call far from the rest", "correct this line's time"


def call_far_after_its_reprocess_run(b):
    """p2's second call came 15 minutes after the reprocess run, with no send of p2 in between."""
    spoil(
        b,
        "ledger-journal.csv",
        "p2,2026-11-23 10:07:10.020,2026-11-23 10:07:10.030",
        "p2,2026-11-23 10:22:10.020,2026-11-23 10:22:10.030",
    )
    return "ledger-journal.csv, line 5", "after the reprocess run of ops.txt line 1", "add the run that sent it"


def answered_before(b):
    spoil(
        b,
        "ledger-journal.csv",
        "p1,2026-11-23 10:06:40.020,2026-11-23 10:06:40.030",
        "p1,2026-11-23 10:06:40.020,2026-11-23 10:06:39.030",
    )
    return "ledger-journal.csv, line 2", "answered_at is 0.990 s before at", "check the two columns"


def ok_without_call(b):
    spoil(b, "ledger-journal.csv", "p3,2026-11-23 10:06:42.020,2026-11-23 10:06:42.030,acme,zed,900,BOOKED\n", "")
    return (
        "gateway-1.log, line 2",
        "the relay answered 0000 for GUID p3, but the account log has no call",
        "the account log is incomplete",
    )


def amount_differs(b):
    spoil(b, "ledger-journal.csv", "acme,zed,900,BOOKED", "acme,zed,9000,BOOKED")
    return (
        "ledger-journal.csv, line 4",
        "GUID p3: the account system received 9000 acme→zed, the channel sent 900 acme→zed (gateway-1.log line 2)",
        "the logs disagree on the transfer",
    )


def payee_differs(b):
    spoil(b, "ledger-journal.csv", "acme,zed,900,BOOKED", "acme,zoe,900,BOOKED")
    return "ledger-journal.csv, line 4", "received 900 acme→zoe, the channel sent 900 acme→zed", "correct the one"


def header_only_account(b):
    (b / "ledger-journal.csv").write_text("ref,received,booked,debit,credit,cents,status\n")
    return "ledger-journal.csv", "the account log holds no record", "give the account log with its lines"


def empty_channel(b):
    for f in b.glob("gateway-*.log"):
        f.write_text("")
    return "gateway-0.log", "the channel log holds no record", "give the channel log with its lines"


def ledger_not_read(b):
    (b / "ledger-dump.csv").rename(b / "ledger-dump.json")
    spoil(b, "incident.toml", 'files = ["ledger-dump.csv"]', 'files = ["ledger-dump.json"]')
    return "ledger-dump.json", "the ledger log's format cannot be told", "sqlite or csv"


def case_only(b):
    spoil(b, "ledger-journal.csv", "p3,", "P3,")
    return "ledger-journal.csv, line 4", "GUID P3 is not in the channel log, but p3", 'guid_case = "lower"'


def pod_not_mapped(b):
    spoil(b, "incident.toml", '"relay-6c9d-*" = "a"', '"relay-7777-*" = "a"')
    return (
        "gateway-0.log, line 2",
        "relay = 'relay-6c9d-aa' is not a relay slot and [pods] does not map it",
        '[pods] "relay-6c9d-aa" = "a"',
    )


def unknown_mapping_key(b):
    spoil(b, "incident.toml", 'format = "jsonl"', 'format = "jsonl"\ntimezone = "UTC"')
    return "[logs.channel]", "unknown key(s) timezone", "use only"


def result_unknown(b):
    spoil(b, "incident.toml", 'codes = {APPROVED = "0000", GATEWAY_TIMEOUT = "timeout"}', 'codes = {APPROVED = "0000"}')
    return "gateway-0.log, line 3", "result = 'GATEWAY_TIMEOUT' is not a relay answer code", "translate your words"


def inline_table_on_two_lines(b):
    spoil(b, "incident.toml", 'to = "req.creditor", amount', 'to = "req.creditor",\n          amount')
    return "incident.toml", "not valid TOML", "an inline table { ... } must end on the line it starts on"


def relay_not_there(b):
    spoil(
        b,
        "incident.toml",
        'relay = "relay_under_test/mutants/reprocess_unknown/relay.toml"',
        'relay = "relays/ours/relay.toml"',
    )
    return (
        "incident.toml: relay",
        "the relay 'relays/ours/relay.toml' is not there",
        "give a path from the bundle's folder or the project",
    )


BAD = [
    ms_as_seconds,
    ms_in_auto,
    no_zone,
    call_far_before,
    call_far_after,
    call_far_after_its_reprocess_run,
    answered_before,
    ok_without_call,
    amount_differs,
    payee_differs,
    header_only_account,
    empty_channel,
    ledger_not_read,
    case_only,
    pod_not_mapped,
    unknown_mapping_key,
    result_unknown,
    relay_not_there,
    inline_table_on_two_lines,
]


@pytest.mark.parametrize("bad", BAD, ids=[f.__name__ for f in BAD])
def test_a_bundle_that_cannot_be_right_gets_one_message_naming_the_file_the_line_and_the_fix(tmp_path, capsys, bad):
    bundle = small_bundle(tmp_path / "b")
    where, what, fix = bad(bundle)
    code, _, err, out = run_import(bundle, tmp_path, capsys)
    assert code == 2, err
    assert err.startswith(f"relaychaos: {bundle}") and where in err.splitlines()[0], err
    assert what in err and "fix:" in err and fix in err, err
    assert "Traceback" not in err and not (out / "night.yaml").exists()


def test_a_relay_named_from_the_project_is_found_from_any_working_folder(tmp_path, capsys, monkeypatch):
    bundle = small_bundle(tmp_path / "b")
    monkeypatch.chdir(tmp_path)
    code, _, err, out = run_import(bundle, tmp_path, capsys)
    assert code == 0, err
    loaded = scenario_file.load(out / "night.yaml")
    assert list(loaded.breaks) == ["relay_under_test/mutants/reprocess_unknown/relay.toml"]


def test_lines_out_of_order_are_sorted_and_said_and_give_the_same_scenario(tmp_path, capsys):
    sorted_night = run_import(small_bundle(tmp_path / "a"), tmp_path / "1", capsys)[3] / "night.yaml"
    bundle = small_bundle(tmp_path / "b")
    where, what, fix = out_of_order(bundle)
    code, out, err, folder = run_import(bundle, tmp_path / "2", capsys)
    assert code == 0, err
    assert where in out and what in out and fix in out
    assert scenario_file.load(folder / "night.yaml").scenario.steps == scenario_file.load(sorted_night).scenario.steps


def test_an_account_log_in_the_order_calls_were_answered_is_sorted_by_at_without_blame(tmp_path, capsys):
    bundle = small_bundle(tmp_path / "b")
    spoil(
        bundle,
        "ledger-journal.csv",
        "p1,2026-11-23 10:06:40.020,2026-11-23 10:06:40.030",
        "p1,2026-11-23 10:06:40.020,2026-11-23 10:06:41.900",
    )
    lines = (bundle / "ledger-journal.csv").read_text().splitlines()
    lines[1], lines[2] = lines[2], lines[1]  # p2 (answered 10:06:41.030) is written before p1 (answered 10:06:41.900)
    (bundle / "ledger-journal.csv").write_text("\n".join(lines) + "\n")
    code, out, err, _ = run_import(bundle, tmp_path, capsys)
    assert code == 0, err
    assert (
        "ledger-journal.csv: in the order the calls were answered (answered_at), not the order they were received "
        "(at: line 3's is 1.000 s earlier"
        in out
        and "its lines were sorted by at" in out
    )
    assert "correct them" not in out


def test_guids_of_one_log_that_differ_only_in_case_are_two_guids_and_said(tmp_path, capsys):
    bundle = small_bundle(tmp_path / "b")
    spoil(bundle, "gateway-1.log", '"id": "p3"', '"id": "P1"')
    spoil(bundle, "ledger-journal.csv", "p3,", "P1,")
    code, out, err, _ = run_import(bundle, tmp_path, capsys)
    assert code == 0, err
    assert "gateway-1.log, line 2: GUID P1 differs only in case from p1 (gateway-0.log line 2)" in out
    assert 'guid_case = "lower"' in out


def test_a_request_the_contract_calls_malformed_is_sent_as_its_body_as_production_sent_it(tmp_path, capsys):
    bundle = small_bundle(tmp_path / "b")
    with open(bundle / "gateway-1.log", "a") as f:
        f.write(
            json.dumps(
                {
                    "event": "transfer.done",
                    "t_us": 1795424803_000000,
                    "upstream": "relay-6c9d-aa",
                    "req": {"id": "p4", "debtor": "acme", "creditor": "zed", "minor": 0},
                    "resp": {"code": "E400"},
                }
            )
            + "\n"
        )
    code, _, err, out = run_import(bundle, tmp_path, capsys)
    assert code == 0, err
    night = scenario_file.load(out / "night.yaml").scenario
    [sent] = [s for s in night.steps if isinstance(s, S.Send) and s.guid == "g4"]
    assert json.loads(sent.raw) == {"guid": S.GUID_PLACEHOLDER, "from": "acme", "to": "zed", "amount": 0}
    assert night.incident["answers"]["g4"] == "E400"


def test_noise_lines_without_a_guid_are_skipped_and_counted_not_fatal(tmp_path, capsys):
    bundle = small_bundle(tmp_path / "b")
    with open(bundle / "gateway-0.log", "a") as f:
        f.write('{"event": "transfer.done", "t_us": 1795424803000000, "msg": "pool exhausted"}\nnot json at all\n')
    code, out, err, _ = run_import(bundle, tmp_path, capsys)
    assert code == 0, err
    assert "gateway-0.log: 3 line(s) skipped" in out


def test_take_compares_values_as_json_writes_them_numbers_and_booleans_too(tmp_path, capsys):
    bundle = small_bundle(tmp_path / "b")
    spoil(bundle, "incident.toml", 'take = {event = "transfer.done"}', 'take = {"resp.final" = true, "req.v" = 2}')
    for f in bundle.glob("gateway-*.log"):
        f.write_text(
            f.read_text()
            .replace('"resp": {"code"', '"req2": 0, "resp": {"final": true, "code"')
            .replace('"minor":', '"v": 2, "minor":')
        )
    code, out, err, folder = run_import(bundle, tmp_path, capsys)
    assert code == 0, err
    assert scenario_file.load(folder / "night.yaml").scenario.incident["guids"] == {"g1": "p1", "g2": "p2", "g3": "p3"}
