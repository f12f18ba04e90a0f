"""The steps a scenario is made of: plain frozen dataclasses, one per thing the harness can do.

A scenario is data: an ordered tuple of these steps (written in Python, drawn by
Hypothesis, or loaded from a scenario file). GUIDs in steps are *labels* ("g1");
the runner maps each label to a GUID unique to the run. `STEP_KINDS` maps the
name used in scenario files to the class.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields

from relaychaos.checkers import claims as C
from relaychaos.tolerances import DEFAULT_ACCOUNT_TIMEOUT_MS

PROXIES_HELP = "'account' (relay → account system) or 'hub-a' / 'hub-b' (channel → relay slot)"


GUID_PLACEHOLDER = "${guid}"  # in a Send's raw body: replaced by the run's GUID for the step's label


@dataclass(frozen=True)
class Send:
    """The channel sends one transfer (resending the same GUID up to `attempts` times)."""

    guid: str
    amount: int = 10
    src: str = "alice"
    dst: str = "bob"
    slot: str = "a"
    attempts: int = 1
    background: bool = False  # do not wait for the answer (see AwaitSends)
    via_hub: bool = True
    raw: str | None = None  # send this body verbatim instead (malformed requests); ${guid} = the label's GUID
    timeout_s: float | None = None  # the channel's own time-out; default: ACCOUNT_TIMEOUT_MS + 1.5 s
    careless: bool = False  # a careless client: mints a new GUID for each retry (client-side incident)


@dataclass(frozen=True)
class Race:
    """N copies of one transfer released together, each on its own connection, split over slots.

    They go straight to the relays (not through the hub proxies), so that they arrive together.
    """

    guid: str
    n: int = 32
    amount: int = 10
    src: str = "alice"
    dst: str = "bob"
    slots: tuple[str, ...] = ("a",)
    via_hub: bool = False


@dataclass(frozen=True)
class AddToxic:
    """A Toxiproxy toxic on a proxy, toxicity 1.0 (see relaychaos.stack.toxiproxy_control for the kinds)."""

    proxy: str
    kind: str
    stream: str = "downstream"
    name: str | None = None
    attributes: dict = field(default_factory=dict)

    @property
    def delay_s(self) -> float:
        """How long it can delay data: a latency toxic's latency plus its jitter; 0 for the other kinds."""
        if self.kind != "latency":
            return 0.0
        return (float(self.attributes.get("latency", 0)) + float(self.attributes.get("jitter", 0))) / 1000


@dataclass(frozen=True)
class RemoveToxic:
    proxy: str
    name: str


@dataclass(frozen=True)
class DisableProxy:
    """The proxy stops listening: new connections are refused, live ones dropped."""

    proxy: str


@dataclass(frozen=True)
class EnableProxy:
    proxy: str


@dataclass(frozen=True)
class ServerFault:
    """Account-system faults: processing delay, E500 for GUIDs (every call, or the next call of each: `e500_once`) or
    the next N calls, GUIDs held until released (one call of a GUID at a time: a second call of it while the first
    is held, the double call the hold exposes, is processed at once)."""

    delay_ms: float | None = None
    e500_guids: tuple[str, ...] = ()
    e500_next: int | None = None
    hold_guids: tuple[str, ...] = ()
    e500_once: tuple[str, ...] = ()


@dataclass(frozen=True)
class Release:
    """Let held GUIDs (all, when none are named) be processed by the account system."""

    guids: tuple[str, ...] | None = None


@dataclass(frozen=True)
class WaitCalls:
    """Wait until the account system has received `count` calls for the GUID (or the time-out passes)."""

    guid: str
    count: int = 1
    timeout_s: float = 5.0


@dataclass(frozen=True)
class WaitRow:
    """Wait until the ledger shows the GUID's row with this status (or the time-out passes)."""

    guid: str
    status: str = "SENT"
    timeout_s: float = 5.0


@dataclass(frozen=True)
class Kill:
    """SIGKILL the serve process in this slot."""

    slot: str = "a"


@dataclass(frozen=True)
class Start:
    """Start serve in this slot on the same ledger (a restart after Kill, or a second relay)."""

    slot: str = "a"


@dataclass(frozen=True)
class Resolve:
    """Run resolve with --min-age `min_age_s`; `since` a mark: the time since that mark, waiting first until
    `min_age_s` has passed since it (Mark)."""

    min_age_s: float
    since: str | None = None


@dataclass(frozen=True)
class Reprocess:
    """Run reprocess; `parallel` runs at once."""

    max_attempts: int
    parallel: int = 1


@dataclass(frozen=True)
class Purge:
    """Run purge with --retention `retention_s`; `since` a mark: the time since that mark, waiting first until
    `retention_s` has passed since it (Mark)."""

    retention_s: float
    since: str | None = None


@dataclass(frozen=True)
class Mark:
    """Let `wait_s` seconds pass and name their middle: a resolve or purge `since` this mark takes the time since
    then as its age, so that the rows changed before the mark are older than it and those changed after are younger
    by `wait_s` / 2 at least (an imported night's rows as old, at its batch runs, as they were in production,
    without its hours). When no step before the mark may change a row, a batch run since it does not wait
    (relaychaos.engine.operations.first_marks)."""

    name: str
    wait_s: float


