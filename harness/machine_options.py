"""The state machine's two options, each defined once with its environment and ini names.

    hunt      run the random stories even when a named scenario has already shown a bug
              (--hunt; RELAYCHAOS_HUNT=1; ini relaychaos_hunt = true). Default: off.
    shrink_s  seconds of shrinking a failing story before it is reported as it stands
              (--shrink-s / --relaychaos-shrink-s; RELAYCHAOS_SHRINK_S; ini relaychaos_shrink_s).
              Default: the budget's (relaychaos.engine.budget.SHRINK_S).

The pytest plugin, `relaychaos run` and `relaychaos grade` add them from here and pass them on
to pytest as `pytest_args` writes them; each command resolves a value the same way: the command
line, else the ini file (pytest only), else the environment, else the default. `replay` runs one
scenario file and no state machine, so neither applies to it. This module imports nothing, so
that declaring options loads nothing.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

TRUE, FALSE = ("1", "true", "yes", "on"), ("", "0", "false", "no", "off")


def _flag(text: str) -> bool:
    if text.strip().lower() in TRUE + FALSE:
        return text.strip().lower() in TRUE
    raise ValueError(f"{text!r} is not a yes or no; use one of {', '.join(TRUE + FALSE[1:])}")


def _seconds(text: str) -> float:
    value = float(text)
    if not value >= 0:
        raise ValueError(f"{text!r} is not a number of seconds, 0 or more")
    return value


@dataclass(frozen=True)
class MachineOption:
    """One option: its names on each command line, in the environment and in the ini file."""

    name: str  # the attribute and `dest`: hunt, shrink_s
    cli: str  # relaychaos run/grade
    pytest: tuple[str, ...]  # the plugin's names; the first is what `pytest_args` writes
    env: str
    ini: str
    parse: Callable[[str], object]
    help: str

    @property
    def dest(self) -> str:
        return f"relaychaos_{self.name}"

    @property
    def is_flag(self) -> bool:
        return self.parse is _flag

    def from_text(self, text: str, where: str):
        """The value of `text` as read from `where`; ValueError naming the source and the fix."""
        try:
            return self.parse(text)
        except ValueError as e:
            raise ValueError(f"{where}: {e}; fix: set {self.env} (or ini {self.ini}) to a valid value, or unset it") \
                from None


HUNT = MachineOption(
    "hunt", "--hunt", ("--relaychaos-hunt", "--hunt"), "RELAYCHAOS_HUNT", "relaychaos_hunt", _flag,
    "run the state machine's random stories even when a named scenario has already shown a bug (by default "
    "they do not run then); for nightly jobs. Also RELAYCHAOS_HUNT=1 or ini relaychaos_hunt = true")
SHRINK_S = MachineOption(
    "shrink_s", "--shrink-s", ("--relaychaos-shrink-s",), "RELAYCHAOS_SHRINK_S", "relaychaos_shrink_s", _seconds,
    "seconds of shrinking a failing random story; past them the shortest failing story found so far is written "
    "as a scenario file and reported as not fully shrunk (default: the budget's, 10 s in quick, ci and grade, "
    "60 s in nightly). Also RELAYCHAOS_SHRINK_S or ini relaychaos_shrink_s")
OPTIONS = (HUNT, SHRINK_S)


def add_to_pytest(group, parser) -> None:
    """Add every option to the plugin's option group and its ini names to the parser."""
    for o in OPTIONS:
        kind = dict(action="store_true", default=None) if o.is_flag else \
            dict(type=o.parse, default=None, metavar="S")
        group.addoption(*o.pytest, dest=o.dest, help=o.help, **kind)
        parser.addini(o.ini, o.help.split(" (")[0], default=None)


def add_to_argparse(parser) -> None:
    """Add every option to a `relaychaos` command's parser (None when not given on the command line)."""
    for o in OPTIONS:
        kind = dict(action="store_true", default=None) if o.is_flag else \
            dict(type=o.parse, default=None, metavar="S")
        parser.add_argument(o.cli, dest=o.name, help=o.help, **kind)


def resolve(option: MachineOption, given, ini: str | None = None, environ: Mapping[str, str] | None = None,
            default=None):
    """The option's value: `given` (a command line), else `ini`, else the environment, else `default`."""
    import os

    environ = os.environ if environ is None else environ
    if given is not None:
        return given
    if ini not in (None, ""):
        return option.from_text(str(ini), f"ini value {option.ini} = {ini!r}")
    if environ.get(option.env, "").strip():
        return option.from_text(environ[option.env], f"{option.env}={environ[option.env]!r}")
    return default


def from_pytest(config, option: MachineOption, default=None):
    """The option's value in a pytest run: its flag, else the ini value, else the environment, else `default`."""
    return resolve(option, config.getoption(option.dest, None), config.getini(option.ini), default=default)


def pytest_args(values: Mapping[str, object]) -> list[str]:
    """The pytest arguments that pass these option values (by name; None: not given) on to the plugin."""
    out: list[str] = []
    for o in OPTIONS:
        value = values.get(o.name)
        if value is None or value is False:
            continue
        out += [o.pytest[0]] if o.is_flag else [o.pytest[0], f"{value:g}"]
    return out
