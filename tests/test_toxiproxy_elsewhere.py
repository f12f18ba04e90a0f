"""A Toxiproxy server on another host (TOXIPROXY_URL naming it): its proxies listen there, on ports it picks, the
harness and the relay connect to that host, and the proxies forward to this machine's account system and relay at
RELAYCHAOS_TOXIPROXY_UPSTREAM_HOST. The other host is a network namespace of the test's own joined to the machine
by a veth pair (10.215.N.0/30: addresses that never leave the machine), the server in it a real toxiproxy-server."""

import os
import subprocess
import sys
import time
import urllib.request

import pytest

from relaychaos.sandbox import netns
from relaychaos.stack import toxiproxy_server

from .conftest import ROOT

pytestmark = [
    pytest.mark.stack,
    pytest.mark.skipif(os.geteuid() != 0 or netns.missing() is not None, reason="a network namespace needs root"),
]


@pytest.fixture
def other_host(tmp_path):
    """(TOXIPROXY_URL, this machine's address as the other host reaches it, the server's log)."""
    n = os.getpid() % 250
    name, here, there = f"rcx{n}", f"10.215.{n}.1", f"10.215.{n}.2"
    log = tmp_path / "toxiproxy.log"

    def ip(*args):
        subprocess.run(["ip", *args], check=True, capture_output=True)

    ip("netns", "add", name)
    server = None
    try:
        ip("link", "add", f"{name}h", "type", "veth", "peer", "name", f"{name}o", "netns", name)
        ip("addr", "add", f"{here}/30", "dev", f"{name}h")
        ip("link", "set", f"{name}h", "up")
        ip("-n", name, "addr", "add", f"{there}/30", "dev", f"{name}o")
        ip("-n", name, "link", "set", f"{name}o", "up")
        ip("-n", name, "link", "set", "lo", "up")
        binary = toxiproxy_server.find_binary()
        assert binary, "no toxiproxy-server: scripts/bootstrap.sh builds it"
        with open(log, "w") as out:
            server = subprocess.Popen(
                ["ip", "netns", "exec", name, binary, "-host", "0.0.0.0", "-port", "8474"],
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, "LOG_LEVEL": "info"},
            )
        url = f"http://{there}:8474"
        for _ in range(100):
            try:
                urllib.request.urlopen(f"{url}/version", timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        yield url, here, log
    finally:
        if server is not None:
            server.kill()
            server.wait()
        subprocess.run(["ip", "netns", "del", name], capture_output=True)
        subprocess.run(["ip", "link", "del", f"{name}h"], capture_output=True)


def run(tmp_path, env, *pytest_args):
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "relaychaos.commands.cli",
            "run",
            "--out",
            str(tmp_path / "run"),
            "-n",
            "2",
            "--",
            *pytest_args,
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        env={**os.environ, "RELAYCHAOS_TOXIPROXY": "", **env},
    )


def test_a_toxiproxy_on_another_host_proxies_the_suite_there_and_the_relay_runs_without_a_network_of_its_own(
    other_host, tmp_path
):
    url, here, log = other_host
    env = {"TOXIPROXY_URL": url, "RELAYCHAOS_TOXIPROXY_UPSTREAM_HOST": here}
    done = run(
        tmp_path, env, "-k", "happy-path or latency-beyond-timeout or proxy-down-refused or kill-before-account-call"
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    there = url.split("//")[1].split(":")[0]
    assert f"not enforced: network (Toxiproxy is on another host ({there}))" in done.stdout, done.stdout[-2000:]
    said = log.read_text()
    assert "account" in said and "0.0.0.0:" in said, "the proxies listened on the other host: " + said[-2000:]
    assert f"{here}:" in said, "and forwarded to this machine's address there"


def test_a_toxiproxy_on_another_host_without_the_address_it_reaches_this_machine_by_is_said_with_the_fix(
    other_host, tmp_path
):
    url, _, log = other_host
    done = run(tmp_path, {"TOXIPROXY_URL": url, "RELAYCHAOS_TOXIPROXY_UPSTREAM_HOST": ""})
    assert done.returncode == 2, done.stdout + done.stderr
    assert "RELAYCHAOS_TOXIPROXY_UPSTREAM_HOST does not say at which address" in done.stderr
    assert "Started proxy" not in log.read_text(), "said before the server was asked for anything"


@pytest.mark.parametrize("upstream", ["0.0.0.0", "192.0.2.1", "example.invalid"])
def test_an_upstream_address_that_is_not_this_machine_s_is_refused_before_the_server_is_asked(
    other_host, tmp_path, upstream
):
    """192.0.2.1 is TEST-NET-1: no interface of this machine has it, and nothing is sent to it (a bind is tried)."""
    url, _, log = other_host
    done = run(tmp_path, {"TOXIPROXY_URL": url, "RELAYCHAOS_TOXIPROXY_UPSTREAM_HOST": upstream})
    assert done.returncode == 2 and "is not an address of this machine" in done.stderr, done.stdout + done.stderr
    assert "Started proxy" not in log.read_text()


def test_a_relay_whose_ledger_is_in_the_run_s_postgresql_is_refused_before_any_scenario(other_host, tmp_path):
    url, here, log = other_host
    keyed = ROOT / "relay_under_test" / "payments_go" / "relay.toml"
    done = subprocess.run(
        [sys.executable, "-m", "relaychaos.commands.cli", "run", "--relay", str(keyed), "--out", str(tmp_path / "run")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        env={
            **os.environ,
            "RELAYCHAOS_TOXIPROXY": "",
            "TOXIPROXY_URL": url,
            "RELAYCHAOS_TOXIPROXY_UPSTREAM_HOST": here,
        },
    )
    assert done.returncode == 2 and "keeps its ledger in PostgreSQL" in done.stderr, done.stdout + done.stderr
    assert "Started proxy" not in log.read_text()
