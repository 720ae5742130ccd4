"""Fault injection for the sandbox: latency, errors, 429s, dropped connections, a rate limiter.

`Faults` holds the settings; tests, the admin route and the CLI change them at any time.
`FaultMiddleware` applies them to every request except the admin routes under ``/_sandbox/``.
`DroppingH11Protocol` is uvicorn's HTTP/1.1 protocol with a hook that lets the middleware drop
the connection for real, so that a client sees a connection error rather than a response.
"""

from __future__ import annotations

import asyncio
import json
import math
import random
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator
from uvicorn.protocols.http.h11_impl import H11Protocol

from toolkit.sandbox.clock import Clock, iso

#: Paths under this prefix are the sandbox's own admin routes: never faulted, never limited.
ADMIN_PREFIX = "/_sandbox/"

#: Key, in a request scope's ``extensions``, of the callable that drops the connection.
DROP_EXTENSION = "toolkit.sandbox.drop"

#: Rate-limit category of each path prefix, as the real service groups its operations.
CATEGORIES = {
    "/v1/subscribers": "configuration",
    "/v2/subscribers": "configuration",
    "/v1/integrations": "global",
    "/v1/notifications": "global",
}

RATE_LIMIT_MESSAGE = "API rate limit exceeded"


class _Settings(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


Seconds = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Fraction = Annotated[float, Field(ge=0, le=1)]
Status = Annotated[int, Field(ge=400, le=599)]
Count = Annotated[int, Field(ge=0)]
Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]


class Steady(_Settings):
    """The steady faults (`Faults.set`)."""

    latency: Seconds = 0.0
    jitter: Seconds = 0.0
    error_rate: Fraction = 0.0
    error_status: Status = 503
    drop_rate: Fraction = 0.0


class FailNext(_Settings):
    n: Count
    status: Status = 503


class ThrottleNext(_Settings):
    n: Count
    retry_after: Count = 1


class DropNext(_Settings):
    n: Count


class RateLimit(_Settings):
    """The rate limiter's settings (`Faults.rate_limit`)."""

    enabled: bool = True
    global_rps: Positive = 30
    configuration_rps: Positive = 20
    window: Positive = 5
    burst: Positive = 1.1

    @model_validator(mode="after")
    def _allows_a_request(self) -> RateLimit:
        if min(self.global_rps, self.configuration_rps) * self.window * self.burst < 1:
            raise ValueError("rps * window * burst must allow at least one request")
        return self


class FaultSettings(_Settings):
    """The body of ``POST /_sandbox/faults`` (see `Faults.update`)."""

    reset: bool = False
    latency: Seconds | None = None
    jitter: Seconds | None = None
    error_rate: Fraction | None = None
    error_status: Status | None = None
    drop_rate: Fraction | None = None
    fail_next: Count | FailNext | None = None
    throttle_next: Count | ThrottleNext | None = None
    drop_next: Count | None = None
    rate_limit: bool | RateLimit | None = None


def message_of(problems: list[dict[str, Any]]) -> str:
    """One line naming each invalid field (``rate_limit.global_rps: ...``) of pydantic errors."""
    lines = []
    for problem in problems:
        path = [
            str(part)
            for part in problem["loc"]
            if part != "body"
            and str(part) not in ("int", "bool", "float", "str")
            and not str(part)[:1].isupper()
        ]
        lines.append(f"{'.'.join(path) or 'settings'}: {problem['msg']}")
    return "; ".join(dict.fromkeys(lines))


@dataclass(frozen=True)
class _Plan:
    """What the fault layer does with one request: wait ``delay`` seconds, then ``action``."""

    delay: float = 0.0
    action: str | None = None  # None (pass on) | "drop" | "throttle" | "error"
    status: int = 0
    retry_after: int = 0


@dataclass(frozen=True)
class _Limit:
    """The rate limiter's answer for one request."""

    allowed: bool
    headers: dict[str, str]


