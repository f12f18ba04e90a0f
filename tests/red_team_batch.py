"""The red team's batch: the class it grades, how it grades it, and how it reads what the relays said.

Every module of tests/red_team/ is the reference relay plus one attack (red_team/evidence.py says how they are
built and how they report). `grade_batch` grades them all with the correct relays in one batch, as an instructor
grades a class: two shards of `relaychaos grade` at once (so the attacks run while other submissions are graded),
on a visible scenario and a hidden one (a scenario file of the rubric's hidden set, in a course folder the relays
must not read), then merged into one gradebook; tests/test_red_team.py says what must hold of it.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import json
import os
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

from .conftest import ROOT, derived_relay
from .leftovers import ipc_objects, processes, relay_uids, slots_left

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
EVIDENCE = re.compile(
    r"^ATTACK (?P<attack>[\w-]+)/(?P<attempt>[\w.-]+): (?P<verdict>ACHIEVED|refused)\b ?(?P<detail>.*)$"
)
LOG_MIB = 64
DAEMON_MARK = "red team was here"  # what diagnosis_root's daemon appends to the harness's outputs


# -- building the class --------------------------------------------------------------------------------------
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
    for argv in meta.get("COMMANDS", {}).values():  # a program the attack's serve makes (argv0_swap's ./rt-go) is
        program = folder / argv[0]  # there before it starts, as a manifest's programs must be (else: exit 2)
        if not program.exists():
            program.write_text("#!/bin/sh\n# replaced by the attack's serve as it runs\nexit 1\n")
            program.chmod(0o755)
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
    for dirpath, _dirnames, filenames in os.walk(base):
        os.chmod(dirpath, 0o755)
        for name in filenames:
            os.chmod(os.path.join(dirpath, name), os.stat(os.path.join(dirpath, name)).st_mode | 0o444)
    return subs, base / "rubric.toml"


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "relaychaos.commands.cli", *args]


# -- what the machine holds ------------------------------------------------------------------------------
def ours(tag: str) -> dict[int, dict]:
    """Processes of this batch still alive: a relay's (its folder or command line carries the batch's tag or an
    attack's module), or the harness's for it (its command line names the batch's folder)."""
    uids = relay_uids()
    marks = [tag] + [f"run.py {a} " for a in ATTACKS] + [f"red-team-{a}" for a in ATTACKS]
    return {
        pid: p
        for pid, p in processes().items()
        if any(m in p["cmdline"] or m in p["cwd"] for m in marks) and (p["uid"] in uids or tag in p["cmdline"])
    }


def stray_files(base: Path, tag: str) -> list[str]:
    """Files a relay may have made on the machine outside its own folders (the red team's names)."""
    patterns = [
        "/tmp/red-team-*",
        "/dev/shm/red-team-*",
        "/var/tmp/red-team-*",
        "/work/main/runs/red-team-*",
        "/work/red-team-*",
        "/red-team-*",
        "/run/relaychaos/red-team-*",
        "/run/red-team-*",
        "/dev/shm/sem.red-team*",
        "/dev/mqueue/red-team*",
    ]
    found = [str(p) for pattern in patterns for p in Path("/").glob(pattern.lstrip("/"))]
    found += [str(p) for p in base.rglob("red-team-*")]
    return found


def tree_hashes(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


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
        from relaychaos.ports import lease_port

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
            with contextlib.suppress(OSError):
                conn.sendall(b"RED-TEAM-CANARY listening on the machine, not in a sandbox\n")
            conn.close()

    def close(self) -> None:
        from relaychaos.ports import release_port

        self.sock.close()
        release_port(self.port)


def read_batch(grade: Grade) -> None:
    for out in grade.outs:
        for record_path in out.glob("submissions/*/grade.json"):
            record = json.loads(record_path.read_text())
            name = next(n for n, f in grade.subs.items() if f.name == record["submission"])
            grade.records[name] = record
            grade.logs[name] = sorted(record_path.parent.glob("logs/**/*.log"))
    for logs in grade.logs.values():
        for log in logs:
            with open(log, errors="replace") as f:
                for line in f:
                    if line.startswith("RED-TEAM "):
                        info = json.loads(line[len("RED-TEAM ") :])
                        m = re.match(r"http://10\.213\.(\d+)\.1:", info.get("account_url") or "")
                        if m:
                            grade.slots.add(int(m.group(1)))
                    elif line.startswith("ATTACK "):
                        m = EVIDENCE.match(line.rstrip("\n"))
                        if m:
                            grade.evidence.setdefault(m["attack"], []).append(m)


def grade_batch(tag: str, base: Path) -> Grade:
    """Every attack and the correct relays graded in one batch (two shards at once), then left alone for a few
    seconds; what it left, looked at."""
    subs, rubric = course(base, ATTACKS + list(CORRECT), tag)
    outs = [base / "out-0", base / "out-1"]
    grade = Grade(base, tag, subs, outs, base / "gradebook")
    grade.class_then = tree_hashes(base / "class")
    canary = Canary()
    started = time.monotonic()
    try:
        shards = [
            subprocess.Popen(
                cli(
                    "grade",
                    *map(str, subs.values()),
                    "--out",
                    str(out),
                    "--rubric",
                    str(rubric),
                    "--scenarios",
                    SCENARIOS,
                    "--workers",
                    "1",
                    "--budget-s",
                    str(BUDGET_S),
                    "--shard",
                    f"{i}/2",
                ),
                cwd=ROOT,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            for i, out in enumerate(outs)
        ]
        for shard in shards:
            stdout, _ = shard.communicate(timeout=900)
            grade.ran.append(subprocess.CompletedProcess(shard.args, shard.returncode, stdout, ""))
        grade.ran.append(
            subprocess.run(
                cli("gradebook", "merge", *map(str, outs), "--out", str(grade.merged)),
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=120,
            )
        )
        grade.wall_s = time.monotonic() - started
        grade.hashes_then = {f"{o.name}/{k}": v for o in outs + [grade.merged] for k, v in tree_hashes(o).items()}
        time.sleep(8)  # a daemon left behind would rewrite the outputs now
        grade.hashes_later = {f"{o.name}/{k}": v for o in outs + [grade.merged] for k, v in tree_hashes(o).items()}
        grade.class_later = tree_hashes(base / "class")
        grade.canary_hits = list(canary.hits)
    finally:
        canary.close()
    read_batch(grade)
    grade.left = {
        "processes": ours(tag),
        "ipc": ipc_objects(),
        "files": stray_files(base, tag),
        "slots": slots_left(grade.slots, tidy_after=True),
    }
    return grade


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


def interrupt_after(
    argv: list[str], tag: str, armed: str, settle_s: float, timeout_s: float
) -> tuple[float, int, str, set[int]]:
    """Start argv in a session of its own, wait until a relay of `tag` says `armed` in its log (its trap is set),
    then settle_s more, and press Ctrl-C (SIGINT to its process group); (seconds it took to exit, its status, its
    output, the slots its relays ran in)."""
    started = time.time()
    proc = subprocess.Popen(
        argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
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
