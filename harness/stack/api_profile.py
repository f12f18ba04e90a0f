"""How a relay is spoken to, what it calls, and where it keeps its ledger: relay.toml's `[api]`, `[downstream]`
and `[ledger]` tables, read and checked whole before anything starts.

    [api]
    profile = "course"            # the relay contract (../shared/relay-contract.md), the default
    profile = "idempotency-key"   # the key in a header (the IETF draft, Stripe's idempotent requests)

The course profile takes no other key. The idempotency-key profile describes the service's request:

    [api]
    profile = "idempotency-key"
    method = "POST"                      # default POST
    path = "/payments"                   # required
    key_header = "Idempotency-Key"       # default
    health = "/healthz"                  # a GET answered 2xx once the service is ready; default /health
    [api.body]                           # an example request body: every field of a real one
    amount = 100
    currency = "EUR"
    debtor = "alice"
    creditor = "bob"
    [api.fields]                         # JSON pointers (RFC 6901) into that body
    amount = "/amount"
    payer = "/debtor"
    payee = "/creditor"
    [api.env]                            # the service's own names for what the harness gives it
    port = "PORT"

`[downstream]` is the account system's shape as the service calls it and as it answers (the default is the
course's section 2; its answers: relaychaos.stack.downstream_answers); `[ledger]` says where the ledger is:
"sqlite" (the contract's file), "none" (black-box: rules that read it are not checked) or "postgresql" with
the team's table mapped to key and status (and, where the table keeps them, a row's last change, its attempts
and its saved answer's HTTP status: each a rule reads, relaychaos.checkers.CAPABILITIES).
Each mapping is checked against the examples it points into: a pointer at a field the example does
not have is an error here, not a surprise in the middle of a run.
"""

from __future__ import annotations

import copy
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from relaychaos.events import BATCH_COMMANDS
from relaychaos.fixtures.account_system.shape import Downstream, pointer_get, pointer_set
from relaychaos.stack import downstream_answers

PROFILES = ("course", "idempotency-key")
LEDGER_KINDS = ("sqlite", "none", "postgresql")
CONTRACT_STATUSES = ("RECEIVED", "SENT", "DONE", "UNKNOWN", "FAILED")
MAPPED_COLUMNS = ("updated_at", "attempts", "answer")  # the columns [ledger] may map beyond key and status
METHODS = ("POST", "PUT", "PATCH", "GET")
ROLES = ("amount", "payer", "payee")
ENV_ROLES = ("port", "host", "downstream_url", "downstream_timeout_ms", "ledger_url")

IDEMPOTENCY_EXAMPLE = """[api]
profile = "idempotency-key"
path = "/payments"
[api.body]
amount = 100
currency = "EUR"
debtor = "alice"
creditor = "bob"
[api.fields]
amount = "/amount"
payer = "/debtor"
payee = "/creditor\""""


@dataclass(frozen=True)
class Api:
    """What the channel sends: the course contract's `POST /transfer`, or a keyed request of the team's shape."""

    profile: str = "course"
    method: str = "POST"
    path: str = "/transfer"
    key_header: str = "Idempotency-Key"
    health: str = "/health"
    body: dict = field(default_factory=dict)
    fields: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)

    def request_body(self, amount: int, payer: str, payee: str) -> dict:
        """The example body with the transfer's values at their pointers."""
        body = copy.deepcopy(self.body)
        for role, value in (("amount", amount), ("payer", payer), ("payee", payee)):
            pointer_set(body, self.fields[role], value)
        return body


