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
import statistics
import sys
import tempfile
import time
from pathlib import Path

from hypothesis import HealthCheck, errors, settings
from hypothesis.stateful import rule, run_state_machine_as_test

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness import manifest, scenario_file, toxiproxy_server  # noqa: E402
from harness import steps as S  # noqa: E402
from relaychaos.stack.account_system import AccountSystem  # noqa: E402
from relaychaos.stack.world import Stack  # noqa: E402
from relaychaos.scenarios.machine import ACCOUNTS, TIMEOUT_MS, ChaosMachine, Context, bind  # noqa: E402

COMMON = dict(deadline=None, suppress_health_check=list(HealthCheck), database=None, print_blob=False)
POWER = ["base", "mutants/check_then_insert", "mutants/write_after_call", "mutants/memory_ledger",
         "mutants/timeout_as_failed"]


class OneTransfer(ChaosMachine):
    """The baseline: an example that only sends new transfers."""

    @rule()
    def new_transfer(self):  # noqa: D102 - overrides every other rule by being the only one kept
        self._do(S.Send(self._label()))


for name in [n for n, v in vars(ChaosMachine).items() if getattr(v, "hypothesis_stateful_rule", None)]:
    if name != "new_transfer":
        setattr(OneTransfer, name, None)


def stack_for(server, account, relay: str, work: Path) -> Stack:
    return Stack(toxiproxy=server.control, account=account, manifest=manifest.load(ROOT / "relay_under_test" / relay),
                 workdir=work / relay.replace("/", "-"), name="bench", accounts=ACCOUNTS, account_timeout_ms=TIMEOUT_MS)


def rate(server, account, work: Path, machine, examples: int) -> float:
    with stack_for(server, account, "reference", work) as stack:
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
    server, account = toxiproxy_server.acquire(work), AccountSystem.start(work)
    try:
        full, base = [], []
        for rnd in range(args.rounds):
            base.append(rate(server, account, work, OneTransfer, args.examples))
            full.append(rate(server, account, work, ChaosMachine, args.examples))
            print(f"round {rnd + 1}: machine {full[-1]:.2f} examples/s, baseline (one transfer) {base[-1]:.2f}/s",
                  flush=True)
        f, b = statistics.median(full), statistics.median(base)
        print(f"\nreference relay, {args.examples} examples of at most 8 steps: median {f:.2f} examples/s "
              f"(baseline {b:.2f}/s; {f / b:.2f}x)")
        if args.skip_power:
            return
        print("\npower check at the nightly budget (300 examples, 20 steps):")
        for relay in POWER:
            with stack_for(server, account, relay, work) as stack:
                ctx = Context(stack, work / "found" / relay.replace("/", "-"))
                t0 = time.perf_counter()
                try:
                    run_state_machine_as_test(bind(ctx), settings=settings(max_examples=300, stateful_step_count=20,
                                                                           **COMMON))
                except (AssertionError, errors.Flaky):
                    pass
                took = time.perf_counter() - t0
                if ctx.first_failure_at is None:
                    print(f"  {relay:>28}: NOT FOUND in {ctx.examples} examples ({took:.0f} s)")
                    continue
                steps = len(scenario_file.load(ctx.last_file).scenario.steps)
                print(f"  {relay:>28}: first failure at example {ctx.first_failure_at[0]}, "
                      f"{ctx.first_failure_at[1]:.1f} s; shrunk to {steps} steps ({ctx.failures[-1]}); "
                      f"{took:.0f} s with shrinking", flush=True)
    finally:
        account.close()
        server.close()


if __name__ == "__main__":
    main()
