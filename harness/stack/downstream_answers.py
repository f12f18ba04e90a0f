"""The PSP's answers about an applied transfer, as relay.toml's `[downstream.answers]` lays them out.

    [downstream.answers.applied]         # the transfer call's answer when it is applied (status.applied)
    id = "/id"                           # the PSP's transfer id ("tr_<n>"); default "/id"
    status = "/status"                   # default "/status"
    status_value = "executed"            # the value at `status`; default "executed"
    key = "/reference"                   # the service's key; default "/reference"
    [downstream.answers.found]           # the query's answer (200) for an applied transfer; default: as applied
    id = "/id"
    status = "/status"
    status_value = "executed"
    key = "/reference"
    amount = "/amount"                   # the transfer as the service sent it: optional, each where it goes
    payer = "/debtor_account"
    payee = "/creditor_account"
    copy = { "/currency" = "/currency" } # a pointer into the answer = a pointer into [downstream.example]

Every pointer of an answer is where the fixture puts that value (missing objects are made, a step "0" makes a
list); `copy`'s values point into the request and are checked against `[downstream.example]`. Left out, both
answers are {"id": "tr_<n>", "status": "executed", "reference": <key>}.
"""

from __future__ import annotations

from typing import Any

from relaychaos.fixtures.account_system.shape import ANSWER_ROLES, Answer, pointer_get, pointer_put

ANSWERS = ("applied", "found")
POINTERS = ("id", "status", "key", *ANSWER_ROLES)
KNOWN = (*POINTERS, "status_value", "copy")


def check(raw: Any, example: dict, problems: list[str]) -> tuple[Answer, Answer]:
    """The applied and found answers of `[downstream.answers]` (the found one as applied when left out); every
    problem appended to `problems`."""
    if raw is None:
        return Answer(), Answer()
    if not isinstance(raw, dict):
        problems.append("[downstream.answers] must be a table with [downstream.answers.applied] and/or .found")
        return Answer(), Answer()
    problems += [
        f"unknown key `{k}` in [downstream.answers] (known: {', '.join(ANSWERS)})" for k in raw if k not in ANSWERS
    ]
    applied = _answer(raw.get("applied"), example, "[downstream.answers.applied]", problems)
    found = (
        applied if raw.get("found") is None else _answer(raw["found"], example, "[downstream.answers.found]", problems)
    )
    return applied, found


def _answer(raw: Any, example: dict, what: str, problems: list[str]) -> Answer:
    if raw is None:
        return Answer()
    if not isinstance(raw, dict):
        problems.append(f"{what} must be a table of JSON pointers into the answer (id, status, key, ...)")
        return Answer()
    problems += [f"unknown key `{k}` in {what} (known: {', '.join(KNOWN)})" for k in raw if k not in KNOWN]
    default = Answer()
    at: dict[str, str] = {}
    for role in POINTERS:
        pointer = raw.get(role, getattr(default, role, None))
        if pointer is None:
            continue
        if _is_pointer(pointer):
            at[role] = pointer
        else:
            problems.append(
                f'{what} {role} must be a JSON pointer into the answer (starting with "/", e.g. "/{role}"), '
                f"got {pointer!r}"
            )
    value = raw.get("status_value", default.status_value)
    if not (isinstance(value, str) and value):
        problems.append(
            f'{what} status_value must be the word the PSP puts at `status` (e.g. "executed"), got {value!r}'
        )
        value = default.status_value
    copy = _copies(raw.get("copy", {}), example, f"{what} copy", problems)
    answer = Answer(
        at.get("id", default.id),
        at.get("status", default.status),
        value,
        at.get("key", default.key),
        {role: at[role] for role in ANSWER_ROLES if role in at},
        copy,
    )
    _fits(dict(at) | {f"copy {k!r}": k for k in copy}, what, problems)
    return answer


def _is_pointer(raw: Any) -> bool:
    return isinstance(raw, str) and raw.startswith("/") and len(raw) > 1


def _copies(raw: Any, example: dict, what: str, problems: list[str]) -> dict[str, str]:
    """`copy`: each pointer into the answer with the pointer into [downstream.example] whose value it gets."""
    if not isinstance(raw, dict):
        problems.append(f'{what} must be a table: "/where/in/the/answer" = "/where/in/the/request"')
        return {}
    out: dict[str, str] = {}
    for at, source in raw.items():
        if not _is_pointer(at):
            problems.append(f'{what} key {at!r} must be a JSON pointer into the answer (starting with "/")')
            continue
        if not isinstance(source, str):
            problems.append(f"{what} {at!r} must be a JSON pointer into [downstream.example], got {source!r}")
            continue
        try:
            pointer_get(example, source)
        except KeyError as e:
            problems.append(f"{what} {at!r} points at a field [downstream.example] does not have: {e.args[0]}")
            continue
        out[at] = source
    return out


def _fits(pointers: dict[str, str], what: str, problems: list[str]) -> None:
    """No two values at one place, none inside another, and every list index in order (an answer can be built)."""
    steps = {name: p[1:].split("/") for name, p in pointers.items()}
    names = sorted(steps)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            shorter, longer = sorted((steps[a], steps[b]), key=len)
            if longer[: len(shorter)] == shorter:
                problems.append(
                    f"{what} puts {a} at {pointers[a]!r} and {b} at {pointers[b]!r}: one would overwrite the "
                    "other; give each its own place in the answer"
                )
                return
    try:
        out: dict = {}
        for p in pointers.values():
            pointer_put(out, p, 0)
    except (IndexError, ValueError, TypeError):
        problems.append(
            f"{what} pointers {sorted(pointers.values())} cannot all be placed in one answer: a list's items "
            'start at "0" and follow in order, and a step into a list is a number'
        )
