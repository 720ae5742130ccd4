"""What several benchmarks share: the code of a baseline commit, to measure it in the same run."""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


@contextmanager
def baseline_tree(commit: str) -> Iterator[Path]:
    """A temporary directory holding the ``toolkit`` package as it was at ``commit``; put it
    first on ``PYTHONPATH`` (or use it as the working directory) to run that code."""
    with tempfile.TemporaryDirectory() as directory:
        archive = subprocess.run(
            ["git", "archive", commit, "toolkit"], cwd=ROOT, capture_output=True, check=True
        )
        subprocess.run(["tar", "-x", "-C", directory], input=archive.stdout, check=True)
        yield Path(directory)


@contextmanager
def sandbox_process(*options: str) -> Iterator[tuple[str, str]]:
    """``(base_url, api_key)`` of ``python -m toolkit sandbox --port 0 *options`` running in a
    child process (as a real service would: its work does not share the benchmark's CPU time)."""
    from toolkit.sandbox.process import SandboxProcess

    with SandboxProcess(*options) as sandbox:
        yield sandbox.url, sandbox.api_key


def seeded_documents(
    seed: int, now: str, notifications: int, subscribers: int, incidents: Any = "default"
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The default environment's ActivityNotification documents (newest first, what the service
    serves, without HTTP) and the incidents planted in them."""
    from toolkit.sandbox.seed import populate
    from toolkit.sandbox.store import Store

    store = Store(":memory:")
    tenancy = populate(store, seed=seed, now=now, notifications=notifications,
                       subscribers=subscribers, incidents=incidents)  # fmt: skip
    environment = tenancy["environments"][0]["id"]
    with store.read() as db:
        rows = db.execute(
            "SELECT doc FROM notifications WHERE environment_id = ? ORDER BY created_at DESC",
            (environment,),
        ).fetchall()
    store.close()
    planted = [i for i in tenancy["incidents"] if i["environment_id"] == environment]
    return [json.loads(doc) for (doc,) in rows], planted
