"""A relay's folders as the sandbox copies them: what a copy is made from, and the working copy a relay runs in."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


class RelayFolders(Protocol):
    """What a working copy is made from: a relay's manifest (relaychaos.stack.manifest.Manifest)."""

    @property
    def code(self) -> Path: ...  # the relay's own folder, the one copied

    @property
    def folder(self) -> Path: ...  # where its commands run (`root`, else the manifest's folder), within `code`


@dataclass(frozen=True)
class WorkingCopy:
    """A relay's folder as its commands see it: `root`, the copy of the folder copied, and `cwd`, the folder within
    it where every command runs (relay.toml's `root`, else the manifest's folder: contract section 1)."""

    root: Path
    cwd: Path
