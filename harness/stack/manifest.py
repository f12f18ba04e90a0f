"""relay.toml, the manifest of a relay (contract section 1): read, checked, explained.

A manifest is checked whole before anything starts: every problem found is
listed in one ManifestError naming the file and the fix, the fix shown in the
manifest's own profile (a keyed service's [ledger] as a keyed service writes it).
`load` checks the file and the folder it names (`root`); `runnable` checks, before a
run, that each command's program is there to be run.

    root = "service"        # optional: where the commands run, relative to the manifest's folder
    [env]                   # optional: the service's own variables, given to every command
    LEASE_MS = "3000"
"""

from __future__ import annotations

import os
import re
import shutil
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from relaychaos.errors import ManifestError
from relaychaos.sandbox.environment import OWN_VARIABLES
from relaychaos.sandbox.policy import NOT_COPIED
from relaychaos.stack import api_profile, batch_arguments, container
from relaychaos.stack.api_profile import Profile
from relaychaos.stack.batch_arguments import BatchArguments
from relaychaos.stack.container import Container

COMMANDS = ("serve", "resolve", "reprocess", "purge")
BATCH = COMMANDS[1:]  # optional outside the course profile: scenarios that need one are not run without it
KNOWN = (
    "name",
    "description",
    "root",
    "env",
    "commands",
    "arguments",
    "limits",
    "api",
    "downstream",
    "ledger",
    "container",
)
# the variables the harness gives every command (contract section 1, and LEDGER_URL for a ledger in PostgreSQL)
CONTRACT_VARIABLES = ("RELAY_HOST", "RELAY_PORT", "ACCOUNT_URL", "LEDGER_PATH", "ACCOUNT_TIMEOUT_MS", "LEDGER_URL")
DEFAULT_READY_TIMEOUT_S = 10.0
EXAMPLE = """name = "my-relay"
# root = ".."                  # optional: the folder the commands run in, relative to this file's
[commands]
serve     = ["python", "-m", "my_relay", "serve"]
resolve   = ["python", "-m", "my_relay", "resolve"]
reprocess = ["python", "-m", "my_relay", "reprocess"]
purge     = ["python", "-m", "my_relay", "purge"]
[limits]
ready_timeout_s = 10"""
# What each table looks like, in each profile: a problem's fix shows the tables it names, as the profile writes them.
KEYED_EXAMPLES = {
    "commands": """name = "payments"
# root = "service"             # optional: the folder the commands run in, relative to this file's
[commands]                     # serve; resolve, reprocess and purge only if the service has them
serve = ["./bin/payments", "serve"]
[limits]
ready_timeout_s = 20""",
    "api": api_profile.IDEMPOTENCY_EXAMPLE
    + """
[api.env]                      # the service's names for what the harness gives it
port = "PORT"
downstream_url = "PSP_URL"
ledger_url = "DATABASE_URL\"""",
    "env": """[env]                          # the service's own settings, as strings, given to every command
LEASE_MS = "3000"
LOG_LEVEL = "debug\"""",
    "downstream": """[downstream]                   # the PSP as the service calls it
key = "/reference"
transfer = { method = "POST", path = "/v1/transfers" }
query = { method = "GET", path = "/v1/transfers?reference={key}" }
[downstream.example]
amount = 100
debtor_account = "alice"
creditor_account = "bob"
reference = "k1"
[downstream.fields]
amount = "/amount"
payer = "/debtor_account"
payee = "/creditor_account\"""",
    "ledger": """[ledger]                       # the service's own table, read only
kind = "postgresql"
table = "payments_idempotency"
key = "idempotency_key"
status = "status"
# each value the service writes in `status` (left) = the contract's status it means (right)
statuses = { started = "SENT", succeeded = "DONE", refused = "DONE", unknown = "UNKNOWN" }""",
}
COURSE_EXAMPLES = {
    "commands": EXAMPLE,
    "env": KEYED_EXAMPLES["env"],
    "ledger": """[ledger]                       # the contract's ledger table, kept in PostgreSQL (LEDGER_URL)
kind = "postgresql"
table = "ledger"
key = "guid"
status = "status"
# each value the relay writes in `status` (left) = the contract's status it means (right)
statuses = { RECEIVED = "RECEIVED", SENT = "SENT", DONE = "DONE", UNKNOWN = "UNKNOWN", FAILED = "FAILED" }""",
}
EXAMPLES = {"course": COURSE_EXAMPLES, "idempotency-key": KEYED_EXAMPLES}


