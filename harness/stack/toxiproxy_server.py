"""Finding a Toxiproxy server: TOXIPROXY_URL, else a binary, else Docker, else one clear error.

RELAYCHAOS_TOXIPROXY chooses the route: `auto` (the default) is this order, the contract of
`acquire()`:
1. `TOXIPROXY_URL` if set: used as it is, never started or stopped by the harness; the proxies runs killed on
   this machine left there are removed first (stack/proxy_owner.py), named in `swept` and in log_dir;
2. a `toxiproxy-server` binary on PATH or in the project's tools/bin: spawned on a
   free loopback port and stopped by `close()`;
3. a reachable Docker daemon: RELAYCHAOS_TOXIPROXY_IMAGE (default ghcr.io/shopify/toxiproxy:2.12.0)
   on the host network, the container removed by `close()` (see toxiproxy_docker);
4. otherwise ToxiproxyError saying how to install one.
`binary` and `docker` force that route alone (TOXIPROXY_URL is then not used), and fail with
a message naming what is missing rather than falling back to another.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from relaychaos import options
from relaychaos.errors import ToxiproxyError
from relaychaos.ports import lease_port, release_port
from relaychaos.stack import proxy_owner, toxiproxy_docker
from relaychaos.stack.processes import Child, spawn, wait_http_ok
from relaychaos.stack.toxiproxy_control import Toxiproxy

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # the checkout (in a wheel: nothing there)
TOOLS_BIN = PROJECT_ROOT / "tools" / "bin"
VERSION = "v2.12.0"  # the Toxiproxy the harness is tested with (scripts/bootstrap.sh, relaychaos setup toxiproxy)
ROUTES = ("auto", "binary", "docker")
START_TIMEOUT_S = 15.0


def in_checkout() -> bool:
    """Whether the harness runs from a checkout of the project (which has scripts/bootstrap.sh), not a wheel."""
    return (PROJECT_ROOT / "scripts" / "bootstrap.sh").is_file()


def build_fix() -> str:
    """How to get a toxiproxy-server, in the words of a checkout's user or of an installed one's."""
    if in_checkout():
        return (
            "run `bash scripts/bootstrap.sh` (it builds the server with Go: "
            f"go install github.com/Shopify/toxiproxy/v2/cmd/server@{VERSION}, renamed toxiproxy-server), "
            "or put a toxiproxy-server binary on PATH"
        )
    return (
        f"run `relaychaos setup toxiproxy` (it builds the server {VERSION} with Go into {user_bin()}, or takes a "
        "release binary you downloaded: `relaychaos setup toxiproxy --from FILE`), or put a toxiproxy-server on PATH"
    )


def install_fix() -> str:
    daemon = (
        f"`bash {toxiproxy_docker.SETUP_SCRIPT}` as root starts one and builds a local image"
        if in_checkout()
        else "`apt-get install -y docker.io` as root, and the official image"
    )
    return f"{build_fix()}, start a Docker daemon ({daemon}), or set TOXIPROXY_URL to a running server"


@dataclass
class ToxiproxyServer:
    """A reachable Toxiproxy server and how it came to be; close() stops what the harness started."""

    control: Toxiproxy
    source: str  # 'TOXIPROXY_URL', a binary path, or 'docker container ID of IMAGE'
    _stop: Callable[[], None] = field(default=lambda: None, repr=False)
    child: Child | None = None  # the process, when the harness spawned the binary
    swept: list[str] = field(default_factory=list)  # dead runs' proxies removed from a TOXIPROXY_URL server

    @property
    def url(self) -> str:
        return self.control.url

    def close(self) -> None:
        self._stop()
        self._stop = lambda: None


def tools_bin() -> Path:
    """The project's tools folder (RELAYCHAOS_TOOLS_BIN overrides it)."""
    return Path(options.environment(options.TOOLS_BIN, default=str(TOOLS_BIN)))


def user_bin() -> Path:
    """Where `relaychaos setup toxiproxy` puts the server for an installed harness: $XDG_DATA_HOME/relaychaos/bin
    (default ~/.local/share/relaychaos/bin)."""
    data = options.environment(options.XDG_DATA_HOME) or str(Path.home() / ".local" / "share")
    return Path(data) / "relaychaos" / "bin"


def search_dirs() -> list[Path]:
    """The folders a toxiproxy-server is looked for in after PATH: RELAYCHAOS_TOOLS_BIN alone when set, else the
    checkout's tools/bin (in a checkout) and user_bin()."""
    if options.environment(options.TOOLS_BIN):
        return [tools_bin()]
    return [TOOLS_BIN, user_bin()] if in_checkout() else [user_bin()]


