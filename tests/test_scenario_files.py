"""Scenario files: human-writable YAML, checked whole before anything starts, one error with file, line and fix."""

import textwrap

import pytest

from relaychaos.engine import scenario_file
from relaychaos.engine import steps as S
from relaychaos.engine.scenario_file import ScenarioFileError
from relaychaos.scenarios import ALL


def write(tmp_path, text: str):
    path = tmp_path / "incident.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def test_a_file_loads_into_the_same_steps_the_runner_runs(tmp_path):
    loaded = scenario_file.load(
        write(
            tmp_path,
            """
        name: story
        account_timeout_ms: 500
        accounts: {alice: 10, bob: 0}
        steps:
          - add_toxic: {proxy: account, kind: timeout, attributes: {timeout: 0}}
          - send: {guid: g1, amount: 5, attempts: 2}
          - server_fault: {hold_guids: [g2]}
          - send: {guid: g2, background: true}
          - wait_calls: {guid: g2}
          - release: {guids: [g2]}
          - heal
          - race: {guid: g1, n: 4, slots: [a]}
    """,
        )
    )
    sc = loaded.scenario
    assert (sc.name, sc.account_timeout_ms, sc.accounts, sc.family) == (
        "story",
        500,
        {"alice": 10, "bob": 0},
        "regression",
    )
    assert sc.steps[0] == S.AddToxic("account", "timeout", attributes={"timeout": 0})
    assert sc.steps[1] == S.Send("g1", amount=5, attempts=2)
    assert sc.steps[2] == S.ServerFault(hold_guids=("g2",))
    assert sc.steps[6] == S.Heal() and sc.steps[7] == S.Race("g1", n=4, slots=("a",))


@pytest.mark.parametrize("name", sorted(ALL))
def test_every_named_scenario_survives_a_round_trip_through_a_file(tmp_path, name):
    path = tmp_path / f"{name}.yaml"
    path.write_text(scenario_file.dump(ALL[name]))
    again = scenario_file.load(path).scenario
    assert again.steps == ALL[name].steps
    assert (again.accounts, again.account_timeout_ms, again.relays) == (
        ALL[name].accounts,
        ALL[name].account_timeout_ms,
        ALL[name].relays,
    )


@pytest.mark.parametrize(
    "body, line, needles",
    [
        ("steps:\n  - fly: {guid: g1}\n", 2, ["missing 'name'"]),
        ("name: x\nsteps:\n  - fly: {guid: g1}\n", 3, ["unknown step 'fly'", "send, race"]),
        ("name: x\nsteps:\n  - send: {amount: 5}\n", 3, ["step 'send' lacks guid", "add guid"]),
        ("name: x\nsteps:\n  - send: {guid: g1, amount: ten}\n", 3, ["field 'amount' of step 'send' is 'ten', not a"]),
        ("name: x\nsteps:\n  - send: {guid: g1, colour: red}\n", 3, ["step 'send' has no field 'colour'"]),
        (
            "name: x\nsteps:\n  - send: {guid: g1}\n  - wait_calls: {guid: g9}\n",
            4,
            ["GUID 'g9' is referenced before any send"],
        ),
        (
            "name: x\nsteps:\n  - send: {guid: g1}\n  - wait: {seconds: -1}\n",
            4,
            ["seconds = -1 is not a possible timing"],
        ),
        (
            "name: x\nsteps:\n  - send: {guid: g1}\n  - remove_toxic: {proxy: account, name: t}\n",
            4,
            ["no toxic named 't' is on 'account' at this step (never added, or removed already)"],
        ),
        (
            "name: x\nsteps:\n  - add_toxic: {proxy: account, kind: latency, name: t}\n"
            "  - remove_toxic: {proxy: account, name: t}\n  - remove_toxic: {proxy: account, name: t}\n",
            5,
            ["no toxic named 't' is on 'account' at this step"],
        ),
        ("name: x\nsteps:\n  - send: {guid: g1, slot: b}\n", 3, ["relay slot 'b' is not running"]),
        ("name: x\nsteps:\n  - add_toxic: {proxy: db, kind: latency}\n", 3, ["no proxy 'db'"]),
        ("name: x\nsteps:\n  - add_toxic: {proxy: account, kind: lag}\n", 3, ["unknown toxic kind 'lag'"]),
        ("name: x\nwhen: yesterday\nsteps:\n  - heal\n", 2, ["unknown key 'when'"]),
        ("name: x\naccount_timeout_ms: soon\nsteps:\n  - heal\n", 2, ["'account_timeout_ms' is 'soon', not a int"]),
        ("name: x\nsteps: [\n", 3, ["not valid YAML"]),
        ("name: x\nsteps: []\n", 2, ["steps must be a non-empty list"]),
    ],
)
def test_a_bad_file_gets_one_error_naming_the_file_the_line_and_the_fix(tmp_path, body, line, needles):
    path = write(tmp_path, body)
    with pytest.raises(ScenarioFileError) as e:
        scenario_file.load(path)
    text = str(e.value)
    assert text.startswith(f"{path}, line {line}:") or (line == 2 and text.startswith(f"{path}, top:")), text
    assert "fix:" in text
    for needle in needles:
        assert needle in text, text


def test_a_story_s_labels_g1_to_a_million_are_held_as_bits_and_any_other_label_as_itself():
    from relaychaos.engine.story_checks import Labels  # lazy: this one test reads the set directly

    labels = Labels()
    for n in range(1, 1_000_001, 7):
        labels.add(f"g{n}")
    labels.add("g01")
    labels.add("tx-5e8a")
    labels.add("g\u00b2")  # a superscript two: a label of its own, not g2
    assert "g1" in labels and "g8" in labels and "g1000000" in labels
    assert "g\u00b2" in labels and "g2" not in labels
    assert "g999999" not in labels and "g1000007" not in labels and "g" not in labels
    assert "g01" in labels and "tx-5e8a" in labels and "g001" not in labels, "g01 is a label of its own, not g1"
    assert len(labels.bits) < 200_000, "a bit a label"
