"""What a timeline adds for any history and for an imported incident: the ledger lane, production's GUIDs, the
expected violation.

    boxes = ledger_boxes(facts)                    # each GUID's status changes, from the ledger snapshots
    preselected = annotate(boxes, groups, facts)   # production GUIDs in the texts; the expected verdict's index

The ledger lane shows every change of a GUID's row between two snapshots as a short box
(from the snapshot before to the one that saw it), `SENT→FAILED` and the like: an early
resolve's SENT→FAILED is the key fact of many incidents, so a change to FAILED is drawn as
a failure, to DONE as ok, the rest as indeterminate. For a history of an imported incident
(its header's `incident`: production GUIDs by label, and which labels broke which rule in
production), every verdict and box names the production GUID beside the label, and the
first verdict production also broke is preselected. Rendering only: nothing here judges.
"""

from __future__ import annotations

from typing import Protocol, TypeVar

from relaychaos.checkers.facts import Facts
from relaychaos.records.base import UNSET

OUTCOME = {"DONE": "ok", "FAILED": "fail"}
B = TypeVar("B", covariant=True)


class BoxType(Protocol[B]):
    """How a box is made (relaychaos.reports.timeline_model.Box, which imports this module)."""

    def __call__(
        self,
        lane: str,
        t0: float,
        t1: float,
        outcome: str,
        label: str,
        text: str,
        events: tuple[int, ...],
        *,
        guid: str,
    ) -> B: ...


def ledger_boxes(facts: Facts, box_type: BoxType[B]) -> list[B]:
    """One box per change of a GUID's ledger row (status, or attempts), between the snapshots that bracket it."""
    out, before_t = [], facts.start
    last: dict[str, tuple[str | None, int | None]] = {}  # each GUID's last (status, attempts)
    for snap in facts.snapshots:
        t = snap.time - facts.start
        for guid, row in (snap.value.get("rows") or {}).items():
            if not isinstance(row, dict):
                continue
            status, attempts = row.get("status"), row.get("attempts")
            was = last.get(guid)
            if was == (status, attempts):
                continue
            last[guid] = (status, attempts)
            who = facts.labels.get(guid, guid)
            old = was[0] if was else "no row"
            change = f"{old}→{status}" if old != status else f"{status}, attempts {attempts}"
            out.append(
                box_type(
                    "ledger",
                    max(before_t, 0.0),
                    max(t, before_t),
                    OUTCOME.get(status or "", "info"),
                    f"{who} {change}",
                    f"ledger row of {who}: {change} (resp_code "
                    f"{row.get('resp_code')}, attempts {attempts}), seen by the snapshot after step "
                    f"{snap.value.get('after_step', snap.value.get('step', '?'))}",
                    (snap.index,),
                    guid=guid,
                )
            )
        before_t = t
    return out


def production(facts: Facts) -> tuple[dict[str, str], dict[str, list[str]]]:
    """(label -> production GUID, rule -> labels that broke it in production) of an imported incident; empty else."""
    incident = facts.header.incident
    if incident is UNSET:
        return {}, {}
    return incident.guids or {}, incident.broke or {}


def annotate(boxes: list, groups: list[dict], facts: Facts) -> int:
    """Production GUIDs into the verdict groups and box texts; returns the expected verdict's index (0 if none
    is expected, -1 with no verdict)."""
    guids, broke = production(facts)
    if not guids:
        return 0 if groups else -1
    for g in groups:
        g["production"] = guids.get(g["label"] or "", "")
    for b in boxes:
        label = facts.labels.get(b.guid or "")
        if label in guids:
            b.text += f"\nproduction GUID {guids[label]}"
    expected = {(rule, label) for rule, labels in broke.items() for label in labels}
    return next((i for i, g in enumerate(groups) if (g["rule"], g["label"]) in expected), 0 if groups else -1)
