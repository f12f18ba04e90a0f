"""A Toxiproxy server on another host (TOXIPROXY_URL naming it): its proxies listen there, on ports it picks, the
harness and the relay connect to that host, and the proxies forward to this machine's account system and relay at
RELAYCHAOS_TOXIPROXY_UPSTREAM_HOST. The other host is a network namespace of the test's own joined to the machine
by a veth pair (10.215.N.0/30: addresses that never leave the machine), the server in it a real toxiproxy-server."""

import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from relaychaos.errors import SandboxError
from relaychaos.ports import lease_port, port_range
from relaychaos.sandbox import netns
from relaychaos.sandbox.uid_filter import UidFilter
from relaychaos.stack import toxiproxy_server

from .conftest import ROOT

pytestmark = [
    pytest.mark.stack,
    pytest.mark.skipif(os.geteuid() != 0 or netns.missing() is not None, reason="a network namespace needs root"),
]


@dataclass(frozen=True)
class OtherHost:
    url: str  # TOXIPROXY_URL
    here: str  # this machine's address as the other host reaches it
    there: str  # the other host's address, where the server listens
    third: str  # another address of that network, where no Toxiproxy is: what a relay must not reach
    also: str  # another address of this machine on that network, where nothing of the harness listens
    netns: str
    log: Path  # the server's


