"""The toolkit's exception tree and the one mapping from an HTTP error response to it.

Every message is one line: what was asked, what the service said, and what to change. No secret
(`toolkit.redact`) appears in a message, a path, a refused value or a body kept on an exception.

>>> try:
...     client.list_activity(after="2020-01-01")
... except toolkit.errors.RetentionError as err:
...     print(err.earliest)
"""

from __future__ import annotations

import re
import reprlib
from collections.abc import Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

from toolkit.redact import is_secret, mask, scrub

__all__ = [
    "AuthenticationError",
    "ConfigurationError",
    "ConflictError",
    "NotFoundError",
    "PaginationError",
    "ParameterError",
    "RateLimitError",
    "RetentionError",
    "ServerError",
    "ServiceConnectionError",
    "ServiceError",
    "StoreError",
    "ToolkitError",
    "ValidationError",
    "error_from_response",
    "parse_retry_after",
]


class ToolkitError(Exception):
    """Base class of every error the toolkit raises on purpose."""


class ParameterError(ToolkitError, ValueError):
    """A bad argument, refused before any request is sent.

    Parameters
    ----------
    name : str
        The parameter.
    value : object
        The value given; masked (`toolkit.redact.mask`) when ``name`` names a secret.
    allowed : str
        What is allowed, in words.
    """

    def __init__(self, name: str, value: Any, allowed: str):
        value = mask(value) if is_secret(name) else value
        self.name, self.value, self.allowed = name, value, allowed
        super().__init__(f"{name}={_short(value)} is not allowed: {allowed}")


class ConfigurationError(ToolkitError, ValueError):
    """The connection settings are incomplete or contradictory."""


class PaginationError(ToolkitError):
    """The service's pages do not advance (a repeated page or cursor); reading stopped."""


class StoreError(ToolkitError):
    """A store on disk that cannot be used as it is (damaged, or not a store)."""


class ServiceError(ToolkitError):
    """An error response from the service.

    Attributes
    ----------
    status : int or None
        HTTP status (None for network errors).
    method, path : str
        The request (path without the query string).
    message : str
        The service's own message.
    body : object
        The decoded error body, with the API key and secret fields' values masked.
    attempts : int
        How many times the request was sent.
    """

    hint = ""

    def __init__(
        self,
        method: str,
        path: str,
        status: int | None,
        message: str,
        body: Any = None,
        *,
        hint: str | None = None,
        attempts: int = 1,
        note: str = "",
    ):
        self.method, self.path, self.status = method, path, status
        self.message, self.body, self.attempts = message, body, attempts
        if hint is not None:
            self.hint = hint
        self.note = note
        super().__init__(self._line())

    def _line(self) -> str:
        status = f" -> {self.status}" if self.status is not None else ""
        parts = [f"{self.method} {self.path}{status}: {self.message}"]
        parts += [text for text in (self.hint, self.note) if text]
        return " ".join(" ".join(parts).split())

    def with_note(self, note: str, attempts: int) -> ServiceError:
        """Return this error with ``note`` (e.g. how long the retries took) added to its line."""
        self.note, self.attempts = note, attempts
        self.args = (self._line(),)
        return self


class AuthenticationError(ServiceError):
    """401 or 403: the key is missing, unknown, or not allowed to do this."""

    hint = "(check SVC_API_KEY: the key decides the organization and environment)"


class NotFoundError(ServiceError):
    """404: no such subscriber, integration or route."""

    hint = "(check the id: ids are per environment)"


class ValidationError(ServiceError):
    """400 or 422: the service refused a parameter or a body field.

    Attributes
    ----------
    field_errors : dict[str, list[str]]
        Field name -> messages, from the 422 ``errors`` object or the older 400 message list.
    """

    hint = "(change the request as the message says)"

    def __init__(self, *args: Any, field_errors: dict[str, list[str]] | None = None, **kw: Any):
        self.field_errors = field_errors or {}
        super().__init__(*args, **kw)


class ConflictError(ServiceError):
    """409: a duplicate integration identifier, or an idempotent write still running."""

    hint = "(use another identifier, or retry later if the same write is still running)"


class RateLimitError(ServiceError):
    """429: too many requests.

    Attributes
    ----------
    retry_after : float or None
        Seconds the service asked to wait.
    """

    def __init__(self, *args: Any, retry_after: float | None = None, **kw: Any):
        self.retry_after = retry_after
        wait = f"retry after {retry_after:g} s" if retry_after is not None else "retry later"
        kw.setdefault("hint", f"(slow down: {wait})")
        super().__init__(*args, **kw)


