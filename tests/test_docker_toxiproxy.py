"""The Docker route, verified: Toxiproxy in a container forwards and delays a real TCP service, runs a
named scenario with the reference relay, and leaves no container behind, even when it fails to start.

The end-to-end tests need a Docker daemon and a Toxiproxy image in it; where there is none they
skip, saying so. `bash scripts/docker_toxiproxy.sh` (as root) sets both up on a Debian machine.
"""

import os
import socket
import socketserver
import subprocess
import sys
import threading
import time

import pytest

from relaychaos.errors import ToxiproxyError
from relaychaos.run.chaos import run_and_check
from relaychaos.sandbox.policy import Sandbox
from relaychaos.scenarios import ALL
from relaychaos.stack import manifest, toxiproxy_docker, toxiproxy_server
from relaychaos.stack.account_system import AccountSystem
from relaychaos.stack.world import Stack

from .conftest import REFERENCE

SETUP = (
    f"run `bash {toxiproxy_docker.SETUP_SCRIPT}` as root (it installs docker.io, starts dockerd and builds "
    f"{toxiproxy_docker.LOCAL_IMAGE})"
)


@pytest.fixture(scope="module")
def docker_image():
    """The image the route will run: RELAYCHAOS_TOXIPROXY_IMAGE, else the local one, else the official one."""
    reason = toxiproxy_docker.unavailable_reason()
    if reason:
        pytest.skip(f"the Docker route is not tested: {reason}; {SETUP}")
    client = toxiproxy_docker.connect()
    wanted = os.environ.get("RELAYCHAOS_TOXIPROXY_IMAGE")
    candidates = [wanted] if wanted else [toxiproxy_docker.LOCAL_IMAGE, toxiproxy_docker.OFFICIAL_IMAGE]
    present = [name for name in candidates if toxiproxy_docker.has_image(client, name)]
    client.close()
    if not present:
        pytest.skip(
            f"the Docker route is not tested: a daemon answers at {toxiproxy_docker.daemon_address()} but "
            f"has no image {' or '.join(candidates)}; {SETUP}, or `docker pull "
            f"{toxiproxy_docker.OFFICIAL_IMAGE}` where a registry is reachable"
        )
    return present[0]


@pytest.fixture
def forced_docker(monkeypatch, docker_image):
    monkeypatch.setenv("RELAYCHAOS_TOXIPROXY", "docker")
    monkeypatch.setenv("RELAYCHAOS_TOXIPROXY_IMAGE", docker_image)
    monkeypatch.delenv("TOXIPROXY_URL", raising=False)
    return docker_image


def our_containers(pid: int | None = None) -> list[str]:
    """The containers this process (or `pid`) started, in any state, as `docker ps -a` would list them."""
    client = toxiproxy_docker.connect()
    try:
        found = client.containers.list(all=True, filters={"label": f"{toxiproxy_docker.LABEL}={pid or os.getpid()}"})
        return [c.name for c in found]
    finally:
        client.close()


class _Echo(socketserver.BaseRequestHandler):
    def handle(self):
        while data := self.request.recv(4096):
            self.request.sendall(data)


@pytest.fixture
def echo_port():
    """A real TCP service on loopback: it echoes what it gets."""
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Echo)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def round_trip(port: int) -> float:
    t0 = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(b"ping")
        assert s.recv(16) == b"ping"
    return time.monotonic() - t0


@pytest.mark.stack
def test_toxiproxy_in_docker_forwards_and_delays_a_real_tcp_service(forced_docker, echo_port, tmp_path):
    server = toxiproxy_server.acquire(tmp_path)
    try:
        assert server.source.startswith("docker container") and forced_docker in server.source
        assert len(our_containers()) == 1
        proxy = server.control.create_proxy("docker-echo", f"127.0.0.1:{echo_port}")
        assert round_trip(proxy.listen_port) < 0.25
        server.control.add_toxic(proxy, "slow", "latency", latency=400)
        assert 0.4 <= round_trip(proxy.listen_port) < 2.0
        server.control.heal(proxy)
        assert round_trip(proxy.listen_port) < 0.25
    finally:
        server.close()
    assert our_containers() == []


