"""results.json for Gradescope's autograder, made from one grade record (reports.grade_record).

    data = results(record)                 # a GradescopeResults (relaychaos.records.platforms)
    write(record, "/autograder/results/results.json")

The format is Gradescope's "Autograder Specifications" (gradescope-autograders.readthedocs.io/
en/latest/specs/: Output format, test case visibility, test case status, output string
formatting; leaderboards/). One test per item entry of the record (a behaviour over one scenario
set), its visibility that of the set; every output is Markdown ("md"). The top-level output
carries each visible incident report once, fenced as code, and each test that lost points
names its scenarios, the one-line verdicts, and the incident's number there; an incident of a
hidden or after-due-date scenario is shown in its own test only. Nothing points elsewhere: a
long report is cut to whole lines, saying how many were left out. Gradescope hides a
student's total while some tests are hidden from them, so the top-level output gives only the
visible part of the score and leaves out notes of hidden scenarios, and the leaderboard (seen
by the whole class) ranks by the visible points alone, rounded as the score is. The format's
JSON Schema, made from the typed record, is docs/schemas/gradescope-results.schema.json.
"""

from __future__ import annotations

from pathlib import Path

from relaychaos.atomic import write_text
from relaychaos.records.base import UNSET
from relaychaos.records.grade import GradeRecord, ItemEntry
from relaychaos.records.platforms import GradescopeResults, GradescopeTest, LeaderboardEntry

from . import grade_summary
from .incident import TIMELINE_LINE

MAX_INCIDENT_CHARS = 6000  # per incident: the words of its head and of the verdicts that fit (see cut)
MAX_TIMELINE_LINES = 16  # per verdict in Markdown: its first and last events (the HTML report has them all)
MD_SPECIAL = set("\\`*_{}[]<>#|~!&")


def results(record: GradeRecord, *, leaderboard: bool = True) -> GradescopeResults:
    """The results.json of one submission: score, summary with each incident once, one test per item entry."""
    numbers = incident_numbers(record)
    board = LeaderboardEntry(
        name="points on visible scenarios", value=grade_summary.shown_points(record, ("visible",)), order="desc"
    )
    return GradescopeResults(
        score=round(float(record.score), 2) if record.gradable else 0.0,
        execution_time=int(round(record.execution_time_s or 0)),
        output=summary(record, numbers),
        output_format="md",
        visibility="visible",
        stdout_visibility="hidden",
        tests=[test(record, item, numbers) for item in record.items if item.not_checked is UNSET],  # the rest: facts
        leaderboard=[board] if leaderboard else UNSET,
    )


def incident_numbers(record: GradeRecord) -> dict[str, int]:
    """The visible incidents, numbered from 1 in the record's order: how the tests refer to the summary."""
    shown = [i for i in record.incidents if i.set == "visible"]
    return {i.id: n for n, i in enumerate(shown, 1)}


def summary(record: GradeRecord, numbers: dict[str, int] | None = None) -> str:
    """The top-level output: the score (or why none) in bold, one bullet per fact, then each visible incident once."""
    shown = ("visible",)
    numbers = incident_numbers(record) if numbers is None else numbers
    lines = [f"**{md(grade_summary.headline(record, shown))}**", ""]
    if grade_summary.output_tail(record):
        lines += [fenced(grade_summary.output_tail(record)), ""]
    lines += [f"- {md(line)}" for line in grade_summary.facts(record, shown)]
    by_id = record.incidents_by_id()
    for incident_id, n in numbers.items():
        incident = by_id[incident_id]
        lines += ["", f"### Incident {n}: scenario {code(incident.scenario)}", "", fenced(cut(incident.text))]
    return "\n".join(lines)


def test(record: GradeRecord, item: ItemEntry, numbers: dict[str, int] | None = None) -> GradescopeTest:
    """One item of the rubric over one scenario set, as a Gradescope test."""
    full = record.gradable and not item.broken_in and item.points >= item.max_points - 1e-9
    label = "" if item.set == "visible" else f" ({grade_summary.SET_LABEL[item.set]})"
    return GradescopeTest(
        name=f"{item.title}{label}",
        score=round(float(item.points), 2) if record.gradable else 0.0,
        max_score=round(float(item.max_points), 2),
        status="passed" if full else "failed",
        output=test_output(record, item, incident_numbers(record) if numbers is None else numbers),
        output_format="md",
        visibility=item.set,
        tags=[item.item, *item.rules],
        extra_data={
            "item": item.item,
            "held_in": item.held_in,
            "scenarios": item.scenarios,
            "broken_in": list(item.broken_in),
        },
    )


