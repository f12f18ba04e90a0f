"""Where a run's proxies are and what they reach: this machine's loopback, or a Toxiproxy server on another host.

    reach = toxiproxy_reach.reach()     # LOCAL, unless TOXIPROXY_URL names another host
    can_run(manifest, reach)            # RelayError for a relay that a server on another host cannot serve
    guard(sandbox, reach)               # the relay's uid held to the proxies there (a UidFilter to destroy, or None)

A server on another host (TOXIPROXY_URL=http://HOST:PORT, the `auto` route) makes each proxy listen on every address
of HOST, on a port it picks, and the harness and the relays connect to HOST; its proxies forward to this machine's
account system and relays at RELAYCHAOS_TOXIPROXY_UPSTREAM_HOST, where those then listen. The relay then runs
without a network of its own (the sandbox's network layer), since that host must reach it; nftables rules for its
uid stand in where the sandbox has one (relaychaos.sandbox.uid_filter).
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

from relaychaos import options
from relaychaos.errors import RelayError, ToxiproxyError
from relaychaos.ports import port_range
from relaychaos.sandbox import netns
from relaychaos.sandbox.policy import Sandbox
from relaychaos.sandbox.uid_filter import UidFilter, addresses
from relaychaos.stack.manifest import Manifest
from relaychaos.stack.toxiproxy_server import route


def on_this_machine(host: str) -> bool:
    """Whether `host` names this machine's loopback: any 127.0.0.0/8 or ::1 address (an IPv4-mapped one too), or
    localhost (with or without its final dot)."""
    if host.rstrip(".").lower() == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return (mapped or address).is_loopback


def _ours(host: str) -> bool:
    """Whether `host` is a unicast address of this machine (a socket can be bound to it)."""
    try:
        address = ipaddress.ip_address(host)
        if address.is_unspecified or address.is_multicast:
            return False
        with socket.socket(socket.AF_INET6 if address.version == 6 else socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind((host, 0))
    except (ValueError, OSError):
        return False
    return True


@dataclass(frozen=True)
class Reach:
    """Where the proxies are and what they reach: all on loopback for a server on this machine; for a server on
    another host (TOXIPROXY_URL), proxies listening on every address of that host, reached at its address, and
    forwarding to this machine's services at the address that host reaches it by."""

    proxy_host: str = "127.0.0.1"  # where the harness and the relays connect to a proxy
    listen_host: str = "127.0.0.1"  # what a proxy listens on, on the server's host
    upstream_host: str = "127.0.0.1"  # where the server reaches this machine's account system and relays

    @property
    def remote(self) -> bool:
        return not on_this_machine(self.proxy_host)


LOCAL = Reach()


def reach() -> Reach:
    """The proxies' Reach for this run: another host's only when TOXIPROXY_URL names one and the route takes it;
    ToxiproxyError when that host is given without RELAYCHAOS_TOXIPROXY_UPSTREAM_HOST."""
    url = options.environment(options.TOXIPROXY_URL)
    host = urlsplit(url).hostname if url and route() == "auto" else None
    if host is None or on_this_machine(host) or host in ("0.0.0.0", "::"):  # the last two: every address, this one's
        return LOCAL
    upstream = options.environment(options.TOXIPROXY_UPSTREAM_HOST)
    if not upstream:
        raise ToxiproxyError(
            f"TOXIPROXY_URL={url} is a server on another host, which must reach this machine's account system and "
            "relays, and RELAYCHAOS_TOXIPROXY_UPSTREAM_HOST does not say at which address",
            fix="set RELAYCHAOS_TOXIPROXY_UPSTREAM_HOST to this machine's address as that host reaches it "
            "(docs/testing-your-relay.md, Toxiproxy on another host)",
        )
    if not _ours(upstream):
        raise ToxiproxyError(
            f"RELAYCHAOS_TOXIPROXY_UPSTREAM_HOST={upstream} is not an address of this machine (an IP address one of "
            "its interfaces has, not 0.0.0.0 or a name): the account system and the relays could not listen there",
            fix="set it to the address of this machine's interface that the host of TOXIPROXY_URL reaches "
            "(`ip -brief address` lists them)",
        )
    return Reach(proxy_host=host, listen_host="0.0.0.0", upstream_host=upstream)


def sandbox_without(reach: Reach) -> dict[str, str]:
    """The sandbox layers a run cannot have with this reach, and why: a relay on a network of its own is out of
    reach of a Toxiproxy on another host (as root with nftables, `guard` holds its uid instead: said too)."""
    if not reach.remote:
        return {}
    held = "; nftables hold its uid to the account proxies there" if netns.missing() is None else ""
    return {"network": f"Toxiproxy is on another host ({reach.proxy_host}){held}"}


def can_run(manifest: Manifest, reach: Reach) -> Reach:
    """`reach`, or RelayError for what a Toxiproxy on another host cannot serve: a relay in its own container
    network, a ledger in the run's PostgreSQL (both reached on this machine's loopback)."""
    if not reach.remote:
        return reach
    what = (
        "runs from a container image, on a network of its own"
        if manifest.container
        else "keeps its ledger in PostgreSQL, which the harness starts on this machine's loopback"
        if manifest.profile.ledger.kind == "postgresql"
        else None
    )
    if what:
        raise RelayError(
            f"relay '{manifest.name}' {what}, and Toxiproxy is on another host ({reach.proxy_host}), which cannot "
            "reach it there",
            where=str(manifest.path),
            fix="unset TOXIPROXY_URL so that the harness runs Toxiproxy on this machine (a binary, or Docker)",
        )
    return reach


def guard(sandbox: Sandbox, reach: Reach) -> UidFilter | None:
    """Beside a Toxiproxy on another host, where the sandbox has a uid of its own and nftables: the rules that hold
    that uid to the account proxies there and the harness's ports here to that host (relaychaos.sandbox.uid_filter).
    The caller destroys them when it is done with the sandbox."""
    if not reach.remote or not sandbox.separate_uid or sandbox.slot is None or netns.missing() is not None:
        return None
    slot = sandbox.slot
    sandbox.uid_filter = UidFilter.create(
        slot.number,
        uid=slot.uid,
        toxiproxy=addresses(reach.proxy_host),
        upstream=reach.upstream_host,
        ports=port_range(),
    )
    return sandbox.uid_filter
