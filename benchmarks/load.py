"""Closed-loop HTTP load for the benchmarks: C workers each sending requests back to back.

Used by the benchmark scripts only (not by tests): it reports throughput and
latency percentiles for a fixed number of requests.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import aiohttp


@dataclass(frozen=True)
class LoadResult:
    requests: int
    seconds: float
    latencies_ms: list[float]
    errors: int

    @property
    def rate(self) -> float:
        return self.requests / self.seconds

    def percentile(self, p: float) -> float:
        data = sorted(self.latencies_ms)
        return data[min(len(data) - 1, int(p / 100 * len(data)))]


async def closed_loop(
    url: str,
    make_body: Callable[[int], dict],
    total: int,
    concurrency: int,
    check: Callable[[int, dict], bool] = lambda status, body: status < 500,
) -> LoadResult:
    """Send `total` POSTs of make_body(i) to url from `concurrency` workers; time them."""
    counter = iter(range(total))
    latencies: list[float] = []
    errors = 0
    conn = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=conn, timeout=aiohttp.ClientTimeout(total=30)) as session:

        async def worker() -> None:
            nonlocal errors
            for i in counter:
                t0 = time.perf_counter()
                async with session.post(url, json=make_body(i)) as resp:
                    body = await resp.json(content_type=None)
                    ok = check(resp.status, body)
                latencies.append((time.perf_counter() - t0) * 1000)
                errors += not ok

        t0 = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        elapsed = time.perf_counter() - t0
    return LoadResult(total, elapsed, latencies, errors)


def median(values: list[float]) -> float:
    return statistics.median(values)
