"""Ports are leased: no two harness processes share one, a dead holder's go back, a busy one is never given."""

import os
import signal
import socket
import subprocess
import sys
import textwrap

import pytest

from relaychaos import ports
from relaychaos.errors import HarnessError
from relaychaos.stack.listener_owner import stranger_on

HOLD = textwrap.dedent("""
    import sys, time
    from relaychaos.ports import lease_port
    print(" ".join(str(lease_port()) for _ in range(int(sys.argv[1]))), flush=True)
    time.sleep(60)
""")


@pytest.fixture
def own_lock(tmp_path, monkeypatch):
    """A lock file of this test's own, so that the machine's other harness runs neither see nor disturb it.

    The tests lease from small ranges below the harness's own (20000-29999), where no stack of a
    concurrent run listens.
    """
    monkeypatch.setenv("RELAYCHAOS_PORT_LOCK", str(tmp_path / "ports.lock"))
    monkeypatch.setattr(ports, "_fd", None)
    monkeypatch.setattr(ports, "_fd_pid", None)
    monkeypatch.setattr(ports, "_held", set())


def holder(n: int) -> tuple[subprocess.Popen, set[int]]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(n)], stdout=subprocess.PIPE, text=True, env=os.environ.copy()
    )
    return proc, {int(p) for p in proc.stdout.readline().split()}


def test_leases_come_from_outside_the_kernels_ephemeral_range():
    low, high = ports.port_range()
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        e_low, e_high = (int(x) for x in f.read().split())
    assert high < e_low or low > e_high


@pytest.mark.process
def test_two_processes_are_never_given_the_same_port(own_lock, monkeypatch):
    monkeypatch.setenv("RELAYCHAOS_PORTS", "15000-15019")
    proc, theirs = holder(10)
    try:
        ours = {ports.lease_port() for _ in range(10)}
        assert len(theirs) == 10 and len(ours) == 10 and not ours & theirs
        with pytest.raises(HarnessError, match="no free loopback port in 15000-15019"):
            ports.lease_port()
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.process
def test_the_ports_of_a_killed_holder_are_leased_again(own_lock, monkeypatch):
    monkeypatch.setenv("RELAYCHAOS_PORTS", "15100-15102")
    proc, theirs = holder(3)
    with pytest.raises(HarnessError):
        ports.lease_port()
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert {ports.lease_port() for _ in range(3)} == theirs


def test_a_released_port_can_be_leased_again_and_a_held_one_cannot(own_lock, monkeypatch):
    monkeypatch.setenv("RELAYCHAOS_PORTS", "15200-15201")
    first, second = ports.lease_port(), ports.lease_port()
    assert ports.held_ports() == {first, second}
    ports.release_port(first)
    assert ports.lease_port() == first


def test_a_port_something_listens_on_is_not_leased(own_lock, monkeypatch):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 15300))
        busy.listen()
        monkeypatch.setenv("RELAYCHAOS_PORTS", "15300-15301")
        assert ports.lease_port() == 15301


@pytest.mark.parametrize("text", ["20000", "b-c", "30000-20000", "80-90"])
def test_a_bad_port_range_says_how_to_write_one(monkeypatch, text):
    monkeypatch.setenv("RELAYCHAOS_PORTS", text)
    with pytest.raises(HarnessError, match="LOW-HIGH"):
        ports.port_range()


@pytest.mark.process
def test_a_listener_of_another_process_is_named_as_a_stranger():
    code = (
        "import socket, sys, time; s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(); "
        "print(s.getsockname()[1], flush=True); time.sleep(60)"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    other = subprocess.Popen(["sleep", "60"])  # the process the harness meant to start: not proc's kin
    try:
        port = int(proc.stdout.readline())
        assert stranger_on(port, proc.pid) is None
        assert (stranger_on(port, other.pid) or "").startswith(f"pid {proc.pid} (python")
    finally:
        for p in (proc, other):
            p.kill()
            p.wait()
