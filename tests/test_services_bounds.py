"""The harness's own servers of a slot, the account system and Toxiproxy, run in a memory group of their own: a run
whose relay pushes them past it fails saying so, and the next stack gets fresh ones (relaychaos.run.services)."""

import pytest

from relaychaos.errors import FixtureError
from relaychaos.run.definition import RunDefinition
from relaychaos.run.services import Services
from relaychaos.sandbox import cgroups

from .test_sandbox import ROOT_ONLY

pytestmark = [ROOT_ONLY, pytest.mark.stack]


def test_a_fixture_killed_at_its_memory_limit_says_so_and_the_next_stack_gets_a_fresh_one(tmp_path):
    with Services(RunDefinition.build({"sandbox": "auto"}), tmp_path) as services:
        account, groups = services.account, services.sandbox.services
        assert groups is not None and account.child.pid in groups.pids()
        services.toxiproxy  # noqa: B018 - started, and in the group too
        assert len(groups.pids()) == 2
        used = int((groups.groups["memory"] / "memory.usage_in_bytes").read_text()) >> 20
        groups.set(memory_mib=used + 40)  # far below what opening 400,000 accounts takes
        with pytest.raises(FixtureError) as e:
            account.reset(accounts={f"cust-{n:07d}": 1000 for n in range(400_000)})
        assert "it has exited with status -9; the kernel killed 1 process(es) of this slot's account system" in str(
            e.value
        ), str(e.value)
        groups.set(memory_mib=cgroups.SERVICES_MIB)
        fresh = services.account
        assert fresh is not account and fresh.child.pid in groups.pids()
        fresh.reset(accounts={"a": 1})
        assert fresh.stats()["balances"] == {"a": 1}
