"""The harness's own side, attacked (tests/red_team_harness/): what it reads from a relay and serves to it.

Each test runs one attack relay and the reference's same run beside it, on an account system of the test's own
(what an attack leaves in it does not reach the worker's other tests), and holds the harness to a named verdict,
or to the attack achieving nothing, within the reference's time x1.5 and its memory +50 MiB: the harness's process,
the account system, Toxiproxy and the history's file (tests/red_team_harness/measure.py). An attack that succeeds
is a finding: its test is marked xfail(strict=True), saying what it achieves, until the harness holds.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from relaychaos.engine.steps import Race, Reprocess, Resolve, Scenario, Send
from relaychaos.events import Op
from relaychaos.run.chaos import run_and_check
from relaychaos.stack.account_system import AccountSystem

from .conftest import derived_relay
from .red_team_harness.measure import BeyondBounds, Cost, kib, measured, report, toxiproxy_pid

pytestmark = pytest.mark.stack
ATTACKS = Path(__file__).parent / "red_team_harness"
SENDS = Scenario("harness-side", steps=(Send("g1"), Send("g2"), Send("g3")))
ONE = Scenario("harness-side-one", steps=(Send("g1"),))
BATCH = Scenario("harness-side-batch", steps=(Send("g1"), Resolve(min_age_s=60), Reprocess(max_attempts=3)))
ANSWERS = Scenario("harness-side-answers", steps=(*(Send(f"g{n}") for n in range(1, 5)), Race("g5", n=3)))
EVIDENCE = re.compile(r"^ATTACK (\S+): (ACHIEVED|refused)?(.*)$", re.M)


def attack_relay(folder: Path, module: str, attack: str | None = None, ready_timeout_s: float = 10) -> Path:
    """A relay folder running tests/red_team_harness/<module>.py (or the reference), `[env] ATTACK` when given."""
    manifest = derived_relay(folder, module)
    if module != "reference":
        shutil.copy(ATTACKS / f"{module}.py", folder)
    env = f'[env]\nATTACK = "{attack}"\n' if attack is not None else ""
    manifest.write_text(manifest.read_text() + f"[limits]\nready_timeout_s = {ready_timeout_s}\n{env}")
    return manifest


@pytest.fixture
def account(tmp_path):
    """An account system of this test's own."""
    fixture = AccountSystem.start(tmp_path / "account-logs")
    yield fixture
    fixture.close()


@pytest.fixture
def cost(make_stack, account, toxiproxy, tmp_path):
    """cost(scenario, module, attack=None, **stack options) -> the Cost of one run of that relay on a fresh stack."""
    proxy = toxiproxy_pid(toxiproxy.url)

    def run(scenario: Scenario, module: str, attack: str | None = None, ready_timeout_s: float = 10, **options) -> Cost:
        folder = tmp_path / f"{module}-{attack}-{len(list(tmp_path.iterdir()))}"
        stack = make_stack(
            attack_relay(folder, module, attack, ready_timeout_s),
            accounts=scenario.accounts,
            account_timeout_ms=scenario.account_timeout_ms,
            account=account,
            **options,
        )
        before = kib(account.child.pid, "VmRSS")
        got = measured(lambda: run_and_check(stack, scenario), account.child.pid, proxy)
        stack.close()  # the relay gone, its connections closed: what the account system keeps for the next stack
        got.fixture_after_mib = (kib(account.child.pid, "VmRSS") - before) / 1024
        got.logs = "".join(p.read_text(errors="replace")[-20000:] for p in sorted(stack.workdir.glob("*.log")))
        return got

    return run


@pytest.fixture
def reference(cost):
    """reference(scenario) -> the reference relay's Cost for the scenario, run now: side by side with the attack's."""

    def get(scenario: Scenario) -> Cost:
        got = cost(scenario, "reference")
        assert got.result.ok, got.result.report()
        return got

    return get


@pytest.fixture
def own_sandbox(relaychaos_sandbox, tmp_path):
    """A sandbox (slot) of this test's own, with a log budget of its own: a flood uses none of the worker's."""
    from relaychaos.sandbox.policy import Sandbox

    sandbox = Sandbox.create(relaychaos_sandbox.mode, log_budget=tmp_path / "log-budget")
    yield sandbox
    sandbox.close()


def rules(cost: Cost) -> set[str]:
    return {v.rule for v in cost.result.verdicts}


def attempts(cost: Cost) -> dict[str, str]:
    """Each attempt's evidence line in the relay's logs (tests/red_team_harness/*.py print them)."""
    return {m.group(1): (m.group(2) or "") + m.group(3) for m in EVIDENCE.finditer(cost.logs)}


