"""Activity records → linked frames: `toolkit.frames.activity_frames` against `pandas.json_normalize`.

The records are the seeded sandbox's own documents (an in-memory store filled by
`toolkit.sandbox.seed.populate`), exactly what the service serves. The baseline builds the same
three tables with three ``json_normalize`` calls: the notifications, ``record_path="jobs"`` and
``record_path=["jobs", "executionDetails"]`` with the ids as ``meta``. Each side is timed (best of
``--repeat`` runs) and, in a separate run, its peak memory measured with ``tracemalloc``.
Targets: at least 3x faster, and less peak memory.

    python benchmarks/bench_frames.py [--notifications 100000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import gc
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import pandas as pd
from common import seeded_documents

from toolkit.frames import activity_frames

NOW = "2026-11-01T12:00:00Z"


def seeded_records(notifications: int) -> list[dict[str, Any]]:
    """The default environment's ActivityNotification documents, newest first."""
    return seeded_documents(7, NOW, notifications, 2_000)[0]


def with_json_normalize(records: list[dict[str, Any]]) -> tuple[pd.DataFrame, ...]:
    """The baseline: the same three tables from three ``json_normalize`` calls."""
    notifications = pd.json_normalize(records)
    jobs = pd.json_normalize(records, record_path="jobs", meta=["_id"], meta_prefix="notification.")
    details = pd.json_normalize(
        records,
        record_path=["jobs", "executionDetails"],
        meta=["_id", ["jobs", "_id"], ["jobs", "type"]],
        meta_prefix="parent.",
    )
    return notifications, jobs, details


def with_toolkit(records: list[dict[str, Any]]) -> tuple[pd.DataFrame, ...]:
    return tuple(activity_frames(records))


def best_time(build: Callable[[list], Any], records: list, repeat: int) -> float:
    timings = []
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        result = build(records)
        timings.append(time.perf_counter() - start)
        del result
    return min(timings)


def peak_memory(build: Callable[[list], Any], records: list) -> int:
    """Peak bytes allocated while building (the result kept alive to the end)."""
    gc.collect()
    tracemalloc.start()
    result = build(records)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    del result
    return peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notifications", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    start = time.perf_counter()
    records = seeded_records(args.notifications)
    jobs = sum(len(record.get("jobs") or ()) for record in records)
    details = sum(
        len(job.get("executionDetails") or ()) for r in records for job in r.get("jobs") or ()
    )
    print(
        f"records: {len(records):,} notifications, {jobs:,} jobs, {details:,} execution details"
        f" (seeded in {time.perf_counter() - start:.1f} s)"
    )
    frames = activity_frames(records)
    print(f"toolkit frames: {frames}")

    baseline_s = best_time(with_json_normalize, records, args.repeat)
    toolkit_s = best_time(with_toolkit, records, args.repeat)
    baseline_peak = peak_memory(with_json_normalize, records)
    toolkit_peak = peak_memory(with_toolkit, records)

    mib = 1024 * 1024
    print(f"{'':16}{'time (best of ' + str(args.repeat) + ')':>22}{'peak memory':>16}")
    print(f"{'json_normalize':16}{baseline_s:>20.2f} s{baseline_peak / mib:>12.0f} MiB")
    print(f"{'activity_frames':16}{toolkit_s:>20.2f} s{toolkit_peak / mib:>12.0f} MiB")
    speedup, memory = baseline_s / toolkit_s, toolkit_peak / baseline_peak
    print(f"speed-up: {speedup:.1f}x (target >= 3x): {'met' if speedup >= 3 else 'NOT met'}")
    print(
        f"peak memory: {memory:.2f} of the baseline (target < 1): {'met' if memory < 1 else 'NOT met'}"
    )


if __name__ == "__main__":
    main()
