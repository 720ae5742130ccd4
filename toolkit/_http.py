"""The HTTP transport: auth, JSON, error mapping, THE retry loop, pacing and idempotency keys.

Every request of the toolkit goes through `Transport.request`. It is safe to share between
threads: concurrent readers share one connection pool and one `Pacer`.
"""

from __future__ import annotations

import contextlib
import functools
import heapq
import itertools
import logging
import math
import os
import random
import re
import socket
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urljoin, urlsplit

import orjson
import requests
import urllib3
import urllib3.connection
from requests.adapters import HTTPAdapter

from toolkit._version import __version__
from toolkit.errors import (
    RedirectError,
    ServiceConnectionError,
    ServiceError,
    error_from_response,
    parse_retry_after,
)
from toolkit.redact import mask_userinfo, secret_values

__all__ = [
    "CATEGORIES",
    "RETRY_STATUSES",
    "Pacer",
    "Redirected",
    "Transport",
    "category_of",
    "fetch",
]

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
#: ``RateLimit-*`` numbers outside these bounds are garbage: ignored, with a warning.
_LIMIT_RANGE, _WINDOW_RANGE = (0.0, 1e7), (0.0, 86400.0)
#: Most bytes of a response body once decompressed: a larger body is refused, not read.
MAX_BODY = 64 * 2**20
#: Bytes read (and decompressed) at a time.
_CHUNK = 256 * 1024
#: Redirect statuses, those a write may follow (they keep the method and body), and most hops.
REDIRECTS = frozenset({301, 302, 303, 307, 308})
_BODY_KEEPING = frozenset({307, 308})
MAX_HOPS = 5

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
        self._warned = False
        #: The part of each bucket this process takes (see `shared`).
        self.share = 1.0

    @contextlib.contextmanager
    def shared(self, processes: int) -> Iterator[None]:
        """While the block runs, this process takes ``1/processes`` of each bucket (of its rate,
        burst and remaining tokens): processes forked meanwhile, reading the same buckets with
        the same mirror, take the rest, instead of each running into 429s."""
        self._rescale(1 / processes)
        try:
            yield
        finally:
            self._rescale(processes)

    def _rescale(self, factor: float) -> None:
        with self._lock:
            self.share *= factor
            for bucket in self._buckets.values():
                bucket.rate, bucket.capacity = bucket.rate * factor, bucket.capacity * factor
                bucket.tokens *= factor

    def wait(self, category: str | None, most: float = math.inf) -> float:
        """Reserve a token of ``category``; sleep until it is due, but at most ``most`` seconds
        (then the request goes and the service decides). Returns the seconds slept."""
        with self._lock:
            bucket = self._buckets.get(category)
            if bucket is None:
                return 0.0
            bucket.refill(self.clock())
            bucket.tokens -= 1
            delay = min(max(0.0, (self.margin - bucket.tokens) / bucket.rate), max(0.0, most))
        if delay:
            self.sleep(delay)
        return delay

    def observe(self, category: str | None, headers: Mapping[str, str]) -> None:
        """Update the mirror from a response's ``RateLimit-Limit/-Remaining/-Policy`` headers."""
        if category is None or not {"RateLimit-Limit", "RateLimit-Remaining"} <= headers.keys():
            return
        policy = headers.get("RateLimit-Policy", "")
        try:
            limit = _number(headers["RateLimit-Limit"], _LIMIT_RANGE)
            remaining = _number(headers["RateLimit-Remaining"], _LIMIT_RANGE, zero=True)
            window = _number(_policy_value(policy, "w"), _WINDOW_RANGE, default=DEFAULT_WINDOW)
            burst = _number(_policy_value(policy, "burst"), _LIMIT_RANGE, default=limit)
        except ValueError:
            if not self._warned:
                self._warned = True
                log.warning(
                    "ignoring RateLimit headers that make no sense (Limit=%.40r, Remaining=%.40r,"
                    " Policy=%.80r): requests are not paced by them",
                    headers.get("RateLimit-Limit"),
                    headers.get("RateLimit-Remaining"),
                    policy,
                )
            return
        capacity = max(burst, remaining)
        with self._lock:
            now, share = self.clock(), self.share
            rate, capacity, remaining = limit / window * share, capacity * share, remaining * share
            bucket = self._buckets.get(category)
            if bucket is None:
                self._buckets[category] = _Bucket(rate, capacity, remaining, now)
                return
            bucket.rate, bucket.capacity = rate, capacity
            bucket.refill(now)
            bucket.tokens = min(bucket.tokens, remaining)


