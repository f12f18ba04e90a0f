"""The network of a relay run from a container image: the network namespace of a holder container, wired as a
sandbox slot's network is (relaychaos.sandbox.netns), and named so that `ip -n` reaches it.

    net = ContainerNetwork.create(index, holder_pid, service_ports=(8080, 8087))
    ...                                    # the relay's containers join the holder's namespace
    net.destroy()

Docker makes the holder's namespace with loopback only (`network_mode="none"`); this attaches it as
/run/netns/relaychaos-cINDEX and adds a veth pair, `rccINDEX-r` inside (10.214.x.y+2/30) and `rccINDEX-h`
on the machine (10.214.x.y+1/30), with the same rules as a slot's network: the relay reaches only the
harness's end, and there only the ports the stack allows (its account and ledger proxies); a DNAT rule
sends what reaches its address on a service port to 127.0.0.1 (route_localnet), so a service that
listens on loopback inside is reached as one that listens on all addresses. No IPv6, no route beyond
the pair, no Docker bridge, no Docker DNS (a container with no network of Docker's has none).

`index` comes from a port the harness leased (relaychaos.ports): unique among the harness processes of the
machine for as long as the lease is held. Made with `ip` and `nft`, as root.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass

from relaychaos.errors import SandboxError
from relaychaos.sandbox import netns
from relaychaos.sandbox.netns import SlotNetwork

PREFIX = "10.214"  # a slot's network is 10.213.N.0/30: these never meet
INDEXES = 1 << 14  # /30s in 10.214.0.0/16


@dataclass(frozen=True)
class ContainerNetwork(SlotNetwork):
    """The network of a holder container's namespace (see the module doc); `ports` are the proxies' range."""

    holder_pid: int = 0
    service_ports: tuple[int, int] = (0, 0)  # the ports the relay's containers listen on inside, first and last

    @property
    def name(self) -> str:
        return f"relaychaos-c{self.number}"

    @property
    def _base(self) -> tuple[int, int]:
        return (self.number * 4) >> 8, (self.number * 4) & 255

    @property
    def host_address(self) -> str:
        high, low = self._base
        return f"{PREFIX}.{high}.{low + 1}"

    @property
    def relay_address(self) -> str:
        high, low = self._base
        return f"{PREFIX}.{high}.{low + 2}"

    @property
    def host_link(self) -> str:
        return f"rcc{self.number}-h"

    @property
    def relay_link(self) -> str:
        return f"rcc{self.number}-r"

    @classmethod
    def attach(
        cls, index: int, holder_pid: int, ports: tuple[int, int], service_ports: tuple[int, int]
    ) -> ContainerNetwork:
        """Wire the holder's namespace (whatever a killed run left under this index is removed first);
        SandboxError if it cannot be done."""
        net = cls(index % INDEXES, ports, holder_pid, service_ports)
        net.destroy()
        try:
            net._build()
        except (OSError, subprocess.CalledProcessError) as e:
            net.destroy()
            said = getattr(e, "stderr", "") or str(e)
            raise SandboxError(
                f"could not wire the network of the relay's containers ({net.name}): {said.strip()}",
                fix="run the harness as root on Linux with iproute2 and nftables (scripts/bootstrap.sh installs "
                "them); a relay from a container image runs only on a network of its own",
            ) from None
        return net

    def _make_namespace(self) -> None:
        netns.run(["ip", "netns", "attach", self.name, str(self.holder_pid)])

    def _relay_rules(self) -> str:
        low, high = self.service_ports
        proxies_low, proxies_high = self.ports
        r = self.relay_link
        return f"""table inet relaychaos {{
  chain prerouting {{
    type nat hook prerouting priority dstnat; policy accept;
    iifname "{r}" tcp dport {low}-{high} dnat ip to 127.0.0.1
  }}
  chain input {{
    type filter hook input priority filter; policy drop;
    iifname "lo" accept
    ct state established,related accept
    iifname "{r}" tcp dport {low}-{high} accept
  }}
  chain output {{
    type filter hook output priority filter; policy drop;
    oifname "lo" accept
    ct state established,related accept
    oifname "{r}" ip daddr {self.host_address} tcp dport {proxies_low}-{proxies_high} accept
    oifname "{r}" meta l4proto tcp reject with tcp reset
  }}
}}
"""