def finding(what: str):
    """The mark of an attack that succeeds: only its bound may fail (a broken attack fails the test)."""
    return pytest.mark.xfail(raises=BeyondBounds, strict=True, reason=f"finding: {what}")


# -- 1. the ledger: the harness reads it after every step, the account system on every transfer ---------------
# what each attack achieved before the harness bounded it (the red team's findings, 2026-12-05)
FLOOD = {
    "tiny": "40,000 rows of a few bytes carrying the run's tag: each snapshot holds them as dicts (ROW_BYTES counts "
    "64 bytes a row, Python spends about 1 KB) and the History keeps every snapshot: harness +190 MiB and history "
    "33 MiB for a 3 MiB ledger, run 4.6 s vs 0.2 s; at ROWS_BYTES (64 MiB) about 600,000 rows, ~500 MiB a snapshot",
    "wide": "300 rows of 60 KiB (under VALUE_BYTES) carrying the run's tag: each snapshot records 18 MiB again, "
    "under ROWS_BYTES: history 88 MiB and harness +142 MiB for a three-send scenario, growing with every step",
}


@pytest.mark.parametrize("attack", FLOOD)
def test_rows_carrying_the_run_s_tag_cost_the_harness_no_more_than_the_reference(cost, reference, attack):
    """Each achieved what FLOOD says before a read of the ledger found at most a row a GUID the channel sent, and a
    few: more is now named."""
    ref, got = reference(SENDS), cost(SENDS, "ledger_flood", attack)
    report(f"ledger_flood/{attack}", got, ref)
    assert f"ledger_flood/{attack}" in attempts(got), got.logs[-3000:]
    assert "ledger-schema" in rules(got), got.result.report()  # too many rows, or values over the bound
    got.hold(ref, owed_s=start_wait(got))  # the rows are written before serve is ready: the relay's own time


def test_a_ledger_schema_of_megabytes_costs_neither_the_harness_nor_the_account_system(cost, reference):
    ref, got = reference(SENDS), cost(SENDS, "ledger_schema")
    report("ledger_schema", got, ref)
    assert "ledger_schema/triggers" in attempts(got), got.logs[-3000:]
    assert "ledger-schema" in rules(got) and "schema takes more than" in got.result.report(), got.result.report()
    # the relay's own time: it makes the triggers before it is ready, and each of its own connections parses them
    got.hold(ref, owed_s=start_wait(got) + relay_time(got))


def test_a_ledger_that_makes_the_account_system_s_peek_slow_stalls_nothing_else(cost, reference):
    ref, got = reference(SENDS), cost(SENDS, "peek_stall")
    report("peek_stall", got, ref)
    assert "ledger-schema" in rules(got), got.result.report()
    got.hold(ref, owed_s=start_wait(got))  # its rows are written before serve is ready: the relay's own time


# -- 2. the account system and Toxiproxy -----------------------------------------------------------------------
# what each attack achieved before the harness bounded it (the red team's findings, 2026-12-05)
ACCOUNT_LOG = {
    "calls": "150 POSTs of a 60 KiB body (15,000 empty JSON objects) each: the bank keeps every parsed request "
    "(~1 MB each), stats() sends them all and the harness parses them into the History: account system +330 MiB "
    "(+175 MiB still resident after the stack closed), harness +320 MiB; nothing bounds the calls kept or stats()",
    "queries": "3,000 GET /transfer/{8,000-character guid}: Bank.queries keeps each key, stats() returns them all "
    "to the harness's History: account system +91 MiB, harness +95 to +137 MiB, history 23 MiB",
}
# what each attack achieved before the harness bounded it (the red team's findings, 2026-12-05)
UNFINISHED = {
    "headers": "100 connections each holding 126 headers of 8,000 bytes without the blank line: aiohttp has no "
    "header time-out and bounds.py starts its 10 s only after the headers: account system +200 MiB (2 MiB a "
    "connection, still resident after the stack closed); at the slot's 1,024 connections about 2 GiB",
    "bodies": "1,000 connections each holding 65,534 of a 65,535-byte body: within the 64 KiB and 10 s bounds, "
    "but nothing bounds the connections: account system +135 MiB and Toxiproxy +100 to +122 MiB, again every 10 s",
}


@pytest.mark.parametrize("attack", ACCOUNT_LOG)
def test_what_a_relay_sends_the_account_system_within_its_bounds_costs_the_harness_nothing(cost, reference, attack):
    ref, got = reference(SENDS), cost(SENDS, "account_flood", attack)
    report(f"account_flood/{attack}", got, ref)
    assert "requests the account system took" in attempts(got).get(f"account_flood/{attack}", ""), got.logs[-3000:]
    got.hold(ref, owed_s=start_wait(got))  # the requests come before serve is ready: the relay's own time


