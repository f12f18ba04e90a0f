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

import ast
import fcntl
import hashlib
import json
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from .conftest import ROOT, derived_relay

pytestmark = pytest.mark.stack

RED_TEAM = Path(__file__).with_name("red_team")
ATTACKS = sorted(p.stem for p in RED_TEAM.glob("*.py") if p.stem not in ("__init__", "evidence"))
CORRECT = ("reference", "stdlib")
# Graded first in each shard, side by side: the correct relays run while the noisiest attacks do.
NEIGHBOURS = ("fork_bomb", "reference", "fd_exhaust", "stdlib", "disk_fill")
SCENARIOS = "happy-path,hidden-probe"
BUDGET_S = 120
HIDDEN_SCENARIO = """\
name: hidden-probe
description: a scenario of the grader's hidden set (the red team's batch); two serves, a kill, the batch jobs
steps:
  - send: {guid: late-1, amount: 7}
  - start: {slot: b}
  - send: {guid: late-2, amount: 5, slot: b}
  - kill: {slot: a}
  - start: {slot: a}
  - send: {guid: late-1, amount: 7}
  - send: {guid: late-2, amount: 5, slot: b}
  - resolve: {min_age_s: 5}
  - reprocess: {max_attempts: 3}
  - purge: {retention_s: 0.1}
"""
EVIDENCE = re.compile(r"^ATTACK (?P<attack>[\w-]+)/(?P<attempt>[\w.-]+): (?P<verdict>ACHIEVED|refused)\b ?(?P<detail>.*)$")
SLOT_USER = re.compile(r"^relaychaos-relay-(\d+)$")
LOG_MIB = 64
DAEMON_MARK = "red team was here"  # what diagnosis_root's daemon appends to the harness's outputs


# -- building the class --------------------------------------------------------------------------------
def declared(attack: str) -> dict:
    """The module-level ATTEMPTS, COMMANDS and LIMITS of an attack module (read, not imported)."""
    tree = ast.parse((RED_TEAM / f"{attack}.py").read_text())
    found = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name in ("ATTEMPTS", "LIMITS"):
                found[name] = ast.literal_eval(node.value)
            elif name == "COMMANDS":  # {c: ["./x", c] for c in (...)} or a literal
                found[name] = eval(compile(ast.Expression(node.value), attack, "eval"), {})  # noqa: S307 - our file
    return found


def attack_relay(folder: Path, attack: str) -> Path:
    """The reference relay with the attack module (and evidence.py) beside it, as a submission folder."""
    meta = declared(attack)
    commands = {c: ["python", "run.py", attack, c] for c in ("serve", "resolve", "reprocess", "purge")}
    commands.update(meta.get("COMMANDS", {}))
    manifest = derived_relay(folder, "reference", name=attack, **commands)
    shutil.copy(RED_TEAM / f"{attack}.py", folder)
    shutil.copy(RED_TEAM / "evidence.py", folder)
    if meta.get("LIMITS"):
        with open(manifest, "a") as f:
            f.write("[limits]\n" + "".join(f"{k} = {v!r}\n" for k, v in meta["LIMITS"].items()))
    return manifest


def correct_relay(folder: Path, name: str) -> Path:
    if name == "stdlib":
        shutil.copytree(ROOT / "relay_under_test" / "stdlib", folder, ignore=shutil.ignore_patterns("__pycache__"))
        return folder / "relay.toml"
    return derived_relay(folder, "reference")


