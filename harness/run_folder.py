"""What a run keeps beside its results.json: every scenario's history and its relay logs.

    runs/<stamp>/histories/<scenario>.jsonl       (.jsonl.gz above relaychaos.history.COMPRESS_OVER)
    runs/<stamp>/logs/<scenario>/relay-a.log ...  (each stack's *.log; stack1-... for a test's second stack)
    runs/<stamp>/relay-logs.budget                (the count of log bytes every relay command drew on)
    runs/<stamp>/not-started.txt                  (why the run stopped: its relay's serve never started)

xdist workers write these files themselves and tell the controller the paths through
the test report (it writes results.json); paths are relative to the run folder. A name
is claimed by creating logs/<name>/ (mkdir is atomic), so two workers running scenarios
of the same name get `name` and `name-2`.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import time
from pathlib import Path

from relaychaos import options
from relaychaos.history import COMPRESS_OVER, History, compressed, save

HISTORIES, LOGS = "histories", "logs"
LOG_BUDGET = "relay-logs.budget"  # one submission's log bytes in all (relaychaos.sandbox.logpump)
NOT_STARTED = "not-started.txt"  # why a run whose serve never started stopped (relaychaos.plugin.start_gate)


def out_folder(args: argparse.Namespace, prefix: str = "") -> Path:
    """A command's run folder: its --out, or runs/<prefix>YYYYmmdd-HHMMSS under the working folder, resolved and
    written back to args.out (the command line's main hands it over at the end: hand_over)."""
    out = (Path(args.out) if args.out else Path("runs") / time.strftime(f"{prefix}%Y%m%d-%H%M%S")).resolve()
    args.out = str(out)
    return out


def hand_over(folder: str | Path | None) -> None:
    """Under sudo (root, with SUDO_UID set), give the run folder and all in it to the user who ran the command, so
    that the steps after it, as that user, can read what it wrote; it stays 0700: theirs alone. Nothing otherwise."""
    uid = options.environment(options.SUDO_UID)
    if folder is None or not uid or os.geteuid() != 0 or not Path(folder).is_dir():
        return
    gid = options.environment(options.SUDO_GID) or uid
    for path in (Path(folder), *Path(folder).rglob("*")):
        os.lchown(path, int(uid), int(gid))


def safe_name(name: str) -> str:
    """A file name made of the scenario's name (anything but A-Z a-z 0-9 . _ - becomes _)."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", name).strip(".") or "scenario"


class RunFolder:
    """The run folder of one `relaychaos run` (the folder of results.json), as a worker writes into it."""

    def __init__(self, root: Path):
        self.root = Path(root)

    def claim(self, name: str) -> str:
        """A name no other scenario of this run has (name, name-2, ...); its logs folder is created."""
        base, n = safe_name(name), 1
        (self.root / LOGS).mkdir(parents=True, exist_ok=True)
        while True:
            candidate = base if n == 1 else f"{base}-{n}"
            try:
                (self.root / LOGS / candidate).mkdir()
                return candidate
            except FileExistsError:
                n += 1

    def keep_history(self, history: History | Path, name: str) -> str:
        """Keep the history under the claimed name (gzipped when large); its path relative to the run folder.

        A history already saved to a file (`run_and_check` saves each) is moved here, not written again."""
        target = self.root / HISTORIES / f"{name}.jsonl"
        if isinstance(history, Path):
            target.parent.mkdir(parents=True, exist_ok=True)
            path = compressed(Path(shutil.move(history, target)), COMPRESS_OVER)
        else:
            path = save(history, target, COMPRESS_OVER)
        return str(path.relative_to(self.root))

    def keep_logs(self, name: str, workdirs: list[Path]) -> str:
        """Copy every stack's *.log into logs/<name>/ (the first stack's flat, others prefixed stackN-)."""
        target = self.root / LOGS / name
        target.mkdir(parents=True, exist_ok=True)
        for i, workdir in enumerate(workdirs):
            for log in sorted(Path(workdir).glob("*.log")):
                shutil.copy2(log, target / (log.name if i == 0 else f"stack{i}-{log.name}"))
        return str(target.relative_to(self.root))
