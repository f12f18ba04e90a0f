"""relay.toml's [api], [downstream] and [ledger]: a production service described, every mistake found before
anything starts, the course manifest unchanged."""

from __future__ import annotations

import textwrap

import pytest

from relaychaos.errors import ManifestError
from relaychaos.stack import manifest
from relaychaos.stack.api_profile import pointer_get

SERVICE = """
name = "payments"
[commands]
serve = ["./bin/payments", "serve"]

[api]
profile = "idempotency-key"
path = "/payments"
health = "/healthz"
[api.body]
amount = 100
currency = "EUR"
debtor = "alice"
creditor = "bob"
meta = { channel = "app" }
[api.fields]
amount = "/amount"
payer = "/debtor"
payee = "/creditor"
[api.env]
port = "PORT"
downstream_url = "PSP_URL"
ledger_url = "DATABASE_URL"

[downstream]
key = "/reference"
transfer = { method = "POST", path = "/v1/transfers" }
query = { method = "GET", path = "/v1/transfers?reference={key}" }
status = { applied = 201, refused = 422, not_found = 404 }
[downstream.example]
amount = 100
currency = "EUR"
debtor_account = "alice"
creditor_account = "bob"
reference = "k1"
[downstream.fields]
amount = "/amount"
payer = "/debtor_account"
payee = "/creditor_account"

[ledger]
kind = "postgresql"
table = "idempotency_keys"
key = "key"
status = "status"
statuses = { started = "SENT", succeeded = "DONE", refused = "DONE", unknown = "UNKNOWN" }
"""


def write(tmp_path, text: str):
    (tmp_path / "relay.toml").write_text(textwrap.dedent(text))
    return tmp_path / "relay.toml"


def problems_of(tmp_path, text: str) -> str:
    with pytest.raises(ManifestError) as e:
        manifest.load(write(tmp_path, text))
    return str(e.value)


def test_a_course_manifest_is_the_course_profile_with_the_contracts_downstream_and_sqlite(tmp_path):
    m = manifest.load("relay_under_test/reference")
    assert m.profile.name == "course" and m.profile.downstream.course and m.profile.ledger.kind == "sqlite"
    assert set(m.commands) == {"serve", "resolve", "reprocess", "purge"}


def test_a_service_with_an_idempotency_key_a_psp_and_postgres_is_described_whole(tmp_path):
    m = manifest.load(write(tmp_path, SERVICE))
    api, down, ledger = m.profile.api, m.profile.downstream, m.profile.ledger
    assert (api.profile, api.method, api.path, api.key_header, api.health) == (
        "idempotency-key",
        "POST",
        "/payments",
        "Idempotency-Key",
        "/healthz",
    )
    assert api.request_body(7, "carol", "dave") == {
        "amount": 7,
        "currency": "EUR",
        "debtor": "carol",
        "creditor": "dave",
        "meta": {"channel": "app"},
    }
    assert (down.transfer_path, down.query_path, down.applied, down.refused) == (
        "/v1/transfers",
        "/v1/transfers?reference={key}",
        201,
        422,
    )
    assert down.key_of({}, {"reference": "k9"}) == "k9" and not down.course
    assert ledger.kind == "postgresql" and ledger.url is None and ledger.contract_status("succeeded") == "DONE"
    assert set(m.commands) == {"serve"}, "batch jobs are optional outside the course profile"


def test_a_profile_that_does_not_exist_is_named_with_the_ones_that_do(tmp_path):
    text = problems_of(tmp_path, SERVICE.replace('profile = "idempotency-key"', 'profile = "stripe"'))
    assert "[api] profile 'stripe' does not exist (profiles: course, idempotency-key)" in text


