"""`Client`: the service's seven operations, plain JSON in and out; `connect()` makes one.

>>> client = toolkit.connect()                       # SVC_BASE_URL / SVC_API_KEY, else the sandbox
>>> rows = client.list_activity(after="24h", channels=["email"], severity="high")
>>> for sub in client.search_subscribers(email="@example.com", limit=20): ...

Arguments are checked before anything is sent: a bad one raises `ParameterError` naming the
parameter, the value and what is allowed. Responses are returned as the service sent them, with
a lone ``{"data": X}`` envelope removed; unknown fields and enumeration values are kept.
"""

from __future__ import annotations

import atexit
import itertools
import random
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from typing import Any

from toolkit import _checks as arg
from toolkit._http import Transport
from toolkit.config import API_KEY_VAR, BASE_URL_VAR, Settings, service_root
from toolkit.errors import ConfigurationError, ParameterError, ResponseError, ToolkitError
from toolkit.pagination import (
    ActivityPager,
    check_page,
    iter_cursor_pages,
    merge_newest_first,
    paused_gc,
    read_sliced,
    split_query,
)
from toolkit.timeutil import parse_time, resolve_window, to_iso, utcnow
from toolkit.vocab import (
    CHANNELS,
    NOTIFICATION_CHANNELS,
    SEVERITIES,
)

__all__ = ["Client", "connect"]

#: Largest page of each list (the activity feed's is the spec's; the cursor lists' the service's).
MAX_ACTIVITY_PAGE = 50
MAX_CURSOR_PAGE = 100
#: A window with a start is read as time slices (`toolkit.pagination.read_sliced`), one per
#: this many workers at once, none deeper than this many pages (the feed pages by skip: deep
#: pages cost the service more).
SLICE_WORKERS = 4
SLICE_PAGES = 40
#: Marks a subscriber field that was not given (left alone), as opposed to None (cleared).
UNSET: Any = ...

#: The arguments' names of the activity feed's list parameters, for messages.
_ARGUMENT_NAMES = {"subscriberIds": "subscriber_ids"}

#: What the sandbox extra installs.
_SANDBOX_NEEDS = frozenset({"fastapi", "pydantic", "starlette", "uvicorn"})

_sandbox = None
_sandbox_lock = threading.Lock()


def connect(
    base_url: str | None = None,
    api_key: str | None = None,
    *,
    sandbox: Any = None,
    environment: str | None = None,
    timeout: float = 30.0,
    max_retries: int = 10,
    max_wait: float = 60.0,
    sleep: Callable[[float], Any] = time.sleep,
    rng: random.Random | None = None,
    progress: bool = True,
    workers: int = 32,
) -> Client:
    """Connect to the service, or to the local sandbox when none is configured.

    Parameters
    ----------
    base_url, api_key : str, optional
        The service; each defaults to its variable ``SVC_BASE_URL`` / ``SVC_API_KEY``. With
        neither, a local sandbox is started (once per process) and a line on stderr says so.
    sandbox : toolkit.sandbox.Sandbox, optional
        Connect to this running sandbox instead (its clock becomes ``client.now()``).
    environment : str, optional
        With a sandbox: ``"Organization/Environment"`` to act on (default its first); with a
        service: a label for ``client.environment``.
    timeout, max_retries, max_wait, sleep, rng
        Passed to the `~toolkit._http.Transport`: per-request timeout, retries, the most
        seconds spent waiting between attempts, and the (injectable) wait and jitter source.
    progress : bool
        Show progress bars for reads longer than one page.
    workers : int
        Concurrent requests of the paged and per-subscriber reads. 32 hides the latency of a
        remote service (16 left a 50 ms round trip the larger part of a short window's read);
        under a rate limit, requests are paced by its ``RateLimit-*`` headers.

    Raises
    ------
    ConfigurationError
        Only one of the address and the key is known, or a sandbox together with them.
    """
    options = dict(
        timeout=timeout,
        max_retries=max_retries,
        max_wait=max_wait,
        sleep=sleep,
        rng=rng,
        progress=progress,
        workers=workers,
    )
    if sandbox is not None:
        if base_url or api_key:
            raise ConfigurationError("pass either sandbox= or base_url/api_key, not both")
        return Client.from_sandbox(sandbox, environment=environment, **options)
    settings = Settings.resolve(base_url, api_key)
    if settings.configured:
        return Client(settings.base_url, settings.api_key, environment=environment, **options)
    client = Client.from_sandbox(_local_sandbox(), environment=environment, **options)
    print(
        f"toolkit: no {BASE_URL_VAR}/{API_KEY_VAR} set; using the local sandbox at "
        f"{client.base_url} ({client.environment})",
        file=sys.stderr,
    )
    return client


