"""Benchmark: a concurrent activity read under the service's rate limit (30 requests/s global).

The sandbox's token bucket holds 30 × 5 s × 1.1 = 165 tokens and refills at 30 per second. The
client paces itself from the ``RateLimit-*`` headers, so the read should run near the limit
without a single 429. "Sustained" counts only the requests beyond the initial bucket, i.e. those
the refill paid for; that rate cannot exceed the limit.

Run: ``.venv/bin/python benchmarks/bench_rate_limit.py``.
"""

from __future__ import annotations

import sys
import time

from toolkit.client import Client
from toolkit.sandbox import start

NOW = "2026-11-01T12:00:00Z"
GLOBAL_RPS = 30
WINDOW, BURST = 5, 1.1
PAGE_SIZE = 35  # 20,000 / 35 = 572 pages: about 14 s at 30 requests/s after the burst


def main() -> int:
    with start(seed=7, now=NOW, notifications=20_000) as sandbox:
        sandbox.faults.rate_limit(global_rps=GLOBAL_RPS, window=WINDOW, burst=BURST)
        client = Client.from_sandbox(sandbox, progress=False, workers=8)
        statuses: list[int] = []
        client.transport.session.hooks["response"].append(
            lambda response, **_: statuses.append(response.status_code)
        )
        started = time.perf_counter()
        rows = client.list_activity(page_size=PAGE_SIZE)
        elapsed = time.perf_counter() - started
        stats = sandbox.faults.stats

    requests_made = stats["requests"]
    burst = GLOBAL_RPS * WINDOW * BURST
    sustained = (requests_made - burst) / elapsed
    failed = sum(status >= 400 for status in statuses)
    print(f"limit: {GLOBAL_RPS} requests/s global (bucket of {burst:.0f} tokens)")
    print(f"read {len(rows)} notifications in {requests_made} requests, {elapsed:.1f} s")
    print(f"overall: {requests_made / elapsed:.1f} requests/s (burst included)")
    print(
        f"sustained: {sustained:.1f} requests/s = {sustained / GLOBAL_RPS:.2f} of the limit"
        " (target >= 0.9)"
    )
    print(
        f"failed requests: {failed}; 429s seen by the client: {statuses.count(429)}; "
        f"rate-limited by the service: {stats['rate_limited']} (target 0)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
