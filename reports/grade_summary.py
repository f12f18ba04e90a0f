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

from .grade_record import MACHINE, SETS

SET_LABEL = {"visible": "visible scenarios", "hidden": "hidden scenarios",
             "after_due_date": "scenarios shown after the due date"}


def num(x) -> str:
    """A score as people write it: 12.5, 15, 87.33 (at most two decimals)."""
    x = round(float(x or 0), 2)
    return str(int(x)) if x.is_integer() else f"{x:.2f}".rstrip("0")


def reason(record: dict) -> str:
    """Why the submission could not be graded, as the grading run said it (without a final full stop)."""
    return (record.get("error") or "it could not be run (no reason recorded)").strip().rstrip(".")


def headline(record: dict, shown=SETS) -> str:
    """The score, or why there is none."""
    if not record.get("gradable", True):
        return (f"Your submission could not be graded: {reason(record)}. "
                "No scenario ran; fix this and submit again.")
    rules = record.get("rules", [])
    if all(r["set"] in shown for r in rules):
        return f"Score: {num(record['score'])} / {num(record['max_score'])}."
    seen = [r for r in rules if r["set"] in shown]
    later = sum(r["max_points"] for r in rules if r["set"] not in shown)
    return (f"Score on the {' and '.join(SET_LABEL[s] for s in shown)}: {num(sum(r['points'] for r in seen))} / "
            f"{num(sum(r['max_points'] for r in seen))}; {num(later)} more points come from scenarios not shown here.")


def facts(record: dict, shown=SETS) -> list[str]:
    """Every other fact a student should know, in order: partial results, sandbox, seed, machine, notes."""
    out = []
    if record.get("timed_out"):
        not_run = sum(1 for s in record.get("scenarios", []) if s.get("outcome") == "not-run")
        out.append("The time budget ran out before grading finished: these results are partial"
                   + (f" ({not_run} scenario(s) did not run)." if not_run else "."))
    out.append(sandbox(record.get("sandbox")))
    out.append(f"Seed: {record.get('seed')} (the same seed gives the same random choices).")
    if record.get("gradable", True):
        out.append(machine(record, shown))
    out += [f"Note: {n}" for n in notes(record, shown)]
    return out


def sandbox_parts(level: dict) -> tuple[str, list[str], list[str]]:
    """(mode, each layer enforced with what it does, each layer missing with why) of a recorded sandbox level."""
    missing = level.get("missing") or {}
    missing = [f"{k} ({v})" for k, v in missing.items()] if isinstance(missing, dict) else list(missing)
    layers = level.get("layers")
    if layers is None:  # a level recorded before the layers were named one by one
        layers = {k: "" for k in ("uid", "rlimits", "landlock") if level.get(k)}
    enforced = [f"{k} ({v})" if k in ("uid", "cgroups", "landlock") and v else k for k, v in layers.items()]
    return str(level.get("mode", "?")), enforced, missing


def sandbox(level: dict | None) -> str:
    """The sandbox level in one sentence (reports.html.sandbox_line shows the same)."""
    if not level:
        return "Sandbox: not recorded."
    mode, enforced, missing = sandbox_parts(level)
    if not level.get("enforced"):
        return f"Sandbox: {mode}, the relay ran unconfined."
    return f"Sandbox: {mode}: {', '.join(enforced)}" + (f"; not enforced: {'; '.join(missing)}." if missing else ".")


def machine(record: dict, shown=SETS) -> str:
    """Whether the randomised state machine ran, and (when its scenario is shown) found and shrank a failure."""
    st = record.get("stateful") or {}
    if not st:
        return "State machine: not recorded."
    if not st.get("ran"):
        return f"State machine (randomised chaos): did not run: {st.get('why_not') or 'no reason recorded'}."
    run = next((s for s in record.get("scenarios", []) if s.get("name") == MACHINE), None)
    if run is None or run.get("set") not in shown:
        return "State machine (randomised chaos): ran."
    if run.get("outcome") != "failed":
        return "State machine (randomised chaos): ran and found no failure."
    if st.get("shrunk"):
        return "State machine (randomised chaos): found a failure and shrank it to its shortest story."
    return ("State machine (randomised chaos): found a failure; the time budget ended the shrinking, so its "
            "story may be longer than it needs to be.")


def notes(record: dict, shown=SETS) -> list[str]:
    """The notes, less those made by a scenario the reader may not see."""
    unseen = {s["name"] for s in record.get("scenarios", []) if s.get("set") not in shown}
    return [n for n in record.get("notes", []) if n.split(":", 1)[0].strip() not in unseen]
