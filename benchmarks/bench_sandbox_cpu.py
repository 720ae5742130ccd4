"""CPU the sandbox spends per shallow activity page, against the code of a baseline commit.

Each side runs ``python -m toolkit sandbox`` in its own process (the baseline from a ``git
archive`` of ``BASELINE`` in a temporary directory, the current one from this checkout), and a
cheap client (``http.client``, one kept-alive connection) asks ``GET /v1/notifications?limit=10``
``REQUESTS`` times. The figure is the server process's user + system CPU (from
``/proc/<pid>/stat``) divided by the requests. Target (issue 11): at most half the baseline.

    .venv/bin/python benchmarks/bench_sandbox_cpu.py
"""

from __future__ import annotations

import http.client
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

from common import ROOT, baseline_tree

#: The commit measured as the baseline (main before issue 11's sandbox work).
BASELINE = "c96cddc"
REQUESTS = 3_000
WARM_UP = 100
PATH = "/v1/notifications?limit=10"
TARGET = 0.5


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def measure(source: Path) -> float:
    """CPU milliseconds per page of the sandbox whose code is under ``source``."""
    port = free_port()
    command = [sys.executable, "-m", "toolkit", "sandbox", "--port", str(port)]
    command += ["--now", "2026-11-01T12:00:00Z", "--notifications", "2000"]
    environment = {**os.environ, "PYTHONPATH": str(source)}
    process = subprocess.Popen(
        command, cwd=source, env=environment, stdout=subprocess.PIPE, text=True
    )
    try:
        output = ""
        while "Press Ctrl-C" not in output:
            line = process.stdout.readline()
            if not line:
                raise RuntimeError(f"the sandbox exited early: {output}")
            output += line
        key = re.search(r"SVC_API_KEY=(\S+)", output).group(1)
        connection = http.client.HTTPConnection("127.0.0.1", port)
        headers = {"Authorization": f"ApiKey {key}"}

        def get() -> None:
            connection.request("GET", PATH, headers=headers)
            response = connection.getresponse()
            response.read()
            assert response.status == 200, response.status

        for _ in range(WARM_UP):
            get()
        before = cpu_seconds(process.pid)
        for _ in range(REQUESTS):
            get()
        spent = cpu_seconds(process.pid) - before
        connection.close()
        return spent / REQUESTS * 1000
    finally:
        process.terminate()
        process.wait(timeout=20)
        process.stdout.close()


def main() -> int:
    with baseline_tree(BASELINE) as directory:
        baseline = measure(directory)
    current = measure(ROOT)
    ratio = current / baseline
    verdict = "met" if ratio <= TARGET else "NOT met"
    print(f"sandbox CPU per shallow page (GET {PATH}, {REQUESTS} requests, http.client):")
    print(f"  baseline ({BASELINE}) {baseline:6.2f} ms")
    print(f"  current             {current:6.2f} ms   ratio {ratio:.2f}")
    print(f"target: ratio <= {TARGET}: {verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
