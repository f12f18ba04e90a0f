"""The network of one sandbox slot: a network namespace joined to the harness by a veth pair.

    net = SlotNetwork.create(3, ports=(20000, 29999))   # /run/netns/relaychaos-s3, 10.213.3.1 <-> 10.213.3.2
    ...                                                 # every relay command of the slot joins net.path
    net.destroy()

Inside, a relay has its own loopback and one interface, `rcN-r` (10.213.N.2/30), whose only
neighbour is the harness's end, `rcN-h` (10.213.N.1/30); there is no other route. Kernel TCP
runs end to end: a reset, a time-out or a refused connection means what it means on loopback.
- The relay listens on 127.0.0.1:RELAY_PORT as the contract says: a DNAT rule in its namespace
  sends what reaches 10.213.N.2 on a port of the harness's range to 127.0.0.1 (route_localnet),
  and its input filter drops every other packet from outside.
- It can open connections only to the harness's end, and there (the machine's own filter on
  `rcN-h`) only to the ports of the slot's account proxies (`allow`, `forbid`: the stack says
  which, as it makes and removes them), MAX_CONNECTIONS at a time. Nothing else of the harness
  listens on 10.213.N.1 (Toxiproxy's API, the account system and every other proxy listen on
  127.0.0.1). Landlock then narrows it to the one account proxy of the command's stack.
- No IPv6 on either end (its link-local addresses would reach the machine's wildcard listeners).
These addresses never leave the machine: they exist only on this pair.

Made with `ip` and `nft` (iproute2, nftables), as root; `missing()` says why it cannot be had.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import threading
from dataclasses import dataclass

from relaychaos.errors import SandboxError
from relaychaos.sandbox import kernel

NETNS_DIR = "/run/netns"
PREFIX = "10.213"
MAX_CONNECTIONS = 1024  # open connections from a slot's relays to the harness's end, at most


@dataclass(frozen=True)
class SlotNetwork:
    """A slot's network namespace (see the module doc)."""

    number: int
    ports: tuple[int, int]

    @property
    def name(self) -> str:
        return f"relaychaos-s{self.number}"

    @property
    def path(self) -> str:
        return f"{NETNS_DIR}/{self.name}"

    @property
    def host_address(self) -> str:
        """The harness's end: the slot's account proxy listens here."""
        return f"{PREFIX}.{self.number}.1"

    @property
    def relay_address(self) -> str:
        """The relay's end: the harness reaches RELAY_PORT here."""
        return f"{PREFIX}.{self.number}.2"

    @property
    def host_link(self) -> str:
        return f"rc{self.number}-h"

    @property
    def relay_link(self) -> str:
        return f"rc{self.number}-r"

    @classmethod
    def create(cls, number: int, ports: tuple[int, int]) -> SlotNetwork:
        """Make the slot's namespace afresh (whatever a killed run left is removed first); SandboxError if not."""
        net = cls(number, ports)
        net.destroy()
        try:
            net._build()
        except (OSError, subprocess.CalledProcessError) as e:
            net.destroy()
            said = getattr(e, "stderr", "") or str(e)
            raise SandboxError(
                f"could not make the network namespace {net.name}: {said.strip()}",
                fix="run as root on Linux with iproute2 and nftables (scripts/bootstrap.sh "
                "installs them), or use --sandbox off for a relay you trust",
            ) from None
        return net

    def _make_namespace(self) -> None:
        run(["ip", "netns", "add", self.name])

    def _build(self) -> None:
        ip = ["ip", "-n", self.name]
        self._make_namespace()
        run(["ip", "link", "add", self.host_link, "type", "veth", "peer", "name", self.relay_link, "netns", self.name])
        _sysctl(f"net/ipv6/conf/{self.host_link}/disable_ipv6", "1")
        run(["ip", "addr", "add", f"{self.host_address}/30", "dev", self.host_link])
        run(["ip", "link", "set", self.host_link, "up"])
        run(ip + ["addr", "add", f"{self.relay_address}/30", "dev", self.relay_link])
        run(ip + ["link", "set", self.relay_link, "up"])
        run(ip + ["link", "set", "lo", "up"])
        run(["nft", "-f", "-"], stdin=self._host_rules())
        run(
            [
                "ip",
                "netns",
                "exec",
                self.name,
                "sh",
                "-c",
                f"echo 1 > /proc/sys/net/ipv6/conf/{self.relay_link}/disable_ipv6 && "
                f"echo 1 > /proc/sys/net/ipv4/conf/{self.relay_link}/route_localnet && nft -f -",
            ],
            stdin=self._relay_rules(),
        )

    def _host_rules(self) -> str:
        h = self.host_link
        return f"""table inet {self.name}
delete table inet {self.name}
table inet {self.name} {{
  set proxies {{ type inet_service; }}
  chain input {{
    type filter hook input priority filter; policy accept;
    iifname "{h}" ct state established,related accept
    iifname "{h}" ct state new ip daddr {self.host_address} tcp dport @proxies ct count over {MAX_CONNECTIONS} \
      reject with tcp reset
    iifname "{h}" ip daddr {self.host_address} tcp dport @proxies accept
    iifname "{h}" meta l4proto tcp reject with tcp reset
    iifname "{h}" drop
  }}
  chain forward {{
    type filter hook forward priority filter; policy accept;
    iifname "{h}" drop
    oifname "{h}" drop
  }}
}}
"""

    def allow(self, port: int) -> None:
        """Let the relay reach the harness's end on `port` (an account proxy of the slot's, while it exists)."""
        allow_port(self.name, port)

    def forbid(self, port: int) -> None:
        forbid_port(self.name, port)

    def _relay_rules(self) -> str:
        low, high = self.ports
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
    oifname "{r}" ip daddr {self.host_address} tcp dport {low}-{high} accept
    oifname "{r}" meta l4proto tcp reject with tcp reset
  }}
}}
"""

    def destroy(self) -> None:
        """Remove the namespace, its veth pair and the machine's rules for it (nothing if none is there)."""
        undo(["ip", "netns", "del", self.name])
        undo(["ip", "link", "del", self.host_link])
        undo(["nft", "delete", "table", "inet", self.name])


