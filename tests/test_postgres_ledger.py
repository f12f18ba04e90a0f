"""A real PostgreSQL for a run, and the account system's read-only look at a team's ledger table in it.

The harness starts the OS package's server in a throw-away cluster, gives each relay a database
of its own, and reads a key's status through relay.toml's mapping at the moment a call arrives:
only committed rows count (write-before-send), and reading never waits on the service.
"""

from __future__ import annotations

import re

import psycopg
import pytest
import requests

from relaychaos.stack import manifest
from relaychaos.stack.account_system import AccountSystem
from relaychaos.stack.api_profile import Ledger
from relaychaos.stack.postgres import Postgres

from .test_shaped_account_system import PSP

pytestmark = pytest.mark.stack  # a PostgreSQL server and a fixture process

TEAM = Ledger(
    "postgresql",
    None,
    "idempotency_keys",
    "key",
    "state",
    {"started": "SENT", "succeeded": "DONE", "unknown": "UNKNOWN"},
)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    pg = Postgres.start(tmp_path_factory.mktemp("pg"))
    yield pg
    pg.close()


@pytest.fixture
def database(server):
    url = server.create_database()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE idempotency_keys (key text PRIMARY KEY, state text NOT NULL)")
    return url


@pytest.fixture
def psp(tmp_path, database):
    system = AccountSystem.start(tmp_path, PSP)
    system.reset(accounts={"alice": 100, "bob": 0}, ledger_url=database, ledger=TEAM)
    yield system
    system.close()


def pay(system: AccountSystem, key: str) -> None:
    body = {"amount": 1, "debtor_account": "alice", "creditor_account": "bob", "reference": key}
    assert requests.post(system.url + "/v1/transfers", json=body, timeout=5).status_code == 201


def test_each_relay_gets_a_database_of_its_own(server):
    first, second = server.create_database(), server.create_database()
    assert first != second and re.fullmatch(rf"postgresql://(relay_\w+):\w+@127\.0\.0\.1:{server.port}/\1", first)


def test_a_call_after_a_committed_claim_finds_the_row_in_the_contracts_words(psp, database):
    with psycopg.connect(database, autocommit=True) as conn:
        conn.execute("INSERT INTO idempotency_keys VALUES ('k1', 'started'), ('k2', 'succeeded')")
    pay(psp, "k1")
    pay(psp, "k2")
    pay(psp, "k3")
    calls = psp.stats()["calls"]
    assert [(c["guid"], c["ledger_status"], c["sent_row"]) for c in calls] == [
        ("k1", "SENT", True),
        ("k2", "DONE", False),
        ("k3", None, False),
    ]


def test_an_uncommitted_claim_is_not_a_claim(psp, database):
    with psycopg.connect(database) as conn:
        conn.execute("INSERT INTO idempotency_keys VALUES ('k1', 'started')")
        pay(psp, "k1")  # the service called before committing
        conn.rollback()
    call = psp.stats()["calls"][0]
    assert call["ledger_status"] is None and call["sent_row"] is False


def test_reading_never_waits_on_a_row_the_service_holds_locked(psp, database):
    with psycopg.connect(database, autocommit=True) as conn:
        conn.execute("INSERT INTO idempotency_keys VALUES ('k1', 'started')")
    with psycopg.connect(database) as conn:
        conn.execute("SELECT * FROM idempotency_keys WHERE key = 'k1' FOR UPDATE")
        conn.execute("UPDATE idempotency_keys SET state = 'succeeded' WHERE key = 'k1'")
        pay(psp, "k1")
    assert psp.stats()["calls"][0]["ledger_status"] == "SENT", "the last committed status, read at once"


def test_a_table_that_is_not_there_makes_the_ledger_unreadable_for_that_call(tmp_path, server):
    system = AccountSystem.start(tmp_path, PSP)
    try:
        system.reset(accounts={"alice": 100, "bob": 0}, ledger_url=server.create_database(), ledger=TEAM)
        pay(system, "k1")
        call = system.stats()["calls"][0]
        assert call["sent_row"] is None and 'relation "idempotency_keys" does not exist' in call["ledger_error"]
    finally:
        system.close()


def test_the_reference_relay_keeps_the_contracts_table_in_postgresql_when_given_a_ledger_url(make_stack):
    """relay_under_test/reference/postgres: the course profile on a PostgreSQL ledger, every claim committed
    before its call (the account system reads SENT there through [ledger]'s mapping)."""
    from relaychaos.run.chaos import run_and_check
    from relaychaos.scenarios import ALL

    from .conftest import ROOT

    relay = manifest.load(ROOT / "relay_under_test" / "reference" / "postgres")
    for name in ("happy-path", "race-32-two-relays", "kill-before-account-call"):
        s = ALL[name]
        stack = make_stack(relay, accounts=s.accounts, account_timeout_ms=s.account_timeout_ms)
        result = run_and_check(stack, s)
        result.assert_holds()
        assert {c["ledger_status"] for c in stack.account_stats()["calls"]} <= {"SENT", "UNKNOWN"}, name


def test_a_relays_role_cannot_run_programs_on_the_machine_or_read_another_relays_database(server):
    """Relay code is untrusted: its database's owner is no superuser (COPY ... TO PROGRAM would run a program
    outside its sandbox), and it can connect to its own database alone."""
    mine, theirs = server.create_database(), server.create_database()
    with psycopg.connect(mine, autocommit=True) as conn:
        assert conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone() == (False,)
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("COPY (SELECT 1) TO PROGRAM 'true'")
    login, database = mine.rsplit("/", 1)
    for other in (theirs.rsplit("/", 1)[1], "postgres", "template1"):
        assert other != database
        with pytest.raises(psycopg.OperationalError, match="permission denied for database"):
            psycopg.connect(f"{login}/{other}", connect_timeout=3)


def test_the_superuser_needs_the_harnesss_password(server):
    no_password = server.url.replace(server.url.split("@")[0], "postgresql://postgres")
    with pytest.raises(psycopg.OperationalError, match="password"):
        psycopg.connect(no_password, connect_timeout=3)


def test_a_relay_cannot_take_the_clusters_sessions_and_what_it_leaves_is_ended(server):
    """A relay's role holds at most ROLE_CONNECTIONS sessions; the harness ends the ones a killed relay left."""
    from relaychaos.stack.postgres import ROLE_CONNECTIONS

    url = server.create_database()
    held = [psycopg.connect(url, autocommit=True) for _ in range(ROLE_CONNECTIONS)]
    with pytest.raises(psycopg.OperationalError, match="too many connections"):
        psycopg.connect(url, connect_timeout=3)
    server.end_sessions(url)
    with psycopg.connect(server.url) as admin:
        role = url.split("//")[1].split(":")[0]
        left = admin.execute("SELECT count(*) FROM pg_stat_activity WHERE usename = %s", (role,)).fetchone()
    assert left == (0,)
    for conn in held:
        conn.close()
