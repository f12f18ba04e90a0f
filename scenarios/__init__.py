"""The chaos suite: named scenarios, run against any relay by `pytest scenarios --relay relay.toml`.

Each module holds one family; `ALL` is every scenario by name. The families are
also pytest markers (`-m race`).
"""
from harness.steps import Scenario

from . import basics, batch_jobs, crashes, faults, races

FAMILIES = {"basic": basics, "fault": faults, "race": races, "crash": crashes, "batch": batch_jobs}
ALL: dict[str, Scenario] = {s.name: s for module in FAMILIES.values() for s in module.SCENARIOS}
