"""Every run keeps its histories and relay logs; `relaychaos recheck` judges them again and reproduces the verdicts."""

import json
import re
import subprocess
import sys

import pytest

from relaychaos.history import History, save
from relaychaos.run_folder import RunFolder

from .conftest import OPAQUE_G1, ROOT

MUTANT = ROOT / "relay_under_test" / "mutants" / "timeout_as_failed" / "relay.toml"


def cli(*args, timeout=300):
    return subprocess.run(
        [sys.executable, "-m", "relaychaos.commands.cli", *map(str, args)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def scenarios(folder):
    return {s["nodeid"]: s for s in json.loads((folder / "results.json").read_text())["scenarios"]}


def test_a_large_history_is_kept_gzipped_and_reads_back_the_same(tmp_path):
    history = History()
    for i in range(50):
        history.append("runner", "ok", "step", n=i, padding="x" * 100)
    path = save(history, tmp_path / "big.jsonl", 1000)
    assert path.name == "big.jsonl.gz" and not (tmp_path / "big.jsonl").exists()
    assert [e.value for e in History.read(path)] == [e.value for e in history]
    small = save(history, tmp_path / "small.jsonl", 10**6)
    assert small.name == "small.jsonl"


def test_two_scenarios_of_one_name_get_two_names(tmp_path):
    folder = RunFolder(tmp_path)
    assert [folder.claim("race 32"), folder.claim("race 32"), folder.claim("race 32")] == [
        "race_32",
        "race_32-2",
        "race_32-3",
    ]
    assert (tmp_path / "logs" / "race_32-2").is_dir()


@pytest.mark.stack
def test_a_run_keeps_every_history_and_log_and_recheck_reproduces_its_verdicts(tmp_path):
    run = tmp_path / "run"
    proc = cli(
        "run",
        "-n",
        "3",
        "--relay",
        MUTANT,
        "--out",
        run,
        "--hunt",
        "--",
        "-k",  # --hunt: the machine runs too
        "happy-path or dropped-response-downstream or stateful",
        "--relaychaos-budget",
        "grade",
        "--relaychaos-seed",
        "0",
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    before = scenarios(run)
    assert len(before) == 3
    for entry in before.values():  # the agreed interface: paths relative to the run folder
        assert (run / entry["history"]).is_file() and entry["history"].startswith("histories/"), entry
        assert list((run / entry["logs"]).glob("relay-a.log")), entry
    failing = next(s for n, s in before.items() if "dropped-response-downstream" in n)
    assert failing["outcome"] == "failed" and f"history: {run / failing['history']}" in failing["message"]
    assert json.loads((run / "results.json").read_text())["relay_name"] == "timeout_as_failed"

    junit = (run / "junit.xml").read_text()
    again = cli("recheck", run)
    assert again.returncode == 1, again.stdout + again.stderr
    assert "0 scenario(s) judged differently" in again.stdout
    after = scenarios(run)
    assert {n: (s["outcome"], s["verdicts"]) for n, s in after.items()} == {
        n: (s["outcome"], s["verdicts"]) for n, s in before.items()
    }
    assert (run / "junit.xml").read_text() == junit

    one = cli("recheck", run / failing["history"])
    assert one.returncode == 1 and re.search(OPAQUE_G1, one.stdout), one.stdout + one.stderr
    happy = next(s for n, s in before.items() if "happy-path" in n)
    held = cli("recheck", run / happy["history"])
    assert held.returncode == 0 and "every rule held" in held.stdout


@pytest.mark.stack
def test_recheck_rewrites_the_verdicts_results_junit_and_report_when_the_judgement_changes(tmp_path):
    run = tmp_path / "run"
    red = cli("run", "--relay", MUTANT, "--out", run, "-n", "0", "--", "-k", "dropped-response-downstream")
    assert red.returncode == 1, red.stdout + red.stderr
    lines = red.stdout.splitlines()  # a red run's console: a line per failing scenario, no relay log, no timeline
    assert any(re.match(r"  FAILED dropped-response-downstream: one-account-call, .*\(first: ", line) for line in lines)
    assert "relay log" not in red.stdout and "timeline" not in red.stdout and len(lines) < 25, red.stdout
    data = json.loads((run / "results.json").read_text())
    entry = data["scenarios"][0]
    entry.update(outcome="passed", verdicts=[], message=None)  # as an older, wrong checker would have left it
    data.update(ok=True, summary={"passed": 1, "failed": 0, "error": 0, "skipped": 0})
    (run / "results.json").write_text(json.dumps(data))
    proc = cli("recheck", run)
    assert proc.returncode == 1 and "now failed" in proc.stdout, proc.stdout + proc.stderr
    redone = json.loads((run / "results.json").read_text())
    assert redone["ok"] is False and redone["rules"]["one-account-call"]["held"] is False
    assert redone["rechecked"]["changed"] == [entry["nodeid"]]
    assert re.search(OPAQUE_G1, redone["scenarios"][0]["message"])
    assert "rules were broken" in (run / "report.html").read_text()
    assert "<failure" in (run / "junit.xml").read_text()


@pytest.mark.process
def test_recheck_of_something_that_is_not_a_run_exits_2_naming_the_fix(tmp_path):
    proc = cli("recheck", tmp_path)
    assert proc.returncode == 2 and "no results.json here" in proc.stderr and "fix:" in proc.stderr
    bad = tmp_path / "h.jsonl"
    bad.write_text("not json\n")
    proc = cli("recheck", bad)
    assert proc.returncode == 2 and f"{bad}: not a history" in proc.stderr and "Traceback" not in proc.stderr


def test_the_report_names_the_relay_by_its_manifest_name_not_its_folder(tmp_path):
    from relaychaos.plugin.results_recorder import manifest_name
    from relaychaos.records.results import ResultsFile
    from relaychaos.reports.html import render
    from relaychaos.reports.results import RunResults

    folder = tmp_path / "relay manifests"
    folder.mkdir()
    (folder / "relay.toml").write_text(
        'name = "ledger-v2"\n[commands]\nserve = ["true"]\nresolve = ["true"]\nreprocess = ["true"]\npurge = ["true"]\n'
    )
    assert manifest_name(folder / "relay.toml") == "ledger-v2"
    results = RunResults(str(folder / "relay.toml"), manifest_name(folder / "relay.toml"))
    results.write(tmp_path / "results.json")
    page = render(ResultsFile.from_json((tmp_path / "results.json").read_text()))
    assert "<title>relaychaos: ledger-v2</title>" in page and "relay manifests</title>" not in page


def test_a_history_already_saved_is_moved_into_the_run_folder_not_written_again(tmp_path):
    history = History()
    for i in range(50):
        history.append("runner", "ok", "step", n=i, padding="x" * 30000)  # over 1 MiB: kept gzipped
    saved = save(history, tmp_path / "stack0" / "history.jsonl")
    kept = RunFolder(tmp_path / "run").keep_history(saved, "happy-path")
    assert kept == "histories/happy-path.jsonl.gz" and not saved.exists()
    assert [e.value for e in History.read(tmp_path / "run" / kept)] == [e.value for e in history]


@pytest.mark.stack
def test_a_red_run_with_verbose_prints_each_verdict_s_timeline_and_the_relay_logs_tails(tmp_path):
    """Without -v, a line per failing scenario (test_recheck_rewrites_...'s red run shows it)."""
    loud = cli(
        "run", "-v", "--relay", MUTANT, "--out", tmp_path / "loud", "-n", "0", "--", "-k", "dropped-response-downstream"
    )
    assert loud.returncode == 1 and "relay log relay-a.log" in loud.stdout and "timeline" in loud.stdout, loud.stdout
