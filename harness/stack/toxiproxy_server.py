"""Finding a Toxiproxy server: TOXIPROXY_URL, else a binary, else Docker, else one clear error.

The order is the contract of `acquire()`:
1. `TOXIPROXY_URL` if set: used as it is, never started or stopped by the harness;
2. a `toxiproxy-server` binary on PATH or in the project's tools/bin: spawned on a
   free loopback port and stopped by `close()`;
3. a reachable Docker daemon: the image ghcr.io/shopify/toxiproxy:2.12.0 on the host network;
4. otherwise ToxiproxyError saying how to install one.
"""
from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from relaychaos.errors import ToxiproxyError
from relaychaos.stack.processes import free_port, spawn, wait_http_ok
from relaychaos.stack.toxiproxy_control import Toxiproxy

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # the checkout (in a wheel: nothing there)
TOOLS_BIN = PROJECT_ROOT / "tools" / "bin"
DOCKER_IMAGE = "ghcr.io/shopify/toxiproxy:2.12.0"
START_TIMEOUT_S = 15.0
INSTALL_FIX = ("run `bash scripts/bootstrap.sh` (it builds the server with Go: "
               "go install github.com/Shopify/toxiproxy/v2/cmd/server@v2.12.0, renamed toxiproxy-server), "
               "put a toxiproxy-server binary on PATH, start a Docker daemon, "
               "or set TOXIPROXY_URL to a running server")


@dataclass
class ToxiproxyServer:
    """A reachable Toxiproxy server and how it came to be; close() stops what the harness started."""

    control: Toxiproxy
    source: str  # 'TOXIPROXY_URL', a binary path, or 'docker'
    _stop: Callable[[], None] = field(default=lambda: None, repr=False)

    @property
    def url(self) -> str:
        return self.control.url

    def close(self) -> None:
        self._stop()
        self._stop = lambda: None


def tools_bin() -> Path:
    """The project's tools folder (RELAYCHAOS_TOOLS_BIN overrides it)."""
    return Path(os.environ.get("RELAYCHAOS_TOOLS_BIN", TOOLS_BIN))


def find_binary() -> str | None:
    """The toxiproxy-server the harness would spawn, or None."""
    found = shutil.which("toxiproxy-server")
    if found:
        return found
    local = tools_bin() / "toxiproxy-server"
    return str(local) if os.access(local, os.X_OK) else None


def acquire(log_dir: Path) -> ToxiproxyServer:
    """A running Toxiproxy server, found in the documented order (see the module doc)."""
    url = os.environ.get("TOXIPROXY_URL")
    if url:
        control = Toxiproxy(url)
        try:
            control.version()
        except ToxiproxyError as e:
            raise ToxiproxyError(f"TOXIPROXY_URL={url} does not answer: {e.what}",
                                 fix="start the server there, or unset TOXIPROXY_URL so that the "
                                     "harness starts its own") from None
        return ToxiproxyServer(control, "TOXIPROXY_URL")
    binary = find_binary()
    if binary:
        return _spawn_binary(binary, log_dir)
    docker_reason = _docker_unavailable_reason()
    if docker_reason is None:
        return _run_container()
    raise ToxiproxyError(
        "no Toxiproxy server found: TOXIPROXY_URL is not set, no toxiproxy-server on PATH or in "
        f"{tools_bin()}, and no Docker daemon ({docker_reason})", fix=INSTALL_FIX)


def _spawn_binary(binary: str, log_dir: Path) -> ToxiproxyServer:
    port = free_port()
    child = spawn("toxiproxy", [binary, "-host", "127.0.0.1", "-port", str(port)],
                  log_path=log_dir / f"toxiproxy-{port}.log")
    why = wait_http_ok(f"http://127.0.0.1:{port}/version", timeout_s=START_TIMEOUT_S, child=child)
    if why:
        child.kill()
        raise ToxiproxyError(f"{binary} {why}", fix=INSTALL_FIX, details=child.tail())
    return ToxiproxyServer(Toxiproxy(f"http://127.0.0.1:{port}"), binary, child.stop)


def _docker_unavailable_reason() -> str | None:
    try:
        import docker  # noqa: PLC0415 - optional at run time, and slow to import
    except ImportError:
        return "the docker package is not installed"
    try:
        docker.from_env(timeout=3).ping()
    except Exception as e:  # docker raises many kinds; any means 'no daemon here'
        return f"docker: {str(e).splitlines()[0][:160]}"
    return None


def _run_container() -> ToxiproxyServer:
    import docker  # noqa: PLC0415

    port = free_port()
    client = docker.from_env()
    try:
        container = client.containers.run(DOCKER_IMAGE, ["-host", "127.0.0.1", "-port", str(port)],
                                          network_mode="host", detach=True, remove=True)
    except Exception as e:
        raise ToxiproxyError(f"could not run {DOCKER_IMAGE} with Docker: {e}", fix=INSTALL_FIX) from None

    def stop() -> None:
        try:
            container.remove(force=True)
        except Exception:
            pass

    control = Toxiproxy(f"http://127.0.0.1:{port}")
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        try:
            control.version()
            return ToxiproxyServer(control, "docker", stop)
        except ToxiproxyError:
            if time.monotonic() > deadline:
                stop()
                raise ToxiproxyError(f"the {DOCKER_IMAGE} container did not answer on port {port} "
                                     f"within {START_TIMEOUT_S:g} s", fix=INSTALL_FIX) from None
            time.sleep(0.1)
