"""The notebooks are tests: ``pytest --nbval-lax notebooks/`` runs each one top to bottom in a fresh
kernel and compares the outputs of the cells marked ``# NBVAL_CHECK_OUTPUT``.

This script refreshes the stored outputs (``make notebooks`` runs it on all of them):

    .venv/bin/python tools/execute_notebooks.py                    # all notebooks
    .venv/bin/python tools/execute_notebooks.py notebooks/02_*.ipynb

Each notebook is executed in place in a fresh ``python3`` kernel (the one ``make install``
registers in the venv), cell by cell, and saved with its outputs and execution counts. It needs
only jupyter_client and nbformat, which nbval already depends on (nbconvert and nbclient are not
dependencies of the project). Execution stops at the first failing cell, after saving what ran.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

#: Seconds a cell may run before execution is abandoned.
CELL_TIMEOUT = 600


def execute_in_place(path: Path, timeout: float = CELL_TIMEOUT) -> None:
    """Run every code cell of the notebook at ``path`` and write it back with the outputs."""
    import nbformat
    from jupyter_client.manager import KernelManager
    from nbformat.v4 import output_from_msg

    notebook = nbformat.read(path, as_version=4)
    kernel_name = notebook.metadata.get("kernelspec", {}).get("name", "python3")
    manager = KernelManager(kernel_name=kernel_name)
    manager.start_kernel(cwd=str(path.parent))
    client = manager.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=60)
        for cell in notebook.cells:
            if cell.cell_type != "code":
                continue
            msg_id = client.execute(cell.source, store_history=True, allow_stdin=False)
            cell.outputs = _collect_outputs(client, msg_id, cell, timeout, output_from_msg)
            reply = client.get_shell_msg(timeout=timeout)
            while reply["parent_header"].get("msg_id") != msg_id:
                reply = client.get_shell_msg(timeout=timeout)
            if reply["content"]["status"] == "error":
                nbformat.write(notebook, path)
                error = reply["content"]
                raise RuntimeError(
                    f"{path}: cell [{cell.execution_count}] failed: "
                    f"{error.get('ename')}: {error.get('evalue')}\n{cell.source}"
                )
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    nbformat.write(notebook, path)


def _collect_outputs(client, msg_id: str, cell, timeout: float, output_from_msg) -> list:
    """The outputs of one execution, as a notebook stores them (streams merged, clears applied)."""
    outputs: list = []
    clear_on_next = False
    while True:
        msg = client.get_iopub_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        kind, content = msg["msg_type"], msg["content"]
        if kind == "status" and content["execution_state"] == "idle":
            return outputs
        if kind == "execute_input":
            cell.execution_count = content["execution_count"]
        elif kind == "clear_output":
            if content.get("wait"):
                clear_on_next = True
            else:
                outputs = []
        elif kind in ("stream", "display_data", "execute_result", "error"):
            if clear_on_next:
                outputs, clear_on_next = [], False
            output = output_from_msg(msg)
            last = outputs[-1] if outputs else None
            if (
                kind == "stream"
                and last is not None
                and last.get("output_type") == "stream"
                and last["name"] == output["name"]
            ):
                last["text"] += output["text"]
            else:
                outputs.append(output)


def main(argv: list[str]) -> int:
    notebooks = Path(__file__).resolve().parent.parent / "notebooks"
    paths = [Path(arg) for arg in argv] or sorted(notebooks.glob("[0-9]*.ipynb"))
    for path in paths:
        started = time.monotonic()
        execute_in_place(path)
        print(f"{path}: executed in {time.monotonic() - started:.1f}s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
