"""The idempotency-key profile's answer table: a keyed service's HTTP status in the contract's words.

The rows follow the IETF draft "The Idempotency-Key HTTP Header Field" (draft-ietf-httpapi-
idempotency-key-header, "Error Scenarios") and Stripe's "Idempotent requests"; docs/production-api.md
quotes their sentences. The channel reads answers by it (relaychaos.stack.speech); the `interface`
rule judges a keyed service's answers against it, and `answer-codes` and `e903-at-once` name its
statuses in their verdicts.
"""

from __future__ import annotations

from collections.abc import Iterable

from relaychaos.events import REFUSED

SOURCE = (
    'the idempotency-key profile\'s table (draft-ietf-httpapi-idempotency-key-header, "Error Scenarios"; '
    'Stripe, "Idempotent requests"; docs/production-api.md)'
)

# (lowest status, highest status, the contract's word, meaning); the first row that holds a status is its.
ANSWERS = (
    (200, 299, "0000", "definite: the payment executed"),
    (400, 400, "E400", "malformed, or no key: nothing was done"),
    (409, 409, "E903", "the key is in flight: nothing new was done"),
    (422, 422, "E904", "the key was reused with another payload: nothing new was done"),
    (401, 499, REFUSED, "definite: refused, nothing moved"),
    (500, 599, "E901", "unknown: the payment may or may not have executed"),
)


def code(status: int) -> str | None:
    """The contract's word for a keyed service's status (None: outside the table, e.g. 1xx or 3xx)."""
    return next((word for low, high, word, _ in ANSWERS if low <= status <= high), None)


def statuses(words: Iterable[str]) -> str:
    """The statuses that carry these contract words, in the table's order: `2xx or 5xx`, `409`, `another 4xx`."""
    spans = {(200, 299): "2xx", (401, 499): "another 4xx", (500, 599): "5xx"}
    wanted = set(words)
    return " or ".join(spans.get((lo, hi), str(lo)) for lo, hi, word, _ in ANSWERS if word in wanted)


def table() -> str:
    """The table in one line, for a verdict that quotes it."""
    spans = {(200, 299): "2xx", (401, 499): "other 4xx", (500, 599): "5xx"}
    return "; ".join(f"{spans.get((lo, hi), lo)} {meaning}" for lo, hi, _, meaning in ANSWERS)