def course(base: Path, names: list[str], tag: str) -> tuple[dict[str, Path], Path]:
    """The class (a folder per submission, named `<tag>-NN-<name>` in grading order) and the rubric, whose
    hidden set is a folder of scenario files beside it. Everything readable by others, as a course's
    checkout usually is: only the sandbox keeps the relays out."""
    subs = {}
    order = [n for n in NEIGHBOURS if n in names] + sorted(n for n in names if n not in NEIGHBOURS)
    for i, name in enumerate(order):
        folder = base / "class" / f"{tag}-{i:02d}-{name}"
        (correct_relay if name in CORRECT else attack_relay)(folder, name)
        subs[name] = folder
    (base / "hidden").mkdir()
    (base / "hidden" / "hidden-probe.yaml").write_text(HIDDEN_SCENARIO)
    rubric = (ROOT / "harness" / "grading" / "rubric.toml").read_text()
    rubric = rubric.replace('# folder = "hidden/"', 'folder = "hidden/"')
    assert 'folder = "hidden/"' in rubric
    (base / "rubric.toml").write_text(rubric)
    for dirpath, dirnames, filenames in os.walk(base):
        os.chmod(dirpath, 0o755)
        for name in filenames:
            os.chmod(os.path.join(dirpath, name), os.stat(os.path.join(dirpath, name)).st_mode | 0o444)
    return subs, base / "rubric.toml"


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "relaychaos.cli", *args]


# -- what the machine holds ------------------------------------------------------------------------------
def relay_uids() -> dict[int, int]:
    """uid -> slot number of every sandbox user on the machine."""
    return {p.pw_uid: int(m.group(1)) for p in pwd.getpwall() if (m := SLOT_USER.match(p.pw_name))}


def processes() -> dict[int, dict]:
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            status = Path(f"/proc/{entry}/status").read_text()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            try:
                cwd = os.readlink(f"/proc/{entry}/cwd")
            except OSError:
                cwd = ""
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if fields.get("State", "").strip().startswith("Z"):
            continue
        found[int(entry)] = {"uid": int(fields["Uid"].split()[0]), "cmdline": cmdline, "cwd": cwd}
    return found


def ours(tag: str) -> dict[int, dict]:
    """Processes of this batch still alive: a relay's (its folder or command line carries the batch's tag or an
    attack's module), or the harness's for it (its command line names the batch's folder)."""
    uids = relay_uids()
    marks = [tag] + [f"run.py {a} " for a in ATTACKS] + [f"red-team-{a}" for a in ATTACKS]
    return {pid: p for pid, p in processes().items()
            if any(m in p["cmdline"] or m in p["cwd"] for m in marks) and (p["uid"] in uids or tag in p["cmdline"])}


def slot_leftovers(slot: int) -> list[str]:
    """What of sandbox slot `slot` is still on the machine (checked while holding its lock, so no one claims it
    meanwhile); None if another harness holds the slot now."""
    left = []
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
    if f"relaychaos-s{slot}" in netns:
        left.append(f"network namespace relaychaos-s{slot}")
    if subprocess.run(["ip", "link", "show", f"rc{slot}-h"], capture_output=True).returncode == 0:
        left.append(f"veth rc{slot}-h")
    if subprocess.run(["nft", "list", "table", "inet", f"relaychaos-s{slot}"], capture_output=True).returncode == 0:
        left.append(f"nftables table relaychaos-s{slot}")
    for controller in ("memory", "pids", "cpu"):
        for dirpath, dirnames, _ in os.walk(f"/sys/fs/cgroup/{controller}"):
            if f"relaychaos-s{slot}" in dirnames:
                left.append(f"cgroup {dirpath}/relaychaos-s{slot}")
            dirnames[:] = [d for d in dirnames if dirpath.count("/") < 6]
    home = Path(f"/run/relaychaos/slot-{slot}")
    if home.exists():
        left.append(f"slot home {home} holding {[str(p) for p in list(home.rglob('*'))[:5]]}")
    root = Path(f"/run/relaychaos/slot-{slot}.root")
    if root.exists() and any(root.iterdir()):
        left.append(f"view root {root} not empty")
    home_mount, root_mount = f"/run/relaychaos/slot-{slot}", f"/run/relaychaos/slot-{slot}.root"
    mounts = [m for m in (line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines())
              if m in (home_mount, root_mount) or m.startswith(home_mount + "/")]
    left += [f"mount {m}" for m in mounts]
    uid = next((u for u, n in relay_uids().items() if n == slot), None)
    left += [f"process {pid} of relaychaos-relay-{slot}: {p['cmdline'][:100]}" for pid, p in processes().items()
             if p["uid"] == uid]
    return left


