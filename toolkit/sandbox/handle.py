"""`Sandbox`: the handle of a running sandbox (made by `toolkit.sandbox.start`)."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from typing import Any

import uvicorn

from toolkit.sandbox.clock import Clock, iso
from toolkit.sandbox.faults import Faults
from toolkit.sandbox.seed.failures import outage_failure
from toolkit.sandbox.seed.incidents import IncidentPlan, IncidentSpec
from toolkit.sandbox.store import Store
from toolkit.sandbox.traffic import LiveTraffic


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
        The incidents planted in the seeded data (``kind``, ``name``, ``summary``, ``channel``,
        ``provider_id``, ``start``, ``end``, ``error_code``, ``domain``, ``notifications``,
        ``subscribers``, ``notification_ids``, ``subscriber_ids``, ...).
    clock : Clock
        The service's clock; ``now()`` reads it (``clock.speed``: how much faster than real time;
        0: stopped, moved by `advance`).
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
        self._outages: dict[str, IncidentPlan] = {}  # provider -> live outage (replaced whole)
        self.url = ""
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._stopped = False

    def now(self) -> datetime:
        """The service's current time."""
        return self.clock.now()

    def advance(self, seconds: float) -> datetime:
        """Move the stopped clock of ``start(clock_speed=0)`` ``seconds`` forward; live traffic
        inserts what falls due by then before this returns. Returns the new now.

        Raises
        ------
        ValueError
            The clock runs (``clock_speed > 0``), or ``seconds`` is not a number >= 0.
        """
        if self.clock.speed:
            raise ValueError(
                f"advance() moves a stopped clock (start(clock_speed=0)); this one runs at "
                f"{self.clock.speed:g}x real time"
            )
        with self._lock:
            self.clock.advance(seconds)
            if self.traffic is not None:
                self.traffic.catch_up(self.clock.now())
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
            self.traffic = LiveTraffic(
                self.store, self.clock, env["id"], rate, seed=self.seed, live=self._live
            )
            self.traffic.start()
            return self.traffic

    def start_outage(
        self, provider_id: str, *, failure_rate: float = 0.9, error_code: str | None = None
    ) -> dict[str, Any]:
        """Fail ``failure_rate`` of live traffic's jobs sent through ``provider_id`` from now on.

        Notifications triggered from now on meet it (their retries fail too) until
        `stop_outage`; seeded data are not changed. ``error_code`` replaces the provider's
        outage error. Returns the outage as `outages` lists it.

        Raises
        ------
        ValueError
            An unknown provider, or a rate outside (0, 1].
        """
        spec = IncidentSpec.of({"kind": "provider_outage", "provider_id": provider_id})
        if isinstance(failure_rate, bool) or not isinstance(failure_rate, int | float):
            raise ValueError(f"failure_rate must be a number in (0, 1], got {failure_rate!r}")
        if not 0 < failure_rate <= 1:
            raise ValueError(f"failure_rate must be a number in (0, 1], got {failure_rate!r}")
        if error_code is not None and (not isinstance(error_code, str) or not error_code):
            raise ValueError(f"error_code must be a non-empty string, got {error_code!r}")
        failure = outage_failure(provider_id, error_code)
        plan = IncidentPlan(
            f"live-outage-{provider_id}",
            f"{provider_id} outage (live): sends fail with {failure.code}",
            spec.channel,
            provider_id,
            self.now(),
            datetime.max.replace(tzinfo=UTC),
            failure,
            failure_rate=float(failure_rate),
        )
        with self._lock:
            self._outages = {**self._outages, provider_id: plan}
        return _outage(plan)

    def stop_outage(self, provider_id: str | None = None) -> None:
        """End the live outage of ``provider_id`` (default: every one)."""
        with self._lock:
            self._outages = {
                p: plan for p, plan in self._outages.items() if provider_id not in (None, p)
            }

    def outages(self) -> list[dict[str, Any]]:
        """The live outages: ``provider_id``, ``channel``, ``failure_rate``, ``error_code``,
        ``start``."""
        return [_outage(plan) for plan in self._outages.values()]

    def _live(self) -> list[IncidentPlan]:
        return list(self._outages.values())

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
            "clock_speed": self.clock.speed,
            "incidents": [
                {k: v for k, v in incident.items() if not k.endswith("_ids")}
                for incident in self.incidents
            ],
            "faults": self.faults.as_dict(),
            "outages": self.outages(),
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


def _outage(plan: IncidentPlan) -> dict[str, Any]:
    return {
        "provider_id": plan.provider_id,
        "channel": plan.channel,
        "failure_rate": plan.failure_rate,
        "error_code": plan.failure.code,
        "start": iso(plan.start),
    }


def _name(env: dict[str, Any]) -> str:
    return f"{env['organization']}/{env['name']}"
