"""A keyed service run from its container image, as a production team's CI runs it: relay_under_test/payments_go
built as a local image FROM scratch (its build_image.sh) and described by container/relay.toml ([container]).

It runs named scenarios beside the PostgreSQL the harness starts, killed with container.kill() and started
again on the same ledger, two containers at once in a race; it reaches its proxies and nothing else; every
container and its network are gone when the stack closes. The tests that run it need a Docker daemon, the
image and root (for its network); where one is missing they skip, saying why and which script sets it up.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from relaychaos.errors import ManifestError, RelayError
from relaychaos.run.chaos import run_and_check
from relaychaos.sandbox import netns
from relaychaos.scenarios import ALL
from relaychaos.stack import container_child, container_pod, manifest, toxiproxy_docker
from relaychaos.stack.account_system import AccountSystem
from relaychaos.stack.channel import transfer

from .conftest import ROOT

SERVICE = ROOT / "relay_under_test" / "payments_go"
IN_A_CONTAINER = manifest.load(SERVICE / "container")
BUILD = "relay_under_test/payments_go/build_image.sh"
SETUP = (
    f"run `bash {toxiproxy_docker.SETUP_SCRIPT}` as root (it installs docker.io and starts dockerd), "
    f"then `bash {BUILD}` (it builds {IN_A_CONTAINER.container.image if IN_A_CONTAINER.container else '?'})"
)


def write(tmp_path: Path, text: str) -> Path:
    (tmp_path / "relay.toml").write_text(text)
    return tmp_path / "relay.toml"


# the service's tables but [container]: its [api], [downstream] and [ledger]
KEYED = "\n[limits]" + (SERVICE / "container" / "relay.toml").read_text().split("[limits]", 1)[1]


def test_a_manifest_with_a_container_table_needs_no_serve_command_and_records_the_image_as_serve(tmp_path):
    loaded = manifest.load(write(tmp_path, '[container]\nimage = "team/service:1.2"\nport = 8080\n' + KEYED))
    assert loaded.container is not None and (loaded.container.image, loaded.container.port) == (
        "team/service:1.2",
        8080,
    )
    assert loaded.commands == {"serve": ("docker", "run", "team/service:1.2")}
    assert IN_A_CONTAINER.container is not None and IN_A_CONTAINER.profile.api.health == "/healthz"


def test_a_bad_container_table_is_refused_before_anything_starts_naming_each_key(tmp_path):
    with pytest.raises(ManifestError) as e:
        manifest.load(write(tmp_path, '[container]\nimage = ""\nport = 0\ncommand = "serve"\nvolume = 1\n' + KEYED))
    text = str(e.value)
    assert "[container].image must name a local image" in text and "[container].port must be the TCP port" in text
    assert "[container].command must be a list of strings" in text
    assert "[commands] has no `serve`" not in text, "a container table stands for serve, even a wrong one"


def test_a_container_relay_s_batch_commands_are_argv_in_its_image_not_checked_on_this_machine(tmp_path):
    text = '[container]\nimage = "team/service:1.2"\nport = 8080\n[commands]\npurge = ["/service", "expire"]\n'
    loaded = manifest.load(write(tmp_path, text + KEYED))
    manifest.runnable(loaded, "/usr/bin")  # /service is in the image: nothing to find here
    assert loaded.commands["purge"] == ("/service", "expire") and "serve" in loaded.commands


@pytest.fixture(scope="module")
def image():
    """The service's image in a Docker daemon this harness can run it from (root: its network), or a skip."""
    reason = container_pod.unavailable_reason()
    if reason:
        pytest.skip(f"a relay from a container image is not tested: {reason}; {SETUP}")
    assert IN_A_CONTAINER.container is not None
    client = toxiproxy_docker.connect()
    try:
        present = toxiproxy_docker.has_image(client, IN_A_CONTAINER.container.image)
    finally:
        client.close()
    if not present:
        pytest.skip(
            f"a relay from a container image is not tested: the Docker daemon at {toxiproxy_docker.daemon_address()} "
            f"has no image {IN_A_CONTAINER.container.image}; run `bash {BUILD}`"
        )
    return IN_A_CONTAINER.container.image


@pytest.fixture(scope="module")
def psp(tmp_path_factory):
    """The account system in the service's PSP's shape ([downstream] of its relay.toml)."""
    system = AccountSystem.start(tmp_path_factory.mktemp("psp"), IN_A_CONTAINER.profile.downstream)
    yield system
    system.close()


def ours() -> list[str]:
    """The containers this process started and has not removed, in any state."""
    client = toxiproxy_docker.connect()
    try:
        found = client.containers.list(all=True, filters={"label": f"{container_child.LABEL}={os.getpid()}"})
        return [c.name for c in found]
    finally:
        client.close()