@pytest.fixture
def other_host(tmp_path):
    n = os.getpid() % 250
    name, here, there, third, also = f"rcx{n}", f"10.215.{n}.1", f"10.215.{n}.2", f"10.215.{n}.3", f"10.215.{n}.4"
    log = tmp_path / "toxiproxy.log"

    def ip(*args):
        subprocess.run(["ip", *args], check=True, capture_output=True)

    ip("netns", "add", name)
    server = None
    try:
        ip("link", "add", f"{name}h", "type", "veth", "peer", "name", f"{name}o", "netns", name)
        for address in (here, also):
            ip("addr", "add", f"{address}/29", "dev", f"{name}h")
        ip("link", "set", f"{name}h", "up")
        for address in (there, third):
            ip("-n", name, "addr", "add", f"{address}/29", "dev", f"{name}o")
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
        yield OtherHost(url, here, there, third, also, name, log)
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
    url, here, log = other_host.url, other_host.here, other_host.log
    env = {"TOXIPROXY_URL": url, "RELAYCHAOS_TOXIPROXY_UPSTREAM_HOST": here}
    done = run(
        tmp_path, env, "-k", "happy-path or latency-beyond-timeout or proxy-down-refused or kill-before-account-call"
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    said = f"not enforced: network (Toxiproxy is on another host ({other_host.there}); nftables hold its uid to the"
    assert said in done.stdout, done.stdout[-2000:]
    said = log.read_text()
    assert "account" in said and "0.0.0.0:" in said, "the proxies listened on the other host: " + said[-2000:]
    assert f"{here}:" in said, "and forwarded to this machine's address there"


def test_a_toxiproxy_on_another_host_without_the_address_it_reaches_this_machine_by_is_said_with_the_fix(
    other_host, tmp_path
):
    url, log = other_host.url, other_host.log
    done = run(tmp_path, {"TOXIPROXY_URL": url, "RELAYCHAOS_TOXIPROXY_UPSTREAM_HOST": ""})
    assert done.returncode == 2, done.stdout + done.stderr
    assert "RELAYCHAOS_TOXIPROXY_UPSTREAM_HOST does not say at which address" in done.stderr
    assert "Started proxy" not in log.read_text(), "said before the server was asked for anything"


@pytest.mark.parametrize("upstream", ["0.0.0.0", "192.0.2.1", "example.invalid"])
def test_an_upstream_address_that_is_not_this_machine_s_is_refused_before_the_server_is_asked(
    other_host, tmp_path, upstream
):
    """192.0.2.1 is TEST-NET-1: no interface of this machine has it, and nothing is sent to it (a bind is tried)."""
    url, log = other_host.url, other_host.log
    done = run(tmp_path, {"TOXIPROXY_URL": url, "RELAYCHAOS_TOXIPROXY_UPSTREAM_HOST": upstream})
    assert done.returncode == 2 and "is not an address of this machine" in done.stderr, done.stdout + done.stderr
    assert "Started proxy" not in log.read_text()


def test_a_relay_whose_ledger_is_in_the_run_s_postgresql_is_refused_before_any_scenario(other_host, tmp_path):
    url, here, log = other_host.url, other_host.here, other_host.log
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


# What a process says of one connection it tries: connected, or refused with the error
CONNECT = """
import socket, sys
host, port, source, wait = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
s = socket.socket()
s.settimeout(wait)
try:
    if source:
        s.bind((source, 0))
    s.connect((host, port))
    print("connected")
except OSError as e:
    print(f"refused {e}")
"""
# A listener on every port of one address (nftables sends them all to one): it accepts whatever comes
LISTEN_ALL = """
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], 9999))
s.listen(64)
print("ready", flush=True)
while True:
    s.accept()[0].close()
"""
# A listener on one address and port: it accepts whatever comes
LISTEN_ONE = LISTEN_ALL.replace("9999", "int(sys.argv[2])")
UID = 64999  # no user of this machine: the slot's uid stand-in


def as_user(uid=None, netns=None):
    return (["ip", "netns", "exec", netns] if netns else []) + (
        ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"] if uid is not None else []
    )


def connect(host, port, *, uid=None, netns=None, source="", wait=3.0):
    argv = [*as_user(uid, netns), sys.executable, "-c", CONNECT, host, str(port), source, str(wait)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=30).stdout.strip() or "no answer"


@contextmanager
def listening_everywhere(other, address):
    """Every TCP port of `address` in the other host's namespace answers (accepts, then closes)."""
    table = f"rcx{address.replace('.', '_')}"
    rule = f"ip daddr {address} meta l4proto tcp dnat to {address}:9999"
    rules = f"table ip {table} {{\n chain pre {{\n  type nat hook prerouting priority dstnat;\n  {rule}\n }}\n}}\n"
    subprocess.run(["ip", "netns", "exec", other.netns, "nft", "-f", "-"], input=rules, text=True, check=True)
    proc = subprocess.Popen(
        ["ip", "netns", "exec", other.netns, sys.executable, "-c", LISTEN_ALL, address],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout.readline().strip() == "ready"
        yield
    finally:
        proc.kill()
        proc.wait()
        subprocess.run(["ip", "netns", "exec", other.netns, "nft", "delete", "table", "ip", table], capture_output=True)


def test_beside_a_toxiproxy_elsewhere_the_relay_uid_reaches_its_proxies_there_alone_and_only_that_host_reaches_us(
    other_host,
):
    o, low, high = other_host, *port_range()
    gate = UidFilter.create(900 + os.getpid() % 50, uid=UID, toxiproxy=(o.there,), upstream=o.here, ports=(low, high))
    try:
        with listening_everywhere(o, o.there), listening_everywhere(o, o.third):
            assert connect(o.there, 41000, uid=UID).startswith("refused"), "no proxy of the slot's there yet"
            gate.allow(41000)
            assert connect(o.there, 41000, uid=UID) == "connected", "an account proxy of the slot's"
            assert connect(o.third, 41000, uid=UID).startswith("refused"), "the same port on another host"
            assert connect(o.there, 41001, uid=UID).startswith("refused"), "another port of the Toxiproxy host"
            assert connect(o.third, 41000) == "connected", "another uid (the harness's) is not held"
            gate.forbid(41000)
            assert connect(o.there, 41000, uid=UID).startswith("refused"), "the proxy is gone"
        with socket.create_server((o.here, lease_port())) as there, socket.create_server(("127.0.0.1", 0)) as local:
            port = there.getsockname()[1]
            assert connect(o.here, port, netns=o.netns, source=o.there) == "connected", "from the Toxiproxy host"
            assert connect(o.here, port, netns=o.netns, source=o.third).startswith("refused"), "from another host"
            assert connect(o.here, port) == "connected", "from this machine"
            assert connect("127.0.0.1", local.getsockname()[1]) == "connected"
            assert connect("127.0.0.1", local.getsockname()[1], uid=UID).startswith("refused"), "its uid, on loopback"
        # a listener of the uid on another address of this machine: a third host gets no answer through it
        port = lease_port()
        listener = subprocess.Popen(
            [*as_user(UID), sys.executable, "-c", LISTEN_ONE, o.also, str(port)], stdout=subprocess.PIPE, text=True
        )
        try:
            assert listener.stdout.readline().strip() == "ready"
            assert connect(o.also, port) == "connected", "this machine reaches it"
            assert connect(o.also, port, netns=o.netns, source=o.third, wait=1).startswith("refused"), "a third host"
        finally:
            listener.kill()
            listener.wait()
    finally:
        gate.destroy()
    assert subprocess.run(["nft", "list", "table", "inet", gate.name], capture_output=True).returncode != 0


# A relay that, at each serve start, connects to another host of the Toxiproxy host's network on the account proxy's
# port (Landlock allows that port on any address), then serves as the reference does
PROBE = """
import os, socket, sys, urllib.parse
port = urllib.parse.urlsplit(os.environ["ACCOUNT_URL"]).port
try:
    socket.create_connection((sys.argv[1], port), timeout=3).close()
    print(f"PROBE {sys.argv[1]}:{port} ACHIEVED", file=sys.stderr, flush=True)
except OSError as e:
    print(f"PROBE {sys.argv[1]}:{port} refused {e}", file=sys.stderr, flush=True)
os.execvp(sys.executable, [sys.executable, "run.py", "reference", "serve"])
"""


def test_beside_a_toxiproxy_elsewhere_a_relay_cannot_send_its_ledger_to_another_host_on_the_account_proxy_s_port(
    other_host, tmp_path
):
    o, relays = other_host, ROOT / "relay_under_test"
    hostile = tmp_path / "hostile"
    shutil.copytree(relays / "reference", hostile / "reference", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("__init__.py", "run.py"):
        shutil.copy(relays / name, hostile / name)
    (hostile / "probe.py").write_text(PROBE)
    (hostile / "relay.toml").write_text(
        (relays / "reference" / "relay.toml")
        .read_text()
        .replace('name = "reference"', 'name = "hostile"')
        .replace('root = ".."', 'root = "."')
        .replace(
            'serve     = ["python", "run.py", "reference", "serve"]', f'serve = ["python", "probe.py", "{o.third}"]'
        )
    )
    with listening_everywhere(o, o.third):
        assert connect(o.third, 41000) == "connected", "the other host answers on every port"
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "relaychaos.commands.cli",
                "run",
                "--relay",
                str(hostile / "relay.toml"),
                "--out",
                str(tmp_path / "run"),
                "-n",
                "0",
                "--",
                "-k",
                "happy-path",
            ],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=300,
            env={
                **os.environ,
                "RELAYCHAOS_TOXIPROXY": "",
                "TOXIPROXY_URL": o.url,
                "RELAYCHAOS_TOXIPROXY_UPSTREAM_HOST": o.here,
            },
        )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    ruleset = subprocess.run(["nft", "list", "ruleset"], capture_output=True, text=True).stdout
    held = re.search(rf"daddr {re.escape(o.there)}\b", ruleset)
    assert not held, "the rules went with the run (other runs' tables hold other hosts)"
    said = [line for log in (tmp_path / "run").rglob("*.log") for line in log.read_text(errors="replace").splitlines()]
    probes = [line for line in said if "PROBE " in line]
    assert probes and all(" refused " in line for line in probes), probes or said[-40:]


@pytest.mark.parametrize(
    "toxiproxy, upstream",
    [(("10.215.9.2",), "10.215.9.1"), (("10.215.9.2", "fd00:215::2"), "10.215.9.1"), (("fd00:215::2",), "fd00:215::1")],
)
def test_the_uid_rules_are_nftables_rules_for_a_toxiproxy_host_of_either_family_or_both(toxiproxy, upstream):
    rules = UidFilter(999, UID, toxiproxy, upstream, port_range()).rules()
    checked = subprocess.run(["nft", "-c", "-f", "-"], input=rules, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr + rules


def test_a_toxiproxy_host_of_another_family_than_the_upstream_address_is_said_with_the_fix():
    with pytest.raises(SandboxError) as e:
        UidFilter.create(999, uid=UID, toxiproxy=("fd00:215::2",), upstream="10.215.9.1", ports=port_range())
    assert "not of the family of RELAYCHAOS_TOXIPROXY_UPSTREAM_HOST=10.215.9.1" in str(e.value)
    assert "both IPv4, or both IPv6" in e.value.fix
