"""What counts as a secret, and how it is masked: the toolkit's one definition.

A secret is a credential field named in `SECRET_FIELDS`, or one whose name contains a word of
`SECRET_MARKERS` (``secret``, ``password``, ``token``, ``apikey``, ``credential``, ...; case,
``_`` and ``-`` ignored, so ``api_key`` and ``credentials['webhookUrl']`` are secret too). Its
value is replaced, never shortened in place:

- a string becomes ``"••••"``, followed by its last 4 characters when it is a long key
  (at least 16 characters ending in 4 letters or digits), so that two keys can be told apart;
- a URL keeps its scheme and host (``"https://hooks.slack.com/••••"``): the path and any
  ``user:password@`` part are what grant access;
- a list (device tokens) becomes a list of masked strings, one per element;
- anything else (an object such as ``tlsOptions``, a number) becomes ``"••••"``.

Booleans and nulls are left alone: they carry no key material. Inputs are never mutated.

>>> mask_credentials({"apiKey": "SG.aaaaaaaaaaaaaaaaaaaaaaaaaa1234", "region": "eu-west-1"})
{'apiKey': '••••1234', 'region': 'eu-west-1'}
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

__all__ = ["MASK", "SECRET_FIELDS", "SECRET_MARKERS", "is_secret", "mask", "mask_channels",
           "mask_credentials", "mask_userinfo", "scrub", "secret_values"]  # fmt: skip

#: What replaces a secret.
MASK = "••••"

#: Credential and configuration fields that hold secrets. ``user`` and ``accountSid`` are half
#: of a credential pair (SMTP user, Twilio account) and are masked too; ``from``, ``senderName``,
#: ``region``, ``host``, ``port``, ``domain``, ``channel``, ``clientId``... stay visible.
SECRET_FIELDS = frozenset(
    {
        "apiKey",
        "secretKey",
        "token",
        "password",
        "accessKey",
        "apiToken",
        "authenticationTokenKey",
        "webhookUrl",
        "deviceTokens",
        "serviceAccount",
        "inboundWebhookSigningKey",
        "tlsOptions",
        "user",
        "accountSid",
    }
)

#: Lower-case words that make any name a secret one (``privateKey``, ``authToken``, ``api_key``,
#: ``credentials``...), matched with ``_``, ``-`` and spaces removed.
SECRET_MARKERS = (
    "secret",
    "password",
    "token",
    "apikey",
    "privatekey",
    "signingkey",
    "credential",
)
#: Keys of an error body that carry the service's words, not the value refused.
_MESSAGE_KEYS = frozenset({"message", "messages", "error", "statusCode"})

_SUFFIX_FROM = 16


def is_secret(field: str) -> bool:
    """Whether a field (or parameter, or provenance key) holds a secret."""
    squeezed = field.lower().replace("_", "").replace("-", "").replace(" ", "")
    return field in SECRET_FIELDS or any(marker in squeezed for marker in SECRET_MARKERS)


def mask(value: Any) -> Any:
    """The masked form of a secret value (see the module docstring); None and booleans as is."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, (list, tuple, set, frozenset)):
        return [mask(item) for item in value]
    if not isinstance(value, str):
        return MASK
    if value.startswith(("http://", "https://")):
        return _mask_url(value)
    tail = value[-4:]
    if len(value) >= _SUFFIX_FROM and tail.isascii() and tail.isalnum():
        return MASK + tail
    return MASK


def scrub(value: Any, secret: str | Iterable[str] | None = None, *, hidden: bool = False) -> Any:
    """A copy of JSON-shaped ``value`` (an error body, a path, a message) safe to show.

    Every occurrence of ``secret`` (the API key, or several secrets: what a request sent in
    secret fields) in a string is masked, and so is the value of every secret field
    (`is_secret`), except the service's own messages about it.
    """
    if isinstance(value, str):
        for text in (secret,) if isinstance(secret, str) else secret or ():
            if text:
                value = value.replace(text, MASK)
        return mask(value) if hidden else value
    if isinstance(value, Mapping):
        return {
            scrub(field, secret): scrub(
                item,
                secret,
                hidden=(hidden or is_secret(str(field))) and field not in _MESSAGE_KEYS,
            )
            for field, item in value.items()
        }
    if isinstance(value, list):
        return [scrub(item, secret, hidden=hidden) for item in value]
    return mask(value) if hidden else value


def secret_values(data: Any, hidden: bool = False) -> list[str]:
    """The texts held by the secret fields of JSON-shaped ``data`` (a request body), longest
    first, with each URL's path too: what to mask if the service quotes them back."""
    found: list[str] = []
    if isinstance(data, Mapping):
        for field, item in data.items():
            found += secret_values(item, hidden or is_secret(str(field)))
    elif isinstance(data, list | tuple):
        for item in data:
            found += secret_values(item, hidden)
    elif hidden and isinstance(data, str) and len(data) >= 6:
        found.append(data)
        if data.startswith(("http://", "https://")):
            path = urlsplit(data).path
            found += [path] if len(path) >= 8 else []
    return sorted(set(found), key=len, reverse=True)


def mask_userinfo(url: str) -> str:
    """``url`` with its ``user:password@`` part (if any) masked; the rest as is."""
    head = url.split("/", 1)[0]
    if "://" not in url and "@" in head:  # no scheme: "user:password@host/..."
        return MASK + url[len(head.rsplit("@", 1)[0]) :]
    try:
        parts = urlsplit(url)
        if not (parts.username or parts.password):
            return url
        host = parts.netloc.rsplit("@", 1)[1]
    except ValueError:
        return MASK
    return urlunsplit(parts._replace(netloc=f"{MASK}@{host}"))


def mask_credentials(credentials: Mapping[str, Any] | None) -> Any:
    """A copy of a credentials (or configurations) object with every secret field masked.

    Nested objects under other fields are masked the same way; None stays None, and a value
    that is not an object at all is masked whole.
    """
    if credentials is None:
        return None
    if not isinstance(credentials, Mapping):
        return MASK
    return {field: _mask_field(field, value) for field, value in credentials.items()}


def mask_channels(channels: list[Mapping[str, Any]] | None) -> list[dict[str, Any]]:
    """A copy of a subscriber's ``channels`` (ChannelSettings) with their credentials masked."""
    masked = []
    for setting in channels or ():
        setting = dict(setting)
        if "credentials" in setting:
            setting["credentials"] = mask_credentials(setting["credentials"])
        masked.append(setting)
    return masked


def _mask_field(field: str, value: Any) -> Any:
    if is_secret(field):
        return mask(value)
    if isinstance(value, Mapping):
        return mask_credentials(value)
    return value


def _mask_url(url: str) -> str:
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return MASK
    return f"{parts.scheme}://{host}{port}/{MASK}"
