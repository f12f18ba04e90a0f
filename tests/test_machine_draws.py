"""The stateful machine draws its stories from the seed alone (relaychaos.scenarios.machine_draws): it tells
Hypothesis nothing of what happened when they ran, and every module of relaychaos is loaded before its first draw,
so neither the machine's timing nor what the process imported before changes the stories a seed draws."""

import subprocess
import sys

import pytest
from hypothesis import seed
from hypothesis.stateful import get_state_machine_test

from relaychaos.engine.budget import budget_settings
from relaychaos.scenarios.machine import ACCOUNTS, TIMEOUT_MS, bind
from relaychaos.scenarios.machine_context import Context


@pytest.mark.process
def test_binding_the_machine_loads_every_module_of_relaychaos():
    """(In a process of its own: this one has imported more already.)"""
    code = (
        "import pkgutil, sys, relaychaos\n"
        "from relaychaos.scenarios.machine_draws import load_every_module\n"
        "load_every_module()\n"
        "names = [m.name for m in pkgutil.walk_packages(relaychaos.__path__, 'relaychaos.')]\n"
        "wanted = [n for n in names if not n.rsplit('.', 1)[-1].startswith('test_')\n"
        "          and n.rsplit('.', 1)[-1] not in ('conftest', '__main__')]\n"
        "print(len(wanted), [n for n in wanted if n not in sys.modules])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    count, missing = done.stdout.split(" ", 1)
    assert done.returncode == 0 and int(count) > 100 and missing.strip() == "[]", done.stdout + done.stderr


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
