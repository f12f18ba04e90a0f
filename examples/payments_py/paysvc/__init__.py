"""payments_py: a payment API that debits once per Idempotency-Key."""
