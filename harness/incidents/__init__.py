"""Incident bundles (a production night's logs) turned into scenario files: `relaychaos incident import`.

bundle.py reads and checks the logs, reconstruct.py orders them and infers the faults,
write.py emits the scenario file, command.py is the command line. See docs/incident-bundle.md.
"""
