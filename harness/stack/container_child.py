"""The containers of a relay as the supervisor and the engine see its processes (relaychaos.stack.processes.Process):
each killed with container.kill() (SIGKILL), its output appended to its log as it comes, and removed on kill,
on close, on any error and, the last line of defence, at exit (atexit).

Every container started here carries the label LABEL (value: the harness's pid): a harness killed with
SIGKILL cannot remove its own, and `docker ps -a --filter label=relaychaos.relay` lists them.
"""

from __future__ import annotations

import atexit
import contextlib
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from relaychaos.stack.processes import log_tail

if TYPE_CHECKING:
    from docker.models.containers import Container as DockerContainer  # the SDK ships no types: Any

LABEL = "relaychaos.relay"  # every container started here carries it (value: the harness's pid)
_live: dict[str, Callable[[], None]] = {}  # container id -> its removal, until it is done
_live_lock = threading.Lock()


class ContainerExit:
    """A container seen as a process's exit: its status once it has exited (None while it runs)."""

    def __init__(self, container: DockerContainer):
        self.container = container
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                self.container.reload()
            except Exception:  # removed: it has exited, how is no longer known
                self.returncode = -1
                return self.returncode
            if self.container.status in ("exited", "dead"):
                self.returncode = int(self.container.attrs["State"]["ExitCode"])
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """Its exit status; subprocess.TimeoutExpired when it runs `timeout` seconds more."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if timeout is not None and deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"container {self.container.short_id}", timeout)
            time.sleep(0.02)
        assert self.returncode is not None
        return self.returncode


@dataclass
class ContainerChild:
    """One container of the relay: named as a command is (relay:serve), its output appended to its log."""

    name: str
    argv: list[str]
    log_path: Path
    container: DockerContainer
    pid: int  # of its process, as the machine sees it
    popen: ContainerExit = field(init=False)
    _pump: threading.Thread | None = None

    def __post_init__(self) -> None:
        self.popen = ContainerExit(self.container)

    def follow(self) -> None:
        """Append the container's output to its log as it comes, until it ends (a thread of its own)."""
        self._pump = threading.Thread(target=_pump, args=(self.container, self.log_path), daemon=True, name=self.name)
        self._pump.start()

    def alive(self) -> bool:
        return self.popen.poll() is None

    def kill(self) -> None:
        """SIGKILL it (container.kill), wait for its end, keep its last output in the log, and remove it."""
        try:
            if self.alive():
                self.container.kill()
            self.popen.wait(timeout=10)
        except Exception:  # gone already, or the daemon went away: remove() says nothing more
            pass
        if self._pump is not None:
            self._pump.join(timeout=2)
        remove(self.container)

    def tail(self, lines: int = 15) -> str:
        return log_tail(self.log_path, lines)


def _pump(container: DockerContainer, log_path: Path) -> None:
    """Append the container's output to log_path as it comes, until it ends."""
    try:
        with open(log_path, "ab", buffering=0) as log:
            for chunk in container.logs(stream=True, follow=True, stdout=True, stderr=True):
                log.write(chunk)
    except Exception:  # the container was removed, or the daemon went away: the log has what came
        pass


def track(container: DockerContainer, removal: Callable[[], None] | None = None) -> None:
    """Remove `container` at exit if nothing did before (with `removal`, when more than the container must go)."""
    with _live_lock:
        _live[container.id] = removal or (lambda: remove(container))


def remove(container: DockerContainer) -> None:
    with _live_lock:
        _live.pop(container.id, None)
    with contextlib.suppress(Exception):  # already gone (or the daemon went away): nothing more to undo
        container.remove(force=True)


@atexit.register
def remove_all() -> None:
    """Remove every container started here and not yet removed: the last line of defence at exit.

    (A harness killed with SIGKILL cannot do even this; its containers carry the label LABEL.)"""
    with _live_lock:
        removals = list(_live.values())
    for undo in removals:
        undo()
