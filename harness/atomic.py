"""Writing a file so that a reader sees the old one or the whole new one, never half of it.

    write_text(path, text)

The text goes to a temporary file beside the target (same folder, so the same file system),
is flushed to disk, and is then renamed over the target, which is atomic on POSIX. A failure
leaves the target as it was and removes the temporary file. The new file gets the usual
permissions (0666 less the umask), not the 0600 of a tempfile.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path


def write_text(path: Path, text: str) -> Path:
    """Write `text` (UTF-8) to `path` atomically, creating its folder; returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _sync_folder(path.parent)
    return path


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
