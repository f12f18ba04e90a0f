"""The records of a bundle's logs, as the reconstruction reads them: one slotted dataclass per log.

    convert = Converter(source, pods, bundle_folder, strings)
    record = convert(file, line, fields)     # ChannelLine | AccountLine | OpLine; BundleError naming the line

Each record keeps its file (as named from the bundle folder) and line, its time in unix
seconds, and its fields checked: an amount in whole minor units, non-empty parties, a code
the contract knows, a relay slot (one letter, or a pod mapped by [pods]), an `answered_at`
not before `at`, a batch command with its numeric argument. GUIDs, parties and codes are
interned across the logs and amounts shared while the records are in memory (a run of them:
spill.py keeps the rest on disk).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn, final

from relaychaos.events import BATCH_COMMANDS
from relaychaos.incidents.mapping import BundleError, Source
from relaychaos.incidents.readers import Later
from relaychaos.incidents.times import TimeReader

RESULTS = re.compile(r"0000|B2\d\d|E500|E90[1-4]|E400|timeout")
CODES = re.compile(r"0000|B2\d\d|E500")
EVENTS = ("restart", "deploy", "kill", "start", "batch")
SLOT = re.compile(r"[a-z]")


@final  # never subclassed: `type(r) is ChannelLine` tells a record's log
@dataclass(slots=True)
class ChannelLine:
    """One request the channel sent, and what it got back (`timeout`: nothing)."""

    file: str
    line: int
    at: float
    guid: str
    src: str
    dst: str
    amount: int
    result: str
    relay: str
    calls: AccountLine | list[AccountLine] | None = None  # the account call(s) it caused (causes.calls_of)

    @property
    def where(self) -> str:
        return f"{self.file} line {self.line}"


@final
@dataclass(slots=True)
class AccountLine:
    """One transfer call the account system received (times on the account system's clock until shifted)."""

    file: str
    line: int
    at: float
    guid: str
    src: str
    dst: str
    amount: int
    code: str
    answered_at: float | None
    n: int = 1  # its number among its GUID's calls (reconstruct.Causes)

    @property
    def where(self) -> str:
        return f"{self.file} line {self.line}"


@final
@dataclass(slots=True)
class OpLine:
    """A restart, deploy, kill or start of a relay instance, or a batch run with its argument."""

    file: str
    line: int
    at: float
    event: str
    relay: str
    command: str | None = None
    argument: float | None = None
    calls: AccountLine | list[AccountLine] | None = None  # a reprocess run's: the call(s) it sent (causes.calls_of)

    @property
    def where(self) -> str:
        return f"{self.file} line {self.line}"


def _fail(where: str, what: str, fix: str) -> BundleError:
    return BundleError(what, where=where, fix=fix)


def _duration(value: Later, name: str) -> float:
    try:
        return float(str(value.by).strip())
    except ValueError:
        raise BundleError(
            f"{name}'s duration {value.by!r} is not a number",
            fix="map plus to the field holding the duration as a number, in the unit given (unit = s, ms or us)",
        ) from None


class Converter:
    """Turns one source's rows into its records (see the module doc); `strings` interns GUIDs and parties
    across the logs, so a GUID read from both logs is one string in memory."""

    def __init__(self, source: Source, pods: dict[str, str], folder: Path, strings: dict[str, str]):
        self.source, self.pods, self.folder, self.strings = source, pods, folder, strings
        self.times = TimeReader(source)
        self.names: dict[str, str] = {}
        by_log: dict[str, Callable[[str, str, int, dict[str, Any]], ChannelLine | AccountLine | OpLine]]
        by_log = {"channel": self._channel, "account": self._account, "operations": self._operation}
        self.convert = by_log[source.name]
        self._slots: dict[str, str] = {}
        self.case = {"lower": str.lower, "upper": str.upper}.get(source.guid_case)
        self.amounts: dict[int, int] = {}

    def __call__(self, file: str, line: int, fields: dict[str, Any]) -> ChannelLine | AccountLine | OpLine:
        name = self.names.get(file)
        if name is None:
            p = Path(file)
            name = self.names[file] = str(p.relative_to(self.folder)) if p.is_relative_to(self.folder) else file
        return self.convert(name, file, line, fields)

    def time(self, value: object, file: str, line: int, name: str = "at") -> float:
        try:
            if type(value) is Later:  # a time plus a duration (FieldSpec.plus)
                return self.times.read(value.at, "", name) + _duration(value, name) * value.unit
            return self.times.read(value, "", name)
        except BundleError as e:
            raise BundleError(e.what, where=f"{file}, line {line}", fix=e.fix) from None

    def forget(self) -> None:
        """Let go of the strings and amounts shared so far (the records that shared them are on disk now)."""
        self.strings.clear()
        self.amounts.clear()

    @property
    def instances(self) -> set[str]:
        """The relay instance names the source's records gave (slots and pod names)."""
        return set(self._slots)

    def slot(self, value: object, where: str) -> str:
        """The relay slot of an instance name: a letter as it is, else the [pods] entry matching it."""
        text = str(value).strip()
        found = self._slots.get(text)
        if found is not None:
            return found
        if SLOT.fullmatch(text):
            found = text
        else:
            found = next((s for pod, s in self.pods.items() if pod == text or fnmatch.fnmatchcase(text, pod)), None)
            if found is None:
                raise _fail(
                    where,
                    f"relay = {text!r} is not a relay slot and [pods] does not map it",
                    f'map the instance to a slot in incident.toml: [pods] "{text}" = "a" (globs '
                    'allowed: "relay-7d9f-*" = "a")',
                )
        self._slots[text] = found
        return found

    def _transfer(self, f: dict, file: str, line: int) -> tuple[str, str, str, int]:
        strings = self.strings
        try:
            guid, src, dst = str(f["guid"]).strip(), str(f["from"]).strip(), str(f["to"]).strip()
            if not (guid and src and dst):
                raise KeyError
            amount = f["amount"] if type(f["amount"]) is int else int(str(f["amount"]).strip())
        except (KeyError, ValueError):
            self._bad_transfer(f, file, line)
        amount = self.amounts.setdefault(amount, amount)  # amounts repeat: one int for each
        if self.case is not None:
            guid = self.case(guid)
        return (strings.setdefault(guid, guid), strings.setdefault(src, src), strings.setdefault(dst, dst), amount)

    def _bad_transfer(self, f: dict, file: str, line: int) -> NoReturn:
        where = f"{file}, line {line}"
        for key in ("guid", "from", "to"):
            if not str(f.get(key) or "").strip():
                raise _fail(where, f"{self.source.fields[key].name} is empty", f"give the transfer's {key}")
        raise _fail(
            where,
            f"amount = {f['amount']!r} is not a whole number",
            "write the amount in minor units, e.g. 120 for 1.20",
        )

    def _channel(self, name: str, file: str, line: int, f: dict) -> ChannelLine:
        guid, src, dst, amount = self._transfer(f, file, line)
        result = self.strings.setdefault(f["result"], f["result"])
        if not RESULTS.fullmatch(result):
            raise _fail(
                f"{file}, line {line}",
                f"result = {result!r} is not a relay answer code",
                "write the code the relay answered (0000, B2xx, E500, E901-E904, E400) or `timeout` when the "
                f"channel got no answer, or translate your words in {self.source.table} codes",
            )
        return ChannelLine(
            name,
            line,
            self.time(f["at"], file, line),
            guid,
            src,
            dst,
            amount,
            result,
            self.slot(f.get("relay") or "a", f"{file}, line {line}"),
        )

    def _account(self, name: str, file: str, line: int, f: dict) -> AccountLine:
        guid, src, dst, amount = self._transfer(f, file, line)
        code = self.strings.setdefault(f["code"], f["code"])
        if not CODES.fullmatch(code):
            raise _fail(
                f"{file}, line {line}",
                f"code = {code!r} is not an account-system answer",
                f"write 0000, B2xx or E500 (contract section 2), or translate in {self.source.table} codes",
            )
        at = self.time(f["at"], file, line)
        answered = f.get("answered_at")
        answered_at = self.time(answered, file, line, "answered_at") if answered not in (None, "") else None
        if answered_at is not None and answered_at < at:
            raise _fail(
                f"{file}, line {line}",
                f"answered_at is {at - answered_at:.3f} s before at: the call was answered before it was received",
                "check the two columns (swapped? different clocks or units?)",
            )
        return AccountLine(name, line, at, guid, src, dst, amount, code, answered_at)

    def _operation(self, name: str, file: str, line: int, f: dict) -> OpLine:
        where = f"{file}, line {line}"
        event = str(f["event"]).strip()
        if event not in EVENTS:
            raise _fail(
                where,
                f"event = {event!r} is not known",
                f"use one of {', '.join(EVENTS)}, or translate "
                f'your words in {self.source.table} codes (OOMKilling = "kill", "-" to skip)',
            )
        relay, at = self.slot(f.get("relay") or "a", where), self.time(f["at"], file, line)
        if event != "batch":
            return OpLine(name, line, at, event, relay)
        command = str(f.get("command") or "").strip()
        if command not in BATCH_COMMANDS:
            raise _fail(
                where,
                f"a batch event needs command = {' | '.join(BATCH_COMMANDS)}, got {f.get('command')!r}",
                "name the batch command that ran, and its argument (argument = 3 for reprocess --max-attempts 3)",
            )
        try:
            argument = float(str(f.get("argument")).strip())
        except ValueError:
            raise _fail(
                where,
                f"argument = {f.get('argument')!r} is not a number",
                "give the command's one argument (--min-age S, --max-attempts N, --retention S) as a "
                f"number, or a default for it in {self.source.table} defaults",
            ) from None
        return OpLine(name, line, at, event, relay, command, argument)
