"""How the channel speaks to a relay, and what its answers mean, per profile (relay.toml's `[api]`).

    speech = speech_for(manifest.profile.api)
    req = speech.request({"guid": "g1", "from": "alice", "to": "bob", "amount": 10})
    code = speech.code(status, body)        # the contract's word for the answer

The course profile sends the transfer as the contract spells it (`POST /transfer`) and reads the
code from the answer's body. The idempotency-key profile sends the key in its header and the
transfer in the service's own body (the example with the transfer's values at the manifest's
pointers), and reads the answer's status as the IETF draft and Stripe define it (relaychaos.idempotency_key):
the history then holds the contract's words, so the checkers judge both profiles alike. The
history keeps the transfer as the contract spells it; the wire carries the service's shape.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Protocol

from relaychaos import idempotency_key
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

    def code(self, status: int, body: bytes) -> str | None: ...


@dataclass(frozen=True)
class Course:
    """The relay contract's section 3: `POST /transfer`, the code in the answer's JSON body."""

    health: str = "/health"

    def request(self, transfer: dict) -> HttpRequest:
        return HttpRequest("POST", "/transfer", json.dumps(transfer).encode(), {"Content-Type": "application/json"})

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

    def code(self, status: int, body: bytes) -> str | None:
        return idempotency_key.code(status)


def speech_for(api: Api) -> Speech:
    return Course() if api.profile == "course" else Keyed(api)