@pytest.mark.stack
@pytest.mark.parametrize(
    "scenario",
    [
        "happy-path",
        "kill-after-applied-before-done",  # SIGKILL (container.kill) once the PSP has moved the money; a new container
        "race-pairs-two-relays",  # two containers at once on one ledger, pairs of copies raced at both
        "purge-retention",  # its batch commands (reconcile, expire), each a container of the image
    ],
)
def test_the_service_from_its_image_keeps_every_rule_in_named_scenarios(make_stack, psp, image, scenario):
    s = ALL[scenario]
    stack = make_stack(IN_A_CONTAINER, account=psp, accounts=s.accounts, account_timeout_ms=s.account_timeout_ms)
    result = run_and_check(stack, s)
    result.assert_holds()
    started = result.history.where(f="start", type="ok")
    assert started and all(e.value.get("port", 8080) >= 8080 for e in started)
    logs = "".join(p.read_text(errors="replace") for p in stack.workdir.glob("relay-*.log"))
    assert f"start payments-go-container:serve: ['docker', 'run', '{image}']" in logs
    assert "level=INFO" in logs, "the service's own output is in the relay's log"
    stack.close()
    assert ours() == [], "every container is removed when the stack closes"


@pytest.mark.stack
def test_a_killed_container_is_replaced_by_a_new_one_on_the_same_ledger(make_stack, psp, image):
    stack = make_stack(IN_A_CONTAINER, account=psp, accounts={"alice": 1000, "bob": 0})
    first = stack.start_relay("a")
    request = transfer("container-kill-1", "alice", "bob", 100)
    answered = stack.send(request)
    pid, status = stack.kill_relay("a") or (0, None)
    assert pid == first.child.pid and status == 137, "SIGKILL, as a process killed by the nemesis"
    second = stack.start_relay("a")
    assert second.child.pid != pid and stack.send(request)[-1].status == answered[-1].status
    assert stack.ledger_rows("container-kill-1"), "the key survived the kill in PostgreSQL"
    assert len(ours()) == 2, "the holder of its network and the new container"


@pytest.mark.stack
def test_the_container_reaches_its_proxies_and_nothing_else(make_stack, psp, image):
    stack = make_stack(IN_A_CONTAINER, account=psp, accounts={"alice": 1000, "bob": 0})
    relay = stack.start_relay("a")
    assert stack.pod is not None
    inside = stack.pod.network.path
    config = relay.child.container.attrs["HostConfig"]  # the sandbox's layers Docker has: see docs/sandbox.md
    assert config["CapDrop"] == ["ALL"] and config["SecurityOpt"] == ["no-new-privileges"]
    assert config["ReadonlyRootfs"] and config["Memory"] == stack.sandbox.limits.memory_mib << 20
    assert config["PidsLimit"] == stack.sandbox.limits.tasks and relay.child.container.attrs["Config"]["User"] != "0"

    def reaches(host: str, port: int) -> bool:
        with netns.socket_in(inside, socket.AF_INET, socket.SOCK_STREAM) as s:
            s.settimeout(1.0)
            return s.connect_ex((host, port)) == 0

    account, ledger = stack.proxies["account"], stack.proxies["ledger"]
    assert reaches(stack.listen_host, account.listen_port) and reaches(stack.listen_host, ledger.listen_port)
    toxiproxy_api = int(stack.toxiproxy.url.rsplit(":", 1)[1])
    assert not reaches(stack.listen_host, toxiproxy_api), "the harness's end answers only on the stack's proxies"
    assert not reaches("127.0.0.1", toxiproxy_api), "its loopback is its own"
    assert not reaches(stack.listen_host, psp.port), "the PSP only through its proxy"
    assert stack.ledger_url is not None
    postgres = int(stack.ledger_url.split("@", 1)[-1].split("/", 1)[0].rsplit(":", 1)[1])
    assert not reaches(stack.listen_host, postgres), "its database only through its proxy"
    assert not reaches("192.0.2.1", 80) and not reaches("1.1.1.1", 443), "no route beyond the harness's end"
    stack.close()
    assert ours() == [] and not os.path.exists(inside), "the holder and its namespace are gone"


@pytest.mark.stack
def test_an_image_that_is_not_there_is_named_with_the_script_that_builds_it(make_stack, psp, image, tmp_path):
    text = (SERVICE / "container" / "relay.toml").read_text().replace(image, "relaychaos/no-such-service:0")
    missing = manifest.load(write(tmp_path, text))
    with pytest.raises(RelayError) as e:
        make_stack(missing, account=psp)
    assert "relaychaos/no-such-service:0" in str(e.value) and BUILD in str(e.value)
    assert ours() == []


@pytest.mark.stack
def test_a_container_that_exits_before_answering_is_explained_with_its_log(make_stack, psp, image, tmp_path):
    text = (SERVICE / "container" / "relay.toml").read_text()
    text = text.replace('# command = ["/payments", "serve"]', 'command = ["/payments", "serf"]')
    stack = make_stack(manifest.load(write(tmp_path, text)), account=psp)
    with pytest.raises(RelayError) as e:
        stack.start_relay("a")
    said = str(e.value)
    assert "serve (container of relaychaos/payments-go:local) exited with status 1 before answering" in said
    assert "usage: payments serve" in said, "its log's last lines"
    assert len(ours()) == 1, "only the holder of its network, until the stack closes"
