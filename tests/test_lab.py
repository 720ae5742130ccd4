"""``make lab``: JupyterLab, installed by the development set-up, serves the notebooks."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
from pathlib import Path

import pytest
import requests

ROOT = Path(__file__).parent.parent


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_lab_serves_the_notebooks(tmp_path):
    token = "first-hour"
    args = f"--no-browser --port=0 --IdentityProvider.token={token}"
    environ = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path), "JUPYTER_CONFIG_DIR": str(tmp_path)}  # fmt: skip
    log = open(tmp_path / "lab.log", "w+")  # noqa: SIM115 (read while the server runs)
    lab = subprocess.Popen(["make", "-s", "lab", f"LAB_ARGS={args}"], cwd=ROOT, stdout=log,
                           stderr=subprocess.STDOUT, env=environ, start_new_session=True)  # fmt: skip
    try:
        address = None
        while address is None:  # the server's own line saying where it listens
            assert lab.poll() is None, (tmp_path / "lab.log").read_text()
            found = re.search(r"(http://(?:localhost|127\.0\.0\.1):\d+)/lab", (tmp_path / "lab.log").read_text())  # fmt: skip
            address = found and found.group(1)
            if address is None:
                lab_wait(lab)
        listing = None
        while listing is None:  # the address is printed before the server listens on it
            assert lab.poll() is None, (tmp_path / "lab.log").read_text()
            with contextlib.suppress(requests.ConnectionError):
                listing = requests.get(f"{address}/api/contents", params={"token": token}, timeout=30)  # fmt: skip
            if listing is None:
                lab_wait(lab)
        names = {item["name"] for item in listing.json()["content"]}
        assert {p.name for p in (ROOT / "notebooks").glob("*.ipynb")} <= names
        page = requests.get(f"{address}/lab", params={"token": token}, timeout=30)
        assert page.status_code == 200 and "JupyterLab" in page.text
    finally:
        if lab.poll() is None:
            os.killpg(lab.pid, signal.SIGTERM)
        lab.wait(timeout=60)
        log.close()


def lab_wait(process: subprocess.Popen) -> None:
    """Wait a little for the server to say more (or to exit)."""
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=0.2)
