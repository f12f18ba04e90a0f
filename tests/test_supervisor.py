"""The supervisor runs any relay.toml as the contract says, explains every failure, and leaves nothing behind."""

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time

import pytest

from relaychaos.errors import RelayError
from relaychaos.sandbox.policy import Sandbox
from relaychaos.stack import manifest
from relaychaos.stack.supervisor import Supervisor

from .conftest import BASE, REFERENCE

pytestmark = pytest.mark.stack  # real relay processes
OFF = Sandbox.create("off")  # the supervisor's own behaviour, on the bundled relays; tests/test_sandbox.py has the rest


def supervisor(path, tmp_path):
    return Supervisor(
        manifest.load(path),
        workdir=tmp_path / "run",
        account_url="http://127.0.0.1:9",
        account_timeout_ms=300,
        sandbox=OFF,
    )


def gone(pid: int, within_s: float = 5.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.02)
    return False


def test_serve_gets_the_contract_environment_and_this_python(write_manifest, tmp_path):
    script = (
        "import os, sys, json; from aiohttp import web\n"
        "keys = ['RELAY_HOST','RELAY_PORT','ACCOUNT_URL','LEDGER_PATH','ACCOUNT_TIMEOUT_MS']\n"
        "open('env.json','w').write(json.dumps({k: os.environ[k] for k in keys} | {'py': sys.executable}))\n"
        "app = web.Application(); app.router.add_get('/health', lambda r: web.Response(text='ok'))\n"
        "web.run_app(app, host=os.environ['RELAY_HOST'], port=int(os.environ['RELAY_PORT']))\n"
    )
    path = write_manifest(["python", "-c", script])
    sup = supervisor(path, tmp_path)
    try:
        relay = sup.start()
        import json

        env = json.loads((path.parent / "env.json").read_text())
        assert env["RELAY_HOST"] == "127.0.0.1" and env["RELAY_PORT"] == str(relay.port)
        assert env["ACCOUNT_URL"] == "http://127.0.0.1:9" and env["ACCOUNT_TIMEOUT_MS"] == "300"
        assert env["LEDGER_PATH"] == str(tmp_path / "run" / "ledger.sqlite")
        assert os.path.dirname(env["py"]) == os.path.dirname(sys.executable)
    finally:
        sup.close()


def test_a_batch_command_gets_every_variable_of_the_contract_a_relay_port_too(write_manifest, tmp_path):
    """Section 1: every command gets RELAY_HOST and RELAY_PORT; a batch command that parses them must not crash."""
    script = (
        "import os, json\nkeys = ['RELAY_HOST','RELAY_PORT','ACCOUNT_URL','LEDGER_PATH','ACCOUNT_TIMEOUT_MS']\n"
        "open('batch-env.json','w').write(json.dumps({k: os.environ[k] for k in keys}))\n"
        "int(os.environ['RELAY_PORT'])\n"
    )
    path = write_manifest(["true"], resolve=["python", "-c", script])
    sup = supervisor(path, tmp_path)
    try:
        assert sup.resolve(1.0).returncode == 0
        import json

        env = json.loads((path.parent / "batch-env.json").read_text())
        assert env["RELAY_HOST"] == "127.0.0.1" and 0 < int(env["RELAY_PORT"]) < 65536
        assert env["ACCOUNT_URL"] == "http://127.0.0.1:9" and env["ACCOUNT_TIMEOUT_MS"] == "300"
    finally:
        sup.close()


def test_a_command_that_does_not_exist_names_the_manifest_and_the_command(write_manifest, tmp_path):
    sup = supervisor(write_manifest(["no-such-relay-binary", "serve"]), tmp_path)
    with pytest.raises(RelayError) as e:
        sup.start()
    text = str(e.value)
    assert "[commands].serve" in text and "no-such-relay-binary" in text and "relay.toml" in text
    assert "fix:" in text


def test_a_relay_that_exits_at_start_is_reported_with_its_last_log_lines(write_manifest, tmp_path):
    path = write_manifest(["python", "-c", "import sys; print('cannot bind: address in use'); sys.exit(3)"])
    with pytest.raises(RelayError) as e:
        supervisor(path, tmp_path).start()
    assert "exited with status 3" in str(e.value) and "cannot bind: address in use" in str(e.value)