class Faults:
    """Thread-safe, mutable fault settings of one sandbox, all off until set.

    Parameters
    ----------
    seed : int
        Seed of the random draws (latency jitter, error and drop rates), for reproducible runs.

    Examples
    --------
    >>> faults = Faults(seed=1)
    >>> faults.set(latency=0.05, error_rate=0.1)   # every request: +50 ms, 10 % answer 503
    >>> faults.fail_next(2, status=500)            # the next two requests answer 500
    >>> faults.reset()                             # everything off again
    """

    def __init__(self, seed: int = 0):
        #: How the fault layer waits out a request's latency (a coroutine function of seconds);
        #: tests may replace it to observe the waits.
        self.sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep
        #: The rate limiter's clock (seconds; real time): tests may replace it to decide how
        #: much the buckets refill.
        self.timer: Callable[[], float] = time.monotonic
        self._lock = threading.Lock()
        self._rng = random.Random(seed)
        self.reset()

    def reset(self) -> None:
        """Turn every fault and the rate limiter off, and zero the counters."""
        with self._lock:
            self._steady = {
                "latency": 0.0,
                "jitter": 0.0,
                "error_rate": 0.0,
                "error_status": 503,
                "drop_rate": 0.0,
            }
            self._fail = (0, 503)
            self._throttle = (0, 1)
            self._drop = 0
            self._limits: dict[str, float] | None = None
            self._buckets: dict[tuple[str, str], tuple[float, float]] = {}
            self._stats = dict.fromkeys(
                ["requests", "delayed", "errors", "throttled", "rate_limited", "dropped"], 0
            )

    def set(
        self,
        latency: float = 0.0,
        jitter: float = 0.0,
        error_rate: float = 0.0,
        error_status: int = 503,
        drop_rate: float = 0.0,
    ) -> None:
        """Replace the steady faults; parameters not given return to their defaults (off).

        Parameters
        ----------
        latency, jitter : float
            Every request waits ``latency ± jitter`` seconds (uniform, never below zero).
        error_rate : float
            Fraction of requests answered with ``error_status`` and the service's error body.
        error_status : int
            Status of those errors (400-599).
        drop_rate : float
            Fraction of requests whose connection is dropped without any response.
        """
        steady = Steady(
            latency=latency,
            jitter=jitter,
            error_rate=error_rate,
            error_status=error_status,
            drop_rate=drop_rate,
        ).model_dump()
        with self._lock:
            self._steady = steady

    def fail_next(self, n: int, status: int = 503) -> None:
        """Answer the next ``n`` requests with ``status`` (replaces a pending ``fail_next``)."""
        fail = (FailNext(n=n, status=status).n, status)
        with self._lock:
            self._fail = fail

    def throttle_next(self, n: int, retry_after: int = 1) -> None:
        """Answer the next ``n`` requests 429 with ``Retry-After: retry_after`` (seconds)."""
        throttle = (ThrottleNext(n=n, retry_after=retry_after).n, retry_after)
        with self._lock:
            self._throttle = throttle

    def drop_next(self, n: int) -> None:
        """Drop the connection of the next ``n`` requests without answering."""
        drop = DropNext(n=n).n
        with self._lock:
            self._drop = drop

    def rate_limit(
        self,
        enabled: bool = True,
        global_rps: float = 30,
        configuration_rps: float = 20,
        window: float = 5,
        burst: float = 1.1,
    ) -> None:
        """Turn the service's token-bucket rate limiter on (or off with ``enabled=False``).

        Each (environment, category) pair has a bucket of ``rps * window * burst`` tokens that
        refills at ``rps`` tokens per second. Subscriber operations are the ``configuration``
        category; integrations and the activity feed the ``global`` one. Limited responses carry
        ``RateLimit-Limit`` (tokens per window), ``RateLimit-Remaining``, ``RateLimit-Reset``
        (seconds until the bucket is full) and ``RateLimit-Policy``; an empty bucket answers 429
        with ``Retry-After``.
        """
        settings = RateLimit(
            enabled=enabled,
            global_rps=global_rps,
            configuration_rps=configuration_rps,
            window=window,
            burst=burst,
        )
        limits = {
            "global": settings.global_rps,
            "configuration": settings.configuration_rps,
            "window": settings.window,
            "burst": settings.burst,
        }
        with self._lock:
            self._limits = limits if enabled else None
            self._buckets.clear()

    def update(self, settings: FaultSettings | Mapping[str, Any]) -> None:
        """Apply a `FaultSettings` (the body of ``POST /_sandbox/faults``), or a dict of one.

        ``{"reset": true}`` first turns everything off. The fields of `set` (``latency``,
        ``jitter``, ``error_rate``, ``error_status``, ``drop_rate``) replace the steady faults
        together. ``fail_next``, ``throttle_next`` and ``drop_next`` take a count or an object of
        the method's arguments (``{"n": 2, "status": 500}``); ``rate_limit`` takes a boolean or an
        object of `rate_limit`'s arguments. Invalid settings raise `pydantic.ValidationError` (a
        ValueError) before anything changes.
        """
        if not isinstance(settings, FaultSettings):
            settings = FaultSettings.model_validate(settings)
        given = settings.model_dump(exclude_none=True, exclude={"reset"})
        if settings.reset:
            self.reset()
        steady = {key: given[key] for key in Steady.model_fields if key in given}
        if steady:
            self.set(**steady)
        for name in ("fail_next", "throttle_next", "drop_next", "rate_limit"):
            if name in given:
                value = given[name]
                method = getattr(self, name)
                method(**value) if isinstance(value, dict) else method(value)

    @property
    def stats(self) -> dict[str, int]:
        """Counters since the last `reset`: requests seen and the faults applied to them."""
        with self._lock:
            return dict(self._stats)

    def as_dict(self) -> dict[str, Any]:
        """The current settings and counters, as JSON-ready data."""
        with self._lock:
            limits = self._limits
            return {
                **self._steady,
                "fail_next": {"n": self._fail[0], "status": self._fail[1]},
                "throttle_next": {"n": self._throttle[0], "retry_after": self._throttle[1]},
                "drop_next": self._drop,
                "rate_limit": {
                    "enabled": limits is not None,
                    **(
                        {
                            "global_rps": limits["global"],
                            "configuration_rps": limits["configuration"],
                            "window": limits["window"],
                            "burst": limits["burst"],
                        }
                        if limits
                        else {}
                    ),
                },
                "stats": dict(self._stats),
            }

    def __repr__(self) -> str:
        return f"Faults({self.as_dict()!r})"

    def _chance(self, rate: float) -> bool:
        return rate > 0 and self._rng.random() < rate

    def _plan(self) -> _Plan:
        """Decide the fate of one request and count it."""
        with self._lock:
            steady, stats = self._steady, self._stats
            stats["requests"] += 1
            delay = 0.0
            if steady["latency"] or steady["jitter"]:
                spread = self._rng.uniform(-steady["jitter"], steady["jitter"])
                delay = max(0.0, steady["latency"] + spread)
                stats["delayed"] += 1
            if self._drop or self._chance(steady["drop_rate"]):
                self._drop = max(0, self._drop - 1)
                stats["dropped"] += 1
                return _Plan(delay, "drop")
            if self._throttle[0]:
                self._throttle = (self._throttle[0] - 1, self._throttle[1])
                stats["throttled"] += 1
                return _Plan(delay, "throttle", 429, self._throttle[1])
            if self._fail[0]:
                self._fail = (self._fail[0] - 1, self._fail[1])
                stats["errors"] += 1
                return _Plan(delay, "error", self._fail[1])
            if self._chance(steady["error_rate"]):
                stats["errors"] += 1
                return _Plan(delay, "error", steady["error_status"])
            return _Plan(delay)

    def _take(self, environment_id: str, category: str) -> _Limit | None:
        """Take a token from the (environment, category) bucket; None when not limiting."""
        with self._lock:
            limits = self._limits
            if limits is None:
                return None
            rps, window = limits[category], limits["window"]
            capacity = rps * window * limits["burst"]
            now = self.timer()
            tokens, last = self._buckets.get((environment_id, category), (capacity, now))
            tokens = min(capacity, tokens + (now - last) * rps)
            allowed = tokens >= 1
            if allowed:
                tokens -= 1
            else:
                self._stats["rate_limited"] += 1
            self._buckets[(environment_id, category)] = (tokens, now)
        headers = {
            "RateLimit-Limit": str(math.floor(rps * window)),
            "RateLimit-Remaining": str(math.floor(tokens)),
            "RateLimit-Reset": str(math.ceil((capacity - tokens) / rps)),
            "RateLimit-Policy": (
                f"{math.floor(rps * window)};w={window:g};burst={math.floor(capacity)};"
                f'comment="token bucket";category="{category}"'
            ),
        }
        if not allowed:
            headers["Retry-After"] = str(max(1, math.ceil((1 - tokens) / rps)))
        return _Limit(allowed, headers)


