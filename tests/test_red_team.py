"""The red team: relays that attack the sandbox, graded in one batch with correct relays beside them.

Every module of tests/red_team/ is the reference relay plus one attack (evidence.py says how they are built
and how they report). The batch is graded once for the module, as an instructor grades a class: two shards
of `relaychaos grade` at once (so the attacks run while other submissions are graded), on a visible scenario
and a hidden one (a scenario file of the rubric's hidden set, in a course folder the relays must not read),
then merged into one gradebook. Each test then says one thing that must hold of that batch:

- no attack achieved anything, and each said what happened to every attempt it makes (a silent attack fails);
- the harness's outputs are as the grade left them, seconds later, and nothing was written outside the
  relays' own folders;
- the correct relays graded beside the attacks get full marks;
- nothing of the batch is left: no process, IPC object, slot home, cgroup, network namespace, veth or mount;
- the ledger traps cannot make the harness wait, and a log flood stays within the log budget;
- Ctrl-C stops a grade, and a `relaychaos run`, of attacking relays within seconds, leaving nothing.

An attack that succeeds is a finding: its test fails with the attack's own evidence line.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

import pytest

from .red_team_batch import (
    ATTACKS,
    BUDGET_S,
    CORRECT,
    DAEMON_MARK,
    LOG_MIB,
    assert_nothing_left,
    cli,
    course,
    declared,
    grade_batch,
    interrupt_after,
)

# the batch is graded once, on one worker: two batches at once would each see the other's relays as left
# behind (make test: --dist loadgroup)
pytestmark = [pytest.mark.stack, pytest.mark.xdist_group("red_team")]
NEVER_READY = {"diagnosis_root"}  # exits before /health on every first start, so that the diagnosis runs it again


@pytest.fixture(scope="module")
def batch():
    """Every attack and the correct relays, graded in one batch (red_team_batch.grade_batch)."""
    if os.geteuid() != 0:
        pytest.skip("the red team attacks the sandbox with every layer: it needs root")
    tag = f"rt{os.urandom(3).hex()}"
    base = Path(tempfile.mkdtemp(prefix=f"relaychaos-rt-batch-{tag}-", dir="/var/tmp"))
    os.chmod(base, 0o755)
    yield grade_batch(tag, base)
    if not os.environ.get("RED_TEAM_KEEP"):
        shutil.rmtree(base, ignore_errors=True)


def lines(found: list[re.Match]) -> str:
    return "\n".join(m.group(0) for m in found)


# -- the tests -------------------------------------------------------------------------------------------
def test_the_batch_was_graded(batch):
    """Every submission has its record; only diagnosis_root, whose every first start exits before /health on
    purpose, cannot be graded, and a grade exits 1 exactly when its share held it (0: all graded)."""
    assert set(batch.records) == set(ATTACKS) | set(CORRECT), sorted(batch.records)
    ungradable = {name for name, r in batch.records.items() if not r["gradable"]}
    assert ungradable <= NEVER_READY, {n: batch.records[n]["error"] for n in ungradable - NEVER_READY}
    for ran in batch.ran:
        said = ran.stdout + (ran.stderr or "")  # the shards' stderr is their stdout
        held = any(batch.subs[name].name in said for name in ungradable)
        assert ran.returncode == (1 if held else 0), ran.stdout[-3000:] + ran.stderr[-3000:]


@pytest.mark.parametrize("attack", ATTACKS)
def test_an_attack_achieves_nothing_and_says_so_for_every_attempt(batch, attack):
    found = batch.evidence.get(attack, [])
    achieved = [m for m in found if m["verdict"] == "ACHIEVED"]
    assert not achieved, f"{attack} got through the sandbox:\n{lines(achieved)}"
    bugs = [m for m in found if m["detail"].startswith("BUG")]
    assert not bugs, f"{attack}'s own code failed (an attack that cannot run proves nothing):\n{lines(bugs)}"
    said = {m["attempt"] for m in found}
    missing = [a for a in declared(attack)["ATTEMPTS"] if a not in said]
    assert not missing, (
        f"{attack} never reported {missing} (its logs: {[str(p) for p in batch.logs.get(attack, [])]}"
        f"); what it said:\n{lines(found)}"
    )


def test_no_relay_reaches_a_listener_on_the_machine(batch):
    assert not batch.canary_hits, f"the machine's wildcard listener was reached from a sandbox: {batch.canary_hits}"


def test_the_harness_outputs_are_as_the_grade_left_them_seconds_later(batch):
    changed = sorted(
        k
        for k in batch.hashes_then.keys() | batch.hashes_later.keys()
        if batch.hashes_then.get(k) != batch.hashes_later.get(k)
    )
    assert not changed, f"the grade's outputs changed after it ended: {changed}"
    marked = [
        str(p)
        for out in batch.outs + [batch.merged]
        for p in out.rglob("*")
        if p.is_file() and p.suffix in (".json", ".csv", ".html") and DAEMON_MARK in p.read_text(errors="replace")
    ]
    assert not marked, f"a relay's daemon wrote into the harness's outputs: {marked}"


def test_the_submissions_own_folders_are_unchanged(batch):
    changed = sorted(
        k
        for k in batch.class_then.keys() | batch.class_later.keys()
        if batch.class_then.get(k) != batch.class_later.get(k)
    )
    assert not changed, f"a relay changed a submission's own folder (it runs on a copy): {changed[:20]}"


def test_nothing_is_written_outside_the_relays_folders(batch):
    assert not batch.left["files"], f"files made outside the relays' folders: {batch.left['files']}"


@pytest.mark.parametrize("relay", CORRECT)
def test_a_correct_relay_graded_beside_the_attacks_gets_full_marks(batch, relay):
    record = batch.records[relay]
    broken = [(e["item"], e["set"], e["broken_in"]) for e in record["items"] if e["points"] < e["max_points"]]
    assert record["gradable"] and not record["timed_out"] and record["score"] == record["max_score"], (
        f"{relay}: {record['score']}/{record['max_score']}, error {record['error']}, broken {broken}"
    )


def test_no_process_of_the_batch_is_left(batch):
    left = {pid: p["cmdline"][:160] for pid, p in batch.left["processes"].items()}
    assert not left, f"still running after the grade: {left}"


def test_no_ipc_object_of_a_relay_is_on_the_machine(batch):
    assert not batch.left["ipc"], f"IPC objects made by relays outside their own IPC namespace: {batch.left['ipc']}"


def test_every_slot_the_batch_used_is_gone_homes_cgroups_network_and_mounts(batch):
    assert batch.slots, "the relays said which slots they ran in (RED-TEAM lines): none found"
    left = {slot: what for slot, what in batch.left["slots"].items() if what}
    assert not left, f"left by the batch's slots: {left}"
    if all(what is None for what in batch.left["slots"].values()):
        pytest.skip(f"slots {sorted(batch.slots)} were all claimed again by other runs before they could be checked")


@pytest.mark.parametrize("trap", ["ledger_trap", "ledger_lease"])
def test_a_ledger_trap_cannot_make_the_harness_wait(batch, trap):
    record, reference = batch.records[trap], batch.records["reference"]
    assert not record["timed_out"], f"{trap}'s grade ran out of its {BUDGET_S} s budget"
    assert record["execution_time_s"] <= reference["execution_time_s"] + 12, (
        f"{trap} took {record['execution_time_s']} s to grade; the reference {reference['execution_time_s']} s: the "
        f"harness waited on the relay's ledger"
    )


def test_a_log_flood_stays_within_the_submissions_log_budget(batch):
    total = sum(p.stat().st_size for p in batch.logs["log_flood"])
    assert total <= (LOG_MIB + 1) << 20, f"log_flood's logs hold {total >> 20} MiB (log_mib {LOG_MIB})"
    text = "".join(p.read_text(errors="replace")[-4000:] for p in batch.logs["log_flood"])
    assert "reached their cap" in text, "the log does not say that the flood was cut"


# -- Ctrl-C ------------------------------------------------------------------------------------------------
@pytest.fixture
def small_class(tmp_path):
    tag = f"rt{os.urandom(3).hex()}"
    base = Path(tempfile.mkdtemp(prefix=f"relaychaos-rt-ctrl-c-{tag}-", dir="/var/tmp"))
    os.chmod(base, 0o755)
    subs, rubric = course(base, ["ledger_trap", "ledger_lease"], tag)
    yield tag, base, subs, rubric
    shutil.rmtree(base, ignore_errors=True)


def test_ctrl_c_stops_a_grade_of_attacking_relays_within_seconds_leaving_nothing(small_class):
    if os.geteuid() != 0:
        pytest.skip("needs root (every layer of the sandbox)")
    tag, base, subs, rubric = small_class
    took, status, out, slots = interrupt_after(  # interrupted while grading the first of two
        cli(
            "grade",
            str(subs["ledger_trap"]),
            str(subs["ledger_lease"]),
            "--out",
            str(base / "out"),
            "--rubric",
            str(rubric),
            "--scenarios",
            "happy-path,hidden-probe",
            "--workers",
            "1",
        ),
        tag,
        armed="RED-TEAM",
        settle_s=0.5,
        timeout_s=15,
    )
    assert status == 130 and took <= 15, f"status {status} {took:.1f} s after Ctrl-C:\n{out[-3000:]}"
    assert slots, "no relay of the grade was seen running before Ctrl-C"
    assert_nothing_left(tag, slots)


def test_ctrl_c_stops_a_run_of_an_attacking_relay_within_seconds_leaving_nothing(small_class):
    if os.geteuid() != 0:
        pytest.skip("needs root (every layer of the sandbox)")
    tag, base, subs, _ = small_class
    took, status, out, slots = interrupt_after(
        cli(
            "run",
            "--relay",
            str(subs["ledger_trap"] / "relay.toml"),
            "--out",
            str(base / "run"),
            "-n",
            "0",
            "--",
            "--relaychaos-scenarios",
            f"hidden={base / 'hidden'}",
            "-k",
            "hidden-probe",
        ),
        tag,
        armed="is now a view",
        settle_s=1,
        timeout_s=15,
    )
    assert took <= 15, f"`relaychaos run` took {took:.1f} s to stop after Ctrl-C (status {status}):\n{out[-3000:]}"
    assert slots, "no relay of the run was seen running before Ctrl-C"
    assert_nothing_left(tag, slots)
