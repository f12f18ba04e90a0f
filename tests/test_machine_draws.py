"""The stateful machine draws its stories from the seed alone: what it tells Hypothesis to seek (`target()`) is read
from the draws, never from what happened when they ran, so a rerun with the same seed draws the same stories
whatever the machine's timing (relaychaos.scenarios.machine_scores)."""

import pytest
from hypothesis import seed
from hypothesis.stateful import get_state_machine_test

from relaychaos.engine.budget import budget_settings
from relaychaos.scenarios.machine import ACCOUNTS, TIMEOUT_MS, bind
from relaychaos.scenarios.machine_context import Context
from relaychaos.scenarios.machine_scores import scores


def fault(name: str) -> tuple[str, tuple]:
    return ("fault", (("amount", 5), ("name", name)))


SEND = ("new_transfer", (("amount", 5),))
HEAL = ("heal", ())


def test_a_fault_scores_when_a_transfer_or_batch_run_is_drawn_after_it_before_a_heal():
    assert scores([fault("drop-answer"), SEND])["faults drawn before a transfer"] == 1
    assert scores([fault("drop-answer"), HEAL, SEND])["faults drawn before a transfer"] == 0
    assert scores([fault("slow-answer"), ("batch", (("command", "reprocess"),))])["faults drawn before a transfer"] == 1
    assert scores([fault("kill-mid-transfer")])["faults drawn before a transfer"] == 1, "it holds a transfer of its own"
    assert scores([fault("drop-answer"), SEND, SEND, fault("drop-answer"), SEND])["faults drawn before a transfer"] == 1


def test_each_fault_and_batch_command_is_a_kind_of_step_of_its_own():
    trace = [SEND, SEND, fault("drop-answer"), fault("account-down"), ("batch", (("command", "purge"),)), HEAL]
    assert scores(trace)["kinds of step drawn"] == 5


@pytest.mark.stack
def test_two_runs_with_the_same_seed_draw_the_same_stories(make_stack, tmp_path):
    drawn: list[list[list]] = [[], []]
    for run in drawn:
        stack = make_stack(accounts=ACCOUNTS, account_timeout_ms=TIMEOUT_MS)
        machine = bind(Context(stack, tmp_path / "found"))

        class Recording(machine):  # type: ignore[misc, valid-type]
            stories = run

            def teardown(self) -> None:
                self.stories.append(list(self.trace))
                super().teardown()

        settings = budget_settings("grade")
        seed(3)(get_state_machine_test(Recording, settings=settings.__class__(settings, max_examples=6)))()
        stack.close()
    assert len(drawn[0]) >= 6 and drawn[0] == drawn[1], drawn
