"""The one door to Toxiproxy: proxies and toxics, through toxiproxy-python, quirks hidden.

toxiproxy-python keeps the server's host and port on a class (so two servers in
one process would clash) and lets 5xx answers through unchecked. This adapter
binds the class to its own server for each call, under a lock, and turns every
answer that is not a success into a ToxiproxyError naming the call and the body.
Every toxic is set with toxicity 1.0: Toxiproxy's own randomness cannot be
seeded, so the harness never relies on it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from urllib.parse import urlsplit

import requests
from toxiproxy import api as _api
from toxiproxy.exceptions import InvalidToxic, NotFound, ProxyExists

from relaychaos.errors import ToxiproxyConflict, ToxiproxyError

_bind_lock = threading.RLock()
_TIMEOUT_S = 5.0

# Toxic types the harness uses and what their attributes mean (Toxiproxy 2.x):
#   latency     {latency: ms, jitter: ms}     hold each chunk for `latency` ms
#   timeout     {timeout: ms}                 pass nothing; close after ms (0: never)
#   reset_peer  {timeout: ms}                 TCP RST after ms
#   limit_data  {bytes: n}                    close after n bytes went through
#   bandwidth   {rate: KB/s}, slow_close {delay: ms}, slicer {average_size, ...}
TOXIC_TYPES = ("latency", "timeout", "reset_peer", "limit_data", "bandwidth", "slow_close", "slicer")


@dataclass(frozen=True)
class ProxyRef:
    """A proxy on the server: its unique name and the address it listens on."""

    name: str
    listen_host: str
    listen_port: int
    upstream: str

    @property
    def url(self) -> str:
        return f"http://{self.listen_host}:{self.listen_port}"


class Toxiproxy:
    """Control of one Toxiproxy server at `url` (e.g. http://127.0.0.1:8474)."""

    def __init__(self, url: str):
        parts = urlsplit(url if "://" in url else f"http://{url}")
        if not parts.hostname or not parts.port:
            raise ToxiproxyError(
                f"'{url}' is not a Toxiproxy API address", fix="give it as http://HOST:PORT, e.g. http://127.0.0.1:8474"
            )
        self.url = f"http://{parts.hostname}:{parts.port}"
        self.host, self.port = parts.hostname, parts.port

    # -- transport -------------------------------------------------------------------
    def _call(self, method: str, path: str, json: dict[str, object] | None = None) -> requests.Response:
        with _bind_lock:
            _api.APIConsumer.host, _api.APIConsumer.port = self.host, self.port
            try:
                resp = getattr(_api.APIConsumer, method)(path, timeout=_TIMEOUT_S, json=json)
            except (ProxyExists, NotFound, InvalidToxic) as e:
                kind = ToxiproxyError if isinstance(e, InvalidToxic) else ToxiproxyConflict
                raise kind(
                    f"Toxiproxy refused {method.upper()} {path}: "
                    f"{type(e).__name__} {_text(e.args[0] if e.args else '')}",
                    where=self.url,
                ) from None
            except requests.RequestException as e:
                raise ToxiproxyError(
                    f"Toxiproxy at {self.url} did not answer {method.upper()} {path}: {e}",
                    fix="check that the server is running (or unset TOXIPROXY_URL to let the harness start its own)",
                ) from None
        if resp.status_code >= 300:
            raise ToxiproxyError(
                f"Toxiproxy answered {method.upper()} {path} with HTTP {resp.status_code}: {_text(resp.content)}",
                where=self.url,
            )
        return resp

    def version(self) -> str:
        return self._call("get", "/version").text.strip()

    # -- proxies ---------------------------------------------------------------------
    def create_proxy(self, name: str, upstream: str, listen_port: int = 0, listen_host: str = "127.0.0.1") -> ProxyRef:
        """Create an enabled proxy listening on `listen_host:listen_port` (port 0: one the kernel picks; the host
        is loopback, or a sandbox slot's end of its network), forwarding to upstream. A disabled proxy listens
        on the same port again when enabled, so the harness passes a leased one (relaychaos.ports):
        nobody else may take it while the proxy is down."""
        info = self._call(
            "post",
            "/proxies",
            json={"name": name, "upstream": upstream, "listen": f"{listen_host}:{int(listen_port)}", "enabled": True},
        ).json()
        host, _, port = info["listen"].rpartition(":")
        return ProxyRef(name, host or listen_host, int(port), upstream)

    def set_enabled(self, proxy: ProxyRef, enabled: bool) -> None:
        """Disabled: the listener closes and live connections drop (a refused connection)."""
        self._call("post", f"/proxies/{proxy.name}", json={"enabled": enabled})

    def set_upstream(self, proxy: ProxyRef, upstream: str) -> ProxyRef:
        """Point the proxy at another upstream; its listen address stays the same."""
        self._call("post", f"/proxies/{proxy.name}", json={"upstream": upstream})
        return ProxyRef(proxy.name, proxy.listen_host, proxy.listen_port, upstream)

    def destroy(self, name: str) -> None:
        """Remove the proxy named `name` (ToxiproxyConflict when there is none)."""
        self._call("delete", f"/proxies/{name}")

    def proxy_names(self) -> list[str]:
        return sorted(self._call("get", "/proxies").json())

    def proxies(self) -> dict[str, dict]:
        """Every proxy on the server as it is now: {name: {listen, upstream, enabled, toxics: [...]}} (one call)."""
        return self._call("get", "/proxies").json()

    # -- toxics ----------------------------------------------------------------------
    def add_toxic(
        self, proxy: ProxyRef, name: str, kind: str, *, stream: str = "downstream", **attributes: int | float
    ) -> None:
        """Add toxic `kind` on `stream` ('upstream' = towards the server) with toxicity 1.0."""
        if kind not in TOXIC_TYPES:
            raise ToxiproxyError(f"unknown toxic type '{kind}'", fix=f"use one of {', '.join(TOXIC_TYPES)}")
        if stream not in ("upstream", "downstream"):
            raise ToxiproxyError(f"unknown toxic stream '{stream}'", fix="use 'upstream' or 'downstream'")
        self._call(
            "post",
            f"/proxies/{proxy.name}/toxics",
            json={"name": name, "type": kind, "stream": stream, "toxicity": 1.0, "attributes": dict(attributes)},
        )

    def remove_toxic(self, proxy: ProxyRef, name: str) -> None:
        self._call("delete", f"/proxies/{proxy.name}/toxics/{name}")

    def toxic_names(self, proxy: ProxyRef) -> list[str]:
        return sorted(t["name"] for t in self._call("get", f"/proxies/{proxy.name}/toxics").json())

    def heal(self, proxy: ProxyRef) -> None:
        """Remove every toxic and enable the proxy: the state it was created in."""
        for name in self.toxic_names(proxy):
            self.remove_toxic(proxy, name)
        self.set_enabled(proxy, True)


def _text(body: bytes | str) -> str:
    text = body.decode(errors="replace") if isinstance(body, bytes) else str(body)
    return text.strip()[:300]
