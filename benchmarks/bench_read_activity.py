"""Benchmark: reading the whole activity feed into DataFrames, plain loop vs the toolkit.

Against a sandbox with 20,000 notifications and 50 ms added latency per request:

(a) a sequential loop of ``requests`` calls, page by page (limit 50), then ``pandas.json_normalize``;
(b) ``toolkit.read_activity(client, before=...)`` (concurrent pages, typed frames).

Both read the same pinned window. Run: ``.venv/bin/python benchmarks/bench_read_activity.py``.
"""

from __future__ import annotations

import sys
import time

import pandas as pd
import requests

from toolkit.client import Client
from toolkit.sandbox import start
from toolkit.timeutil import to_iso

NOW = "2026-11-01T12:00:00Z"
LATENCY = 0.05


def plain_loop(url: str, api_key: str, before: str) -> pd.DataFrame:
    """What one would write by hand: one page after the other, then json_normalize."""
    rows, page = [], 0
    with requests.Session() as session:
        session.headers["Authorization"] = f"ApiKey {api_key}"
        while True:
            response = session.get(
                f"{url}/v1/notifications", params={"page": page, "limit": 50, "before": before}
            )
            response.raise_for_status()
            data = response.json()["data"]
            rows.extend(data)
            if len(data) < 50:
                break
            page += 1
    return pd.json_normalize(rows)


def toolkit_read(client: Client, before: str) -> tuple[int, str]:
    """``toolkit.read_activity`` when the DataFrame layer exists, else ``client.list_activity``."""
    try:
        from toolkit.read import read_activity
    except ImportError:
        rows = client.list_activity(before=before)
        return len(rows), "client.list_activity (toolkit.read not available yet)"
    activity = read_activity(client, before=before, progress=False)
    return len(activity.notifications), "toolkit.read_activity"


def timed(function):
    """``(function(), seconds it took)``."""
    started = time.perf_counter()
    result = function()
    return result, time.perf_counter() - started


def main() -> int:
    with start(seed=7, now=NOW, notifications=20_000) as sandbox:
        sandbox.faults.set(latency=LATENCY)
        client = Client.from_sandbox(sandbox, progress=False)
        before = to_iso(sandbox.now())

        frame, plain = timed(lambda: plain_loop(sandbox.url, sandbox.api_key, before))
        _, fetch = timed(lambda: client.list_activity(before=before))
        (count, what), fast = timed(lambda: toolkit_read(client, before))

    print(f"sandbox: 20,000 notifications, +{LATENCY * 1000:.0f} ms latency per request")
    print(f"(a) sequential requests loop + json_normalize: {plain:6.2f} s  ({len(frame)} rows)")
    print(f"(b) {what} (8 workers): {fast:6.2f} s  ({count} rows)")
    print(f"(c) client.list_activity alone (the read, no frames): {fetch:6.2f} s")
    print(f"speed-up: {plain / fast:.1f}x (target >= 5x); read alone: {plain / fetch:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