@dataclass(frozen=True)
class Ledger:
    """Where the relay keeps its ledger and how to read a key's status from it (read-only)."""

    kind: str = "sqlite"
    url: str | None = None  # postgresql: the team's own database; None: the harness starts one per run
    table: str = "ledger"
    key: str = "guid"
    status: str = "status"
    statuses: dict[str, str] = field(default_factory=lambda: {s: s for s in CONTRACT_STATUSES})
    updated_at: str | None = None  # a service's column of its row's last change (epoch seconds or a timestamp)
    attempts: str | None = None  # a service's column of the calls made (or tried) for the key
    answer: str | None = None  # a service's column of the HTTP status it saved for the key (and replays)

    def contract_status(self, raw: str | None) -> str | None:
        """The contract's name for one of the team's status values (unmapped values pass as they are)."""
        return None if raw is None else self.statuses.get(raw, raw)

    @property
    def columns(self) -> tuple[str, ...]:
        """The columns of a service's own table the harness reads: the key, the status, and those mapped."""
        return (self.key, self.status) + tuple(c for c in (self.updated_at, self.attempts, self.answer) if c)


@dataclass(frozen=True)
class Profile:
    api: Api = field(default_factory=Api)
    downstream: Downstream = field(default_factory=Downstream)
    ledger: Ledger = field(default_factory=Ledger)

    @property
    def name(self) -> str:
        return self.api.profile

    def provides(self, commands: Collection[str] = BATCH_COMMANDS) -> frozenset[str]:
        """What of the relay the rules may read (relaychaos.checkers.CAPABILITIES), given its batch `commands`: a
        course relay's ledger is the contract's table (its times, attempts and answers); a keyed service's own
        table shows what [ledger] maps."""
        offered = {"answers"}
        if self.name == "course":
            offered.add("contract-codes")
        ledger = self.ledger
        if ledger.kind != "none":
            offered.add("ledger-status")
            course = self.name == "course"
            mapped = {
                "ledger-times": ledger.updated_at,
                "ledger-attempts": ledger.attempts,
                "ledger-answer": ledger.answer,
            }
            offered |= {name for name, column in mapped.items() if course or column}
        offered |= {c for c in BATCH_COMMANDS if c in commands}
        if offered & set(BATCH_COMMANDS):
            offered.add("batch-command")
        return frozenset(offered)


def check(data: dict, problems: list[str]) -> Profile:
    """The profile of a manifest's data; every problem found is appended to `problems` (then the result is a
    best effort, never used)."""
    api = _api(data.get("api"), problems)
    downstream = _downstream(data.get("downstream"), problems)
    ledger = _ledger(data.get("ledger"), problems)
    if api.profile == "course" and not downstream.course:
        problems.append('[downstream] needs [api] profile = "idempotency-key": a course relay calls section 2 as it is')
    return Profile(api, downstream, ledger)


def _table(raw: Any, name: str, problems: list[str]) -> dict:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        problems.append(f"[{name}] must be a table")
        return {}
    return raw


def _unknown(table: dict, known: tuple[str, ...], name: str, problems: list[str]) -> None:
    problems += [f"unknown key `{k}` in [{name}] (known: {', '.join(known)})" for k in table if k not in known]


def _path(raw: Any, what: str, problems: list[str]) -> str:
    if not (isinstance(raw, str) and raw.startswith("/") and " " not in raw):
        problems.append(f'{what} must be a URL path starting with "/", got {raw!r}')
        return "/"
    return raw


def _method(raw: Any, what: str, problems: list[str]) -> str:
    if raw not in METHODS:
        problems.append(f"{what} must be one of {', '.join(METHODS)}, got {raw!r}")
        return "POST"
    return raw


def _pointers(raw: Any, example: dict, what: str, example_name: str, problems: list[str]) -> dict[str, str]:
    """The roles' pointers, each checked to land on a field of `example`."""
    if not isinstance(raw, dict):
        problems.append(f"{what} must be a table of JSON pointers for {', '.join(ROLES)}")
        return {}
    out: dict[str, str] = {}
    for role in ROLES:
        pointer = raw.get(role)
        if not isinstance(pointer, str):
            problems.append(f'{what} has no `{role}` (a JSON pointer into {example_name}, e.g. "/{role}")')
            continue
        try:
            value = pointer_get(example, pointer)
        except KeyError as e:
            problems.append(f"{what}.{role} points at a field {example_name} does not have: {e.args[0]}")
            continue
        wanted = int if role == "amount" else str
        if isinstance(value, bool) or not isinstance(value, wanted):
            problems.append(
                f"{what}.{role} = {pointer!r} holds {value!r} in {example_name}: an example "
                f"{'whole number' if role == 'amount' else 'string'} belongs there"
            )
        out[role] = pointer
    _unknown(raw, ROLES, what.strip("[]"), problems)
    return out


