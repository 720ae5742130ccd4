"""Connection settings: arguments first, then the ``SVC_BASE_URL`` / ``SVC_API_KEY`` variables."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from toolkit.errors import ConfigurationError
from toolkit.redact import mask_userinfo

BASE_URL_VAR = "SVC_BASE_URL"
API_KEY_VAR = "SVC_API_KEY"
#: An API version at the end of an address (``/v1``, ``/v2/``): the operations add their own.
_VERSION_SUFFIX = re.compile(r"(/v\d+)+/*$")


def service_root(url: str) -> str:
    """The service's address as the operations' paths extend it: without trailing slashes or
    an API version (``https://api.example.com/v1/`` -> ``https://api.example.com``)."""
    return _VERSION_SUFFIX.sub("", url.strip()).rstrip("/")


@dataclass(frozen=True)
class Settings:
    """Where the service is and the key to use; ``repr`` never shows the key.

    Attributes
    ----------
    base_url : str or None
        Base address without a trailing slash or API version, e.g. ``https://api.example.com``
        (``https://api.example.com/v1/`` is taken as that: see `service_root`).
    api_key : str or None
        The API key.
    """

    base_url: str | None
    api_key: str | None = field(repr=False)

    @property
    def configured(self) -> bool:
        """True when both the address and the key are known."""
        return bool(self.base_url and self.api_key)

    @classmethod
    def resolve(
        cls,
        base_url: str | None = None,
        api_key: str | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> Settings:
        """Settings from the arguments, each falling back to its environment variable.

        Raises
        ------
        ConfigurationError
            Only one of the two is known: a key without an address (or the reverse) is refused
            rather than guessed.
        """
        environ = os.environ if environ is None else environ
        url = service_root(base_url or environ.get(BASE_URL_VAR) or "") or None
        key = (api_key or environ.get(API_KEY_VAR) or "").strip() or None
        if url and not url.startswith(("http://", "https://")):
            raise ConfigurationError(
                f"base_url must start with http:// or https://, got {mask_userinfo(url)!r} "
                f"(from the argument or {BASE_URL_VAR})"
            )
        if bool(url) != bool(key):
            given, missing = ("a base URL", "an API key") if url else ("an API key", "a base URL")
            raise ConfigurationError(
                f"{given} was given but not {missing}: pass both base_url and api_key, or set both"
                f" {BASE_URL_VAR} and {API_KEY_VAR} (or neither, to use the local sandbox)"
            )
        return cls(url, key)
