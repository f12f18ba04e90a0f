"""The grading platforms' results.json, typed: Gradescope's autograder and PrairieLearn's external grader.

    data = reports.gradescope.results(record)     # a GradescopeResults
    text = data.to_json(ensure_ascii=False)       # what the platform reads

Every field each platform's format defines is here (those relaychaos does not write are UNSET,
left out), so the published schemas (docs/schemas/gradescope-results.schema.json and
prairielearn-results.schema.json, relaychaos.records.schemas) are the formats', and a test checks
what relaychaos writes against them. Gradescope's "Autograder Specifications" (Output format,
test case visibility and status, leaderboards) names no other field, so its record is closed;
PrairieLearn's "External Grading" page allows any extra field, so its record is open.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from .base import UNSET, OpenRecord, Record, UnsetType

Visibility = Literal["hidden", "after_due_date", "after_published", "visible"]
Format = Literal["text", "html", "simple_format", "md", "ansi"]
Seconds = Annotated[int, msgspec.Meta(ge=0, description="a whole number of seconds")]
PRAIRIELEARN_MAX_BYTES = 1_000_000  # PrairieLearn reads results.json of at most 1 MB


class GradescopeTest(Record, kw_only=True):
    """One test case: a rubric item over one scenario set."""

    name: str | UnsetType = UNSET
    name_format: Format | UnsetType = UNSET
    number: str | UnsetType = UNSET
    score: float | UnsetType = UNSET
    max_score: float | UnsetType = UNSET
    status: Literal["passed", "failed"] | UnsetType = UNSET
    output: str | UnsetType = UNSET
    output_format: Format | UnsetType = UNSET
    visibility: Visibility | UnsetType = UNSET
    tags: list[str] | UnsetType = UNSET
    extra_data: dict[str, Any] | UnsetType = UNSET


class LeaderboardEntry(Record, kw_only=True):
    name: str
    value: float | str
    order: Literal["asc", "desc"] | UnsetType = UNSET


class GradescopeResults(Record, kw_only=True):
    """Gradescope's results.json: a score (or tests that add up to one), outputs, tests, a leaderboard."""

    score: float | UnsetType = UNSET
    execution_time: Seconds | UnsetType = UNSET
    output: str | UnsetType = UNSET
    output_format: Format | UnsetType = UNSET
    test_output_format: Format | UnsetType = UNSET
    test_name_format: Format | UnsetType = UNSET
    visibility: Visibility | UnsetType = UNSET
    stdout_visibility: Visibility | UnsetType = UNSET
    extra_data: dict[str, Any] | UnsetType = UNSET
    tests: list[GradescopeTest] | UnsetType = UNSET
    leaderboard: list[LeaderboardEntry] | UnsetType = UNSET


class Image(OpenRecord, kw_only=True):
    url: str
    label: str | UnsetType = UNSET


class PrairieLearnTest(OpenRecord, kw_only=True):
    """One test as <pl-external-grader-results> renders it."""

    name: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    points: float | UnsetType = UNSET
    max_points: float | UnsetType = UNSET
    message: str | UnsetType = UNSET
    output: str | UnsetType = UNSET
    images: list[Image | str] | UnsetType = UNSET


class PrairieLearnResults(OpenRecord, kw_only=True):
    """PrairieLearn's results.json: `score` in [0, 1] (required unless `gradable` is false), at most 1 MB."""

    gradable: bool | UnsetType = UNSET
    score: Annotated[float, msgspec.Meta(ge=0, le=1)] | UnsetType = UNSET
    format_errors: str | list[str] | UnsetType = UNSET
    message: str | UnsetType = UNSET
    output: Annotated[str, msgspec.Meta(max_length=PRAIRIELEARN_MAX_BYTES)] | UnsetType = UNSET  # the file: 1 MB
    images: list[Image | str] | UnsetType = UNSET
    tests: list[PrairieLearnTest] | UnsetType = UNSET


# What a Struct cannot say, added to the published schemas (relaychaos.records.schemas).
EXTRA_SCHEMA: dict[str, dict[str, Any]] = {
    "GradescopeResults": {  # a top-level score, or tests that each have a score or a status
        "anyOf": [
            {"required": ["score"]},
            {
                "required": ["tests"],
                "properties": {
                    "tests": {"minItems": 1, "items": {"anyOf": [{"required": ["score"]}, {"required": ["status"]}]}}
                },
            },
        ]
    },
    "PrairieLearnResults": {
        "if": {"properties": {"gradable": {"const": False}}, "required": ["gradable"]},
        "else": {"required": ["score"]},
    },
}
