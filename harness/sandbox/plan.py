"""What one sandboxed command may do, as the exec wrapper receives it (JSON on its command line).

A plan holds no secret (it is visible in /proc like any argv) and nothing the
wrapper must look up: the harness resolves uids, ports and paths before it spawns.
The wrapper reads the JSON as plain dicts, so that it imports no package.
"""
from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

WRAPPER = str(Path(__file__).with_name("__main__.py"))
RLIMITS = ("nproc", "data", "nofile", "fsize", "core", "cpu")  # resource.RLIMIT_<NAME>


@dataclass(frozen=True)
class Tmpfs:
    """A fresh tmpfs mounted over `at` in the command's own mount namespace, with `keep` folders bound back
    in place (read-write when listed in `writable`): hides what lies beneath, e.g. /root or /tmp."""

    at: str
    keep: tuple[str, ...] = ()
    writable: tuple[str, ...] = ()
    mode: str = "0755"
    size_mib: int = 1


@dataclass(frozen=True)
class Plan:
    """The layers to apply before exec; an empty plan only ties the child's life to the harness."""

    parent: int = field(default_factory=os.getpid)  # the child is SIGKILLed when its spawning thread dies
    uid: int | None = None
    gid: int | None = None
    rlimits: dict[str, int] = field(default_factory=dict)  # RLIMITS name -> soft = hard limit
    tmpfs: tuple[Tmpfs, ...] = ()
    cwd: str | None = None
    umask: int | None = None
    landlock_abi: int = 0  # 0: no Landlock
    read_only: tuple[str, ...] = ()
    read_write: tuple[str, ...] = ()
    connect: tuple[int, ...] = ()
    bind: tuple[int, ...] = ()

    def dumps(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    def wrap(self, argv: list[str]) -> list[str]:
        """The command line that applies this plan and then execs argv."""
        return [sys.executable, "-I", "-S", WRAPPER, self.dumps(), "--", *argv]
