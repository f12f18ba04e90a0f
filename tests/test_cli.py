"""`relaychaos run` is the main job: a report folder, and an exit status CI can act on (0, 1, 2)."""

import json
import os
import re
import subprocess
import sys

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
    proc = run("--out", str(tmp_path), "--", "-k", "happy-path or dropped-response-to-channel")
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
    proc = run("--out", str(tmp_path), "--", "-k", "happy-path or dropped-response-to-channel", env=env)
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
