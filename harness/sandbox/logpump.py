"""A relay command's output, copied into its log within the submission's budget of log bytes.

The relay writes into a pipe; the exec wrapper's outer process (outside every namespace of
the relay) copies it into the log file the harness opened, until the last writer closes the
pipe. Every command of one submission draws on one budget: an 8-byte count of the bytes
written so far, in a file the harness names, taken in chunks under a lock. Past the cap the
rest is read and dropped (a relay blocked on a full pipe would behave differently), and one
line in the log says so. Stdlib only (the exec wrapper imports it by path).
"""

from __future__ import annotations

import fcntl
import os
import struct

CHUNK = 1 << 16
_COUNT = struct.Struct("=Q")


class Budget:
    """The bytes one submission's logs may still take, shared by every command through a file."""

    def __init__(self, path: str, cap: int):
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        self.cap, self.granted = cap, 0

    def take(self, wanted: int) -> int:
        """How many of `wanted` bytes may be written (fewer, down to 0, near the cap)."""
        if self.granted < wanted:
            fcntl.lockf(self.fd, fcntl.LOCK_EX)
            try:
                raw = os.pread(self.fd, _COUNT.size, 0)
                used = _COUNT.unpack(raw)[0] if len(raw) == _COUNT.size else 0
                grant = max(0, min(max(CHUNK, wanted), self.cap - used))
                os.pwrite(self.fd, _COUNT.pack(used + grant), 0)
            finally:
                fcntl.lockf(self.fd, fcntl.LOCK_UN)
            self.granted += grant
        allowed = min(wanted, self.granted)
        self.granted -= allowed
        return allowed


def _write_all(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data) :]


def pump(source: int, log: int, budget: Budget | None) -> None:
    """Copy `source` into `log` until end of file, within the budget; the rest is dropped and said once."""
    dropped = 0
    while True:
        try:
            data = os.read(source, CHUNK)
        except OSError:
            break
        if not data:
            break
        allowed = len(data) if budget is None else budget.take(len(data))
        _write_all(log, data[:allowed])
        dropped += len(data) - allowed
    if dropped and budget is not None:  # only a budget drops bytes
        _write_all(
            log,
            (
                f"\nrelaychaos sandbox: this submission's logs reached their cap of "
                f"{budget.cap >> 20} MiB in all; {dropped} more bytes of this command's output were "
                f"dropped\n"
            ).encode(),
        )
