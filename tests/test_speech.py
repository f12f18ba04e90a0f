"""How the channel speaks to a relay per profile: the course contract's POST /transfer, or a keyed service's
request with its key in a header; and the answers read in the contract's words, so one rule book judges both.

The service here is an aiohttp app on loopback in this process: real HTTP, nothing mocked on the wire.
"""

from __future__ import annotations

import asyncio
import json
import socket

import pytest
from aiohttp import web

from relaychaos.events import REFUSED
from relaychaos.idempotency_key import code as keyed_code
from relaychaos.recorder import Recorder
from relaychaos.stack.api_profile import Api
from relaychaos.stack.channel import Channel, transfer
from relaychaos.stack.speech import Course, Keyed, speech_for

API = Api(
    profile="idempotency-key",
    path="/payments",
    key_header="Idempotency-Key",
    health="/healthz",
    body={"amount": 1, "currency": "EUR", "parties": {"debtor": "a", "creditor": "b"}},
    fields={"amount": "/amount", "payer": "/parties/debtor", "payee": "/parties/creditor"},
)
T = transfer("k1", "alice", "bob", 10)


def test_the_course_profile_sends_the_transfer_as_the_contract_spells_it():
    req = Course().request(T)
    assert (req.method, req.path, json.loads(req.body)) == ("POST", "/transfer", T)
    assert Course().code(200, b'{"guid": "k1", "code": "E903"}') == "E903" and Course().code(200, b"no") is None


def test_a_keyed_service_gets_its_own_body_and_the_key_in_its_header():
    req = Keyed(API).request(T)
    assert (req.method, req.path, req.headers["Idempotency-Key"]) == ("POST", "/payments", "k1")
    assert json.loads(req.body) == {"amount": 10, "currency": "EUR", "parties": {"debtor": "alice", "creditor": "bob"}}
    assert speech_for(API).health == "/healthz" and isinstance(speech_for(Api()), Course)


@pytest.mark.parametrize(
    "status, code",
    [(200, "0000"), (201, "0000"), (400, "E400"), (409, "E903"), (422, "E904"), (402, REFUSED), (404, REFUSED)]
    + [(500, "E901"), (502, "E901"), (504, "E901"), (302, None), (101, None)],
)
def test_a_keyed_answer_is_read_as_the_draft_and_stripe_define_it(status, code):
    assert keyed_code(status) == code


def test_the_channel_speaks_the_keyed_profile_and_records_the_contracts_words():
    seen: list[tuple[str, str, dict]] = []

    async def pay(request: web.Request) -> web.Response:
        seen.append((request.method, request.headers.get("Idempotency-Key", ""), await request.json()))
        status = 201 if len(seen) == 1 else 409
        return web.json_response({"id": "p1", "status": "succeeded"}, status=status)

    async def run() -> list:
        app = web.Application()
        app.router.add_post("/payments", pay)
        runner = web.AppRunner(app)
        await runner.setup()
        sock = socket.create_server(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        await web.SockSite(runner, sock).start()
        recorder = Recorder()
        try:
            async with Channel(recorder, f"http://127.0.0.1:{port}", timeout_s=5, speech=Keyed(API)) as ch:
                first = await ch.send(T)
                racers = await ch.race(T, 3)
        finally:
            await runner.cleanup()
        return [first[0], *racers, recorder]

    first, *racers, recorder = asyncio.run(run())
    assert (first.status, first.code) == (201, "0000") and [r.code for r in racers] == ["E903"] * 3
    assert {key for _, key, _ in seen} == {"k1"} and len(seen) == 4
    assert all(body["parties"] == {"debtor": "alice", "creditor": "bob"} for _, _, body in seen)
    sent = [e for e in recorder.history if e.type == "invoke"]
    assert all(e.value["request"] == T for e in sent), "the history keeps the transfer as the contract spells it"


@pytest.mark.parametrize(
    "raw, key, body",
    [
        (
            '{"guid": "k1", "from": "alice", "to": "bob"}',
            "k1",
            {"currency": "EUR", "parties": {"debtor": "alice", "creditor": "bob"}},
        ),
        (
            '{"guid": "k1", "from": 7, "to": "bob", "amount": 1}',
            "k1",
            {"amount": 1, "currency": "EUR", "parties": {"debtor": 7, "creditor": "bob"}},
        ),
        (
            '{"guid": " k1", "from": "alice", "to": "bob", "amount": 1}',
            None,
            {"amount": 1, "currency": "EUR", "parties": {"debtor": "alice", "creditor": "bob"}},
        ),
        (
            '{"guid": "k1", "from": "alice", "to": "bob", "amount": 1, "extra": 1}',
            "k1",
            {"amount": 1, "currency": "EUR", "parties": {"debtor": "alice", "creditor": "bob"}, "extra": 1},
        ),
    ],
    ids=[
        "a-missing-field-left-out",
        "a-wrong-type-kept",
        "a-guid-the-contract-refuses-becomes-no-key",
        "extra-fields-on-top",
    ],
)
def test_a_malformed_course_body_goes_to_a_keyed_service_malformed_the_same_way_in_its_shape(raw, key, body):
    req = Keyed(API).raw(raw.encode(), "k1")
    assert (req.method, req.path, req.headers.get("Idempotency-Key"), json.loads(req.body)) == (
        "POST",
        "/payments",
        key,
        body,
    )


@pytest.mark.parametrize("raw", [b"", b"not json", b"[]"])
def test_a_body_that_is_not_a_json_object_goes_to_a_keyed_service_as_it_is_with_the_steps_key(raw):
    req = Keyed(API).raw(raw, "k1")
    assert (req.path, req.headers["Idempotency-Key"], req.body) == ("/payments", "k1", raw)
    assert Course().raw(raw, "k1") == type(req)("POST", "/transfer", raw)