def adopt_local_sandbox(sandbox: Any) -> None:
    """Make ``sandbox`` the local sandbox `connect` uses with nothing configured (stopped at
    exit), unless one is already running: a command starts a `SandboxProcess` early (see
    `toolkit._cli.start_sandbox`)."""
    global _sandbox
    with _sandbox_lock:
        if _sandbox is None:
            _sandbox = sandbox
            atexit.register(sandbox.stop)
        elif _sandbox is not sandbox:
            sandbox.stop()


def _local_sandbox() -> Any:
    """The process's own sandbox, started on first use and stopped at exit."""
    global _sandbox
    with _sandbox_lock:
        if _sandbox is None:
            try:
                from toolkit import sandbox

                _sandbox = sandbox.start()
            except ImportError as exc:
                if exc.name not in _SANDBOX_NEEDS:
                    raise
                raise ConfigurationError(
                    f"no {BASE_URL_VAR}/{API_KEY_VAR} set, and the local sandbox needs its extra "
                    f"({exc.name} is missing): pip install 'toolkit[sandbox]', or set both "
                    "variables to use a service"
                ) from None
            atexit.register(_sandbox.stop)
        return _sandbox


class Client:
    """The seven operations of the service, taking and returning plain JSON-shaped data.

    Make one with `connect` (or `Client.from_sandbox`). Safe to share between threads.

    Parameters
    ----------
    base_url, api_key : str
        The service.
    environment : str, optional
        A name for the key's environment (known for a sandbox); without one,
        ``client.environment`` is the ``_environmentId`` the service answers with (asked once,
        when first needed).
    source : str, optional
        What the client reads, for a store to recognise it across runs (``client.source``):
        default the base URL; ``"local sandbox"`` for a sandbox, whose port changes each run.
    clock : callable, optional
        The service's clock; default the wall clock (UTC).
    progress : bool
        Default of the ``progress`` of paged reads.
    workers : int
        Default of the ``workers`` of concurrent reads.
    **transport
        ``timeout``, ``max_retries``, ``max_wait``, ``sleep``, ``rng`` of the `Transport`.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        environment: str | None = None,
        source: str | None = None,
        clock: Callable[[], datetime] = utcnow,
        progress: bool = True,
        workers: int = 32,
        **transport: Any,
    ):
        self.workers = arg.count("workers", workers, 1, 64)
        arg.header("api_key", api_key, 1024)  # masked in the message: a secret
        for name in ("timeout", "max_wait"):
            if name in transport:
                transport[name] = arg.seconds(name, transport[name], zero=name == "max_wait")
        if "max_retries" in transport:
            arg.count("max_retries", transport["max_retries"], 0, 100)
        self.transport = Transport(
            arg.base_url(service_root(base_url) if isinstance(base_url, str) else base_url),
            api_key,
            pool_size=max(32, self.workers),
            **transport,
        )
        self.base_url = self.transport.base_url
        self.source = source or self.base_url
        self._environment = environment
        self.progress = progress
        self._clock = clock

    @classmethod
    def from_sandbox(
        cls, sandbox: Any, *, environment: str | None = None, **options: Any
    ) -> Client:
        """A client of a running `toolkit.sandbox.Sandbox` (of its ``environment``, default the
        first), on the sandbox's clock."""
        names = {key: name for name, key in sandbox.api_keys.items()}
        name = environment or names.get(sandbox.api_key)
        if name not in sandbox.api_keys:
            known = ", ".join(sandbox.api_keys)
            raise ParameterError("environment", environment, f"one of {known}")
        return cls(sandbox.url, sandbox.api_keys[name], environment=name,
                   source="local sandbox", clock=sandbox.now, **options)  # fmt: skip

    @property
    def environment(self) -> str | None:
        """The environment the API key acts on: its name when known (a sandbox's
        ``"Acme/Development"``), else the ``_environmentId`` of what the service returns (one
        small request, the first time); None when the service holds nothing to tell it.

        Raises
        ------
        ServiceError
            The service could not be asked (a wrong key, unreachable).
        """
        if self._environment is None:
            records = self.list_activity(limit=1, progress=False) or list(
                self.search_subscribers(limit=1)
            )
            self._environment = next((r.get("_environmentId") for r in records), None)
        return self._environment

    def __repr__(self) -> str:
        try:
            environment = f" ({self.environment})" if self.environment else ""
        except ToolkitError as error:  # a repr never raises: it says what is wrong instead
            environment = f" (environment unknown: {type(error).__name__})"
        return f"<Client {self.base_url}{environment}>"

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the pooled connections."""
        self.transport.close()

    def now(self) -> datetime:
        """The service's current time (aware UTC): the sandbox's clock, else the wall clock,
        moved back by as much as the service's ``Date`` headers say its clock is behind."""
        now = parse_time(self._clock(), name="now")
        if self._clock is utcnow:
            now += min(timedelta(0), self.transport.clock_offset)
        return now

    # -- subscribers -------------------------------------------------------------------------

    def update_subscriber(
        self,
        subscriber_id: str,
        *,
        first_name: str | None = UNSET,
        last_name: str | None = UNSET,
        email: str | None = UNSET,
        phone: str | None = UNSET,
        avatar: str | None = UNSET,
        timezone: str | None = UNSET,
        locale: str | None = UNSET,
        data: dict[str, Any] | None = UNSET,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """Update a subscriber's profile (``PATCH /v2/subscribers/{subscriberId}``).

        A field not given is left alone; ``None`` clears it; ``data`` replaces the whole custom
        data object. Returns the updated Subscriber.
        """
        fields = {
            "firstName": ("first_name", first_name),
            "lastName": ("last_name", last_name),
            "email": ("email", email),
            "phone": ("phone", phone),
            "avatar": ("avatar", avatar),
            "timezone": ("timezone", timezone),
            "locale": ("locale", locale),
        }
        body = {
            wire: arg.text(name, value, nullable=True)
            for wire, (name, value) in fields.items()
            if value is not UNSET
        }
        if data is not UNSET:
            if data is not None and not isinstance(data, Mapping):
                raise ParameterError("data", data, "a dict (the whole custom data) or None")
            body["data"] = arg.json_data("data", data)
        path = f"/v2/subscribers/{arg.segment('subscriber_id', subscriber_id)}"
        return self._write("PATCH", path, body, idempotency_key)

    def upsert_credentials(
        self,
        subscriber_id: str,
        provider_id: str,
        credentials: Mapping[str, Any],
        *,
        integration_identifier: str | None = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """Set a subscriber's chat or push credentials for a provider
        (``PATCH /v1/subscribers/{subscriberId}/credentials``).

        ``credentials`` uses the wire names (``webhookUrl``, ``deviceTokens``, ...; the snake_case
        spellings are accepted too). ``provider_id`` is sent as given: an id the toolkit does
        not know warns (the real service spells its own brand's ids ``novu-slack``, the spec
        ``svc-slack``; both are known). Per the spec the given ``deviceTokens`` replace the
        provider's tokens (the real service's PATCH appends them; its PUT replaces). Returns the
        Subscriber with its ``channels``.
        """
        path = f"/v1/subscribers/{arg.segment('subscriber_id', subscriber_id)}/credentials"
        body = {
            "providerId": arg.provider_id(provider_id),
            "credentials": arg.channel_credentials(credentials),
        }
        if integration_identifier is not None:
            body["integrationIdentifier"] = arg.text(
                "integration_identifier", integration_identifier
            )
        return self._write("PATCH", path, body, idempotency_key)

    def search_subscribers(
        self,
        *,
        email: str | None = None,
        name: str | None = None,
        phone: str | None = None,
        subscriber_id: str | None = None,
        order_by: str | None = None,
        order_direction: str | None = None,
        limit: int | None = None,
        page_size: int | None = None,
    ) -> Iterator[dict[str, Any]]:
        """Iterate over the subscribers matching every filter given (``GET /v2/subscribers``).

        Matching is case sensitive per the spec (the newest real servers ignore case): email,
        phone and name as substrings, ``subscriber_id`` exactly. Pages of ``page_size`` (default
        and maximum 100) are fetched as the iteration goes; ``limit`` caps the items.
        """
        params = arg.drop_none(
            email=arg.text("email", email, optional=True),
            name=arg.text("name", name, optional=True),
            phone=arg.text("phone", phone, optional=True),
            subscriberId=arg.text("subscriber_id", subscriber_id, optional=True),
        )
        return self._cursor_list(
            "/v2/subscribers", params, order_by, order_direction, limit, page_size
        )

    def list_subscriptions(
        self,
        subscriber_id: str,
        *,
        key: str | None = None,
        order_by: str | None = None,
        order_direction: str | None = None,
        limit: int | None = None,
        page_size: int | None = None,
    ) -> Iterator[dict[str, Any]]:
        """Iterate over a subscriber's topic subscriptions
        (``GET /v2/subscribers/{subscriberId}/subscriptions``); ``key`` filters by topic key.
        """
        path = f"/v2/subscribers/{arg.segment('subscriber_id', subscriber_id)}/subscriptions"
        params = arg.drop_none(key=arg.text("key", key, optional=True))
        return self._cursor_list(path, params, order_by, order_direction, limit, page_size)

    def list_subscriptions_many(
        self,
        subscriber_ids: Iterable[str],
        *,
        key: str | None = None,
        workers: int | None = None,
        progress: bool | None = None,
    ) -> dict[str, list[dict[str, Any]]]:
        """The subscriptions of many subscribers, fetched concurrently.

        Returns ``{subscriber_id: [TopicSubscription, ...]}`` in the order given (repeats
        dropped). An unknown subscriber raises `NotFoundError`.
        """
        if subscriber_ids is None:
            raise ParameterError("subscriber_ids", None, "an external subscriber id or a list")
        ids = list(dict.fromkeys(arg.strings("subscriber_ids", subscriber_ids)))
        key = arg.text("key", key, optional=True)
        workers = self.workers if workers is None else arg.count("workers", workers, 1, 64)
        show = self.progress if progress is None else progress

        def one(subscriber_id: str) -> list[dict[str, Any]]:
            return list(self.list_subscriptions(subscriber_id, key=key))

        with ThreadPoolExecutor(workers, thread_name_prefix="toolkit-subs") as pool:
            results = pool.map(one, ids)
            if show and len(ids) > 1:
                from tqdm.auto import tqdm

                results = tqdm(results, total=len(ids), unit=" subscribers", desc="subscriptions")
            return dict(zip(ids, results, strict=True))

    # -- integrations ------------------------------------------------------------------------

    def create_integration(
        self,
        provider_id: str,
        channel: str,
        *,
        name: str | None = None,
        identifier: str | None = None,
        environment_id: str | None = None,
        credentials: Mapping[str, Any] | None = None,
        active: bool | None = None,
        check: bool | None = None,
        conditions: list[dict[str, Any]] | None = None,
        configurations: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """Create an integration in the key's environment (``POST /v1/integrations``).

        The service defaults ``active`` and ``check`` to false; a duplicate ``identifier``
        raises `ConflictError`; an ``environment_id`` other than the key's raises
        `AuthenticationError` (403). Returns the Integration.
        """
        body = {
            "providerId": arg.text("provider_id", provider_id),
            "channel": arg.choice("channel", channel, CHANNELS),
        }
        optional = {
            "name": arg.text("name", name, optional=True),
            "identifier": arg.text("identifier", identifier, optional=True),
            "_environmentId": arg.text("environment_id", environment_id, optional=True),
            "credentials": arg.mapping("credentials", credentials),
            "active": arg.flag("active", active),
            "check": arg.flag("check", check),
            "conditions": arg.conditions(conditions),
            "configurations": arg.mapping("configurations", configurations),
        }
        body.update(arg.drop_none(**optional))
        return self._write("POST", "/v1/integrations", body, idempotency_key)

    def delete_integration(self, integration_id: str) -> list[dict[str, Any]]:
        """Soft-delete an integration (``DELETE /v1/integrations/{integrationId}``); irreversible.

        Returns the environment's remaining integrations, as the service lists them.
        """
        path = f"/v1/integrations/{arg.segment('integration_id', integration_id)}"
        return _answer("DELETE", path, self.transport.request("DELETE", path), list)

    # -- activity ----------------------------------------------------------------------------

    def list_activity(self, **filters: Any) -> list[dict[str, Any]]:
        """All notifications matching the filters (``GET /v1/notifications``), newest first, as
        one list: `iter_activity`'s arguments, read to the end (the garbage collector paused)."""
        with paused_gc():
            return list(self.iter_activity(**filters))

    def iter_activity(
        self,
        *,
        channels: str | Iterable[str] | None = None,
        templates: str | Iterable[str] | None = None,
        emails: str | Iterable[str] | None = None,
        subscriber_ids: str | Iterable[str] | None = None,
        severity: str | Iterable[str] | None = None,
        transaction_id: str | None = None,
        topic_key: str | None = None,
        search: str | None = None,
        after: Any = None,
        before: Any = None,
        limit: int | None = None,
        page_size: int = 50,
        workers: int | None = None,
        progress: bool | None = None,
    ) -> Iterator[dict[str, Any]]:
        """The notifications matching the filters (``GET /v1/notifications``), newest first,
        yielded as their pages arrive (arguments are checked before this returns).

        The window is pinned first: ``before`` defaults to ``client.now()`` at the start of the
        read, so that records arriving meanwhile do not shift the pages. Pages of ``page_size``
        (1-50) are fetched ``workers`` at a time; records are de-duplicated by ``_id``.

        Parameters
        ----------
        channels : str or list of str, optional
            Any of in_app, email, sms, chat, push, digest, trigger, delay, throttle, custom.
            The service filters by the first five only: with a step type (digest, ...) among
            them, the notifications are filtered here, by their ``channels``, after the read.
        templates, emails, subscriber_ids : str or list of str, optional
            Template ids, email addresses, external subscriber ids.
        severity : str or list of str, optional
            Any of high, medium, low, none.
        transaction_id, topic_key : str, optional
            Exact filters.
        search : str, optional
            Deprecated by the service.
        after, before : str, datetime, pandas.Timestamp or duration, optional
            The window; ``"24h"`` means 24 hours before now. ``after`` defaults (on the service)
            to the start of the plan's retention; an earlier one raises `RetentionError`.
        limit : int, optional
            At most this many records (the newest).
        page_size : int
            Records per request, 1-50.
        workers : int, optional
            Pages fetched at once (default the client's).
        progress : bool, optional
            Progress bar when the read takes more than one page (default the client's).
        """
        start, end = resolve_window(after, before, now=self.now())
        channels = arg.strings("channels", channels, NOTIFICATION_CHANNELS)
        steps = bool(channels) and not set(channels) <= set(CHANNELS)
        params = arg.drop_none(
            channels=None if steps else channels,
            templates=arg.strings("templates", templates),
            emails=arg.strings("emails", emails),
            subscriberIds=arg.strings("subscriber_ids", subscriber_ids),
            severity=arg.strings("severity", severity, SEVERITIES),
            transactionId=arg.text("transaction_id", transaction_id, optional=True),
            topicKey=arg.text("topic_key", topic_key, optional=True),
            search=arg.text("search", search, optional=True),
            after=to_iso(start) if start is not None else None,
            before=to_iso(end),
        )
        options = dict(
            page_size=arg.count("page_size", page_size, 1, MAX_ACTIVITY_PAGE),
            limit=arg.count("limit", limit, 1) if limit is not None else None,
            workers=self.workers if workers is None else arg.count("workers", workers, 1, 64),
            progress=self.progress if progress is None else progress,
        )
        if steps:  # read them all, then keep those of the channels asked for, up to the limit
            limit, options["limit"] = options["limit"], None
            records = self._query(params, start, end, options)
            wanted = set(channels)
            return itertools.islice(
                (r for r in records if wanted.intersection(r.get("channels") or ())), limit
            )
        return self._query(params, start, end, options)

    def _query(
        self, params: dict[str, Any], start: datetime | None, end: datetime, options: dict
    ) -> Iterator[dict[str, Any]]:
        queries = split_query(params, names=_ARGUMENT_NAMES)
        if len(queries) == 1:
            return self._read(params, start, end, **options)
        reads = (list(self._read(query, start, end, **options)) for query in queries)
        return merge_newest_first(reads, options["limit"])

    def _read(
        self, params: dict[str, Any], start: datetime | None, end: datetime, **options: Any
    ) -> Iterator[dict[str, Any]]:
        """One query's records: a window with a start (and no limit) is read as time slices,
        all sharing ``workers`` requests in flight."""
        if start is None or options["limit"] is not None:
            return self._pager(params, **options).records()
        gate = threading.BoundedSemaphore(options["workers"])

        def read(
            after: datetime, before: datetime, most: int | None, expected: float
        ) -> Iterator[dict[str, Any]]:
            window = {**params, "after": to_iso(after), "before": to_iso(before)}
            options_ = {**options, "limit": most, "progress": False, "expected": expected}
            return self._pager(window, gate=gate, window=(after, before), **options_).records()

        return read_sliced(
            read,
            [(start, end)],
            concurrent=max(1, options["workers"] // SLICE_WORKERS),
            most=SLICE_PAGES * options["page_size"],
            first=options["page_size"],
            progress=options["progress"],
        )

    def _pager(self, params: dict[str, Any], **options: Any) -> ActivityPager:
        def fetch(page: int, size: int) -> Any:
            query = {**params, "page": page, "limit": size}
            body = self.transport.request("GET", "/v1/notifications", params=query)
            return check_page(body, "/v1/notifications", activity=True)

        return ActivityPager(fetch, **options)

    # -- plumbing ----------------------------------------------------------------------------

    def _write(
        self, method: str, path: str, body: dict[str, Any], idempotency_key: str | None
    ) -> dict[str, Any]:
        key = arg.header("idempotency_key", idempotency_key, arg.MAX_IDEMPOTENCY_KEY)
        answer = self.transport.request(method, path, json=body, idempotency_key=key)
        return _answer(method, path, answer, dict, "providerId" if "integrations" in path else "subscriberId")  # fmt: skip

    def _cursor_list(
        self,
        path: str,
        params: dict[str, Any],
        order_by: str | None,
        order_direction: str | None,
        limit: int | None,
        page_size: int | None,
    ) -> Iterator[dict[str, Any]]:
        size = MAX_CURSOR_PAGE if page_size is None else page_size
        size = arg.count("page_size", size, 1, MAX_CURSOR_PAGE)
        if limit is not None:
            size = min(size, arg.count("limit", limit, 1))
        params = {
            **params,
            **arg.drop_none(
                orderBy=arg.text("order_by", order_by, optional=True),
                orderDirection=arg.direction(order_direction),
            ),
            "limit": size,
        }

        def fetch(cursor: str | None) -> Any:
            query = params if cursor is None else {**params, "after": cursor}
            return check_page(self.transport.request("GET", path, params=query), path)

        return iter_cursor_pages(fetch, limit=limit)


def _answer(method: str, path: str, body: Any, kind: type, key: str | None = None) -> Any:
    """The unwrapped answer of a write if it has the shape the operation returns (a list of
    objects, or an object with ``key``), else `ResponseError`: a write is never reported done
    on nothing."""
    result = arg.unwrap(body)
    if isinstance(result, kind) and (
        key in result if key else all(isinstance(item, Mapping) for item in result)
    ):
        return result
    what = f"an object with {key}" if key else "a list of objects"
    shown = str(result.get("message", "")) if isinstance(result, Mapping) else ""
    said = f": the service said {shown[:200]!r}" if shown else f", not {what}"
    raise ResponseError(method, path, None, f"the answer is {type(result).__name__}{said}")
