"""A relay cannot reach around the harness: the adversarial submission, with the sandbox on and off.

tests/relays/adversary tries, in one run, every escape we know of (see its module
doc) and carries one bug: it resends UNKNOWN GUIDs. Run on `dropped-response-downstream`:

- sandbox on (auto, as root here): every attempt is refused, the bug is caught
  (`one-account-call`), nothing is found tampered with, the harness's servers still
  answer, and nothing of the relay's is left running, not even the children it
  detached from its process group;
- sandbox off: the same relay reads a sibling submission and the run folder, writes
  outside its folder, signals the harness, forks past any bound, allocates 8 GiB,
  and strips the toxics of its stack: the run ends with a `tampering` verdict. Only
  the account system's control API stays shut (its own port and token).
"""
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from relaychaos.chaos import run_and_check
from relaychaos.sandbox import landlock, slots
from relaychaos.sandbox.policy import Sandbox
from relaychaos.scenarios import ALL

from .conftest import ROOT

ADVERSARY = ROOT / "tests" / "relays" / "adversary"
SCENARIO = ALL["dropped-response-downstream"]
ONCE = ("read-sibling_secret", "read-run_secret", "read-harness_file", "write-outside-0", "write-outside-1", "write-outside-2",
        "signal-parent", "signal-harness", "fork-unbounded", "allocate-8GiB")
ALWAYS = ("strip-toxics", "account-control-api")
MARKER = "sleep 61.25"  # the adversary's fork-bomb children


@pytest.fixture
def submissions(tmp_path):
    """A class folder: the adversary beside a sibling's submission, and a run folder holding a secret."""
    root = tmp_path / "class"
    adversary = shutil.copytree(ADVERSARY, root / "adversary")
    sibling = root / "sibling"
    sibling.mkdir()
    (sibling / "secret.txt").write_text("the sibling's code\n")
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    (run / "history.jsonl").write_text("{}\n")
    (adversary / "targets.json").write_text(json.dumps({
        "sibling_secret": str(sibling / "secret.txt"), "run_secret": str(run / "history.jsonl"),
        "harness_file": str(ROOT / "pyproject.toml"),
        "write_targets": [str(sibling / "pwned.txt"), str(run / "pwned.txt"), str(adversary / "pwned.txt")],
        "harness_pid": os.getpid()}))
    yield adversary / "relay.toml", sibling, run
    subprocess.run(["pkill", "-KILL", "-f", MARKER], check=False)


def attempts(stack, within_s: float = 30.0) -> dict[str, list[str]]:
    """Each escape's outcomes ('refused' / 'SUCCEEDED' with details) as the relay logged them.

    Waits (up to within_s) until every attempt has an outcome logged, while the relay still runs:
    how long its probes take depends on how many ports the machine listens on, not on the run.
    """
    deadline = time.monotonic() + within_s
    while True:
        out: dict[str, list[str]] = {}
        for log in stack.workdir.glob("relay-*.log"):
            for name, outcome in re.findall(r"^ESCAPE (\S+): (.*)$", log.read_text(), re.M):
                out.setdefault(name, []).append(outcome)
        if set(ONCE + ALWAYS) <= set(out) or time.monotonic() > deadline:
            return out
        time.sleep(0.1)


def leftovers(uid: int | None) -> list[str]:
    found = subprocess.run(["pgrep", "-af", MARKER], capture_output=True, text=True).stdout.splitlines()
    if uid is not None:
        found += [f"pid {p} (uid {uid})" for p in slots.uid_processes(uid)]
    return found


@pytest.mark.skipif(os.geteuid() != 0 or landlock.abi() < 6,
                    reason="the full sandbox needs root and Landlock ABI 6+ (this machine: "
                           f"euid {os.geteuid()}, ABI {landlock.abi()})")
def test_with_the_sandbox_every_escape_is_refused_and_the_bug_still_caught(make_stack, submissions,
                                                                            relaychaos_sandbox, toxiproxy,
                                                                            account_system):
    manifest, sibling, run = submissions
    assert relaychaos_sandbox.separate_uid and relaychaos_sandbox.abi >= 6, relaychaos_sandbox.summary()
    stack = make_stack(manifest)
    result = run_and_check(stack, SCENARIO)
    seen = attempts(stack)
    stack.close()

    assert sorted(set(ONCE + ALWAYS) - set(seen)) == [], f"attempts missing from the relay's log: {seen}"
    succeeded = {name: o for name, outs in seen.items() for o in outs if o.startswith("SUCCEEDED")}
    assert succeeded == {}, f"escapes the sandbox let through: {succeeded}"
    rules = {v.rule for v in result.verdicts}
    assert "one-account-call" in rules, result.report()
    assert "tampering" not in rules, result.report()
    assert not (sibling / "pwned.txt").exists() and not (run / "pwned.txt").exists()
    assert toxiproxy.version() and account_system.stats() is not None  # the harness's servers are alive
    assert leftovers(relaychaos_sandbox.slot.uid) == []


def test_without_the_sandbox_the_same_relay_gets_through_and_is_judged_tampering(make_stack, submissions):
    manifest, sibling, run = submissions
    off = Sandbox.create("off")
    stack = make_stack(manifest, sandbox=off)
    try:
        result = run_and_check(stack, SCENARIO)
        seen = attempts(stack)
    finally:
        stack.close()

    outcome = {name: outs[-1].split(" ")[0] for name, outs in seen.items()}
    # What --sandbox off lets a relay do (run as the harness's own user):
    for name in ("read-sibling_secret", "read-run_secret", "write-outside-0", "write-outside-1",
                 "signal-parent", "signal-harness", "fork-unbounded", "allocate-8GiB", "strip-toxics"):
        assert outcome.get(name) == "SUCCEEDED", (name, seen.get(name))
    assert (sibling / "pwned.txt").exists() and (run / "pwned.txt").exists()
    # ... and what stays shut even then: the control API has its own port and a token.
    assert outcome.get("account-control-api") == "refused", seen.get("account-control-api")
    tampering = [v for v in result.verdicts if v.rule == "tampering"]
    assert tampering and "was removed" in tampering[0].summary, result.report()
    assert tampering[0].clause == "6.sandbox"
