"""The stateful chaos machine: Hypothesis draws sequences of the scenario engine's steps.

Every rule is one or a few steps of relaychaos.engine.steps, run by the same Runner as
the named scenarios, so a failing example is a scenario and is written out as a
scenario file. Invariants (no second account call, no second debit, money
conserved, ledger rows moving only along the contract's transitions) are checked
after every step, so a story stops at the step that broke one and reports what
that step showed, not what later steps made of it (a regrade's race may let a
different number of copies through, and later steps differ with it); the full
rule book after the final heal and convergence, in teardown.

Examples share the relay processes and the ledger file (restarting them for
each example would cost more than the example), and are isolated by their
GUIDs (each run has its own tag) and by a fresh account-system state.
The harness draws every random choice; every toxic has toxicity 1.0.

Shrinking has a time budget (Context.budget, relaychaos.engine.shrink_budget): every rule
records itself in the example's trace, and past the budget an example is "dry": it runs
nothing, and at its end fails from the record or is rejected. Context.stop, called as each example
starts, may end the whole run (a named scenario has already shown a bug).
"""

from __future__ import annotations

import functools
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from hypothesis import strategies as st
from hypothesis.stateful import Bundle, MultipleResults, RuleBasedStateMachine, invariant, multiple, precondition, rule

from relaychaos import checkers, options
from relaychaos.checkers.faults_met import faults_met
from relaychaos.checkers.verdict import Verdict
from relaychaos.engine import scenario_file
from relaychaos.engine import steps as S
from relaychaos.engine.final_phase import safe_min_age_s
from relaychaos.engine.runner import Runner
from relaychaos.engine.shrink_budget import Remembered
from relaychaos.history import History
from relaychaos.recorder import Recorder
from relaychaos.reports.incident import report
from relaychaos.scenarios.machine_context import Context
from relaychaos.scenarios.machine_draws import load_every_module

TIMEOUT_MS = 200
R = TypeVar("R")
Transfer = tuple[str, int]  # a transfer drawn: its label, its amount
ACCOUNTS = {"alice": 10_000, "bob": 10_000}
FAULTS: dict[str, S.Step] = {
    "drop-answer": S.AddToxic("account", "timeout", name="drop-answer", attributes={"timeout": 0}),
    "drop-request": S.AddToxic(
        "account", "limit_data", stream="upstream", name="drop-request", attributes={"bytes": 16}
    ),
    "reset-after-send": S.AddToxic("account", "limit_data", name="reset-after-send", attributes={"bytes": 1}),
    "slow-answer": S.AddToxic("account", "latency", name="slow-answer", attributes={"latency": TIMEOUT_MS + 100}),
    "account-down": S.DisableProxy("account"),
    "channel-loses-answer": S.AddToxic("hub-a", "timeout", name="channel-loses-answer", attributes={"timeout": 0}),
    "account-e500": S.ServerFault(e500_next=1),
}
# Every example's scenario (its steps are drawn as it runs)...
PLAN = S.Scenario(
    "stateful",
    steps=(),
    family="stateful",
    account_timeout_ms=TIMEOUT_MS,
    accounts=ACCOUNTS,
    description="steps drawn by Hypothesis",
)
# ...and the --min-age its resolve rule uses: safe for the longest delay any rule injects.
MIN_AGE_S = safe_min_age_s(S.Scenario("plan", steps=tuple(FAULTS.values()), account_timeout_ms=TIMEOUT_MS))


def traced(rule_function: Callable[..., R]) -> Callable[..., R]:
    """A rule that records itself (its name and arguments) in the example's trace, and whose error is
    remembered as the failure of the story so far."""

    @functools.wraps(rule_function)
    def run(self: ChaosMachine, **arguments: object) -> R:
        self.trace.append((rule_function.__name__, tuple(sorted(arguments.items()))))
        self._check_record()
        try:
            return rule_function(self, **arguments)
        except Exception as e:
            if not self.dry and not self.failed:
                self.failed = True
                self.context.budget.remember(self.trace, e, at_end=False)
            raise

    return run


