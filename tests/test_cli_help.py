"""`relaychaos --help` lists every command, each on one line with what it does.

The commands are read from the parser itself (its subparsers, as `main` registers them), never from
a list written here, so a command added later is checked too. Nothing here starts a process: the
parser is built and its help formatted in this process.
"""

from __future__ import annotations

import argparse
import re

import pytest

from relaychaos.commands import cli


def subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """Every subcommand registered on `parser` -> its parser (none when it takes no subcommand)."""
    found = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(found[0].choices) if found else {}


def commands(parser: argparse.ArgumentParser) -> dict[str, str]:
    """Every subcommand registered on `parser` -> its help line ('' when it has none)."""
    [action] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
    return {name: helps.get(name, "") for name in action.choices}


@pytest.mark.parametrize("columns", ["40", "80", "200"])
def test_the_top_level_help_lists_every_command_with_its_line(monkeypatch, columns):
    monkeypatch.setenv("COLUMNS", columns)  # argparse's width: the help must not depend on the terminal's
    parser = cli.parser()
    text = parser.format_help()
    found = commands(parser)
    assert {"grade", "gradebook", "soak", "timeline"} <= set(found)  # those issue 32 found unlisted; below, all
    missing = [name for name, line in found.items() if not line]
    assert not missing, f"commands without a help line: {missing}"
    listed = {m[1]: m[2] for m in re.finditer(r"^ {4}(\S+) +(\S.*)$", text, re.M)}
    wrong = {name: listed.get(name) for name, line in found.items() if listed.get(name) != line}
    assert not wrong, f"not listed on one line with its help: {wrong}\n{text}"


def test_every_nested_command_is_listed_in_its_command_s_help():
    nested = {name: sub for name, sub in subparsers(cli.parser()).items() if subparsers(sub)}
    assert {"incident", "gradebook"} <= set(nested)
    for name, sub in nested.items():
        text = " ".join(sub.format_help().split())
        for child, line in commands(sub).items():
            assert line and f"{child} {' '.join(line.split())}" in text, f"relaychaos {name} --help: {child}"


def test_relaychaos_version_prints_the_installed_version_as_pyproject_gives_it(capsys):
    """A team pins a version: `relaychaos --version` says which one runs, the distribution's as installed."""
    import tomllib

    from .conftest import ROOT

    wanted = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    with pytest.raises(SystemExit) as done:
        cli.main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out == f"relaychaos {wanted}\n"
