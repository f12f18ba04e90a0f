"""Scenario files: a small YAML format for a scenario, checked whole before anything starts.

    name: dropped-answer-resent            # required
    description: what happened, in words
    account_timeout_ms: 300                # optional, as in relaychaos.engine.steps.Scenario
    accounts: {alice: 1000, bob: 1000}
    expect:                                # optional: what replaying this file shows
      holds_on: [relay_under_test/reference]
      breaks: {relay_under_test/base: [one-account-call]}
    steps:
      - send: {guid: g1, amount: 10}
      - add_toxic: {proxy: account, kind: timeout, attributes: {timeout: 0}}
      - heal
    claims:                                # optional: what must happen for the file to test anything
      - {claim: call_during_fault, guid: g1, step: 2}

Each step is one of relaychaos.engine.steps.STEP_KINDS, with that dataclass's fields; each claim
one of relaychaos.checkers.claims.CLAIM_KINDS, with its fields (steps numbered from 1).
GUIDs are labels; every label a step waits for or releases must have been
introduced by an earlier send, race or server_fault. A problem raises
ScenarioFileError naming the file, the line and the fix.
"""

from __future__ import annotations

import dataclasses
import itertools
import types
import typing
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from relaychaos import paths
from relaychaos.checkers import claims as C
from relaychaos.engine import steps as S
from relaychaos.engine.story_checks import Story, Unworkable
from relaychaos.errors import HarnessError

TOP_KEYS = {
    "name": str,
    "description": str,
    "account_timeout_ms": int,
    "max_attempts": int,
    "accounts": dict,
    "relays": list,
    "batch_timeout_s": float,
    "ledger_lock_delay_ms": int,
    "expect": dict,
    "incident": dict,
    "claims": list,
    "steps": list,
}


class ScenarioFileError(HarnessError):
    """A scenario file that cannot be run as it is."""


@dataclass(frozen=True)
class ScenarioFile:
    """A loaded file: the scenario, what the file says replaying it shows, and where it came from."""

    scenario: S.Scenario
    path: Path
    holds_on: tuple[str, ...] = ()
    breaks: dict = field(default_factory=dict)  # relay path -> [rules]

    def relay_path(self, relay: str) -> Path:
        """A relay named in `expect`, relative to the project root (or absolute)."""
        p = Path(relay)
        return p if p.is_absolute() else paths.bundled_relays().parent / p


def _fail(path: Path, node: yaml.Node | None, what: str, fix: str) -> ScenarioFileError:
    line = f"line {node.start_mark.line + 1}" if node is not None else "top"
    return ScenarioFileError(what, where=f"{path}, {line}", fix=fix)


def _plain(node: yaml.Node | None) -> typing.Any:
    """The plain value of a YAML node: whatever the file wrote there (checked by the caller)."""
    return yaml.safe_load(yaml.serialize(node)) if node is not None else None


def _type_ok(value: object, annotation: object) -> bool:
    hint = eval(annotation, vars(S)) if isinstance(annotation, str) else annotation  # noqa: S307 - our own hints
    options = (
        typing.get_args(hint)
        if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union
        else (hint,)
    )
    for opt in options:
        origin = typing.get_origin(opt) or opt
        if opt is type(None) and value is None:
            return True
        if origin is float and isinstance(value, (int, float)) and not isinstance(value, bool):
            return True
        if origin is int and isinstance(value, int) and not isinstance(value, bool):
            return True
        if origin in (str, bool, dict) and isinstance(value, origin):
            return True
        if origin is tuple and isinstance(value, list) and all(isinstance(v, str) for v in value):
            return True
    return False


def _type_name(annotation: object) -> str:
    return str(annotation).replace("tuple[str, ...]", "list of strings").replace("typing.", "")


