"""The sandbox's timings that its tests no longer assert: injected latency, concurrency under
latency, and the live traffic rate (per sandbox second, at clock speeds 1 and 10).

    .venv/bin/python benchmarks/bench_sandbox_timing.py
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import requests

from toolkit.sandbox import start

LATENCY = 0.3
RATE = 20.0
SECONDS = 2.0


def main() -> int:
    with start(seed=3, now="2026-11-01T12:00:00Z", notifications=300, subscribers=50) as sandbox:
        url, headers = (
            f"{sandbox.url}/v1/notifications",
            {"Authorization": f"ApiKey {sandbox.api_key}"},
        )

        def get(_: object = None) -> None:
            requests.get(url, headers=headers, timeout=30).raise_for_status()

        started = time.perf_counter()
        for _ in range(10):
            get()
        plain = (time.perf_counter() - started) / 10
        sandbox.faults.set(latency=LATENCY)
        started = time.perf_counter()
        get()
        delayed = time.perf_counter() - started
        started = time.perf_counter()
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(get, range(4)))
        together = time.perf_counter() - started
        sandbox.faults.reset()
        print(f"latency {LATENCY} s: one request {delayed:.3f} s (plain {plain:.3f} s,"
              f" target {LATENCY} to {LATENCY + plain + 0.1:.3f} s)")  # fmt: skip
        print(f"4 concurrent delayed requests: {together:.3f} s (serial would be"
              f" {4 * LATENCY:.1f} s; target < {2 * LATENCY:.1f} s)")  # fmt: skip
    for speed in (1.0, 10.0):
        with start(seed=3, now="2026-11-01T12:00:00Z", notifications=300, subscribers=50,
                   clock_speed=speed) as sandbox:  # fmt: skip
            traffic = sandbox.start_traffic(rate=RATE)
            time.sleep(SECONDS)
            count = traffic.count
            sandbox.stop_traffic()
        expected = RATE * speed * SECONDS
        print(f"traffic {RATE:g}/sandbox s at clock speed {speed:g}: {count} in {SECONDS:g} real s"
              f" (expected {expected:.0f}, ratio {count / expected:.2f}; target 0.8-1.2)")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
