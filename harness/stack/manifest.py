"""relay.toml, the manifest of a relay (contract section 1): read, checked, explained.

A manifest is checked whole before anything starts: every problem found is
listed in one ManifestError naming the file and the fix.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from relaychaos.errors import ManifestError
from relaychaos.stack import api_profile, batch_arguments
from relaychaos.stack.api_profile import Profile
from relaychaos.stack.batch_arguments import BatchArguments

COMMANDS = ("serve", "resolve", "reprocess", "purge")
BATCH = COMMANDS[1:]  # optional outside the course profile: scenarios that need one are not run without it
KNOWN = ("name", "description", "root", "commands", "arguments", "limits", "api", "downstream", "ledger")
DEFAULT_READY_TIMEOUT_S = 10.0
EXAMPLE = """name = "my-relay"
[commands]
serve     = ["python", "-m", "my_relay", "serve"]
resolve   = ["python", "-m", "my_relay", "resolve"]
reprocess = ["python", "-m", "my_relay", "reprocess"]
purge     = ["python", "-m", "my_relay", "purge"]
[limits]
ready_timeout_s = 10"""


@dataclass(frozen=True)
class Manifest:
    """A checked relay.toml: the relay's name, its commands, where to run them, and how it is spoken to."""

    path: Path
    name: str
    commands: dict[str, tuple[str, ...]]
    ready_timeout_s: float = DEFAULT_READY_TIMEOUT_S
    description: str = ""
    warnings: tuple[str, ...] = ()
    root: Path | None = None  # `root = ".."`: the relay's code lies in a folder above the manifest's
    profile: Profile = field(default_factory=Profile)
    arguments: BatchArguments = field(default_factory=BatchArguments)  # how its batch commands take their value

    @property
    def folder(self) -> Path:
        """The working directory of every command: the manifest's folder."""
        return self.path.parent

    @property
    def code(self) -> Path:
        """The relay's own folder, the one a sandbox copies: `root` if given, else the manifest's folder."""
        return self.root or self.folder


def load(path: str | Path) -> Manifest:
    """Read and check a relay.toml (or a folder holding one)."""
    path = Path(path).expanduser()
    if path.is_dir():
        path = path / "relay.toml"
    path = path.resolve()
    if not path.is_file():
        raise ManifestError(
            f"no relay manifest at {path}", fix="pass --relay path/to/relay.toml; a manifest looks like:\n" + EXAMPLE
        )
    try:
        data = tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ManifestError(
            f"not valid TOML: {e}", where=str(path), fix="correct the syntax; a manifest looks like:\n" + EXAMPLE
        ) from None
    return _check(path, data)


def _check(path: Path, data: dict) -> Manifest:
    problems: list[str] = []
    # Keys the contract does not define are reported, not refused: a relay may carry its own.
    warnings = [f"unknown key `{k}` ignored (known: {', '.join(KNOWN)})" for k in data if k not in KNOWN]
    profile = api_profile.check(data, problems)
    arguments = batch_arguments.check(data.get("arguments"), problems)
    root = _root(path, data.get("root"), problems)
    name = data.get("name", path.parent.name)
    if not isinstance(name, str) or not name.strip():
        problems.append("`name` must be a non-empty string")
    description = data.get("description", "")
    if not isinstance(description, str):
        problems.append("`description` must be a string (one line saying what this relay is)")
    commands = data.get("commands")
    checked: dict[str, tuple[str, ...]] = {}
    if not isinstance(commands, dict):
        problems.append("missing table [commands] with serve, resolve, reprocess and purge")
        commands = {}
    for cmd in COMMANDS:
        argv = commands.get(cmd)
        if argv is None and cmd in BATCH and profile.name != "course":
            continue
        if argv is None:
            problems.append(f"[commands] has no `{cmd}`")
        elif not (isinstance(argv, list) and argv and all(isinstance(a, str) and a for a in argv)):
            problems.append(f"[commands].{cmd} must be a non-empty list of strings (an argv), got {argv!r}")
        else:
            checked[cmd] = tuple(argv)
    warnings += [f"unknown command `{k}` in [commands] ignored" for k in commands if k not in COMMANDS]
    limits = data.get("limits", {})
    timeout = DEFAULT_READY_TIMEOUT_S
    if not isinstance(limits, dict):
        problems.append("[limits] must be a table")
    else:
        raw = limits.get("ready_timeout_s", DEFAULT_READY_TIMEOUT_S)
        if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not 0 < raw <= 600:
            problems.append(f"[limits].ready_timeout_s must be a number of seconds in (0, 600], got {raw!r}")
        else:
            timeout = float(raw)
        warnings += [f"unknown key `{k}` in [limits] ignored" for k in limits if k != "ready_timeout_s"]
    if problems:
        raise ManifestError(
            "this relay manifest cannot be used:\n" + "\n".join(f"  - {p}" for p in problems),
            where=str(path),
            fix="correct it as listed (contract section 1); a manifest looks like:\n" + EXAMPLE,
        )
    return Manifest(
        path, name.strip(), checked, timeout, description.strip(), tuple(warnings), root, profile, arguments
    )


def _root(path: Path, raw: object, problems: list[str]) -> Path | None:
    """`root`: a folder holding the manifest's, relative to it (e.g. "../.."), for a relay whose manifest sits
    below its code; the sandbox copies that folder whole, and the commands still run from the manifest's."""
    if raw is None:
        return None
    folder = (path.parent / raw).resolve() if isinstance(raw, str) and raw else None
    if folder is None or not folder.is_dir() or folder not in [path.parent, *path.parent.parents]:
        problems.append(f'`root` must name a folder holding the manifest\'s, relative to it (e.g. ".."), got {raw!r}')
        return None
    return folder
