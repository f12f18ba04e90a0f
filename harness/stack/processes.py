"""Child processes the harness owns: spawned in their own group, logged, never left behind.

Every process is started in a new session (so the whole group can be killed),
with its output in a log file, through the sandbox's exec wrapper, which sets
Linux's parent-death signal (so that it is SIGKILLed if the harness itself dies
without cleaning up) and whatever layers its plan holds, then `execve`s it:
nothing runs between fork and exec in the threaded harness. `reap_all()` runs at
interpreter exit as a last line of defence.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import socket
import subprocess
import threading
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from relaychaos.sandbox.plan import Plan

_live: dict[int, Child] = {}
_live_lock = threading.Lock()


def port_in_use(port: int, host: str = "127.0.0.1") -> bool:
    """Whether something accepts TCP connections on host:port right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.2)
        return s.connect_ex((host, port)) == 0


TAIL_BYTES, TAIL_LINE = 64 << 10, 400  # what of a relay's log an error message quotes: its end, each line cut


def tail_text(path: Path, most: int = TAIL_BYTES) -> str:
    """The last `most` bytes of a file, decoded (a byte that is not UTF-8 replaced): never the whole of a relay's
    log, which may be as large as its log budget. OSError as open() raises it."""
    with path.open("rb") as log:
        log.seek(max(0, log.seek(0, os.SEEK_END) - most))
        return log.read(most).decode(errors="replace")


def log_tail(path: Path, lines: int = 15) -> str:
    """The last lines of a log file (of its last TAIL_BYTES, each cut at TAIL_LINE characters), indented for quoting
    in an error message: a relay's log may be as large as its log budget, and its lines as long."""
    try:
        text = tail_text(path)
    except OSError:
        return f"    (no log at {path})"
    tail = [line if len(line) <= TAIL_LINE else line[:TAIL_LINE] + " …" for line in text.rstrip().splitlines()[-lines:]]
    if not tail:
        return f"    (log {path} is empty)"
    return "\n".join("    | " + line for line in tail) + f"\n    (full log: {path})"


class Exit(Protocol):
    """How a relay's command ends, as subprocess.Popen says it (a container's: relaychaos.stack.container_child):
    its status once it has ended, None before; wait() raises subprocess.TimeoutExpired at its time-out."""

    @property
    def returncode(self) -> int | None: ...

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...


class Process(Protocol):
    """A relay's running command as the supervisor and the engine know it: a Child, or a container of its image."""

    @property
    def name(self) -> str: ...

    @property
    def argv(self) -> list[str]: ...

    @property
    def log_path(self) -> Path: ...

    @property
    def popen(self) -> Exit: ...

    @property
    def pid(self) -> int: ...

    def alive(self) -> bool: ...

    def kill(self) -> None: ...

    def tail(self, lines: int = 15) -> str: ...


