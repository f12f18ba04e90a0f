"""Durations on the command line: 500ms, 2s, 1.5s, 3m (a bare number is seconds)."""

from __future__ import annotations

import re

_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
_PATTERN = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")


def parse_duration(text: str) -> float:
    """Seconds, as a float."""
    match = _PATTERN.match(text)
    if not match:
        raise ValueError(f"not a duration: {text!r} (examples: 500ms, 2s, 1.5s)")
    number, unit = match.groups()
    return float(number) * _UNITS[unit or "s"]
