"""The HTTP transport: auth, JSON, error mapping, THE retry loop, pacing and idempotency keys.

Every request of the toolkit goes through `Transport.request`. It is safe to share between
threads: concurrent readers share one connection pool and one `Pacer`.
"""

from __future__ import annotations

import itertools
import logging
import os
import random
import re
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson
import requests
from requests.adapters import HTTPAdapter

from toolkit._version import __version__
from toolkit.errors import (
    ServiceConnectionError,
    ServiceError,
    error_from_response,
    parse_retry_after,
)

__all__ = ["CATEGORIES", "RETRY_STATUSES", "Pacer", "Transport", "category_of"]

log = logging.getLogger("toolkit.http")

#: Statuses worth retrying: the request may succeed unchanged a little later.
RETRY_STATUSES = frozenset({408, 429, 502, 503, 504})
#: Methods that change state: they carry an idempotency key, the same one on every attempt.
WRITE_METHODS = frozenset({"POST", "PATCH", "PUT"})
#: Rate-limit category of each path prefix, as the service groups its operations.
CATEGORIES = {
    "/v1/notifications": "global",
    "/v1/integrations": "global",
    "/v1/subscribers": "configuration",
    "/v2/subscribers": "configuration",
}
#: Waits at least this long (seconds) are logged as warnings: the user sees the client retrying.
LONG_WAIT = 5.0
#: Window of the service's buckets when ``RateLimit-Policy`` does not say (the real service's).
DEFAULT_WINDOW = 5.0

_NETWORK_ERRORS = (
    requests.ConnectionError,
    requests.Timeout,
    requests.exceptions.ChunkedEncodingError,
)


def category_of(path: str) -> str | None:
    """The rate-limit category (``"global"``, ``"configuration"``) of a path, else None."""
    for prefix, category in CATEGORIES.items():
        if path == prefix or path.startswith(prefix + "/"):
            return category
    return None


