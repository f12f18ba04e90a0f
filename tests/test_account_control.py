"""The account system's two ports: the relay's serves contract section 2 alone, the control port the harness alone.

A relay reaches the fixture's public port (through the account proxy) and nothing else
the harness promises it; the control API listens on a port of its own and refuses any
request without the harness's token.
"""
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from relaychaos.fixtures.account_system.app import make_apps
from relaychaos.stack.account_system import TOKEN_HEADER, AccountSystem

pytestmark = pytest.mark.stack  # fixture processes

NOT_FOUND = {"error": "not found: the account system serves only POST /transfer and GET /transfer/{guid}"}
CONTROL_ROUTES = sorted({(r.method, r.resource.canonical) for r in make_apps()[1].router.routes()
                         if r.resource.canonical.startswith("/_control/")})
OTHER_REQUESTS = [("GET", "/transfer"), ("PUT", "/transfer"), ("DELETE", "/transfer"), ("POST", "/transfer/g1"),
                  ("HEAD", "/transfer/g1"), ("DELETE", "/transfer/g1"), ("GET", "/transfer/g1/more"),
                  ("GET", "/"), ("GET", "/health"), ("POST", "/_control"), ("GET", "/_control/")]


def third_party(system: AccountSystem, method: str, path: str, **kwargs) -> requests.Response:
    """A control call carrying the token, made by someone other than the harness's client."""
    return requests.request(method, system.control_url + path, headers={TOKEN_HEADER: system._token},
                            timeout=5, **kwargs)


def test_every_control_route_is_listed():
    assert {("POST", "/_control/faults"), ("DELETE", "/_control/faults"),
            ("POST", "/_control/reset"), ("POST", "/_control/release"), ("GET", "/_control/stats"),
            ("GET", "/_control/wait"), ("GET", "/_control/health")} <= set(CONTROL_ROUTES)


@pytest.mark.parametrize("with_token", [False, True], ids=["no-token", "with-token"])
@pytest.mark.parametrize("method, path", CONTROL_ROUTES)
def test_the_relays_port_answers_404_to_every_control_route(account_system, method, path, with_token):
    headers = {TOKEN_HEADER: account_system._token} if with_token else {}
    resp = requests.request(method, account_system.url + path, headers=headers, json={"delay_ms": 9999}, timeout=5)
    assert (resp.status_code, resp.json()) == (404, NOT_FOUND)
    assert account_system.stats()["faults"]["delay_ms"] == 0, "the request changed nothing"


@pytest.mark.parametrize("method, path", OTHER_REQUESTS)
def test_the_relays_port_answers_404_to_every_request_outside_the_contract(account_system, method, path):
    resp = requests.request(method, account_system.url + path, timeout=5)
    assert resp.status_code == 404
    assert method == "HEAD" or resp.json() == NOT_FOUND  # a HEAD answer has no body


@pytest.mark.parametrize("token", [None, "", "wrong"], ids=["missing", "empty", "wrong"])
@pytest.mark.parametrize("method, path", CONTROL_ROUTES)
def test_the_control_port_refuses_a_missing_or_wrong_token_with_401(account_system, method, path, token):
    headers = {} if token is None else {TOKEN_HEADER: token}
    resp = requests.request(method, account_system.control_url + path, headers=headers,
                            json={"delay_ms": 9999}, timeout=5)
    assert resp.status_code == 401
    assert TOKEN_HEADER in resp.json()["error"] and "RELAYCHAOS_CONTROL_TOKEN" in resp.json()["error"]
    assert account_system.stats()["faults"]["delay_ms"] == 0, "the refused request changed nothing"


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
    proc = subprocess.run([sys.executable, "-m", "relaychaos.fixtures.account_system", "--port", "5", "--control-port",
                           "5"], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2 and "give the control API a port of its own" in proc.stderr
