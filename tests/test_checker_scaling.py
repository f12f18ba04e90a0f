"""The rule book on long histories: every injected violation found, nothing else, in time linear in the size.

The full figures (10k to 1M events, memory, the exponent) are benchmarks/checker_scaling.py's;
this is the quick version on histories of 5k and 20k events.
"""

import time

import pytest

from benchmarks.synthetic_history import INJECTIONS, build
from relaychaos import checkers
from relaychaos.history import HistoryFile


@pytest.fixture(scope="module")
def histories(tmp_path_factory):
    folder = tmp_path_factory.mktemp("synthetic")
    return {n: (folder / f"h{n}.jsonl.gz", *build(folder / f"h{n}.jsonl.gz", n)) for n in (5_000, 20_000)}


def _seconds(path) -> float:
    """The CPU time of the fastest of three checks of the file (the machine is shared: its waits for a core
    are not the checker's)."""
    times = []
    for _ in range(3):
        started = time.process_time()
        checkers.check(HistoryFile(path))
        times.append(time.process_time() - started)
    return min(times)


@pytest.mark.slow
def test_every_injected_violation_is_found_and_nothing_else(histories):
    path, injected, skipped = histories[20_000]
    assert not skipped and len({how for _, _, how in injected}) == len(INJECTIONS)
    found = {(v.rule, v.guid) for v in checkers.check(HistoryFile(path))}
    assert found == {(rule, guid) for rule, guid, _ in injected}


@pytest.mark.slow
def test_four_times_the_events_take_about_four_times_as_long(histories):
    small, large = _seconds(histories[5_000][0]), _seconds(histories[20_000][0])
    assert large / small < 8, f"5k events: {small:.3f} s, 20k: {large:.3f} s (quadratic would be ~16x)"
