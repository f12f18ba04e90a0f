"""The account system's two ports: the relay's serves contract section 2 alone, the control port the harness alone.

A relay reaches the fixture's public port (through the account proxy) and nothing else
the harness promises it; the control API listens on a port of its own and refuses any
request without the harness's token. What the harness set, it can audit: the fixture
reports its faults as set and how many control writes it received.
"""

import subprocess
import sys
import threading
from pathlib import Path

import pytest
import requests

from relaychaos.fixtures.account_system.app import make_apps
from relaychaos.stack.account_system import TOKEN_HEADER, AccountSystem

pytestmark = pytest.mark.stack  # fixture processes

NOT_FOUND = {"error": "not found: the account system serves only POST /transfer and GET /transfer/{guid}"}
CONTROL_ROUTES = sorted(
    {
        (r.method, r.resource.canonical)
        for r in make_apps()[1].router.routes()
        if r.resource.canonical.startswith("/_control/")
    }
)
OTHER_REQUESTS = [
    ("GET", "/transfer"),
    ("PUT", "/transfer"),
    ("DELETE", "/transfer"),
    ("POST", "/transfer/g1"),
    ("HEAD", "/transfer/g1"),
    ("DELETE", "/transfer/g1"),
    ("GET", "/transfer/g1/more"),
    ("GET", "/"),
    ("GET", "/health"),
    ("POST", "/_control"),
    ("GET", "/_control/"),
]


@pytest.fixture
def own(tmp_path: Path):
    """A fixture process of this test's own, for tests that tamper with it (the shared one must stay clean)."""
    system = AccountSystem.start(tmp_path)
    yield system
    system.close()


def third_party(system: AccountSystem, method: str, path: str, **kwargs) -> requests.Response:
    """A control call carrying the token, made by someone other than the harness's client."""
    return requests.request(
        method, system.control_url + path, headers={TOKEN_HEADER: system._token}, timeout=5, **kwargs
    )


def test_every_control_route_is_listed():
    assert {
        ("GET", "/_control/faults"),
        ("POST", "/_control/faults"),
        ("DELETE", "/_control/faults"),
        ("POST", "/_control/reset"),
        ("POST", "/_control/release"),
        ("GET", "/_control/stats"),
        ("GET", "/_control/wait"),
        ("GET", "/_control/health"),
    } <= set(CONTROL_ROUTES)


@pytest.mark.parametrize("with_token", [False, True], ids=["no-token", "with-token"])
@pytest.mark.parametrize("method, path", CONTROL_ROUTES)
def test_the_relays_port_answers_404_to_every_control_route(account_system, method, path, with_token):
    headers = {TOKEN_HEADER: account_system._token} if with_token else {}
    resp = requests.request(method, account_system.url + path, headers=headers, json={"delay_ms": 9999}, timeout=5)
    assert (resp.status_code, resp.json()) == (404, NOT_FOUND)
    assert account_system.audit() == [], "the request changed nothing"


@pytest.mark.parametrize("method, path", OTHER_REQUESTS)
def test_the_relays_port_answers_404_to_every_request_outside_the_contract(account_system, method, path):
    resp = requests.request(method, account_system.url + path, timeout=5)
    assert resp.status_code == 404
    assert method == "HEAD" or resp.json() == NOT_FOUND  # a HEAD answer has no body


@pytest.mark.parametrize("token", [None, "", "wrong"], ids=["missing", "empty", "wrong"])
@pytest.mark.parametrize("method, path", CONTROL_ROUTES)
def test_the_control_port_refuses_a_missing_or_wrong_token_with_401(account_system, method, path, token):
    headers = {} if token is None else {TOKEN_HEADER: token}
    resp = requests.request(
        method, account_system.control_url + path, headers=headers, json={"delay_ms": 9999}, timeout=5
    )
    assert resp.status_code == 401
    assert TOKEN_HEADER in resp.json()["error"] and "RELAYCHAOS_CONTROL_TOKEN" in resp.json()["error"]
    assert account_system.audit() == [], "the refused request changed nothing"


def test_the_control_port_serves_nothing_but_the_control_api(account_system):
    account_system.reset(accounts={"a": 100, "b": 0})
    resp = third_party(account_system, "POST", "/transfer", json={"guid": "g", "from": "a", "to": "b", "amount": 1})
    assert resp.status_code == 404 and "only the /_control/ routes" in resp.json()["error"]
    assert account_system.stats()["calls"] == []


def test_the_token_travels_in_the_environment_never_in_argv(account_system):
    """argv is world-readable in /proc; the fixture's environment is not."""
    cmdline = Path(f"/proc/{account_system.child.pid}/cmdline").read_bytes()
    assert account_system._token.encode() not in cmdline
    assert b"--control-port" in cmdline


