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