def test_a_pointer_at_a_field_the_request_does_not_have_is_found_before_anything_starts(tmp_path):
    text = problems_of(tmp_path, SERVICE.replace('payer = "/debtor"', 'payer = "/payer"'))
    assert "[api.fields].payer points at a field [api.body] does not have: '/payer': no 'payer' there" in text
    text = problems_of(tmp_path, SERVICE.replace('key = "/reference"', 'key = "/ref"'))
    assert "[downstream] key points at a field [downstream.example] does not have" in text
    assert "fix: correct it as listed" in text


def test_a_pointer_at_a_field_of_the_wrong_kind_says_what_belongs_there(tmp_path):
    text = problems_of(
        tmp_path, SERVICE.replace('amount = "/amount"\npayer = "/debtor"', 'amount = "/currency"\npayer = "/debtor"')
    )
    assert "[api.fields].amount = '/currency' holds 'EUR' in [api.body]: an example whole number belongs there" in text


def test_a_ledger_mapping_must_map_to_the_contracts_statuses(tmp_path):
    text = problems_of(tmp_path, SERVICE.replace('succeeded = "DONE"', 'succeeded = "OK"'))
    assert "[ledger.statuses] must map each of the table's status values to one of RECEIVED, SENT, DONE" in text
    assert "'succeeded': 'OK'" in text


def test_a_ledger_url_must_be_postgresql(tmp_path):
    text = problems_of(tmp_path, SERVICE.replace('kind = "postgresql"', 'kind = "postgresql"\nurl = "mysql://db"'))
    assert "[ledger] url must be a postgresql:// URL (or left out: the harness starts one), got 'mysql://db'" in text


def test_a_ledger_given_as_a_url_or_none_is_read_as_such(tmp_path):
    base = SERVICE.split("[ledger]")[0]
    m = manifest.load(write(tmp_path, base.replace('name = "payments"', 'name = "p"\nledger = "none"')))
    assert m.profile.ledger.kind == "none"


def test_a_query_path_needs_a_place_for_the_key(tmp_path):
    text = problems_of(tmp_path, SERVICE.replace("/v1/transfers?reference={key}", "/v1/transfers"))
    assert "[downstream.query] path must hold {key} where the key goes, got '/v1/transfers'" in text


def test_a_course_relay_cannot_reshape_the_downstream(tmp_path):
    course = (
        'name = "r"\n[commands]\nserve = ["a"]\nresolve = ["a"]\nreprocess = ["a"]\npurge = ["a"]\n'
        "[downstream]\n" + SERVICE.split("[downstream]")[1].split("[ledger]")[0]
    )
    assert '[downstream] needs [api] profile = "idempotency-key"' in problems_of(tmp_path, course)


def test_the_course_profile_still_needs_its_four_commands(tmp_path):
    assert "[commands] has no `purge`" in problems_of(tmp_path, 'name = "r"\n[commands]\nserve = ["a"]\n')


def test_every_problem_is_listed_at_once(tmp_path):
    text = problems_of(
        tmp_path,
        SERVICE.replace('path = "/payments"', 'path = "payments"').replace('method = "POST", ', 'method = "PUSH", '),
    )
    assert "[api] path must be a URL path starting with \"/\", got 'payments'" in text
    assert "[downstream.transfer] method must be one of POST, PUT, PATCH, GET, got 'PUSH'" in text


@pytest.mark.parametrize("pointer, found", [("", {"a/b": [1, {"~x": 2}]}), ("/a~1b/0", 1), ("/a~1b/1/~0x", 2)])
def test_json_pointers_follow_rfc_6901(pointer, found):
    assert pointer_get({"a/b": [1, {"~x": 2}]}, pointer) == found


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://u:p@db.example:5432/x?host=127.0.0.1&port=22320",
        "postgresql://u:p@db.example/x?hostaddr=10.0.0.1",
        "postgresql://u:p@a:5432,b:5432/x",
        "postgresql://u:p@/x?service=other",
    ],
)
def test_a_ledger_url_that_could_reach_another_host_than_its_proxys_is_refused(tmp_path, url):
    """The ledger proxy forwards to the host before the path; libpq would follow the query's host instead."""
    text = problems_of(tmp_path, SERVICE.replace('kind = "postgresql"', f'kind = "postgresql"\nurl = "{url}"'))
    assert "[ledger] url must name its one host and port before the path, and no other in its query" in text


