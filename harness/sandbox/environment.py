"""The environment a relay's commands get: the variables the sandbox sets, and the PATH their programs are found on.

    env = command_env(contract, own, on=True, home=str(copy.root), tmp_dir=None)   # Sandbox.env
    commands_path(on=True)          # where a manifest's `python`, `node`, `go` are found (relaychaos.stack.manifest)

With the sandbox on, a command gets a bare environment: the relay's own variables (relay.toml's
[env]), the contract's (and [api.env]'s names for them), PATH (this Python's folder first, contract
section 1, then the system's), HOME (its folder), LANG, and TMPDIR where it has no private /tmp.
With the sandbox off, the harness's own environment lies under them all.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from relaychaos import options

SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
OWN_VARIABLES = ("PATH", "HOME", "LANG", "TMPDIR", "PYTHONUNBUFFERED")  # what the sandbox sets; [env] may not


def commands_path(*, on: bool) -> str:
    """The PATH a relay's commands get: this Python's folder first, then the system's (the sandbox on) or the
    harness's own PATH (off)."""
    rest = SYSTEM_PATH if on else options.environment(options.PATH, default="")
    return os.path.dirname(sys.executable) + os.pathsep + rest


def command_env(
    contract: Mapping[str, str], own: Mapping[str, str], *, on: bool, home: str, tmp_dir: str | None
) -> dict[str, str]:
    """One command's environment (see the module doc); `own` never names a variable of the others
    (relaychaos.stack.manifest refuses it), `tmp_dir` is its TMPDIR (None: it has a /tmp of its own)."""
    if not on:
        return (
            dict(os.environ)
            | {"PATH": commands_path(on=False)}
            | dict(own)
            | dict(contract)
            | {"PYTHONUNBUFFERED": "1"}
        )
    env = {"PATH": commands_path(on=True), "HOME": home, "LANG": "C.UTF-8"}
    if tmp_dir is not None:
        env["TMPDIR"] = tmp_dir
    return dict(own) | env | dict(contract)
