"""Writing a file so that a reader sees the old one or the whole new one, never half of it: the one way the
harness writes a file other processes or a later run may read.

    write_text(path, text)
    with replacing(path) as f:          # a file written in pieces (a long scenario file)
        f.write(...)

The text goes to a temporary file beside the target (same folder, so the same file system),
is flushed to disk, and is then renamed over the target, which is atomic on POSIX. A failure
leaves the target as it was and removes the temporary file. The new file gets the usual
permissions (0666 less the umask), not the 0600 of a tempfile.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO


def write_text(path: Path, text: str) -> Path:
    """Write `text` (UTF-8) to `path` atomically, creating its folder; returns the path."""
    with replacing(path) as f:
        f.write(text)
    return Path(path)


@contextlib.contextmanager
def replacing(path: Path) -> Iterator[TextIO]:
    """A text file (UTF-8) that replaces `path` whole when the block ends without an error; on an error `path` is
    left as it was and the temporary file removed."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _sync_folder(path.parent)


def _sync_folder(folder: Path) -> None:
    """Make the rename itself durable (best effort: not every file system lets a folder be opened)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
