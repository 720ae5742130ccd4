"""Start the sandbox: a seeded store, the service behind the fault layer, uvicorn in a thread.

`start` returns a `Sandbox` handle once the server answers HTTP. The admin routes under
``/_sandbox/`` (see `admin`) let another process steer a running sandbox.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import threading
import time
import urllib.request
from contextlib import closing
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

import uvicorn

from toolkit.sandbox.admin import admin_app
from toolkit.sandbox.app import BodyLimit, create_app
from toolkit.sandbox.cache import SNAPSHOT_UP_TO, seeded_image
from toolkit.sandbox.clock import Clock
from toolkit.sandbox.faults import ADMIN_PREFIX, DroppingH11Protocol, FaultMiddleware
from toolkit.sandbox.handle import Sandbox
from toolkit.sandbox.seed import populate
from toolkit.sandbox.seed.incidents import specs_of
from toolkit.sandbox.store import Store

__all__ = ["Sandbox", "start"]

#: Seconds `start` waits for the server to answer before giving up.
STARTUP_TIMEOUT = 30.0


def _serve(sandbox: Sandbox, host: str, port: int, log_level: str) -> None:
    """Serve ``sandbox`` on ``host:port`` in a daemon thread; return once the server answers HTTP."""
    store = sandbox.store

    @lru_cache(maxsize=64)
    def environment_of(api_key: str) -> str | None:
        with store.read() as db:
            row = db.execute("SELECT id FROM environments WHERE api_key = ?", (api_key,)).fetchone()
        return row[0] if row else None

    service = FaultMiddleware(
        BodyLimit(create_app(store, sandbox.clock)), sandbox.faults, sandbox.clock, environment_of
    )
    admin = admin_app(sandbox)

    async def app(scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"].startswith(ADMIN_PREFIX):
            await admin(scope, receive, send)
        else:
            await service(scope, receive, send)

    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        http=DroppingH11Protocol,
        lifespan="off",
        log_config=None,
        log_level=log_level,
        access_log=False,
        timeout_graceful_shutdown=2,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name=f"sandbox-{port}", daemon=True)
    thread.start()
    sandbox._server, sandbox._thread = server, thread
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(f"the sandbox could not start on {host}:{port}")
        time.sleep(0.01)
    bound_port = server.servers[0].sockets[0].getsockname()[1]
    sandbox.url = f"http://{host}:{bound_port}"
    with urllib.request.urlopen(f"{sandbox.url}{ADMIN_PREFIX}state", timeout=STARTUP_TIMEOUT):
        pass


def _open(db: str | os.PathLike | None) -> Store:
    """The store: in memory, or the file ``db`` (ValueError when it cannot be one), with the
    idempotency claims of a killed previous process released."""
    if db is None:
        return Store(":memory:")
    path = Path(db)
    if not path.parent.is_dir():
        raise ValueError(f"db: the folder {str(path.parent)!r} does not exist")
    if path.is_file() and path.stat().st_size:
        try:
            with closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as probe:
                probe.execute("SELECT value FROM meta WHERE key = 'tenancy'").fetchone()
        except sqlite3.DatabaseError:
            raise ValueError(f"db: {str(path)!r} is not a sandbox database") from None
    elif path.exists() and not path.is_file():
        raise ValueError(f"db: {str(path)!r} is not a file")
    store = Store(path)
    store.release_claims()
    return store


def _tenancy(store: Store) -> dict[str, Any]:
    return {
        "environments": json.loads(store.get_meta("tenancy"))["environments"],
        "incidents": json.loads(store.get_meta("incidents") or "[]"),
    }


def start(
    seed: int = 7,
    port: int = 0,
    host: str = "127.0.0.1",
    db: str | os.PathLike | None = None,
    now: str | datetime | None = None,
    notifications: int = 20_000,
    subscribers: int = 2_000,
    traffic_rate: float = 0.0,
    rate_limit: bool = False,
    log_level: str = "warning",
    incidents: str | list = "default",
    clock_speed: float = 1.0,
) -> Sandbox:
    """Start a sandbox service on ``host:port`` and return its handle once it answers.

    Parameters
    ----------
    seed : int
        Seed of the data (and of the fault draws); the data are a function of
        ``(seed, now, notifications, subscribers, incidents)``.
    port : int
        TCP port; 0 picks a free one (read ``Sandbox.url``).
    host : str
        Interface to bind; keep the default loopback unless you mean to share it.
    db : path, optional
        SQLite file. A new file is seeded; an existing one is reused as it is (data, API keys
        and all: ``seed`` and the sizes are then ignored), its idempotency keys claimed by
        requests that were running when a previous process was killed released. Default: in
        memory. A missing folder or a file that is not a sandbox database: ValueError.
    now : str or datetime, optional
        The instant the service's clock starts at (ISO 8601). Default: the real now. In memory
        (up to `cache.SNAPSHOT_UP_TO` notifications) the data are those seeded at
        `cache.ANCHOR` shifted to ``now``, cached in the temp directory, so every start after
        the first with the same seed, sizes and incidents is fast. A new ``db`` file is
        seeded at ``now`` directly.
    notifications, subscribers : int
        Sizes of the seeded data set of the default environment.
    traffic_rate : float
        Start live traffic at this many notifications per second (0: none).
    rate_limit : bool
        Turn the service's rate limiter on (`Faults.rate_limit`).
    log_level : str
        uvicorn's log level.
    incidents : "default", "none" or list
        What the seeded data of the default environment contain: the three default incidents
        (an SMS provider outage, an email domain's bounces, stale push tokens), nothing but
        random low background failures, or these incident specs (dicts or `IncidentSpec`, see
        `toolkit.sandbox.seed.incidents`). Described in `Sandbox.incidents`.
    clock_speed : float
        The sandbox clock runs this many times faster than real time (the seeded data end at
        ``now`` either way). Live traffic's rate is per sandbox second, so that the feed looks
        the same at any speed: ``traffic_rate=10, clock_speed=10`` inserts 100 notifications per
        real second. 0 stops the clock: it moves only by `Sandbox.advance`, which also runs
        live traffic up to the new now (tests that decide what time it is).

    Returns
    -------
    Sandbox
        Use it as a context manager, or call ``stop()``.
    """
    clock = Clock(now, clock_speed)
    specs_of(incidents)  # invalid specs raise before anything starts
    try:
        socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError, OverflowError) as exc:
        raise ValueError(f"host: cannot serve on {host!r} port {port!r}: {exc}") from None
    store = _open(db)
    try:
        if store.get_meta("tenancy") is None:
            if db is None and notifications <= SNAPSHOT_UP_TO:
                store.load(seeded_image(seed, clock.start, notifications, subscribers, incidents))
            else:  # a new database file, or a large data set: seeded at the clock directly
                populate(
                    store,
                    seed=seed,
                    now=clock.start,
                    notifications=notifications,
                    subscribers=subscribers,
                    incidents=incidents,
                )
        seed = int(store.get_meta("seed") or seed)  # a reused database keeps its own seed
        sandbox = Sandbox(store, clock, _tenancy(store), seed)
    except BaseException:
        store.close()
        raise
    try:
        if rate_limit:
            sandbox.faults.rate_limit()
        _serve(sandbox, host, port, log_level)
        if traffic_rate:
            sandbox.start_traffic(traffic_rate)
    except BaseException:
        sandbox.stop()
        raise
    return sandbox
