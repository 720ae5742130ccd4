"""Execute notebooks in place, as ``jupyter execute --inplace`` does, but without per-cell timing
metadata: re-running them then changes only what they show (``make notebooks``).

Run: ``.venv/bin/python tools/execute_notebooks.py notebooks/01_quickstart.ipynb ...``
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient


def execute(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    for cell in notebook.cells:
        cell.metadata.pop("execution", None)  # left by earlier runs that recorded timing
    NotebookClient(
        notebook,
        timeout=600,
        record_timing=False,
        resources={"metadata": {"path": str(path.parent)}},
    ).execute()
    nbformat.write(notebook, path)


if __name__ == "__main__":
    for name in sys.argv[1:]:
        print(f"executing {name}", flush=True)
        execute(Path(name))
