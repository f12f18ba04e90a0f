"""Toxiproxy through Docker: an image run on the host network, removed on close, never left behind.

The image is RELAYCHAOS_TOXIPROXY_IMAGE, by default the official
ghcr.io/shopify/toxiproxy:2.12.0 (pulled when it is not local and a registry
answers). Where no registry can be reached, `scripts/docker_toxiproxy.sh` (as root, in a
checkout) starts a Docker engine and imports a locally built server as
relaychaos/toxiproxy:2.12.0-local, with the official image's entrypoint (`/toxiproxy`,
taking -host H -port P). The `docker` package is imported only here, and only when this
route is taken: it is slow to import.
"""

from __future__ import annotations

import atexit
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from relaychaos import options
from relaychaos.errors import ToxiproxyError
from relaychaos.ports import lease_port, release_port
from relaychaos.stack.toxiproxy_control import Toxiproxy

if TYPE_CHECKING:
    from docker import DockerClient  # the SDK ships no types: these are Any to the type checker
    from docker.models.containers import Container

OFFICIAL_IMAGE = "ghcr.io/shopify/toxiproxy:2.12.0"
LOCAL_IMAGE = "relaychaos/toxiproxy:2.12.0-local"  # what scripts/docker_toxiproxy.sh builds
SETUP_SCRIPT = "scripts/docker_toxiproxy.sh"
LABEL = "relaychaos.toxiproxy"  # every container started here carries it (value: the harness's pid)
START_TIMEOUT_S = 15.0
_live: dict[str, Callable[[], None]] = {}  # container id -> its stop(), until it is called
_live_lock = threading.Lock()
DAEMON_FIX = (
    f"start a Docker daemon (as root in a relaychaos checkout, `bash {SETUP_SCRIPT}` installs docker.io "
    "if needed and starts dockerd), or point DOCKER_HOST at one"
)
IMAGE_FIX = (
    f"where a registry is reachable: `docker pull {OFFICIAL_IMAGE}`; where none is: build a local image "
    f"with `bash {SETUP_SCRIPT}` (as root, in a relaychaos checkout) and set "
    f"RELAYCHAOS_TOXIPROXY_IMAGE={LOCAL_IMAGE}"
)


def image() -> str:
    """The image the Docker route runs: RELAYCHAOS_TOXIPROXY_IMAGE, else the official one."""
    return options.environment(options.TOXIPROXY_IMAGE, default=OFFICIAL_IMAGE)


def daemon_address() -> str:
    return options.environment(options.DOCKER_HOST, default="unix:///var/run/docker.sock")


def connect() -> DockerClient:
    """A docker client whose daemon answered a ping, or ToxiproxyError saying why there is none."""
    try:
        # lazy: the Docker SDK takes a while to load; only this route needs it
        import docker  # noqa: PLC0415 - optional at run time, and slow to import
    except ImportError:
        raise ToxiproxyError(
            "the Python package 'docker' is not installed",
            where="the Docker route",
            fix="pip install 'docker>=7' (it is one of relaychaos' dependencies)",
        ) from None
    address = daemon_address()
    if address.startswith("unix://") and not Path(address.removeprefix("unix://")).exists():
        raise ToxiproxyError("no Docker daemon answers: no socket is there", where=address, fix=DAEMON_FIX)
    client = None
    try:
        client = docker.from_env(timeout=5)
        client.ping()
    except Exception as e:  # docker raises many kinds; any means 'no daemon answers here'
        if client is not None:
            client.close()
        raise ToxiproxyError(
            f"no Docker daemon answers: {first_line(e)}", where=daemon_address(), fix=DAEMON_FIX
        ) from None
    return client


def unavailable_reason() -> str | None:
    """Why the Docker route cannot be taken (no package, no daemon), or None when a daemon answers."""
    try:
        connect().close()
    except ToxiproxyError as e:
        return f"{e.where}: {e.what}" if e.where else e.what
    return None


