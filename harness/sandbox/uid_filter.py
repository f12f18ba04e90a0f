"""The network of a slot whose relay cannot have a namespace of its own (Toxiproxy on another host): nftables rules
in the machine's own namespace, for the slot's uid and for the services that host must reach.

    gate = UidFilter.create(3, uid=61003, toxiproxy=("10.215.7.2",), upstream="10.215.7.1", ports=(20000, 29999))
    gate.allow(41234)      # an account proxy's port on the Toxiproxy host, while the proxy exists
    gate.forbid(41234); gate.destroy()

- Out: a process of the slot's uid may open TCP connections only to the Toxiproxy host, on the ports of the slot's
  account proxies there (MAX_CONNECTIONS at a time); any other connection of that uid, to any address of any host
  (this machine's loopback included) or over UDP, is refused. Of the connections made to it, only the packets to
  the Toxiproxy host and to this machine's own addresses leave: a third host that reaches a listener of the relay
  on any address of this machine gets no answer.
- In: the harness's ports (`ports`, the range every RELAY_PORT and the account system's port are leased from) on
  the upstream address answer the Toxiproxy host and this machine alone; any other host is refused.

So a relay reaches the account system only through its proxy, and no third host reaches the relay or the account
system around Toxiproxy. What a namespace of its own adds and this does not: the machine's interfaces, addresses and
listening ports stay in view, and its abstract Unix sockets are held by Landlock's scoping alone (the network layer
stays "not enforced"). The table is `inet relaychaos-sN-uid`, made afresh on create (a killed run's is replaced) and
removed with the slot.
"""

from __future__ import annotations

import ipaddress
import socket
import subprocess
from dataclasses import dataclass

from relaychaos.errors import SandboxError
from relaychaos.sandbox.netns import MAX_CONNECTIONS, allow_port, forbid_port, run, undo


def table(number: int) -> str:
    """Slot `number`'s table (in family inet)."""
    return f"relaychaos-s{number}-uid"


def addresses(host: str) -> tuple[str, ...]:
    """The IP addresses `host` (a name or an address) stands for now, sorted; SandboxError when it stands for none."""
    try:
        found = {str(info[4][0]) for info in socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)}
    except OSError as e:
        raise SandboxError(
            f"the Toxiproxy host {host} does not resolve to an address: {e}",
            fix="give TOXIPROXY_URL with the server's IP address",
        ) from None
    return tuple(sorted(str(ipaddress.ip_address(a.split("%")[0])) for a in found))


@dataclass(frozen=True)
class UidFilter:
    """The rules of one slot (see the module doc)."""

    number: int
    uid: int
    toxiproxy: tuple[str, ...]  # the Toxiproxy host's addresses
    upstream: str  # this machine's address that host reaches
    ports: tuple[int, int]

    @property
    def name(self) -> str:
        return table(self.number)

    @classmethod
    def create(
        cls, number: int, *, uid: int, toxiproxy: tuple[str, ...], upstream: str, ports: tuple[int, int]
    ) -> UidFilter:
        """The slot's rules, made afresh; SandboxError when nftables refuses them."""
        made = cls(number, uid, toxiproxy, upstream, ports)
        if not any(_family(a) == _family(upstream) for a in toxiproxy):
            raise SandboxError(
                f"the Toxiproxy host's addresses ({', '.join(toxiproxy)}) are not of the family of "
                f"RELAYCHAOS_TOXIPROXY_UPSTREAM_HOST={upstream}: that host could not reach this machine there",
                fix="give RELAYCHAOS_TOXIPROXY_UPSTREAM_HOST and TOXIPROXY_URL's host in one family (both IPv4, or "
                "both IPv6)",
            )
        made.destroy()
        try:
            run(["nft", "-f", "-"], made.rules())
        except (OSError, subprocess.CalledProcessError) as e:
            said = getattr(e, "stderr", "") or str(e)
            raise SandboxError(
                f"nftables refused the table {made.name} that holds the relay's uid: {said.strip()}",
                fix="run Toxiproxy on this machine (unset TOXIPROXY_URL), where the relay gets a network of its own; "
                "the rules nftables refused are relaychaos.sandbox.uid_filter's, a bug to report with this message",
            ) from None
        return made

    def rules(self) -> str:
        low, high = self.ports
        family = _family(self.upstream)
        by_family = {f: [a for a in self.toxiproxy if _family(a) == f] for f in ("ip", "ip6")}
        u = f"meta skuid {self.uid}"
        out = "\n".join(
            f"    {u} ct state established,related {f} daddr {{ {', '.join(a)} }} accept\n"
            f"    {u} ct state new {f} daddr {{ {', '.join(a)} }} tcp dport @proxies ct count over {MAX_CONNECTIONS} "
            "reject with tcp reset\n"
            f"    {u} ct state new {f} daddr {{ {', '.join(a)} }} tcp dport @proxies accept"
            for f, a in by_family.items()
            if a
        )
        same = ", ".join(by_family[family])
        return f"""table inet {self.name} {{
  set proxies {{ type inet_service; }}
  chain output {{
    type filter hook output priority filter; policy accept;
{out}
    {u} ct state established,related fib daddr type local accept
    {u} meta l4proto tcp reject with tcp reset
    {u} drop
  }}
  chain input {{
    type filter hook input priority filter; policy accept;
    {family} daddr {self.upstream} tcp dport {low}-{high} {family} saddr {{ {same} }} accept
    {family} daddr {self.upstream} tcp dport {low}-{high} fib saddr type local accept
    {family} daddr {self.upstream} tcp dport {low}-{high} ct state established,related accept
    {family} daddr {self.upstream} tcp dport {low}-{high} reject with tcp reset
  }}
}}
"""

    def allow(self, port: int) -> None:
        """Let the slot's uid reach the Toxiproxy host on `port` (an account proxy of the slot's, while it exists)."""
        allow_port(self.name, port)

    def forbid(self, port: int) -> None:
        forbid_port(self.name, port)

    def destroy(self) -> None:
        remove(self.number)


def remove(number: int) -> None:
    """Remove slot `number`'s table (nothing if it is not there, or nftables is not installed)."""
    undo(["nft", "delete", "table", "inet", table(number)])


def _family(address: str) -> str:
    """nftables' name of an address's family: ip or ip6."""
    return "ip" if ipaddress.ip_address(address).version == 4 else "ip6"