@dataclass(frozen=True)
class Manifest:
    """A checked relay.toml: the relay's name, its commands, where to run them, and how it is spoken to."""

    path: Path
    name: str
    commands: dict[str, tuple[str, ...]]
    ready_timeout_s: float = DEFAULT_READY_TIMEOUT_S
    description: str = ""
    warnings: tuple[str, ...] = ()
    root: Path | None = None  # `root = ".."`: the folder the commands run in, when not the manifest's
    profile: Profile = field(default_factory=Profile)
    arguments: BatchArguments = field(default_factory=BatchArguments)  # how its batch commands take their value
    env: dict[str, str] = field(default_factory=dict)  # [env]: the service's own variables, given to every command
    container: Container | None = None  # [container]: serve runs from this image (stack/container.py)

    @property
    def folder(self) -> Path:
        """The working directory of every command: `root` if given, else the manifest's folder."""
        return self.root or self.path.parent

    @property
    def code(self) -> Path:
        """The relay's own folder, the one a sandbox copies: the folder its commands run in."""
        return self.folder

    @property
    def where_commands_run(self) -> str:
        """The folder the commands run in, and why, for a message: `root`, or the manifest's folder."""
        return f"{self.folder} (`root`)" if self.root else f"{self.folder} (the manifest's folder)"


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
    env = _env(data.get("env"), profile, problems)
    image = container.check(data.get("container"), problems, warnings)  # then serve is the image's, not a command
    name = data.get("name", path.parent.name)
    if not isinstance(name, str) or not name.strip():
        problems.append("`name` must be a non-empty string")
    description = data.get("description", "")
    if not isinstance(description, str):
        problems.append("`description` must be a string (one line saying what this relay is)")
    commands = data.get("commands")
    checked: dict[str, tuple[str, ...]] = {}
    if not isinstance(commands, dict):
        if commands is not None or "container" not in data:
            problems.append("missing table [commands] with serve, resolve, reprocess and purge")
        commands = {}
    for cmd in COMMANDS:
        argv = commands.get(cmd)
        if argv is None and cmd in BATCH and profile.name != "course":
            continue
        if argv is None and cmd == "serve" and "container" in data:
            checked[cmd] = image.serve_argv if image else ()
            continue
        if argv is None:
            problems.append(f"[commands] has no `{cmd}`")
        elif not (isinstance(argv, list) and argv and all(isinstance(a, str) and a for a in argv)):
            problems.append(f"[commands].{cmd} must be a non-empty list of strings (an argv), got {argv!r}")
        else:
            checked[cmd] = tuple(argv)
    warnings += [f"unknown command `{k}` in [commands] ignored" for k in commands if k not in COMMANDS]
    timeout = _ready_timeout(data.get("limits", {}), problems, warnings)
    if problems:
        raise ManifestError(
            "this relay manifest cannot be used:\n" + "\n".join(f"  - {p}" for p in problems),
            where=str(path),
            fix=_fix(data, problems),
        )
    return Manifest(
        path, name.strip(), checked, timeout, description.strip(), tuple(warnings), root, profile, arguments, env,
        container=image,
    )  # fmt: skip


def _ready_timeout(limits: object, problems: list[str], warnings: list[str]) -> float:
    """`[limits] ready_timeout_s`: seconds serve has to answer its health check."""
    if not isinstance(limits, dict):
        problems.append("[limits] must be a table")
        return DEFAULT_READY_TIMEOUT_S
    warnings += [f"unknown key `{k}` in [limits] ignored" for k in limits if k != "ready_timeout_s"]
    raw = limits.get("ready_timeout_s", DEFAULT_READY_TIMEOUT_S)
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not 0 < raw <= 600:
        problems.append(f"[limits].ready_timeout_s must be a number of seconds in (0, 600], got {raw!r}")
        return DEFAULT_READY_TIMEOUT_S
    return float(raw)


