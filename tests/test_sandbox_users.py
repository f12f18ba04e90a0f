"""As root the sandbox gives each concurrent harness process's relays a system user of their own
(relaychaos-relay-N, added to /etc/passwd the first time its slot is used); `relaychaos setup sandbox-users`
makes them ahead of time and removes them, never one whose slot a running harness holds."""

import fcntl
import os
import pwd
import subprocess
import sys

import pytest

from relaychaos.sandbox import slots

from .conftest import ROOT

pytestmark = [
    pytest.mark.process,
    pytest.mark.skipif(os.geteuid() != 0, reason="only root adds and removes system users"),
]

SPEC = "relaychaos-spec-"  # users of this test alone, at slots no test run reaches (60, 61 of 64)


def test_the_users_whose_slots_no_harness_holds_are_removed_and_the_others_kept_until_it_ends():
    for n in (60, 61):
        slots.ensure_user(f"{SPEC}{n}")
    assert slots.made_users(SPEC) == [f"{SPEC}60", f"{SPEC}61"]
    held = os.open(slots.base_dir() / "slot-61.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)  # as a running harness holds its slot
        assert slots.remove_users(SPEC) == ([f"{SPEC}60"], [f"{SPEC}61"])
    finally:
        os.close(held)
    assert slots.remove_users(SPEC) == ([f"{SPEC}61"], [])
    assert slots.made_users(SPEC) == []
    with pytest.raises(KeyError):
        pwd.getpwnam(f"{SPEC}61")


def test_setup_makes_the_sandbox_users_ahead_of_the_first_run():
    done = subprocess.run(
        [sys.executable, "-m", "relaychaos.commands.cli", "setup", "sandbox-users", "--count", "2"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    for n in (0, 1):
        assert f"{slots.USER_PREFIX}{n} ({pwd.getpwnam(f'{slots.USER_PREFIX}{n}').pw_uid})" in done.stdout
