"""Benchmark: reading the whole activity feed into DataFrames, plain loop vs the toolkit.

Against a sandbox with 20,000 notifications and 50 ms added latency per request, served by its
own process (as a real service would be: the server's work does not share the client's CPU time):

(a) a sequential loop of ``requests`` calls, page by page (limit 50), then ``pandas.json_normalize``;
(b) ``toolkit.read_activity(client, before=...)`` (concurrent pages, typed linked frames).

Both read the same pinned window. Run: ``.venv/bin/python benchmarks/bench_read_activity.py``.
"""

from __future__ import annotations

import subprocess
import sys
import time
from contextlib import contextmanager

import pandas as pd
import requests

import toolkit
from toolkit.timeutil import to_iso

NOW = "2026-11-01T12:00:00Z"
LATENCY_MS = 50


@contextmanager
def sandbox_process():
    """``(base_url, api_key)`` of ``python -m toolkit sandbox`` running in a child process."""
    command = [sys.executable, "-m", "toolkit", "sandbox", "--port", "0", "--now", NOW,
               "--latency-ms", str(LATENCY_MS)]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        for line in process.stdout:
            if line.startswith("export "):
                settings = dict(word.split("=", 1) for word in line.split()[1:])
                break
        else:
            raise RuntimeError("the sandbox exited before printing its address")
        yield settings["SVC_BASE_URL"], settings["SVC_API_KEY"]
    finally:
        process.terminate()
        process.wait(timeout=30)


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


def timed(function):
    """``(function(), seconds it took)``."""
    started = time.perf_counter()
    result = function()
    return result, time.perf_counter() - started


def main() -> int:
    with sandbox_process() as (url, api_key):
        client = toolkit.connect(url, api_key, progress=False)
        before = to_iso(pd.Timestamp(NOW))
        frame, plain = timed(lambda: plain_loop(url, api_key, before))
        activity, fast = timed(lambda: toolkit.read_activity(client, before=before))

    rows = len(activity.notifications)
    assert rows == len(frame), (rows, len(frame))
    print(f"sandbox (own process): {rows:,} notifications, +{LATENCY_MS} ms latency per request")
    print(f"(a) sequential requests loop + json_normalize: {plain:6.2f} s")
    print(
        f"(b) toolkit.read_activity ({client.workers} workers, typed linked frames): {fast:6.2f} s"
    )
    print(f"speed-up: {plain / fast:.1f}x (target >= 5x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
