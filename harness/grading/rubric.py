"""A grading rubric (v2): points per behaviour, each made of contract obligations and the rules enforcing them.

    rubric = load(path or None)     # None: the default rubric shipped beside this module
    rubric.items[0].title, rubric.item_for("one-account-call", "race-32-two-relays"), rubric.set_of("stateful")

An item is a behaviour a student must get right ("never resends an UNKNOWN"), with its
points, the rules that enforce it, the contract clauses it stands for, and the scenarios
that exercise it (names or globs; "*" is every scenario). A failure (a verdict of rule R in
scenario S) counts against the first item, in file order, that names R and matches S, so
each failure costs one item; an item with `scenarios = ["*"]` catches what no earlier item
claimed. `partial` per item (or for the whole file): "none", the default, loses the item
whole when any scenario of its set shows it broken; "share" keeps the weighted share of its
scenarios in which it held (the v1 formula). A `[[cap]]` bounds the total when any scenario
breaks one of its rules ("a relay shown to apply a debit twice scores at most 80").

A v1 file (`[[group]]` tables of rule = points) loads as one item per rule, scenarios "*",
partial "share": the v1 scores exactly. Every problem in a file is found at once and raised
as one RubricError naming the file and each fix.
"""

from __future__ import annotations

import fnmatch
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from relaychaos.checkers import RULES
from relaychaos.contract import CLAUSES
from relaychaos.errors import HarnessError
from relaychaos.records.grade import RubricInfo

DEFAULT = Path(__file__).with_name("rubric.toml")
SETS = ("visible", "hidden", "after_due_date")
PARTIAL = ("none", "share")


class RubricError(HarnessError):
    """A rubric file that cannot be used as it is."""


@dataclass(frozen=True)
class Item:
    """One behaviour: what the student reads, its points, the rules and scenarios that show it broken."""

    id: str
    title: str
    points: float
    rules: tuple[str, ...]
    scenarios: tuple[str, ...] = ("*",)
    contract: tuple[str, ...] = ()
    partial: str = "none"

    def matches(self, scenario: str) -> bool:
        return any(fnmatch.fnmatchcase(scenario, glob) for glob in self.scenarios)

    def names(self, scenario: str) -> bool:
        """The item is about this scenario in particular: a pattern other than "*" matches it."""
        return any(glob != "*" and fnmatch.fnmatchcase(scenario, glob) for glob in self.scenarios)


@dataclass(frozen=True)
class Cap:
    """The total is at most `at_most` when any counted scenario breaks one of `rules`; `why` says it to a student."""

    rules: tuple[str, ...]
    at_most: float
    why: str


@dataclass(frozen=True)
class Rubric:
    """A checked rubric (see the module doc)."""

    path: Path
    name: str
    items: tuple[Item, ...]
    caps: tuple[Cap, ...] = ()
    weights: dict[str, float] = field(default_factory=dict)
    claims: dict[str, tuple[str, ...]] = field(default_factory=dict)  # set -> scenario-name globs
    folders: dict[str, Path] = field(default_factory=dict)  # set -> folder of scenario files
    version: int = 2

    @property
    def max_score(self) -> float:
        return float(sum(i.points for i in self.items))

    @property
    def by_id(self) -> dict[str, Item]:
        return {i.id: i for i in self.items}

    def item_for(self, rule: str, scenario: str) -> Item | None:
        """The item a failure of `rule` in `scenario` counts against: the first naming the rule and matching."""
        return next((i for i in self.items if rule in i.rules and i.matches(scenario)), None)

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

    def describe(self) -> RubricInfo:
        """The rubric as a grade record names it."""
        return RubricInfo(name=self.name, version=self.version, path=self.path.name, max_score=self.max_score)


def load(path: str | Path | None = None) -> Rubric:
    """Read and check a rubric (the shipped default when path is None)."""
    path = Path(path).resolve() if path else DEFAULT
    try:
        data = tomllib.loads(path.read_text())
    except OSError as e:
        raise RubricError(
            f"cannot read the rubric: {e.strerror}",
            where=str(path),
            fix=f"pass --rubric with an existing file; the default is {DEFAULT}",
        ) from None
    except tomllib.TOMLDecodeError as e:
        raise RubricError(f"not valid TOML: {e}", where=str(path), fix="correct the syntax") from None
    problems: list[str] = []
    if "group" in data and "item" in data:
        problems.append("both [[group]] (v1) and [[item]] (v2) tables: use one format")
    items = _v1_items(data, problems) if "group" in data else _items(data, problems)
    caps = _caps(data, problems)
    claims, folders = _sets(data, path, problems)
    weights = data.get("weights", {})
    problems += [
        f"[weights].{k} must be a number > 0"
        for k, v in weights.items()
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0
    ]
    if problems:
        raise RubricError(
            "this rubric cannot be used:\n" + "\n".join(f"  - {p}" for p in problems),
            where=str(path),
            fix=f"correct it as listed; the shipped default is {DEFAULT}",
        )
    return Rubric(
        path,
        str(data.get("name", path.stem)),
        tuple(items),
        tuple(caps),
        {k: float(v) for k, v in weights.items()},
        claims,
        folders,
        1 if "group" in data else 2,
    )