def test_output(record: GradeRecord, item: ItemEntry, numbers: dict[str, int]) -> str:
    """Markdown: where the item held, and for each scenario that broke it, what broke and where to read it."""
    if not record.gradable:
        after = (
            " The incidents it showed are in the summary above."
            if record.timed_out
            else " What it printed is in the summary above."
        )
        return md(grade_summary.headline(record)) + after
    n = grade_summary.num
    rules = ", ".join(code(r) for r in item.rules)
    lines = [
        f"Held in {item.held_in} of {item.scenarios} scenario(s): {n(item.points)} / "
        f"{n(item.max_points)} points. Checked by {rules}."
    ]
    by_id = record.incidents_by_id()
    for failure in item.failures:
        where = numbers.get(failure.incident)
        ref = f" (incident {where} in the summary above)" if where else ""
        lines += ["", f"Broken in scenario {code(failure.incident)}{ref}:"]
        lines += [f"- {md(why)}" for why in failure.why]
        if where is None and failure.incident in by_id:
            lines += ["", fenced(cut(by_id[failure.incident].text))]
    return "\n".join(lines)


def cut(text: str, limit: int = MAX_INCIDENT_CHARS, timeline_lines: int = MAX_TIMELINE_LINES) -> str:
    """An incident report shortened for Markdown: whole verdicts while their words fit in `limit` characters,
    each timeline at most `timeline_lines` lines (its first and last), and how many verdicts were left out.

    Only the words count towards the limit, never the timelines: which verdicts are kept depends on what the
    relay broke, not on how many copies of a race reached the account system, so a regrade cuts alike.
    """
    blocks = text.split("\n\n")
    kept: list[str] = []
    size = 0
    for n, block in enumerate(blocks):
        lines = block.splitlines()
        words = sum(len(line) + 1 for line in lines if not TIMELINE_LINE.match(line))
        if kept and size + words > limit:
            left = len(blocks) - n
            kept.append(f"... ({left} more verdict{'s' if left > 1 else ''} of this report left out)")
            break
        size += words
        kept.append("\n".join(_short_timelines(lines, timeline_lines)))
    return "\n\n".join(kept)


def _short_timelines(lines: list[str], most: int) -> list[str]:
    """`lines` with each run of timeline lines longer than `most` cut to its first and last `most // 2`."""
    out: list[str] = []
    run: list[str] = []
    for line in [*lines, ""]:
        if TIMELINE_LINE.match(line):
            run.append(line)
            continue
        if len(run) > most:
            run = run[: most // 2] + [f"  ... {len(run) - 2 * (most // 2)} more ..."] + run[-(most // 2) :]
        out += run
        run = []
        out.append(line)
    return out[:-1]


def md(text: str) -> str:
    """Plain text made literal in Markdown: special characters escaped, line breaks kept as spaces."""
    return "".join("\\" + c if c in MD_SPECIAL else c for c in " ".join(str(text).split()))


def code(text: str) -> str:
    """A code span holding `text` on one line, backticks and all (CommonMark: a longer run of backticks
    delimits it, and a space pads a text that starts or ends with one)."""
    text = " ".join(str(text).split())
    ticks = "`" * (_longest_backtick_run(text) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def fenced(text: str) -> str:
    """A fenced code block holding `text` as it is: the fence is longer than any backtick run inside it."""
    fence = "`" * max(3, _longest_backtick_run(text) + 1)
    return f"{fence}text\n{text.rstrip()}\n{fence}"


def _longest_backtick_run(text: str) -> int:
    longest = run = 0
    for c in text:
        run = run + 1 if c == "`" else 0
        longest = max(longest, run)
    return longest


def write(record: GradeRecord, path: Path) -> Path:
    """Write results(record) to `path` atomically: Gradescope never reads half a file."""
    return write_text(Path(path), results(record).to_json(ensure_ascii=False) + "\n")