def ensure_image(client: DockerClient, name: str) -> None:
    """The image is local, or pulled now; else ToxiproxyError with the two ways to get it."""
    import docker.errors  # noqa: PLC0415  # lazy: the Docker SDK takes a while to load; only this route needs it

    try:
        client.images.get(name)
        return
    except docker.errors.ImageNotFound:
        pass
    except Exception as e:
        raise ToxiproxyError(
            f"could not look up image {name}: {first_line(e)}", where=daemon_address(), fix=DAEMON_FIX
        ) from None
    try:
        client.images.pull(name)
    except Exception as e:
        fix = IMAGE_FIX
        if name != LOCAL_IMAGE and has_image(client, LOCAL_IMAGE):
            fix = f"{LOCAL_IMAGE} is here (built by {SETUP_SCRIPT}): set RELAYCHAOS_TOXIPROXY_IMAGE={LOCAL_IMAGE}"
        raise ToxiproxyError(
            f"image {name} is not in the local Docker and could not be pulled: {first_line(e)}",
            where=daemon_address(),
            fix=fix,
        ) from None


def has_image(client: DockerClient, name: str) -> bool:
    """Whether the daemon has image `name` locally."""
    try:
        client.images.get(name)
        return True
    except Exception:
        return False


def start(name: str | None = None) -> tuple[Toxiproxy, Callable[[], None], str]:
    """Run Toxiproxy from image `name` on the host network: (its control, stop, a description).

    stop() removes the container; on any failure it is removed before the error is raised.
    """
    name = name or image()
    client = connect()
    try:
        ensure_image(client, name)
        port = lease_port()
    except BaseException:
        client.close()
        raise
    try:
        container = _create(client, name, port)
    except BaseException:
        client.close()
        release_port(port)
        raise

    def stop() -> None:
        with _live_lock:
            _live.pop(container.id, None)
        try:
            container.remove(force=True)
        except Exception:  # already gone (or the daemon went away): nothing more to undo
            pass
        finally:
            client.close()
            release_port(port)

    with _live_lock:
        _live[container.id] = stop

    try:
        container.start()
        control = Toxiproxy(f"http://127.0.0.1:{port}")
        _wait_ready(container, control, name, port)
    except ToxiproxyError:
        stop()
        raise
    except Exception as e:
        logs = _logs(container)
        stop()
        raise ToxiproxyError(
            f"could not start a container of {name}: {first_line(e)}",
            where=daemon_address(),
            fix=IMAGE_FIX,
            details=logs,
        ) from None
    except BaseException:  # KeyboardInterrupt while waiting: still nothing left running
        stop()
        raise
    return control, stop, f"docker container {container.short_id} of {name}"


def _create(client: DockerClient, name: str, port: int) -> Container:
    try:
        return client.containers.create(
            name,
            ["-host", "127.0.0.1", "-port", str(port)],
            network_mode="host",
            name=f"relaychaos-toxiproxy-{os.getpid()}-{port}",
            labels={LABEL: str(os.getpid())},
        )
    except Exception as e:
        raise ToxiproxyError(
            f"could not create a container of {name}: {first_line(e)}", where=daemon_address(), fix=IMAGE_FIX
        ) from None


def _wait_ready(container: Container, control: Toxiproxy, name: str, port: int) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        try:
            control.version()
            return
        except ToxiproxyError:
            pass
        container.reload()
        if container.status not in ("created", "running"):
            raise ToxiproxyError(
                f"the container of {name} exited ({container.status}) before answering on port {port}",
                where=daemon_address(),
                fix=IMAGE_FIX,
                details=_logs(container),
            )
        if time.monotonic() > deadline:
            raise ToxiproxyError(
                f"the container of {name} did not answer on port {port} within {START_TIMEOUT_S:g} s",
                where=daemon_address(),
                fix=IMAGE_FIX,
                details=_logs(container),
            )
        time.sleep(0.1)


def _logs(container: Container) -> str:
    try:
        text = container.logs(tail=15).decode(errors="replace").rstrip()
    except Exception:
        return ""
    return "container log:\n" + "\n".join("    | " + line for line in text.splitlines()) if text else ""


def first_line(e: BaseException) -> str:
    """The daemon's own explanation when there is one (docker's APIError), else the error's first line."""
    explanation = getattr(e, "explanation", None)
    text = (explanation.decode(errors="replace") if isinstance(explanation, bytes) else str(explanation or e)).strip()
    text = text or type(e).__name__
    return text.splitlines()[0][:200]


@atexit.register
def remove_all() -> None:
    """Remove every container started here and not yet stopped: the last line of defence at exit.

    (A harness killed with SIGKILL cannot do even this; its containers carry the label LABEL.)"""
    with _live_lock:
        stops = list(_live.values())
    for stop in stops:
        stop()
