"""The provider's error code in an execution detail's ``raw`` text (see `error_code`)."""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

__all__ = ["RATE_LIMITED", "SERVER_ERROR", "error_code"]

#: Error codes and messages that say a provider is rate limiting the sends (any provider): it
#: is up, throttling them.
RATE_LIMITED = re.compile(
    r"rate[_ -]?(?:limit|exceed)|throttl|too[_ ]?many[_ ]?(?:requests|messages)|\b(?:20)?429\b",
    re.IGNORECASE,
)
#: Error codes and messages that say the provider's servers failed the send (any provider): a
#: 5xx, unavailable, internal error, overloaded. Under a load, the load's.
SERVER_ERROR = re.compile(
    r"unavailable|internal[_ -]?(?:server[_ -]?)?error|overload|server[_ -]?(?:error|busy)|"
    r"\b(?:20)?5\d\d\b",
    re.IGNORECASE,
)


@lru_cache(maxsize=4096)
def error_code(raw: str | None) -> str | None:
    """The provider's error code in an execution detail's ``raw`` text, as a string.

    ``raw`` must be a JSON object; the first code-like value found is taken from, in order:
    ``code``, ``errorCode``, ``ErrorCode``, ``error_code``, ``error.code``, ``Error.Code``,
    ``errors[0].code``, ``response.code``, ``bounce.bouncedRecipients[0].status``,
    ``details.error``, ``error``, ``reason``, ``body``, ``status``, ``statusCode``, ``event``.
    Free-text fields (from ``details.error`` on) count only when they are one word and not a
    generic one such as ``"error"``. None when there is no code (including a null or non-JSON
    ``raw``).

    >>> error_code('{"error": {"code": "messaging/internal-error", "message": "..."}}')
    'messaging/internal-error'
    """
    if not isinstance(raw, str) or not raw.lstrip().startswith("{"):
        return None
    try:
        body = json.loads(raw)
    except ValueError:
        return None
    for path, one_word in _CODE_PATHS:
        code = _code_text(_dig(body, path), one_word)
        if code is not None:
            return code
    return None


#: Where providers put their error code: (path, free-text field), in order of preference.
_CODE_PATHS = (
    (("code",), False),
    (("errorCode",), False),
    (("ErrorCode",), False),  # Twilio's and Plivo's status callbacks
    (("error_code",), False),
    (("error", "code"), False),
    (("Error", "Code"), False),
    (("errors", 0, "code"), False),
    (("response", "code"), False),
    (("bounce", "bouncedRecipients", 0, "status"), False),  # Amazon SES's bounce event
    (("details", "error"), True),
    (("error",), True),
    (("reason",), True),
    (("body",), True),
    (("status",), True),
    (("statusCode",), False),
    (("event",), True),
)

#: Free-text values that are not codes.
_GENERIC = frozenset(
    {"error", "errors", "failed", "failure", "fail", "ok", "success", "true", "false"}
)


def _dig(body: Any, path: tuple[str | int, ...]) -> Any:
    for key in path:
        if isinstance(key, int):
            body = body[key] if isinstance(body, list) and len(body) > key else None
        else:
            body = body.get(key) if isinstance(body, dict) else None
    return body


def _code_text(value: Any, one_word: bool) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else str(value)
    if not isinstance(value, str):
        return None
    value = value.strip()
    if not value or (one_word and (len(value.split()) > 1 or value.lower() in _GENERIC)):
        return None
    return value
