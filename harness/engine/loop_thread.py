"""An asyncio event loop on a thread of its own, so synchronous code can start calls and go on.

The runner keeps the channel here: a step can send in the background, then
kill the relay while the call is in flight, then wait for the answer.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from typing import Any


class LoopThread:
    """`submit(coro)` returns a concurrent Future; `close()` stops the loop and joins the thread."""

    def __init__(self, name: str = "relaychaos-loop"):
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def submit(self, coro: Coroutine[Any, Any, Any]) -> concurrent.futures.Future:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def run(self, coro: Coroutine[Any, Any, Any], timeout: float | None = None) -> Any:
        """Run coro on the loop and wait for its result."""
        return self.submit(coro).result(timeout)

    def close(self) -> None:
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        self.loop.close()
