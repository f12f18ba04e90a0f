"""Broken relays: each is the reference with exactly one known bug (see catalogue.py).

Each mutant has a folder `relay_under_test/mutants/<name>/relay.toml` whose
commands run `python run.py mutants <name> <command>` in relay_under_test/, the manifest's
`root` (run.py says why).
"""
