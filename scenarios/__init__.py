"""The chaos suite: named scenarios, run against any relay by `pytest scenarios --relay relay.toml`.

Each module holds one family; `ALL` is every scenario by name. The families are
also pytest markers (`-m race`). Scenario files in regressions/ run with them
(marker `regression`); incidents/ holds stories to replay that no relay can pass
(client-side faults).
"""

from pathlib import Path

from relaychaos.engine.steps import Scenario

from . import basics, batch_jobs, crashes, faults, races

FAMILIES = {"basic": basics, "fault": faults, "race": races, "crash": crashes, "batch": batch_jobs}
ALL: dict[str, Scenario] = {s.name: s for module in FAMILIES.values() for s in module.SCENARIOS}
HERE = Path(__file__).resolve().parent
REGRESSION_FILES = sorted((HERE / "regressions").glob("*.yaml"))  # run by the suite, against every relay
INCIDENT_FILES = sorted((HERE / "incidents").glob("*.yaml"))  # replay material (client-side incidents)
