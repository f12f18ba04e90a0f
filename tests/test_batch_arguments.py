"""relay.toml's [arguments]: a service's batch commands get their value in the units they take, and the harness
waits past the value they really get, so an age claim lands on whole seconds too."""

import pytest

from relaychaos.checkers.landing import LANDED
from relaychaos.errors import ManifestError
from relaychaos.scenarios import ALL
from relaychaos.stack import manifest
from relaychaos.stack.batch_arguments import BatchArguments, check

from .conftest import derived_relay

WHOLE_SECONDS = '[arguments]\npurge = ["--retention", "{seconds:ceil}"]\nresolve = ["--min-age", "{seconds:ceil}"]\n'


def test_without_arguments_a_command_gets_the_contract_flag_and_fractional_seconds():
    args = BatchArguments()
    assert args.argv("resolve", 0.55) == ("--min-age", "0.55") and args.effective("resolve", 0.55) == 0.55
    assert args.argv("reprocess", 3) == ("--max-attempts", "3") and args.argv("purge", 2.0) == ("--retention", "2")


def test_whole_seconds_round_up_and_the_value_taken_is_the_rounded_one():
    args = check({"resolve": ["--older-than", "{seconds:ceil}s"]}, [])
    assert args.argv("resolve", 0.55) == ("--older-than", "1s") and args.effective("resolve", 0.55) == 1.0
    assert args.argv("resolve", 5) == ("--older-than", "5s") and args.effective("resolve", 5) == 5.0


def test_milliseconds_round_up_to_a_whole_millisecond():
    args = check({"purge": ["--retention-ms={ms}"]}, [])
    assert args.argv("purge", 0.1) == ("--retention-ms=100",) and args.effective("purge", 0.0004) == 0.001


@pytest.mark.parametrize(
    "raw, says",
    [
        ({"serve": ["{seconds}"]}, "only resolve, reprocess, purge take an argument"),
        ({"purge": ["--retention", "{hours}"]}, "{hours} is not one"),
        ({"purge": ["--retention"]}, "it holds none"),
        ({"purge": "--retention {seconds}"}, "must be a non-empty list of strings"),
    ],
)
def test_a_bad_template_is_named_with_what_it_may_hold(raw, says):
    problems: list[str] = []
    check(raw, problems)
    assert len(problems) == 1 and says in problems[0], problems


def test_a_manifest_with_a_bad_template_stops_before_anything_starts(tmp_path):
    path = derived_relay(tmp_path / "r", "reference")
    path.write_text(path.read_text() + '[arguments]\nresolve = ["--min-age", "{minutes}"]\n')
    with pytest.raises(ManifestError, match="arguments"):
        manifest.load(path)


@pytest.mark.stack
def test_purge_taking_whole_seconds_meets_old_undecided_rows_because_the_harness_waits_past_its_value(
    tmp_path, run_chaos
):
    path = derived_relay(tmp_path / "r", "reference")
    path.write_text(path.read_text() + WHOLE_SECONDS)
    result = run_chaos(ALL["purge-keeps-undecided"], manifest=path)
    assert result.ok and [x.status for x in result.landing] == [LANDED, LANDED], result.landing
    purge = next(e for e in result.history if e.f == "purge" and e.type == "invoke")
    assert purge.value["argv"][-2:] == ["--retention", "1"] and purge.value["argument"] == 1.0