def test_one_port_for_both_is_refused_with_the_fix():
    proc = subprocess.run(
        [sys.executable, "-m", "relaychaos.fixtures.account_system", "--port", "5", "--control-port", "5"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 2 and "give the control API a port of its own" in proc.stderr


def test_get_faults_reports_them_as_set_not_as_consumed_and_counts_the_writes(own):
    own.reset(accounts={"a": 100, "b": 0})
    own.set_faults(delay_ms=5, e500_next=2, e500_guids=["z", "y"])
    own.set_faults(hold_guids=["h"], e500_guids=["x"])
    for guid in ("g1", "g2", "g3"):
        requests.post(f"{own.url}/transfer", json={"guid": guid, "from": "a", "to": "b", "amount": 1}, timeout=5)
    assert own.stats()["faults"]["e500_next"] == 0, "the calls consumed the E500s in force"
    assert third_party(own, "GET", "/_control/faults").json() == {
        "set": {"delay_ms": 5, "e500_guids": ["x", "y", "z"], "e500_next": 2, "hold_guids": ["h"], "e500_once": []},
        "writes": 3,
    }


def test_audit_finds_nothing_after_any_sequence_of_the_harness_own_changes(account_system, tmp_path):
    """Calls consuming e500_next, releases, waits and resets are the harness's own doing: no difference."""
    acct, audits = account_system, []

    def post(guid):
        requests.post(f"{acct.url}/transfer", json={"guid": guid, "from": "a", "to": "b", "amount": 1}, timeout=10)

    acct.reset(ledger_path=tmp_path / "ledger.sqlite", accounts={"a": 100, "b": 0})
    audits.append(acct.audit())
    acct.set_faults(delay_ms=20)
    acct.set_faults(e500_next=1, e500_guids=["bad"])
    for guid in ("g1", "bad"):
        post(guid)
    assert acct.stats()["faults"]["e500_next"] == 0, "g1 consumed the E500 in force"
    audits.append(acct.audit())
    acct.set_faults(hold_guids=["h1", "h2"], delay_ms=0)
    senders = [threading.Thread(target=post, args=(g,)) for g in ("h1", "h2")]
    for sender in senders:
        sender.start()
    assert acct.wait_calls("h1") == 1 and acct.wait_calls("h2") == 1
    audits.append(acct.audit())
    acct.release(["h1"])
    audits.append(acct.audit())
    acct.release()
    for sender in senders:
        sender.join(5)
    audits.append(acct.audit())
    acct.set_faults(e500_next=3)
    acct.clear_faults()
    audits.append(acct.audit())
    acct.set_faults(delay_ms=1, hold_guids=["later"])
    acct.reset()
    audits.append(acct.audit())
    assert audits == [[]] * len(audits)


def test_audit_reports_faults_set_by_someone_else_with_the_token(own):
    own.set_faults(delay_ms=200, hold_guids=["h"])
    assert third_party(own, "POST", "/_control/faults", json={"delay_ms": 0, "e500_guids": ["evil"]}).ok
    assert own.audit() == [
        "the account system received 2 control writes, the harness made 1: someone else changed its faults",
        "delay_ms is 0, the harness set 200",
        "e500_guids is [evil], the harness set []",
    ]


@pytest.mark.parametrize(
    "method, path, body",
    [("POST", "/_control/release", {}), ("DELETE", "/_control/faults", None), ("POST", "/_control/reset", {})],
    ids=["release", "clear", "reset"],
)
def test_audit_reports_a_write_it_did_not_make_even_one_that_leaves_the_faults_alone(own, method, path, body):
    assert third_party(own, method, path, json=body).ok
    assert own.audit() == [
        "the account system received 1 control write, the harness made 0: someone else changed its faults"
    ]


def test_audit_reports_a_clear_by_someone_else_field_by_field(own):
    own.set_faults(e500_next=4, e500_guids=["b", "a"])
    assert third_party(own, "DELETE", "/_control/faults").ok
    assert own.audit() == [
        "the account system received 2 control writes, the harness made 1: someone else changed its faults",
        "e500_guids is [], the harness set [a, b]",
        "e500_next is 0, the harness set 4",
    ]


def test_a_refused_write_counts_on_neither_side(own):
    with pytest.raises(TypeError, match="hold_guids must be a list"):
        own.set_faults(hold_guids="h")  # refused by the client before the fixture sees it
    resp = third_party(own, "POST", "/_control/faults", json={"e500_guids": "x"})
    assert resp.status_code == 400 and "not a fault spec" in resp.json()["error"]
    assert third_party(own, "POST", "/_control/faults", json={"e500_next": "many"}).status_code == 400
    assert own.audit() == []