@dataclass
class _Bucket:
    rate: float  # tokens per second
    capacity: float
    tokens: float  # may go negative: tokens reserved by requests waiting their turn
    stamp: float

    def refill(self, now: float) -> None:
        self.tokens = min(self.capacity, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now


class Pacer:
    """A client-side mirror of the service's token buckets, fed by ``RateLimit-*`` headers.

    Each request first reserves a token of its category; when the mirror says the bucket is
    (nearly) empty, the request waits until the bucket has refilled enough, so concurrent
    readers spread their requests over the refill instead of running into 429s. Categories the
    service has not rate-limited yet are not paced.

    Parameters
    ----------
    sleep : callable
        How to wait (injectable for tests).
    margin : float
        Tokens kept in reserve, for the service's rounding and for other clients.
    clock : callable
        Monotonic seconds.
    """

    def __init__(
        self,
        sleep: Callable[[float], Any] = time.sleep,
        margin: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.sleep, self.margin, self.clock = sleep, margin, clock
        self._lock = threading.Lock()
        self._buckets: dict[str, _Bucket] = {}

    def wait(self, category: str | None) -> float:
        """Reserve a token of ``category``; sleep until it is due. Returns the seconds slept."""
        with self._lock:
            bucket = self._buckets.get(category)
            if bucket is None:
                return 0.0
            bucket.refill(self.clock())
            bucket.tokens -= 1
            delay = max(0.0, (self.margin - bucket.tokens) / bucket.rate)
        if delay:
            self.sleep(delay)
        return delay

    def observe(self, category: str | None, headers: Mapping[str, str]) -> None:
        """Update the mirror from a response's ``RateLimit-Limit/-Remaining/-Policy`` headers."""
        try:
            limit = float(headers["RateLimit-Limit"])
            remaining = float(headers["RateLimit-Remaining"])
        except (KeyError, TypeError, ValueError):
            return
        if category is None or limit <= 0:
            return
        policy = headers.get("RateLimit-Policy", "")
        window = _policy_number(policy, "w") or DEFAULT_WINDOW
        capacity = max(_policy_number(policy, "burst") or limit, remaining)
        with self._lock:
            now = self.clock()
            bucket = self._buckets.get(category)
            if bucket is None:
                self._buckets[category] = _Bucket(limit / window, capacity, remaining, now)
                return
            bucket.rate, bucket.capacity = limit / window, capacity
            bucket.refill(now)
            bucket.tokens = min(bucket.tokens, remaining)


def _policy_number(policy: str, name: str) -> float | None:
    match = re.search(rf"(?:^|;)\s*{name}=([0-9.]+)", policy)
    return float(match.group(1)) if match else None


#: Every live `Transport`: a forked child drops their pooled connections (the parent's sockets).
_TRANSPORTS: weakref.WeakSet[Transport] = weakref.WeakSet()


class Transport:
    """Sends requests to the service, retrying what is worth retrying.

    In a forked child (`toolkit._fork`), it opens its own connections: the pooled ones are the
    parent's.

    Parameters
    ----------
    base_url : str
        The service's base address.
    api_key : str
        Sent as ``Authorization: ApiKey <key>``; never logged nor put in a message.
    timeout : float
        Seconds to wait for a connection and for each response.
    max_retries : int
        Retries after the first attempt (connection errors, 408, 429, 502, 503, 504, and a
        409 that asks to retry).
    max_wait : float
        The most seconds a request may spend waiting between its attempts; when the next wait
        would pass it, the last error is raised, saying how long it tried.
    sleep : callable
        How to wait (injectable so that tests need not).
    clock : callable
        Monotonic seconds (injectable with ``sleep``), for pacing and the time spent retrying.
    rng : random.Random, optional
        Source of the backoff jitter.
    pool_size : int
        Connections kept open, at least the number of concurrent workers.
    backoff, max_backoff : float
        Exponential backoff with full jitter: attempt ``n`` waits ``uniform(0, min(max_backoff,
        backoff * 2**(n-1)))`` unless the service said how long (``Retry-After``).
    """

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float = 30.0,
        max_retries: int = 10,
        max_wait: float = 60.0,
        sleep: Callable[[float], Any] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
        pool_size: int = 32,
        backoff: float = 0.5,
        max_backoff: float = 30.0,
    ):
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key
        self.timeout, self.max_retries, self.max_wait = timeout, max_retries, max_wait
        self.sleep, self.clock, self.rng = sleep, clock, rng or random.Random()
        self.backoff, self.max_backoff = backoff, max_backoff
        self.pacer = Pacer(sleep=sleep, clock=clock)
        self.session = requests.Session()
        self.session.trust_env = False  # no proxy and netrc look-up on every request
        adapter = HTTPAdapter(pool_connections=4, pool_maxsize=pool_size)
        self.session.mount("http://", adapter)
        self.session.mount("https://", adapter)
        self.session.headers.update(
            {
                "Authorization": f"ApiKey {api_key}",
                "Accept": "application/json",
                "User-Agent": f"toolkit/{__version__}",
            }
        )
        _TRANSPORTS.add(self)

    def __repr__(self) -> str:
        return f"<Transport {self.base_url}>"

    def close(self) -> None:
        """Close the pooled connections."""
        self.session.close()

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        idempotency_key: str | None = None,
    ) -> Any:
        """Send one request, with retries; return the decoded JSON body (None when empty).

        Parameters
        ----------
        method : str
            HTTP method.
        path : str
            Path from the base URL, e.g. ``/v1/notifications`` (segments already quoted).
        params : mapping, optional
            Query parameters; list values repeat the parameter.
        json : object, optional
            The JSON body.
        idempotency_key : str, optional
            For writes: the key to send; default a new uuid4, the same on every attempt.
            GET and DELETE carry none.

        Raises
        ------
        ServiceError
            The mapped error of the last attempt.
        """
        method = method.upper()
        headers = {}
        if method in WRITE_METHODS:
            headers["Idempotency-Key"] = idempotency_key or str(uuid.uuid4())
        category = category_of(path)
        started, waited = self.clock(), 0.0
        for attempt in itertools.count(1):
            self.pacer.wait(category)
            sent = self.clock()
            try:
                response = self.session.request(
                    method,
                    self.base_url + path,
                    params=params,
                    json=json,
                    headers=headers,
                    timeout=self.timeout,
                )
            except _NETWORK_ERRORS as exc:
                log.debug("%s %s -> %s (attempt %d)", method, path, type(exc).__name__, attempt)
                error: ServiceError = ServiceConnectionError(method, path, None, _describe(exc))
                if _refused(exc):  # nothing listens there: retrying cannot help
                    raise error.with_note("[connection refused: not retried]", attempt) from None
                delay = None
            else:
                status = response.status_code
                elapsed = self.clock() - sent
                log.debug(
                    "%s %s -> %d (attempt %d, %.3f s)", method, path, status, attempt, elapsed
                )
                self.pacer.observe(category, response.headers)
                if status < 400:
                    return self._decode(method, path, response)
                error = error_from_response(
                    method, path, status, _body(response), response.headers, api_key=self._api_key
                )
                if not _retryable(status, response.headers):
                    raise error.with_note("", attempt)
                delay = _server_delay(status, response.headers)
            total = self.clock() - started
            if attempt > self.max_retries:
                raise error.with_note(
                    f"[gave up after {attempt} attempts in {total:.1f} s]", attempt
                )
            if delay is None:
                delay = self.rng.uniform(
                    0, min(self.max_backoff, self.backoff * 2 ** (attempt - 1))
                )
            else:
                delay *= 1 + 0.1 * self.rng.random()  # spread workers told the same wait
            if waited + delay > self.max_wait:
                raise error.with_note(
                    f"[gave up after {attempt} attempts in {total:.1f} s: waiting {delay:.1f} s "
                    f"more would pass max_wait={self.max_wait:g} s]",
                    attempt,
                )
            log.log(
                logging.WARNING if delay >= LONG_WAIT else logging.INFO,
                "%s %s: retrying in %.2f s (attempt %d of %d: %s)",
                method,
                path,
                delay,
                attempt,
                self.max_retries + 1,
                error,
            )
            self.sleep(delay)
            waited += delay

    def _decode(self, method: str, path: str, response: requests.Response) -> Any:
        if not response.content:
            return None
        try:
            return _json(response)
        except ValueError:
            raise ServiceError(
                method,
                path,
                response.status_code,
                f"the response is not JSON ({response.headers.get('Content-Type', 'no type')})",
                hint="(is SVC_BASE_URL the service's API address?)",
            ) from None


