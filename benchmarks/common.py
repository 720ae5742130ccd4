"""What several benchmarks share: the code of a baseline commit, to measure it in the same run."""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

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