@dataclass
class Child:
    """One spawned process and its log; kill() takes down its whole process group."""

    name: str
    argv: list[str]
    log_path: Path
    popen: subprocess.Popen

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Send sig to the process group and, for SIGKILL, wait until the leader and its children are gone (a
        sandboxed command's init dies with its whole PID namespace: nothing of it runs once this returns)."""
        children = _children(self.popen.pid) if sig == signal.SIGKILL else []
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.popen.pid, sig)
        if sig == signal.SIGKILL:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.popen.wait(timeout=10)
            _wait_gone(children, timeout_s=10)
            with _live_lock:
                _live.pop(self.popen.pid, None)

    def stop(self, grace_s: float = 2.0) -> None:
        """SIGTERM, then SIGKILL after grace_s: for servers the harness merely borrows."""
        if self.alive():
            self.kill(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.popen.wait(timeout=grace_s)
        self.kill(signal.SIGKILL)

    def tail(self, lines: int = 15) -> str:
        return log_tail(self.log_path, lines)


def _children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _wait_gone(pids: list[int], timeout_s: float) -> None:
    """Wait until each pid has exited (a zombie awaiting its reaper counts as gone)."""
    deadline = time.monotonic() + timeout_s
    for pid in pids:
        while time.monotonic() < deadline:
            try:
                state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
            except (OSError, IndexError):
                break
            if state in ("Z", "X"):
                break
            time.sleep(0.002)


def spawn(
    name: str,
    argv: list[str],
    *,
    log_path: Path,
    cwd: Path | str | None = None,
    env: dict[str, str] | None = None,
    plan: Plan | None = None,
) -> Child:
    """Start argv under `plan` (default: none but the parent-death signal) in its own process group, with
    stdout and stderr appended to log_path.

    argv not found or not executable makes the child exit 127 or 126 with one line in its log saying so;
    callers check an executable exists first when they want to name their own source in the error.
    """
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        log.write(f"--- {time.strftime('%H:%M:%S')} start {name}: {argv}\n".encode())
        log.flush()
        popen = subprocess.Popen(
            (plan or Plan()).wrap(argv),
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    child = Child(name, list(argv), log_path, popen)
    with _live_lock:
        _live[popen.pid] = child
    return child


# Straight to the address, never through a proxy of the environment (HTTP_PROXY and the like are for the world,
# the parts polled here listen on this machine), and without reading the environment's proxies on every poll
def wait_http_ok(
    url: str, *, timeout_s: float, child: Child | None = None, headers: dict[str, str] | None = None
) -> str | None:
    """Poll url (GET, with headers if given) until it answers HTTP 200; return None, or why it did not.

    Stops early when `child` exits; timeout_s 0 is one poll. Each poll is one HTTP/1.1 exchange whose whole head
    must arrive within POLL_S and by the deadline (a server trickling its answer a byte at a time waits no longer
    than `timeout_s`; a head cut short, or over HEAD_BYTES, is not an answer). The reason is one of 'exited with
    status N' or 'did not answer within T s (last: ...)'.
    """
    deadline = time.monotonic() + timeout_s
    last = "no attempt"
    while True:
        if child is not None and not child.alive():
            return f"exited with status {child.popen.returncode} before answering {url}"
        try:
            status = _status(url, headers or {}, deadline if timeout_s > 0 else time.monotonic() + POLL_S)
            if status == 200:
                return None
            last = f"HTTP {status}"
        except (OSError, ValueError) as e:
            last = str(e) or type(e).__name__
        if time.monotonic() >= deadline:
            return f"did not answer {url} with HTTP 200 within {timeout_s:g} s (last: {last})"
        time.sleep(0.01)


HEAD_BYTES = 16 << 10  # the most of an answer's head a readiness poll reads
POLL_S = 1.0  # one poll's connect, and then its whole head: a connection held unanswered is given up and tried again


def _status(url: str, headers: dict[str, str], until: float) -> int:
    """The HTTP status of GET url, its head read whole within POLL_S of the connection and by `until` (monotonic);
    OSError or ValueError otherwise."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "http" or not parts.hostname:
        raise ValueError(f"{url} is not an http:// URL")
    fields = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    request = f"GET {target} HTTP/1.1\r\nHost: {parts.netloc}\r\n{fields}Connection: close\r\n\r\n"
    attempt = min(POLL_S, max(0.01, until - time.monotonic()))
    with socket.create_connection((parts.hostname, parts.port or 80), timeout=attempt) as s:
        s.sendall(request.encode("latin-1"))
        until = min(until, time.monotonic() + POLL_S)  # one poll's head; another poll follows while time is left
        head = b""
        while b"\r\n\r\n" not in head:
            left = until - time.monotonic()
            if left <= 0:
                raise TimeoutError("its answer's head had not arrived whole")
            s.settimeout(left)
            more = s.recv(4096)
            if not more:
                raise ConnectionError("the connection closed before the answer's head ended")
            head += more
            if len(head) > HEAD_BYTES:
                raise ValueError(f"the answer's head is over {HEAD_BYTES >> 10} KiB")
    line = head.split(b"\r\n", 1)[0].decode("latin-1").split()
    if len(line) < 2 or not line[0].startswith("HTTP/") or not line[1].isdigit():
        raise ValueError(f"not an HTTP answer: {head[:80]!r}")
    return int(line[1])


def reap_all() -> None:
    """SIGKILL every process group this interpreter spawned and has not yet reaped."""
    with _live_lock:
        children = list(_live.values())
    for child in children:
        child.kill()


atexit.register(reap_all)