def _policy_value(policy: str, name: str) -> str | None:
    match = re.search(rf"(?:^|;)\s*{name}=([^;,\s]*)", policy)
    return match.group(1) if match else None


def _number(
    text: str | None, bounds: tuple[float, float], *, zero: bool = False, default: float = 0.0
) -> float:
    """A header's number within ``bounds`` (above the lower one unless ``zero``); ``default``
    when absent. ValueError when it is anything else (``1e-300``, negative, huge, ``nan``)."""
    if text is None:
        if default:
            return default
        raise ValueError("missing")
    value = float(text)
    low, high = bounds
    if not (low <= value <= high and (zero or value > low)) or (not zero and value < 1e-3):
        raise ValueError(text)
    return value


#: ``call_later(seconds, action)`` calls ``action`` after ``seconds``; it returns how to cancel.
CallLater = Callable[[float, Callable[[], Any]], Callable[[], Any]]


def call_in_thread(seconds: float, action: Callable[[], Any]) -> Callable[[], None]:
    """Call ``action`` after ``seconds`` of real time, from a daemon thread; return its cancel.

    One thread serves every call (`_Timers`): a timer thread per request cost a thread start
    each, hundreds for one read of the activity feed."""
    return _timers.call_later(seconds, action)


class _Timers:
    """Actions due at monotonic instants, called in order by one daemon thread."""

    def __init__(self) -> None:
        self._changed = threading.Condition(threading.Lock())
        self._due: list[list[Any]] = []  # a heap of [instant, number, action or None]
        self._numbers = itertools.count()
        self._thread: threading.Thread | None = None

    def call_later(self, seconds: float, action: Callable[[], Any]) -> Callable[[], None]:
        entry = [time.monotonic() + seconds, next(self._numbers), action]
        with self._changed:
            heapq.heappush(self._due, entry)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="toolkit-timers", daemon=True)  # fmt: skip
                self._thread.start()
            if self._due[0] is entry:
                self._changed.notify()
        return functools.partial(self._cancel, entry)

    def _cancel(self, entry: list[Any]) -> None:
        with self._changed:
            entry[2] = None

    def _run(self) -> None:
        while True:
            with self._changed:
                while not self._due or self._due[0][2] is None or self._due[0][0] > time.monotonic():  # fmt: skip
                    if self._due and self._due[0][2] is None:
                        heapq.heappop(self._due)
                    elif self._due:
                        self._changed.wait(self._due[0][0] - time.monotonic())
                    else:
                        self._changed.wait()
                action = heapq.heappop(self._due)[2]
            try:
                action()
            except Exception:  # the thread serves the other calls on
                log.exception("a timed action failed")


_timers = _Timers()
os.register_at_fork(after_in_child=_timers.__init__)  # its thread is the parent's


#: Every live `Transport`: a forked child drops their pooled connections (the parent's sockets).
_TRANSPORTS: weakref.WeakSet[Transport] = weakref.WeakSet()


