"""A sync killed with SIGKILL, then run again, gives exactly the store of a clean run; a second sync
at once is refused. Real subprocesses, real SIGKILL, a real sandbox over HTTP.

The child runs `toolkit.sync` with the sandbox's clock pinned (so every run reads the same
window) and kills itself at a chosen point (``KILL_AT``): the test picks the point, the kernel
does the killing.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pyarrow.parquet as pq
import pytest

import toolkit
from toolkit.store import StoreLockedError
from toolkit.timeutil import to_iso

CHILD = r"""
import os, signal, sys
import toolkit
from toolkit.client import Client
from toolkit.store import incremental, layout, state

point, _, nth = os.environ.get("KILL_AT", "").partition(":")
nth = int(nth or 0)
calls = {"n": 0}

def die_on_nth(original, before=True, pause=False):
    def wrapper(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == nth and before:
            die(pause)
        result = original(*args, **kwargs)
        if calls["n"] == nth and not before:
            die(pause)
        return result
    return wrapper

def die(pause):
    if pause:
        open(os.environ["PAUSED"], "w").close()
        signal.pause()
    os.kill(os.getpid(), signal.SIGKILL)

def half_written(path, table):
    # the file written aside, killed before its rename
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(f".{path.name}.{os.getpid()}.tmp"), "wb") as sink:
        import pyarrow.parquet as pq
        pq.write_table(table, sink)
    os.kill(os.getpid(), signal.SIGKILL)

client = Client(os.environ["URL"], os.environ["KEY"], environment=os.environ["ENV"],
                clock=lambda: os.environ["NOW"], progress=False)
if point == "request":
    client.transport.request = die_on_nth(client.transport.request)
elif point == "rename":
    original = layout.write_atomically
    def write(path, table):
        calls["n"] += 1
        (half_written if calls["n"] == nth else original)(path, table)
    layout.write_atomically = write
elif point == "written":
    layout.write_atomically = die_on_nth(layout.write_atomically, before=False)
elif point in ("checkpoint", "pause"):
    state.Checkpoint.save = die_on_nth(state.Checkpoint.save, before=False, pause=point == "pause")
elif point == "state":
    state.State.save = die_on_nth(state.State.save)
print(toolkit.sync(client, sys.argv[1], since="2d", lag="2h"))
"""


@pytest.fixture(scope="module")
def pinned(sandbox):
    """The child's environment: the shared sandbox, its clock pinned to one instant."""
    return {
        **os.environ,
        "URL": sandbox.url,
        "KEY": sandbox.api_key,
        "ENV": "Acme/Development",
        "NOW": to_iso(sandbox.now()),
    }


def _sync(path, env, kill_at=None, **extra):
    env = {**env, **extra, "KILL_AT": kill_at or ""}
    return subprocess.run(
        [sys.executable, "-c", CHILD, str(path)], env=env, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip


def _contents(path):
    """Every partition file's rows and the state, as comparable values; no leftovers allowed."""
    files = {}
    for file in sorted(path.rglob("*")):
        name = str(file.relative_to(path))
        if file.is_dir() or name == ".lock":
            continue
        assert not file.name.startswith(".") and "checkpoint" not in name, name
        if name == "state.json":
            files[name] = file.read_text()
        else:
            files[name] = pq.read_table(file).to_pylist()
    return files


@pytest.fixture(scope="module")
def clean(pinned, tmp_path_factory):
    path = tmp_path_factory.mktemp("clean") / "store"
    done = _sync(path, pinned)
    assert done.returncode == 0, done.stderr
    return _contents(path)


@pytest.mark.parametrize(
    "kill_at",
    ["request:3", "rename:2", "written:4", "checkpoint:2", "state:1", "state:2"],
)
def test_sigkill_then_resume_equals_a_clean_run(pinned, clean, tmp_path, kill_at):
    path = tmp_path / "store"
    killed = _sync(path, pinned, kill_at)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    resumed = _sync(path, pinned)
    assert resumed.returncode == 0, resumed.stderr
    assert _contents(path) == clean
    assert len(clean) == 3 * 3 + 1  # three days of three tables, and the state


def test_a_second_sync_at_once_is_refused_and_the_first_resumes(pinned, clean, tmp_path):
    path = tmp_path / "store"
    paused = tmp_path / "paused"
    first = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path)],
        env={**pinned, "KILL_AT": "pause:1", "PAUSED": str(paused)},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not paused.exists():  # the first sync holds the lock, one day written
            assert first.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        second = _sync(path, pinned)
        assert second.returncode == 1 and "another sync is writing" in second.stderr
        client = toolkit.connect(pinned["URL"], pinned["KEY"], environment=pinned["ENV"])
        with pytest.raises(StoreLockedError, match=f"another sync is writing to the store {path}"):
            toolkit.sync(client, path, since="2d")
    finally:
        first.kill()
        first.wait()
    assert _sync(path, pinned).returncode == 0
    assert _contents(path) == clean
