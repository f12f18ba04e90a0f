"""Every option of relaychaos, each defined once: its names on each command line, in the environment, in the ini.

    relay          the relay.toml under test (--relay; RELAYCHAOS_RELAY; ini relaychaos_relay)
    budget         how hard the state machine searches (--relaychaos-budget; RELAYCHAOS_BUDGET)
    seed           the state machine's seed (--relaychaos-seed; RELAYCHAOS_SEED)
    sandbox        how relay commands are contained: auto, strict, off (--sandbox; RELAYCHAOS_SANDBOX)
    sandbox_limit  sandbox limits changed, NAME=N,... (--sandbox-limit; RELAYCHAOS_SANDBOX_LIMIT)
    hunt           run the random stories even when a named scenario has shown a bug (--hunt; RELAYCHAOS_HUNT)
    shrink_s       seconds of shrinking a failing story (--shrink-s / --relaychaos-shrink-s; RELAYCHAOS_SHRINK_S)

The pytest plugin and the `relaychaos` commands add them from here, and a command passes them on
to its pytest run as `pytest_args` writes them. Each is resolved the same way everywhere: the
command line, else the ini file (pytest only), else the environment, else the default. A bad
value names where it came from and the fix. This module imports nothing of the harness, so that
declaring options loads nothing. It is the one module that reads the environment: the options
above and the machine's settings in ENVIRONMENT (`environment(option)`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse

    import pytest

TRUE, FALSE = ("1", "true", "yes", "on"), ("", "0", "false", "no", "off")
BUDGETS = ("quick", "nightly", "ci", "grade")  # their settings: relaychaos.engine.budget, which checks it has these
SANDBOX_MODES = ("auto", "strict", "off")  # relaychaos.sandbox.levels.MODES is this


def _flag(text: str) -> bool:
    if text.strip().lower() in TRUE + FALSE:
        return text.strip().lower() in TRUE
    raise ValueError(f"{text!r} is not a yes or no; use one of {', '.join(TRUE + FALSE[1:])}")


def _seconds(text: str) -> float:
    value = float(text)
    if not value >= 0:
        raise ValueError(f"{text!r} is not a number of seconds, 0 or more")
    return value


def _text(text: str) -> str:
    return text


@dataclass(frozen=True)
class Option:
    """One option: its names on each command line, in the environment and in the ini file."""

    name: str  # the attribute of a command's parsed arguments
    cli: str | None  # relaychaos run/grade (None: not a command's option)
    pytest: tuple[str, ...]  # the plugin's names; the first is what `pytest_args` writes
    env: str
    ini: str | None
    parse: Callable[[str], Any]
    help: str
    choices: tuple[str, ...] = ()
    metavar: str | None = field(default=None, compare=False)
    default: Any = None  # what a run gets when no source gives a value (None: nothing; the budget decides)

    @property
    def dest(self) -> str:
        return f"relaychaos_{self.name}"

    @property
    def is_flag(self) -> bool:
        return self.parse is _flag

    def from_text(self, text: str, where: str) -> Any:
        """The value of `text` as read from `where`; ValueError naming the source and the fix."""
        try:
            value = self.parse(text)
        except ValueError as e:
            raise ValueError(f"{where}: {e}; fix: set {self.env} to a valid value, or unset it") from None
        if self.choices and value not in self.choices:
            raise ValueError(f"{where} is not one of {', '.join(self.choices)}; fix: set it to one of them")
        return value

    def kind(self) -> dict[str, Any]:
        """argparse/pytest keyword arguments for this option's type (None when not given)."""
        if self.is_flag:
            return {"action": "store_true", "default": None}
        extra = {"choices": self.choices} if self.choices else {"metavar": self.metavar or "S"}
        return {"type": self.parse, "default": None, **extra}

    def names(self) -> str:
        """Where else it can be set, for help texts."""
        return f"also {self.env}" + (f" or ini {self.ini}" if self.ini else "")