class Transport:
    """Sends requests to the service, retrying what is worth retrying.

    In a forked child (``os.fork``, multiprocessing's fork), it opens its own connections: the
    pooled ones are the parent's.

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
        Monotonic seconds (injectable with ``sleep``), for pacing, the time spent retrying and
        each response's deadline.
    call_later : callable
        ``call_later(seconds, action)`` calls ``action`` after ``seconds`` and returns a function
        cancelling it (default `call_in_thread`: real time); it cuts a connection still sending
        its headers at the deadline. Injectable with ``clock``, so that tests drive the deadline.
    rng : random.Random, optional
        Source of the backoff jitter.
    pool_size : int
        Connections kept open, at least the number of concurrent workers.
    backoff, max_backoff : float
        Exponential backoff with full jitter: attempt ``n`` waits ``uniform(0, min(max_backoff,
        backoff * 2**(n-1)))`` unless the service said how long (``Retry-After``).
    max_body : int
        Most bytes of a response body once decompressed; a larger one is refused.

    Notes
    -----
    Each response, body included, must arrive within ``timeout`` (one deadline, not one per
    socket read). Redirects are followed only to the same scheme, host and port; a write
    (POST, PATCH, PUT) follows only 307 and 308, which keep its method and body. Any other
    redirect raises `RedirectError` naming the new location: nothing (key or body) is sent to
    another host, and a write is never re-sent as a GET.
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
        call_later: CallLater = call_in_thread,
        rng: random.Random | None = None,
        pool_size: int = 32,
        backoff: float = 0.5,
        max_backoff: float = 30.0,
        max_body: int = MAX_BODY,
    ):
        self._url = base_url.rstrip("/")
        self.base_url = mask_userinfo(self._url)  # what is shown: user:password@ masked
        self._api_key = api_key
        self.max_body = max_body
        self.timeout, self.max_retries, self.max_wait = timeout, max_retries, max_wait
        self.sleep, self.clock, self.rng = sleep, clock, rng or random.Random()
        self.call_later = call_later
        self.backoff, self.max_backoff = backoff, max_backoff
        self.pacer = Pacer(sleep=sleep, clock=clock)
        #: The service's clock minus ours, as its last ``Date`` header says (at most: the
        #: header is rounded down to the second, and read after it was sent).
        self.clock_offset = timedelta(0)
        self.session = new_session(pool_size)
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
        secrets = (self._api_key, *secret_values(json), *_userinfo(self._url))
        started, waited = self.clock(), 0.0
        for attempt in itertools.count(1):
            waited += self.pacer.wait(category, most=self.max_wait - waited)
            sent = self.clock()
            try:
                response = fetch(
                    self.session,
                    method,
                    self._url + path,
                    params=params,
                    json=json,
                    headers=headers,
                    timeout=self.timeout,
                    max_body=self.max_body,
                    clock=self.clock,
                    call_later=self.call_later,
                )
            except Redirected as redirect:
                raise RedirectError(
                    method, path, redirect.status, redirect.describe(), attempts=attempt
                ) from None
            except BodyTooLarge as exc:
                raise ServiceError(method, path, exc.status, str(exc), attempts=attempt) from None
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
                self._observe_date(response.headers.get("Date"))
                if status < 400:
                    return self._decode(method, path, response)
                error = error_from_response(
                    method, path, status, _body(response), response.headers, secrets=secrets
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

    def _observe_date(self, header: str | None) -> None:
        try:
            moment = parsedate_to_datetime(header)
        except (TypeError, ValueError):
            return
        if moment.tzinfo is not None:
            self.clock_offset = moment - datetime.now(UTC)

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


def new_session(pool_size: int = 10) -> requests.Session:
    """A session whose connections keep `fetch`'s deadline while reading the status line and
    headers too (a server trickling them is cut at the deadline)."""
    session = requests.Session()
    session.trust_env = False  # no proxy and netrc look-up on every request
    adapter = HTTPAdapter(pool_connections=4, pool_maxsize=pool_size)
    adapter.poolmanager.pool_classes_by_scheme = {"http": _Pool, "https": _TLSPool}
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


#: The response this thread is waiting for, set by `fetch`: ``(deadline, clock, call_later)``.
_deadline = threading.local()


class _Deadline:
    """Mixin of a connection: while waiting for the status line and headers, a timer shuts
    its socket down at the thread's deadline."""

    def getresponse(self, *args: Any, **kwargs: Any) -> Any:
        waiting = getattr(_deadline, "at", None)
        if waiting is None:
            return super().getresponse(*args, **kwargs)
        due, clock, call_later = waiting
        cancel = call_later(max(0.0, due - clock()), self._cut)
        try:
            return super().getresponse(*args, **kwargs)
        finally:
            cancel()

    def _cut(self) -> None:
        with contextlib.suppress(AttributeError, OSError):
            self.sock.shutdown(socket.SHUT_RDWR)


class _Connection(_Deadline, urllib3.connection.HTTPConnection):
    pass


class _TLSConnection(_Deadline, urllib3.connection.HTTPSConnection):
    pass


class _Pool(urllib3.HTTPConnectionPool):
    ConnectionCls = _Connection


class _TLSPool(urllib3.HTTPSConnectionPool):
    ConnectionCls = _TLSConnection