def test_a_service_table_may_map_its_time_and_attempts_columns_for_the_age_and_attempt_claims(tmp_path):
    text = SERVICE.replace('unknown = "UNKNOWN" }', 'unknown = "UNKNOWN" }\nupdated_at = "changed"\nattempts = "tries"')
    ledger = manifest.load(write(tmp_path, text)).profile.ledger
    assert ledger.columns == ("key", "status", "changed", "tries")
    bad = SERVICE.replace('unknown = "UNKNOWN" }', 'unknown = "UNKNOWN" }\nupdated_at = "changed at"')
    assert "[ledger] updated_at must name a column" in problems_of(tmp_path, bad)


ANSWERS = """
[downstream.answers.applied]
id = "/transfer_id"
status = "/state"
status_value = "accepted"
[downstream.answers.found]
amount = "/amount"
payer = "/debtor_account"
payee = "/creditor_account"
copy = { "/currency" = "/currency" }
"""


def test_the_psps_answers_are_described_as_fully_as_its_requests(tmp_path):
    down = manifest.load(write(tmp_path, SERVICE.replace("[ledger]", ANSWERS + "\n[ledger]"))).profile.downstream
    assert (down.applied_answer.id, down.applied_answer.status, down.applied_answer.status_value) == (
        "/transfer_id",
        "/state",
        "accepted",
    )
    assert down.found_answer.body("tr_3", "k1", {"amount": 7, "from": "a", "to": "b"}, {"currency": "EUR"}) == {
        "id": "tr_3",
        "status": "executed",
        "reference": "k1",
        "amount": 7,
        "debtor_account": "a",
        "creditor_account": "b",
        "currency": "EUR",
    }


def test_left_out_the_answers_are_todays_and_the_query_answers_as_the_transfer_does(tmp_path):
    down = manifest.load(write(tmp_path, SERVICE)).profile.downstream
    assert down.applied_answer.body("tr_1", "k1", None, None) == {"id": "tr_1", "status": "executed", "reference": "k1"}
    only_applied = SERVICE.replace("[ledger]", '[downstream.answers.applied]\nid = "/tid"\n\n[ledger]')
    down = manifest.load(write(tmp_path, only_applied)).profile.downstream
    assert down.found_answer == down.applied_answer and down.found_answer.id == "/tid"


def test_an_answer_copying_a_field_the_request_does_not_have_is_found_before_anything_starts(tmp_path):
    text = problems_of(
        tmp_path, SERVICE.replace("[ledger]", ANSWERS.replace('= "/currency" }', '= "/ccy" }') + "[ledger]")
    )
    assert (
        "[downstream.answers.found] copy '/currency' points at a field [downstream.example] does not have: "
        "'/ccy': no 'ccy' there"
    ) in text
    assert "fix: correct it as listed" in text


def test_an_answer_pointer_must_be_a_pointer_and_have_a_place_of_its_own(tmp_path):
    text = problems_of(tmp_path, SERVICE.replace("[ledger]", ANSWERS.replace('"/amount"', '"amount"') + "[ledger]"))
    assert '[downstream.answers.found] amount must be a JSON pointer into the answer (starting with "/"' in text
    clash = ANSWERS.replace('payer = "/debtor_account"', 'payer = "/amount/payer"')
    text = problems_of(tmp_path, SERVICE.replace("[ledger]", clash + "[ledger]"))
    assert "[downstream.answers.found] puts amount at '/amount' and payer at '/amount/payer'" in text
    text = problems_of(tmp_path, SERVICE.replace("[ledger]", "[downstream.answers]\nfund = {}\n[ledger]"))
    assert "unknown key `fund` in [downstream.answers] (known: applied, found)" in text