def test_a_relay_that_never_answers_health_is_killed_at_its_ready_timeout(write_manifest, tmp_path):
    path = write_manifest(
        ["python", "-c", "import os, time; open('pid','w').write(str(os.getpid())); time.sleep(600)"],
        ready_timeout_s=0.5,
    )
    t0 = time.monotonic()
    with pytest.raises(RelayError) as e:
        supervisor(path, tmp_path).start()
    assert time.monotonic() - t0 < 3
    assert "within 0.5 s" in str(e.value) and "ready_timeout_s" in str(e.value)
    assert gone(int((path.parent / "pid").read_text()))


def test_a_busy_port_is_named_before_anything_starts(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        with pytest.raises(RelayError, match=r"port \d+ on 127.0.0.1 is busy"):
            supervisor(REFERENCE, tmp_path).start(port=busy.getsockname()[1])


def test_kill_is_sigkill_of_the_whole_group_and_restart_uses_the_same_ledger(write_manifest, tmp_path):
    script = (
        "import os, subprocess, sys; from aiohttp import web\n"
        "kid = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
        "open('kid','w').write(str(kid.pid))\n"
        "app = web.Application(); app.router.add_get('/health', lambda r: web.Response(text='ok'))\n"
        "web.run_app(app, host=os.environ['RELAY_HOST'], port=int(os.environ['RELAY_PORT']))\n"
    )
    path = write_manifest(["python", "-c", script])
    sup = supervisor(path, tmp_path)
    relay = sup.start()
    grandchild = int((path.parent / "kid").read_text())
    sup.kill()
    assert relay.child.popen.returncode == -signal.SIGKILL
    assert gone(relay.child.pid) and gone(grandchild), "the relay's own children die with it"
    again = sup.restart()
    assert again.child.alive() and sup.contract_env()["LEDGER_PATH"] == str(sup.ledger_path)
    sup.close()
    assert gone(again.child.pid)


def test_two_serve_processes_run_on_one_ledger(tmp_path):
    sup = supervisor(REFERENCE, tmp_path)
    try:
        a, b = sup.start("a"), sup.start("b")
        assert a.port != b.port and a.child.alive() and b.child.alive()
        with pytest.raises(RelayError, match="already running"):
            sup.start("a")
    finally:
        sup.close()


def test_batch_commands_get_their_arguments_and_a_time_limit(write_manifest, tmp_path):
    path = write_manifest(
        ["true"],
        resolve=["python", "-c", "import sys; print(sys.argv[1:])"],
        purge=["python", "-c", "import time; time.sleep(600)"],
    )
    sup = supervisor(path, tmp_path)
    done = sup.resolve(min_age_s=2.5)
    assert done.ok and "['--min-age', '2.5']" in done.tail()
    hung = sup.purge(retention_s=60, timeout_s=0.5)
    assert hung.returncode is None and hung.timed_out and not hung.ok
    assert 0.5 <= hung.duration_s < 5


def test_no_relay_outlives_a_harness_that_is_killed(tmp_path):
    """Even SIGKILL of the harness itself takes its relays down (parent-death signal)."""
    script = textwrap.dedent(f"""
        import pathlib, sys, time
        from relaychaos.stack import manifest
        from relaychaos.sandbox.policy import Sandbox
        from relaychaos.stack.supervisor import Supervisor
        sup = Supervisor(manifest.load({str(BASE)!r}), workdir=pathlib.Path({str(tmp_path)!r}),
                         account_url="http://127.0.0.1:9", account_timeout_ms=300, sandbox=Sandbox.create("off"))
        print(sup.start().child.pid, flush=True)
        time.sleep(600)
    """)
    harness = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    relay_pid = int(harness.stdout.readline())
    harness.kill()
    harness.wait()
    assert gone(relay_pid)


def test_a_serve_that_leaves_its_port_to_a_detached_process_is_refused(write_manifest, tmp_path):
    daemon = (
        "import os; from aiohttp import web\n"
        "open('daemon.pid', 'w').write(str(os.getpid()))\n"
        "app = web.Application(); app.router.add_get('/health', lambda r: web.Response(text='ok'))\n"
        "web.run_app(app, host='127.0.0.1', port=int(os.environ['RELAY_PORT']))\n"
    )
    path = write_manifest(["sh", "-c", f"setsid -f {sys.executable} daemon.py; exec sleep 60"])
    (path.parent / "daemon.py").write_text(daemon)
    sup = supervisor(path, tmp_path)
    try:
        with pytest.raises(RelayError) as e:
            sup.start()
        pid = int((path.parent / "daemon.pid").read_text())
        assert "did not take port" in str(e.value) and f"pid {pid} (python" in str(e.value)
    finally:
        sup.close()
        if (path.parent / "daemon.pid").exists():
            os.kill(int((path.parent / "daemon.pid").read_text()), signal.SIGKILL)
