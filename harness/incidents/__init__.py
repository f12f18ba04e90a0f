"""Incident bundles (a production night's logs, as production wrote them) turned into scenario files, and
replays judged against them: `relaychaos incident import` and `relaychaos incident verify`.

Reading: mapping.py (how incident.toml says to read each log), readers.py (one reader per format), times.py,
records.py, bundle.py (each log's files merged and sorted), spill.py (the records on disk, read afresh by every
pass), ledger.py. The night: guids.py (the census of the GUIDs, sorted by GUID and checked, and their labels as
the walk meets them), clocks.py, balances.py, reconstruct.py (the walk in time order) with causes.py (each call's
cause, read a window ahead) and faults.py, write.py (the scenario file, written as it is planned). The story:
story.py (the cut), shrink.py (delta debugging), telling.py. verify.py replays and judges; command.py is the
command line. See docs/incident-bundle.md.
"""
