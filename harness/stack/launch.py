"""The one way relay code starts: every relay command (serve, a batch run, a diagnosis's retry) goes through start().

    child = start(sandbox, manifest, "serve", copy=copy, contract=env, log_path=..., ledger_dir=...,
                  tmp_dir=..., connect=(account_port,), port=relay_port)

start() reads the command from the manifest, gives it the relay's own variables ([env]) with
the contract's, runs it in the folder the manifest names (`root`, else its own folder, in the
working copy), finds its executable as the relay's own PATH finds it, asks the sandbox for the
plan (every layer it has; a diagnosis may only drop the rlimits) and spawns it through the exec
wrapper. Nothing else in relaychaos reads a manifest's commands to run them (tests/test_walls.py holds it to that).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from relaychaos.errors import RelayError
from relaychaos.sandbox.policy import Sandbox, WorkingCopy
from relaychaos.stack.manifest import Manifest
from relaychaos.stack.processes import Child, spawn


def start(
    sandbox: Sandbox,
    manifest: Manifest,
    command: str,
    *,
    copy: WorkingCopy,
    contract: dict[str, str],
    log_path: Path,
    ledger_dir: Path,
    tmp_dir: Path | None,
    connect: tuple[int, ...],
    args: tuple[str, ...] = (),
    port: int | None = None,
    relaxed: bool = False,
    lock_delay_ms: int = 0,
) -> Child:
    """Start `command` of the relay with `args` appended, in its sandbox (see the module doc)."""
    if command not in manifest.commands:
        raise RelayError(
            f"relay '{manifest.name}' has no `{command}` command, and the harness was asked to run it",
            where=f"{manifest.path} [commands]",
            fix=f"add `{command}` to [commands], or run only scenarios that do not run it",
        )
    argv = [*manifest.commands[command], *args]
    env = sandbox.env(contract, copy, tmp_dir, own=manifest.env)  # [env], then the contract's and the sandbox's
    executable(manifest, command, copy, env["PATH"])  # a missing program is said before anything starts
    plan = sandbox.plan(
        command,
        copy=copy,
        ledger_dir=ledger_dir,
        tmp_dir=tmp_dir,
        connect=connect,
        bind=(port,) if port else (),
        relaxed=relaxed,
        lock_delay_ms=lock_delay_ms,
    )
    return spawn(f"{manifest.name}:{command}", argv, log_path=log_path, cwd=copy.cwd, env=env, plan=plan)


def executable(manifest: Manifest, command: str, copy: WorkingCopy, path: str) -> str:
    """The command's argv[0] as found (relative to the folder it runs in, or on `path`); RelayError naming the
    manifest (relaychaos.stack.manifest.runnable says the same before a run).
    What it finds is only looked at: the plan never depends on it (a relay can change its folder at will)."""
    argv0 = manifest.commands[command][0]
    if "/" in argv0:
        found = str(copy.cwd / argv0) if os.access(copy.cwd / argv0, os.X_OK) else None
    else:
        found = shutil.which(argv0, path=path)
    if found is None or os.path.isdir(found):
        where = f"in {manifest.where_commands_run}" if "/" in argv0 else f"on the relay's PATH ({path})"
        raise RelayError(
            f"[commands].{command} = {list(manifest.commands[command])} cannot be run: `{argv0}` is "
            f"not an executable file {where}",
            where=str(manifest.path),
            fix=f"make `{argv0}` an executable that exists on PATH or in {manifest.folder}",
        )
    return found
