"""The account system follows contract section 2 exactly, deliberately not idempotent."""

import sqlite3
import threading

import pytest
import requests


@pytest.fixture
def bank(account_system, tmp_path):
    account_system.reset(ledger_path=tmp_path / "ledger.sqlite", accounts={"a": 100, "b": 0})
    yield account_system
    account_system.clear_faults()


def post(bank, guid, src="a", dst="b", amount=10):
    return requests.post(f"{bank.url}/transfer", json={"guid": guid, "from": src, "to": dst, "amount": amount})


def query(bank, guid):
    return requests.get(f"{bank.url}/transfer/{guid}")


def test_every_post_is_applied_again(bank):
    assert post(bank, "g1").json() == {"guid": "g1", "code": "0000", "message": "applied"}
    assert post(bank, "g1").json()["code"] == "0000"
    stats = bank.stats()
    assert stats["balances"] == {"a": 80, "b": 20}
    assert stats["guids"]["g1"] == {"calls": 2, "debits": 2, "codes": ["0000", "0000"], "first_code": "0000"}


@pytest.mark.parametrize(
    "kwargs, code",
    [
        ({"amount": 1000}, "B201"),
        ({"dst": "nobody"}, "B202"),
        ({"amount": 0}, "B203"),
        ({"amount": -5}, "B203"),
        ({"amount": 1.5}, "B203"),
        ({"amount": True}, "B203"),
    ],
)
def test_definite_refusals_apply_nothing(bank, kwargs, code):
    resp = post(bank, "g", **kwargs)
    assert resp.status_code == 200 and resp.json()["code"] == code
    assert bank.stats()["balances"] == {"a": 100, "b": 0}


def test_the_query_api_reports_the_first_processing_or_404(bank):
    assert query(bank, "g2").status_code == 404
    assert query(bank, "g2").json() == {"guid": "g2", "found": False}
    post(bank, "g2", amount=1000)
    post(bank, "g2", amount=1)
    assert query(bank, "g2").json() == {"guid": "g2", "found": True, "code": "B201"}


def test_e500_for_chosen_guids_and_for_the_next_n_calls(bank):
    bank.set_faults(e500_guids=["bad"], e500_next=2)
    assert [post(bank, g).json()["code"] for g in ("bad", "x", "y", "z", "bad")] == [
        "E500",
        "E500",
        "E500",
        "0000",
        "E500",
    ]
    assert bank.stats()["balances"]["a"] == 90  # only z was applied
    bank.clear_faults()
    assert post(bank, "bad").json()["code"] == "0000"


def test_e500_once_answers_the_next_call_of_each_guid_e500_and_the_one_after_as_usual(bank):
    bank.set_faults(e500_once=["g1"])
    assert [post(bank, g).json()["code"] for g in ("g2", "g1", "g1")] == ["0000", "E500", "0000"]
    assert bank.stats()["balances"]["a"] == 80, "the E500 applied nothing"
    assert bank.audit() == [], "a call consuming it is not a difference"


def test_a_held_transfer_is_not_found_until_it_has_been_processed(bank):
    bank.set_faults(hold_guids=["slow"])
    answer = {}
    sender = threading.Thread(target=lambda: answer.setdefault("r", post(bank, "slow")))
    sender.start()
    assert bank.wait_calls("slow", 1, timeout_s=5) == 1
    assert query(bank, "slow").status_code == 404, "still being processed: not found yet"
    assert bank.stats()["guids"]["slow"]["codes"] == [None]
    bank.release(["slow"])
    assert query(bank, "slow").json()["found"] is True, "a release returns once the call has been processed"
    sender.join(5)
    assert answer["r"].json()["code"] == "0000"


def test_a_second_call_of_a_held_guid_is_processed_at_once_and_the_first_stays_held(bank):
    """The double call a hold exposes is answered without waiting for the release (or the relay's time-out)."""
    bank.set_faults(hold_guids=["twice"])
    first = threading.Thread(target=post, args=(bank, "twice"))
    first.start()
    assert bank.wait_calls("twice", 1, timeout_s=5) == 1
    assert post(bank, "twice").json()["code"] == "0000", "the second call, while the first is held"
    assert bank.stats()["guids"]["twice"]["codes"] == [None, "0000"], "the first is still held"
    bank.release(["twice"])
    first.join(5)
    assert bank.stats()["guids"]["twice"] == {"calls": 2, "debits": 2, "codes": ["0000", "0000"], "first_code": "0000"}


@pytest.mark.parametrize("how", ["release", "clear_faults"])
def test_a_query_right_after_a_release_or_heal_finds_every_held_call(bank, how):
    """Nothing released is still in transit when the release returns (the harness's promise, contract §6)."""
    bank.set_faults(hold_guids=[f"h{i}" for i in range(8)])
    senders = [threading.Thread(target=post, args=(bank, f"h{i}")) for i in range(8)]
    for s in senders:
        s.start()
    for i in range(8):
        assert bank.wait_calls(f"h{i}", 1, timeout_s=5) == 1
    bank.release() if how == "release" else bank.clear_faults()
    assert [query(bank, f"h{i}").status_code for i in range(8)] == [200] * 8
    for s in senders:
        s.join(5)


