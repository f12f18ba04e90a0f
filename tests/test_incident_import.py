"""`relaychaos incident import`: a bundle of production logs, as production writes them, becomes the scenario of
the whole night (night.yaml) and of its story (story.yaml): faults where the logs put them, calls in flight held
across kills and batch runs, batch commands at their logged moments, opening balances the logs imply, production
GUIDs beside the labels. (Replaying them: test_incident_replay.py; bad bundles: test_incident_bad_input.py.)"""

import filecmp
import runpy

import pytest

from relaychaos.commands.cli import main
from relaychaos.engine import scenario_file
from relaychaos.engine import steps as S

from .conftest import ROOT

EXAMPLES = ROOT / "examples" / "incidents"
BUNDLES = {
    "reprocess-resent-timeouts": "reprocess_unknown",
    "check-then-insert-burst": "check_then_insert",
    "oom-early-resolve": "resolve_ignores_min_age",
}
RULES = ["one-account-call", "one-debit", "balances"]
FOUND, DOUBLED, REFUSED = "tx-9c41d2e07b5a4f18", "tx-5e8a0b7c3d2f6914", "tx-a1b2c3d4e5f60718"  # oom-early-resolve


def imported(bundle, tmp_path, *extra):
    """(night, its text, story, its text) of an import without replays."""
    out = tmp_path / bundle.name
    assert main(["incident", "import", str(bundle), "--out", str(out), "--no-shrink", *extra]) == 0
    return (
        scenario_file.load(out / "night.yaml"),
        (out / "night.yaml").read_text(),
        scenario_file.load(out / "story.yaml"),
        (out / "story.yaml").read_text(),
    )


def label_of(loaded, guid):
    return next(label for label, g in loaded.scenario.incident["guids"].items() if g == guid)


@pytest.mark.slow
@pytest.mark.parametrize("name, mutant", BUNDLES.items())
def test_each_example_imports_into_a_night_and_a_story_that_expect_what_the_night_broke(tmp_path, name, mutant):
    night, text, story, story_text = imported(EXAMPLES / name, tmp_path)
    for loaded in (night, story):
        assert loaded.breaks == {f"relay_under_test/mutants/{mutant}/relay.toml": RULES}
        assert loaded.holds_on == ("relay_under_test/reference/relay.toml",)
        assert loaded.scenario.incident["rules"] == RULES
    broke = night.scenario.incident["broke"]
    assert broke["one-account-call"] and set(broke["one-debit"]) <= set(broke["one-account-call"])
    assert story.scenario.incident["guids"] == {
        label: night.scenario.incident["guids"][label] for label in broke["one-account-call"]
    }
    assert len(story.scenario.steps) < len(night.scenario.steps)
    for t in (text, story_text):
        lines = t.splitlines()
        steps = [i for i, line in enumerate(lines) if line.startswith("  - ") and lines.index("steps:") < i]
        assert steps and all(lines[i - 1].startswith("  # ") for i in steps), "every step says where it came from"


