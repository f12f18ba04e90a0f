"""Benchmark: stateful examples per second against the reference, and the power check's figures.

    .venv/bin/python -m benchmarks.stateful_speed [--rounds 3] [--examples 60]

1. The machine against the reference relay, `--examples` examples of at most 8 steps (the
   quick and ci profiles' length), `--rounds` times: examples per second, median. Baseline, in
   the same run: the same number of examples of a machine whose only rule is one new transfer
   (the fixed cost of an example: fresh fixture state, a runner, the final convergence, checks).
2. The power check at the nightly profile's budget (300 examples, 20 steps): for relay_base and
   each mutant whose bug needs an interleaving, the examples and seconds to the first failure
   and the length of the shrunk scenario file.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import tempfile
import time
from pathlib import Path

from hypothesis import HealthCheck, errors, settings
from hypothesis.stateful import rule, run_state_machine_as_test

from relaychaos.engine import scenario_file
from relaychaos.engine import steps as S
from relaychaos.relay_under_test.mutants.table import MUTANTS
from relaychaos.run.definition import RunDefinition
from relaychaos.run.services import Services
from relaychaos.scenarios.machine import ACCOUNTS, TIMEOUT_MS, ChaosMachine, bind
from relaychaos.scenarios.machine_context import Context
from relaychaos.stack import manifest
from relaychaos.stack.world import Stack

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "relay_under_test" / "reference" / "relay.toml"
COMMON = dict(deadline=None, suppress_health_check=list(HealthCheck), database=None, print_blob=False)
POWER = [m for m in MUTANTS if m.needs_interleaving]


class OneTransfer(ChaosMachine):
    """The baseline: an example that only sends new transfers."""

    @rule()
    def new_transfer(self):  # noqa: D102 - overrides every other rule by being the only one kept
        self._do(S.Send(self._label()))


for name in [n for n, v in vars(ChaosMachine).items() if getattr(v, "hypothesis_stateful_rule", None)]:
    if name != "new_transfer":
        setattr(OneTransfer, name, None)


def stack_for(services: Services, relay: Path, work: Path) -> Stack:
    return services.stack(
        work / relay.parent.name,
        "bench",
        manifest=manifest.load(relay),
        accounts=ACCOUNTS,
        account_timeout_ms=TIMEOUT_MS,
    )


def rate(services: Services, work: Path, machine, examples: int) -> float:
    with stack_for(services, REFERENCE, work) as stack:
        ctx = Context(stack, None)
        cls = type("Bench", (machine,), {"context": ctx})
        t0 = time.perf_counter()
        run_state_machine_as_test(cls, settings=settings(max_examples=examples, stateful_step_count=8, **COMMON))
        return ctx.examples / (time.perf_counter() - t0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--examples", type=int, default=60)
    parser.add_argument("--skip-power", action="store_true")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-stateful-"))
    # sandbox off, as before Stack required one: the benchmark measures the machine and the relay, not the sandbox
    run = RunDefinition.build({"relay": REFERENCE, "sandbox": "off"})
    with Services(run, work) as services:
        full, base = [], []
        for rnd in range(args.rounds):
            base.append(rate(services, work, OneTransfer, args.examples))
            full.append(rate(services, work, ChaosMachine, args.examples))
            print(
                f"round {rnd + 1}: machine {full[-1]:.2f} examples/s, baseline (one transfer) {base[-1]:.2f}/s",
                flush=True,
            )
        f, b = statistics.median(full), statistics.median(base)
        print(
            f"\nreference relay, {args.examples} examples of at most 8 steps: median {f:.2f} examples/s "
            f"(baseline {b:.2f}/s; {f / b:.2f}x)"
        )
        if args.skip_power:
            return
        print("\npower check at the nightly budget (300 examples, 20 steps):")
        for mutant in POWER:
            relay = mutant.name
            with stack_for(services, mutant.manifest, work) as stack:
                ctx = Context(stack, work / "found" / relay)
                t0 = time.perf_counter()
                with contextlib.suppress(AssertionError, errors.Flaky):
                    run_state_machine_as_test(
                        bind(ctx), settings=settings(max_examples=300, stateful_step_count=20, **COMMON)
                    )
                took = time.perf_counter() - t0
                if ctx.first_failure_at is None:
                    print(f"  {relay:>28}: NOT FOUND in {ctx.examples} examples ({took:.0f} s)")
                    continue
                steps = len(scenario_file.load(ctx.last_file).scenario.steps)
                print(
                    f"  {relay:>28}: first failure at example {ctx.first_failure_at[0]}, "
                    f"{ctx.first_failure_at[1]:.1f} s; shrunk to {steps} steps ({ctx.failures[-1]}); "
                    f"{took:.0f} s with shrinking",
                    flush=True,
                )


if __name__ == "__main__":
    main()
