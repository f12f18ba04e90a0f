"""The isolated command, with every layer (root): what a relay sees of the machine and what it can reach.

Its own root, processes, host name and environment; the harness, its runs and its package out of its view; a
ledger folder of regular files only; nothing of the machine but its slot's ports; and every process it starts
dying with it, in the slot's cgroups.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from relaychaos.sandbox.policy import runtime_paths

from .test_sandbox import ROOT_ONLY


def isolated(slot, code: str, port: int = 29999, lock_delay_ms: int = 0) -> subprocess.CompletedProcess:
    sandbox, copy, ledger, tmp = slot
    plan = sandbox.plan(
        "serve", copy=copy, ledger_dir=ledger, tmp_dir=tmp, connect=(29998,), bind=(port,), lock_delay_ms=lock_delay_ms
    )
    env = sandbox.env({"LEDGER_PATH": str(ledger / "ledger.sqlite")}, copy, tmp)
    return subprocess.run(
        plan.wrap([sys.executable, "-c", code]), capture_output=True, text=True, timeout=60, env=env, cwd=copy.cwd
    )


@ROOT_ONLY
@pytest.mark.process
def test_a_relay_sees_its_own_root_processes_host_name_and_environment(slot):
    done = isolated(
        slot,
        "import os, socket, json; print(json.dumps([sorted(os.listdir('/')), "
        "sorted(p for p in os.listdir('/proc') if p.isdigit()), socket.gethostname(), "
        "sorted(os.environ), os.getuid()]))",
    )
    root, pids, host, env, uid = json.loads(done.stdout.splitlines()[-1])
    _, copy, ledger, _ = slot
    bound = {Path(p).parts[1] for p in (*runtime_paths(), str(copy.root), str(ledger))}  # the tops of its binds
    assert (
        set(root)
        <= {"bin", "sbin", "lib", "lib32", "lib64", "libx32", "usr", "etc", "opt", "dev", "proc", "sys", "tmp", "run"}
        | bound
    ), root
    assert pids == ["2"] and host == "relay"  # its init (PID 1) is root's: hidden and uid == slot[0].slot.uid
    assert set(env) <= {"PATH", "HOME", "LANG", "LEDGER_PATH", "LC_CTYPE"}, env


@ROOT_ONLY
@pytest.mark.process
def test_the_harness_its_runs_and_its_package_are_not_in_the_relay_s_view(slot):
    import relaychaos

    harness = os.path.realpath(os.path.dirname(relaychaos.__file__))  # harness/, not the src/relaychaos link
    done = isolated(
        slot,
        f"import os; print([p for p in ({harness!r}, '/root/.ssh') if os.path.exists(p)], "
        f"os.listdir('/run/relaychaos'))",
    )
    assert done.stdout.strip() == f"[] ['slot-{slot[0].slot.number}']", done.stdout + done.stderr


@ROOT_ONLY
@pytest.mark.process
def test_the_ledger_folder_holds_regular_files_only(slot):
    _, _, ledger, _ = slot
    done = isolated(
        slot,
        f"""
import os
for name, make in (("fifo", lambda p: os.mkfifo(p)), ("link", lambda p: os.symlink("/etc/passwd", p)),
                   ("file", lambda p: open(p, "w").close())):
    try:
        make(os.path.join({str(ledger)!r}, name)); print(name, "made")
    except OSError as e:
        print(name, e.strerror)
""",
    )
    assert done.stdout.split("\n")[:3] == ["fifo Permission denied", "link Permission denied", "file made"], done.stdout


@ROOT_ONLY
@pytest.mark.process
def test_a_relay_reaches_nothing_of_the_machine_but_its_slot_s_ports(slot):
    """Its own loopback; the harness's end of the pair only on the harness's ports, and there Landlock's one."""
    done = isolated(
        slot,
        """
import socket
for host, port in (("127.0.0.1", 22), ("10.213.0.1", 22), ("192.0.2.1", 80), ("8.8.8.8", 53)):
    s = socket.socket(); s.settimeout(2)
    try:
        s.connect((host, port)); print("connected")
    except OSError as e:
        print(e.strerror or type(e).__name__)
""",
    )
    assert "connected" not in done.stdout and len(done.stdout.split("\n")) >= 4, done.stdout + done.stderr


@ROOT_ONLY
@pytest.mark.process
def test_a_command_s_processes_all_die_with_it_and_its_ipc_with_them(slot):
    code = (
        "import os, subprocess, sys, time; subprocess.Popen(['sleep', '300'], start_new_session=True); "
        "print('up and', 'running', flush=True); time.sleep(300)"
    )
    sandbox, copy, ledger, tmp = slot
    plan = sandbox.plan("serve", copy=copy, ledger_dir=ledger, tmp_dir=tmp, connect=(), bind=())
    from relaychaos.stack.processes import spawn

    child = spawn(
        "t",
        [sys.executable, "-c", code],
        log_path=tmp.parent / "t.log",
        cwd=copy.cwd,
        env=sandbox.env({}, copy, tmp),
        plan=plan,
    )
    try:
        for _ in range(500):
            if "up and running" in (tmp.parent / "t.log").read_text():
                break
            __import__("time").sleep(0.01)
        assert len(sandbox.cgroups.pids()) >= 3  # init, python, sleep: all in the slot's cgroups
    finally:
        child.kill()
    assert sandbox.cgroups.pids() == []
