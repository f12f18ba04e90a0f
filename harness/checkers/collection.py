"""The cyclic garbage collector paused while a history is indexed and judged.

with no_collection():
    facts = Facts(history)
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def no_collection() -> Iterator[None]:
    """The cyclic garbage collector paused: indexing a long history makes millions of objects and no cycles,
    and each of the collector's passes over them would be wasted time (a third of a check's)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
