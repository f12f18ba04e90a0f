"""The longest delay a run injected, as the final phase's --min-age counts it (contract §6: larger than
ACCOUNT_TIMEOUT_MS plus the longest delay the harness injects): a latency toxic delays data by its latency at
most, and no longer than it stays on its proxy (Toxiproxy lets held data go when a toxic is removed); an
account-system processing delay counts in full."""

from __future__ import annotations

from typing import Any, cast

from relaychaos.engine import steps as S
from relaychaos.engine.final_phase import safe_min_age_s
from relaychaos.engine.nemesis import Nemesis
from relaychaos.recorder import Recorder
from relaychaos.stack.world import Stack
from relaychaos.tolerances import CURRENT as TOLERANCES


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class QuietStack:
    """What the nemesis calls on a stack, doing nothing: the delays are the nemesis's own bookkeeping."""

    class Account:
        def set_faults(self, **spec: Any) -> None: ...

    account = Account()

    def side(self, proxy: str) -> str:
        return "account" if proxy == "account" else "channel"

    def add_toxic(self, *args: Any, **kwargs: Any) -> None: ...

    def remove_toxic(self, *args: Any) -> None: ...

    def heal(self) -> None: ...


def nemesis() -> tuple[Nemesis, Clock]:
    clock = Clock()
    return Nemesis(cast(Stack, QuietStack()), Recorder(), lambda label: label, clock=clock), clock


def test_a_latency_toxic_removed_early_delayed_nothing_longer_than_it_was_on():
    n, clock = nemesis()
    n.add_toxic(S.AddToxic("account", "latency", name="hold", attributes={"latency": 10000}))
    clock.now += 0.03
    n.remove_toxic(S.RemoveToxic("account", "hold"))
    clock.now += 60
    assert round(n.longest_delay_s(), 3) == 0.03


def test_a_latency_toxic_still_on_counts_the_time_so_far_up_to_its_latency_and_jitter():
    n, clock = nemesis()
    n.add_toxic(S.AddToxic("account", "latency", attributes={"latency": 700, "jitter": 100}))
    clock.now += 0.5
    assert round(n.longest_delay_s(), 3) == 0.5
    clock.now += 5
    assert round(n.longest_delay_s(), 3) == 0.8


def test_heal_lifts_every_toxic_and_the_longest_delay_stays_what_it_was():
    n, clock = nemesis()
    n.add_toxic(S.AddToxic("hub-a", "latency", name="a", attributes={"latency": 300}))
    n.add_toxic(S.AddToxic("account", "latency", name="b", attributes={"latency": 2000}))
    clock.now += 1.2
    n.heal(S.Heal())
    clock.now += 30
    assert round(n.longest_delay_s(), 3) == 1.2


def test_a_processing_delay_counts_in_full_and_other_toxics_delay_nothing():
    n, clock = nemesis()
    n.add_toxic(S.AddToxic("account", "timeout", attributes={"timeout": 0}))
    clock.now += 3
    assert n.longest_delay_s() == 0
    n.server_fault(S.ServerFault(delay_ms=200))
    assert n.longest_delay_s() == 0.2


def test_the_final_min_age_is_the_time_out_plus_the_measured_delay_plus_the_margin():
    scenario = S.Scenario(
        "hold",
        steps=(S.AddToxic("account", "latency", attributes={"latency": 10000}), S.Send("g1")),
        account_timeout_ms=1000,
    )
    assert safe_min_age_s(scenario) == round(11 + TOLERANCES.min_age_margin_s, 3)  # what the steps could inject
    assert safe_min_age_s(scenario, 0.03) == round(1.03 + TOLERANCES.min_age_margin_s, 3)  # what they did


def test_a_toxic_added_again_under_its_name_keeps_the_time_the_one_in_force_was_added():
    """Toxiproxy refuses a second toxic of the same name on a proxy: the first stays, with its latency and time."""
    n, clock = nemesis()
    n.add_toxic(S.AddToxic("account", "latency", name="hold", attributes={"latency": 5000}))
    clock.now += 2
    n.add_toxic(S.AddToxic("account", "latency", name="hold", attributes={"latency": 5000}))
    clock.now += 1
    n.remove_toxic(S.RemoveToxic("account", "hold"))
    assert round(n.longest_delay_s(), 3) == 3