@dataclass(frozen=True)
class Wait:
    """Let real time pass: for ages (min-age, retention), never to order events."""

    seconds: float


@dataclass(frozen=True)
class AwaitSends:
    """Wait for every background send to have its answer (or its time-out)."""


@dataclass(frozen=True)
class Heal:
    """Remove every toxic, enable every proxy, clear the account system's faults (releasing held GUIDs)."""


Step = (
    Send
    | Race
    | AddToxic
    | RemoveToxic
    | DisableProxy
    | EnableProxy
    | ServerFault
    | Release
    | WaitCalls
    | WaitRow
    | Kill
    | Start
    | Resolve
    | Reprocess
    | Purge
    | Mark
    | Wait
    | AwaitSends
    | Heal
)

STEP_KINDS: dict[str, type] = {
    "send": Send,
    "race": Race,
    "add_toxic": AddToxic,
    "remove_toxic": RemoveToxic,
    "disable_proxy": DisableProxy,
    "enable_proxy": EnableProxy,
    "server_fault": ServerFault,
    "release": Release,
    "wait_calls": WaitCalls,
    "wait_row": WaitRow,
    "kill": Kill,
    "start": Start,
    "resolve": Resolve,
    "reprocess": Reprocess,
    "purge": Purge,
    "mark": Mark,
    "wait": Wait,
    "await_sends": AwaitSends,
    "heal": Heal,
}
KIND_OF = {cls: kind for kind, cls in STEP_KINDS.items()}


def kind(step: Step) -> str:
    return KIND_OF[type(step)]


_DEFAULTS: dict[type, tuple] = {}  # step class -> ((field name, default), ...), read once per class


def changed_fields(step: Step) -> dict[str, object]:
    """The step's fields that differ from their defaults, by name: what a description or a file shows."""
    defaults = _DEFAULTS.get(type(step))
    if defaults is None:
        defaults = _DEFAULTS[type(step)] = tuple(
            (
                f.name,
                f.default
                if f.default is not MISSING
                else (f.default_factory() if f.default_factory is not MISSING else MISSING),
            )
            for f in fields(step)
        )
    return {name: value for name, default in defaults if (value := getattr(step, name)) != default}


def describe(step: Step) -> str:
    """`send guid=g1 amount=20`: the kind and the fields that differ from their defaults."""
    return " ".join([kind(step)] + [f"{name}={value}" for name, value in changed_fields(step).items()])


def guids_of(step: Step) -> list[str]:
    """The GUID labels a step names."""
    out = [step.guid] if hasattr(step, "guid") else []
    for attr in ("e500_guids", "hold_guids", "e500_once", "guids"):
        out += list(getattr(step, attr, None) or ())
    return out


@dataclass(frozen=True)
class Scenario:
    """A named, ordered list of steps; the runner adds the final heal-and-converge phase."""

    name: str
    steps: tuple
    family: str = "basic"
    description: str = ""
    accounts: dict = field(default_factory=lambda: {"alice": 1000, "bob": 1000})
    account_timeout_ms: int = DEFAULT_ACCOUNT_TIMEOUT_MS
    max_attempts: int = 3  # the attempt cap of the final reprocess
    relays: tuple[str, ...] = ("a",)  # slots started before the first step
    batch_timeout_s: float = 30.0  # a batch command still running then is killed (and that is a verdict)
    ledger_lock_delay_ms: int = 0  # every file lock the relay's commands take on the ledger is held this long, as
    # on slow shared storage: a check-then-insert's window grows from microseconds to this (sandboxed runs only);
    # a PostgreSQL ledger's answers are delayed as long (a latency toxic on its proxy)
    covers: tuple[str, ...] = ()  # the contract clauses (relaychaos.contract ids) this scenario exercises
    incident: dict = field(default_factory=dict)  # imported from production: guids (label -> production GUID),
    # broke (rule -> labels), answers (label -> what the channel got) -- relaychaos.incidents
    claims: tuple = ()  # what must happen for the run to have tested anything (relaychaos.checkers.claims)

    def __post_init__(self) -> None:
        labels = {label for step in self.steps for label in guids_of(step)}
        for claim in self.claims:
            if type(claim) not in C.KIND_OF:
                raise TypeError(f"scenario '{self.name}': {claim!r} is not a claim (relaychaos.checkers.claims)")
            bad = [n for n in C.steps_of(claim) if not 1 <= n <= len(self.steps)]
            unknown = [g for g in C.guids_of(claim) if g not in labels]
            if bad or unknown:
                raise ValueError(
                    f"scenario '{self.name}': claim {C.KIND_OF[type(claim)]} names "
                    + "; ".join(
                        ([f"step {bad} (it has steps 1 to {len(self.steps)})"] if bad else [])
                        + ([f"GUID {unknown}, which no step sends"] if unknown else [])
                    )
                )

    @property
    def batch_commands(self) -> frozenset[str]:
        """The batch commands its steps run (resolve, reprocess, purge): a relay without one cannot run it."""
        kinds = {Resolve: "resolve", Reprocess: "reprocess", Purge: "purge"}
        return frozenset(kinds[type(step)] for step in self.steps if type(step) in kinds)
