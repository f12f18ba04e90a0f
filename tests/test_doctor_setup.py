"""`relaychaos doctor` says what a run needs and what this machine offers, with the fixes; `relaychaos setup
toxiproxy` puts a working toxiproxy-server where the harness finds it, built with Go or from a binary given."""

import os
import shutil
import subprocess
import sys

import pytest

from relaychaos.sandbox import levels
from relaychaos.stack import toxiproxy_server

from .conftest import ROOT

pytestmark = pytest.mark.process


def cli(*args, env=None, cwd=ROOT):
    return subprocess.run(
        [sys.executable, "-m", "relaychaos.commands.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        env={**os.environ, **(env or {})},
    )


def nothing_anywhere(tmp_path) -> dict:
    """An environment with no Toxiproxy: not on PATH (only this Python's folder), not in a tools folder, no
    daemon, no URL, no user folder."""
    return {
        "PATH": os.path.dirname(sys.executable),
        "RELAYCHAOS_TOOLS_BIN": str(tmp_path / "empty"),
        "DOCKER_HOST": f"unix://{tmp_path}/no-docker.sock",
        "TOXIPROXY_URL": "",
        "XDG_DATA_HOME": str(tmp_path / "data"),
    }


def test_doctor_names_every_layer_and_the_toxiproxy_a_run_would_use_and_exits_0_when_a_run_can_start():
    done = cli("doctor")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"ok       toxiproxy: {toxiproxy_server.find_binary()}" in done.stdout
    lacks, _ = levels.offered()
    missing = [line.removeprefix("  missing  ") for line in done.stdout.splitlines() if line.startswith("  missing  ")]
    for layer in levels.LAYERS:
        if layer in lacks:  # the layers missing for one reason share a line
            assert any(layer in line.split(":")[0].split(", ") for line in missing), (layer, done.stdout)
        else:
            assert f"  ok       {layer}: " in done.stdout, (layer, done.stdout)
    assert "relaychaos: a run can start here" in done.stdout


def test_doctor_without_toxiproxy_exits_1_with_the_fix(tmp_path):
    done = cli("doctor", env=nothing_anywhere(tmp_path))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "missing  toxiproxy: no toxiproxy-server on PATH or in" in done.stdout
    assert "fix: run `bash scripts/bootstrap.sh`" in done.stdout  # a checkout's words: this is one


def test_setup_takes_a_binary_given_and_an_installed_harness_then_finds_it(tmp_path, monkeypatch):
    given = shutil.which("toxiproxy-server") or str(ROOT / "tools" / "bin" / "toxiproxy-server")
    done = cli("setup", "toxiproxy", "--from", given, env={"XDG_DATA_HOME": str(tmp_path / "data")})
    assert done.returncode == 0, done.stdout + done.stderr
    placed = tmp_path / "data" / "relaychaos" / "bin" / "toxiproxy-server"
    assert os.access(placed, os.X_OK) and "toxiproxy-server version" in done.stdout
    for name, value in nothing_anywhere(tmp_path).items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("RELAYCHAOS_TOOLS_BIN")
    monkeypatch.setattr(toxiproxy_server, "TOOLS_BIN", tmp_path / "no-checkout")  # as in a wheel: no tools/bin
    assert toxiproxy_server.find_binary() == str(placed)


def test_setup_builds_the_server_with_go_under_its_right_name_saying_its_version_and_once(tmp_path):
    if shutil.which("go") is None:
        pytest.skip("no Go here (scripts/bootstrap.sh builds Toxiproxy with it)")
    done = cli("setup", "toxiproxy", "--dest", tmp_path / "bin", "--version", toxiproxy_server.VERSION.lstrip("v"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert os.access(tmp_path / "bin" / "toxiproxy-server", os.X_OK) and not (tmp_path / "bin" / "server").exists()
    assert f"toxiproxy-server version {toxiproxy_server.VERSION.lstrip('v')}" in done.stdout, done.stdout
    again = cli("setup", "toxiproxy", "--dest", tmp_path / "bin")
    assert again.returncode == 0 and "already: nothing to do" in again.stdout, again.stdout + again.stderr


def test_setup_takes_a_download_by_its_bare_name_though_it_has_no_execute_bit(tmp_path):
    download = tmp_path / "toxiproxy-server-linux-amd64"
    shutil.copyfile(shutil.which("toxiproxy-server") or ROOT / "tools" / "bin" / "toxiproxy-server", download)
    download.chmod(0o644)  # as a browser or curl saves it
    done = cli("setup", "toxiproxy", "--from", download.name, "--dest", tmp_path / "bin", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert os.access(tmp_path / "bin" / "toxiproxy-server", os.X_OK) and "toxiproxy-server version" in done.stdout
    same = cli("setup", "toxiproxy", "--from", tmp_path / "bin" / "toxiproxy-server", "--dest", tmp_path / "bin")
    assert same.returncode == 0, "the binary already in place, given again: " + same.stderr


def test_setup_says_when_the_file_given_is_not_there_or_the_folder_cannot_be_written(tmp_path):
    missing = cli("setup", "toxiproxy", "--from", tmp_path / "nowhere", "--dest", tmp_path / "bin")
    assert missing.returncode == 2 and f"no such file: {tmp_path / 'nowhere'}" in missing.stderr, missing.stderr
    (tmp_path / "a-file").write_text("")
    given = shutil.which("toxiproxy-server") or ROOT / "tools" / "bin" / "toxiproxy-server"
    blocked = cli("setup", "toxiproxy", "--from", given, "--dest", tmp_path / "a-file" / "bin")
    assert blocked.returncode == 2 and "cannot write" in blocked.stderr and "--dest DIR" in blocked.stderr


def test_doctor_asks_the_toxiproxy_a_run_would_use_and_says_when_it_does_not_work(tmp_path):
    url = cli("doctor", env={"TOXIPROXY_URL": "http://127.0.0.1:9"})  # the discard port: nothing answers there
    assert url.returncode == 1 and "TOXIPROXY_URL=http://127.0.0.1:9 does not answer" in url.stdout, url.stdout
    broken = tmp_path / "path" / "toxiproxy-server"
    broken.parent.mkdir()
    broken.write_text("#!/bin/sh\nexit 3\n")
    broken.chmod(0o755)
    env = {"PATH": f"{broken.parent}{os.pathsep}{os.environ['PATH']}", "TOXIPROXY_URL": ""}
    first = cli("doctor", env=env)
    assert first.returncode == 1 and f"{broken} is the toxiproxy-server a run would start, and it does not work" in (
        first.stdout
    ), first.stdout


def test_a_bad_value_in_an_option_variable_stops_a_command_with_exit_2_and_one_line(tmp_path):
    done = cli("run", "--out", tmp_path / "run", env={"RELAYCHAOS_BUDGET": "tiny"})
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "RELAYCHAOS_BUDGET='tiny' is not one of quick, nightly, ci, grade" in done.stderr


def test_setup_refuses_what_is_not_a_toxiproxy_server_and_says_what_to_do_without_go(tmp_path):
    fake = tmp_path / "fake"
    fake.write_text("#!/bin/sh\necho hello\n")
    fake.chmod(0o755)
    done = cli("setup", "toxiproxy", "--from", fake, "--dest", tmp_path / "bin")
    assert done.returncode == 2 and "not a toxiproxy-server" in done.stderr, done.stderr
    assert not (tmp_path / "bin" / "toxiproxy-server").exists()
    no_go = cli("setup", "toxiproxy", "--dest", tmp_path / "bin", env=nothing_anywhere(tmp_path))
    assert no_go.returncode == 2 and "Go is not on PATH" in no_go.stderr and "--from FILE" in no_go.stderr


def test_a_run_whose_first_toxiproxy_server_does_not_start_says_it_is_found_first_and_what_to_do(tmp_path):
    broken = tmp_path / "path" / "toxiproxy-server"
    broken.parent.mkdir()
    broken.write_text("#!/bin/sh\nexit 3\n")
    broken.chmod(0o755)
    env = {"PATH": f"{broken.parent}{os.pathsep}{os.environ['PATH']}", "TOXIPROXY_URL": ""}
    done = cli("run", "--out", tmp_path / "run", env=env)
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"{broken} exited with status 3 before answering" in done.stderr
    assert "it is the toxiproxy-server found first" in done.stderr and "remove it or put a working one" in done.stderr
    said = (tmp_path / "run" / "not-started.txt").read_text()
    assert "exited with status 3 before answering" in said, "the run folder says why it holds nothing else"