class ChaosMachine(RuleBasedStateMachine):
    """Random stories over the scenario engine's steps; see the module doc."""

    context: Context  # set by whoever runs the machine (bind())

    transfers = Bundle("transfers")

    def __init__(self) -> None:
        super().__init__()
        ctx = self.context
        if ctx.stop is not None:
            ctx.stop()
        self.trace: list = []  # (rule, arguments) as Hypothesis drew them
        self.dry = ctx.budget.spent()  # past the shrinking budget: decided from the record, nothing runs
        self.steps: list = []
        self.active: set[str] = set()
        self.retired: set[str] = set()
        self.labels = 0
        self.second = False
        self.failed = False
        if self.dry:
            return
        ctx.examples += 1
        self.began = time.monotonic()
        stack = ctx.stack
        try:
            stack.reset_account(ACCOUNTS)
            self.runner = Runner(stack, PLAN, Recorder())  # a fresh recorder: each example has its own history
            ctx.last_history = self.runner.history
            self.runner.begin()
        except Exception as e:
            ctx.budget.remember((), e, at_end=False)
            raise

    # -- helpers -----------------------------------------------------------------------
    def _do(self, *steps: S.Step) -> None:
        if self.dry:
            self.steps += steps
            return
        for step in steps:
            self.context.note(f"step: {S.kind(step)}")
            self.steps.append(step)
            self.runner.do(step, len(self.steps))

    def _label(self) -> str:
        self.labels += 1
        return f"t{self.labels}"

    def _timeout(self) -> float | None:
        return 0.25 if "channel-loses-answer" in self.active else None

    def _slots(self) -> tuple[str, ...]:
        return ("a", "b") if self.second else ("a",)

    # -- rules -------------------------------------------------------------------------
    @rule(target=transfers, amount=st.integers(1, 100))
    @traced
    def new_transfer(self, amount: int) -> Transfer:
        label = self._label()
        self._do(S.Send(label, amount=amount, timeout_s=self._timeout()))
        return (label, amount)

    @rule(t=transfers)
    @traced
    def resend(self, t: Transfer) -> None:
        if t[0] not in self.retired:
            self._do(S.Send(t[0], amount=t[1], timeout_s=self._timeout()))

    # Races are always 32 wide: a narrower race that shrinking would prefer lets a real bug slip by
    # on the replay, and a flaky replay is a wrong verdict.
    @rule(target=transfers, amount=st.integers(1, 100))
    @traced
    def race_new(self, amount: int) -> Transfer:
        label = self._label()
        self._do(S.Race(label, n=32, amount=amount, slots=self._slots()))
        return (label, amount)

    @rule(t=transfers)
    @traced
    def race_resend(self, t: Transfer) -> None:
        if t[0] not in self.retired:
            self._do(S.Race(t[0], n=32, amount=t[1], slots=self._slots()))

    @rule(
        target=transfers,
        name=st.sampled_from(sorted(FAULTS) + ["kill-relay", "kill-mid-transfer"]),
        amount=st.integers(1, 100),
    )
    @traced
    def fault(self, name: str, amount: int) -> Transfer | MultipleResults[Transfer]:
        """A network or server fault (healed by heal) and a new transfer sent through it, or SIGKILL of relay a
        and a restart on the same ledger, optionally while a new transfer is held at the account system."""
        if not self.dry:
            self.context.note(f"fault: {name}")
        if name == "kill-relay":
            self._do(S.Kill("a"), S.Start("a"))
        elif name == "kill-mid-transfer" and not self.active & {"account-down", "drop-request"}:
            label = self._label()
            self._do(
                S.ServerFault(hold_guids=(label,)),
                S.Send(label, amount=amount, background=True),
                S.WaitCalls(label, timeout_s=1.0),
                S.Kill("a"),
                S.Start("a"),
            )
            self.active.add("held")
            return (label, amount)
        elif name in FAULTS and name not in self.active:  # and a new transfer that meets it
            self.active.add(name)
            label = self._label()
            self._do(FAULTS[name], S.Send(label, amount=amount, timeout_s=self._timeout()))
            return (label, amount)
        return multiple()

    @rule()
    @traced
    def second_relay(self) -> None:
        """A second relay on the same ledger; races are split over both from then on.

        Relay b may still be up from an earlier example (it is reused, not restarted): the rule
        is then only recorded, so that a written file starts it too.
        """
        if self.second:
            return
        self.second = True
        if self.dry:
            self.steps.append(S.Start("b"))
        elif "b" in self.runner.stack.supervisor.relays:
            self.context.note("step: start")
            self.steps.append(S.Start("b"))
        else:
            self._do(S.Start("b"))

    @rule()
    @traced
    def heal(self) -> None:
        self.active.clear()
        self._do(S.Heal())

    @precondition(lambda self: {"resolve", "reprocess", "purge"} <= set(self.context.stack.manifest.commands))
    @rule(command=st.sampled_from(["resolve", "reprocess", "purge"]))
    @traced
    def batch(self, command: str) -> None:
        """One batch run, with the arguments a careful operator uses."""
        if command == "resolve":
            if "held" in self.active:  # a held call is in transit: resolve must not meet it (contract §6)
                self.active.discard("held")
                self._do(S.Release())
            self._do(S.Resolve(MIN_AGE_S))
        elif command == "reprocess":
            self._do(S.Reprocess(max_attempts=3))
        else:
            self._do(S.Purge(retention_s=0))
            if self.dry:
                return
            rows = self.runner.rows()
            # A purged GUID is forgotten by design: the channel must not resend it (its retention is over).
            self.retired |= {label for label, guid in self.runner.guids.items() if guid not in rows}

    @rule(seconds=st.sampled_from([0.01, 0.05]))
    @traced
    def wait(self, seconds: float) -> None:
        self._do(S.Wait(seconds))

    # -- checks ------------------------------------------------------------------------
    def _check_record(self) -> None:
        """A story that reaches a remembered failure fails here as it did (dry or not)."""
        known = self.context.budget.failing_here(self.trace)
        if known is not None:
            self._recall(known)

    @invariant()
    def money_and_transitions_hold(self) -> None:
        """After each step: one call and one debit a GUID, money conserved (the account system's counts), and the
        ledger's rows moved only along the contract's transitions (checkers.STEP_RULES); on a doubt, every rule."""
        if not self.trace:  # after the start (a failure there is remembered at ()); later, each rule checks
            self._check_record()
        if self.dry:
            return
        stats = self.runner.stack.account.stats()
        bad = [g for g, s in stats["guids"].items() if s["calls"] > 1 or s["debits"] > 1]
        money_ok = not bad and sum(stats["balances"].values()) == sum(ACCOUNTS.values())
        if money_ok and not checkers.broken_now(self.runner.history):
            self.context.budget.note_passed(self.trace)
        elif not self.context.budget.seen_passing(self.trace):  # else the check at the story's end judges it
            self.runner.observer.account_stats()  # record the observation, then explain it
            verdicts = checkers.check(self.runner.history, so_far=True)
            if not verdicts:  # the counts' suspicion, cleared by the rules: a resend the relay asked for
                self.context.budget.note_passed(self.trace)
                return
            self._fail(verdicts, "invariant after the last step", at_end=False)

    def teardown(self) -> None:
        budget = self.context.budget
        if self.dry:
            if self.failed or sys.exc_info()[0] is not None:  # it ended already (a recall, a reject, an overrun)
                return
            known = budget.failing_at_end(self.trace)
            if known is None:
                budget.reject_unless_remembered(self.trace)
            assert known is not None, "a story remembered as failing mid-way failed there (self.failed)"
            self._recall(known)
            return
        self.context.slowest_example_s = max(self.context.slowest_example_s, time.monotonic() - self.began)
        try:
            self.runner.finish()
        except Exception as e:
            if not self.failed:
                self.failed = True
                budget.remember(self.trace, e, at_end=True)
                raise
        if not self.failed and (known := budget.failing_at_end(self.trace)) is not None:
            self._recall(known)  # this whole story failed before: it fails as it did
        if not self.failed:
            self._count_faults_met()
            verdicts = checkers.check(self.runner.history)
            if verdicts:
                self._fail(verdicts, "full check after the final heal and convergence", at_end=True)

    def _count_faults_met(self) -> None:
        """Count the example as exercised or not (relaychaos.checkers.faults_met). Hypothesis is not told
        (no `target()`): what met what depends on timing, and it would steer a rerun's stories (machine_draws)."""
        met = faults_met(self.runner.history)
        hit = sum(f.met for f in met)
        if met:
            self.context.exercised += hit > 0
            self.context.unexercised += hit == 0

    def _recall(self, known: Remembered) -> None:
        """Fail as a remembered story failed (this example's trace is that story's): its report is the last."""
        self.failed = True
        if known.story is not None:
            self.context.last_report, steps, rules = known.story
            self.steps = list(steps)
            self._write(rules)
        self._raise(self.context.budget.again(known.error))

    @staticmethod
    def _raise(error: BaseException) -> None:
        raise error  # one place: a failure and its recall share Hypothesis's idea of where it came from

    def _fail(self, verdicts: list[Verdict], where: str, at_end: bool) -> None:
        self.failed = True
        ctx = self.context
        text = report(self.runner.history, verdicts, limit=2)
        if ctx.first_failure_at is None:
            ctx.first_failure_at = (ctx.examples, time.monotonic() - ctx.started)
            ctx.first_verdicts = [{**v.to_dict(), "scenario": "stateful"} for v in verdicts]
            ctx.first_report = f"{where}: found at example {ctx.examples}\n{text}"
            ctx.first_history = History(list(self.runner.history))  # a copy: teardown appends the final phase
        rules = sorted({v.rule for v in verdicts})
        ctx.failures.append(",".join(rules))
        story = scenario_file.dump(self._scenario(rules))
        ctx.last_report = f"{where}: {', '.join(rules)}, in a story of {len(self.steps)} steps\n\n{story}\n{text}"
        path = self._write(rules)
        error = AssertionError(f"{where}: {', '.join(rules)}\n{text}" + (f"\n\nwritten to {path}" if path else ""))
        ctx.budget.remember(self.trace, error, at_end, story=(ctx.last_report, tuple(self.steps), rules))
        self._raise(error)

    def _scenario(self, rules: list[str]) -> S.Scenario:
        """This example's steps as a scenario, to replay (and to read)."""
        relay = self.context.stack.manifest.name
        return S.Scenario(
            f"found-{relay}",
            steps=tuple(self.steps),
            family="regression",
            description=f"found by the stateful machine against {relay}: breaks {', '.join(rules)}",
            account_timeout_ms=TIMEOUT_MS,
            accounts=ACCOUNTS,
        )

    def _write(self, rules: list[str]) -> Path | None:
        ctx = self.context
        if ctx.found_dir is None:
            return None
        sc = self._scenario(rules)
        ctx.found_dir.mkdir(parents=True, exist_ok=True)
        path = ctx.found_dir / f"{sc.name}.yaml"
        how = (
            f"not fully shrunk: shrinking stopped at its budget of {ctx.budget.limit_s:g} s, so the story may be "
            "longer than it needs to be"
            if ctx.budget.cut
            else "after shrinking"
        )
        text = scenario_file.dump(
            sc,
            comment=f"Found by relaychaos' stateful machine; {len(self.steps)} steps, "
            f"{how} (the last failing example Hypothesis ran).",
        )
        path.write_text(text)
        ctx.last_file = path
        return path


def bind(context: Context) -> type[ChaosMachine]:
    """A machine class bound to one context (one relay's long-lived stack), every module of relaychaos loaded
    (machine_draws.load_every_module: what was imported before does not change the stories a seed draws)."""
    load_every_module()
    return type(
        "ChaosMachineFor_" + context.stack.manifest.name.replace("-", "_"), (ChaosMachine,), {"context": context}
    )


def found_dir() -> Path:
    return Path(options.environment(options.FOUND_DIR, default="runs/found"))
