"""Explore and monitor a notification service from Jupyter.

>>> import toolkit
>>> client = toolkit.connect()          # SVC_BASE_URL / SVC_API_KEY, else the local sandbox
>>> activity = toolkit.read_activity(client, after="24h")
"""

from __future__ import annotations

import importlib
import importlib.util

from toolkit._version import __version__

# The public surface, imported lazily so that `import toolkit` stays fast and the sandbox's
# dependencies are only needed when the sandbox is used; any other public module
# (`toolkit.metrics`, ...) is imported on first use too.
_EXPORTS = {
    "connect": "toolkit.client",
    "Client": "toolkit.client",
    "read_subscribers": "toolkit.read",
    "read_subscriptions": "toolkit.read",
    "read_activity": "toolkit.read",
    "read_integrations": "toolkit.read",
    "Activity": "toolkit.frames",
    "find_incidents": "toolkit.incidents",
    "delivery_counts": "toolkit.counts",
    "errors": "toolkit.errors",
    "charts": "toolkit.charts",
    "panels": "toolkit.panels",
    "report": "toolkit.report",
    "sandbox": "toolkit.sandbox",
    "Monitor": "toolkit.monitor",
    "sync": "toolkit.store",
    "open_store": "toolkit.store",
    "Store": "toolkit.store",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str):
    module_name = _EXPORTS.get(name)
    if module_name is None:
        # Every public module (``toolkit.metrics``, ``toolkit.incidents``, ...) on first use.
        if name.startswith("_") or importlib.util.find_spec(f"toolkit.{name}") is None:
            raise AttributeError(f"module 'toolkit' has no attribute {name!r}")
        module_name = f"toolkit.{name}"
    module = importlib.import_module(module_name)
    value = module if module_name.endswith("." + name) else getattr(module, name)
    globals()[name] = value
    return value
