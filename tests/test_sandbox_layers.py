"""Each layer of the sandbox alone, every other one switched off, stops what docs/sandbox.md says it stops: no layer
leans on another to be whole. (test_sandbox_isolation.py and the red team run them all together.)

Each case is the plan of a relay's serve (the slot's, as a stack would make it) with one layer kept, and a relay's
code that tries what that layer is there to stop; the relay prints what each attempt got, and the case names the
error that layer answers with.
"""

import dataclasses
import json
import socket
import subprocess
import sys

import pytest

from relaychaos.sandbox import landlock
from relaychaos.sandbox.plan import Plan, Rules

from .test_sandbox import ROOT_ONLY

pytestmark = [ROOT_ONLY, pytest.mark.process]
BIND, CONNECT = 29999, 29998
SYSTEM_PYTHON = "/usr/bin/python3"
TRY = """
import ctypes, errno, json, os, socket, sys, threading
def attempt(name, act):
    try:
        act()
        print(json.dumps([name, "done"]))
    except OSError as e:
        print(json.dumps([name, errno.errorcode.get(e.errno, str(e.errno))]))
def call(rc):
    if rc != 0:
        raise OSError(ctypes.get_errno(), "")
libc = ctypes.CDLL(None, use_errno=True)
"""


def alone(slot, **kept) -> Plan:
    """The serve plan of the slot with only `kept` of its fields (every layer else off)."""
    sandbox, copy, ledger, tmp = slot
    full = sandbox.plan("serve", copy=copy, ledger_dir=ledger, tmp_dir=tmp, connect=(CONNECT,), bind=(BIND,))
    return Plan(cwd=full.cwd, **{name: getattr(full, name) if value is None else value for name, value in kept.items()})


def outcomes(plan: Plan, attacks: str, cwd: str, python: str = sys.executable) -> dict[str, str]:
    done = subprocess.run(plan.wrap([python, "-c", TRY + attacks]), capture_output=True, text=True, timeout=60, cwd=cwd)
    said = dict(json.loads(line) for line in done.stdout.splitlines() if line.startswith("["))
    return {**said, "log": done.stdout + done.stderr}  # init's lines come through the relay's output


def test_seccomp_alone_refuses_datagram_sockets_and_namespaces(slot):
    got = outcomes(
        alone(slot, seccomp=True),
        'attempt("udp", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM))\n'
        'attempt("userns", lambda: call(libc.unshare(0x10000000)))\n'
        'attempt("unix", lambda: socket.socket(socket.AF_UNIX))\n',
        slot[1].cwd,
    )
    assert (got["udp"], got["userns"], got["unix"]) == ("EACCES", "EPERM", "done"), got


LISTENS = """
attempt("unbound listen", lambda: socket.socket().listen())
def from_a_thread():
    attempt("unbound listen from a thread", lambda: socket.socket().listen())
t = threading.Thread(target=from_a_thread); t.start(); t.join()
attempt("connect elsewhere", lambda: socket.create_connection(("127.0.0.1", 8080), timeout=2))
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", PORT))
attempt("listen on its port", lambda: s.listen())
attempt("listen on what is no socket", lambda: call(libc.listen(0, 1)))
attempt("bind to memory it cannot read", lambda: call(libc.bind(socket.socket().fileno(), ctypes.c_void_p(8), 16)))
""".replace("PORT", str(BIND))


def test_init_alone_looks_at_every_listen_and_connect_without_landlock_or_a_uid(slot):
    """Namespaces and seccomp's init, no Landlock: init's port checks hold on their own (from any thread)."""
    got = outcomes(alone(slot, isolation=None, ports=None, seccomp=True), LISTENS, slot[1].cwd)
    assert got["unbound listen"] == got["unbound listen from a thread"] == "EACCES", got
    assert got["connect elsewhere"] == "EACCES" and got["listen on its port"] == "done", got
    assert "seccomp refused listen on 0.0.0.0:0 (an unbound socket" in got["log"], got["log"]
    assert got["listen on what is no socket"] == got["bind to memory it cannot read"] == "EACCES", got  # fails closed
    assert "seccomp refused listen() that the sandbox could not inspect" in got["log"], got["log"]
    assert "seccomp refused bind() that the sandbox could not inspect (its address could not be read" in got["log"]


@pytest.mark.skipif(landlock.abi() < 4, reason="Landlock's network rules need ABI 4 (Linux 6.7)")
def test_landlock_alone_refuses_writes_outside_its_folders_and_other_ports(slot, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    rules = Rules(abi=landlock.abi(), read_only=("/",), read_write=(str(slot[3]),), bind=(BIND,), connect=(CONNECT,))
    got = outcomes(
        alone(slot, landlock=rules),
        f'attempt("write outside", lambda: open("{outside}/x", "w"))\n'
        f'attempt("write in its tmp", lambda: open("{slot[3]}/x", "w"))\n'
        'attempt("bind elsewhere", lambda: socket.socket().bind(("127.0.0.1", 8080)))\n',
        slot[1].cwd,
    )
    assert (got["write outside"], got["write in its tmp"], got["bind elsewhere"]) == ("EACCES", "done", "EACCES"), got


def test_rlimits_alone_cap_open_files_and_file_size(slot, tmp_path):
    got = outcomes(
        alone(slot, rlimits={"nofile": 32, "fsize": 1 << 20}),
        "fds = []\n"
        'attempt("64 files", lambda: [fds.append(os.open("/dev/null", os.O_RDONLY)) for _ in range(64)])\n'
        "[os.close(fd) for fd in fds]\n"
        f'attempt("a 2 MiB file", lambda: open("{tmp_path}/big", "wb").write(bytes(2 << 20)))\n',
        slot[1].cwd,
    )
    assert (got["64 files"], got["a 2 MiB file"]) == ("EMFILE", "EFBIG"), got


def test_the_uid_alone_keeps_root_s_files_from_the_relay(slot, tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("root's")
    secret.chmod(0o600)
    tmp_path.chmod(0o755)
    code = f'attempt("read root\'s file", lambda: open("{secret}").read())\n'
    got = outcomes(alone(slot, uid=None, gid=None), code, "/", python=SYSTEM_PYTHON)  # the harness's may be root's
    assert got["read root's file"] == "EACCES", got


def test_the_namespaces_alone_hide_the_machine_s_listeners_processes_and_files(slot, tmp_path):
    with socket.create_server(("127.0.0.1", 0)) as listener:
        (tmp_path / "harness-file").write_text("x")
        got = outcomes(
            alone(slot, isolation=None),
            f'attempt("a listener of the machine", lambda: socket.create_connection(("127.0.0.1", '
            f"{listener.getsockname()[1]}), timeout=2))\n"
            'attempt("processes", lambda: print(json.dumps(["pids", sorted(p for p in os.listdir("/proc") if '
            "p.isdigit())])))\n"
            f'attempt("a file of the harness", lambda: open("{tmp_path}/harness-file"))\n',
            slot[1].cwd,
        )
    assert got["a listener of the machine"] in ("ECONNREFUSED", "ENETUNREACH", "ETIMEDOUT"), got
    assert set(got["pids"]) <= {"1", "2"} and got["a file of the harness"] == "ENOENT", got  # its init and itself


def test_every_layer_of_the_plan_is_one_of_these_cases():
    """A new field of the plan is a new layer: it gets its case here."""
    covered = {"seccomp", "isolation", "ports", "landlock", "rlimits", "uid", "gid"}
    unlayered = {"parent", "cwd", "umask", "log", "lock_delay_ms"}  # not a boundary: ties, places and budgets
    assert {f.name for f in dataclasses.fields(Plan)} == covered | unlayered
