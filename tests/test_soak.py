"""`relaychaos soak`: a seeded nemesis schedule, open-loop traffic, then every rule; a clear end however it ends."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from relaychaos.history import iter_events
from relaychaos.soak import schedule
from relaychaos.soak.command import duration_s
from relaychaos.soak.generator import RESEND_WINDOW_S

from .conftest import ROOT, derived_relay

MUTANT = ROOT / "relay_under_test" / "mutants" / "check_then_insert" / "relay.toml"


def soak(*args, env=None, **popen):
    argv = [sys.executable, "-m", "relaychaos.commands.cli", "soak", *args]
    if popen:
        return subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)


def test_the_same_seed_draws_the_same_schedule_and_another_seed_another():
    a, b = schedule.draw(7, 600, 300), schedule.draw(7, 600, 300)
    assert a == b
    assert schedule.draw(8, 600, 300) != a


def test_every_fault_of_the_catalogue_comes_within_the_first_minute_each_healed_before_the_next():
    s = schedule.draw(3, 600, 300)
    first_minute = {x.fault for x in s.nemesis if x.kind == "fault" and x.at < 60}
    assert first_minute == set(schedule.catalogue(300))
    faults = [x for x in s.nemesis if x.kind != "join"]
    assert [x.kind for x in faults] == ["fault", "heal"] * (len(faults) // 2), "one fault at a time"
    assert all(x.at < y.at for x, y in zip(faults, faults[1:], strict=False))
    assert [x.steps for x in s.nemesis if x.kind == "join"] == [(schedule.S.Start("b"),)]


def test_resolve_reprocess_and_purge_come_on_their_cadence_with_a_safe_min_age():
    s = schedule.draw(1, 120, 300)
    kinds = [type(x.steps[0]).__name__ for x in s.cron]
    assert {"Resolve", "Reprocess", "Purge"} == set(kinds)
    assert kinds.count("Resolve") >= 3, "at least three of each, however short the soak"
    min_age = next(x.steps[0].min_age_s for x in s.cron if kinds[s.cron.index(x)] == "Resolve")
    assert min_age > 0.3 + 0.6, "beyond ACCOUNT_TIMEOUT_MS plus the latency injected beyond it"
    assert schedule.RETENTION_S >= 2 * RESEND_WINDOW_S, "a purged GUID is never resent"


def test_durations_read_as_a_person_writes_them():
    assert (duration_s("10m"), duration_s("90s"), duration_s("1h"), duration_s("45")) == (600, 90, 3600, 45)
    with pytest.raises(Exception, match="not a duration"):
        duration_s("ten minutes")


@pytest.mark.stack
def test_a_short_soak_of_the_reference_holds_every_rule_at_the_rate_asked(tmp_path):
    proc = soak("--duration", "12s", "--rate", "100", "--seed", "1", "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["violations"] == 0 and summary["rate_sustained"] is True
    assert summary["transfers_sent"] + summary["held"] >= 0.95 * 12 * 100, "open loop: sent, or held by the nemesis"
    assert summary["answers"]["0000"] > 0
    assert {"B201", "B202", "E901", "E903"} <= set(summary["answers"]), "refused, in-doubt and duplicate answers"
    assert summary["faults_done"] >= 2 and summary["batches"]
    assert summary["peak_rss_mib"] > 0 and summary["history_events"] > 2 * summary["transfers_sent"]
    assert "relaychaos: soak " in proc.stdout, "plain status lines when stdout is not a terminal"
    assert "every rule held" in proc.stdout
    assert summary["history"] == str(tmp_path / "history.jsonl.gz"), "streamed, then compressed"
    assert sum(1 for _ in iter_events(summary["history"])) == summary["history_events"]
    assert not (tmp_path / "incident.txt").exists()


@pytest.mark.stack
def test_a_short_soak_finds_the_check_then_insert_race_and_writes_its_timeline(tmp_path):
    proc = soak("--relay", str(MUTANT), "--duration", "8s", "--rate", "100", "--seed", "1", "--out", str(tmp_path))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert {"one-account-call", "one-debit"} <= set(summary["rules_broken"])
    first = summary["first_violation"]
    assert 0 < first["after_s"] < 8 and first["guid"]
    incident = (tmp_path / "incident.txt").read_text()
    assert first["guid"] in incident and "account system receives the transfer" in incident


@pytest.mark.stack
def test_a_relay_that_dies_and_will_not_start_again_stops_the_soak_with_a_verdict(tmp_path):
    dies_once = derived_relay(
        tmp_path / "dies_once",
        "dies_once",
        serve=["python", "run.py", "dies_once", "serve"],
        resolve=["python", "run.py", "reference", "resolve"],
        reprocess=["python", "run.py", "reference", "reprocess"],
        purge=["python", "run.py", "reference", "purge"],
    )
    proc = soak("--relay", str(dies_once), "--duration", "60s", "--rate", "50", "--out", str(tmp_path / "out"))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert "would not start again" in summary["stopped_because"] and summary["duration_s"] < 30
    assert "serve-ready" in summary["rules_broken"]
    assert "the soak stopped early: relay a died and would not start again" in proc.stdout


@pytest.mark.stack
def test_ctrl_c_checks_the_history_so_far_and_leaves_nothing_running(tmp_path):
    proc = soak("--duration", "60s", "--rate", "50", "--out", str(tmp_path), popen=True)
    for text in proc.stdout:
        if "relaychaos: soak " in text:  # the traffic has begun
            break
    time.sleep(1)  # let some traffic happen: an amount of history, not an ordering
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["stopped_because"] == "interrupted (Ctrl-C)" and summary["transfers_sent"] > 0
    assert "every rule held" in out
    pids = {e.value["pid"] for e in iter_events(summary["history"]) if e.f == "start" and e.type == "ok"}
    assert pids and not [p for p in pids if os.path.exists(f"/proc/{p}")], "every relay process is gone"


@pytest.mark.stack
def test_a_rate_the_machine_cannot_sustain_is_said_with_the_rate_achieved_and_exits_2(tmp_path):
    proc = soak("--duration", "3s", "--rate", "100000", "--out", str(tmp_path))
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert proc.returncode == 2 and summary["violations"] == 0, proc.stdout + proc.stderr
    assert summary["rate_sustained"] is False and summary["rate_achieved"] < 100000 and summary["missed"] > 0
    assert "this machine could not sustain 100000 transfers/s: it achieved" in proc.stdout