def _step(path: Path, node: yaml.Node) -> S.Step:
    if isinstance(node, yaml.ScalarNode):
        kind, args_node = node.value, None
    elif isinstance(node, yaml.MappingNode) and len(node.value) == 1:
        key, args_node = node.value[0]
        kind = key.value
    else:
        raise _fail(
            path,
            node,
            "a step must be a step name or a mapping of one step name to its fields",
            fix="write `- heal` or `- send: {guid: g1, amount: 10}`",
        )
    cls = S.STEP_KINDS.get(kind)
    if cls is None:
        raise _fail(path, node, f"unknown step {kind!r}", fix=f"use one of: {', '.join(S.STEP_KINDS)}")
    args = _plain(args_node) or {}
    if not isinstance(args, dict):
        raise _fail(path, args_node, f"the fields of step {kind!r} must be a mapping", fix=f"write `{kind}: {{...}}`")
    known = {f.name: f for f in dataclasses.fields(cls)}
    for name, value in args.items():
        if name not in known:
            raise _fail(
                path, node, f"step {kind!r} has no field {name!r}", fix=f"its fields are: {', '.join(known) or 'none'}"
            )
        if not _type_ok(value, known[name].type):
            raise _fail(
                path,
                node,
                f"field {name!r} of step {kind!r} is {value!r}, not a {_type_name(known[name].type)}",
                fix=f"give {name} as a {_type_name(known[name].type)}",
            )
    missing = [
        n
        for n, f in known.items()
        if n not in args and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    if missing:
        raise _fail(path, node, f"step {kind!r} lacks {', '.join(missing)}", fix=f"add {', '.join(missing)}")
    values = {k: tuple(v) if isinstance(v, list) else v for k, v in args.items()}
    return cls(**values)


def _check_story(
    path: Path, nodes: Iterable[yaml.Node | None], steps: Iterable[S.Step], relays: tuple[str, ...]
) -> None:
    """GUID references, toxic names, slots and timings that cannot work, before anything starts."""
    story = Story(relays)
    for node, step in zip(nodes, steps, strict=False):
        try:
            story.take(step)
        except Unworkable as e:
            raise _fail(path, node, e.what, e.fix) from None


def check(steps: Iterable[S.Step], relays: tuple[str, ...], path: str | Path = "<steps>") -> None:
    """The checks `load` makes on a file's story (GUIDs, toxics, slots, timings), on steps made in Python (any
    iterable: a generator is checked as it goes)."""
    _check_story(Path(path), itertools.repeat(None), steps, relays)


def load(path: str | Path) -> ScenarioFile:
    """Read and check a scenario file; ScenarioFileError (file, line, fix) on the first problem."""
    path = Path(path)
    try:
        root = yaml.compose(path.read_text())
    except OSError as e:
        raise ScenarioFileError(
            f"cannot read scenario file: {e.strerror}", where=str(path), fix="check the path"
        ) from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{path}, line {mark.line + 1}" if mark else str(path)
        raise ScenarioFileError(
            f"not valid YAML: {getattr(e, 'problem', e)}",
            where=where,
            fix="correct the YAML syntax (indentation, colons, brackets)",
        ) from None
    if not isinstance(root, yaml.MappingNode):
        raise _fail(
            path,
            root,
            "a scenario file must be a mapping with name and steps",
            fix="start with `name: ...` and `steps:`",
        )
    top = {k.value: v for k, v in root.value}
    for key, node in top.items():
        if key not in TOP_KEYS:
            raise _fail(path, node, f"unknown key {key!r}", fix=f"use only: {', '.join(TOP_KEYS)}")
    for key in ("name", "steps"):
        if key not in top:
            raise _fail(path, None, f"missing {key!r}", fix=f"add `{key}:` at the top level")
    plain = {k: _plain(v) for k, v in top.items() if k != "steps"}
    for key, value in plain.items():
        want = TOP_KEYS[key]
        if not (isinstance(value, want) or (want is float and isinstance(value, int))) or isinstance(value, bool):
            raise _fail(
                path, top[key], f"{key!r} is {value!r}, not a {want.__name__}", fix=f"give {key} as a {want.__name__}"
            )
    if not isinstance(top["steps"], yaml.SequenceNode) or not top["steps"].value:
        raise _fail(
            path, top["steps"], "steps must be a non-empty list", fix="list the steps under `steps:`, one `- ` each"
        )
    nodes = top["steps"].value
    steps = [_step(path, n) for n in nodes]
    relays = tuple(plain.get("relays", ["a"]))
    _check_story(path, nodes, steps, relays)
    expect = plain.pop("expect", {}) or {}
    if set(expect) - {"holds_on", "breaks"}:
        raise _fail(
            path,
            top["expect"],
            f"unknown key in expect: {sorted(set(expect) - {'holds_on', 'breaks'})}",
            fix="expect takes holds_on (a list of relays) and breaks (relay: [rules])",
        )
    scenario = _scenario(path, top, plain, steps)
    return ScenarioFile(scenario, path, tuple(expect.get("holds_on", ())), dict(expect.get("breaks", {})))


def _scenario(path: Path, top: dict, plain: dict, steps: list) -> S.Scenario:
    """The Scenario of a checked file's top-level values and steps, its claims checked against them."""
    fields_: dict[str, typing.Any] = {k: tuple(v) if k == "relays" else v for k, v in plain.items()}
    fields_["claims"] = _claims(path, top.get("claims"), fields_.pop("claims", []))
    try:
        return S.Scenario(steps=tuple(steps), family="regression", **fields_)
    except ValueError as e:
        raise _fail(path, top.get("claims"), str(e), fix="number steps from 1 and name GUIDs a step sends") from None


def _claims(path: Path, node: yaml.Node | None, raw: list) -> tuple[C.Claim, ...]:
    """The file's claims, each a mapping `{claim: KIND, ...fields}` (relaychaos.checkers.claims)."""
    out = []
    for n, item in enumerate(raw):
        where = node.value[n] if node is not None else None
        if not isinstance(item, dict):
            raise _fail(path, where, f"claim {item!r} is not a mapping", fix="write `- {claim: KIND, field: value}`")
        try:
            out.append(C.from_dict(item))
        except ValueError as e:
            raise _fail(path, where, str(e), fix="see relaychaos.checkers.claims for each claim's fields") from None
    return tuple(out)


def dump(scenario: S.Scenario, expect: dict | None = None, comment: str = "") -> str:
    """The YAML text of a scenario, in the format `load` reads (only non-default fields)."""
    steps = []
    for step in scenario.steps:
        args = {k: list(v) if isinstance(v, tuple) else v for k, v in S.changed_fields(step).items()}
        steps.append({S.kind(step): args} if args else S.kind(step))
    data = {
        "name": scenario.name,
        "description": scenario.description,
        "account_timeout_ms": scenario.account_timeout_ms,
        "max_attempts": scenario.max_attempts,
        "accounts": dict(scenario.accounts),
        "relays": list(scenario.relays),
    }
    if scenario.ledger_lock_delay_ms:
        data["ledger_lock_delay_ms"] = scenario.ledger_lock_delay_ms
    if scenario.claims:
        data["claims"] = [
            {k: list(v) if isinstance(v, tuple) else v for k, v in C.as_dict(c).items()} for c in scenario.claims
        ]
    if expect:
        data["expect"] = expect
    head = "".join(f"# {line}\n" for line in comment.splitlines())
    body = yaml.safe_dump(data, sort_keys=False, default_flow_style=False, allow_unicode=True)
    step_lines = "".join(
        f"  - {s}\n"
        if isinstance(s, str)
        else "".join(
            f"  - {k}: {yaml.safe_dump(v, default_flow_style=True, sort_keys=False, width=200).strip()}\n"
            for k, v in s.items()
        )
        for s in steps
    )
    return f"{head}{body}steps:\n{step_lines}"
