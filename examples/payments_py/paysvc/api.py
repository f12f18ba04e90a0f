"""The HTTP API: POST /v1/charges with an Idempotency-Key header, GET /healthz."""

from __future__ import annotations

import json
import logging
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import psycopg

from paysvc import config, payments, psp
from paysvc.config import Settings
from paysvc.payments import Answer, InvalidRequest, error
from paysvc.store import TERMINAL, Row, Store

log = logging.getLogger("paysvc")

MAX_BODY = 64 * 1024
RECORD_BUDGET_S = 0.6   # kept back from the PSP's time-out to record the outcome and answer


class PaymentsApp:
    def __init__(self, settings: Settings, store: Store) -> None:
        self.settings = settings
        self.store = store

    def _deadline(self, arrival: float) -> float:
        timeout = self.settings.psp_timeout_s
        return min(time.monotonic() + timeout, arrival + timeout + RECORD_BUDGET_S)

    def charge(self, key: str, charge: dict[str, Any], arrival: float) -> Answer:
        fp = payments.fingerprint(charge)
        try:
            if config.VARIANT == "m6":
                answer = self._claim_and_send_in_one_transaction(key, fp, charge, arrival)
                if answer is not None:
                    return answer
            return self._charge(key, charge, fp, arrival)
        except psycopg.Error as exc:
            log.warning("key=%s: database unavailable: %r", key, exc)
            return error(503, "storage_unavailable",
                         "the payment could not be processed now; retry with the same"
                         " Idempotency-Key", key, (("Retry-After", "1"),))

    def _charge(self, key: str, charge: dict[str, Any], fp: str, arrival: float) -> Answer:
        base = self.settings.psp_base_url
        for _ in range(3):
            if self.store.claim_new(key, fp, charge):
                row = Row(key, fp, charge, "pending", 1, 1, None, None)
                return payments.send_claimed(self.store, base, row, self._deadline(arrival))
            row = self.store.get(key)
            if row is None:
                continue                       # expired between the insert and the read
            if row.request_hash != fp:
                return error(422, "idempotency_key_reused",
                             "this Idempotency-Key was already used with a different request", key)
            if row.state in TERMINAL:
                answer = payments.stored_answer(row)
                if config.VARIANT == "m2" and answer.status == 201:
                    answer = Answer(200, answer.body, answer.headers)
                return answer
            if row.state == "pending":
                return error(409, "idempotency_key_in_use",
                             "a request with this Idempotency-Key is being processed", key,
                             (("Retry-After", "1"),))
            if row.state == "in_doubt":
                return error(503, "payment_outcome_unknown",
                             "the outcome of this payment is being reconciled with the payment"
                             " service provider; retry later", key, (("Retry-After", "5"),))
            # not_sent: nothing reached the PSP; this retry may send it again, if it wins the row
            claimed = self.store.reclaim_not_sent(key)
            if claimed is not None:
                return payments.send_claimed(self.store, base, claimed, self._deadline(arrival))
        return error(409, "idempotency_key_in_use",
                     "a request with this Idempotency-Key is being processed", key,
                     (("Retry-After", "1"),))

    def _claim_and_send_in_one_transaction(self, key: str, fp: str, charge: dict[str, Any],
                                           arrival: float) -> Answer | None:
        with self.store.connection() as conn:
            with conn.transaction():
                won = conn.execute(
                    "INSERT INTO idem_requests (idem_key, request_hash, charge, state, psp_attempts)"
                    " VALUES (%s, %s, %s, 'pending', 1)"
                    " ON CONFLICT (idem_key) DO NOTHING RETURNING idem_key",
                    (key, fp, json.dumps(charge)),
                ).fetchone()
                if won is None:
                    return None
                result = psp.create_payout(self.settings.psp_base_url, key, charge,
                                           self._deadline(arrival))
                if result.kind == psp.APPLIED:
                    answer = payments.succeeded_answer(key, charge, result.payout_id)
                    state = "completed"
                elif result.kind == psp.DECLINED:
                    answer = payments.declined_answer(key, result.decline_code, result.detail)
                    state = "declined"
                elif result.kind == psp.NOT_SENT:
                    answer = error(503, "psp_unavailable", "nothing was sent; retry", key)
                    state = "not_sent"
                else:
                    answer = error(504 if result.timed_out else 502, "payment_outcome_unknown",
                                   "outcome unknown; retry later", key)
                    state = "in_doubt"
                stored = state in TERMINAL
                conn.execute(
                    "UPDATE idem_requests SET state = %s, psp_payout_id = %s, decline_code = %s,"
                    " response_status = %s, response_body = %s, version = version + 1,"
                    " last_changed_at = clock_timestamp() WHERE idem_key = %s",
                    (state, result.payout_id, result.decline_code,
                     answer.status if stored else None, answer.body if stored else None, key),
                )
                return answer


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "payments_py/1.0"
    app: PaymentsApp  # set on the subclass the server makes

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
        pass

    def _send(self, answer: Answer) -> None:
        try:
            self.send_response(answer.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer.body)))
            for name, value in answer.headers:
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(answer.body)
            self.wfile.flush()
        except OSError:
            self.close_connection = True

    def do_GET(self) -> None:
        path = urlsplit(self.path).path
        if path == "/healthz":
            self._send(Answer(200, payments.dumps({"status": "ok"})))
        elif path == "/v1/charges":
            self._send(error(405, "method_not_allowed", "use POST"))
        else:
            self._send(error(404, "not_found", f"no route for GET {path}"))

    def do_POST(self) -> None:
        arrival = time.monotonic()
        path = urlsplit(self.path).path
        length_header = self.headers.get("Content-Length")
        try:
            length = int(length_header) if length_header is not None else -1
        except ValueError:
            length = -1
        if length < 0 or length > MAX_BODY:
            self.close_connection = True
            self._send(error(400, "invalid_request", "a Content-Length up to 64 KiB is required"))
            return
        body = self.rfile.read(length) if length else b""
        if path != "/v1/charges":
            self._send(error(404, "not_found", f"no route for POST {path}"))
            return
        try:
            key = payments.parse_key(self.headers.get("Idempotency-Key"))
            charge = payments.parse_charge(body)
        except InvalidRequest as exc:
            self._send(error(400, "invalid_request", str(exc)))
            return
        answer = self.app.charge(key, charge, arrival)
        log.info("POST /v1/charges key=%s -> %d (%.3fs)", key, answer.status,
                 time.monotonic() - arrival)
        self._send(answer)


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128


def make_server(host: str, port: int, app: PaymentsApp) -> Server:
    handler = type("BoundHandler", (Handler,), {"app": app})
    return Server((host, port), handler)
