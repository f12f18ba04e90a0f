"""Landing claims: what must happen in a run for its scenario to have tested anything.

A scenario declares its claims beside its description (`Scenario.claims`), as typed records over
its GUID labels and its step numbers (1-based, as the history numbers them):

    claims=(KilledBeforeCall("g1", step=4), Queried("g1", found=False))

The runner records them in the history's header (`as_dict`), so a saved history is judged
again from itself alone (relaychaos.checkers.landing). After the run each claim is LANDED,
MISSED or UNKNOWN, with the events that show it; a scenario with a claim not LANDED is
"not exercised", never "passed". Every wait step (wait_calls, wait_row) also claims that what
it waited for happened: a wait that gave up is a MISSED claim without being declared.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields


@dataclass(frozen=True)
class KilledBeforeCall:
    """The kill of `step` met the GUID between claim and call: its row was seen, the channel's send was in
    flight, and the account system had received no call of it."""

    guid: str
    step: int

    def text(self) -> str:
        return (
            f"the kill (step {self.step}) came after {self.guid}'s ledger row was seen and before the account "
            f"system received any call of {self.guid}, while the channel's send was in flight"
        )


@dataclass(frozen=True)
class KilledAfterCall:
    """The kill of `step` met the GUID between the account system's answer and DONE."""

    guid: str
    step: int

    def text(self) -> str:
        return (
            f"the kill (step {self.step}) came after the account system answered {self.guid}'s call and before "
            f"the relay wrote DONE or answered the channel"
        )


@dataclass(frozen=True)
class SentWhileInFlight:
    """Every channel send of the GUID made by `steps` reached the relay while the GUID's first account call was
    in flight (after it was received when `after_call`, else merely before it was answered)."""

    guid: str
    steps: tuple[int, ...]
    after_call: bool = True

    def text(self) -> str:
        steps = ", ".join(str(s) for s in self.steps)
        when = "after the account system received its first call and " if self.after_call else ""
        return f"every send of {self.guid} in step {steps} reached the relay {when}before that call was answered"


@dataclass(frozen=True)
class HeldThrough:
    """The GUID's first account call was received before the batch run of `step` started and answered after it
    ended: the batch met a transfer in flight."""

    guid: str
    step: int

    def text(self) -> str:
        return f"{self.guid}'s account call was in flight (held) from before the batch of step {self.step} to after it"


@dataclass(frozen=True)
class CallDuringFault:
    """The account system received a call of the GUID while the fault set by `step` was in force."""

    guid: str
    step: int

    def text(self) -> str:
        return f"the account system received a call of {self.guid} while the fault of step {self.step} was in force"


@dataclass(frozen=True)
class NoCallDuringFault:
    """The channel sent the GUID while the fault set by `step` was in force, and no call of it reached the
    account system then (the request was refused or cut on its way)."""

    guid: str
    step: int

    def text(self) -> str:
        return (
            f"the channel sent {self.guid} while the fault of step {self.step} was in force and no call of it "
            "reached the account system then"
        )


@dataclass(frozen=True)
class AnswerLost:
    """The channel's send of the GUID in `step` got no answer, though the account system had answered its call
    before the channel gave up (the relay's answer was lost on its way back)."""

    guid: str
    step: int

    def text(self) -> str:
        return (
            f"the channel's send of {self.guid} in step {self.step} got no answer though the account system had "
            "answered the call"
        )


@dataclass(frozen=True)
class AccountAnswered:
    """The account system answered a call of the GUID with `code`."""

    guid: str
    code: str

    def text(self) -> str:
        return f"the account system answered a call of {self.guid} with {self.code}"


@dataclass(frozen=True)
class Queried:
    """The account system's query API was asked about the GUID (during the batch run of `step`, when given) and
    answered found or not found as `found` says (either, when None)."""

    guid: str
    found: bool | None = None
    step: int | None = None

    def text(self) -> str:
        answer = {None: "", True: " and found it", False: " and did not find it (404)"}[self.found]
        during = f" during the batch of step {self.step}" if self.step is not None else ""
        return f"a query about {self.guid} reached the account system{during}{answer}"


@dataclass(frozen=True)
class BatchMet:
    """When the batch run of `step` started, each GUID's row had one of `statuses` and (resolve, purge) was
    older than the run's --min-age or --retention (`older`), or younger (`older=False`); `older=None`: its
    age does not matter (reprocess's rows), so a ledger that keeps no times can still show it."""

    step: int
    guids: tuple[str, ...]
    statuses: tuple[str, ...]
    older: bool | None = True

    def text(self) -> str:
        age = {True: " and older than its age argument", False: " and younger than its age argument", None: ""}
        return (
            f"when the batch of step {self.step} started, the rows of {', '.join(self.guids)} were "
            f"{' or '.join(self.statuses)}{age[self.older]}"
        )


@dataclass(frozen=True)
class AttemptsAtCap:
    """When the reprocess run of `step` started, the GUID's row had reached that run's --max-attempts."""

    guid: str
    step: int

    def text(self) -> str:
        return f"when reprocess ran in step {self.step}, {self.guid}'s row had reached the attempt cap"


Claim = (
    KilledBeforeCall
    | KilledAfterCall
    | SentWhileInFlight
    | HeldThrough
    | CallDuringFault
    | NoCallDuringFault
    | AnswerLost
    | AccountAnswered
    | Queried
    | BatchMet
    | AttemptsAtCap
)

CLAIM_KINDS: dict[str, type] = {
    "killed_before_call": KilledBeforeCall,
    "killed_after_call": KilledAfterCall,
    "sent_while_in_flight": SentWhileInFlight,
    "held_through": HeldThrough,
    "call_during_fault": CallDuringFault,
    "no_call_during_fault": NoCallDuringFault,
    "answer_lost": AnswerLost,
    "account_answered": AccountAnswered,
    "queried": Queried,
    "batch_met": BatchMet,
    "attempts_at_cap": AttemptsAtCap,
}
KIND_OF = {cls: kind for kind, cls in CLAIM_KINDS.items()}


def as_dict(claim: Claim) -> dict:
    """The claim as the history's header keeps it: `{"claim": kind, **fields}`."""
    return {"claim": KIND_OF[type(claim)], **asdict(claim)}


def from_dict(data: dict) -> Claim:
    """The claim a header (or a scenario file) names; ValueError saying what is wrong."""
    kind = data.get("claim")
    cls = CLAIM_KINDS.get(kind)  # type: ignore[arg-type]
    if cls is None:
        raise ValueError(f"unknown claim {kind!r}; the claims are {', '.join(CLAIM_KINDS)}")
    names = {f.name for f in fields(cls)}
    extra = sorted(set(data) - names - {"claim"})
    if extra:
        raise ValueError(f"claim {kind!r} has no field {', '.join(extra)}; its fields are {', '.join(sorted(names))}")
    values = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items() if k != "claim"}
    try:
        return cls(**values)
    except TypeError as e:
        raise ValueError(f"claim {kind!r}: {e}") from None


def steps_of(claim: Claim) -> tuple[int, ...]:
    """The step numbers a claim names."""
    step = getattr(claim, "step", None)
    return tuple(getattr(claim, "steps", ())) + ((step,) if step is not None else ())


def guids_of(claim: Claim) -> tuple[str, ...]:
    """The GUID labels a claim names."""
    return tuple(getattr(claim, "guids", ())) + ((claim.guid,) if hasattr(claim, "guid") else ())