class Redirected(Exception):
    """A redirect `fetch` did not follow (another host, or a write told to change its method)."""

    def __init__(self, status: int, location: str, reason: str):
        super().__init__(status, location, reason)
        self.status, self.location, self.reason = status, location, reason

    def describe(self, show: bool = True) -> str:
        where = f" to {mask_userinfo(self.location)}" if show else ""
        return f"redirected{where} (HTTP {self.status}); not followed: {self.reason}"


class BodyTooLarge(Exception):
    """A response body past the size limit once decompressed (raised before reading it all)."""

    def __init__(self, status: int, limit: int):
        super().__init__(
            f"the response body is larger than {limit / 2**20:g} MiB once decompressed; not read"
        )
        self.status = status


def fetch(
    session: requests.Session,
    method: str,
    url: str,
    *,
    timeout: float,
    max_body: int = MAX_BODY,
    clock: Callable[[], float] = time.monotonic,
    call_later: CallLater = call_in_thread,
    **options: Any,
) -> requests.Response:
    """One request and its whole body, following the redirects that are safe (see `Transport`).

    The body is read within ``timeout`` seconds (on ``clock``) from the request's start and at
    most ``max_body`` bytes of it once decompressed; ``call_later`` cuts a connection still
    sending its status line and headers at that deadline (see `Transport`).

    Raises
    ------
    Redirected
        A redirect that is not safe to follow, or more than `MAX_HOPS` of them.
    BodyTooLarge
        The body is larger than ``max_body`` once decompressed.
    requests.Timeout
        The response took longer than ``timeout``.
    """
    deadline = clock() + timeout
    for _hop in range(MAX_HOPS + 1):
        _deadline.at = (deadline, clock, call_later)
        try:
            response = session.request(
                method, url, timeout=timeout, stream=True, allow_redirects=False, **options
            )
        except requests.ConnectionError:
            if clock() >= deadline:  # cut by the deadline while reading the headers
                raise requests.Timeout(f"the response took more than {timeout:g} s") from None
            raise
        finally:
            _deadline.at = None
        _read_body(response, deadline, timeout, max_body, clock)
        if response.status_code not in REDIRECTS:
            return response
        location = urljoin(url, response.headers.get("Location", ""))
        if not response.headers.get("Location"):
            return response
        if _origin(location) != _origin(url):
            raise Redirected(response.status_code, location, "another host never gets the request")  # fmt: skip
        if method.upper() in WRITE_METHODS and response.status_code not in _BODY_KEEPING:
            raise Redirected(
                response.status_code,
                location,
                "it would re-send the write as a GET, without its body",  # fmt: skip
            )
        url, options = location, {**options, "params": None}
    raise Redirected(response.status_code, location, f"more than {MAX_HOPS} redirects")


def _read_body(
    response: requests.Response,
    deadline: float,
    timeout: float,
    most: int,
    clock: Callable[[], float],
) -> None:
    """Read the body (decompressed) into ``response``, or close it and raise."""
    chunks, size = [], 0
    try:
        while True:
            if clock() >= deadline:
                raise requests.Timeout(f"the response took more than {timeout:g} s")
            try:
                chunk = response.raw.read1(_CHUNK, decode_content=True)
            except urllib3.exceptions.ReadTimeoutError as error:
                raise requests.Timeout(str(error)) from None
            except (urllib3.exceptions.HTTPError, OSError) as error:  # cut, or not decodable
                raise requests.exceptions.ChunkedEncodingError(str(error)) from None
            if not chunk:
                break
            size += len(chunk)
            if size > most:
                raise BodyTooLarge(response.status_code, most)
            chunks.append(chunk)
    except BaseException:
        response.close()  # the connection is dropped, not pooled half read
        raise
    response._content = b"".join(chunks)
    response.raw.release_conn()


def _origin(url: str) -> tuple[str, str | None, int | None]:
    parts = urlsplit(url)
    try:
        port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    except ValueError:
        port = -1
    return parts.scheme, parts.hostname, port


def _userinfo(url: str) -> tuple[str, ...]:
    """The ``user:password`` of a URL (secrets to mask), else nothing."""
    parts = urlsplit(url)
    return tuple(p for p in (parts.password, parts.username) if p and len(p) >= 4)


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
