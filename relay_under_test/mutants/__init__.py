"""Broken relays: each is the reference with exactly one known bug (see catalogue.py).

Each mutant has a folder `relay_under_test/mutants/<name>/relay.toml` whose
commands run `python ../../run.py mutants <name> <command>`, with relay_under_test/
as the manifest's `root` (run.py says why).
"""
