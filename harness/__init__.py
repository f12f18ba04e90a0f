"""relaychaos: a chaos harness that proves a payment relay debits exactly once per GUID."""
