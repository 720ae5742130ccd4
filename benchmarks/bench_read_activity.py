"""Benchmark: reading the activity feed into DataFrames, a plain loop against the toolkit.

Against a sandbox with 20,000 notifications and 50 ms added latency per request, served by its
own process (as a real service would be: the server's work does not share the client's CPU time),
side by side in one run:

(a) a sequential loop of ``requests`` calls, page by page (limit 50), then
    ``pandas.json_normalize`` (what one writes by hand);
(b) ``toolkit.read_activity`` (concurrent pages decoded into typed linked frames as they arrive).

Figures: the whole feed (20,000 notifications, 400 pages; target at least 10x), a 3-day window
(about 65-75 pages; target at least 8x), and the peak RSS of each side's 20,000-notification read,
each in a fresh process, and of the toolkit's code before issue 11 (commit ``BEFORE``, measured in
the same run; target: at most half of it), and the
requests each of the toolkit's reads sent (pages past the end included). Imports are counted on
neither side; the plain loop runs once, the toolkit's (short) read twice, keeping the faster. Run: ``.venv/bin/python benchmarks/bench_read_activity.py``.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pandas as pd
import requests
from common import baseline_tree, sandbox_process

import toolkit
from toolkit.timeutil import parse_time, to_iso

NOW = "2026-11-01T12:00:00Z"
LATENCY_MS = 50
#: The code before issue 11, whose peak RSS is the memory baseline (measured in the same run;
#: the issue measured 371 MB on its machine).
BEFORE = "b77a03f"
#: The toolkit's reads are timed this many times (the best is kept): they are short, so the
#: load of a shared machine moves them more than the 25 s of the plain loop.
TOOLKIT_RUNS = 2


def plain_loop(url: str, api_key: str, window: dict[str, str]) -> pd.DataFrame:
    """What one would write by hand: one page after the other, then json_normalize."""
    rows, page = [], 0
    with requests.Session() as session:
        session.headers["Authorization"] = f"ApiKey {api_key}"
        while True:
            response = session.get(
                f"{url}/v1/notifications", params={"page": page, "limit": 50, **window}
            )
            response.raise_for_status()
            data = response.json()["data"]
            rows.extend(data)
            if len(data) < 50:
                break
            page += 1
    return pd.json_normalize(rows)


def toolkit_read(
    url: str, api_key: str, window: dict[str, str], sent: list | None = None
) -> toolkit.Activity:
    """The toolkit's read; each response is appended to ``sent`` when given."""
    client = toolkit.connect(url, api_key, progress=False)
    if sent is not None:
        client.transport.session.hooks["response"].append(lambda response, **_: sent.append(1))
    return toolkit.read_activity(client, **window)


def timed(function):
    """``(function(), seconds it took)``."""
    started = time.perf_counter()
    result = function()
    return result, time.perf_counter() - started


def peak_rss_mb(side: str, url: str, api_key: str, code: Path | None = None) -> float:
    """Peak RSS of a fresh process reading the whole feed with ``side`` (imports included),
    with the ``toolkit`` package found in ``code`` when given."""
    command = [sys.executable, __file__, "--rss", side, url, api_key]
    env = {**os.environ, "PYTHONPATH": str(code)} if code else None
    return json.loads(
        subprocess.run(command, capture_output=True, check=True, text=True, env=env).stdout
    )


def _rss_child(side: str, url: str, api_key: str) -> None:
    read = plain_loop if side == "plain" else toolkit_read
    read(url, api_key, {"before": NOW})
    # VmHWM, not ru_maxrss: the latter keeps the forking parent's peak across exec.
    with open("/proc/self/status") as status:
        peak = next(line for line in status if line.startswith("VmHWM:"))
    print(json.dumps(int(peak.split()[1]) / 1024))


def main() -> int:
    before = to_iso(parse_time(NOW))
    windows = {
        "whole feed": ({"before": before}, 10),
        "3-day window": (
            {"after": to_iso(parse_time(NOW) - timedelta(days=3)), "before": before},
            8,
        ),
    }
    rows = []
    with sandbox_process("--now", NOW, "--latency-ms", str(LATENCY_MS)) as (url, api_key):
        for label, (window, target) in windows.items():
            count, plain = timed(lambda: len(plain_loop(url, api_key, window)))  # noqa: B023
            gc.collect()
            fast = min(
                timed(lambda: len(toolkit_read(url, api_key, window).notifications))  # noqa: B023
                for _ in range(TOOLKIT_RUNS)
            )
            assert fast[0] == count, (label, count, fast[0])
            sent: list = []
            toolkit_read(url, api_key, window, sent)
            rows.append((label, count, plain, fast[1], target, len(sent)))
        rss = {side: peak_rss_mb(side, url, api_key) for side in ("plain", "toolkit")}
        with baseline_tree(BEFORE) as code:
            rss["before"] = peak_rss_mb("toolkit", url, api_key, code)

    print(f"sandbox in its own process, +{LATENCY_MS} ms per request; imports not counted")
    print(f"{'read':<14}{'rows':>8}{'plain loop':>13}{'toolkit':>10}{'speed-up':>10}  target")
    for label, count, plain, fast, target, sent in rows:
        met = "met" if plain / fast >= target else "NOT met"
        print(
            f"{label:<14}{count:>8,}{plain:>11.2f} s{fast:>8.2f} s{plain / fast:>9.1f}x"
            f"  >= {target}x: {met}; {sent} requests for {-(-count // 50)} pages of 50"
        )
    ratio = rss["toolkit"] / rss["before"]
    met = "met" if ratio <= 0.5 else "NOT met"
    print(
        f"peak RSS of the whole-feed read (fresh process, imports included): plain loop "
        f"{rss['plain']:.0f} MB, toolkit {rss['toolkit']:.0f} MB, toolkit before issue 11 "
        f"({BEFORE}) {rss['before']:.0f} MB: ratio {ratio:.2f}, target <= 0.5: {met}"
    )
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--rss"]:
        _rss_child(*sys.argv[2:5])
        sys.exit(0)
    sys.exit(main())
