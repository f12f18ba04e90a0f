"""What a scenario's steps must be to work where they stand in its story: GUIDs introduced before they are named, toxics
added before they are removed, slots running where they send, marks made before a batch run ages its rows from them,
timings a run can make. The scenario file's loader (scenario_file) and steps made in Python (scenario_file.check)
are checked alike.
"""

from __future__ import annotations

from relaychaos.engine import steps as S
from relaychaos.stack.toxiproxy_control import TOXIC_TYPES

LIMIT_S = 60.0  # the longest timing a step may have: a scenario runs in seconds


class Unworkable(Exception):
    """A step that cannot work where it stands in its story: what is wrong, and the fix."""

    def __init__(self, what: str, fix: str):
        super().__init__(what)
        self.what, self.fix = what, fix


def label_number(label: str) -> int | None:
    """N of a label written gN (as an imported night numbers its GUIDs: g1, g2, ...); None for any other label
    (g01, g², tx-1)."""
    digits = label[1:]
    return int(digits) if label[:1] == "g" and digits.isascii() and digits.isdigit() and digits[0] != "0" else None


class Labels:
    """A set of GUID labels: those written gN (a night imported from production introduces a million) as bits of
    a bytearray, any other in a set."""

    def __init__(self) -> None:
        self.bits = bytearray()
        self.others: set[str] = set()

    def add(self, label: str) -> None:
        n = label_number(label)
        if n is None:
            self.others.add(label)
            return
        if n >> 3 >= len(self.bits):  # at least doubled: a million labels in a few dozen extensions
            self.bits.extend(bytes(max((n >> 3) + 1, 2 * len(self.bits)) - len(self.bits)))
        self.bits[n >> 3] |= 1 << (n & 7)

    def __contains__(self, label: object) -> bool:
        if not isinstance(label, str):
            return False
        n = label_number(label)
        if n is None:
            return label in self.others
        return n >> 3 < len(self.bits) and bool(self.bits[n >> 3] & 1 << (n & 7))


class Story:
    """What a story's steps so far have set up: the GUID labels introduced, the toxics added, the slots running."""

    def __init__(self, relays: tuple[str, ...]):
        self.relays = relays
        self.known = Labels()
        self.toxics: set[tuple[str, str]] = set()
        self.running = set(relays)
        self.marks: set[str] = set()

    def take(self, step: S.Step) -> None:
        """The next step, checked against the story so far and added to it; Unworkable when it cannot work."""
        self._labels(step)
        self._proxy(step)
        self._toxics(step)
        self._slots(step)
        self._marks(step)
        _check_numbers(step)

    def _marks(self, step: S.Step) -> None:
        """A mark's name is new; a batch run's `since` names a mark made before it."""
        if isinstance(step, S.Mark):
            if step.name in self.marks:
                raise Unworkable(f"mark {step.name!r} is made twice", "give each mark a name of its own")
            self.marks.add(step.name)
        since = getattr(step, "since", None)
        if since is not None and since not in self.marks:
            raise Unworkable(
                f"since = {since!r} names no mark made before this step",
                f"put `- mark: {{name: {since}, ...}}` before it",
            )

    def _labels(self, step: S.Step) -> None:
        """A send or race introduces its GUID, a server fault those it holds or fails; a step may name no other."""
        if isinstance(step, (S.Send, S.Race)):
            self.known.add(step.guid)
        if isinstance(step, S.ServerFault):
            for label in (*step.hold_guids, *step.e500_guids, *step.e500_once):
                self.known.add(label)
        for label in S.guids_of(step):
            if label not in self.known:
                raise Unworkable(
                    f"GUID {label!r} is referenced before any send, race or server_fault introduces it",
                    "introduce it first (send it, or hold it with server_fault) or fix the label",
                )

    def _proxy(self, step: S.Step) -> None:
        """A step's proxy is the account system's or a started slot's hub."""
        proxy = getattr(step, "proxy", None)
        if (
            proxy is not None
            and proxy != "account"
            and not (proxy.startswith("hub-") and proxy[4:] in self.running | set(self.relays))
        ):
            raise Unworkable(f"no proxy {proxy!r}", f"use {S.PROXIES_HELP}, for a slot that has been started")

    def _toxics(self, step: S.Step) -> None:
        """A toxic added is a known kind on a stream, with numbers; one removed was added (and not healed) before."""
        if isinstance(step, S.AddToxic):
            if step.kind not in TOXIC_TYPES:
                raise Unworkable(f"unknown toxic kind {step.kind!r}", f"use one of {', '.join(TOXIC_TYPES)}")
            if step.stream not in ("upstream", "downstream"):
                raise Unworkable(f"unknown stream {step.stream!r}", "use upstream or downstream")
            if any(not isinstance(v, (int, float)) or v < 0 for v in step.attributes.values()):
                raise Unworkable(
                    f"toxic attributes must be numbers of at least 0, got {step.attributes}",
                    "give milliseconds or bytes as plain numbers",
                )
            self.toxics.add((step.proxy, step.name or f"{step.kind}_{step.stream}"))
        if isinstance(step, S.RemoveToxic):
            if (step.proxy, step.name) not in self.toxics:
                raise Unworkable(
                    f"no toxic named {step.name!r} is on {step.proxy!r} at this step (never added, or removed already)",
                    "name the toxic in add_toxic (name: ...) and remove it by that name, once",
                )
            self.toxics.discard((step.proxy, step.name))
        if isinstance(step, S.Heal):
            self.toxics.clear()

    def _slots(self, step: S.Step) -> None:
        """Start and kill change which slots run; a step that sends through slots needs them running."""
        if isinstance(step, S.Start):
            self.running.add(step.slot)
        if isinstance(step, S.Kill):
            self.running.discard(step.slot)
        for slot in [step.slot] if isinstance(step, S.Send) else list(getattr(step, "slots", ())):
            if slot not in self.running:
                raise Unworkable(
                    f"relay slot {slot!r} is not running at this step", "start it first (- start: {slot: ...})"
                )


def _check_numbers(step: S.Step) -> None:
    """Timings, attempt caps and race sizes a step could not run with."""
    for name in ("seconds", "timeout_s", "min_age_s", "retention_s", "wait_s"):
        value = getattr(step, name, None)
        if (
            value is not None
            and not (0 <= value <= LIMIT_S)
            or (name in ("seconds", "timeout_s", "wait_s") and value == 0)
        ):
            raise Unworkable(
                f"{name} = {value} is not a possible timing", f"use a number of seconds in (0, {LIMIT_S:g}]"
            )
    if isinstance(step, (S.Reprocess,)) and (step.max_attempts < 1 or step.parallel < 1):
        raise Unworkable("max_attempts and parallel must be at least 1", "use whole numbers of at least 1")
    if isinstance(step, S.Race) and not 1 <= step.n <= 256:
        raise Unworkable(f"race n = {step.n} is out of range", "race between 1 and 256 copies")