class RetentionError(ServiceError):
    """402: the time window starts before the plan's retention allows.

    Attributes
    ----------
    earliest : datetime or None
        The earliest ``after`` allowed, when the message says it.
    """

    def __init__(self, *args: Any, earliest: datetime | None = None, **kw: Any):
        self.earliest = earliest
        when = earliest.astimezone(UTC).isoformat(timespec="milliseconds") if earliest else None
        kw.setdefault(
            "hint",
            f"(use after >= {when.replace('+00:00', 'Z')})"
            if when
            else "(use a later `after`, within the plan's retention)",
        )
        super().__init__(*args, **kw)


class ServerError(ServiceError):
    """5xx: the service failed."""

    hint = "(the service failed; retry later)"


class ServiceConnectionError(ServiceError, ConnectionError):
    """The service could not be reached, or dropped the connection."""

    hint = "(check SVC_BASE_URL and the network)"


_CLASSES: dict[int, type[ServiceError]] = {
    400: ValidationError,
    401: AuthenticationError,
    402: RetentionError,
    403: AuthenticationError,
    404: NotFoundError,
    409: ConflictError,
    422: ValidationError,
    429: RateLimitError,
}

_NAMED_PARAMETER = re.compile(r"parameter '(\w+)'")
_ISO = re.compile(
    r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?(?:Z|[+-]\d{2}:?\d{2})?"
)


def parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header: a number of seconds or an HTTP date."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, (moment - datetime.now(moment.tzinfo)).total_seconds())


_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother = 4, 200, 200


def _short(value: Any, width: int = 80) -> str:
    text = _REPR.repr(value)  # bounded: a value nested 2,000 deep has a short repr too
    return text if len(text) <= width else text[: width - 3] + "..."


def _field_errors(body: Any) -> dict[str, list[str]]:
    """Field -> messages from ``{"errors": {field: {"messages": [...]}}}`` or a message list."""
    if not isinstance(body, Mapping):
        return {}
    found: dict[str, list[str]] = {}
    errors = body.get("errors")
    if isinstance(errors, Mapping):
        for field, detail in errors.items():
            messages = detail.get("messages") if isinstance(detail, Mapping) else detail
            if isinstance(messages, str):
                messages = [messages]
            found[str(field)] = [str(m) for m in messages or []]
    message = body.get("message")
    if isinstance(message, list):
        for text in map(str, message):
            found.setdefault(text.split(" ", 1)[0], []).append(text)
    elif isinstance(message, str) and (named := _NAMED_PARAMETER.search(message)):
        found.setdefault(named.group(1), []).append(message)
    return found


def _message(body: Any, status: int, field_errors: dict[str, list[str]]) -> str:
    if isinstance(body, Mapping):
        message = body.get("message")
        details = "; ".join(m for ms in field_errors.values() for m in ms)
        if isinstance(message, list) or (details and not message):
            message = details
        elif details and details not in str(message):
            message = f"{message}: {details}"
        if message:
            error_id = body.get("errorId")
            return f"{message} (errorId {error_id})" if error_id else str(message)
    if isinstance(body, str) and body.strip():
        return body.strip()[:200]
    return f"HTTP {status}"


def _earliest(message: str) -> datetime | None:
    match = _ISO.search(message)
    if not match:
        return None
    try:
        moment = datetime.fromisoformat(match.group().replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def error_from_response(
    method: str,
    path: str,
    status: int,
    body: Any,
    headers: Mapping[str, str] | None = None,
    *,
    api_key: str | None = None,
) -> ServiceError:
    """Map an HTTP error response to the matching `ServiceError` subclass.

    Parameters
    ----------
    method, path : str
        The request; the query string is dropped from ``path``.
    status : int
        The HTTP status.
    body : object
        The decoded JSON body, or the text of a non-JSON body.
    headers : mapping, optional
        Response headers (case-insensitive mapping); ``Retry-After`` is read for 429.
    api_key : str, optional
        Masked wherever it appears.

    Returns
    -------
    ServiceError
        Not raised: the caller decides.
    """
    body = scrub(body, api_key)
    path = scrub(path.split("?", 1)[0], api_key)
    field_errors = _field_errors(body)
    message = scrub(" ".join(_message(body, status, field_errors).split()), api_key)
    cls = _CLASSES.get(status, ServerError if status >= 500 else ServiceError)
    args = (method, path, status, message, body)
    if cls is ValidationError:
        return ValidationError(*args, field_errors=field_errors)
    if cls is RateLimitError:
        retry_after = parse_retry_after((headers or {}).get("Retry-After"))
        return RateLimitError(*args, retry_after=retry_after)
    if cls is RetentionError:
        return RetentionError(*args, earliest=_earliest(message))
    return cls(*args)
