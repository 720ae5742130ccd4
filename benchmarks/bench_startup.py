"""Start-up times with nothing configured, each in a fresh process, against their baselines.

- ``toolkit.sandbox.start()`` (the real now) with an empty seeded-data cache (cold) and again
  (warm), in a process that has already imported the sandbox: the seeding is what is timed;
- ``import toolkit; toolkit.connect()`` (the local sandbox, warm cache): target < 1.5 s;
- ``python -m toolkit report --since 7d --out <file>`` (warm cache, bytecode compiled as `make
  report` does) against the baseline: a
  fresh process importing pandas, plotly, requests, fastapi, uvicorn and jinja2 (target: at
  most 4x).

Each figure is the best of ``RUNS`` runs. The cold run uses its own temporary directory as
``TMPDIR``, so the shared cache is not touched.

    .venv/bin/python benchmarks/bench_startup.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNS = 3
IMPORTS = "import pandas, plotly.graph_objects, requests, fastapi, uvicorn, jinja2"
START = (
    "import time; from toolkit.sandbox import start; t = time.perf_counter(); s = start(); "
    "print(time.perf_counter() - t); s.stop()"
)


def run(code: list[str], tmp: str) -> tuple[float, str]:
    """Wall seconds of a fresh process, and its standard output."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("SVC_")}
    environment["TMPDIR"] = tmp
    started = time.perf_counter()
    done = subprocess.run(
        code, cwd=ROOT, env=environment, capture_output=True, text=True, check=True, timeout=300
    )
    return time.perf_counter() - started, done.stdout


def best(code: list[str], tmp: str) -> float:
    return min(run(code, tmp)[0] for _ in range(RUNS))


def main() -> int:
    python = sys.executable
    # Warm as `make report` runs it: the toolkit's bytecode cached, as pip caches the packages'
    # (where PYTHONDONTWRITEBYTECODE is set, Python would otherwise compile it on every run).
    subprocess.run([python, "-m", "compileall", "-q", str(ROOT / "toolkit")], check=True)
    with tempfile.TemporaryDirectory() as tmp:
        cold = float(run([python, "-c", START], tmp)[1])
        warm = min(float(run([python, "-c", START], tmp)[1]) for _ in range(RUNS))
        imports = best([python, "-c", IMPORTS], tmp)
        connect = best([python, "-c", "import toolkit; toolkit.connect()"], tmp)
        out = str(Path(tmp) / "report.html")
        report = best([python, "-m", "toolkit", "report", "--since", "7d", "--out", out], tmp)
    print("start-up with nothing configured (fresh processes, best of 3):")
    print(f"  {'':44}{'seconds':>9}{'baseline':>10}{'ratio':>7}  target")
    print(f"  {'sandbox.start(), empty cache (cold)':44}{cold:9.2f}")
    print(f"  {'sandbox.start(), cached (warm)':44}{warm:9.2f}{cold:10.2f}{warm / cold:7.2f}")
    print(f"  {'import toolkit; toolkit.connect()':44}{connect:9.2f}{'':17}  < 1.5 s:"
          f" {'met' if connect < 1.5 else 'NOT met'}")  # fmt: skip
    print(f"  {'import pandas, plotly, requests, fastapi, ...':44}{imports:9.2f}")
    ratio = report / imports
    print(f"  {'python -m toolkit report --since 7d':44}{report:9.2f}{imports:10.2f}{ratio:7.2f}"
          f"  <= 4x: {'met' if ratio <= 4 else 'NOT met'}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