def _api(raw: Any, problems: list[str]) -> Api:
    table = _table(raw, "api", problems)
    profile = table.get("profile", "course")
    if profile not in PROFILES:
        problems.append(f"[api] profile {profile!r} does not exist (profiles: {', '.join(PROFILES)})")
        return Api()
    if profile == "course":
        _unknown(table, ("profile",), "api", problems)
        return Api()
    known = ("profile", "method", "path", "key_header", "health", "body", "fields", "env")
    _unknown(table, known, "api", problems)
    if "path" not in table:
        problems.append('[api] has no `path` (the request path of a payment, e.g. "/payments")')
    body = table.get("body")
    if not isinstance(body, dict) or not body:
        problems.append("[api.body] must be an example request body (a table with every field a request carries)")
        body = {}
    key_header = table.get("key_header", "Idempotency-Key")
    if not (isinstance(key_header, str) and key_header and all(c.isalnum() or c in "-_" for c in key_header)):
        problems.append(f"[api] key_header must be an HTTP header name, got {key_header!r}")
    env = _table(table.get("env"), "api.env", problems)
    _unknown(env, ENV_ROLES, "api.env", problems)
    problems += [
        f"[api.env].{k} must be an environment variable name, got {v!r}" for k, v in env.items() if not env_name(v)
    ]
    return Api(
        profile,
        _method(table.get("method", "POST"), "[api] method", problems),
        _path(table.get("path", "/"), "[api] path", problems),
        key_header if isinstance(key_header, str) else "Idempotency-Key",
        _path(table.get("health", "/health"), "[api] health", problems),
        body,
        _pointers(table.get("fields"), body, "[api.fields]", "[api.body]", problems),
        {k: v for k, v in env.items() if isinstance(v, str)},
    )


def env_name(v: Any) -> bool:
    return (
        isinstance(v, str) and bool(v) and (v[0].isalpha() or v[0] == "_") and all(c.isalnum() or c == "_" for c in v)
    )


def _status(raw: Any, what: str, problems: list[str]) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int) or not 100 <= raw <= 599:
        problems.append(f"{what} must be an HTTP status code (100 to 599), got {raw!r}")
        return 0
    return raw


def _downstream(raw: Any, problems: list[str]) -> Downstream:
    if raw is None:
        return Downstream()
    table = _table(raw, "downstream", problems)
    known = ("transfer", "query", "key", "fields", "status", "example", "answers")
    _unknown(table, known, "downstream", problems)
    example = table.get("example")
    if not isinstance(example, dict) or not example:
        problems.append("[downstream.example] must be an example transfer body as the service sends it")
        example = {}
    transfer = _table(table.get("transfer"), "downstream.transfer", problems)
    query = _table(table.get("query"), "downstream.query", problems) if "query" in table else None
    key = table.get("key")
    if not isinstance(key, str) or not key:
        problems.append('[downstream] has no `key`: a JSON pointer into the example ("/reference") or "header:Name"')
        key = "/guid"
    elif not key.startswith("header:"):
        try:
            if not isinstance(pointer_get(example, key), str):
                problems.append(f"[downstream] key = {key!r} must hold a string in [downstream.example]")
        except KeyError as e:
            problems.append(f"[downstream] key points at a field [downstream.example] does not have: {e.args[0]}")
    status = _table(table.get("status"), "downstream.status", problems)
    _unknown(status, ("applied", "refused", "not_found"), "downstream.status", problems)
    query_path = None
    if query is not None:
        query_path = _path(query.get("path"), "[downstream.query] path", problems)
        if "{key}" not in query_path:
            problems.append(f"[downstream.query] path must hold {{key}} where the key goes, got {query_path!r}")
    return Downstream(
        _method(transfer.get("method", "POST"), "[downstream.transfer] method", problems),
        _path(transfer.get("path"), "[downstream.transfer] path", problems),
        None if query is None else _method(query.get("method", "GET"), "[downstream.query] method", problems),
        query_path,
        key,
        _pointers(table.get("fields"), example, "[downstream.fields]", "[downstream.example]", problems),
        _status(status.get("applied", 201), "[downstream.status] applied", problems),
        _status(status.get("refused", 422), "[downstream.status] refused", problems),
        _status(status.get("not_found", 404), "[downstream.status] not_found", problems),
        example,
        *downstream_answers.check(table.get("answers"), example, problems),
    )


