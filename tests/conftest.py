"""Shared fixtures: real sandboxes on 127.0.0.1, with a fixed clock so data are reproducible."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest


class Waits(list):
    """An injectable ``sleep`` that records the waits instead of waiting."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def wait_for(predicate, timeout: float = 120.0) -> None:
    """Wait until ``predicate()`` is true (a condition, never a fixed time), failing after
    ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting for a condition"
        time.sleep(0.02)


@pytest.fixture
def waits():
    return Waits()


#: The instant the test sandboxes' clocks start at; seeded data are a function of (seed, NOW).
NOW = "2026-11-01T12:00:00Z"


@pytest.fixture(scope="session")
def chromium() -> Path:
    """Debian's Chromium (the report's browser test, kaleido's static figures): a test needing
    it skips without it, and fails in CI (``.ci/run`` installs it)."""
    path = Path("/usr/bin/chromium")
    if not path.exists():
        message = f"Chromium not found at {path}: install it with `apt-get install -y chromium`"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.fixture(scope="session")
def sandbox():
    """The shared, seeded sandbox (20,000 notifications). Tests must not change its data or leave
    faults on: use ``fresh_sandbox`` to write, and ``faults`` to inject faults."""
    from toolkit.sandbox import start

    with start(seed=7, now=NOW) as handle:
        yield handle


@pytest.fixture
def faults(sandbox):
    """The shared sandbox's fault injector, reset after the test."""
    sandbox.faults.reset()
    yield sandbox.faults
    sandbox.faults.reset()


@pytest.fixture
def fresh_sandbox():
    """A small sandbox of the test's own, for tests that write."""
    from toolkit.sandbox import start

    with start(seed=11, now=NOW, notifications=600, subscribers=120) as handle:
        yield handle


@pytest.fixture(scope="session")
def store_path(sandbox, tmp_path_factory):
    """A store synced from the shared sandbox's last two days: tests read it (or copy it)."""
    import toolkit
    from toolkit.client import connect

    path = tmp_path_factory.mktemp("synced") / "store"
    toolkit.sync(connect(sandbox=sandbox, progress=False), path, since="2d")
    return path