def test_a_processing_delay_holds_each_call(bank):
    bank.set_faults(delay_ms=200)
    resp = post(bank, "d")
    assert resp.elapsed.total_seconds() >= 0.2
    call = bank.stats()["calls"][0]
    assert call["answered_at"] - call["received_at"] >= 0.2


def test_wait_calls_gives_up_with_the_count_so_far(bank):
    assert bank.wait_calls("never", 1, timeout_s=0.2) == 0


def test_each_call_records_whether_a_committed_sent_row_existed(bank, tmp_path):
    post(bank, "before-ledger")
    db = sqlite3.connect(tmp_path / "ledger.sqlite", isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(
        "CREATE TABLE ledger (guid TEXT PRIMARY KEY, status TEXT NOT NULL, resp_code TEXT, request TEXT "
        "NOT NULL, response TEXT, attempts INTEGER NOT NULL, updated_at REAL NOT NULL)"
    )
    db.execute("INSERT INTO ledger VALUES ('claimed', 'SENT', NULL, '{}', NULL, 1, 0)")
    db.execute("BEGIN")
    db.execute("INSERT INTO ledger VALUES ('uncommitted', 'SENT', NULL, '{}', NULL, 1, 0)")
    post(bank, "claimed")
    post(bank, "uncommitted")
    post(bank, "no-row")
    db.execute("COMMIT")
    calls = {c["guid"]: c for c in bank.stats()["calls"]}
    assert calls["before-ledger"]["sent_row"] is None and "does not exist" in calls["before-ledger"]["ledger_error"]
    assert calls["claimed"]["sent_row"] is True and calls["claimed"]["ledger_status"] == "SENT"
    assert calls["uncommitted"]["sent_row"] is False, "an uncommitted row is not evidence"
    assert calls["no-row"]["sent_row"] is False and calls["no-row"]["ledger_status"] is None


def test_a_malformed_transfer_is_refused_and_logged(bank):
    resp = requests.post(f"{bank.url}/transfer", data=b"not json")
    assert resp.status_code == 400 and resp.json()["code"] == "E400"
    assert bank.stats()["calls"][0]["code"] == "E400"


def test_reset_forgets_everything(bank):
    post(bank, "r")
    bank.set_faults(e500_next=5)
    bank.reset(accounts={"x": 1})
    stats = bank.stats()
    assert stats["guids"] == {} and stats["calls"] == [] and stats["balances"] == {"x": 1}
    assert stats["faults"]["e500_next"] == 0


def test_a_reset_opens_a_night_s_hundred_thousand_accounts_in_one_request(account_system, tmp_path):
    """An imported night opens every account its logs imply: a body of megabytes (aiohttp's own limit is 1 MiB)."""
    accounts = {f"cust-{n:07d}": 1000 for n in range(100_000)}
    account_system.reset(ledger_path=tmp_path / "ledger.sqlite", accounts=accounts)
    assert len(account_system.stats()["balances"]) == 100_000
    account_system.reset(ledger_path=tmp_path / "ledger.sqlite", accounts={"a": 100, "b": 0})


def test_a_body_over_the_bound_is_refused_before_it_is_read_and_is_no_call(bank):
    padded = b'{"guid": "big", "from": "a", "to": "b", "amount": 1, "pad": "' + b"x" * (100 << 10) + b'"}'
    resp = requests.post(f"{bank.url}/transfer", data=padded)
    assert resp.status_code == 413
    assert bank.stats()["calls"] == []


def test_a_body_that_does_not_arrive_in_time_is_refused_and_is_no_call(monkeypatch):
    """A relay that sends all but the last byte of its body holds the connection for BODY_S, no longer."""
    import asyncio

    from aiohttp import web

    from relaychaos.fixtures.account_system import bounds
    from relaychaos.fixtures.account_system.app import BANK, make_apps

    monkeypatch.setattr(bounds, "BODY_S", 0.3)

    async def send_all_but_the_last_byte() -> tuple[bytes, list]:
        public, _ = make_apps()
        runner = web.AppRunner(public, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        try:
            reader, writer = await asyncio.open_connection(*runner.addresses[0][:2])
            body = b'{"guid": "slow", "from": "a", "to": "b", "amount": 1}'
            writer.write(b"POST /transfer HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body) + body[:-1])
            answer = await asyncio.wait_for(reader.read(100), 5)
            writer.close()
            return answer, public[BANK].calls
        finally:
            await runner.cleanup()

    answer, calls = asyncio.run(send_all_but_the_last_byte())
    assert answer.startswith(b"HTTP/1.1 408") and calls == []
