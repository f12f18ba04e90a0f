"""Batch jobs on the same table: settle, retry-unsent, expire-keys."""

from __future__ import annotations

import logging
import time

from paysvc import config, payments, psp
from paysvc.config import Settings
from paysvc.store import Store

log = logging.getLogger("paysvc")


def settle(settings: Settings, store: Store, stale_after_s: float, launched_at: float) -> int:
    """Asks the PSP about every pending or in_doubt key unchanged for stale_after_s: found ->
    completed (with the answer built from the payout), not found -> not_sent, no answer -> left."""
    rows = store.undecided_older_than(launched_at - stale_after_s)
    settled = unsent = left = 0
    for row in rows:
        deadline = time.monotonic() + settings.psp_timeout_s
        found = psp.lookup_payout(settings.psp_base_url, row.idem_key, deadline)
        if found.kind == "found":
            answer = payments.succeeded_answer(row.idem_key, row.charge, found.payout_id)
            moved = store.record(row.idem_key, row.state, row.version, "completed",
                                 payout_id=found.payout_id, response_status=answer.status,
                                 response_body=answer.body)
            settled += moved
        elif found.kind == "not_found":
            moved = store.record(row.idem_key, row.state, row.version, "not_sent")
            unsent += moved
        else:
            moved = False
            left += 1
        log.info("settle key=%s was=%s lookup=%s %s moved=%s", row.idem_key, row.state,
                 found.kind, found.detail, moved)
    log.info("settle: %d stale keys, %d completed, %d not_sent, %d left as they were",
             len(rows), settled, unsent, left)
    return 0


def retry_unsent(settings: Settings, store: Store, limit_attempts: int) -> int:
    """Sends again, with the same key, every not_sent key tried fewer than limit_attempts times."""
    rows = store.not_sent_below(limit_attempts)
    sent = 0
    for row in rows:
        if config.VARIANT == "m5":
            claimed = store.force_pending(row.idem_key)
        else:
            claimed = store.reclaim_not_sent(row.idem_key, limit_attempts)
        if claimed is None:
            continue
        deadline = time.monotonic() + settings.psp_timeout_s
        answer = payments.send_claimed(store, settings.psp_base_url, claimed, deadline)
        sent += 1
        log.info("retry-unsent key=%s attempt=%d -> %d", claimed.idem_key, claimed.psp_attempts,
                 answer.status)
    log.info("retry-unsent: %d candidates, %d sent", len(rows), sent)
    return 0


def expire_keys(store: Store, ttl_s: float, launched_at: float) -> int:
    deleted = store.expire(launched_at - ttl_s)
    log.info("expire-keys: %d keys older than %.3fs deleted", deleted, ttl_s)
    return 0