def find_binary() -> str | None:
    """The toxiproxy-server the harness would spawn (on PATH, else in search_dirs()), or None."""
    found = shutil.which("toxiproxy-server")
    if found:
        return found
    for folder in search_dirs():
        local = folder / "toxiproxy-server"
        if os.access(local, os.X_OK):
            return str(local)
    return None


def route() -> str:
    """RELAYCHAOS_TOXIPROXY: auto (default), binary or docker; anything else is an error."""
    chosen = options.environment(options.TOXIPROXY, default="auto").strip().lower()
    if chosen not in ROUTES:
        raise ToxiproxyError(
            f"RELAYCHAOS_TOXIPROXY={chosen!r} is not a route to Toxiproxy",
            fix="set it to auto (TOXIPROXY_URL, else a binary, else Docker), binary or docker, or unset it",
        )
    return chosen


def acquire(log_dir: Path) -> ToxiproxyServer:
    """A running Toxiproxy server, by the route RELAYCHAOS_TOXIPROXY chooses (see the module doc)."""
    chosen = route()
    if chosen == "docker":
        return _run_container()
    if chosen == "binary":
        binary = find_binary()
        if not binary:
            raise ToxiproxyError(
                "RELAYCHAOS_TOXIPROXY=binary, but there is no toxiproxy-server on PATH or in "
                + " or ".join(map(str, search_dirs())),
                fix=f"{build_fix()}; or unset RELAYCHAOS_TOXIPROXY",
            )
        return _spawn_binary(binary, log_dir)
    url = options.environment(options.TOXIPROXY_URL)
    if url:
        control = Toxiproxy(url)
        try:
            control.version()
        except ToxiproxyError as e:
            raise ToxiproxyError(
                f"TOXIPROXY_URL={url} does not answer: {e.what}",
                fix="start the server there, or unset TOXIPROXY_URL so that the harness starts its own",
            ) from None
        swept = proxy_owner.sweep(control)
        if swept:
            log_dir.mkdir(parents=True, exist_ok=True)
            (log_dir / "toxiproxy-swept.log").write_text("".join(f"{name}\n" for name in swept))
        return ToxiproxyServer(control, "TOXIPROXY_URL", swept=swept)
    binary = find_binary()
    if binary:
        return _spawn_binary(binary, log_dir)
    docker_reason = toxiproxy_docker.unavailable_reason()
    if docker_reason is None:
        try:
            return _run_container()
        except ToxiproxyError as e:
            raise ToxiproxyError(
                f"no TOXIPROXY_URL and no toxiproxy-server binary, so Docker ({e.where}) was tried: {e.what}",
                fix=f"{e.fix}; or {build_fix()}",
                details=e.details,
            ) from None
    raise ToxiproxyError(
        "no Toxiproxy server found: TOXIPROXY_URL is not set, no toxiproxy-server on PATH or in "
        f"{' or '.join(map(str, search_dirs()))}, and no Docker daemon ({docker_reason})",
        fix=install_fix(),
    )


def _spawn_binary(binary: str, log_dir: Path) -> ToxiproxyServer:
    port = lease_port()
    # Toxiproxy logs every connection below `error` (a soak's thousands a second would fill the disk)
    level = options.environment(options.TOXIPROXY_LOG_LEVEL, default="error")
    child = spawn(
        "toxiproxy",
        [binary, "-host", "127.0.0.1", "-port", str(port)],
        log_path=log_dir / f"toxiproxy-{port}.log",
        env={**os.environ, "LOG_LEVEL": level},
    )
    why = wait_http_ok(f"http://127.0.0.1:{port}/version", timeout_s=START_TIMEOUT_S, child=child)
    if why:
        child.kill()
        release_port(port)
        raise ToxiproxyError(
            f"{binary} {why}",
            fix=f"it is the toxiproxy-server found first (on PATH, then in {' or '.join(map(str, search_dirs()))}): "
            f"remove it or put a working one before it ({build_fix()}); its log is below",
            details=child.tail(),
        )

    def stop() -> None:
        child.stop()
        release_port(port)

    return ToxiproxyServer(Toxiproxy(f"http://127.0.0.1:{port}"), binary, stop, child)


def _run_container() -> ToxiproxyServer:
    control, stop, what = toxiproxy_docker.start()
    return ToxiproxyServer(control, what, stop)
