"""The submissions of a class: found from folders, manifests or globs, named, and split into shards.

A submission is a folder holding `relay.toml` (or a manifest path: its folder is
the submission). Its name is the folder's name, made unique with its parent's name
when two share one. The order is by resolved path, so every machine that is given
the same list splits it the same way: shard i of N takes every N-th submission from
the i-th (0-based, as Kubernetes' JOB_COMPLETION_INDEX counts).
"""
from __future__ import annotations

import glob
import hashlib
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from relaychaos.errors import HarnessError


@dataclass(frozen=True)
class Submission:
    """One submission: its display name, folder, and manifest (None when there is no relay.toml)."""

    name: str
    folder: Path
    manifest: Path | None

    @property
    def slug(self) -> str:
        """A file-system-safe, unique folder name for its outputs: ascii words and a short hash of the path."""
        ascii_name = unicodedata.normalize("NFKD", self.name).encode("ascii", "ignore").decode()
        words = re.sub(r"[^A-Za-z0-9._-]+", "_", ascii_name).strip("_")[:40] or "submission"
        return f"{words}-{hashlib.sha256(str(self.folder).encode()).hexdigest()[:8]}"


def find(args: list[str], notice=lambda text: None) -> list[Submission]:
    """The submissions named by args (folders, relay.toml paths, or globs), sorted by path, each once.

    A glob's matches leave out bytecode and hidden folders, and a folder without relay.toml whose
    subfolders hold some (a folder *of* submissions), each said through `notice`; a folder named
    outright is always a submission, graded as one without relay.toml if it has none.
    """
    paths: list[Path] = []
    for arg in args:
        matches = sorted(glob.glob(arg)) if glob.has_magic(arg) else [arg]
        if glob.has_magic(arg):
            kept = [m for m in matches if not _not_a_submission(Path(m))]
            for m in sorted(set(matches) - set(kept)):
                notice(f"{m} left out: {_not_a_submission(Path(m))}")
            matches = kept
        if not matches:
            raise HarnessError(f"no submission matches {arg!r}", fix="give folders holding relay.toml, manifest "
                                                                     "paths, or a glob that matches some")
        for m in matches:
            p = Path(m).expanduser().resolve()
            if not p.exists():
                raise HarnessError(f"no submission at {p}", fix="check the path")
            if p.is_file() or p.is_dir():
                paths.append(p)
    subs: dict[Path, Submission] = {}
    for p in paths:
        folder, manifest = (p.parent, p) if p.is_file() else (p, p / "relay.toml")
        subs.setdefault(folder, Submission(folder.name, folder, manifest if manifest.is_file() else None))
    ordered = [subs[k] for k in sorted(subs)]
    names = [s.name for s in ordered]
    return [Submission(f"{s.folder.parent.name}/{s.name}", s.folder, s.manifest) if names.count(s.name) > 1 else s
            for s in ordered]


def _not_a_submission(path: Path) -> str | None:
    """Why a glob's match is no submission (None: it is one)."""
    if path.name.startswith((".", "__")):
        return "a hidden or bytecode folder"
    if path.is_dir() and not (path / "relay.toml").is_file() and any(path.glob("*/relay.toml")):
        return "a folder of submissions, not one (give its subfolders, e.g. its/*/)"
    return None


def parse_shard(text: str | None) -> tuple[int, int]:
    """`i/N` (0 <= i < N) as (i, N); (0, 1) for None."""
    if not text:
        return 0, 1
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if not m or not 0 <= int(m.group(1)) < int(m.group(2)):
        raise HarnessError(f"--shard {text!r} is not i/N with 0 <= i < N", fix="e.g. --shard 0/4 ... --shard 3/4 "
                                                                             "(Kubernetes: $(JOB_COMPLETION_INDEX)/N)")
    return int(m.group(1)), int(m.group(2))


def shard(subs: list[Submission], index: int, count: int) -> list[Submission]:
    """Every count-th submission from the index-th: disjoint shards that together hold them all."""
    return subs[index::count]
