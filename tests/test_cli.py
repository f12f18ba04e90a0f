"""`relaychaos run` is the main job: a report folder, and an exit status CI can act on (0, 1, 2)."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import BASE, OPAQUE_G1, ROOT

pytestmark = pytest.mark.stack  # relaychaos run starts the whole stack


def run(*args, env=None):
    return subprocess.run(
        [sys.executable, "-m", "relaychaos.commands.cli", "run", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_reference_passes_and_the_run_folder_holds_results_and_junit(tmp_path):
    proc = run("--out", str(tmp_path), "-n", "2", "--", "-k", "happy-path or dropped-response-to-channel")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["ok"] is True and results["relay_name"] == "reference" and results["summary"]["passed"] >= 2
    assert "<testsuite" in (tmp_path / "junit.xml").read_text()
    sandbox = results["sandbox"]  # the level enforced, on record and at the top of the report
    assert sandbox["mode"] == "auto" and sandbox["enforced"] is True and "seccomp" in sandbox["layers"]
    assert "relaychaos: sandbox auto:" in proc.stdout
    assert "<p class=sandbox>Sandbox: <b>auto</b>" in (tmp_path / "report.html").read_text()
    assert oct((tmp_path).stat().st_mode & 0o777) == "0o700", "the run folder is the harness's alone"


def test_relay_base_named_in_the_environment_is_caught_and_the_run_exits_1(tmp_path):
    """RELAYCHAOS_RELAY chooses the relay as --relay does (relaychaos.options.RELAY)."""
    env = {**os.environ, "RELAYCHAOS_RELAY": str(BASE)}
    proc = run("--out", str(tmp_path), "-n", "2", "--", "-k", "happy-path or dropped-response-to-channel", env=env)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    failed = [s for s in json.loads((tmp_path / "results.json").read_text())["scenarios"] if s["outcome"] == "failed"]
    assert [s["nodeid"].split("[")[1] for s in failed] == ["dropped-response-to-channel]"]
    assert re.search(OPAQUE_G1, failed[0]["message"]), failed[0]["message"]
    verdict = failed[0]["verdicts"][0]
    assert verdict["rule"] == "one-account-call" and verdict["scenario"] == "dropped-response-to-channel"
    rules = json.loads((tmp_path / "results.json").read_text())["rules"]
    assert rules["one-account-call"]["held"] is False and rules["write-before-send"]["held"] is True
    page = (tmp_path / "report.html").read_text()
    assert "rules were broken" in page and "<code>one-account-call</code>" in page
    assert re.search(OPAQUE_G1, page), "the incident report is on the page"
    assert (tmp_path / "timelines" / "dropped-response-to-channel.html").is_file()
    assert "timelines/dropped-response-to-channel.html" in page and "<svg" in page, "its timeline and plots"


def test_a_bad_manifest_exits_2_with_one_message_before_anything_starts(tmp_path):
    bad = tmp_path / "relay.toml"
    bad.write_text('name = "x"\n')
    proc = run("--relay", str(bad), "--out", str(tmp_path / "out"))
    assert proc.returncode == 2
    assert "missing table [commands]" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "out" / "results.json").exists()


def test_an_unreachable_toxiproxy_exits_2_naming_the_fix(tmp_path):
    import os

    env = dict(os.environ, TOXIPROXY_URL="http://127.0.0.1:9")
    proc = run("--out", str(tmp_path), env=env)
    assert proc.returncode == 2 and "TOXIPROXY_URL=http://127.0.0.1:9 does not answer" in proc.stderr


NEVER_STARTS = "#!/bin/sh\necho 'ModuleNotFoundError: No module named flask' >&2\nexit 3\n"


def never_starting_relay(folder, keyed: bool = False):
    """A relay.toml whose every command exits 3 at once, printing why (its venv missing, say): the course
    profile on SQLite, or (keyed) payments_go's manifest, an Idempotency-Key service with its ledger in
    PostgreSQL, whose table serve would have made."""
    folder.mkdir()
    script = folder / "serve.sh"
    script.write_text(NEVER_STARTS)
    script.chmod(0o755)
    if keyed:
        text = (ROOT / "relay_under_test" / "payments_go" / "relay.toml").read_text()
        text = re.sub(r'\["\./bin/payments", "\w+"\]', '["./serve.sh"]', text)
        assert '"./bin/payments"' not in text and 'kind = "postgresql"' in text
    else:
        text = '[commands]\nserve = ["./serve.sh"]\nresolve = ["./serve.sh"]\nreprocess = ["./serve.sh"]\n'
        text += 'purge = ["./serve.sh"]\n'
    (folder / "relay.toml").write_text('name = "never-starts"\n' + text.replace('name = "payments-go"\n', ""))
    return folder / "relay.toml"


def left_running(mark: str) -> list[str]:
    """The command lines of this machine's processes that name `mark` (a test's own folder)."""
    found = []
    for proc in os.scandir("/proc"):
        if proc.name.isdigit():
            try:
                raw = Path("/proc", proc.name, "cmdline").read_bytes()
            except OSError:
                continue
            line = raw.replace(b"\0", b" ").decode(errors="replace")
            if mark in line:
                found.append(f"{proc.name}: {line}")
    return found


@pytest.mark.parametrize("keyed", [False, True], ids=["course-sqlite", "keyed-postgresql"])
def test_a_relay_whose_serve_never_starts_stops_the_run_at_once_with_one_message_and_exits_2(tmp_path, keyed):
    """Not 34 scenarios each failing serve-ready (and ledger-schema blaming a table serve never made): the first
    scenario's failed start stops the run, its message naming serve, the fix and serve's own last lines."""
    import time

    relay = never_starting_relay(tmp_path / "relay", keyed)
    began = time.monotonic()
    proc = run("--relay", str(relay), "--out", str(tmp_path / "out"), "-n", "0")
    took = time.monotonic() - began
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert took < 60, f"{took:.0f} s: the run went on after serve never started"
    assert proc.stderr.count("its serve never started") == 1, proc.stderr
    assert "serve exited with status 3" in proc.stderr and "fix: serve must listen" in proc.stderr
    assert "No module named flask" in proc.stderr, "serve's own last lines"
    assert "Traceback" not in proc.stderr
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    [scenario] = results["scenarios"]
    assert {v["rule"] for v in scenario["verdicts"]} == {"serve-ready"}, "not the table nor the batches: serve's"
    assert (tmp_path / "out" / "report.html").is_file(), "the one scenario, serve's log with it, in the report"
    assert not left_running(str(tmp_path)), "nothing of the run is left running"
