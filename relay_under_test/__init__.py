"""Relays for the harness to test: the reference (model answer), base (no dedup), and mutants."""
