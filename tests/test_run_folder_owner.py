"""Run as root through sudo, a command hands its run folder to the user who ran it (SUDO_UID, SUDO_GID): the CI steps
after it, running as that user, can read its histories, logs and report. It stays 0700, theirs alone."""

import os
import subprocess
import sys

import pytest

from relaychaos import run_folder

from .conftest import ROOT
from .test_sandbox import ROOT_ONLY

pytestmark = pytest.mark.process

NOBODY = 65534


def owners(folder):
    return {(p.stat().st_uid, p.stat().st_gid) for p in (folder, *folder.rglob("*"))}


@ROOT_ONLY
def test_a_run_folder_is_handed_to_the_sudo_user_with_all_it_holds(tmp_path, monkeypatch):
    (tmp_path / "run" / "histories").mkdir(parents=True)
    (tmp_path / "run" / "histories" / "a.jsonl").write_text("{}")
    monkeypatch.setenv("SUDO_UID", str(NOBODY))
    monkeypatch.setenv("SUDO_GID", str(NOBODY))
    run_folder.hand_over(tmp_path / "run")
    assert owners(tmp_path / "run") == {(NOBODY, NOBODY)}


@ROOT_ONLY
def test_without_sudo_the_folder_stays_root_s(tmp_path, monkeypatch):
    (tmp_path / "run").mkdir()
    monkeypatch.delenv("SUDO_UID", raising=False)
    run_folder.hand_over(tmp_path / "run")
    assert owners(tmp_path / "run") == {(0, 0)}


@ROOT_ONLY
def test_relaychaos_replay_under_sudo_leaves_a_folder_its_user_owns(tmp_path):
    out = tmp_path / "replay"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "relaychaos.commands.cli",
            "replay",
            str(ROOT / "scenarios" / "regressions" / "memory-dedup-lost-on-restart.yaml"),
            "--out",
            str(out),
        ],
        env={**os.environ, "SUDO_UID": str(NOBODY), "SUDO_GID": str(NOBODY)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert owners(out) == {(NOBODY, NOBODY)} and (out.stat().st_mode & 0o777) == 0o700
