"""What a student reads first about one graded submission, as plain sentences, one fact each.

    headline(record, shown)   # the score, or why the submission could not be graded
    facts(record, shown)      # partial results, sandbox, seed, the state machine, notes

`shown` is the scenario sets the reader may see now (reports.grade_record.SETS, or only
"visible" on a platform that hides the others): a score over hidden rules is given as the
visible part and how many points are still to come, notes made by a scenario the reader may
not see are left out, and so is whether the state machine failed when its scenario is hidden.
Formatting (Markdown or not) is the caller's.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from relaychaos.records.base import UNSET
from relaychaos.records.grade import GradeRecord

from .grade_record import MACHINE, SETS

SET_LABEL = {
    "visible": "visible scenarios",
    "hidden": "hidden scenarios",
    "after_due_date": "scenarios shown after the due date",
}
Shown = Collection[str]


def num(x: float | None) -> str:
    """A score as people write it: 12.5, 15, 87.33 (at most two decimals)."""
    x = round(float(x or 0), 2)
    return str(int(x)) if x.is_integer() else f"{x:.2f}".rstrip("0")


def reason(record: GradeRecord) -> str:
    """Why the submission could not be graded, as the grading run said it: its first line, without a final full
    stop (the lines after it, output_tail, are what the relay printed last)."""
    return (record.error or "it could not be run (no reason recorded)").strip().split("\n")[0].rstrip(".")


def output_tail(record: GradeRecord) -> str:
    """What a relay that would not start printed last ('' when the error says nothing more)."""
    return (record.error or "").strip().partition("\n")[2]


def headline(record: GradeRecord, shown: Shown = SETS) -> str:
    """The score, or why there is none."""
    if not record.gradable and record.timed_out:
        return (
            f"Your submission could not be graded: it {reason(record)}. This is not a score: the scenarios "
            "that did not run would decide it. What the scenarios that ran showed is below."
        )
    if not record.gradable:
        return f"Your submission could not be graded: {reason(record)}. No scenario ran; fix this and submit again."
    items = record.items
    if all(i.set in shown for i in items):
        return f"Score: {num(record.score)} / {num(record.max_score)}."
    return (
        f"Score on the {' and '.join(SET_LABEL[s] for s in shown)}: {num(shown_points(record, shown))} / "
        f"{num(sum(i.max_points for i in items if i.set in shown))}; "
        f"{num(sum(i.max_points for i in items if i.set not in shown))} more points come from "
        "scenarios not shown here."
    )


def shown_points(record: GradeRecord, shown: Shown = SETS) -> float:
    """The points of the items in the sets shown, bounded by the cap when the cap's scenarios are among them:
    what a leaderboard ranks by and a headline says, rounded alike."""
    if not record.gradable:
        return 0.0
    got = sum(i.points for i in record.items if i.set in shown)
    cap = record.cap
    sets = record.sets_of_scenarios()
    if cap is not None and any(sets.get(name) in shown for name in cap.broken_in):
        got = min(got, cap.at_most)
    return round(got, 2)


def cap_line(record: GradeRecord, shown: Shown = SETS) -> str | None:
    """Why the total was bounded, when it was and the reader may see where."""
    cap = record.cap
    if cap is None:
        return None
    sets = record.sets_of_scenarios()
    seen = [n for n in cap.broken_in if sets.get(n) in shown]
    lost = cap.lost if cap.lost is not UNSET else 0.0
    if not lost or not seen:
        return None
    return (
        f"Score capped at {num(cap.at_most)}: {cap.why} (in {', '.join(seen)}); "
        f"{num(lost)} points above the cap do not count."
    )


NOT_EXERCISED_NOTE = "not exercised (its fault met nothing)"  # relaychaos.grading.score's review entry


def facts(record: GradeRecord, shown: Shown = SETS) -> list[str]:
    """Every other fact a student should know, in order: partial results, sandbox, seed, machine, notes."""
    out = []
    unjudged = [r for r in record.review if not r.endswith(NOT_EXERCISED_NOTE)]
    missed = [r.removesuffix(": " + NOT_EXERCISED_NOTE) for r in record.review if r not in unjudged]
    if unjudged:
        out.append(
            "Flagged for review: the harness could not judge "
            + ", ".join(unjudged)
            + " (its checker failed; no points were taken for it). An instructor will look at this grade."
        )
    if missed:
        out.append(
            "Flagged for review: " + ", ".join(missed) + " did not test anything (its fault did not meet the "
            "transfer it aims at; no points were taken or given for it). An instructor will look at this grade."
        )
    unchecked = [i for i in record.items if i.not_checked is not UNSET]
    if unchecked and record.gradable:
        out.append(
            "Not checked on this relay, so neither held nor lost (0 of 0 points; the score is out of the rest): "
            + "; ".join(f"{i.title} ({i.not_checked})" for i in unchecked)
            + "."
        )
    if record.timed_out:
        not_run = sum(1 for s in record.scenarios if s.outcome == "not-run")
        out.append(
            "The time budget ran out before grading finished: these results are partial"
            + (f" ({not_run} scenario(s) did not run)." if not_run else ".")
        )
    line = cap_line(record, shown) if record.gradable else None
    out += [line] if line else []
    out.append(sandbox(record.sandbox))
    out.append(f"Seed: {record.seed} (the same seed gives the same random choices).")
    if record.gradable:
        out.append(machine(record, shown))
    out += [f"Note: {n}" for n in notes(record, shown)]
    return out


def sandbox_parts(level: dict[str, Any]) -> tuple[str, list[str], list[str]]:
    """(mode, each layer enforced with what it does, each layer missing with why) of a recorded sandbox level."""
    missing = level.get("missing") or {}
    missing = [f"{k} ({v})" for k, v in missing.items()] if isinstance(missing, dict) else list(missing)
    layers = level.get("layers")
    if layers is None:  # a level recorded before the layers were named one by one
        layers = {k: "" for k in ("uid", "rlimits", "landlock") if level.get(k)}
    enforced = [f"{k} ({v})" if k in ("uid", "cgroups", "landlock") and v else k for k, v in layers.items()]
    return str(level.get("mode", "?")), enforced, missing


def sandbox(level: dict[str, Any] | None) -> str:
    """The sandbox level in one sentence (reports.html.sandbox_line shows the same)."""
    if not level:
        return "Sandbox: not recorded."
    mode, enforced, missing = sandbox_parts(level)
    if not level.get("enforced"):
        return f"Sandbox: {mode}, the relay ran unconfined."
    return f"Sandbox: {mode}: {', '.join(enforced)}" + (f"; not enforced: {'; '.join(missing)}." if missing else ".")


def machine(record: GradeRecord, shown: Shown = SETS) -> str:
    """Whether the randomised state machine ran, and (when its scenario is shown) found and shrank a failure."""
    st = record.stateful
    if not st.ran:
        why = st.why_not
        return (
            "State machine (randomised chaos): not run."
            if why in (None, "not run")
            else f"State machine (randomised chaos): not run, {(why or '').rstrip('.')}."
        )
    run = next((s for s in record.scenarios if s.name == MACHINE), None)
    if run is None or run.set not in shown:
        return "State machine (randomised chaos): ran."
    if run.outcome != "failed":
        return "State machine (randomised chaos): ran and found no failure."
    if st.shrunk:
        return "State machine (randomised chaos): found a failure and shrank it to its shortest story."
    return (
        "State machine (randomised chaos): found a failure; the time budget ended the shrinking, so its "
        "story may be longer than it needs to be."
    )


def notes(record: GradeRecord, shown: Shown = SETS) -> list[str]:
    """The notes, less those made by a scenario the reader may not see."""
    unseen = {s.name for s in record.scenarios if s.set not in shown}
    return [n for n in record.notes if n.split(":", 1)[0].strip() not in unseen]
