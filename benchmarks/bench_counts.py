"""Benchmark: counts and the store's commands at scale (issue 17), against a baseline commit's
code measured in the same run (these machines are noisy: read the ratios).

(a) Generated stores (`bench_store.generate_store`, 90 days) of each ``--sizes``:
    ``toolkit.delivery_counts(store)`` of the 90 days in a child process: seconds, peak RSS.
(b) ``python -m toolkit report --store PATH --since 90d`` and ``incidents --store``, run as a
    user runs them: seconds and peak RSS of this code and of ``--baseline`` (default 0d879c3,
    the code before counts). Targets at 10,000,000: report under 20 s and 1 GB, incidents
    under 10 s, peak at 10,000,000 at most 1.3x the peak at 2,000,000.
(c) ``find_incidents`` on 100,000 notifications in memory: this code against the baseline's
    (target: no slower), by ``bench_incidents.py --against BASELINE`` (activities built once).
(d) Spark (``local[2]``, if PySpark and Java are here): ``delivery_counts`` of the smallest
    store, seconds (printed, not targeted), and whether it equals DuckDB's.

Run: ``.venv/bin/python benchmarks/bench_counts.py [--sizes 2000000,10000000] [--baseline REF]``
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_store import generate_store
from common import baseline_tree

COUNTS = "import toolkit; print(len(toolkit.delivery_counts(toolkit.open_store({path!r}), after='90d')))"  # fmt: skip


def child(command: list[str], code: Path | None) -> tuple[float, float, str]:
    """Seconds, peak RSS (MB) and output of ``command``, with ``code`` first on the path."""
    env = dict(os.environ)
    if code is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(code), str(Path(__file__).parent)])
    else:
        env["PYTHONPATH"] = str(Path(__file__).parent)
    with tempfile.TemporaryFile("w+") as log:
        began = time.perf_counter()
        # In ``code``: ``python -m`` puts the working directory first on the path, before PYTHONPATH.
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=code)
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - began
        log.seek(0)
        output = log.read()
    if os.waitstatus_to_exitcode(status):
        raise RuntimeError(output[-2000:])
    return seconds, usage.ru_maxrss / 1024, output


def toolkit_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "toolkit", *args]


def line(name: str, mine: str, theirs: str, ratio: float, target: str = "") -> None:
    print(f"{name:<44} {mine:>12} vs {theirs:>12} baseline  {ratio:5.2f}x  {target}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="2000000,10000000")
    parser.add_argument("--baseline", default="0d879c3")
    parser.add_argument("--data", help="keep the generated stores here (default: a temporary directory)")  # fmt: skip
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    with tempfile.TemporaryDirectory() as tmp, baseline_tree(args.baseline) as old:
        data = Path(args.data or tmp)
        peaks = {}
        for size in sizes:
            path = data / f"store-{size}"
            if not path.exists():
                began = time.perf_counter()
                generate_store(path, size)
                print(f"generated {size:,} notifications in {time.perf_counter() - began:.0f} s")
            seconds, rss, _ = child([sys.executable, "-c", COUNTS.format(path=str(path))], None)
            print(f"(a) delivery_counts, {size:,}: {seconds:.1f} s, {rss:,.0f} MB peak")
            for command in ("report", "incidents"):
                argv = toolkit_command(command, "--store", str(path), "--since", "90d")
                if command == "report":
                    argv += ["--out", str(data / "report.html")]
                mine = child(argv, None)
                theirs = child(argv, old)
                peaks[(command, size)] = mine[1]
                line(f"(b) {command} --store {size:,}: seconds", f"{mine[0]:.1f} s", f"{theirs[0]:.1f} s", mine[0] / theirs[0])  # fmt: skip
                line(f"(b) {command} --store {size:,}: peak", f"{mine[1]:,.0f} MB", f"{theirs[1]:,.0f} MB", mine[1] / theirs[1])  # fmt: skip
        if len(sizes) > 1:
            small, big = sizes[0], sizes[-1]
            for command in ("report", "incidents"):
                growth = peaks[(command, big)] / peaks[(command, small)]
                print(f"(b) {command} peak at {big:,} / at {small:,}: {growth:.2f}x (target <= 1.3x)")  # fmt: skip
        print("(c) find_incidents, 100,000 in memory (bench_incidents.py, target: no slower):")
        compared = [sys.executable, str(Path(__file__).with_name("bench_incidents.py")), "--against", args.baseline]  # fmt: skip
        print(child(compared, None)[2].rstrip())
        spark(data / f"store-{sizes[0]}")


def spark(path: Path) -> None:
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        print("(d) Spark: not installed (pip install 'toolkit[spark]')")
        return
    import toolkit

    session = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false").getOrCreate()  # fmt: skip
    began = time.perf_counter()
    on_spark = toolkit.delivery_counts(toolkit.open_store(path, engine=session), after="90d")
    seconds = time.perf_counter() - began
    on_duckdb = toolkit.delivery_counts(toolkit.open_store(path), after="90d")
    equal = on_spark.equals(on_duckdb)
    print(f"(d) Spark local[2] delivery_counts of {path.name}: {seconds:.1f} s; equal to DuckDB's: {equal}")  # fmt: skip
    session.stop()


if __name__ == "__main__":
    main()
