"""A grading rubric: points per rule, grouped; scenario weights; visibility per scenario set.

    rubric = load(path or None)      # None: the default rubric shipped beside this module
    rubric.points["one-account-call"], rubric.group_of["one-account-call"], rubric.set_of("race-32-one-relay")

Every problem in a rubric file is found at once and raised as one RubricError
naming the file and each fix (an unknown rule, a negative point, a folder that
is not there, a set that is not visible / hidden / after_due_date).
"""
from __future__ import annotations

import fnmatch
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from relaychaos.errors import HarnessError

DEFAULT = Path(__file__).with_name("rubric.toml")
SETS = ("visible", "hidden", "after_due_date")


class RubricError(HarnessError):
    """A rubric file that cannot be used as it is."""


@dataclass(frozen=True)
class Group:
    name: str
    title: str
    rules: dict[str, float]


@dataclass(frozen=True)
class Rubric:
    """A checked rubric (see the module doc)."""

    path: Path
    name: str
    groups: tuple[Group, ...]
    weights: dict[str, float] = field(default_factory=dict)
    claims: dict[str, tuple[str, ...]] = field(default_factory=dict)  # set -> scenario-name globs
    folders: dict[str, Path] = field(default_factory=dict)  # set -> folder of scenario files

    @property
    def points(self) -> dict[str, float]:
        return {rule: p for g in self.groups for rule, p in g.rules.items()}

    @property
    def group_of(self) -> dict[str, str]:
        return {rule: g.name for g in self.groups for rule in g.rules}

    @property
    def max_score(self) -> float:
        return float(sum(self.points.values()))

    def weight(self, scenario: str) -> float:
        return float(self.weights.get(scenario, 1.0))

    def set_of(self, scenario: str, folder_set: str | None = None) -> str:
        """The visibility set of a scenario: its folder's set, else the first set claiming its name, else visible."""
        if folder_set:
            return folder_set
        for name in ("hidden", "after_due_date"):
            if any(fnmatch.fnmatchcase(scenario, glob) for glob in self.claims.get(name, ())):
                return name
        return "visible"

    def describe(self) -> dict:
        return {"name": self.name, "path": str(self.path), "max_score": self.max_score}


def load(path: str | Path | None = None) -> Rubric:
    """Read and check a rubric (the shipped default when path is None)."""
    from relaychaos.checkers import RULES

    path = Path(path).resolve() if path else DEFAULT
    try:
        data = tomllib.loads(path.read_text())
    except OSError as e:
        raise RubricError(f"cannot read the rubric: {e.strerror}", where=str(path),
                          fix=f"pass --rubric with an existing file; the default is {DEFAULT}") from None
    except tomllib.TOMLDecodeError as e:
        raise RubricError(f"not valid TOML: {e}", where=str(path), fix="correct the syntax") from None
    problems: list[str] = []
    groups = []
    for i, g in enumerate(data.get("group", [])):
        rules = g.get("rules", {})
        if not isinstance(rules, dict):
            problems.append(f"[[group]] #{i + 1}: `rules` must be a table of rule = points")
            continue
        for rule, pts in rules.items():
            if rule not in RULES:
                problems.append(f"[[group]] {g.get('name', i + 1)}: unknown rule `{rule}` (known: {', '.join(RULES)})")
            if isinstance(pts, bool) or not isinstance(pts, (int, float)) or pts < 0:
                problems.append(f"[[group]] {g.get('name', i + 1)}: points for `{rule}` must be a number >= 0")
        groups.append(Group(str(g.get("name", f"group{i + 1}")), str(g.get("title", g.get("name", ""))),
                            {r: float(p) for r, p in rules.items() if isinstance(p, (int, float))}))
    seen = [r for g in groups for r in g.rules]
    problems += [f"rule `{r}` is in more than one group" for r in sorted({r for r in seen if seen.count(r) > 1})]
    if not groups:
        problems.append("no [[group]] with rules: nothing would be graded")
    claims, folders = {}, {}
    for name, spec in data.get("sets", {}).items():
        if name not in SETS[1:]:
            problems.append(f"[sets.{name}]: unknown set (use hidden or after_due_date; the rest is visible)")
            continue
        claims[name] = tuple(spec.get("scenarios", ()))
        if spec.get("folder"):
            folder = (path.parent / spec["folder"]).resolve()
            if not folder.is_dir():
                problems.append(f"[sets.{name}].folder = {spec['folder']!r}: no folder at {folder}")
            folders[name] = folder
    weights = data.get("weights", {})
    problems += [f"[weights].{k} must be a number > 0" for k, v in weights.items()
                 if isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0]
    if problems:
        raise RubricError("this rubric cannot be used:\n" + "\n".join(f"  - {p}" for p in problems), where=str(path),
                          fix=f"correct it as listed; the shipped default is {DEFAULT}")
    return Rubric(path, str(data.get("name", path.stem)), tuple(groups),
                  {k: float(v) for k, v in weights.items()}, claims, folders)
