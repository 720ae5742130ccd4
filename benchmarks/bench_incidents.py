"""`toolkit.find_incidents` on 100,000 notifications: time against the 2 s target, and against
the code of another commit (default ``main``) measured in the same run.

Three activities: the seeded sandbox's own documents (with its three default incidents; 14 days
of flat channel shares, compared with the rest of the window) turned into frames by
`toolkit.frames`, as `read_activity` returns them, without HTTP; and 28 and 14 days of traffic
shaped like a real product's (`toolkit.sandbox.seed.shaped`, its own weeks the seasonal
baseline; two weeks, each against the other). The baseline measured in
the same run is `toolkit.metrics.delivery_jobs`, the one pass over the frames that any analysis
of them pays first; the ratio says what the detection costs on top of it. Each commit's code
(this tree's and the other's) runs in a child process on the same pickled activities: measured in
the process that generated them, the same code took 1.35-1.47x as long. Best of ``--repeat`` runs.

    python benchmarks/bench_incidents.py [--notifications 100000] [--repeat 3] [--against main]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
from common import ROOT, baseline_tree

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


def activities(notifications: int) -> dict:
    """The three activities of about ``notifications`` notifications each."""
    from accuracy_incidents import seeded_activity

    from toolkit.sandbox.seed.shaped import shaped_traffic

    seeded, _ = seeded_activity(7, NOW, notifications)
    end = pd.Timestamp(NOW)
    out = {"sandbox 14 d": seeded}
    for days in (28, 14):  # about 82,500 notifications in 28 days at scale 1
        traffic = shaped_traffic(7, end, scale=notifications / 82_500 * 28 / days)
        out[f"shaped {days} d"] = traffic.window(end - pd.Timedelta(days=days), end)[0]
    return out


def timings(named: dict, repeat: int) -> dict:
    out = {}
    for name, activity in named.items():
        base, _ = best_of(repeat, lambda a=activity: metrics.delivery_jobs(a))
        took, found = best_of(repeat, lambda a=activity: find_incidents(a))
        out[name] = {"size": len(activity.notifications), "base": base, "took": took,
                     "rows": len(found)}  # fmt: skip
    return out


def measured(tree: Path, pickled: Path, repeat: int) -> tuple[dict, str | None]:
    """`timings` of the code in ``tree`` in a child process, and its error if it failed."""
    env = {**os.environ, "PYTHONPATH": f"{tree}{os.pathsep}{Path(__file__).resolve().parent}"}
    child = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--pickled", str(pickled),
         "--repeat", str(repeat)],
        env=env, capture_output=True, text=True, cwd=tree,
    )  # fmt: skip
    if child.returncode:
        return {}, str(child.stderr.strip().splitlines()[-1:])
    return json.loads(child.stdout.strip().splitlines()[-1]), None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notifications", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--against", default="main", help="the commit to compare with")
    parser.add_argument("--pickled", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.pickled:  # the child: this tree's numbers on the parent's activities
        print(json.dumps(timings(pd.read_pickle(args.pickled), args.repeat)))
        return
    named = activities(args.notifications)
    with baseline_tree(args.against) as tree:
        pickled = Path(tree) / "activities.pkl"
        pd.to_pickle(named, pickled)
        del named  # both trees measured alike: each in a child process reading the pickle
        mine, error = measured(ROOT, pickled, args.repeat)
        if error:
            raise SystemExit(f"this tree failed: {error}")
        theirs, failed = measured(tree, pickled, args.repeat)
    if failed:
        print(f"{args.against}: failed ({failed})")
    for name, row in mine.items():
        other = theirs.get(name)
        vs = (f"; {args.against}: {other['took']:.2f} s, {other['rows']} rows "
              f"({row['took'] / other['took']:.2f}x)" if other else "")  # fmt: skip
        print(f"{name} ({row['size']:,} notifications): find_incidents {row['took']:.2f} s "
              f"({row['took'] / row['base']:.1f}x metrics.delivery_jobs {row['base']:.2f} s; "
              f"target < {TARGET_S:.0f} s: {'met' if row['took'] < TARGET_S else 'NOT met'}), "
              f"{row['rows']} rows{vs}")  # fmt: skip


if __name__ == "__main__":
    main()
