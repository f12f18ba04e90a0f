"""The relay contract's rule sentences, quoted: what every rule and expectation of the harness cites.

A `Clause` is one sentence (or table row) of docs/relay-contract.md that a relay
can keep or break, quoted verbatim (markup and line breaks aside) so that a
project test can find each quote in the published contract. Rules cite clauses
by id; expectations inside checkers cite them too; named scenarios declare the
clauses they exercise. `kind="permission"` marks a sentence that widens what a
relay may do (the harness must accept it) rather than an obligation.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Protocol

VERSION = "1.1"
# §4: the ledger table's columns, the only ones the harness reads (a relay may add others, which it never reads)
LEDGER_COLUMNS = ("guid", "status", "resp_code", "request", "response", "attempts", "updated_at")


@dataclass(frozen=True)
class Clause:
    """One rule sentence of the contract: its id, section, and the words quoted."""

    id: str
    section: str
    quote: str
    kind: str = "obligation"  # or "permission": what the harness must accept

    def cite(self) -> str:
        """`§3: "A malformed request gets ..."`: the form reports use."""
        return f'§{self.section}: "{self.quote}"'


_ALL = [
    # §1 the manifest
    Clause("1.ready", "1", "serve must answer GET /health by then"),
    Clause(
        "1.batch-exit",
        "1",
        "A batch command exits 0 when it ran through (rows it could not settle stay as "
        "they are), non-zero when it could not run.",
    ),
    Clause("1.sigkill", "1", "`serve` may be killed with SIGKILL at any moment and started again on the same ledger."),
    Clause("1.two-serves", "1", "they must not double-send between them."),
    # §2 the account system
    Clause(
        "2.transfer",
        "2",
        '`POST {ACCOUNT_URL}/transfer` with `{"guid": str, "from": str, "to": str, "amount": int}`',
    ),
    # §3 the relay's API
    Clause("3.health", "3", "`GET /health` answers 200 once `serve` is ready."),
    Clause("3.answer", "3", "answers HTTP 200 with a JSON object holding at least `guid` and `code`."),
    Clause(
        "3.malformed", "3", "A malformed request gets HTTP 400 with code `E400`, no ledger row and no account call."
    ),
    Clause(
        "3.extra-fields",
        "3",
        "Fields beyond these four are not part of the contract: a relay may ignore them "
        "or answer `E400`, and the harness accepts either (v1.1).",
        kind="permission",
    ),
    Clause(
        "3.claim-new",
        "3",
        "claim a `SENT` row atomically (one insert that tells whether *this* request won, "
        "e.g. `INSERT ... ON CONFLICT DO NOTHING` and the affected row count), **commit**, "
        "then call",
    ),
    Clause("3.e903", "3", "`E903` | this GUID is being sent right now; answered at once, without waiting"),
    Clause(
        "3.e904",
        "3",
        "`E904` | this GUID was already used for a different request (different from/to/amount) "
        "| unchanged; nothing sent",
    ),
    Clause("3.done-replay", "3", "the saved response, **byte for byte** as first answered"),
    Clause("3.unknown", "3", "`UNKNOWN` | `E901` | none"),
    Clause(
        "3.failed-resend",
        "3",
        "claim it back to `SENT` atomically (`UPDATE ... WHERE status='FAILED'`), "
        "attempts + 1, commit, call again with the **same GUID**",
    ),
    Clause("3.definite", "3", "an HTTP answer from the account system is definite (`DONE`)."),
    Clause("3.refused", "3", "A refused or impossible connection is `FAILED` (`E902`)."),
    Clause(
        "3.in-doubt",
        "3",
        "A time-out after `ACCOUNT_TIMEOUT_MS`, or a connection that breaks after the "
        "request may have gone out, is `UNKNOWN` (`E901`).",
    ),
    Clause(
        "3.in-time",
        "3",
        "The relay answers the channel within `ACCOUNT_TIMEOUT_MS` + 1 s, counted from the "
        "moment the request has reached it on an established connection",
    ),
    Clause(
        "3.accept-wait",
        "3",
        "time spent waiting for the relay to accept the connection is reported, not judged",
        kind="permission",
    ),
    # §4 the ledger
    Clause("4.schema", "4", "One row per GUID. Required table and columns"),
    Clause("4.readers", "4", "A relay must tolerate concurrent readers: use WAL mode or a busy timeout."),
    # §5 the batch commands
    Clause(
        "5.resolve-asks",
        "5",
        "for every `UNKNOWN` row, and every `SENT` row (orphaned by a crash), whose "
        "`updated_at` is at least S seconds old, ask the query API.",
    ),
    Clause(
        "5.resolve-found", "5", "Found: `DONE`, with `resp_code` = the found code and a saved response built from it."
    ),
    Clause("5.resolve-404", "5", "Not found (404): `FAILED`."),
    Clause("5.resolve-query-fails", "5", "The query itself fails or times out: leave the row as it is."),
    Clause("5.resolve-min-age", "5", "Rows younger than S are not touched"),
    Clause(
        "5.reprocess",
        "5",
        "for every `FAILED` row with `attempts < N`, claim it atomically (`FAILED` → "
        "`SENT`, attempts + 1), resend the stored request with the **same GUID**, and record "
        "the outcome as above.",
    ),
    Clause("5.reprocess-not-unknown", "5", "Never `UNKNOWN` rows."),
    Clause(
        "5.reprocess-races",
        "5",
        "Two reprocess runs at once, or a reprocess run racing a channel resend, must not send a GUID twice.",
    ),
    Clause("5.purge", "5", "delete `DONE` rows whose `updated_at` is at least S seconds old."),
    Clause("5.purge-keeps", "5", "Never delete `UNKNOWN`, `FAILED`, `SENT` or `RECEIVED` rows, whatever their age."),
    # §6 what the harness promises a relay
    Clause(
        "6.sandbox",
        "6",
        "A relay under test may be run in a sandbox: it can reach only `RELAY_PORT` (listen), "
        "the account proxy (connect), its own folder and the ledger's folder.",
    ),
]
CLAUSES: dict[str, Clause] = {c.id: c for c in _ALL}


def clause(clause_id: str) -> Clause:
    """The clause with this id; a KeyError names the known ids (a typo in a citation is a bug)."""
    try:
        return CLAUSES[clause_id]
    except KeyError:
        raise KeyError(f"no contract clause {clause_id!r}; known: {', '.join(CLAUSES)}") from None


def normalise(text: str) -> str:
    """Text with Markdown emphasis and code marks removed and white space folded, for matching quotes."""
    return re.sub(r"\s+", " ", re.sub(r"[*`]", "", text)).strip()


def missing_quotes(contract_text: str) -> list[Clause]:
    """The clauses whose quote does not appear in the contract's text (should be none)."""
    body = normalise(contract_text)
    return [c for c in _ALL if normalise(c.quote) not in body]