def _number(value: object) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float))


def _items(data: dict, problems: list[str]) -> list[Item]:
    default_partial = data.get("partial", "none")
    if default_partial not in PARTIAL:
        problems.append(f"partial = {default_partial!r}: use one of {', '.join(PARTIAL)}")
    items = []
    for n, raw in enumerate(data.get("item", []), 1):
        where = f"[[item]] {raw.get('id', f'#{n}')}"
        rules, scenarios, contract = (raw.get(k, d) for k, d in (("rules", []), ("scenarios", ["*"]), ("contract", [])))
        if not raw.get("id") or not raw.get("title"):
            problems.append(f"{where}: needs an `id` and a `title` (the behaviour, as a student reads it)")
        if not _number(raw.get("points")) or raw["points"] < 0:
            problems.append(f"{where}: `points` must be a number >= 0")
        if not isinstance(rules, list) or not rules:
            problems.append(f"{where}: `rules` must list the rules that enforce it (known: {', '.join(RULES)})")
            rules = []
        problems += [f"{where}: unknown rule `{r}` (known: {', '.join(RULES)})" for r in rules if r not in RULES]
        problems += [
            f"{where}: unknown contract clause `{c}` (known: {', '.join(CLAUSES)})"
            for c in contract
            if c not in CLAUSES
        ]
        partial = raw.get("partial", default_partial)
        if partial not in PARTIAL:
            problems.append(f"{where}: partial = {partial!r}: use one of {', '.join(PARTIAL)}")
        own = tuple(contract) or tuple(dict.fromkeys(c for r in rules if r in RULES for c in RULES[r].contract))
        items.append(
            Item(
                str(raw.get("id", f"item{n}")),
                str(raw.get("title", "")),
                float(raw["points"]) if _number(raw.get("points")) else 0.0,
                tuple(rules),
                tuple(scenarios),
                own,
                partial,
            )
        )
    ids = [i.id for i in items]
    problems += [f"item id `{i}` is used twice" for i in sorted({i for i in ids if ids.count(i) > 1})]
    if not items:
        problems.append("no [[item]]: nothing would be graded")
    return items


def _v1_items(data: dict, problems: list[str]) -> list[Item]:
    """A v1 file's groups as items: one per rule, every scenario, the share of scenarios held (the v1 formula)."""
    items = []
    for i, g in enumerate(data.get("group", [])):
        rules = g.get("rules", {})
        if not isinstance(rules, dict):
            problems.append(f"[[group]] #{i + 1}: `rules` must be a table of rule = points")
            continue
        for rule, pts in rules.items():
            if rule not in RULES:
                problems.append(f"[[group]] {g.get('name', i + 1)}: unknown rule `{rule}` (known: {', '.join(RULES)})")
            elif not _number(pts) or pts < 0:
                problems.append(f"[[group]] {g.get('name', i + 1)}: points for `{rule}` must be a number >= 0")
            else:
                items.append(Item(rule, RULES[rule].text, float(pts), (rule,), ("*",), RULES[rule].contract, "share"))
    seen = [i.id for i in items]
    problems += [f"rule `{r}` is in more than one group" for r in sorted({r for r in seen if seen.count(r) > 1})]
    if not items:
        problems.append("no [[group]] with rules: nothing would be graded")
    return items


def _caps(data: dict, problems: list[str]) -> list[Cap]:
    caps = []
    for n, raw in enumerate(data.get("cap", []), 1):
        rules = raw.get("rules", [])
        if not isinstance(rules, list) or not rules or any(r not in RULES for r in rules):
            problems.append(f"[[cap]] #{n}: `rules` must list known rules (known: {', '.join(RULES)})")
            continue
        if not _number(raw.get("at_most")) or raw["at_most"] < 0 or not raw.get("why"):
            problems.append(f"[[cap]] #{n}: needs `at_most` (a number >= 0) and `why` (what the relay was shown to do)")
            continue
        caps.append(Cap(tuple(rules), float(raw["at_most"]), str(raw["why"])))
    return caps


def _sets(data: dict, path: Path, problems: list[str]) -> tuple[dict, dict]:
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
    return claims, folders