def category_of(path: str) -> str | None:
    """The rate-limit category of a request path, or None for paths that are not limited."""
    for prefix, category in CATEGORIES.items():
        if path == prefix or path.startswith(prefix + "/"):
            return category
    return None


def api_key_of(scope: Mapping[str, Any]) -> str | None:
    """The key of an ``Authorization: ApiKey <key>`` header, else None."""
    for name, value in scope["headers"]:
        if name == b"authorization":
            scheme, _, key = value.decode("latin-1").partition(" ")
            if scheme == "ApiKey" and key.strip():
                return key.strip()
    return None


class FaultMiddleware:
    """Pure ASGI middleware applying a `Faults` to every HTTP request outside ``/_sandbox/``.

    Parameters
    ----------
    app : ASGI application
        The service.
    faults : Faults
        The settings, read on every request.
    clock : Clock
        Time of the error bodies' ``timestamp``.
    environment_of : callable
        API key -> environment id (None when unknown); requests without a known key are left to
        the service, which answers 401, and are not rate limited.
    """

    def __init__(
        self,
        app: Callable,
        faults: Faults,
        clock: Clock,
        environment_of: Callable[[str], str | None],
    ):
        self.app = app
        self.faults = faults
        self.clock = clock
        self.environment_of = environment_of

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http" or scope["path"].startswith(ADMIN_PREFIX):
            await self.app(scope, receive, send)
            return
        plan = self.faults._plan()
        if plan.delay:
            await self.faults.sleep(plan.delay)
        if plan.action == "drop":
            drop = scope.get("extensions", {}).get(DROP_EXTENSION)
            if drop is None:
                raise RuntimeError("dropping connections needs uvicorn with DroppingH11Protocol")
            drop()
            return
        if plan.action == "throttle":
            retry = {"Retry-After": str(plan.retry_after)}
            await self._error(scope, send, 429, RATE_LIMIT_MESSAGE, retry)
            return
        if plan.action == "error":
            await self._error(scope, send, plan.status, HTTPStatus(plan.status).phrase)
            return
        limit = self._limit(scope)
        if limit is None:
            await self.app(scope, receive, send)
        elif not limit.allowed:
            await self._error(scope, send, 429, RATE_LIMIT_MESSAGE, limit.headers)
        else:
            extra = [(k.lower().encode(), v.encode()) for k, v in limit.headers.items()]

            async def send_with_headers(message: dict) -> None:
                if message["type"] == "http.response.start":
                    message = {**message, "headers": [*message.get("headers", []), *extra]}
                await send(message)

            await self.app(scope, receive, send_with_headers)

    def _limit(self, scope: dict) -> _Limit | None:
        if self.faults._limits is None:
            return None
        category = category_of(scope["path"])
        key = api_key_of(scope)
        environment_id = self.environment_of(key) if category and key else None
        return self.faults._take(environment_id, category) if environment_id else None

    async def _error(
        self, scope: dict, send: Callable, status: int, message: str, headers: dict | None = None
    ) -> None:
        query = scope.get("query_string", b"").decode("latin-1")
        body = {
            "statusCode": status,
            "timestamp": iso(self.clock.now()),
            "path": scope["path"] + (f"?{query}" if query else ""),
            "message": message,
            "error": HTTPStatus(status).phrase,
        }
        encoded = json.dumps(body).encode()
        raw_headers = [
            (b"content-type", b"application/json; charset=utf-8"),
            (b"content-length", str(len(encoded)).encode()),
            *((k.lower().encode(), v.encode()) for k, v in (headers or {}).items()),
        ]
        await send({"type": "http.response.start", "status": status, "headers": raw_headers})
        await send({"type": "http.response.body", "body": encoded})


class DroppingH11Protocol(H11Protocol):
    """uvicorn's h11 protocol, giving each request a hook that drops its connection.

    The hook (``scope["extensions"][DROP_EXTENSION]``) aborts the TCP connection before any
    byte of the response is written: the client sees the connection closed on it.
    """

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        app = self.app

        async def app_with_drop_hook(scope: dict, receive: Callable, send: Callable) -> None:
            scope.setdefault("extensions", {})[DROP_EXTENSION] = self._drop
            await app(scope, receive, send)

        self.app = app_with_drop_hook

    def _drop(self) -> None:
        self.cycle.disconnected = True
        self.transport.abort()
