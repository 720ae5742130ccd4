"""The argument checks (the client's, and `top` of the tables and the report): each returns the
value as it is sent, or raises `ParameterError` naming the parameter (with the path inside it),
the value (masked if secret) and what is allowed.

JSON bodies (``data``, ``credentials``, ...) are converted the way a pandas user expects: numpy
and pandas scalars to Python numbers and booleans, times to ISO 8601 text, NaN, NaT and NA to
null, tuples to lists. Sets, infinities, other objects and nesting deeper than `MAX_DEPTH` are
refused.
"""

from __future__ import annotations

import math
import numbers
import re
import sys
import warnings
from collections.abc import Iterable, Mapping
from datetime import date
from typing import Any
from urllib.parse import quote, urlsplit

from toolkit.errors import ParameterError
from toolkit.redact import mask_userinfo
from toolkit.timeutil import parse_time, to_iso
from toolkit.vocab import (
    BRAND_PREFIXES,
    CHANNEL_CREDENTIAL_FIELDS,
    CHANNEL_PROVIDERS,
    MAX_DEVICE_TOKENS,
    ORDER_DIRECTIONS,
)

#: Deepest nesting of a JSON body the client sends.
MAX_DEPTH = 64
#: Longest idempotency key the service accepts.
MAX_IDEMPOTENCY_KEY = 255

_JSON = (
    "JSON data: str, int, float, bool, None, dict with str keys, list (numpy and pandas scalars, "
    f"times and NaN are converted; no sets, no infinity, at most {MAX_DEPTH} levels deep)"
)
_CREDENTIAL_ALIASES = {
    "webhook_url": "webhookUrl",
    "device_tokens": "deviceTokens",
    "alert_uid": "alertUid",
    "image_url": "imageUrl",
    "external_url": "externalUrl",
}


def unwrap(body: Any) -> Any:
    """``X`` from ``{"data": X}`` when ``data`` is the only key; anything else as it is."""
    if isinstance(body, Mapping) and len(body) == 1 and "data" in body:
        return body["data"]
    return body


def drop_none(**params: Any) -> dict[str, Any]:
    return {name: value for name, value in params.items() if value is not None}


def text(name: str, value: Any, *, optional: bool = False, nullable: bool = False) -> Any:
    """A non-empty string (None passes when ``optional`` or ``nullable``)."""
    if value is None and (optional or nullable):
        return None
    if not isinstance(value, str) or not value.strip():
        raise ParameterError(name, value, "a non-empty string" + (" or None" if nullable else ""))
    return value


def segment(name: str, value: Any) -> str:
    """A required id, quoted for use as one path segment (``.`` and ``..`` would move the
    route)."""
    if text(name, value).strip() in (".", ".."):
        raise ParameterError(name, value, "an id other than '.' and '..'")
    return quote(value, safe="")


def count(name: str, value: Any, low: int, high: int | None = None) -> int:
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or value < low
        or (high and value > high)
    ):
        allowed = f"an integer from {low} to {high}" if high else f"an integer >= {low}"
        raise ParameterError(name, value, allowed)
    return value


def top(value: Any, *, or_all: bool = False) -> int | None:
    """``top``, how many groups to show: a positive whole number (or None, all, when
    ``or_all``); the one check of every function taking it, before it reads anything."""
    if value is None and or_all:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ParameterError("top", value, "a positive whole number" + (", or None for all" if or_all else ""))  # fmt: skip
    return value


def seconds(name: str, value: Any, *, zero: bool = False) -> float:
    """A finite number of seconds, positive (or zero when ``zero``)."""
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not math.isfinite(value)
        or value < 0
        or (value == 0 and not zero)
    ):
        raise ParameterError(
            name, value, "a finite number of seconds " + (">= 0" if zero else "> 0")
        )
    return float(value)


def header(name: str, value: Any, longest: int) -> str | None:
    """A header value: printable ASCII, no line break, at most ``longest`` characters."""
    if value is None:
        return None
    if (
        not isinstance(value, str)
        or not value.strip()
        or len(value) > longest
        or not (value.isascii() and value.isprintable())
    ):
        raise ParameterError(
            name, value, f"printable ASCII text without line breaks, at most {longest} characters"
        )
    return value


def base_url(value: str) -> str:
    """An ``http(s)://host[:port]`` address with a port from 1 to 65535."""
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError:
        port = -1
    shown = mask_userinfo(value) if isinstance(value, str) else value
    if parts.scheme not in ("http", "https") or not parts.hostname or port == 0 or port == -1:
        raise ParameterError(
            "base_url",
            shown,
            "an http:// or https:// address with a host and a port from 1 to 65535",
        )
    try:
        header("base_url", value, 2048)
    except ParameterError as error:
        raise ParameterError("base_url", shown, error.allowed) from None
    return value


def flag(name: str, value: Any) -> bool | None:
    if value is not None and not isinstance(value, bool):
        raise ParameterError(name, value, "True, False or None")
    return value