def _json(response: requests.Response) -> Any:
    """The decoded JSON body (ValueError if it is not JSON): orjson decodes a page of the
    activity feed in half the time of the standard library's ``json``."""
    return orjson.loads(response.content)


def _body(response: requests.Response) -> Any:
    try:
        return _json(response)
    except ValueError:
        return response.text


def _retryable(status: int, headers: Mapping[str, str]) -> bool:
    # 409 + Retry-After: the same idempotent write is still running on the service.
    return status in RETRY_STATUSES or (status == 409 and "Retry-After" in headers)


def _server_delay(status: int, headers: Mapping[str, str]) -> float | None:
    """The wait the service asked for: ``Retry-After``, else (for 429) ``RateLimit-Reset``."""
    delay = parse_retry_after(headers.get("Retry-After"))
    if delay is None and status == 429:
        delay = parse_retry_after(headers.get("RateLimit-Reset"))
    return delay


def _refused(exc: Exception) -> bool:
    """Whether the connection was refused (a cause anywhere in the chain of ``exc``)."""
    seen: set[int] = set()
    pending: list[Any] = [exc]
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, ConnectionRefusedError):
            return True
        pending += [current.__cause__, current.__context__, getattr(current, "reason", None)]
        pending += [arg for arg in getattr(current, "args", ()) if isinstance(arg, BaseException)]
    return False


def _describe(exc: Exception) -> str:
    text = " ".join(str(exc).split()) or "no detail"
    text = text if len(text) <= 200 else text[:197] + "..."
    return f"connection failed ({type(exc).__name__}: {text})"


def _after_fork_in_child() -> None:
    """Let the parent's pooled connections go (closing this process's copy of a socket leaves
    the parent's open): the next requests open new ones."""
    for transport in list(_TRANSPORTS):
        transport.close()


os.register_at_fork(after_in_child=_after_fork_in_child)