STRANGERS = {  # bundle -> (the mutant its NOTES.md names, the production GUIDs NOTES.md says were debited twice)
    "stranger-cbs-slowdown-e902-resend": (
        "timeout_as_failed",
        {"3f6c2a8e-91d4-4b7a-a0c3-5e21d9f4b812", "b71e0d45-2c9a-4f63-8e1d-0a94c7f35e26"},
    ),
    "stranger-k8s-deploy-write-after-call": ("write_after_call", {"PAY-20261129-8F3KQ2WD", "PAY-20261129-4N7ZT1XB"}),
    "stranger-lb-blip-memory-ledger-restart": (
        "memory_ledger",
        {"5c0e9a47-3b1d-4f28-9a6e-d2f71c08b3e4", "a8d3f1c2-6e47-4b90-8c15-7f2e09d4a6b1"},
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", STRANGERS)
def test_a_strangers_bundle_imports_as_written_and_finds_the_double_debits_its_notes_name(tmp_path, name):
    mutant, doubled = STRANGERS[name]
    relay = ROOT / "relay_under_test" / "mutants" / mutant / "relay.toml"
    night, text, story, _ = imported(EXAMPLES / name, tmp_path, "--relay", str(relay))
    incident = night.scenario.incident
    assert incident["rules"] == RULES
    assert {incident["guids"][label] for label in incident["broke"]["one-debit"]} == doubled
    assert set(story.scenario.incident["guids"].values()) == doubled
    blamed = [line for line in text.splitlines() if line.startswith("# Note:") and "correct them" in line]
    assert not [line for line in blamed if "/account" in line], "an account log in the order of answers is not blamed"
    for loaded in (night, story):  # IBANs, digits only: each account a step names is opened under the same string
        sc = loaded.scenario
        named = {p for step in sc.steps if isinstance(step, S.Send) and step.raw is None for p in (step.src, step.dst)}
        assert named <= set(sc.accounts) and all(isinstance(a, str) for a in sc.accounts), named - set(sc.accounts)


def test_the_reprocess_night_drops_answers_refuses_one_and_puts_the_resends_down_to_the_batch_run(tmp_path):
    night, text, _, _ = imported(EXAMPLES / "reprocess-resent-timeouts", tmp_path)
    steps = night.scenario.steps
    toxic = steps.index(S.AddToxic("account", "timeout", name="answer-lost", attributes={"timeout": 0}))
    assert [s.guid for s in steps[toxic + 1 : toxic + 3]] == ["g2", "g3"]  # both lost answers in one fault window
    assert S.DisableProxy("account") in steps and S.Reprocess(max_attempts=3) in steps
    assert "account.csv lines 7-9: g2, g3, g5 sent by this run" in text
    assert "# Note: the clocks disagree" in text and "every account time is moved by +1.765 s" in text
    assert "channel.csv line 3: 7f3a9c2e-0b1d-4e55-9a61-2c0d4b8e1f01 (g2) 120 alice→bob on relay a: E901" in text
    resolve = steps.index(S.Resolve(min_age_s=0.45, since="age-2"))  # at least the safe --min-age of section 6
    assert steps[resolve - 2 : resolve] == (S.Reprocess(max_attempts=3), S.Mark("age-2", wait_s=0.5)), (
        "300 s before the resolve, the night had just run its reprocess: the rows it changed are old enough"
    )
    assert "resolve --min-age 300 (the time since mark age-2, at least 0.45: rows as old as they were)" in text
    assert night.scenario.incident["guids"]["g2"] == "7f3a9c2e-0b1d-4e55-9a61-2c0d4b8e1f01"
    assert night.scenario.incident["answers"]["g5"] == "E902"


def test_the_burst_night_restarts_the_relay_and_races_each_burst_at_the_slow_account_systems_pace(tmp_path):
    night, text, _, _ = imported(EXAMPLES / "check-then-insert-burst", tmp_path)
    steps = night.scenario.steps
    assert steps[:2] == (S.Kill("a"), S.Start("a"))  # the evening's deploy
    races = [s for s in steps if isinstance(s, S.Race)]
    assert [(r.n, r.amount) for r in races] == [(5, 60), (4, 45)]
    assert steps.index(S.ServerFault(delay_ms=200)) < steps.index(races[0]), "the evening's slow account system"
    assert "channel.jsonl lines 3-7; account.jsonl lines 3-7: 5 sends of w412-5f0e2b7c9d41 within 10 ms" in text
    assert "Clock" not in text and "clocks disagree" not in text, "these clocks agree"
    assert night.scenario.accounts == {"carol": 2000, "dave": 2000, "erin": 2000}, "incident.toml's balances"


@pytest.mark.slow
def test_the_oom_night_holds_both_debits_in_flight_across_the_kill_and_the_early_resolve_runs_before_one_is_answered(
    tmp_path,
):
    night, text, _, _ = imported(EXAMPLES / "oom-early-resolve", tmp_path)
    found, doubled = label_of(night, FOUND), label_of(night, DOUBLED)
    steps = list(night.scenario.steps)
    at = {
        s: steps.index(s)
        for s in (
            S.ServerFault(hold_guids=(found,)),
            S.ServerFault(hold_guids=(doubled,)),
            S.Kill("a"),
            S.Resolve(min_age_s=3.15, since="age-4"),
            S.Release((found,)),
            S.Release((doubled,)),
        )
    }
    sends = [i for i, s in enumerate(steps) if isinstance(s, S.Send) and s.guid in (found, doubled)]
    assert all(steps[i].background for i in sends[:2]) and isinstance(steps[sends[0] + 1], S.WaitCalls)
    assert at[S.ServerFault(hold_guids=(found,))] < sends[0] < at[S.Kill("a")], "held from the send across the kill"
    assert (
        at[S.Kill("a")]
        < steps.index(S.Start("a"), at[S.Kill("a")])
        < at[S.Release((found,))]
        < at[S.Resolve(min_age_s=3.15, since="age-4")]
        < at[S.Release((doubled,))]
        < sends[-1]
    ), "the early resolve finds the first answered and the second still being processed; then the channel resends"
    assert steps.index(S.Mark("age-4", wait_s=0.5)) < sends[0], "the rows in flight at the kill were not old enough"
    assert night.scenario.incident["broke"] == {"one-account-call": [doubled], "one-debit": [doubled]}
    assert night.scenario.incident["answers"][doubled] == ["timeout", "0000"]
    assert f"{REFUSED} ({label_of(night, REFUSED)}) reached relay a while it was down" in text


@pytest.mark.slow
def test_the_oom_night_opens_each_account_where_the_logs_imply_so_refusals_and_large_debits_replay_as_they_were(
    tmp_path,
):
    night, text, _, _ = imported(EXAMPLES / "oom-early-resolve", tmp_path)
    accounts = night.scenario.accounts
    assert accounts["merchant-payouts"] >= 184_999, "the payout was applied"
    assert accounts["cust-0013"] < 900_000 and accounts["cust-0021"] < 900_000, "refused for insufficient funds"
    assert "opening balances inferred from the account log" in text


@pytest.mark.slow
def test_the_oom_bundle_is_read_as_production_wrote_it_and_says_what_it_skipped_merged_and_corrected(tmp_path):
    _, text, _, _ = imported(EXAMPLES / "oom-early-resolve", tmp_path)
    assert "channel-0.jsonl: 308 line(s) skipped (first: line 1, not taken (take))" in text
    assert "channel: 2 files merged by time (channel-0.jsonl, channel-1.jsonl)" in text
    assert 'k8s-events.jsonl: 7 line(s) skipped (first: line 1, its code is mapped to "-")' in text
    offset = float(text.split("every account time is moved by +")[1].split(" s")[0])
    assert 0.02 < offset < 0.1, "the core banking clock was 80 ms behind, less the network"


def test_the_oom_bundle_in_the_examples_is_what_its_generator_writes(tmp_path):
    runpy.run_path(str(EXAMPLES / "oom_night.py"))["write"](tmp_path / "oom")
    for name in ("channel-0.jsonl", "channel-1.jsonl", "core-banking-journal.csv", "k8s-events.jsonl", "incident.toml"):
        assert filecmp.cmp(tmp_path / "oom" / name, EXAMPLES / "oom-early-resolve" / name, shallow=False), name


@pytest.mark.slow
def test_the_story_keeps_the_guids_that_broke_a_rule_and_the_faults_and_operations_around_them(tmp_path):
    _, _, story, _ = imported(EXAMPLES / "oom-early-resolve", tmp_path)
    [doubled] = story.scenario.incident["broke"]["one-account-call"]
    for step in story.scenario.steps:
        assert set(S.guids_of(step)) <= {doubled}
    kinds = [S.kind(s) for s in story.scenario.steps]
    assert {"kill", "start", "resolve", "release", "wait_calls"} <= set(kinds)


def test_an_out_folder_used_again_holds_only_the_last_imports_files(tmp_path):
    out = tmp_path / "incident"
    assert (
        main(["incident", "import", str(EXAMPLES / "check-then-insert-burst"), "--out", str(out), "--no-shrink"]) == 0
    )
    (out / "replays").mkdir()
    (out / "replays" / "old").write_text("from the first import")
    assert (
        main(["incident", "import", str(EXAMPLES / "reprocess-resent-timeouts"), "--out", str(out), "--no-shrink"]) == 0
    )
    assert not (out / "replays").exists()
    assert "reprocess-resent-timeouts" in (out / "night.yaml").read_text()
    assert "reprocess-resent-timeouts" in (out / "story.yaml").read_text()
    assert main(["incident", "import", str(tmp_path / "nothing-here"), "--out", str(out), "--no-shrink"]) == 2
    assert not (out / "night.yaml").exists() and not (out / "story.yaml").exists(), (
        "a failed import leaves no old files"
    )