def _ledger(raw: Any, problems: list[str]) -> Ledger:
    if raw is None or raw == "sqlite":
        return Ledger()
    if raw == "none":
        return Ledger(kind="none")
    if isinstance(raw, str) and raw.split("://")[0] in ("postgresql", "postgres"):
        raw = {"kind": "postgresql", "url": raw}
    table = _table(raw, "ledger", problems) if not isinstance(raw, str) else {"kind": raw}
    kind = table.get("kind", "sqlite")
    if kind not in LEDGER_KINDS:
        problems.append(f"[ledger] kind {kind!r} is not one of {', '.join(LEDGER_KINDS)}")
        return Ledger()
    if kind != "postgresql":
        _unknown(table, ("kind",), "ledger", problems)
        return Ledger(kind=kind)
    _unknown(table, ("kind", "url", "table", "key", "status", "statuses", *MAPPED_COLUMNS), "ledger", problems)
    url = table.get("url")
    if url is not None and not (isinstance(url, str) and url.split("://")[0] in ("postgresql", "postgres")):
        problems.append(f"[ledger] url must be a postgresql:// URL (or left out: the harness starts one), got {url!r}")
        url = None
    elif url is not None and _elsewhere(url):
        problems.append(
            f"[ledger] url must name its one host and port before the path, and no other in its query (host, "
            f"hostaddr, port, service): the relay's ledger proxy forwards to that host alone; got {url!r}"
        )
        url = None
    names = {k: table.get(k) for k in ("table", "key", "status")}
    names |= {k: table[k] for k in MAPPED_COLUMNS if k in table}
    for k, v in names.items():
        if not (isinstance(v, str) and v.replace("_", "").replace(".", "").isalnum()):
            problems.append(
                f"[ledger] {k} must name a {'table' if k == 'table' else 'column'} (letters, digits, _), got {v!r}"
            )
    statuses = _table(table.get("statuses"), "ledger.statuses", problems)
    wrong = {k: v for k, v in statuses.items() if v not in CONTRACT_STATUSES}
    if not statuses or wrong:
        problems.append(
            "[ledger.statuses] must map each of the table's status values to one of "
            f"{', '.join(CONTRACT_STATUSES)}" + (f"; not one of them: {wrong}" if wrong else "")
        )
    return Ledger(
        "postgresql",
        url,
        str(names["table"]),
        str(names["key"]),
        str(names["status"]),
        {str(k): str(v) for k, v in statuses.items()},
        names.get("updated_at"),
        names.get("attempts"),
        names.get("answer"),
    )


def _elsewhere(url: str) -> bool:
    """Whether a postgresql:// URL could reach a host other than the one before its path: several hosts, a
    socket folder, or a query that names another (libpq reads `host`, `hostaddr`, `port`, `service` there)."""
    parts = urlsplit(url)
    query = {k.lower() for k, _ in parse_qsl(parts.query, keep_blank_values=True)}
    return bool(query & {"host", "hostaddr", "port", "service"}) or "," in parts.netloc or not parts.hostname
