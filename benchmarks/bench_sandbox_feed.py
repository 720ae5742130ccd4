"""Latency of filtered activity-feed pages on a sandbox of 200,000 notifications.

Seeds a database file in a temporary directory (the seeding time is printed), starts the
sandbox on it and times ``GET /v1/notifications?limit=50`` with filters against an unfiltered page
measured in the same run. Target: a filtered page's median under 20 ms.

    .venv/bin/python benchmarks/bench_sandbox_feed.py
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

import requests

from toolkit.sandbox import start

NOW = "2026-11-01T12:00:00Z"
NOTIFICATIONS = 200_000
SUBSCRIBERS = 20_000
REQUESTS = 200
WARM_UP = 10
TARGET_MS = 20.0


def timings(session: requests.Session, url: str, params: dict) -> list[float]:
    """Milliseconds of ``REQUESTS`` sequential GETs, after a few untimed ones."""
    durations = []
    for attempt in range(WARM_UP + REQUESTS):
        started = time.perf_counter()
        response = session.get(url, params=params, timeout=30)
        elapsed = (time.perf_counter() - started) * 1000
        response.raise_for_status()
        if attempt >= WARM_UP:
            durations.append(elapsed)
    return durations


def main() -> int:
    with tempfile.TemporaryDirectory() as directory:
        started = time.perf_counter()
        sandbox = start(
            db=Path(directory) / "bench.db",
            now=NOW,
            notifications=NOTIFICATIONS,
            subscribers=SUBSCRIBERS,
        )
        print(
            f"seeded {NOTIFICATIONS:,} notifications and {SUBSCRIBERS:,} subscribers "
            f"in {time.perf_counter() - started:.1f} s"
        )
        with sandbox, requests.Session() as session:
            session.headers["Authorization"] = f"ApiKey {sandbox.api_key}"
            url = f"{sandbox.url}/v1/notifications"
            first = session.get(url, params={"limit": 1}, timeout=30).json()["data"][0]
            subscriber = first["subscriber"]["subscriberId"]
            filtered = {
                "channels=sms&severity=high": {"channels": "sms", "severity": "high"},
                "subscriberIds=<one subscriber>": {"subscriberIds": subscriber},
                "page=20&channels=email": {"page": 20, "channels": "email"},
            }
            print(f"\nGET /v1/notifications?limit=50, {REQUESTS} sequential requests each (ms):")
            print(f"  {'filter':<34}{'median':>8}{'p95':>8}{'ratio':>8}")
            baseline = statistics.median(timings(session, url, {"limit": 50}))
            print(f"  {'none (baseline)':<34}{baseline:8.1f}")
            medians = []
            for name, params in filtered.items():
                durations = timings(session, url, {"limit": 50, **params})
                medians.append(statistics.median(durations))
                p95 = statistics.quantiles(durations, n=20)[-1]
                print(f"  {name:<34}{medians[-1]:8.1f}{p95:8.1f}{medians[-1] / baseline:8.2f}")
        verdict = "met" if max(medians) < TARGET_MS else "NOT met"
        print(
            f"\ntarget: filtered median < {TARGET_MS:.0f} ms: {verdict} (slowest {max(medians):.1f} ms)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
