"""A log's timestamps as unix seconds, by the format its Source declares; a time that cannot be meant is an error.

    reader = TimeReader(source)
    at = reader.read(value, where)        # BundleError naming `where` and the fix

Formats: `iso` (ISO 8601; a time without a zone needs the source's `zone`), `epoch_s`,
`epoch_ms`, `epoch_us`, `epoch_ns` (numbers, or numbers as text: Loki's nanoseconds), `local` (ISO without a zone, in
`zone`), and `auto` (the default: ISO with a zone, or unix seconds). In every format a
number that is not a plausible unix time in its unit (epoch milliseconds read as
seconds, seconds read as milliseconds) and, in `auto` and `iso`, a time without a zone
are errors that say which setting to write: never a time silently taken another way.
"""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from relaychaos.incidents.mapping import BundleError, Source

PLAUSIBLE = (1e8, 1e10)  # unix seconds from 1973 to 2286
UNITS = {"epoch_s": 1.0, "epoch_ms": 1e3, "epoch_us": 1e6, "epoch_ns": 1e9}
WORDS = {
    "epoch_s": "unix seconds",
    "epoch_ms": "unix milliseconds",
    "epoch_us": "unix microseconds",
    "epoch_ns": "unix nanoseconds",
}


class TimeReader:
    """Reads one source's times (see the module doc)."""

    def __init__(self, source: Source):
        self.source, self.format = source, source.time
        try:
            self.zone = ZoneInfo(source.zone) if source.zone else None
        except (ZoneInfoNotFoundError, ValueError):
            raise BundleError(
                f"zone = {source.zone!r} is not a time zone",
                where=source.table,
                fix='use an IANA zone name such as "Europe/Berlin", or "UTC"',
            ) from None

    def read(self, value: object, where: str, name: str = "at") -> float:
        """Unix seconds; BundleError naming where, the value and the setting to write."""
        number = _number(value)
        if number is not None:
            return self._epoch(number, value, where, name)
        if not isinstance(value, str) or self.format in UNITS:
            raise self._bad(value, where, name, "not a time")
        try:
            t = datetime.fromisoformat(value.strip())
        except ValueError:
            raise self._bad(value, where, name, "not a time") from None
        if t.tzinfo is None:
            if self.zone is None:
                raise BundleError(
                    f"{name} = {value!r} has no zone",
                    where=where,
                    fix=f"say which zone the {self.source.name} log's times are in: zone = "
                    f'"Europe/Berlin" (or "UTC") in {self.source.table}',
                )
            t = t.replace(tzinfo=self.zone)
        return t.timestamp()

    def _epoch(self, number: float, value: object, where: str, name: str) -> float:
        unit = "epoch_s" if self.format in ("auto", "iso", "local") else self.format
        seconds = number / UNITS[unit]
        if PLAUSIBLE[0] <= seconds < PLAUSIBLE[1]:
            return seconds
        guess = next((u for u, scale in UNITS.items() if PLAUSIBLE[0] <= number / scale < PLAUSIBLE[1]), None)
        meant = f"looks like {WORDS[guess]}" if guess else "is not a plausible unix time in any unit"
        fix = (
            f'declare the unit: time = "{guess}" in {self.source.table}'
            if guess
            else "write ISO 8601 with a zone or unix seconds"
        )
        raise BundleError(
            f"{name} = {value!r} read as {WORDS[unit]} is {_date(seconds)}: it {meant}", where=where, fix=fix
        )

    def _bad(self, value: object, where: str, name: str, what: str) -> BundleError:
        if self.format in UNITS:
            fix = (
                f"write {self.format.replace('_', ' ')} numbers, "
                f'or change time = "{self.format}" in {self.source.table}'
            )
        else:
            fix = (
                "write ISO 8601 with a zone (2026-11-14T23:10:00.120Z) or unix seconds (1794697800.12), or "
                f'declare the format in {self.source.table}: time = "epoch_ms", ...'
            )
        return BundleError(f"{name} = {value!r} is {what}", where=where, fix=fix)


def _number(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _date(seconds: float) -> str:
    try:
        return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d")
    except (OverflowError, OSError, ValueError):
        return "no date at all"
