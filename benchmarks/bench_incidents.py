"""`toolkit.find_incidents` on 100,000 notifications: time against the 2 s target.

The activity is the seeded sandbox's own documents (with its three default incidents) turned
into frames by `toolkit.frames`, as `read_activity` returns them, without HTTP. The baseline
measured in the same run is `toolkit.metrics.delivery_jobs`, the one pass over the frames that
any analysis of them pays first; the ratio says what the detection costs on top of it. Best of
``--repeat`` runs.

    python benchmarks/bench_incidents.py [--notifications 100000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import time

from accuracy_incidents import seeded_activity

from toolkit import metrics
from toolkit.incidents import find_incidents

NOW = "2026-11-01T12:00:00Z"
TARGET_S = 2.0


def best_of(repeat: int, run) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        began = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - began)
    return min(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notifications", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    began = time.perf_counter()
    activity, planted = seeded_activity(7, NOW, args.notifications)
    print(f"data: {activity} in {time.perf_counter() - began:.0f} s")
    base, _ = best_of(args.repeat, lambda: metrics.delivery_jobs(activity))
    took, found = best_of(args.repeat, lambda: find_incidents(activity))
    print(f"metrics.delivery_jobs: {base:.2f} s (baseline)")
    print(f"find_incidents:        {took:.2f} s ({took / base:.1f}x the baseline; target "
          f"< {TARGET_S:.0f} s: {'met' if took < TARGET_S else 'NOT met'})")  # fmt: skip
    print(f"found {len(found)} incidents, {len(planted)} planted:")
    for sentence in found["summary"]:
        print(f"  - {sentence}")


if __name__ == "__main__":
    main()
