"""Every interface rule proved on literal histories (relaychaos.checkers.interface): the answers' shape, the
ledger's schema, the batch runs, tampering, and serve starting. Where each holds, where it breaks.

See literal_support.py for `@holds` / `@breaks` and the stories.
"""

from __future__ import annotations

import json

import pytest

from relaychaos.history import History

from .history_builder import answer
from .literal_support import MIN_AGE, breaks, holds, one_paid_transfer, paid, story


@holds("interface")
def test_an_e400_answer_without_guid_holds():
    h = story()
    h.send("g1", raw="not json", body=json.dumps({"code": "E400", "message": "malformed transfer"}), status=400)
    return h.build()


@pytest.mark.parametrize(
    "body, status",
    [
        (json.dumps({"code": "0000", "message": "applied"}), 200),
        (answer("g1", "E400"), 200),
        ("OK, done", 200),
        (json.dumps({"guid": "g1"}), 200),
        (answer("g1", "0001"), 200),
        (answer("g1", "0000"), 500),
    ],
    ids=["200-without-guid", "e400-with-http-200", "not-json", "no-code", "unknown-code", "0000-with-http-500"],
)
@breaks("interface", "g1")
def test_an_answer_outside_the_interface_breaks(body, status):
    h = story()
    paid(h, "g1", body=body, status=status)
    return h.build()


@breaks("ledger-schema", None)
def test_a_ledger_without_a_required_column_breaks():
    h = one_paid_transfer()
    h.schema(["guid", "status", "resp_code", "request", "response", "updated_at"])
    return h.build()


@breaks("ledger-schema", None)
def test_a_ledger_that_could_not_be_read_breaks():
    h = one_paid_transfer()
    h.snapshot(None, at=0.2, error="database is locked")
    return h.build()


@holds("ledger-schema")
def test_a_ledger_with_extra_columns_holds():
    h = one_paid_transfer()
    h.schema(["guid", "status", "resp_code", "request", "response", "attempts", "updated_at", "created_at"])
    return h.build()


def batch_run(returncode: int | None, *, down: tuple[float, float] | None = None) -> History:
    """resolve from 1.0 to 2.0 exiting with returncode; the account proxy disabled from down[0] to down[1]."""
    h = story()
    if down:
        h.disable("account", at=down[0])
        h.enable("account", at=down[1])
    h.batch("resolve", MIN_AGE, start=1.0, end=2.0, returncode=returncode)
    return h.build()


@pytest.mark.parametrize("down", [None, (0.5, 3.0), (1.5, 1.6)], ids=["up", "down-throughout", "down-during"])
@holds("batch-runs")
def test_a_batch_exiting_0_holds_and_one_failing_while_the_account_proxy_was_down_is_accepted(down):
    return batch_run(0 if down is None else 1, down=down)


@pytest.mark.parametrize(
    "returncode, down",
    [(3, None), (1, (0.2, 0.5)), (None, None), (None, (0.5, 3.0))],
    ids=["exit-3", "exit-1-after-the-proxy-came-back", "killed", "killed-while-down"],
)
@breaks("batch-runs", None)
def test_a_batch_that_failed_with_the_account_system_reachable_or_was_killed_breaks(returncode, down):
    return batch_run(returncode, down=down)


@holds("tampering")
def test_a_run_whose_audits_found_nothing_changed_holds_tampering():
    h = story()
    h.send("g1", at=0.2, answered_at=0.3)
    h.account_call("g1", 0.25)
    return h.build()


@breaks("tampering", None)
def test_a_toxic_removed_behind_the_harness_s_back_breaks_tampering():
    h = story()
    h.send("g1", at=0.2, answered_at=0.3)
    h.account_call("g1", 0.25)
    h.tampered(0.6, 2, "toxic latency_downstream (latency) on proxy account was removed; the harness added it")
    return h.build()


@holds("account-requests")
def test_a_body_held_back_by_the_harness_s_own_toxic_on_the_account_proxy_holds_account_requests():
    h = story()
    h.send("g1", at=0.2, answered_at=0.3)
    h.account_call("g1", 0.25)
    h.toxic("account", "timeout", at=0.4, stream="upstream", attributes={"timeout": 0})
    h.refused_request("a body that had not arrived 10 s after its head", head_at=0.5, at=10.5)
    return h.build()


@breaks("account-requests", None)
def test_a_body_over_the_bound_breaks_account_requests():
    h = story()
    h.send("g1", at=0.2, answered_at=0.3)
    h.account_call("g1", 0.25)
    h.refused_request("a body of 65,535 bytes, over 8 KiB", head_at=0.21, at=0.21)
    return h.build()


@breaks("serve-ready", None)
def test_a_step_that_failed_breaks_serve_ready():
    h = story()
    h.step_fail("start slot=a", "relay 'literal' serve did not answer GET /health within 10 s\nlog: ...", at=0.0)
    return h.build()


def never_served(also_started: bool = False) -> History:
    """serve exited before answering its health path (no table was ever made); the final phase's resolve and
    schema reading as the runner records them; with `also_started`, another slot had started first."""
    h = story()
    if also_started:
        h.start("b", at=-0.5)
    h.at(0.0, lambda r: r.starting("a", ["relay", "serve"]))
    h.at(0.1, lambda r: r.start_failed("a", "relay 'literal' serve exited with status 127 before answering"))
    h.step_fail("start slot=a", "relay 'literal' serve exited with status 127 before answering\nfix: ...", at=0.1)
    h.batch("resolve", MIN_AGE, start=1.0, end=1.1, returncode=127)
    h.schema([], error="no such table: ledger")
    return h.build()


def test_a_serve_that_never_started_is_serve_ready_alone_not_the_table_nor_the_batches():
    from relaychaos import checkers

    assert sorted({v.rule for v in checkers.check(never_served())}) == ["serve-ready"]
    rules = {v.rule for v in checkers.check(never_served(also_started=True))}  # a relay that ran: judged as ever
    assert {"serve-ready", "ledger-schema", "batch-runs"} <= rules


@holds("serve-ready")
def test_a_relay_that_started_holds_serve_ready():
    h = one_paid_transfer()
    h.start("a", at=-0.5)
    return h.build()
