"""The report's previous period read in a forked process (what ``python -m toolkit report``
does, ``report_window(concurrent="process")``) against a thread (``concurrent=True``).

Each run is a fresh process doing what the command does after its sandbox serves (`_preload`,
`connect`, `report_window` of the last 7 days), against one sandbox child started first; the
two ways alternate. Printed: wall seconds and CPU seconds (the process and its forked child)
of each way, best and median of ``RUNS``, their ratio (target: the process at most 0.9x the
thread's wall), and the load average: the forked child pays where a core is free; on a
saturated machine only the CPU counts, and it is about the same.

    .venv/bin/python benchmarks/bench_report_process.py [RUNS]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from common import ROOT, sandbox_process

RUNS = 5
RUN = """
import os, resource, sys, time
started = time.perf_counter()
from toolkit.client import connect
from toolkit.report import _client_read, _preload, report_window
_preload()
client = connect(progress=False)
read, source, filters = _client_read(client, False, {{}})
report_window(read, now=client.now(), since="7d", out={out!r}, source=source, filters=filters,
              concurrent={how!r})
wall = time.perf_counter() - started
own, child = (resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
print(wall, own.ru_utime + own.ru_stime, child.ru_utime + child.ru_stime)
sys.stdout.flush()
os._exit(0)
"""


def run(how: bool | str, url: str, key: str, out: str) -> tuple[float, float, float]:
    """Wall, own CPU and child CPU seconds of one fresh process writing the report."""
    environment = {**os.environ, "SVC_BASE_URL": url, "SVC_API_KEY": key}
    done = subprocess.run(
        [sys.executable, "-c", RUN.format(out=out, how=how)], cwd=ROOT, env=environment,
        capture_output=True, text=True, check=True, timeout=600,
    )  # fmt: skip
    wall, own, child = map(float, done.stdout.split())
    return wall, own, child


def main() -> int:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else RUNS
    ways = {"thread": True, "process": "process"}
    found: dict[str, list[tuple[float, float, float]]] = {name: [] for name in ways}
    load = os.getloadavg()[0]
    with sandbox_process() as (url, key), tempfile.TemporaryDirectory() as tmp:
        for _ in range(runs):
            for name, how in ways.items():
                found[name].append(run(how, url, key, str(Path(tmp) / f"{name}.html")))
    load = max(load, os.getloadavg()[0])
    print(f"report_window of 7 days, previous period in a thread or a forked process "
          f"({runs} alternating runs, load average up to {load:.1f} on {os.cpu_count()} cores):")  # fmt: skip
    print(f"  {'':10}{'wall best':>10}{'median':>8}{'CPU best':>10}{'median':>8}"
          f"  (median: this process, its child)")  # fmt: skip
    for name, rows in found.items():
        walls, cpus = [r[0] for r in rows], [r[1] + r[2] for r in rows]
        own, child = (statistics.median(r[i] for r in rows) for i in (1, 2))
        print(f"  {name:10}{min(walls):10.2f}{statistics.median(walls):8.2f}"
              f"{min(cpus):10.2f}{statistics.median(cpus):8.2f}  ({own:.2f}, {child:.2f})")  # fmt: skip
    ratio = statistics.median(r[0] for r in found["process"]) / statistics.median(
        r[0] for r in found["thread"]
    )
    print(f"  process / thread, median wall: {ratio:.2f}x  <= 0.9x: {'met' if ratio <= 0.9 else 'NOT met'}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