_switch = threading.Lock()


def socket_in(path: str, family: int, kind: int, proto: int = 0) -> socket.socket:
    """A socket made inside the network namespace at `path` (root): this thread enters it for the one call.
    For the harness's own look at a relay's listener (sock_diag), never for traffic."""
    with _switch:
        home = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
        try:
            kernel.setns(path, kernel.CLONE_NEWNET, "network")
            try:
                return socket.socket(family, kind, proto)
            finally:
                kernel.check(kernel.libc.setns(home, kernel.CLONE_NEWNET), "network", "setns back")
        finally:
            os.close(home)


def missing() -> str | None:
    """Why a slot network cannot be had here (None: it can)."""
    if os.geteuid() != 0:
        return "the harness does not run as root"
    absent = [tool for tool in ("ip", "nft") if shutil.which(tool) is None]
    if absent:
        return f"{' and '.join(absent)} not installed (packages iproute2, nftables; scripts/bootstrap.sh installs them)"
    return None


def run(argv: list[str], stdin: str | None = None) -> None:
    """Run `ip` or `nft`; CalledProcessError (its stderr said) when it fails."""
    subprocess.run(argv, input=stdin, capture_output=True, text=True, check=True, timeout=30)


def undo(argv: list[str]) -> None:
    """Run a removal whose failure means there was nothing to remove: the object is not there, or the tool is not
    installed (so none of its objects can be)."""
    with contextlib.suppress(FileNotFoundError):
        subprocess.run(argv, capture_output=True, timeout=30)


def allow_port(table: str, port: int) -> None:
    """Add `port` to the set `proxies` of nftables table `table` (family inet): the ports a slot's relay may reach."""
    run(["nft", "add", "element", "inet", table, "proxies", f"{{ {port} }}"])


def forbid_port(table: str, port: int) -> None:
    undo(["nft", "delete", "element", "inet", table, "proxies", f"{{ {port} }}"])


def _sysctl(key: str, value: str) -> None:
    with open(f"/proc/sys/{key}", "w") as f:
        f.write(value)
