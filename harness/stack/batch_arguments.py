"""How a relay's batch commands take their one value: relay.toml's `[arguments]`.

The contract appends `--min-age SECONDS`, `--max-attempts N` and `--retention SECONDS` (fractional
seconds). A service of its own may take them otherwise: whole seconds, milliseconds, another flag.
`[arguments]` gives each command's arguments as a template:

    [arguments]
    resolve = ["--older-than", "{seconds:ceil}s"]   # whole seconds, rounded up: 0.55 -> "1s"
    purge   = ["--retention-ms", "{ms}"]            # whole milliseconds, rounded up
    reprocess = ["--max-attempts", "{value}"]

Placeholders: `{seconds}` (the contract's text: `5`, `0.55`), `{seconds:ceil}`, `{ms}`, `{value}` (the
same as `{seconds}`; for reprocess, the attempt cap). `effective` is the value the command really
gets (0.55 taken as whole seconds is 1.0): the operator waits past it, and the history records it,
so that every rule judges the batch by what the service was told.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

CONTRACT = {
    "resolve": ("--min-age", "{seconds}"),
    "reprocess": ("--max-attempts", "{value}"),
    "purge": ("--retention", "{seconds}"),
}
PLACEHOLDER = re.compile(r"\{([a-z:]+)\}")
KINDS = ("seconds", "seconds:ceil", "ms", "value")


def seconds_text(value: float) -> str:
    """A batch value as the contract's command line gets it: `5`, `0.45` (whole numbers without a point)."""
    return str(int(value)) if float(value) == int(value) else repr(float(value))


def _text(kind: str, value: float) -> str:
    if kind == "seconds:ceil":
        return str(math.ceil(round(value, 9)))
    if kind == "ms":
        return str(math.ceil(round(value * 1000, 6)))
    return seconds_text(value)


def _taken(kind: str, value: float) -> float:
    """The value a command told `_text(kind, value)` really gets."""
    if kind == "seconds:ceil":
        return float(math.ceil(round(value, 9)))
    if kind == "ms":
        return math.ceil(round(value * 1000, 6)) / 1000
    return float(value)


@dataclass(frozen=True)
class BatchArguments:
    """Each batch command's argument template (the contract's where the manifest gives none)."""

    templates: dict[str, tuple[str, ...]] = field(default_factory=lambda: dict(CONTRACT))

    def argv(self, command: str, value: float) -> tuple[str, ...]:
        """The arguments appended to the command for `value`."""
        template = self.templates.get(command, CONTRACT[command])
        return tuple(PLACEHOLDER.sub(lambda m: _text(m.group(1), value), part) for part in template)

    def effective(self, command: str, value: float) -> float:
        """The value the command really gets (the largest its placeholders round `value` to)."""
        template = self.templates.get(command, CONTRACT[command])
        kinds = [m.group(1) for part in template for m in PLACEHOLDER.finditer(part)]
        return max((_taken(k, value) for k in kinds), default=float(value))


def check(raw: object, problems: list[str]) -> BatchArguments:
    """`[arguments]` of a manifest's data; each problem found is appended to `problems`."""
    if raw is None:
        return BatchArguments()
    if not isinstance(raw, dict):
        problems.append("[arguments] must be a table: command = [argument templates]")
        return BatchArguments()
    templates: dict[str, tuple[str, ...]] = dict(CONTRACT)
    for command, template in raw.items():
        if command not in CONTRACT:
            problems.append(f"[arguments] names `{command}`; only {', '.join(CONTRACT)} take an argument")
            continue
        if not (isinstance(template, list) and template and all(isinstance(p, str) for p in template)):
            problems.append(f"[arguments].{command} must be a non-empty list of strings, got {template!r}")
            continue
        kinds = [m.group(1) for part in template for m in PLACEHOLDER.finditer(part)]
        unknown = sorted({k for k in kinds if k not in KINDS})
        if unknown or not kinds:
            problems.append(
                f"[arguments].{command} must hold the value as one of "
                + ", ".join("{" + k + "}" for k in KINDS)
                + (f"; {', '.join('{' + k + '}' for k in unknown)} is not one" if unknown else "; it holds none")
            )
            continue
        templates[command] = tuple(template)
    return BatchArguments(templates)