RELAY = Option(
    "relay", None, ("--relay",), "RELAYCHAOS_RELAY", "relaychaos_relay", _text,
    "the relay.toml of the relay under test (default: the bundled reference relay)", metavar="RELAY_TOML",
)  # fmt: skip
BUDGET = Option(
    "budget", None, ("--relaychaos-budget",), "RELAYCHAOS_BUDGET", "relaychaos_budget", _text,
    "how hard the stateful machine searches: quick (8 examples), nightly (300), ci (12, derandomized), grade "
    "(12, from --relaychaos-seed); default: ci when CI is set, else quick", choices=BUDGETS,
)  # fmt: skip
SEED = Option(
    "seed", None, ("--relaychaos-seed",), "RELAYCHAOS_SEED", None, int,
    "draw the stateful machine's stories from seed N (the same stories on every run)", metavar="N",
)  # fmt: skip
SANDBOX = Option(
    "sandbox", "--sandbox", ("--sandbox",), "RELAYCHAOS_SANDBOX", "relaychaos_sandbox", _text,
    "how relay commands are contained: auto (all this machine offers, saying what it could not; the default), "
    "strict (refuse to run unless every layer can be had), off (a relay you trust)", choices=SANDBOX_MODES,
    default="auto",
)  # fmt: skip
SANDBOX_LIMIT = Option(
    "sandbox_limit", "--sandbox-limit", ("--sandbox-limit",), "RELAYCHAOS_SANDBOX_LIMIT", None, _text,
    "change sandbox limits, e.g. memory_mib=2048,tasks=1024 (names: memory_mib, tasks, cpu_shares, disk_mib, "
    "log_mib, data_mib, nproc, nofile, fsize_mib, cpu_serve_s, cpu_batch_s; see docs/sandbox.md)",
    metavar="NAME=N,...",
)  # fmt: skip
HUNT = Option(
    "hunt", "--hunt", ("--relaychaos-hunt", "--hunt"), "RELAYCHAOS_HUNT", "relaychaos_hunt", _flag,
    "run the state machine's random stories even when a named scenario has already shown a bug (by default "
    "they do not run then); for nightly jobs", default=False,
)  # fmt: skip
SHRINK_S = Option(
    "shrink_s", "--shrink-s", ("--relaychaos-shrink-s",), "RELAYCHAOS_SHRINK_S", "relaychaos_shrink_s", _seconds,
    "seconds of shrinking a failing random story; past them the shortest failing story found so far is written "
    "as a scenario file and reported as not fully shrunk (default: the budget's, 10 s in quick, ci and grade, "
    "60 s in nightly)",
)  # fmt: skip
OPTIONS = (RELAY, BUDGET, SEED, SANDBOX, SANDBOX_LIMIT, HUNT, SHRINK_S)


def _ci(text: str) -> bool:
    return text.strip().lower() not in FALSE  # CI services set CI=true, CI=1 or their own name


def _environment(name: str, env: str, parse: Callable[[str], Any], help: str) -> Option:
    """An option read from the environment alone: the machine's, not a run's."""
    return Option(name, None, (), env, None, parse, help)


# Set in the environment only: where things are on this machine, and how its CI behaves.
CI = _environment("ci", "CI", _ci, "a CI job: the ci budget by default (any value but empty, 0, false, no, off)")
PORTS = _environment("ports", "RELAYCHAOS_PORTS", _text, "the range leased ports come from, LOW-HIGH")
PORT_LOCK = _environment("port_lock", "RELAYCHAOS_PORT_LOCK", _text, "the lock file port leases share")
TOOLS_BIN = _environment("tools_bin", "RELAYCHAOS_TOOLS_BIN", _text, "the folder of the project's tools")
TOXIPROXY = _environment("toxiproxy", "RELAYCHAOS_TOXIPROXY", _text, "the route to Toxiproxy: auto, binary, docker")
TOXIPROXY_URL = _environment("toxiproxy_url", "TOXIPROXY_URL", _text, "a running Toxiproxy server to use")
TOXIPROXY_UPSTREAM_HOST = _environment(
    "toxiproxy_upstream_host",
    "RELAYCHAOS_TOXIPROXY_UPSTREAM_HOST",
    _text,
    "this machine's address as a Toxiproxy server on another host (TOXIPROXY_URL) reaches it",
)
TOXIPROXY_LOG_LEVEL = _environment(
    "toxiproxy_log_level", "RELAYCHAOS_TOXIPROXY_LOG_LEVEL", _text, "the log level of a Toxiproxy the harness starts"
)
TOXIPROXY_IMAGE = _environment("toxiproxy_image", "RELAYCHAOS_TOXIPROXY_IMAGE", _text, "the Docker route's image")
DOCKER_HOST = _environment("docker_host", "DOCKER_HOST", _text, "the Docker daemon's address")
FOUND_DIR = _environment("found_dir", "RELAYCHAOS_FOUND_DIR", _text, "where shrunk stories are written as files")
PATH = _environment(
    "path", "PATH", _text, "where a relay's programs are found with the sandbox off (after this Python's)"
)
ENVIRONMENT: tuple[Option, ...] = (
    CI,
    PORTS,
    PORT_LOCK,
    TOOLS_BIN,
    TOXIPROXY,
    TOXIPROXY_URL,
    TOXIPROXY_UPSTREAM_HOST,
    TOXIPROXY_LOG_LEVEL,
    TOXIPROXY_IMAGE,
)
SUDO_UID = _environment("sudo_uid", "SUDO_UID", _text, "the user sudo ran the command for: its run folders are theirs")
SUDO_GID = _environment("sudo_gid", "SUDO_GID", _text, "that user's group")
XDG_DATA_HOME = _environment("xdg_data_home", "XDG_DATA_HOME", _text, "the user's data folder (relaychaos/bin in it)")
ENVIRONMENT += (DOCKER_HOST, FOUND_DIR, PATH, SUDO_UID, SUDO_GID, XDG_DATA_HOME)