@pytest.mark.stack
def test_a_named_scenario_holds_with_the_reference_relay_on_toxiproxy_in_docker(forced_docker, tmp_path):
    # Stack by hand, not relaychaos.run.services.Services: it must use the Docker Toxiproxy acquired here, and
    # Services acquires its own
    scenario = ALL["latency-beyond-timeout"]  # a latency toxic on the account system's proxy
    server = toxiproxy_server.acquire(tmp_path)
    account = sandbox = None
    try:
        account = AccountSystem.start(tmp_path)
        sandbox = Sandbox.create("auto")
        with Stack(
            toxiproxy=server.control,
            account=account,
            manifest=manifest.load(REFERENCE),
            workdir=tmp_path / "stack",
            name=scenario.name,
            accounts=scenario.accounts,
            account_timeout_ms=scenario.account_timeout_ms,
            sandbox=sandbox,
        ) as stack:
            result = run_and_check(stack, scenario)
        result.assert_holds()
        assert result.history.where(f="add-toxic", type="ok"), "the toxic was set on the Docker Toxiproxy"
        codes = [e.value["code"] for e in result.history.where(f="transfer", type="ok")]
        assert codes[0] == "E901", f"the delayed account answer made the first send in doubt: {codes}"
    finally:
        if sandbox is not None:
            sandbox.close()
        if account:
            account.close()
        server.close()
    assert our_containers() == []


@pytest.mark.stack
def test_a_container_that_fails_to_start_is_removed_and_explained(forced_docker, monkeypatch, tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))  # bound, not listening: Toxiproxy cannot bind it, and calls are refused
        monkeypatch.setattr(toxiproxy_docker, "lease_port", lambda: taken.getsockname()[1])
        monkeypatch.setattr(toxiproxy_docker, "START_TIMEOUT_S", 2.0)  # Toxiproxy 2.12 logs the error, stays up
        with pytest.raises(ToxiproxyError) as e:
            toxiproxy_server.acquire(tmp_path)
    text = str(e.value)
    assert "did not answer on port" in text and "container log" in text and "address already in use" in text
    assert our_containers() == []


@pytest.mark.stack
def test_a_harness_that_exits_without_closing_leaves_no_container(forced_docker, tmp_path):
    code = (
        "import os, pathlib; from relaychaos.stack import toxiproxy_server; "
        f"s = toxiproxy_server.acquire(pathlib.Path({str(tmp_path)!r})); print(os.getpid(), s.source)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    pid, source = done.stdout.split(maxsplit=1)
    assert source.startswith("docker container") and our_containers(int(pid)) == []


@pytest.mark.stack
def test_a_missing_image_that_cannot_be_pulled_names_both_ways_to_get_one(forced_docker, monkeypatch, tmp_path):
    monkeypatch.setenv("RELAYCHAOS_TOXIPROXY_IMAGE", "relaychaos/no-such-toxiproxy:0")
    with pytest.raises(ToxiproxyError) as e:
        toxiproxy_server.acquire(tmp_path)
    text = str(e.value)
    assert "relaychaos/no-such-toxiproxy:0 is not in the local Docker and could not be pulled" in text
    assert "RELAYCHAOS_TOXIPROXY_IMAGE=" in text and our_containers() == []


def test_forced_docker_without_a_daemon_says_where_and_how_to_start_one(monkeypatch, tmp_path):
    monkeypatch.setenv("RELAYCHAOS_TOXIPROXY", "docker")
    monkeypatch.setenv("TOXIPROXY_URL", "http://127.0.0.1:9")  # a forced route does not use it
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-docker.sock")
    with pytest.raises(ToxiproxyError) as e:
        toxiproxy_server.acquire(tmp_path)
    text = str(e.value)
    assert f"unix://{tmp_path}/no-docker.sock: no Docker daemon answers" in text
    assert toxiproxy_docker.SETUP_SCRIPT in text


def test_forced_binary_without_one_does_not_fall_back(monkeypatch, tmp_path):
    monkeypatch.setenv("RELAYCHAOS_TOXIPROXY", "binary")
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("RELAYCHAOS_TOOLS_BIN", str(tmp_path / "empty"))
    with pytest.raises(ToxiproxyError, match="RELAYCHAOS_TOXIPROXY=binary, but there is no toxiproxy-server"):
        toxiproxy_server.acquire(tmp_path)


def test_an_unknown_route_is_refused_with_the_routes_there_are(monkeypatch, tmp_path):
    monkeypatch.setenv("RELAYCHAOS_TOXIPROXY", "podman")
    with pytest.raises(ToxiproxyError, match="RELAYCHAOS_TOXIPROXY='podman' is not a route") as e:
        toxiproxy_server.acquire(tmp_path)
    assert "auto" in str(e.value) and "binary" in str(e.value) and "docker" in str(e.value)
