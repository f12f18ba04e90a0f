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

SET_LABEL = {
    "visible": "visible scenarios",
    "hidden": "hidden scenarios",
    "after_due_date": "scenarios shown after the due date",
}


def num(x) -> str:
    """A score as people write it: 12.5, 15, 87.33 (at most two decimals)."""
    x = round(float(x or 0), 2)
    return str(int(x)) if x.is_integer() else f"{x:.2f}".rstrip("0")


def reason(record: dict) -> str:
    """Why the submission could not be graded, as the grading run said it: its first line, without a final full
    stop (the lines after it, output_tail, are what the relay printed last)."""
    return (record.get("error") or "it could not be run (no reason recorded)").strip().split("\n")[0].rstrip(".")


def output_tail(record: dict) -> str:
    """What a relay that would not start printed last ('' when the error says nothing more)."""
    return (record.get("error") or "").strip().partition("\n")[2]


def headline(record: dict, shown=SETS) -> str:
    """The score, or why there is none."""
    if not record.get("gradable", True) and record.get("timed_out"):
        return (
            f"Your submission could not be graded: it {reason(record)}. This is not a score: the scenarios "
            "that did not run would decide it. What the scenarios that ran showed is below."
        )
    if not record.get("gradable", True):
        return f"Your submission could not be graded: {reason(record)}. No scenario ran; fix this and submit again."
    items = record.get("items", [])
    if all(i["set"] in shown for i in items):
        return f"Score: {num(record['score'])} / {num(record['max_score'])}."
    return (
        f"Score on the {' and '.join(SET_LABEL[s] for s in shown)}: {num(shown_points(record, shown))} / "
        f"{num(sum(i['max_points'] for i in items if i['set'] in shown))}; "
        f"{num(sum(i['max_points'] for i in items if i['set'] not in shown))} more points come from "
        "scenarios not shown here."
    )


def shown_points(record: dict, shown=SETS) -> float:
    """The points of the items in the sets shown, bounded by the cap when the cap's scenarios are among them:
    what a leaderboard ranks by and a headline says, rounded alike."""
    if not record.get("gradable", True):
        return 0.0
    got = sum(i["points"] for i in record.get("items", []) if i["set"] in shown)
    cap = record.get("cap")
    sets = {s["name"]: s["set"] for s in record.get("scenarios", [])}
    if cap and any(sets.get(name) in shown for name in cap.get("broken_in", [])):
        got = min(got, cap["at_most"])
    return round(got, 2)


def cap_line(record: dict, shown=SETS) -> str | None:
    """Why the total was bounded, when it was and the reader may see where."""
    cap = record.get("cap")
    sets = {s["name"]: s["set"] for s in record.get("scenarios", [])}
    seen = [n for n in (cap or {}).get("broken_in", []) if sets.get(n) in shown]
    if not cap or not cap.get("lost") or not seen:
        return None
    return (
        f"Score capped at {num(cap['at_most'])}: {cap['why']} (in {', '.join(seen)}); "
        f"{num(cap['lost'])} points above the cap do not count."
    )


NOT_EXERCISED_NOTE = "not exercised (its fault met nothing)"  # relaychaos.grading.score's review entry


def facts(record: dict, shown=SETS) -> list[str]:
    """Every other fact a student should know, in order: partial results, sandbox, seed, machine, notes."""
    out = []
    unjudged = [r for r in record.get("review", []) if not r.endswith(NOT_EXERCISED_NOTE)]
    missed = [r.removesuffix(": " + NOT_EXERCISED_NOTE) for r in record.get("review", []) if r not in unjudged]
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
    if record.get("timed_out"):
        not_run = sum(1 for s in record.get("scenarios", []) if s.get("outcome") == "not-run")
        out.append(
            "The time budget ran out before grading finished: these results are partial"
            + (f" ({not_run} scenario(s) did not run)." if not_run else ".")
        )
    line = cap_line(record, shown) if record.get("gradable", True) else None
    out += [line] if line else []
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
        why = st.get("why_not")
        return (
            "State machine (randomised chaos): not run."
            if why in (None, "not run")
            else f"State machine (randomised chaos): not run, {why.rstrip('.')}."
        )
    run = next((s for s in record.get("scenarios", []) if s.get("name") == MACHINE), None)
    if run is None or run.get("set") not in shown:
        return "State machine (randomised chaos): ran."
    if run.get("outcome") != "failed":
        return "State machine (randomised chaos): ran and found no failure."
    if st.get("shrunk"):
        return "State machine (randomised chaos): found a failure and shrank it to its shortest story."
    return (
        "State machine (randomised chaos): found a failure; the time budget ended the shrinking, so its "
        "story may be longer than it needs to be."
    )


def notes(record: dict, shown=SETS) -> list[str]:
    """The notes, less those made by a scenario the reader may not see."""
    unseen = {s["name"] for s in record.get("scenarios", []) if s.get("set") not in shown}
    return [n for n in record.get("notes", []) if n.split(":", 1)[0].strip() not in unseen]