def environment(option: Option, default: Any = None, environ: Mapping[str, str] | None = None) -> Any:
    """An environment option's value: its variable (empty counts as unset), else `default`; ValueError naming the
    variable and the fix for a bad value. The one place relaychaos reads its environment."""
    return resolve(option, None, environ=environ, default=default)


COMMAND_OPTIONS = tuple(o for o in OPTIONS if o.cli)  # what `relaychaos run` and `grade` take


def add_to_pytest(group: pytest.OptionGroup, parser: pytest.Parser) -> None:
    """Add every option to the plugin's option group and its ini names to the parser."""
    for o in OPTIONS:
        group.addoption(*o.pytest, dest=o.dest, help=f"{o.help}. {o.names()}", **o.kind())
        if o.ini:
            parser.addini(o.ini, o.help.split(" (")[0].split(":")[0], default=None)


def add_to_argparse(parser: argparse.ArgumentParser, options: Iterable[Option] = COMMAND_OPTIONS) -> None:
    """Add options to a `relaychaos` command's parser (None when not given on the command line)."""
    for o in options:
        assert o.cli is not None, f"{o.name} is not a command's option"  # COMMAND_OPTIONS have one
        parser.add_argument(o.cli, dest=o.name, help=f"{o.help}. {o.names()}", **o.kind())


def resolve(
    option: Option,
    given: object,
    ini: str | None = None,
    environ: Mapping[str, str] | None = None,
    default: object = None,
) -> Any:
    """The option's value: `given` (a command line), else `ini`, else the environment, else `default`, else the
    option's own default (of the type the option's parse gives, hence Any)."""
    environ = os.environ if environ is None else environ
    if given is not None:
        return given
    if ini not in (None, ""):
        return option.from_text(str(ini), f"ini value {option.ini} = {ini!r}")
    if environ.get(option.env, "").strip():
        return option.from_text(environ[option.env], f"{option.env}={environ[option.env]!r}")
    return option.default if default is None else default


def resolve_all(args: argparse.Namespace) -> None:
    """Each option a command's parsed `args` has, resolved in place (its flag, else the environment, else the
    default); ValueError naming the source and the fix for a bad value."""
    for o in COMMAND_OPTIONS:
        if hasattr(args, o.name):
            setattr(args, o.name, resolve(o, getattr(args, o.name)))


def check_environment() -> None:
    """Every option's environment variable read once (a command's flags are resolve_all's): ValueError naming the
    variable and the fix for a bad value, before a command runs anything (the suite reads RELAYCHAOS_BUDGET only
    when it starts)."""
    for o in OPTIONS:
        if o.env and o not in COMMAND_OPTIONS:
            resolve(o, None)


def from_pytest(config: pytest.Config, option: Option, default: object = None) -> Any:
    """The option's value in a pytest run: its flag, else the ini value, else the environment, else `default`."""
    ini = config.getini(option.ini) if option.ini else None
    return resolve(option, config.getoption(option.dest, None), ini, default=default)


def pytest_args(values: Mapping[str, object], options: Iterable[Option] = COMMAND_OPTIONS) -> list[str]:
    """The pytest arguments that pass these option values (by name; None: not given) on to the plugin."""
    out: list[str] = []
    for o in options:
        value = values.get(o.name)
        if value is None or value is False:
            continue
        out += [o.pytest[0]] if o.is_flag else [o.pytest[0], f"{value:g}" if isinstance(value, float) else str(value)]
    return out
