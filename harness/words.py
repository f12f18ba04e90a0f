"""A profile's own words, for everything a person reads: reports, timelines, grades, verdicts.

    words = Words.of(header.profile, header.commands)
    words.key                         # "GUID" for the course, "key" for an idempotency-key service
    words.answer(504, "E901")         # "HTTP 504 code E901" / "HTTP 504 (unknown: the payment may or may not ...)"
    words.command("resolve")          # "resolve" / "payments reconcile" (the service's own command)

The history keeps the contract's words (its codes, its command names), so every rule judges both
profiles alike; only what is shown changes. A course relay reads as the contract speaks; a keyed
service as the IETF Idempotency-Key draft and its own manifest do: its key, its HTTP statuses, its
PSP, its batch commands.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from relaychaos import idempotency_key

COURSE_PROFILE = "course"
# What a keyed service's answer means, by the contract's word the channel read it as (idempotency_key.ANSWERS).
_KEYED_MEANING = {word: meaning for _, _, word, meaning in idempotency_key.ANSWERS}
# What the PSP's answer means, by the contract's word the account system fixture records for it.
_PSP_MEANING = {
    "0000": "executed",
    "B201": "refused: insufficient funds",
    "B202": "refused: unknown account",
    "B203": "refused: invalid amount",
    "E500": "internal error, nothing executed",
}


@dataclass(frozen=True)
class Words:
    """How one profile names what the history records in the contract's words."""

    profile: str = COURSE_PROFILE
    commands: Mapping[str, str] = field(default_factory=dict)  # a command's or flag's contract name -> the service's

    @classmethod
    def of(cls, profile: object = None, commands: object = None) -> Words:
        """The words of a profile as a history header records it (None or unset: the course's)."""
        name = profile if isinstance(profile, str) and profile else COURSE_PROFILE
        own = {str(k): str(v) for k, v in commands.items()} if isinstance(commands, Mapping) else {}
        return cls(name, own)

    @property
    def course(self) -> bool:
        return self.profile == COURSE_PROFILE

    @property
    def key(self) -> str:
        """What identifies one payment: the contract's GUID, a keyed service's idempotency key."""
        return "GUID" if self.course else "key"

    @property
    def relay(self) -> str:
        return "relay" if self.course else "service"

    @property
    def downstream(self) -> str:
        """What the relay calls: the course's account system, a keyed service's PSP."""
        return "account system" if self.course else "PSP"

    @property
    def in_flight(self) -> str:
        """The answer to a duplicate of a request still in flight."""
        return "E903" if self.course else "409"

    def answer(self, status: object, code: object) -> str:
        """An answer the channel got: `HTTP 504 code E901`, or a keyed service's `HTTP 504 (unknown: ...)`."""
        if self.course:
            return f"HTTP {status} code {code}"
        meaning = _KEYED_MEANING.get(str(code)) if code is not None else None
        return f"HTTP {status}" + (f" ({meaning})" if meaning else "")

    def downstream_answer(self, code: object) -> str:
        """What the account system or PSP answered, by the contract's word recorded for it."""
        if code is None:
            return "nothing"
        if self.course:
            return str(code)
        return _PSP_MEANING.get(str(code), str(code))

    def say(self, text: str) -> str:
        """A sentence in the contract's words (a verdict's, a rule's) in this profile's: a keyed service's key,
        PSP, service, HTTP statuses and its own batch commands; a course relay's unchanged."""
        return text if self.course else _say(self, text)

    def command(self, name: str) -> str:
        """A batch command (resolve, reprocess, purge) or its flag (--min-age, ...) by the contract's name, as the
        relay calls it."""
        return self.commands.get(name, name)


CONTRACT_FLAGS = {"resolve": "--min-age", "reprocess": "--max-attempts", "purge": "--retention"}


def own_commands(
    profile: str, commands: Mapping[str, Sequence[str]], arguments: Mapping[str, Sequence[str]] | None = None
) -> dict[str, str]:
    """A keyed service's batch commands and their flags in its own words: `payments reconcile` for resolve =
    ["./bin/payments", "reconcile"] (the program's name and its words before the first flag), and `--older-than`
    for `--min-age` when [arguments] resolve = ["--older-than", "{ms}ms"]; none for a course relay, whose commands
    are the contract's."""
    if profile == COURSE_PROFILE:
        return {}
    out = {}
    for name, argv in commands.items():
        if name == "serve" or not argv:
            continue
        words = [argv[0].rsplit("/", 1)[-1], *_until_flag(argv[1:])]
        out[name] = " ".join(words)
        flag = next((a for a in (arguments or {}).get(name, ()) if a.startswith("-")), None)
        if name in CONTRACT_FLAGS and flag and flag != CONTRACT_FLAGS[name]:
            out[CONTRACT_FLAGS[name]] = flag
    return out


def _until_flag(args: Sequence[str]) -> list[str]:
    out = []
    for a in args:
        if a.startswith("-"):
            break
        out.append(a)
    return out


# A keyed service's words for the contract's, in what a rule says happened (Words.say): whole words only, so a
# rule's id (`resolve-min-age`), a file (`relay.toml`) or a JSON key stays as it is.
_KEYED_SAYINGS = (
    (r"\bGUIDs\b", "keys"),
    (r"\bGUID\b", "key"),
    (r"\baccount system's\b", "PSP's"),
    (r"\baccount system\b", "PSP"),
    (r"\baccount calls\b", "PSP calls"),
    (r"\baccount call\b", "PSP call"),
    (r"\brelays\b(?![-_./])", "services"),
    (r"\brelay's\b", "service's"),
    (r"(?<![-_./])\brelay\b(?![-_./])", "service"),
    (r"\bE903\b", "409"),
    (r"\bE904\b", "422"),
    (r"\bE901\b", "5xx"),
    (r"\bE400\b", "400"),
    (r"\b0000\b", "2xx"),
)
_KEYED_PATTERNS = tuple((re.compile(p), word) for p, word in _KEYED_SAYINGS)
_COMMAND = re.compile(r"(?<![-_./`])\b(resolve|reprocess|purge)\b(?![-_./])")
_FLAG = re.compile(r"(?<![-\w])(--min-age|--max-attempts|--retention)\b(?!-)")


def _say(words: Words, text: str) -> str:
    for pattern, word in _KEYED_PATTERNS:
        text = pattern.sub(word, text)
    text = _FLAG.sub(lambda m: words.command(m.group(1)), text)
    return _COMMAND.sub(lambda m: words.command(m.group(1)), text)