def tidy(slot: int) -> None:
    """Remove what a slot left (as the harness does when it claims the slot again); under the slot's lock."""
    from relaychaos.sandbox.cgroups import CONTROLLERS

    for argv in (["ip", "netns", "del", f"relaychaos-s{slot}"], ["ip", "link", "del", f"rc{slot}-h"],
                 ["nft", "delete", "table", "inet", f"relaychaos-s{slot}"]):
        subprocess.run(argv, capture_output=True)
    for controller in CONTROLLERS:
        for dirpath, dirnames, _ in os.walk(f"/sys/fs/cgroup/{controller}", topdown=False):
            if os.path.basename(dirpath) == f"relaychaos-s{slot}":
                for pid in Path(dirpath, "cgroup.procs").read_text().split():
                    try:
                        os.kill(int(pid), signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                time.sleep(0.2)
                try:
                    os.rmdir(dirpath)
                except OSError:
                    pass
    home = f"/run/relaychaos/slot-{slot}"
    subprocess.run(["umount", "-l", home], capture_output=True)
    shutil.rmtree(home, ignore_errors=True)


def slots_left(slots: set[int], wait_s: float = 20.0, tidy_after: bool = False) -> dict[int, list[str] | None]:
    """slot_leftovers of each slot, taken under its lock (None: another harness holds it throughout); with
    tidy_after, what was found is then removed (the machine is left as the next claim would make it)."""
    found: dict[int, list[str] | None] = {}
    deadline = time.monotonic() + wait_s
    todo = set(slots)
    while todo and time.monotonic() < deadline:
        for slot in sorted(todo):
            fd = os.open(f"/run/relaychaos/slot-{slot}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            try:
                found[slot] = slot_leftovers(slot)
                if tidy_after and found[slot]:
                    tidy(slot)
            finally:
                os.close(fd)
            todo.discard(slot)
        time.sleep(0.5)
    return found | {slot: None for slot in todo}


def ipc_objects() -> list[str]:
    """SysV IPC objects of the machine's (the harness's) IPC namespace made by a relay: the red team's keys, or
    a sandbox user as creator or owner."""
    uids = relay_uids()
    left = []
    for kind, path in (("shm", "/proc/sysvipc/shm"), ("msg", "/proc/sysvipc/msg"), ("sem", "/proc/sysvipc/sem")):
        lines = Path(path).read_text().splitlines()
        header = lines[0].split()
        for line in lines[1:]:
            row = dict(zip(header, line.split()))
            key = int(row["key"]) & 0xFFFFFFFF
            if key >> 8 == 0x52544D or int(row["uid"]) in uids or int(row["cuid"]) in uids:
                left.append(f"{kind} key {key:#x} owner {row['uid']} creator {row['cuid']}")
    return left


def stray_files(base: Path, tag: str) -> list[str]:
    """Files a relay may have made on the machine outside its own folders (the red team's names)."""
    patterns = ["/tmp/red-team-*", "/dev/shm/red-team-*", "/var/tmp/red-team-*", "/work/main/runs/red-team-*",
                "/work/red-team-*", "/red-team-*", "/run/relaychaos/red-team-*", "/run/red-team-*",
                "/dev/shm/sem.red-team*", "/dev/mqueue/red-team*"]
    found = [str(p) for pattern in patterns for p in Path("/").glob(pattern.lstrip("/"))]
    found += [str(p) for p in base.rglob("red-team-*")]
    return found


def tree_hashes(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and not p.is_symlink()}


@dataclass
class Grade:
    """A graded batch: its folders, outputs, evidence and what was on the machine afterwards."""

    base: Path
    tag: str
    subs: dict[str, Path]
    outs: list[Path]
    merged: Path
    records: dict[str, dict] = field(default_factory=dict)  # name -> grade.json
    logs: dict[str, list[Path]] = field(default_factory=dict)  # name -> its relay logs
    evidence: dict[str, list[re.Match]] = field(default_factory=dict)  # attack -> its lines
    slots: set[int] = field(default_factory=set)
    wall_s: float = 0.0
    ran: list[subprocess.CompletedProcess] = field(default_factory=list)
    hashes_then: dict[str, str] = field(default_factory=dict)
    hashes_later: dict[str, str] = field(default_factory=dict)
    class_then: dict[str, str] = field(default_factory=dict)
    class_later: dict[str, str] = field(default_factory=dict)
    canary_hits: list[str] = field(default_factory=list)
    left: dict = field(default_factory=dict)


class Canary:
    """A listener on the machine's wildcard address, at a port of the harness's range: a relay must not reach it.
    It answers CANARY_BANNER and notes who connected from a sandbox's veth (10.213.*)."""

    def __init__(self):
        from relaychaos.stack.ports import lease_port

        self.port = lease_port()
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("0.0.0.0", self.port))
        self.sock.listen(64)
        self.hits: list[str] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, peer = self.sock.accept()
            except OSError:
                return
            if peer[0].startswith("10.213."):
                self.hits.append(f"{peer[0]}:{peer[1]} -> 0.0.0.0:{self.port}")
            try:
                conn.sendall(b"RED-TEAM-CANARY listening on the machine, not in a sandbox\n")
            except OSError:
                pass
            conn.close()

    def close(self) -> None:
        from relaychaos.stack.ports import release_port

        self.sock.close()
        release_port(self.port)


def read_batch(grade: Grade) -> None:
    for out in grade.outs:
        for record_path in out.glob("submissions/*/grade.json"):
            record = json.loads(record_path.read_text())
            name = next(n for n, f in grade.subs.items() if f.name == record["submission"])
            grade.records[name] = record
            grade.logs[name] = sorted(record_path.parent.glob("logs/**/*.log"))
    for name, logs in grade.logs.items():
        for log in logs:
            with open(log, errors="replace") as f:
                for line in f:
                    if line.startswith("RED-TEAM "):
                        info = json.loads(line[len("RED-TEAM "):])
                        m = re.match(r"http://10\.213\.(\d+)\.1:", info.get("account_url") or "")
                        if m:
                            grade.slots.add(int(m.group(1)))
                    elif line.startswith("ATTACK "):
                        m = EVIDENCE.match(line.rstrip("\n"))
                        if m:
                            grade.evidence.setdefault(m["attack"], []).append(m)


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    """Every attack and the correct relays graded in one batch (two shards at once), then left alone for a few
    seconds; what it left, looked at."""
    if os.geteuid() != 0:
        pytest.skip("the red team attacks the sandbox with every layer: it needs root")
    tag = f"rt{os.urandom(3).hex()}"
    base = Path(tempfile.mkdtemp(prefix=f"relaychaos-rt-batch-{tag}-", dir="/var/tmp"))
    os.chmod(base, 0o755)
    subs, rubric = course(base, ATTACKS + list(CORRECT), tag)
    outs = [base / "out-0", base / "out-1"]
    grade = Grade(base, tag, subs, outs, base / "gradebook")
    grade.class_then = tree_hashes(base / "class")
    canary = Canary()
    started = time.monotonic()
    try:
        shards = [subprocess.Popen(cli("grade", *map(str, subs.values()), "--out", str(out), "--rubric", str(rubric),
                                       "--scenarios", SCENARIOS, "--workers", "1", "--budget-s", str(BUDGET_S),
                                       "--shard", f"{i}/2"),
                                   cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                  for i, out in enumerate(outs)]
        for shard in shards:
            stdout, _ = shard.communicate(timeout=900)
            grade.ran.append(subprocess.CompletedProcess(shard.args, shard.returncode, stdout, ""))
        grade.ran.append(subprocess.run(cli("gradebook", "merge", *map(str, outs), "--out", str(grade.merged)),
                                        cwd=ROOT, capture_output=True, text=True, timeout=120))
        grade.wall_s = time.monotonic() - started
        grade.hashes_then = {f"{o.name}/{k}": v for o in outs + [grade.merged] for k, v in tree_hashes(o).items()}
        time.sleep(8)  # a daemon left behind would rewrite the outputs now
        grade.hashes_later = {f"{o.name}/{k}": v for o in outs + [grade.merged] for k, v in tree_hashes(o).items()}
        grade.class_later = tree_hashes(base / "class")
        grade.canary_hits = list(canary.hits)
    finally:
        canary.close()
    read_batch(grade)
    grade.left = {"processes": ours(tag), "ipc": ipc_objects(), "files": stray_files(base, tag),
                  "slots": slots_left(grade.slots, tidy_after=True)}
    yield grade
    if not os.environ.get("RED_TEAM_KEEP"):
        shutil.rmtree(base, ignore_errors=True)


def lines(found: list[re.Match]) -> str:
    return "\n".join(m.group(0) for m in found)


# -- the tests -------------------------------------------------------------------------------------------
def test_the_batch_was_graded(batch):
    for ran in batch.ran:
        assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    assert set(batch.records) == set(ATTACKS) | set(CORRECT), sorted(batch.records)


@pytest.mark.parametrize("attack", ATTACKS)
def test_an_attack_achieves_nothing_and_says_so_for_every_attempt(batch, attack):
    found = batch.evidence.get(attack, [])
    achieved = [m for m in found if m["verdict"] == "ACHIEVED"]
    assert not achieved, f"{attack} got through the sandbox:\n{lines(achieved)}"
    bugs = [m for m in found if m["detail"].startswith("BUG")]
    assert not bugs, f"{attack}'s own code failed (an attack that cannot run proves nothing):\n{lines(bugs)}"
    said = {m["attempt"] for m in found}
    missing = [a for a in declared(attack)["ATTEMPTS"] if a not in said]
    assert not missing, (f"{attack} never reported {missing} (its logs: {[str(p) for p in batch.logs.get(attack, [])]}"
                         f"); what it said:\n{lines(found)}")


def test_no_relay_reaches_a_listener_on_the_machine(batch):
    assert not batch.canary_hits, f"the machine's wildcard listener was reached from a sandbox: {batch.canary_hits}"


def test_the_harness_outputs_are_as_the_grade_left_them_seconds_later(batch):
    changed = sorted(k for k in batch.hashes_then.keys() | batch.hashes_later.keys()
                     if batch.hashes_then.get(k) != batch.hashes_later.get(k))
    assert not changed, f"the grade's outputs changed after it ended: {changed}"
    marked = [str(p) for out in batch.outs + [batch.merged] for p in out.rglob("*")
              if p.is_file() and p.suffix in (".json", ".csv", ".html") and DAEMON_MARK in p.read_text(errors="replace")]
    assert not marked, f"a relay's daemon wrote into the harness's outputs: {marked}"


def test_the_submissions_own_folders_are_unchanged(batch):
    changed = sorted(k for k in batch.class_then.keys() | batch.class_later.keys()
                     if batch.class_then.get(k) != batch.class_later.get(k))
    assert not changed, f"a relay changed a submission's own folder (it runs on a copy): {changed[:20]}"


def test_nothing_is_written_outside_the_relays_folders(batch):
    assert not batch.left["files"], f"files made outside the relays' folders: {batch.left['files']}"


@pytest.mark.parametrize("relay", CORRECT)
def test_a_correct_relay_graded_beside_the_attacks_gets_full_marks(batch, relay):
    record = batch.records[relay]
    broken = [(r["rule"], r["set"], r["broken_in"]) for r in record["rules"] if r["points"] < r["max_points"]]
    assert record["gradable"] and not record["timed_out"] and record["score"] == record["max_score"], \
        f"{relay}: {record['score']}/{record['max_score']}, error {record['error']}, broken {broken}"


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
        f"harness waited on the relay's ledger")


def test_a_log_flood_stays_within_the_submissions_log_budget(batch):
    total = sum(p.stat().st_size for p in batch.logs["log_flood"])
    assert total <= (LOG_MIB + 1) << 20, f"log_flood's logs hold {total >> 20} MiB (log_mib {LOG_MIB})"
    text = "".join(p.read_text(errors="replace")[-4000:] for p in batch.logs["log_flood"])
    assert "reached their cap" in text, "the log does not say that the flood was cut"


# -- Ctrl-C ------------------------------------------------------------------------------------------------
def slots_of(tag: str) -> set[int]:
    uids = relay_uids()
    return {uids[p["uid"]] for p in ours(tag).values() if p["uid"] in uids}


def relay_said(tag: str, text: str, since: float) -> bool:
    """Whether a relay log of this batch (in the pytest runs' folders, written since `since`) holds `text`."""
    for basetemp in Path(tempfile.gettempdir()).glob("pytest-of-*/pytest-*"):
        if basetemp.stat().st_mtime < since - 5:
            continue
        for log in basetemp.rglob("relay-*.log"):
            try:
                body = log.read_text(errors="replace") if log.stat().st_mtime >= since else ""
            except OSError:
                continue
            if tag in body and text in body:
                return True
    return False


def interrupt_after(argv: list[str], tag: str, armed: str, settle_s: float,
                    timeout_s: float) -> tuple[float, int, str, set[int]]:
    """Start argv in a session of its own, wait until a relay of `tag` says `armed` in its log (its trap is set),
    then settle_s more, and press Ctrl-C (SIGINT to its process group); (seconds it took to exit, its status, its
    output, the slots its relays ran in)."""
    started = time.time()
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    slots: set[int] = set()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None and not relay_said(tag, armed, started):
        time.sleep(0.3)
        slots |= slots_of(tag)
    time.sleep(settle_s)
    slots |= slots_of(tag)
    pressed = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)
    try:
        out, _ = proc.communicate(timeout=max(120.0, 4 * timeout_s))
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
    return time.monotonic() - pressed, proc.returncode, out, slots