def mapping(name: str, value: Any) -> dict[str, Any] | None:
    """None, or a dict of JSON data (see `json_data`)."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ParameterError(name, value, "a dict with string keys")
    return json_data(name, value)


def json_data(name: str, value: Any, depth: int = 0) -> Any:
    """``value`` as JSON data (a converted copy); ``name`` grows with the path inside it."""
    if value is None or type(value) in (str, int, bool):
        return value
    if isinstance(value, Mapping | list | tuple) and depth >= MAX_DEPTH:
        raise ParameterError(name, value, _JSON)
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise ParameterError(f"{name}[{key!r}]", key, "a dict with string keys")
            out[str(key)] = json_data(f"{name}[{key!r}]", item, depth + 1)
        return out
    if isinstance(value, list | tuple):
        return [json_data(f"{name}[{i}]", item, depth + 1) for i, item in enumerate(value)]
    return _scalar(name, value)


def _scalar(name: str, value: Any) -> Any:
    """A float, a numpy or pandas scalar or a time as JSON; anything else refused."""
    if getattr(getattr(value, "dtype", None), "kind", "") == "M":  # numpy.datetime64
        import pandas as pd

        value = pd.Timestamp(value)
    if isinstance(value, date):
        return None if value != value else to_iso(parse_time(value, name=name))  # NaT: null
    item = value.item() if hasattr(value, "item") and hasattr(value, "dtype") else value
    if isinstance(item, str | bool):
        return item
    if isinstance(item, numbers.Integral):
        return int(item)
    if isinstance(item, numbers.Real):
        if math.isinf(item):
            raise ParameterError(name, value, _JSON)
        return None if math.isnan(item) else float(item)
    if _is_missing(value):
        return None
    raise ParameterError(name, value, _JSON)


def _is_missing(value: Any) -> bool:
    """pandas' NA (numpy's NaN and pandas' NaT are handled as a float and a time)."""
    pandas = sys.modules.get("pandas")
    return pandas is not None and value is pandas.NA


def choice(name: str, value: Any, allowed: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value.strip().lower() not in allowed:
        raise ParameterError(name, value, "one of " + ", ".join(allowed))
    return value.strip().lower()


_PROVIDER_ID = re.compile(r"[a-z0-9][a-z0-9._-]{0,99}")


def provider_id(value: Any) -> str:
    """A channel provider id, sent as given: the service decides (providers appear every month).

    Ids the toolkit does not know only warn; both spellings of the brand-named ids (the spec's
    ``svc-slack``, the real service's ``novu-slack``) are known.
    """
    if not isinstance(value, str) or not _PROVIDER_ID.fullmatch(value.strip()):
        raise ParameterError(
            "provider_id", value, "a provider id: lower-case letters, digits and - (e.g. slack)"
        )
    value = value.strip()
    plain = next((value[len(p) :] for p in BRAND_PREFIXES if value.startswith(p)), None)
    if value not in CHANNEL_PROVIDERS and f"{BRAND_PREFIXES[0]}{plain}" not in CHANNEL_PROVIDERS:
        warnings.warn(
            f"provider_id={value!r} is not a chat or push provider the toolkit knows; sent as"
            " is (the service decides)",
            stacklevel=3,
        )
    return value


def strings(name: str, value: Any, allowed: tuple[str, ...] | None = None) -> list[str] | None:
    """One string or an iterable of them (list, tuple, set, pandas Series) -> a list."""
    if value is None:
        return None
    if isinstance(value, str):
        value = [value]
    what = (
        f"a string or a list of strings from: {', '.join(allowed)}"
        if allowed
        else ("a non-empty string or a list of them")
    )
    if isinstance(value, Mapping | bytes) or not isinstance(value, Iterable):
        raise ParameterError(name, value, what)
    items = list(value)
    if allowed:
        return [choice(name, item, allowed) for item in items]
    for item in items:
        if not isinstance(item, str) or not item.strip():
            raise ParameterError(name, item, what)
    return items


def direction(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or value.strip().upper() not in ORDER_DIRECTIONS:
        raise ParameterError("order_direction", value, "ASC or DESC (any case)")
    return value.strip().upper()


def channel_credentials(credentials: Any) -> dict[str, Any]:
    if not isinstance(credentials, Mapping):
        raise ParameterError("credentials", credentials, "a dict of ChannelCredentials fields")
    out: dict[str, Any] = {}
    for field, value in credentials.items():
        wire = _CREDENTIAL_ALIASES.get(field, field)
        if wire not in CHANNEL_CREDENTIAL_FIELDS:
            allowed = "one of " + ", ".join(CHANNEL_CREDENTIAL_FIELDS)
            raise ParameterError(f"credentials[{field!r}]", value, f"a known field: {allowed}")
        if wire == "deviceTokens":
            tokens = value
            if isinstance(tokens, str) or not isinstance(tokens, list | tuple):
                raise ParameterError("credentials['deviceTokens']", tokens, "a list of strings")
            if len(tokens) > MAX_DEVICE_TOKENS or not all(isinstance(t, str) and t for t in tokens):
                raise ParameterError(
                    "credentials['deviceTokens']",
                    tokens,
                    f"a list of at most {MAX_DEVICE_TOKENS} non-empty strings",
                )
            out[wire] = [str(token) for token in tokens]
        else:
            out[wire] = str(text(f"credentials[{field!r}]", value))
    return out


def conditions(value: Any) -> list[dict[str, Any]] | None:
    if value is None:
        return None
    if not isinstance(value, list | tuple) or not all(isinstance(c, Mapping) for c in value):
        raise ParameterError("conditions", value, "a list of StepFilter dicts")
    return json_data("conditions", list(value))
