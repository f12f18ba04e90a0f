"""How the channel speaks to a relay, and what its answers mean, per profile (relay.toml's `[api]`).

    speech = speech_for(manifest.profile.api)
    req = speech.request({"guid": "g1", "from": "alice", "to": "bob", "amount": 10})
    bad = speech.raw(b'{"guid": "g1", "from": "alice", "to": "bob"}', "g1")   # a malformed request
    code = speech.code(status, body)        # the contract's word for the answer

The course profile sends the transfer as the contract spells it (`POST /transfer`) and reads the
code from the answer's body. The idempotency-key profile sends the key in its header and the
transfer in the service's own body (the example with the transfer's values at the manifest's
pointers), and reads the answer's status as the IETF draft and Stripe define it (relaychaos.idempotency_key):
the history then holds the contract's words, so the checkers judge both profiles alike. The
history keeps the transfer as the contract spells it; the wire carries the service's shape.

A malformed course body (the scenarios' raw bodies, contract section 3) goes to a keyed service
malformed in the same way, in its shape: a body that is not a JSON object goes as it is, with
the key; a GUID the contract would refuse (missing, too long, not of its characters) becomes a
request without the key header (the draft's "If the `Idempotency-Key` request header is missing");
a missing field is left out of the service's body, and a value of the wrong type or range
(`"amount": true`, `0`, `1.5`, `"from": 7`) is put at the field's pointer as it is (Stripe: an
amount is "a positive integer representing how much to charge in the smallest currency unit").
Fields beyond the four go at the body's top level.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any, Protocol

from relaychaos import idempotency_key
from relaychaos.checkers.calls import GUID_FORM, TRANSFER_FIELDS
from relaychaos.fixtures.account_system.shape import pointer_get, pointer_set
from relaychaos.stack.api_profile import Api


@dataclass(frozen=True)
class HttpRequest:
    method: str
    path: str
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)


class Speech(Protocol):
    @property
    def health(self) -> str: ...

    def request(self, transfer: dict) -> HttpRequest: ...

    def raw(self, body: bytes, guid: str | None) -> HttpRequest: ...

    def code(self, status: int, body: bytes) -> str | None: ...


@dataclass(frozen=True)
class Course:
    """The relay contract's section 3: `POST /transfer`, the code in the answer's JSON body."""

    health: str = "/health"

    def request(self, transfer: dict) -> HttpRequest:
        return HttpRequest("POST", "/transfer", json.dumps(transfer).encode(), {"Content-Type": "application/json"})

    def raw(self, body: bytes, guid: str | None) -> HttpRequest:
        """The body as it is, to `POST /transfer`."""
        return HttpRequest("POST", "/transfer", body)

    def code(self, status: int, body: bytes) -> str | None:
        try:
            data = json.loads(body.decode(errors="replace"))
        except ValueError:
            return None
        code = data.get("code") if isinstance(data, dict) else None
        return code if isinstance(code, str) else None


@dataclass(frozen=True)
class Keyed:
    """The idempotency-key profile: the key in a header, the service's body, the answer's status read by
    relaychaos.idempotency_key's table."""

    api: Api

    @property
    def health(self) -> str:
        return self.api.health

    def request(self, transfer: dict) -> HttpRequest:
        body = self.api.request_body(transfer["amount"], transfer["from"], transfer["to"])
        headers = {"Content-Type": "application/json", self.api.key_header: str(transfer["guid"])}
        return HttpRequest(self.api.method, self.api.path, json.dumps(body).encode(), headers)

    def raw(self, body: bytes, guid: str | None) -> HttpRequest:
        """A course body in the service's shape, malformed as it is (see the module doc); `guid`: the run's GUID
        for the step, the key of a body that is not a JSON object."""
        headers = {"Content-Type": "application/json"}
        try:
            data = json.loads(body)
        except ValueError:
            data = None
        if not isinstance(data, dict):
            if guid is not None:
                headers[self.api.key_header] = guid
            return HttpRequest(self.api.method, self.api.path, body, headers)
        key = data.get("guid")
        if isinstance(key, str) and GUID_FORM.fullmatch(key):
            headers[self.api.key_header] = key
        shaped = copy.deepcopy(self.api.body)
        for role, name in (("amount", "amount"), ("payer", "from"), ("payee", "to")):
            if name in data:
                pointer_set(shaped, self.api.fields[role], data[name])
            else:
                _remove(shaped, self.api.fields[role])
        for name in sorted(set(data) - set(TRANSFER_FIELDS)):
            shaped[name] = data[name]
        return HttpRequest(self.api.method, self.api.path, json.dumps(shaped).encode(), headers)

    def code(self, status: int, body: bytes) -> str | None:
        return idempotency_key.code(status)


def _remove(doc: Any, pointer: str) -> None:
    """Delete the member or item at an RFC 6901 pointer of `doc` (checked against the example it points into)."""
    parent, _, last = pointer.rpartition("/")
    holder = pointer_get(doc, parent)
    step = last.replace("~1", "/").replace("~0", "~")
    if isinstance(holder, list):
        del holder[int(step)]
    else:
        holder.pop(step, None)


def speech_for(api: Api) -> Speech:
    return Course() if api.profile == "course" else Keyed(api)