def assert_nothing_left(tag: str, slots: set[int]) -> None:
    time.sleep(1)
    assert not ours(tag), f"still running after Ctrl-C: {[p['cmdline'][:120] for p in ours(tag).values()]}"
    left = {slot: what for slot, what in slots_left(slots, tidy_after=True).items() if what}
    assert not left, f"left after Ctrl-C: {left}"
    assert not ipc_objects()


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
        cli("grade", str(subs["ledger_trap"]), str(subs["ledger_lease"]), "--out", str(base / "out"), "--rubric",
            str(rubric), "--scenarios", "happy-path,hidden-probe", "--workers", "1"), tag, armed="RED-TEAM",
        settle_s=0.5, timeout_s=15)
    assert status == 130 and took <= 15, f"status {status} {took:.1f} s after Ctrl-C:\n{out[-3000:]}"
    assert slots, "no relay of the grade was seen running before Ctrl-C"
    assert_nothing_left(tag, slots)


def test_ctrl_c_stops_a_run_of_an_attacking_relay_within_seconds_leaving_nothing(small_class):
    if os.geteuid() != 0:
        pytest.skip("needs root (every layer of the sandbox)")
    tag, base, subs, _ = small_class
    took, status, out, slots = interrupt_after(
        cli("run", "--relay", str(subs["ledger_trap"] / "relay.toml"), "--out", str(base / "run"), "-n", "0", "--",
            "--relaychaos-scenarios", f"hidden={base / 'hidden'}", "-k", "hidden-probe"), tag,
        armed="is now a view", settle_s=1, timeout_s=15)
    assert took <= 15, f"`relaychaos run` took {took:.1f} s to stop after Ctrl-C (status {status}):\n{out[-3000:]}"
    assert slots, "no relay of the run was seen running before Ctrl-C"
    assert_nothing_left(tag, slots)
