"""Charges: validation, fingerprints, the answers we give, and sending a claimed row to the PSP."""

from __future__ import annotations

import hashlib
import json
import logging
import re
import time
from dataclasses import dataclass
from typing import Any

from paysvc import psp
from paysvc.store import Row, Store

log = logging.getLogger("paysvc")

_CURRENCY = re.compile(r"^[A-Z]{3}$")
MAX_KEY_LENGTH = 255


class InvalidRequest(Exception):
    pass


@dataclass
class Answer:
    status: int
    body: bytes
    headers: tuple[tuple[str, str], ...] = ()


def dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), sort_keys=True).encode()


def error(status: int, kind: str, message: str, key: str | None = None,
          headers: tuple[tuple[str, str], ...] = ()) -> Answer:
    doc: dict[str, Any] = {"error": {"type": kind, "message": message}}
    if key is not None:
        doc["error"]["idempotency_key"] = key
    return Answer(status, dumps(doc), headers)


def parse_key(raw: str | None) -> str:
    if raw is None:
        raise InvalidRequest("the Idempotency-Key header is required")
    key = raw.strip()
    if len(key) >= 2 and key[0] == key[-1] == '"':   # the draft's sf-string form
        key = key[1:-1]
    if not key:
        raise InvalidRequest("the Idempotency-Key header is empty")
    if len(key) > MAX_KEY_LENGTH:
        raise InvalidRequest(f"the Idempotency-Key header is longer than {MAX_KEY_LENGTH}")
    if any(not (0x21 <= ord(c) <= 0x7E) for c in key):
        raise InvalidRequest("the Idempotency-Key header holds characters outside visible ASCII")
    return key


def _account(doc: Any, field: str) -> str:
    if not isinstance(doc, dict) or not isinstance(doc.get("account"), str):
        raise InvalidRequest(f"{field}.account must be a string")
    account = doc["account"].strip()
    if not account or len(account) > 64:
        raise InvalidRequest(f"{field}.account must be 1-64 characters")
    return account


def parse_charge(raw: bytes) -> dict[str, Any]:
    """The normalized charge: amount (minor units), currency, source, destination, description."""
    try:
        doc = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise InvalidRequest("the body is not JSON") from None
    if not isinstance(doc, dict):
        raise InvalidRequest("the body must be a JSON object")
    amount = doc.get("amount")
    if not isinstance(amount, dict):
        raise InvalidRequest("amount must be an object {value, currency}")
    value = amount.get("value")
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidRequest("amount.value must be an integer (minor units)")
    if value <= 0 or value > 10**12:
        raise InvalidRequest("amount.value must be between 1 and 10^12")
    currency = amount.get("currency")
    if not isinstance(currency, str) or not _CURRENCY.match(currency):
        raise InvalidRequest("amount.currency must be an ISO 4217 code such as EUR")
    description = doc.get("description", "")
    if not isinstance(description, str) or len(description) > 500:
        raise InvalidRequest("description must be a string of at most 500 characters")
    return {
        "amount": value,
        "currency": currency,
        "source": _account(doc.get("source"), "source"),
        "destination": _account(doc.get("destination"), "destination"),
        "description": description,
    }


def fingerprint(charge: dict[str, Any]) -> str:
    return hashlib.sha256(dumps(charge)).hexdigest()


def payment_id(key: str) -> str:
    return "pay_" + hashlib.sha256(key.encode()).hexdigest()[:20]


def succeeded_answer(key: str, charge: dict[str, Any], payout_id: str | None) -> Answer:
    return Answer(201, dumps({
        "id": payment_id(key),
        "object": "payment",
        "status": "succeeded",
        "amount": {"value": charge["amount"], "currency": charge["currency"]},
        "source": {"account": charge["source"]},
        "destination": {"account": charge["destination"]},
        "description": charge.get("description", ""),
        "psp_payout_id": payout_id,
        "idempotency_key": key,
    }))


def declined_answer(key: str, code: str | None, detail: str) -> Answer:
    return Answer(402, dumps({
        "error": {
            "type": "payment_declined",
            "decline_code": code or "declined",
            "message": detail or "the payment service provider declined the payout",
            "payment_id": payment_id(key),
            "idempotency_key": key,
        }
    }))


def stored_answer(row: Row) -> Answer:
    status = row.response_status or 500
    body = row.response_body or b"{}"
    return Answer(status, body, (("Idempotent-Replayed", "true"),))


def send_claimed(store: Store, base_url: str, row: Row, deadline: float) -> Answer:
    """The row is ours (state pending, just claimed): call the PSP once and record the outcome."""
    key, charge = row.idem_key, row.charge
    started = time.monotonic()
    result = psp.create_payout(base_url, key, charge, deadline)
    took = time.monotonic() - started
    log.info("psp payout key=%s attempt=%d -> %s %s (%.3fs) %s", key, row.psp_attempts,
             result.kind, result.http_status, took, result.detail)
    if result.kind == psp.APPLIED:
        answer = succeeded_answer(key, charge, result.payout_id)
        state = "completed"
        fields = dict(payout_id=result.payout_id, response_status=answer.status,
                      response_body=answer.body)
    elif result.kind == psp.DECLINED:
        answer = declined_answer(key, result.decline_code, result.detail)
        state = "declined"
        fields = dict(decline_code=result.decline_code, response_status=answer.status,
                      response_body=answer.body)
    elif result.kind == psp.REJECTED:
        answer = error(502, "psp_rejected_request",
                       f"the payment service provider rejected the request ({result.http_status})",
                       key)
        state = "declined"
        fields = dict(decline_code=f"http_{result.http_status}", response_status=answer.status,
                      response_body=answer.body)
    elif result.kind == psp.NOT_SENT:
        answer = error(503, "psp_unavailable",
                       "the payment service provider could not be reached; nothing was sent,"
                       " retry with the same Idempotency-Key", key, (("Retry-After", "1"),))
        state, fields = "not_sent", {}
    else:
        status = 504 if result.timed_out else 502
        answer = error(status, "payment_outcome_unknown",
                       "the payment service provider did not confirm the payout; its outcome is"
                       " being reconciled, retry later with the same Idempotency-Key", key,
                       (("Retry-After", "5"),))
        state, fields = "in_doubt", {}
    if _record(store, row, state, fields):
        return answer
    current = store.get(key)
    if current is not None and current.state in ("completed", "declined"):
        return stored_answer(current)
    return error(503, "payment_outcome_unknown",
                 "the outcome could not be recorded; retry later with the same Idempotency-Key",
                 key, (("Retry-After", "5"),))


def _record(store: Store, row: Row, state: str, fields: dict[str, Any]) -> bool:
    """Records the outcome, retrying a failing database for a short while."""
    for attempt in range(4):
        try:
            return store.record(row.idem_key, "pending", row.version, state, **fields)
        except Exception as exc:  # noqa: BLE001 - any database failure: retry, then give up
            log.warning("recording key=%s as %s failed (%r), attempt %d", row.idem_key, state,
                        exc, attempt + 1)
            time.sleep(0.1 * (attempt + 1))
    return False