@pytest.mark.parametrize("attack", UNFINISHED)
def test_requests_a_relay_never_finishes_cost_the_account_system_and_toxiproxy_nothing(cost, reference, attack):
    ref, got = reference(SENDS), cost(SENDS, "account_connections", attack)
    report(f"account_connections/{attack}", got, ref)
    said = attempts(got).get(f"account_connections/{attack}", "")
    assert "held open" in said or "refused" in said, got.logs[-3000:]
    if attack == "bodies":  # each head asks for 65,535 bytes: refused by its length, and named
        assert "account-requests" in rules(got), got.result.report()
    # the relay's own time: it opens the connections before it is ready, and its answers wait behind its own traffic.
    # Toxiproxy's peak is reported, not held: it copies what the relay sends (64 MB of bodies here) and Go's
    # collector lags behind that garbage with the machine's load (it runs in the slot's services group, 1024 MiB)
    got.hold(ref, owed_s=start_wait(got) + relay_time(got), unheld=("toxiproxy_mib",))


# -- 3. answers and output -------------------------------------------------------------------------------------
def test_answers_that_never_end_or_are_too_big_are_named_and_cost_only_the_channel_s_time_outs(cost, reference):
    """Each hung answer may cost the channel its time-out (ACCOUNT_TIMEOUT_MS + 1.5 s), which the contract allows.
    Toxiproxy's peak is reported, not held: the hub proxy copies what the relay streams (~60 MB/s here) and Go's
    collector lags behind that garbage by +5 to +70 MiB with the machine's load (churn, not a queue: a channel that
    stops reading leaves Toxiproxy at +5 MiB)."""
    ref, got = reference(ANSWERS), cost(ANSWERS, "answers")
    report("answers", got, ref)
    assert len([k for k in attempts(got) if k.startswith("answers/")]) >= 5, got.logs[-3000:]
    assert rules(got) & {"interface", "answered-in-time"}, got.result.report()
    got.hold(ref, owed_s=5 * (ANSWERS.account_timeout_ms / 1000 + 1.5), unheld=("toxiproxy_mib",))


def relay_time(cost: Cost) -> float:
    """Seconds the channel waited on the relay's answers (each transfer's invoke to its end): the relay's own time."""
    began: dict[tuple, float] = {}
    waited = 0.0
    for e in cost.result.history:
        if e.f != Op.TRANSFER:
            continue
        key = (e.process, e.value.get("guid"), e.value.get("attempt"))
        if e.type == "invoke":
            began[key] = e.time
        elif key in began:
            waited += e.time - began.pop(key)
    return waited


def start_wait(cost: Cost) -> float:
    """Seconds from the harness starting serve to its start recorded done or failed."""
    began = next(e.time for e in cost.result.history if e.f == Op.START and e.type == "invoke")
    return next(e.time for e in cost.result.history if e.f == Op.START and e.type != "invoke") - began


def test_a_health_answer_that_trickles_is_given_up_at_the_ready_time_out(cost, reference):
    ref, got = reference(ONE), cost(ONE, "health_trickle", ready_timeout_s=1)
    report("health_trickle", got, ref)
    assert "health_trickle/poll" in attempts(got), got.logs[-3000:]
    waited = start_wait(got)
    if waited > 2 * 1 + 1:  # ready_timeout_s for serve, as long again for the sandbox's diagnosis, and a second
        raise BeyondBounds(f"the harness waited {waited:.1f} s for serve, whose ready_timeout_s is 1 s")
    assert "serve-ready" in rules(got), got.result.report()


@pytest.mark.parametrize(
    "attack",
    [
        "start",
        "batch",
    ],
)
def test_a_log_of_long_lines_not_utf8_costs_the_harness_nothing(cost, reference, own_sandbox, attack):
    scenario = SENDS if attack == "start" else BATCH
    ref, got = reference(scenario), cost(scenario, "logs", attack, sandbox=own_sandbox)
    report(f"logs/{attack}", got, ref)
    assert rules(got) & {"serve-ready", "batch-runs"}, got.result.report()
    got.hold(ref)


# -- 4. the sandbox's init -------------------------------------------------------------------------------------
def test_a_flood_of_notifications_and_a_connect_race_get_past_init_and_cost_nothing(cost, reference):
    ref, got = reference(SENDS), cost(SENDS, "init_flood")
    report("init_flood", got, ref)
    said = attempts(got)
    assert {f"init_flood/{a}" for a in ("binds", "connect-race", "listen-unbound", "listen-swap")} <= set(said), said
    assert not any(s.startswith("ACHIEVED") for s in said.values()), said
    assert got.result.ok, got.result.report()
    got.hold(ref, owed_s=start_wait(got))  # the relay's attacks come before it is ready: its own time
