"""Execute notebooks in place, as ``jupyter execute --inplace`` does, but without per-cell timing
metadata: re-running them then changes only what they show (``make notebooks``).

Each plotly figure's output also gets a static SVG of it (drawn by kaleido with Debian's
Chromium), so that GitHub and nbviewer, which do not run plotly.js, show the figures too;
JupyterLab still draws the interactive one.

Run: ``.venv/bin/python tools/execute_notebooks.py notebooks/01_quickstart.ipynb ...``
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from pathlib import Path

import kaleido
import nbformat
import plotly.io as pio
from kaleido.errors import JavascriptError
from nbclient import NotebookClient

PLOTLY = "application/vnd.plotly.v1+json"
SVG = "image/svg+xml"


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
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            figure = output.get("data", {}).get(PLOTLY)
            if figure is not None:
                output["data"][SVG] = static(figure)
    nbformat.write(notebook, path)


def static(figure: dict) -> str:
    """The figure as SVG text, at the size the notebook shows it.

    Drawn a second time if kaleido's page raised a JavaScript error: under CPU load its tab can
    be asked to draw before its script has loaded ("kaleido_scopes is not defined")."""
    figure = pio.from_json(pio.to_json(figure), skip_invalid=True)
    try:
        svg = pio.to_image(figure, format="svg", width=900, height=450)
    except JavascriptError:
        svg = pio.to_image(figure, format="svg", width=900, height=450)
    return stable_ids(svg.decode())


def stable_ids(svg: str) -> str:
    """``svg`` with plotly's random id (``defs-1a2b3c``, ``clip1a2b3cxy``, ``legend1a2b3c``)
    replaced by one drawn from the drawing itself: a re-run that draws the same figure writes the
    same text, and two figures on one page still have ids of their own."""
    found = re.search(r'id="defs-([0-9a-f]{6})"', svg)
    if found is None:
        return svg
    named = re.compile(f"(clip|defs-|legend){found.group(1)}")
    uid = hashlib.sha1(named.sub(r"\1", svg).encode()).hexdigest()[:6]
    return named.sub(rf"\g<1>{uid}", svg)


if __name__ == "__main__":
    os.environ.setdefault("BROWSER_PATH", "/usr/bin/chromium")  # Debian's, as the browser test
    kaleido.start_sync_server(silence_warnings=True)
    try:
        for name in sys.argv[1:]:
            print(f"executing {name}", flush=True)
            execute(Path(name))
    finally:
        kaleido.stop_sync_server(silence_warnings=True)
