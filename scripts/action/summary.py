"""The job summary of the relaychaos GitHub Action: a run folder's results.json as Markdown.

    python scripts/action/summary.py RUN_FOLDER EXIT_STATUS [ARTIFACT] >> "$GITHUB_STEP_SUMMARY"

Written by scripts/action/steps.sh after `relaychaos run`: what the exit status means, the counts, each rule's
verdict (broken rules first, with the scenarios that broke them), the failing scenarios (the rules each broke and
the first GUID) and the scenarios not exercised, and the artifact that holds the run folder. It reads results.json as
JSON with the standard library alone (its schema is docs/schemas/results.schema.json), so it serves whichever
relaychaos version the Action installed.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

MEANING = {
    0: "every check held and every scenario was exercised",
    1: "a check failed",
    2: "the harness could not run",
    3: "every check held, but a scenario was not exercised (its fault met nothing)",
    130: "interrupted",
}
COUNTS = (("passed", "passed"), ("failed", "failed"), ("error", "errors"), ("not exercised",) * 2, ("skipped",) * 2)
MOST = 30  # failing scenarios listed at most; the report has every one


def scenario_name(nodeid: str) -> str:
    """`test_suite.py::test_scenario[happy-path]` -> `happy-path`."""
    return nodeid.rpartition("[")[2].rstrip("]") or nodeid


def cell(text: str) -> str:
    """`text` as one Markdown table cell: on one line, its pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def rule_rows(rules: dict) -> list[str]:
    """A table row per rule: broken first, then not checked, then held."""
    order = {False: 0, None: 1, True: 2}
    rows = ["| rule | verdict | broken in |", "|---|---|---|"]
    for name, rule in sorted(rules.items(), key=lambda kv: order[kv[1].get("held")]):
        held, why = rule.get("held"), cell(rule.get("not_checked", ""))
        verdict = "held" if held else "**broken**" if held is False else f"not checked: {why}"
        rows.append(f"| `{name}` | {verdict} | {', '.join(rule.get('broken_in', []))} |")
    return rows


def failing_rows(scenarios: list[dict]) -> list[str]:
    """A table row per failing scenario (at most MOST): its outcome, the rules it broke and how often, the first
    GUID; for a scenario that could not run, the first line of its message."""
    failing = [s for s in scenarios if s.get("outcome") in ("failed", "error")]
    if not failing:
        return []
    rows = ["", "#### Failing scenarios", "", "| scenario | outcome | rules broken | first GUID |", "|---|---|---|---|"]
    for s in failing[:MOST]:
        verdicts = s.get("verdicts", [])
        counts = Counter(v["rule"] for v in verdicts)
        broken = ", ".join(f"`{r}` ×{n}" if n > 1 else f"`{r}`" for r, n in counts.items())
        first = (verdicts[0].get("guid") or "none") if verdicts else ""
        said = (s.get("message") or "").strip().splitlines()
        what = broken or (cell(said[0][:160]) if said else "no message")
        rows.append(f"| {scenario_name(s['nodeid'])} | {s['outcome']} | {what} | {first} |")
    if len(failing) > MOST:
        rows.append(f"\n… and {len(failing) - MOST} more: see report.html in the run folder")
    return rows


def markdown(folder: Path, status: int, artifact: str) -> str:
    """The whole summary of the run in `folder` that exited `status`."""
    meaning = MEANING.get(status, "an exit status relaychaos does not give")
    results = folder / "results.json"
    if not results.is_file():
        why = folder / "not-started.txt"
        said = why.read_text().strip() if why.is_file() else f"no results.json in {folder}: the step's log says why"
        return f"### relaychaos: {meaning} (exit {status})\n\n```\n{said}\n```\n"
    data = json.loads(results.read_text())
    counts = data.get("summary", {})
    sandbox = data.get("sandbox") or {}
    missing = ", ".join(sandbox.get("missing") or {})
    lines = [
        f"### relaychaos: relay `{data.get('relay_name', '?')}`: {meaning} (exit {status})",
        "",
        ", ".join(f"{counts.get(key, 0)} {label}" for key, label in COUNTS)
        + f"; sandbox {sandbox.get('mode', '?')}"
        + (f" (missing: {missing})" if missing else "")
        + (" (partial: the run was interrupted)" if data.get("partial") else ""),
        "",
        *rule_rows(data.get("rules", {})),
        *failing_rows(data.get("scenarios", [])),
    ]
    unexercised = [scenario_name(s["nodeid"]) for s in data.get("scenarios", []) if s.get("outcome") == "not exercised"]
    if unexercised:
        lines += ["", f"Not exercised (every rule held, the fault met nothing): {', '.join(unexercised)}"]
    where = f"the artifact `{artifact}`" if artifact else f"`{folder}`"
    lines += ["", f"The run folder (report.html, results.json, junit.xml, histories, relay logs) is {where}."]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3) or not argv[1].lstrip("-").isdigit():
        print("usage: summary.py RUN_FOLDER EXIT_STATUS [ARTIFACT]", file=sys.stderr)
        return 2
    sys.stdout.write(markdown(Path(argv[0]), int(argv[1]), argv[2] if len(argv) == 3 else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
