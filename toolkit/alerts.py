"""Alerts: incidents found at each evaluation become one ``firing`` and one ``resolved`` alert.

`Alerts.evaluate` takes the frame of `toolkit.find_incidents` (one evaluation, e.g. a Monitor's
poll). An incident is identified by ``(channel, provider_id, domain)`` (not by its kind, which
the detector may name differently as an incident goes on): it fires the first
time it is found ongoing, and resolves once it has not been found ongoing at ``resolve_after``
evaluations in a row (hysteresis: one quiet evaluation does not end it, so it does not flap).
Each alert is passed to ``on_alert`` and, with a ``webhook_url``, POSTed as JSON with a
Slack-compatible ``text`` from a background thread (retried; never blocking the caller; the URL
is never shown; a failure is reported once through ``on_error``).

>>> alerts = Alerts(on_alert=print)
>>> alerts.evaluate(toolkit.find_incidents(activity), at=now)
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

import pandas as pd

from toolkit.errors import ParameterError
from toolkit.redact import mask
from toolkit.timeutil import to_iso

__all__ = ["ALERT_COLUMNS", "Alerts", "Webhook"]

#: The columns of `Alerts.frame` (and the fields of each alert).
ALERT_COLUMNS = ("at", "state", "kind", "channel", "provider_id", "error_code", "domain", "summary")
_KEY = ("channel", "provider_id", "domain")
_ICON = {"firing": "FIRING", "resolved": "RESOLVED"}


class Alerts:
    """The alert state machine over successive incident frames.

    Parameters
    ----------
    on_alert : callable, optional
        ``on_alert(alert: dict)`` for each alert, in the evaluating thread.
    webhook_url : str, optional
        POST each alert here (Slack-compatible ``text``), from a background thread.
    resolve_after : int
        Evaluations in a row without the incident ongoing before it is resolved.
    on_error : callable, optional
        ``on_error(message)``, once, the first time the webhook or ``on_alert`` fails.
    sleep : callable
        Waits between webhook retries.
    """

    def __init__(self, on_alert: Callable[[dict], Any] | None = None,
                 webhook_url: str | None = None, *, resolve_after: int = 2,
                 on_error: Callable[[str], Any] | None = None,
                 sleep: Callable[[float], Any] = time.sleep):  # fmt: skip
        if on_alert is not None and not callable(on_alert):
            raise ParameterError("on_alert", on_alert, "a function taking one alert (a dict)")
        if isinstance(resolve_after, bool) or not isinstance(resolve_after, int) or resolve_after < 1:  # fmt: skip
            raise ParameterError("resolve_after", resolve_after, "an integer >= 1")
        self.on_alert, self.resolve_after = on_alert, resolve_after
        self._report = _Once(on_error)
        self.webhook = None if webhook_url is None else Webhook(webhook_url, on_error=self._report, sleep=sleep)  # fmt: skip
        self._firing: dict[tuple, dict[str, Any]] = {}
        self._quiet: dict[tuple, int] = {}
        self._rows: list[dict[str, Any]] = []

    @property
    def frame(self) -> pd.DataFrame:
        """Every alert so far, oldest first: `ALERT_COLUMNS`."""
        frame = pd.DataFrame(self._rows, columns=list(ALERT_COLUMNS))
        frame["at"] = pd.to_datetime(frame["at"], utc=True).astype("datetime64[ns, UTC]")
        return frame.astype({c: "string" for c in ALERT_COLUMNS if c != "at"})

    @property
    def firing(self) -> list[dict[str, Any]]:
        """The alerts firing now."""
        return list(self._firing.values())

    def evaluate(self, incidents: pd.DataFrame, at: datetime) -> list[dict[str, Any]]:
        """Update the state with one evaluation's incidents; return the alerts it raised."""
        missing = [
            c for c in (*_KEY, "kind", "ongoing", "summary", "error_code") if c not in incidents
        ]
        if not isinstance(incidents, pd.DataFrame) or missing:
            raise ParameterError("incidents", type(incidents).__name__, "the frame of toolkit.find_incidents")  # fmt: skip
        raised = []
        ongoing = incidents[incidents["ongoing"].fillna(False).astype(bool)]
        seen = set()
        for record in ongoing.to_dict("records"):
            key = tuple(_plain(record[c]) for c in _KEY)
            seen.add(key)
            self._quiet[key] = 0
            if key not in self._firing:
                self._firing[key] = self._alert("firing", record, at)
                raised.append(self._firing[key])
        for key in [k for k in self._firing if k not in seen]:
            self._quiet[key] += 1
            if self._quiet[key] >= self.resolve_after:
                record = self._firing.pop(key)
                del self._quiet[key]
                raised.append(self._alert("resolved", record, at))
        for alert in raised:
            self._rows.append(alert)
            self._deliver(alert)
        return raised

    def close(self) -> None:
        """Send what is queued for the webhook, then stop its thread."""
        if self.webhook is not None:
            self.webhook.close()

    def _alert(self, state: str, record: dict[str, Any], at: datetime) -> dict[str, Any]:
        alert = {c: _plain(record.get(c)) for c in ALERT_COLUMNS}
        alert.update(at=pd.Timestamp(at), state=state)
        return alert

    def _deliver(self, alert: dict[str, Any]) -> None:
        if self.on_alert is not None:
            try:
                self.on_alert(dict(alert))
            except Exception as error:  # a failing callback never stops the caller
                self._report(f"on_alert failed: {type(error).__name__}: {error}")
        if self.webhook is not None:
            self.webhook.send(alert)


