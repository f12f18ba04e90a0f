"""The chaos suite: named scenarios, run against any relay by `pytest scenarios --relay relay.toml`.

Each module holds one family; `ALL` is every scenario by name. The families are
also pytest markers (`-m race`). Scenario files in regressions/ run with them
(marker `regression`); incidents/ holds stories to replay that no relay can pass
(client-side faults).
"""

from pathlib import Path

from relaychaos.engine.steps import Scenario, WaitCalls, WaitRow

from . import basics, batch_jobs, crashes, faults, races

FAMILIES = {"basic": basics, "fault": faults, "race": races, "crash": crashes, "batch": batch_jobs}
ALL: dict[str, Scenario] = {s.name: s for module in FAMILIES.values() for s in module.SCENARIOS}
HERE = Path(__file__).resolve().parent
REGRESSION_FILES = sorted((HERE / "regressions").glob("*.yaml"))  # run by the suite, against every relay
INCIDENT_FILES = sorted((HERE / "incidents").glob("*.yaml"))  # replay material (client-side incidents)


def claims_table() -> str:
    """The Markdown table of every named scenario's landing claims (docs/rules.md holds it)."""
    rows = ["| scenario | what must happen for it to test anything (its landing claims) |", "|---|---|"]
    for name, s in sorted(ALL.items()):
        waits = (
            ["every wait reaches what it waits for"]
            if any(isinstance(x, (WaitCalls, WaitRow)) for x in s.steps)  # the waits landing judges; not Wait(s)
            else []
        )
        said = [c.text() for c in s.claims] + waits
        rows.append(
            f"| `{name}` | {'; '.join(said) if said else 'nothing: no fault, the contract answer table only'} |"
        )
    return "\n".join(rows)
