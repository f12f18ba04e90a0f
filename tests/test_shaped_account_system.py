"""The account system in a team's PSP's shape: its paths, JSON and status codes, as deliberately not idempotent
as the course's, and recorded in the same history (the service's key is the call's GUID)."""

from dataclasses import replace
from pathlib import Path

import pytest
import requests

from relaychaos.fixtures.account_system.shape import Answer
from relaychaos.stack.account_system import AccountSystem
from relaychaos.stack.api_profile import Downstream

pytestmark = pytest.mark.stack  # a fixture process

PSP = Downstream(
    transfer_method="POST",
    transfer_path="/v1/transfers",
    query_method="GET",
    query_path="/v1/transfers?reference={key}",
    key="/reference",
    fields={"amount": "/amount", "payer": "/debtor_account", "payee": "/creditor_account"},
    applied=201,
    refused=422,
    not_found=404,
    example={"amount": 1, "debtor_account": "a", "creditor_account": "b", "reference": "k"},
)


@pytest.fixture
def psp(tmp_path: Path):
    system = AccountSystem.start(tmp_path, PSP)
    system.reset(accounts={"alice": 100, "bob": 0})
    yield system
    system.close()


def pay(system: AccountSystem, key: str, amount: int = 10, **extra) -> requests.Response:
    body = {"amount": amount, "currency": "EUR", "debtor_account": "alice", "creditor_account": "bob", "reference": key}
    return requests.post(system.url + "/v1/transfers", json={**body, **extra}, timeout=5)


def test_a_transfer_is_executed_with_the_psps_status_and_body(psp):
    answer = pay(psp, "k1")
    assert answer.status_code == 201 and answer.json() == {"id": "tr_1", "status": "executed", "reference": "k1"}
    assert psp.stats()["balances"] == {"alice": 90, "bob": 10}


def test_the_same_reference_twice_is_executed_twice(psp):
    assert [pay(psp, "k1").status_code for _ in range(2)] == [201, 201]
    stats = psp.stats()
    assert stats["guids"]["k1"]["debits"] == 2 and stats["balances"]["alice"] == 80


def test_a_refused_transfer_gets_the_refused_status_and_moves_nothing(psp):
    answer = pay(psp, "k2", amount=1000)
    assert answer.status_code == 422 and answer.json() == {"error": "insufficient funds", "code": "B201"}
    assert psp.stats()["balances"] == {"alice": 100, "bob": 0}


def test_the_query_finds_an_executed_transfer_and_not_a_refused_or_unknown_one(psp):
    pay(psp, "k1")
    pay(psp, "k2", amount=1000)
    found = requests.get(psp.url + "/v1/transfers", params={"reference": "k1"}, timeout=5)
    assert found.status_code == 200 and found.json()["reference"] == "k1"
    for key in ("k2", "never"):
        assert requests.get(psp.url + "/v1/transfers", params={"reference": key}, timeout=5).status_code == 404


def test_the_history_sees_the_call_as_the_contracts_transfer(psp):
    pay(psp, "k1", note="extra fields pass")
    call = psp.stats()["calls"][0]
    assert call["guid"] == "k1" and call["request"] == {"guid": "k1", "amount": 10, "from": "alice", "to": "bob"}


def test_a_call_without_its_key_is_refused_with_400_and_applies_nothing(psp):
    answer = requests.post(psp.url + "/v1/transfers", json={"amount": 10}, timeout=5)
    assert answer.status_code == 400 and psp.stats()["balances"]["alice"] == 100


def test_a_route_the_psp_does_not_have_is_404_naming_it(psp):
    answer = requests.post(psp.url + "/transfer", json={"guid": "g1"}, timeout=5)
    assert answer.status_code == 404 and "POST /transfer is not a route of this PSP" in answer.json()["error"]


def test_the_key_may_travel_in_a_header(tmp_path):
    shape = Downstream(**{**PSP.__dict__, "key": "header:X-Reference"})
    system = AccountSystem.start(tmp_path, shape)
    try:
        system.reset(accounts={"alice": 100, "bob": 0})
        body = {"amount": 5, "debtor_account": "alice", "creditor_account": "bob"}
        answer = requests.post(system.url + "/v1/transfers", json=body, headers={"X-Reference": "h1"}, timeout=5)
        assert answer.status_code == 201 and system.stats()["guids"]["h1"]["debits"] == 1
    finally:
        system.close()


def test_the_query_answers_in_the_declared_shape_with_the_transfer_as_the_service_sent_it(tmp_path):
    found = Answer(
        id="/data/0/id",
        status="/data/0/state",
        status_value="settled",
        key="/data/0/end_to_end_id",
        fields={"amount": "/data/0/amount/value", "payer": "/data/0/debtor", "payee": "/data/0/creditor"},
        copy={"/data/0/amount/currency": "/currency"},
    )
    applied = Answer(id="/transfer_id", status="/state", status_value="accepted", key="/ref")
    system = AccountSystem.start(tmp_path, replace(PSP, applied_answer=applied, found_answer=found))
    try:
        system.reset(accounts={"alice": 100, "bob": 0})
        answer = pay(system, "k1", amount=30)
        assert answer.status_code == 201 and answer.json() == {"transfer_id": "tr_1", "state": "accepted", "ref": "k1"}
        pay(system, "k1", amount=5)  # still not idempotent: applied again, the query reports the first
        got = requests.get(system.url + "/v1/transfers", params={"reference": "k1"}, timeout=5)
        assert got.status_code == 200 and got.json() == {
            "data": [
                {
                    "id": "tr_1",
                    "state": "settled",
                    "end_to_end_id": "k1",
                    "amount": {"value": 30, "currency": "EUR"},
                    "debtor": "alice",
                    "creditor": "bob",
                }
            ]
        }
        assert system.stats()["guids"]["k1"]["debits"] == 2
    finally:
        system.close()


def test_left_undeclared_both_answers_are_the_id_status_and_reference(psp):
    assert pay(psp, "k1").json() == {"id": "tr_1", "status": "executed", "reference": "k1"}
    got = requests.get(psp.url + "/v1/transfers", params={"reference": "k1"}, timeout=5)
    assert got.json() == {"id": "tr_1", "status": "executed", "reference": "k1"}
