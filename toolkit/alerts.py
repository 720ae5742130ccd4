"""Alerts: incidents found at each evaluation become one ``firing`` and one ``resolved`` alert.

`Alerts.evaluate` takes the frame of `toolkit.find_incidents` (one evaluation, e.g. a Monitor's
poll). An incident is identified by ``(channel, provider_id, domain)``, and a workflow's own row
(none of those: a workflow that stopped or ran away) by its ``workflow`` (not by its kind, which
the detector may name differently as an incident goes on; a row naming a workflow that a firing
alert of its kind named is that alert: drops or spikes at the same time are one row whose groups
show one by one): it fires the first time it is found ongoing, and resolves once it has not been
found ongoing at ``resolve_after`` evaluations in a row (hysteresis: one quiet evaluation does
not end it, so it does not flap). Each alert is passed to ``on_alert`` and, with a ``webhook_url``,
POSTed as JSON with a Slack-compatible ``text`` from a background thread (retried; never
blocking the caller; the URL is never shown; a failure is reported once through ``on_error``).

>>> alerts = Alerts(on_alert=print)
>>> alerts.evaluate(toolkit.find_incidents(activity), at=now)
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

import pandas as pd
import requests

from toolkit._http import BodyTooLarge, CallLater, Redirected, call_in_thread, fetch, new_session
from toolkit.errors import ParameterError
from toolkit.redact import MASK, mask
from toolkit.timeutil import to_iso
from toolkit.words import ONGOING

__all__ = ["ALERT_COLUMNS", "Alerts", "Webhook"]

#: The columns of `Alerts.frame` (and the fields of each alert).
ALERT_COLUMNS = ("at", "state", "kind", "channel", "provider_id", "error_code", "domain",
                 "workflow", "summary")  # fmt: skip
_PLACE = ("channel", "provider_id", "domain")
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
        self._last: dict[tuple, dict[str, Any]] = {}  # each firing incident as last found
        self._named: dict[tuple, set[str]] = {}  # the workflows each firing row of them named
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
        needed = (*_PLACE, "workflows", "kind", "ongoing", "summary", "error_code")
        missing = [c for c in needed if c not in incidents]
        if not isinstance(incidents, pd.DataFrame) or missing:
            raise ParameterError("incidents", type(incidents).__name__, "the frame of toolkit.find_incidents")  # fmt: skip
        raised = []
        ongoing = incidents[incidents["ongoing"].fillna(False).astype(bool)]
        seen = set()
        for record in ongoing.to_dict("records"):
            record["workflow"] = self._workflow(record)
            key = (*(_plain(record[c]) for c in _PLACE), record["workflow"])
            seen.add(key)
            self._quiet[key] = 0
            self._last[key] = record
            if record["workflow"] is not None:
                self._named.setdefault(key, set()).update(map(str, record["workflows"]))
            if key not in self._firing:
                self._firing[key] = self._alert("firing", record, at)
                raised.append(self._firing[key])
        for key in [k for k in self._firing if k not in seen]:
            self._quiet[key] += 1
            if self._quiet[key] >= self.resolve_after:
                del self._firing[key], self._quiet[key]
                self._named.pop(key, None)
                raised.append(self._alert("resolved", self._last.pop(key), at))
        for alert in raised:
            self._rows.append(alert)
            self._deliver(alert)
        return raised

    def close(self, timeout: float = 30.0) -> bool:
        """Send what is queued for the webhook within ``timeout`` seconds, then stop its thread
        (see `Webhook.close`); whether everything queued was delivered or given up in time."""
        return True if self.webhook is None else self.webhook.close(timeout)

    def _workflow(self, record: dict[str, Any]) -> str | None:
        """The workflow a workflow's own row is identified by: that of a firing alert of its
        kind whose rows named one of its workflows (drops or spikes at the same time are one
        row, its groups seen one by one as the evidence grows: one alert), else its first
        (`_own_workflow`)."""
        own = _own_workflow(record)
        if own is None:
            return None
        named = {str(workflow) for workflow in record["workflows"]}
        return next((key[-1] for key in self._firing if key[-1] is not None
                     and self._last[key]["kind"] == record["kind"]
                     and self._named[key] & named), own)  # fmt: skip

    def _alert(self, state: str, record: dict[str, Any], at: datetime) -> dict[str, Any]:
        """An alert of ``record``; a resolved one says when it resolved, not that it goes on."""
        alert = {c: _plain(record.get(c)) for c in ALERT_COLUMNS}
        alert.update(at=pd.Timestamp(at), state=state)
        if state == "resolved" and isinstance(alert["summary"], str):
            ended = f" (resolved by {alert['at']:%H:%M} UTC)"
            alert["summary"] = alert["summary"].replace(ONGOING, ended, 1)
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
    """POSTs alerts as JSON to a URL from a background thread, retrying failures.

    The body is ``{"text": "<state>: <summary>", "alert": {...}}`` (Slack shows ``text``). It is
    sent by the toolkit's one transport (`toolkit._http.fetch`): each answer must arrive within
    ``timeout`` seconds, and a redirect counts as delivered only when it was followed with the
    body (a 307 or 308 to the same host); any other is not delivered, and not retried.
    The URL is a secret: it appears in no message, repr or error, nor in urllib3's DEBUG log.
    After `close`, the next `send` starts a new thread. ``sleep`` (between retries), ``clock``
    and ``call_later`` (the deadline's, as `toolkit._http.Transport`'s) are injectable for tests.
    """

    def __init__(self, url: str, *, retries: int = 3, backoff: float = 1.0,
                 timeout: float = 10.0, on_error: Callable[[str], Any] | None = None,
                 sleep: Callable[[float], Any] = time.sleep,
                 clock: Callable[[], float] = time.monotonic,
                 call_later: CallLater = call_in_thread):  # fmt: skip
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ParameterError("webhook_url", mask(url), "an http:// or https:// URL")
        self._url = url
        _hide_in_logs(url)
        self.retries, self.backoff, self.timeout, self.sleep = retries, backoff, timeout, sleep
        self.clock, self.call_later = clock, call_later
        self.on_error = on_error or (lambda message: None)
        self.sent = self.failed = 0
        self._lock = threading.Lock()
        self._worker: tuple[threading.Thread, queue.Queue, threading.Event] | None = None

    def __repr__(self) -> str:
        return f"<Webhook sent={self.sent} failed={self.failed}>"

    def send(self, alert: dict[str, Any]) -> None:
        """Queue one alert (returns at once)."""
        with self._lock:
            if self._worker is None:
                jobs, stop = queue.Queue(), threading.Event()
                thread = threading.Thread(target=self._work, args=(jobs, stop),
                                          name="toolkit-webhook", daemon=True)  # fmt: skip
                thread.start()
                self._worker = (thread, jobs, stop)
            self._worker[1].put(alert)

    def close(self, timeout: float = 30.0) -> bool:
        """Deliver what is queued, waiting at most ``timeout`` seconds; then the alerts not yet
        sent are given up (counted as failed, reported once) as soon as the POST under way ends
        (itself bounded by the webhook's ``timeout``). Returns whether all were done in time."""
        with self._lock:
            worker, self._worker = self._worker, None
        if worker is None:
            return True
        thread, jobs, stop = worker
        jobs.put(None)
        thread.join(timeout)
        if thread.is_alive():
            stop.set()
            return False
        return True

    def _work(self, jobs: queue.Queue, stop: threading.Event) -> None:
        session = new_session()
        while (alert := jobs.get()) is not None:
            if stop.is_set():
                self.failed += 1
                self.on_error("webhook: alerts not delivered before close() gave up on them")
                continue
            body = {
                "text": f"{_ICON[alert['state']]}: {alert['summary']}",
                "alert": {k: to_iso(v) if k == "at" else v for k, v in alert.items()},
            }
            reason = None
            for attempt in range(self.retries + 1):
                try:
                    status = fetch(session, "POST", self._url, json=body, timeout=self.timeout,
                                   clock=self.clock, call_later=self.call_later).status_code  # fmt: skip
                    reason = None if 200 <= status < 300 else f"HTTP {status}"
                except Redirected as redirect:
                    reason = redirect.describe(show=False)  # the location is the secret's kin
                    break
                except (requests.RequestException, BodyTooLarge) as error:
                    reason = type(error).__name__  # its text would show the URL
                if reason is None or stop.is_set():
                    break
                if attempt < self.retries:
                    self.sleep(self.backoff * 2**attempt)
            if reason is None:
                self.sent += 1
            else:
                self.failed += 1
                self.on_error(f"webhook POST failed after {attempt + 1} attempts: {reason}")
        session.close()


class _HiddenInLogs(logging.Filter):
    """Masks secret texts (webhook URLs and their paths) in the records of a library's logger:
    urllib3 logs each request line at DEBUG."""

    def __init__(self) -> None:
        super().__init__()
        self.secrets: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        if any(secret in text for secret in self.secrets):
            for secret in sorted(self.secrets, key=len, reverse=True):
                text = text.replace(secret, MASK)
            record.msg, record.args = text, ()
        return True


_HIDDEN = _HiddenInLogs()


def _hide_in_logs(url: str) -> None:
    """Keep ``url``'s path and query out of urllib3's log lines (at DEBUG they show them)."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    for secret in (parts.path + (f"?{parts.query}" if parts.query else ""), parts.path):
        if len(secret) > 1:
            _HIDDEN.secrets.add(secret)
    for name in ("urllib3.connectionpool", "urllib3.util.retry"):
        logger = logging.getLogger(name)
        if _HIDDEN not in logger.filters:
            logger.addFilter(_HIDDEN)


class _Once:
    """Calls ``report`` with the first message only."""

    def __init__(self, report: Callable[[str], Any] | None):
        self.report, self.done = report, False

    def __call__(self, message: str) -> None:
        if not self.done and self.report is not None:
            self.done = True
            self.report(message)


def _own_workflow(record: dict[str, Any]) -> str | None:
    """The workflow of a workflow's own row (no channel, provider or domain), else None."""
    workflows = record["workflows"]
    if any(_plain(record[c]) is not None for c in _PLACE) or not isinstance(workflows, list):
        return None
    return str(workflows[0]) if workflows else None


def _plain(value: Any) -> Any:
    """A value without pandas' missing markers (None instead)."""
    return (
        None if value is None or (not isinstance(value, (list, dict)) and pd.isna(value)) else value
    )