class Webhook:
    """POSTs alerts as JSON to a URL from one background thread, retrying failures.

    The body is ``{"text": "<state>: <summary>", "alert": {...}}`` (Slack shows ``text``).
    The URL is a secret: it appears in no message, repr or error.
    """

    def __init__(self, url: str, *, retries: int = 3, backoff: float = 1.0,
                 timeout: float = 10.0, on_error: Callable[[str], Any] | None = None,
                 sleep: Callable[[float], Any] = time.sleep):  # fmt: skip
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ParameterError("webhook_url", mask(url), "an http:// or https:// URL")
        self._url = url
        self.retries, self.backoff, self.timeout, self.sleep = retries, backoff, timeout, sleep
        self.on_error = on_error or (lambda message: None)
        self.sent = self.failed = 0
        self._queue: queue.Queue = queue.Queue()
        self._thread = threading.Thread(target=self._work, name="toolkit-webhook", daemon=True)
        self._thread.start()

    def __repr__(self) -> str:
        return f"<Webhook sent={self.sent} failed={self.failed}>"

    def send(self, alert: dict[str, Any]) -> None:
        """Queue one alert (returns at once)."""
        self._queue.put(alert)

    def close(self) -> None:
        """Deliver what is queued, then stop the thread."""
        self._queue.put(None)
        self._thread.join()

    def _work(self) -> None:
        import requests

        while (alert := self._queue.get()) is not None:
            body = {
                "text": f"{_ICON[alert['state']]}: {alert['summary']}",
                "alert": {k: to_iso(v) if k == "at" else v for k, v in alert.items()},
            }
            reason = None
            for attempt in range(self.retries + 1):
                try:
                    response = requests.post(self._url, json=body, timeout=self.timeout)
                    if response.ok:
                        reason = None
                        break
                    reason = f"HTTP {response.status_code}"
                except requests.RequestException as error:
                    reason = type(error).__name__  # its text would show the URL
                if attempt < self.retries:
                    self.sleep(self.backoff * 2**attempt)
            if reason is None:
                self.sent += 1
            else:
                self.failed += 1
                self.on_error(f"webhook POST failed after {self.retries + 1} attempts: {reason}")


class _Once:
    """Calls ``report`` with the first message only."""

    def __init__(self, report: Callable[[str], Any] | None):
        self.report, self.done = report, False

    def __call__(self, message: str) -> None:
        if not self.done and self.report is not None:
            self.done = True
            self.report(message)


def _plain(value: Any) -> Any:
    """A value without pandas' missing markers (None instead)."""
    return (
        None if value is None or (not isinstance(value, (list, dict)) and pd.isna(value)) else value
    )
