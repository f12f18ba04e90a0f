"""Each option is defined once (relaychaos.options) and every command resolves it alike: flag, environment, default."""

import argparse

import pytest

from relaychaos import options


def parsed(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    options.add_to_argparse(parser)
    return parser.parse_args(list(argv))


def test_a_command_takes_the_sandbox_from_the_environment_when_not_given(monkeypatch):
    monkeypatch.setenv("RELAYCHAOS_SANDBOX", "strict")
    args = parsed()
    options.resolve_all(args)
    assert args.sandbox == "strict" and args.sandbox_limit is None and args.hunt is False


def test_the_command_line_wins_over_the_environment(monkeypatch):
    monkeypatch.setenv("RELAYCHAOS_SANDBOX", "strict")
    monkeypatch.setenv("RELAYCHAOS_SHRINK_S", "7")
    args = parsed("--sandbox", "off", "--shrink-s", "3")
    options.resolve_all(args)
    assert (args.sandbox, args.shrink_s) == ("off", 3.0)


def test_without_any_source_the_defaults_hold(monkeypatch):
    for o in options.OPTIONS:
        monkeypatch.delenv(o.env, raising=False)
    args = parsed()
    options.resolve_all(args)
    assert (args.sandbox, args.sandbox_limit, args.hunt, args.shrink_s) == ("auto", None, False, None)


def test_a_bad_value_in_the_environment_names_the_variable_and_the_fix(monkeypatch):
    monkeypatch.setenv("RELAYCHAOS_SANDBOX", "loose")
    with pytest.raises(ValueError, match=r"RELAYCHAOS_SANDBOX='loose' is not one of auto, strict, off; fix"):
        options.resolve_all(parsed())


def test_the_options_a_command_passes_on_are_the_plugins_flags():
    argv = options.pytest_args({"sandbox": "off", "sandbox_limit": "tasks=64", "hunt": True, "shrink_s": 2.5})
    assert argv == [
        "--sandbox",
        "off",
        "--sandbox-limit",
        "tasks=64",
        "--relaychaos-hunt",
        "--relaychaos-shrink-s",
        "2.5",
    ]
    assert options.pytest_args({"budget": "grade", "seed": 7}, options.OPTIONS) == [
        "--relaychaos-budget", "grade", "--relaychaos-seed", "7",
    ]  # fmt: skip


def test_each_option_has_one_environment_name_and_one_dest():
    assert len({o.env for o in options.OPTIONS}) == len({o.dest for o in options.OPTIONS}) == len(options.OPTIONS)


def _environment_reads(path) -> list[int]:
    """Lines of `path` that read an environment variable: os.environ.get, os.environ[...], os.getenv."""
    import ast

    lines = []
    for node in ast.walk(ast.parse(path.read_text())):
        target = node.func if isinstance(node, ast.Call) else node.value if isinstance(node, ast.Subscript) else None
        text = ast.unparse(target) if target is not None else ""
        if text in ("os.environ.get", "os.getenv", "os.environ", "environ.get") and not (
            isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store)
        ):
            lines.append(node.lineno)
    return lines


def test_the_environment_is_read_in_the_options_module_alone():
    """The harness's code (not the programs it runs: fixtures/, relay_under_test/) reads no environment variable
    but through relaychaos.options, where each has its name, parser and help."""
    from .conftest import ROOT

    found = {
        f"{path.relative_to(ROOT)}:{line}"
        for top in ("harness", "scenarios", "reports")
        for path in (ROOT / top).rglob("*.py")
        if path != ROOT / "harness" / "options.py"
        for line in _environment_reads(path)
    }
    assert not found, f"environment read outside relaychaos.options: {sorted(found)}; fix: define an option there"


def test_every_environment_variable_is_named_once():
    names = [o.env for o in options.OPTIONS + options.ENVIRONMENT]
    assert len(names) == len(set(names))


def test_every_loopback_spelling_keeps_toxiproxy_on_this_machine():
    from relaychaos.stack.toxiproxy_reach import on_this_machine

    assert all(map(on_this_machine, ["127.0.0.1", "127.0.0.2", "localhost", "localhost.", "::1", "::ffff:127.0.0.1"]))
    assert not any(map(on_this_machine, ["10.215.0.2", "toxiproxy", "192.0.2.1"]))
