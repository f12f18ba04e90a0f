"""The sandbox, layer by layer: what it enforces, what it says when it cannot, and what it measures.

The adversarial relay (test_sandbox_adversary.py) shows the layers together; here
each is pinned down on its own: the exec wrapper's refusals, the plan for a relay
command, the level reported, strict mode's refusal, and the message that names
the layer starving a runtime, with its measured need and the flag to change.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from relaychaos.errors import RelayError, SandboxError
from relaychaos.sandbox import landlock, policy
from relaychaos.sandbox.plan import WRAPPER, Plan
from relaychaos.sandbox.policy import Limits, Sandbox, hidden_folders, outermost, probe

from .conftest import ROOT

REFERENCE = ROOT / "relay_under_test" / "reference" / "relay.toml"
FULL = pytest.mark.skipif(os.geteuid() != 0 or landlock.abi() < 6,
                          reason=f"needs root and Landlock ABI 6+ (euid {os.geteuid()}, ABI {landlock.abi()})")


def wrapped(plan: Plan, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(plan.wrap(list(argv)), capture_output=True, text=True, timeout=30)


# -- the exec wrapper -------------------------------------------------------------------------
def test_the_wrapper_execs_the_command_in_place_with_the_limits_set():
    done = wrapped(Plan(rlimits={"nofile": 77, "core": 0}), sys.executable, "-c",
                   "import os, resource; print(os.getpid() == int(os.environ.get('X', os.getpid())), "
                   "resource.getrlimit(resource.RLIMIT_NOFILE))")
    assert done.returncode == 0 and done.stdout.split() == ["True", "(77,", "77)"], done.stderr


def test_a_command_that_cannot_be_found_exits_127_naming_it():
    done = wrapped(Plan(), "no-such-relay-binary")
    assert done.returncode == 127 and "cannot run `no-such-relay-binary`" in done.stderr


def test_a_layer_that_cannot_be_applied_stops_the_command_and_names_the_layer():
    done = wrapped(Plan(rlimits={"nofile": 1 << 40}), "true")  # above the hard limit: refused
    assert done.returncode == 126
    assert "layer 'rlimits' could not be applied: nofile" in done.stderr and "`true` was not run" in done.stderr


def test_the_wrapper_imports_no_package_so_that_it_starts_fast():
    done = subprocess.run([sys.executable, "-I", "-S", "-X", "importtime", WRAPPER, Plan().dumps(), "--", "true"],
                          capture_output=True, text=True)
    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if "import time" in line}
    assert not {m for m in imported if m.startswith(("relaychaos", "dataclasses", "pathlib"))}, imported


# -- the plan -------------------------------------------------------------------------------
def test_only_the_outermost_folders_are_bound_and_a_writable_one_inside_a_read_only_one_is_kept():
    assert outermost(["/a", "/a/b", "/c"]) == ("/a", "/c")
    assert outermost(["/a", "/a/b"], writable=("/a/b",)) == ("/a", "/a/b")


def test_a_folder_the_relay_uid_cannot_enter_is_hidden_but_for_the_runtime_it_holds(tmp_path):
    """Such as /root (0700) holding a pyenv Python: a tmpfs over it, with the runtime bound back in place.
    Folders under /tmp are not concerned: /tmp gets a private tmpfs of its own."""
    locked = tmp_path / "home"
    (locked / "runtime").mkdir(parents=True)
    locked.chmod(0o700)
    assert hidden_folders([str(locked / "runtime")], uid=54321, gid=54321) == []
    outside = Path("/var/tmp") / f"rc-hidden-{os.getpid()}"
    try:
        (outside / "runtime").mkdir(parents=True)
        outside.chmod(0o700)
        mounts = hidden_folders([str(outside / "runtime"), str(outside / "runtime" / "x")], uid=54321, gid=54321)
        assert [(m.at, m.keep) for m in mounts] == [(str(outside), (str(outside / "runtime"),))]
    finally:
        subprocess.run(["rm", "-rf", str(outside)], check=False)


def test_limits_can_be_changed_by_name_and_a_bad_one_is_refused_with_the_names():
    assert Limits().with_overrides("data_mib=3072, nproc=2048") == Limits(data_mib=3072, nproc=2048)
    with pytest.raises(SandboxError, match="nproc, data_mib, nofile"):
        Limits().with_overrides("memory=3G")


# -- what is enforced, and what is said when it cannot be --------------------------------------
def test_off_enforces_nothing_and_says_so():
    assert probe("off") == {"mode": "off", "enforced": False, "missing": ["everything: --sandbox off"]}


def test_auto_without_root_or_landlock_runs_with_what_there_is_and_lists_the_rest(monkeypatch):
    monkeypatch.setattr(policy.os, "geteuid", lambda: 1000)
    monkeypatch.setattr(policy.landlock, "abi", lambda: 0)
    level = probe("auto")
    assert level["enforced"] is True and level["uid"] == "the harness's own" and "nproc" not in level["rlimits"]
    assert any("does not run as root" in m for m in level["missing"])
    assert any("Landlock: this kernel offers none" in m for m in level["missing"])


@pytest.mark.parametrize("euid, abi, lacking", [(1000, 7, "does not run as root"), (0, 3, "they need ABI 4")])
def test_strict_refuses_to_run_a_weaker_sandbox_naming_the_layer_and_the_flag(monkeypatch, euid, abi, lacking):
    monkeypatch.setattr(policy.os, "geteuid", lambda: euid)
    monkeypatch.setattr(policy.landlock, "abi", lambda: abi)
    with pytest.raises(SandboxError) as e:
        Sandbox.create("strict")
    assert lacking in str(e.value) and "--sandbox auto" in str(e.value)


def test_strict_refusal_from_the_command_line_is_one_message_and_exit_2(tmp_path, monkeypatch):
    env = dict(os.environ, RELAYCHAOS_SANDBOX="strict")
    code = ("import sys; from relaychaos.sandbox import policy; policy.landlock.abi = lambda: 3; "
            "from relaychaos.cli import main; sys.exit(main(['replay', sys.argv[1], '--out', sys.argv[2]]))")
    done = subprocess.run([sys.executable, "-c", code, str(ROOT / "scenarios" / "regressions" /
                                                          "check-then-insert-short-resends.yaml"), str(tmp_path / "o")],
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "--sandbox strict refuses" in done.stderr and "fix:" in done.stderr
    assert not (tmp_path / "o").exists(), "nothing started"


@FULL
def test_the_level_names_the_uid_the_limits_and_the_landlock_rules():
    level = probe("auto")
    assert level["uid"].startswith("a system user") and level["rlimits"]["nproc"] == Limits().nproc
    assert level["landlock"]["abi"] >= 6 and "tcp-connect" in level["landlock"]["rules"]
    assert level["missing"] == []
    assert json.dumps(level)


# -- a runtime the limits starve ---------------------------------------------------------------
@FULL
def test_a_runtime_the_data_limit_starves_gets_the_layer_its_measured_need_and_the_flag(make_stack):
    starved = Sandbox.create("auto", Limits(data_mib=16))
    try:
        stack = make_stack(REFERENCE, sandbox=starved)
        with pytest.raises(RelayError) as e:
            stack.start_relay()
        message = str(e.value)
        assert "the sandbox's rlimits starve serve" in message and "limit data_mib=16" in message
        assert "MiB of data" in message and "fix: --sandbox-limit data_mib=" in message
        stack.close()
    finally:
        starved.close()


# -- tamper evidence -----------------------------------------------------------------------------
def test_the_audit_names_each_change_made_behind_the_harness_s_back(stack, toxiproxy):
    stack.start_relay()
    stack.add_toxic("account", "latency", latency=200)
    stack.set_proxy_enabled("hub-a", False)
    stack.account.set_faults(delay_ms=50)
    assert stack.audit() == [], "what the harness itself set is no tampering"
    toxiproxy.remove_toxic(stack.proxies["account"], "latency_downstream")  # someone else's hand
    toxiproxy.set_enabled(stack.proxies["hub-a"], True)
    assert stack.audit() == ["toxic latency_downstream (latency) on proxy account was removed; the harness added it",
                             "proxy hub-a is enabled; the harness disabled it"]
    stack.heal()
    assert stack.audit() == []
