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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from relaychaos.errors import HarnessError


@dataclass(frozen=True)
class Submission:
    """One submission: its display name, folder, and manifest (None when there is no relay.toml)."""

    name: str
    folder: Path
    manifest: Path | None
    notes: tuple[str, ...] = ()  # what a student should know of how it was found (relay.toml one level down)

    @property
    def slug(self) -> str:
        """A file-system-safe, unique folder name for its outputs: ascii words and a short hash of the path."""
        ascii_name = unicodedata.normalize("NFKD", self.name).encode("ascii", "ignore").decode()
        words = re.sub(r"[^A-Za-z0-9._-]+", "_", ascii_name).strip("_")[:40] or "submission"
        return f"{words}-{hashlib.sha256(str(self.folder).encode()).hexdigest()[:8]}"


SKIPPED_NAMES = ("lost+found", "__pycache__", "__MACOSX")


def find(args: list[str], notice: Callable[[str], object] = lambda text: None) -> list[Submission]:
    """The submissions named by args (folders, relay.toml paths, or globs), sorted by path, each once.

    Only folders are submissions: plain files (a roster.csv), hidden entries, `lost+found` and
    a folder of submissions (several subfolders holding relay.toml) are left out, and said once
    through `notice`. A relay.toml path stands for its folder. A folder whose only relay.toml is
    one level down is graded from there, with a note saying so.
    """
    paths: list[Path] = []
    left_out: list[str] = []
    for arg in args:
        matches = sorted(glob.glob(arg)) if glob.has_magic(arg) else [arg]
        if not matches:
            raise HarnessError(
                f"no submission matches {arg!r}",
                fix="give folders holding relay.toml, manifest paths, or a glob that matches some",
            )
        for m in matches:
            p = Path(m).expanduser()
            if not p.exists():
                raise HarnessError(f"no submission at {p.resolve()}", fix="check the path")
            why = _not_a_submission(p)
            if why:
                left_out.append(f"{m} ({why})")
            else:
                paths.append(p.resolve())
    if left_out:
        notice("left out, not submissions: " + "; ".join(left_out))
    if not paths:
        raise HarnessError(
            "no submission folder among the arguments", fix="give the folders of the submissions, e.g. class/*/"
        )
    subs: dict[Path, Submission] = {}
    for p in paths:
        folder = p.parent if p.is_file() else p
        subs.setdefault(folder, located(folder.name, folder) if p.is_dir() else Submission(folder.name, folder, p))
    ordered = [subs[k] for k in sorted(subs)]
    names = [s.name for s in ordered]
    return [
        Submission(f"{s.folder.parent.name}/{s.name}", s.folder, s.manifest, s.notes) if names.count(s.name) > 1 else s
        for s in ordered
    ]


def located(name: str, folder: Path) -> Submission:
    """The submission in `folder`: its relay.toml, or the one relay.toml one level down (with a note)."""
    if (folder / "relay.toml").is_file():
        return Submission(name, folder, folder / "relay.toml")
    below = sorted(p for p in folder.glob("*/relay.toml") if not p.parent.name.startswith((".", "__")))
    if len(below) == 1:
        sub = below[0].parent.name
        return Submission(
            name,
            folder,
            below[0],
            (
                f"relay.toml was not at the top of the submission but in its "
                f"folder {sub}/: graded from there (put relay.toml at the top "
                f"next time)",
            ),
        )
    return Submission(name, folder, None)


def _not_a_submission(path: Path) -> str | None:
    """Why an argument is no submission (None: it is one)."""
    if path.name.startswith(".") or path.name in SKIPPED_NAMES:
        return "a hidden or system folder"
    if path.is_file():
        return None if path.suffix == ".toml" else "a plain file"
    if not (path / "relay.toml").is_file() and len(list(path.glob("*/relay.toml"))) > 1:
        return "a folder of submissions, not one (give its subfolders, e.g. its/*/)"
    return None


def parse_shard(text: str | None) -> tuple[int, int]:
    """`i/N` (0 <= i < N) as (i, N); (0, 1) for None."""
    if not text:
        return 0, 1
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if not m or not 0 <= int(m.group(1)) < int(m.group(2)):
        raise HarnessError(
            f"--shard {text!r} is not i/N with 0 <= i < N",
            fix="e.g. --shard 0/4 ... --shard 3/4 (Kubernetes: $(JOB_COMPLETION_INDEX)/N)",
        )
    return int(m.group(1)), int(m.group(2))


def shard(subs: list[Submission], index: int, count: int) -> list[Submission]:
    """Every count-th submission from the index-th: disjoint shards that together hold them all."""
    return subs[index::count]
