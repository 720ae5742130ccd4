"""Start the sandbox: a seeded store, the service behind the fault layer, uvicorn in a thread.

`start` returns a `Sandbox` handle once the server answers HTTP. The admin routes under
``/_sandbox/`` (no API key, not in the OpenAPI document, never faulted) let another process steer
a running sandbox: ``GET /_sandbox/state``, ``POST /_sandbox/faults``, ``POST /_sandbox/traffic``.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import tempfile
import threading
import time
import urllib.request
from contextlib import closing, suppress
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from toolkit.sandbox import seed as seeding
from toolkit.sandbox.app import create_app
from toolkit.sandbox.clock import Clock, iso
from toolkit.sandbox.faults import ADMIN_PREFIX, DroppingH11Protocol, FaultMiddleware, Faults
from toolkit.sandbox.store import Store
from toolkit.sandbox.traffic import LiveTraffic

#: Seconds `start` waits for the server to answer before giving up.
STARTUP_TIMEOUT = 30.0


class Sandbox:
    """A running sandbox: its address, API keys, data, clock, faults and live traffic.

    Made by `start`; ``stop()`` (or leaving a ``with`` block) shuts it down. The API keys are
    secrets of the sandbox's tenants: they are attributes, never shown in the repr.

    Attributes
    ----------
    url : str
        Base address, e.g. ``"http://127.0.0.1:8642"``.
    api_key : str
        Key of the default environment (the first one, Acme/Development).
    api_keys : dict[str, str]
        Key of every environment by ``"Organization/Environment"`` name.
    environments : list[dict]
        The seeded environments (``id``, ``organization_id``, ``organization``, ``name``,
        ``plan``, ``api_key``).
    incidents : list[dict]
        The incidents planted in the seeded data.
    clock : Clock
        The service's clock; ``now()`` reads it.
    store : Store
        The SQLite store behind the service.
    faults : Faults
        Fault injection and the rate limiter, off until set.
    traffic : LiveTraffic or None
        The live traffic generator while one runs.
    seed : int
        The seed of the data (a reused database file keeps its own).
    """

    def __init__(self, store: Store, clock: Clock, tenancy: dict[str, Any], seed: int):
        self.store = store
        self.clock = clock
        self.seed = seed
        self.environments: list[dict[str, Any]] = tenancy["environments"]
        self.incidents: list[dict[str, Any]] = tenancy["incidents"]
        self.api_keys = {_name(env): env["api_key"] for env in self.environments}
        self.api_key: str = self.environments[0]["api_key"]
        self.faults = Faults(seed=seed)
        self.traffic: LiveTraffic | None = None
        self.url = ""
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._stopped = False

    def now(self) -> datetime:
        """The service's current time."""
        return self.clock.now()

    def environment(self, name_or_id: str | None = None) -> dict[str, Any]:
        """The environment named ``"Organization/Environment"`` or with that id (default: first).

        Raises
        ------
        ValueError
            No such environment.
        """
        if name_or_id is None:
            return self.environments[0]
        for env in self.environments:
            if name_or_id in (env["id"], _name(env)):
                return env
        known = ", ".join(self.api_keys)
        raise ValueError(f"unknown environment {name_or_id!r}; known: {known}")

    def start_traffic(self, rate: float = 5.0, environment: str | None = None) -> LiveTraffic:
        """Insert new notifications at ``rate`` per second (replacing running traffic).

        Parameters
        ----------
        rate : float
            Notifications per second, > 0.
        environment : str, optional
            ``"Organization/Environment"`` name or id; default the first environment.
        """
        if isinstance(rate, bool) or not isinstance(rate, int | float) or rate <= 0:
            raise ValueError(f"rate must be a number > 0, got {rate!r}")
        env = self.environment(environment)
        with self._lock:
            self._stop_traffic()
            self.traffic = LiveTraffic(self.store, self.clock, env["id"], rate, seed=self.seed)
            self.traffic.start()
            return self.traffic

    def stop_traffic(self) -> None:
        """Stop the live traffic, if any."""
        with self._lock:
            self._stop_traffic()

    def _stop_traffic(self) -> None:
        if self.traffic is not None:
            self.traffic.stop()
            self.traffic = None

    def state(self) -> dict[str, Any]:
        """A summary without secrets: environments with counts, the clock, faults and traffic."""
        counts: dict[str, dict[str, int]] = {env["id"]: {} for env in self.environments}
        with self.store.read() as db:
            for table in ("notifications", "subscribers", "integrations"):
                deleted = " WHERE deleted = 0" if table != "notifications" else ""
                query = f"SELECT environment_id, COUNT(*) FROM {table}{deleted} GROUP BY 1"
                for env_id, count in db.execute(query):
                    counts.setdefault(env_id, {})[table] = count
        traffic = self.traffic
        return {
            "now": iso(self.now()),
            "seed": self.seed,
            "environments": [
                {
                    "name": _name(env),
                    "id": env["id"],
                    "organization_id": env["organization_id"],
                    "plan": env["plan"],
                    "counts": {
                        t: counts[env["id"]].get(t, 0)
                        for t in ("notifications", "subscribers", "integrations")
                    },
                }
                for env in self.environments
            ],
            "faults": self.faults.as_dict(),
            "traffic": None
            if traffic is None
            else {
                "environment": _name(self.environment(traffic.environment_id)),
                "rate": traffic.rate,
                "running": traffic.running,
                "count": traffic.count,
            },
        }

    def stop(self) -> None:
        """Stop traffic and the server, and close the store; calling it again does nothing."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            self._stop_traffic()
        if self._server is not None:
            self._server.should_exit = True
            self._thread.join(timeout=10)
        self.store.close()

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        status = "stopped" if self._stopped else "running"
        names = ", ".join(self.api_keys)
        return f"<Sandbox {self.url} {status}, environments: {names}>"

    def _serve(self, host: str, port: int, log_level: str) -> None:
        """Serve on ``host:port`` in a daemon thread; return once the server answers HTTP."""
        store = self.store

        @lru_cache(maxsize=64)
        def environment_of(api_key: str) -> str | None:
            with store.read() as db:
                row = db.execute(
                    "SELECT id FROM environments WHERE api_key = ?", (api_key,)
                ).fetchone()
            return row[0] if row else None

        service = FaultMiddleware(
            create_app(store, self.clock), self.faults, self.clock, environment_of
        )
        admin = _admin_app(self)

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
        self._server, self._thread = server, thread
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the sandbox could not start on {host}:{port}")
            time.sleep(0.01)
        bound_port = server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://{host}:{bound_port}"
        with urllib.request.urlopen(f"{self.url}{ADMIN_PREFIX}state", timeout=STARTUP_TIMEOUT):
            pass


def _name(env: dict[str, Any]) -> str:
    return f"{env['organization']}/{env['name']}"


def _admin_app(sandbox: Sandbox) -> Starlette:
    """The ``/_sandbox/`` routes: read the state, set faults, start or stop live traffic."""

    async def body_of(request: Request) -> dict[str, Any]:
        try:
            body = await request.json()
        except ValueError:
            raise ValueError("the body must be a JSON object") from None
        if not isinstance(body, dict):
            raise ValueError("the body must be a JSON object")
        return body

    async def state(request: Request) -> JSONResponse:
        return JSONResponse(await run_in_threadpool(sandbox.state))

    async def faults(request: Request) -> JSONResponse:
        try:
            sandbox.faults.update(await body_of(request))
        except ValueError as exc:
            return _unprocessable(exc)
        return JSONResponse(sandbox.faults.as_dict())

    async def traffic(request: Request) -> JSONResponse:
        try:
            body = await body_of(request)
            unknown = set(body) - {"rate", "environment"}
            if unknown or "rate" not in body:
                raise ValueError('expected {"rate": <per second, 0 stops>, "environment": <name>}')
            if body["rate"] == 0 and not isinstance(body["rate"], bool):
                await run_in_threadpool(sandbox.stop_traffic)
            else:
                await run_in_threadpool(
                    sandbox.start_traffic, body["rate"], body.get("environment")
                )
        except ValueError as exc:
            return _unprocessable(exc)
        return JSONResponse((await run_in_threadpool(sandbox.state))["traffic"])

    return Starlette(
        routes=[
            Route(f"{ADMIN_PREFIX}state", state, methods=["GET"]),
            Route(f"{ADMIN_PREFIX}faults", faults, methods=["POST"]),
            Route(f"{ADMIN_PREFIX}traffic", traffic, methods=["POST"]),
        ]
    )


def _unprocessable(exc: ValueError) -> JSONResponse:
    return JSONResponse(
        {"statusCode": 422, "message": str(exc), "error": "Unprocessable Entity"}, 422
    )


#: Modules that cannot change seeded data, left out of the cache key.
_NOT_SEEDING = {"__init__.py", "cli.py", "faults.py", "server.py"}
#: Seeded databases kept in the cache (the most recently used ones).
CACHE_SIZE = 4


def _cache_path(seed: int, now: datetime, notifications: int, subscribers: int) -> Path:
    """Where the seeded database of these inputs is cached; the key covers the seeding code."""
    digest = hashlib.sha256(f"{seed}|{iso(now)}|{notifications}|{subscribers}".encode())
    for module in sorted(Path(__file__).parent.glob("*.py")):
        if module.name not in _NOT_SEEDING:
            digest.update(module.read_bytes())
    return (
        Path(tempfile.gettempdir()) / "toolkit-sandbox-cache" / f"{digest.hexdigest()[:24]}.sqlite"
    )


def _seed(
    store: Store, clock: Clock, seed: int, notifications: int, subscribers: int, cache: bool
) -> None:
    """Populate an empty store, through the on-disk cache when ``cache`` (deterministic data).

    Cache files are written whole and renamed into place, so concurrent test runs are safe.
    """
    path = _cache_path(seed, clock.start, notifications, subscribers) if cache else None
    if path is not None:
        with suppress(sqlite3.OperationalError):  # not cached (yet)
            source = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
            with closing(source), store.read() as db:
                source.backup(db)
            with suppress(OSError):
                path.touch()  # most recently used
            return
    seeding.populate(
        store, seed=seed, now=clock.start, notifications=notifications, subscribers=subscribers
    )
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
        with closing(sqlite3.connect(partial)) as target, store.read() as db:
            db.backup(target)
        os.replace(partial, path)
        with suppress(OSError):  # another process may be pruning too
            cached = sorted(path.parent.glob("*.sqlite"), key=lambda p: -p.stat().st_mtime)
            for stale in cached[CACHE_SIZE:]:
                stale.unlink(missing_ok=True)


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
) -> Sandbox:
    """Start a sandbox service on ``host:port`` and return its handle once it answers.

    Parameters
    ----------
    seed : int
        Seed of the data (and of the fault draws); the data are a function of
        ``(seed, now, notifications, subscribers)``.
    port : int
        TCP port; 0 picks a free one (read ``Sandbox.url``).
    host : str
        Interface to bind; keep the default loopback unless you mean to share it.
    db : path, optional
        SQLite file. A new file is seeded; an existing one is reused as it is (data, API keys
        and all: ``seed`` and the sizes are then ignored). Default: in memory.
    now : str or datetime, optional
        The instant the service's clock starts at (ISO 8601). Default: the real now. Given
        explicitly, the seeded in-memory database is cached in the temp directory, so that the
        next start with the same inputs is fast.
    notifications, subscribers : int
        Sizes of the seeded data set of the default environment.
    traffic_rate : float
        Start live traffic at this many notifications per second (0: none).
    rate_limit : bool
        Turn the service's rate limiter on (`Faults.rate_limit`).
    log_level : str
        uvicorn's log level.

    Returns
    -------
    Sandbox
        Use it as a context manager, or call ``stop()``.
    """
    clock = Clock(now)
    store = Store(db or ":memory:")
    try:
        if store.get_meta("tenancy") is None:
            cache = db is None and now is not None
            _seed(store, clock, seed, notifications, subscribers, cache)
        seed = int(store.get_meta("seed") or seed)  # a reused database keeps its own seed
        sandbox = Sandbox(store, clock, _tenancy(store), seed)
    except BaseException:
        store.close()
        raise
    try:
        if rate_limit:
            sandbox.faults.rate_limit()
        sandbox._serve(host, port, log_level)
        if traffic_rate:
            sandbox.start_traffic(traffic_rate)
    except BaseException:
        sandbox.stop()
        raise
    return sandbox
