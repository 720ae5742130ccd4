"""A local sandbox of the notification service, for notebooks, demos and test suites.

It serves the seven operations over real HTTP on 127.0.0.1 (FastAPI + uvicorn in a background
thread, SQLite behind it), with realistic seeded data, live traffic and fault injection. Use it
in any test suite::

    import pytest
    from toolkit.sandbox import start

    @pytest.fixture(scope="session")
    def service():
        with start(seed=7, now="2026-11-01T12:00:00Z", notifications=1_000) as sandbox:
            yield sandbox          # sandbox.url, sandbox.api_key, sandbox.faults, ...

    def test_retries(service):
        service.faults.fail_next(2)   # the next two requests answer 503
        ...
        service.faults.reset()

Planted incidents: ``start(incidents="default" | "none" | [specs])`` (`IncidentSpec`, see
`toolkit.sandbox.seed.incidents`), described in ``sandbox.incidents``; live outages with
``sandbox.start_outage("twilio")``; a faster clock with ``start(clock_speed=10)``, a stopped
one that the caller moves with ``start(clock_speed=0)`` and ``sandbox.advance(15)``.

From a shell: ``python -m toolkit sandbox`` (see ``--help``).
"""

from __future__ import annotations

import importlib

# Imported lazily, so that importing one module of the package (the store, the seed) does not
# load the server and its dependencies.
_EXPORTS = {
    "Faults": "toolkit.sandbox.faults",
    "IncidentSpec": "toolkit.sandbox.seed.incidents",
    "Sandbox": "toolkit.sandbox.server",
    "start": "toolkit.sandbox.server",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'toolkit.sandbox' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value
