"""What a student reads is the same on every regrade: no GUIDs, absolute paths, ports, pids or worker names."""

from relaychaos.reports.student_text import clean, masked, tail

REPORT = """[gw1] linux -- Python 3.11.7 /work/wt-20/.venv/bin/python
scenario dropped-response-downstream against relay 'alice': 1 violation(s) of 1 rule(s)

[one-account-call] GUID 61ed8b80ce56-6adadab4 (scenario label g1)
  what happened: the account system received this GUID more than once
  +  1.190s  #4    relay a started (serve, pid 10694)
  +  1.212s  #8    fault: server-fault hold_guids=['61ed8b80ce56-6adadab4', '0123456789ab-6adadab4']
  +  1.242s  acct#1  account system receives the transfer
  what happened: the ledger /run/relaychaos/slot-6/ledgers/c02563016f541396/ledger.sqlite does not exist
  step start failed: /class/alice/relay.toml: relay 'alice' serve exited before answering http://10.213.8.2:22017/health
  File "/run/relaychaos/slot-8/relays/4338bf6fd2304c38/alice/relay.py", line 2
  did not take port 23768: pid 4242 (python3) listens there

history: /tmp/book/submissions/alice-242988a5/histories/dropped-response-downstream.jsonl"""


def test_a_report_keeps_what_happened_and_loses_what_differs_from_run_to_run():
    text = clean(REPORT, {"61ed8b80ce56-6adadab4": "g1"}, {"/class/alice": ""})
    assert text.startswith("scenario dropped-response-downstream against relay 'alice'"), "no worker line"
    assert "[one-account-call] GUID g1\n" in text and "hold_guids=['g1', '<guid>']" in text
    assert "+  1.190s  relay a started (serve)" in text, "no pid, no event index"
    assert "the ledger LEDGER_PATH does not exist" in text
    assert (
        "step start failed: relay.toml: relay 'alice' serve exited before answering "
        "http://RELAY_HOST:RELAY_PORT/health" in text
    )
    assert 'File "alice/relay.py", line 2' in text
    assert "did not take port PORT: a process (python3) listens there" in text
    assert "history:" not in text and "/run/" not in text and "/tmp" not in text and "gw1" not in text


def test_two_runs_differing_in_guids_ports_pids_slots_and_workers_read_the_same():
    other = (
        REPORT.replace("61ed8b80ce56-6adadab4", "9f00aa11bb22-11223344")
        .replace("gw1", "gw0")
        .replace("10694", "777")
        .replace("22017", "29999")
        .replace("slot-8", "slot-2")
        .replace("4338bf6fd2304c38", "aaaaaaaaaaaaaaaa")
        .replace("#4 ", "#9 ")
    )
    assert clean(REPORT, {"61ed8b80ce56-6adadab4": "g1"}) == clean(other, {"9f00aa11bb22-11223344": "g1"})


def test_timings_are_set_aside_only_when_comparing():
    assert masked("+  1.190s  relay a started; took 20.8 s, 350 ms") == "<t>  relay a started; took <t>, <t>"


def test_the_tail_of_a_log_is_what_the_program_printed_last_without_the_harness_markers():
    log = (
        "--- 17:38:41 start alice:serve: ['python', 'relay.py']\n  File \"relay.py\", line 2\n"
        "    def main(:\n\nSyntaxError: invalid syntax\n"
    )
    assert tail(log) == '  File "relay.py", line 2\n    def main(:\nSyntaxError: invalid syntax'
