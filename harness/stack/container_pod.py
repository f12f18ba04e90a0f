"""The network of a relay run from its container image, while its stack lives: a holder container whose
namespace is wired to the harness (relaychaos.stack.netns_holder, relaychaos.sandbox.container_network).

    pod = Pod.open(manifest)     # the image is there, a holder runs, its network is wired (before the proxies)
    ...                          # the relay's containers join it: network_mode="container:" + pod.holder.id
    pod.close()                  # the holder removed, the network gone

The relay reaches only the harness's end of the pod's veth pair, and there only the ports of its stack's
proxies; the harness reaches it at the pod's relay address.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from relaychaos.errors import HarnessError, RelayError, ToxiproxyError
from relaychaos.ports import lease_port, port_range, release_port
from relaychaos.sandbox import netns
from relaychaos.sandbox.container_network import ContainerNetwork
from relaychaos.stack import container_child, netns_holder, toxiproxy_docker
from relaychaos.stack.container import Container
from relaychaos.stack.container_child import remove, track
from relaychaos.stack.manifest import Manifest

if TYPE_CHECKING:
    from docker import DockerClient  # the SDK ships no types: these are Any to the type checker
    from docker.models.containers import Container as DockerContainer

SLOTS = 8  # serve slots of one relay at most: its ports inside are [container] port .. port + 7
NOBODY = "65534:65534"
BUILD_FIX = (
    "build the image on this machine (the harness pulls none): for payments_go, "
    "`bash relay_under_test/payments_go/build_image.sh`; `docker images` lists those there are"
)


def unavailable_reason() -> str | None:
    """Why a relay cannot be run from an image here (no Docker SDK or daemon, no root for its network), or None."""
    why = toxiproxy_docker.unavailable_reason()
    if why:
        return why
    return netns.missing()


def _connect() -> DockerClient:
    try:
        return toxiproxy_docker.connect()
    except ToxiproxyError as e:  # the same daemon and the same fix; said as the relay's
        raise RelayError(e.what, where=e.where, fix=toxiproxy_docker.DAEMON_FIX) from None


@dataclass
class Pod:
    """A relay's network while its stack lives: the holder container, its namespace wired to the harness."""

    client: DockerClient
    holder: DockerContainer
    network: ContainerNetwork
    lease: int  # the port leased for the network's index (unique among the machine's harness processes)
    image: str
    closed: bool = False

    @classmethod
    def open(cls, manifest: Manifest) -> Pod:
        """Check the relay's image is here, start a holder and wire its network; RelayError saying why not.
        Nothing is left running when it fails."""
        spec = spec_of(manifest)
        if manifest.profile.ledger.kind == "sqlite":
            raise RelayError(
                f"relay '{manifest.name}' runs from a container image and keeps its ledger in a SQLite file, "
                "which the harness does not share with a container",
                where=f"{manifest.path} [ledger]",
                fix='keep the ledger in PostgreSQL ([ledger] kind = "postgresql"), or run the relay as a command',
            )
        why = netns.missing()
        if why:
            raise RelayError(
                f"relay '{manifest.name}' runs from a container image, on a network of its own, and {why}",
                where=f"{manifest.path} [container]",
                fix="run the harness as root (it wires the container's network with ip and nft)",
            )
        client = _connect()
        holder = None
        lease = 0
        try:
            _ensure_image(client, manifest, spec)
            lease = lease_port()
            holder = _start_holder(client, lease)
            holder.reload()
            network = ContainerNetwork.attach(
                lease - port_range()[0], holder.attrs["State"]["Pid"], port_range(), (spec.port, spec.port + SLOTS - 1)
            )
        except BaseException as e:
            if holder is not None:
                remove(holder)
            if lease:
                release_port(lease)
            client.close()
            if isinstance(e, HarnessError) or not isinstance(e, Exception):
                raise
            raise RelayError(
                f"could not start the network holder of relay '{manifest.name}': {toxiproxy_docker.first_line(e)}",
                where=toxiproxy_docker.daemon_address(),
                fix=toxiproxy_docker.DAEMON_FIX,
            ) from None
        pod = cls(client, holder, network, lease, spec.image)
        track(holder, pod.close)  # at exit: the network too, not only the holder
        return pod

    def close(self) -> None:
        """Remove the holder and the network (once; again does nothing)."""
        if self.closed:
            return
        self.closed = True
        try:
            self.network.destroy()
            remove(self.holder)
        finally:
            release_port(self.lease)
            self.client.close()


def _start_holder(client: DockerClient, lease: int) -> DockerContainer:
    """The holder container, started and tracked (removed at exit if nothing removes it before); a holder
    that does not start is removed at once (created, then started: Docker keeps a container whose start failed)."""
    holder = client.containers.create(
        netns_holder.ensure(client),
        network_mode="none",
        name=f"relaychaos-holder-{os.getpid()}-{lease}",
        labels={container_child.LABEL: str(os.getpid())},
        user=NOBODY,
        cap_drop=["ALL"],
        security_opt=["no-new-privileges"],
        read_only=True,
        # runc's own start-up runs inside these limits: runc init reaches 5-6 tasks (pids.peak) and
        # about 4 MiB; a limit of 4 tasks failed at times ("cannot start a stopped process": runc
        # init died before the holder's command ran)
        pids_limit=16,
        mem_limit="64m",
    )
    track(holder)
    try:
        holder.start()
    except BaseException:
        remove(holder)
        raise
    return holder


def spec_of(manifest: Manifest) -> Container:
    if manifest.container is None:
        raise RelayError(
            f"relay '{manifest.name}' has no [container] table, and was asked to run from an image",
            where=str(manifest.path),
            fix="run it as a command (relaychaos.stack.supervisor), or add [container]",
        )
    return manifest.container


def _ensure_image(client: DockerClient, manifest: Manifest, spec: Container) -> None:
    if toxiproxy_docker.has_image(client, spec.image):
        return
    raise RelayError(
        f"relay '{manifest.name}' runs from image {spec.image}, which the Docker engine at "
        f"{toxiproxy_docker.daemon_address()} does not have",
        where=f"{manifest.path} [container]",
        fix=BUILD_FIX,
    )
