"""A newcomer's first hour, run as they ran it: the commands in a shell, `import toolkit`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings

import pytest

import toolkit
from toolkit import _cli
from toolkit import client as client_module
from toolkit.timeutil import NaiveTimeWarning, parse_time


def run(*argv: str, cwd=None) -> subprocess.CompletedProcess:
    """``python -m toolkit ARGV`` with nothing configured (the local sandbox)."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SVC_")}
    return subprocess.run([sys.executable, "-m", "toolkit", *argv], capture_output=True,
                          text=True, env=environ, cwd=cwd, timeout=300)  # fmt: skip


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A store synced twice by the command, each run with its own local sandbox (a new port)."""
    path = tmp_path_factory.mktemp("first-hour") / "activity"
    first = run("sync", "--store", str(path), "--since", "2d")
    assert first.returncode == 0, first.stderr
    state = json.loads((path / "state.json").read_text())
    second = run("sync", "--store", str(path))
    return path, state, second


def test_a_second_sync_with_nothing_configured_reads_the_same_source(store):
    # once, the second run failed: each run's sandbox has a new port ("a different source")
    path, first, second = store
    assert second.returncode == 0, second.stderr
    state = json.loads((path / "state.json").read_text())
    assert state["service"] == "local sandbox" and state["environment"] == "Acme/Development"
    # once, a second sync without --since widened a 2-day store to 7 days
    assert state["after"] == first["after"]


def test_a_window_beyond_the_store_is_named_by_its_flag(store):
    path = str(store[0])
    report = run("report", "--store", path, "--since", "30d", "--out", str(store[0].parent / "r.html"))  # fmt: skip
    assert report.returncode == 2
    assert "--since" in report.stderr and "store" in report.stderr
    assert "None" not in report.stderr  # once: "(READ ... answered None)"
    incidents = run("incidents", "--store", path, "--since", "30d")
    assert incidents.returncode == 2
    assert incidents.stderr.startswith("error: --since ") and "after=" not in incidents.stderr


@pytest.mark.parametrize("command", ["report", "incidents", "sync"])
def test_a_bad_since_is_named_in_the_flags_words_before_anything_starts(command, tmp_path):
    argv = [command, "--since", "7days", *(["--store", str(tmp_path / "s")] if command == "sync" else [])]  # fmt: skip
    result = run(*argv, cwd=tmp_path)
    assert result.returncode == 2
    assert "argument --since: '7days' is not allowed" in result.stderr
    assert "after=" not in result.stderr and "local sandbox" not in result.stderr
    assert not (tmp_path / "s").exists()


def test_a_bad_since_starts_no_sandbox(monkeypatch):
    monkeypatch.delenv("SVC_BASE_URL", raising=False)
    monkeypatch.delenv("SVC_API_KEY", raising=False)
    monkeypatch.setattr(client_module, "_sandbox", None)
    _cli.start_sandbox(["--since", "7days"])  # what `python -m toolkit report` does first
    assert client_module._sandbox is None


def test_a_naive_time_is_taken_as_utc_and_said_so():
    with pytest.warns(NaiveTimeWarning, match="taken as UTC"):
        assert parse_time("2026-11-23 09:00") == parse_time("2026-11-23T09:00:00Z")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        parse_time("2026-11-23")  # a date: its midnight UTC, as documented
        parse_time("2026-11-23T09:00+01:00")
    result = run("incidents", "--since", "2026-11-23 09:00", "--until", "2026-11-23T09:30Z")
    assert "note: --since='2026-11-23 09:00' has no UTC offset: taken as UTC" in result.stderr


def test_every_module_the_docs_name_is_reachable_from_import_toolkit():
    import re
    from pathlib import Path

    root = Path(toolkit.__file__).parent.parent
    texts = [root / "README.md", *(root / "docs").glob("*.md"), *(root / "notebooks").glob("*.ipynb")]  # fmt: skip
    names = {n for t in texts for n in re.findall(r"toolkit\.([a-z]\w*)", t.read_text())}
    modules = sorted(n for n in names if (root / "toolkit" / n).is_dir() or (root / "toolkit" / f"{n}.py").exists())  # fmt: skip
    assert {"incidents", "metrics", "report"} <= set(modules)
    code = f"import toolkit\nfor name in {modules!r}:\n    help(getattr(toolkit, name))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "find_incidents" in result.stdout  # help(toolkit.incidents) printed its page