def _fix(data: dict, problems: list[str]) -> str:
    """The fix of a manifest's problems: the tables they name, as a manifest of its profile writes them."""
    api = data.get("api")
    raw = api.get("profile", "course") if isinstance(api, dict) else "course"
    profile = raw if raw in EXAMPLES else "course"
    examples = EXAMPLES[profile]
    named = {m.group(1) for p in problems for m in re.finditer(r"\[(\w+)", p)}
    named |= {"commands" for p in problems if "[limits]" in p or "`root`" in p or "`name`" in p}
    shown = [text for table, text in examples.items() if table in named] or [examples["commands"]]
    where = "contract section 1" if profile == "course" else "docs/production-api.md"
    return f"correct it as listed ({where}); in a manifest of the {profile} profile:\n" + "\n".join(shown)


def _root(path: Path, raw: object, problems: list[str]) -> Path | None:
    """`root`: the folder the commands run in and the sandbox copies, relative to the manifest's folder (e.g. ".."
    for a manifest kept below its code, "service" for code kept below it)."""
    if raw is None:
        return None
    if not isinstance(raw, str) or not raw or Path(raw).is_absolute():
        problems.append(
            f'`root` must be a folder relative to the manifest\'s ({path.parent}), e.g. ".." or "service"; got {raw!r}'
        )
        return None
    folder = (path.parent / raw).resolve()
    if not folder.is_dir():
        problems.append(
            f"`root` = {raw!r} names {folder}, which is not a folder: correct the path, relative to {path.parent}"
        )
        return None
    return folder


def _env(raw: object, profile: Profile, problems: list[str]) -> dict[str, str]:
    """`[env]`: the service's own variables (NAME = "value"), none of them one the harness or the sandbox sets."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        problems.append('[env] must be a table of the service\'s own variables, e.g. LEASE_MS = "3000"')
        return {}
    harness = {name: "the contract's" for name in CONTRACT_VARIABLES}
    harness |= {name: f'[api.env] {role} = "{name}"' for role, name in profile.api.env.items()}
    harness |= {name: "the sandbox's" for name in OWN_VARIABLES}
    env: dict[str, str] = {}
    for name, value in raw.items():
        if not api_profile.env_name(name):
            problems.append(f"[env] {name!r} is not an environment variable name (letters, digits, _)")
        elif name in harness:
            problems.append(
                f"[env].{name} is a variable the harness sets ({harness[name]}): give the service's setting "
                "another name" + (", or map it in [api.env]" if harness[name] == "the contract's" else "")
            )
        elif not isinstance(value, str):
            problems.append(f'[env].{name} must be a string, got {value!r} (write {name} = "{value}")')
        else:
            env[name] = value
    return env


def runnable(manifest: Manifest, path: str, sandboxed: bool = True) -> None:
    """ManifestError, before anything starts, naming every command whose program is not there to be run: a path
    (with a `/`) is looked for in the folder the commands run in, a bare name on `path` (the PATH the relay gets,
    relaychaos.sandbox.environment.commands_path), and not in a folder the sandbox's copy leaves out (`sandboxed`)."""
    problems = []
    if manifest.container is not None:  # its commands run in its image: the engine looks for the image when it starts
        return
    for command, argv in manifest.commands.items():
        argv0 = argv[0]
        found = manifest.folder / argv0 if "/" in argv0 else shutil.which(argv0, path=path)
        left_out = sorted(set(Path(argv0).parts) & set(NOT_COPIED)) if "/" in argv0 else []
        if left_out and sandboxed:
            problems.append(
                f"[commands].{command} runs `{argv0}`, inside `{left_out[0]}`, which the sandbox's copy of the "
                f"relay's folder leaves out (it copies all but {', '.join(NOT_COPIED)}): rename that folder "
                "(e.g. `venv`) or run a relay you trust with --sandbox off"
            )
        elif found is None or not os.path.isfile(found) or not os.access(found, os.X_OK):
            where = f"in {manifest.where_commands_run}" if "/" in argv0 else f"on the relay's PATH ({path})"
            problems.append(f"[commands].{command} runs `{argv0}`, which is not an executable file {where}")
    if problems:
        raise ManifestError(
            "this relay cannot be run:\n" + "\n".join(f"  - {p}" for p in problems),
            where=str(manifest.path),
            fix="build the program, or correct its path in [commands]: a path there is relative to the folder the "
            "commands run in (`root`, else the manifest's folder); a bare name must be on PATH",
        )