class Covering(Protocol):
    """What the coverage table reads of a scenario (a relaychaos.engine.steps.Scenario)."""

    @property
    def name(self) -> str: ...

    @property
    def covers(self) -> tuple[str, ...]: ...


class Rule(Protocol):
    """What the tables read of a rule (relaychaos.checkers.rulebook.Rule, which cites this module)."""

    @property
    def id(self) -> str: ...

    @property
    def text(self) -> str: ...

    @property
    def contract(self) -> tuple[str, ...]: ...

    @property
    def sections(self) -> str: ...


def rules_table(rules: Mapping[str, Rule]) -> str:
    """The rules table of docs/rules.md: rule, what must hold, the contract sections it enforces."""
    lines = ["| rule | what must hold | contract |", "|---|---|---|"]
    lines += [f"| `{r.id}` | {r.text} | {r.sections} |" for r in rules.values()]
    return "\n".join(lines)


def coverage_table(scenarios: Collection[Covering], rules: Mapping[str, Rule]) -> str:
    """The coverage table of docs/rules.md: each clause → the scenarios exercising it → the rules enforcing it."""
    lines = ["| § | contract sentence | scenarios | rules |", "|---|---|---|---|"]
    for c in _ALL:
        names = ", ".join(f"`{s.name}`" for s in scenarios if c.id in s.covers) or "—"
        enforced = ", ".join(f"`{r.id}`" for r in rules.values() if c.id in r.contract)
        quote = normalise(c.quote).replace("|", "\\|")
        if c.kind == "permission":
            quote += " *(a permission: the harness accepts either)*"
        lines.append(f"| {c.section} | {quote} | {names} | {enforced or '—'} |")
    return "\n".join(lines)
