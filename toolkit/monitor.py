"""Watch the activity feed: keep a window of it current, charts of it drawn, and alerts raised.

Each poll reads the feed from the oldest notification still in flight (or, when none is, from
just before the end of the last read) to the service's now, and replaces what it held of that
range: new notifications appear, and those in flight are read again until they settle, so the
Monitor's frames equal a direct read of its window at the moment of the poll, statuses included.
It keeps a bounded window (``keep``), can persist what it reads into a store (``store=``, see
`toolkit.sync`), and evaluates `toolkit.find_incidents` on its window at each poll to raise
alerts (`toolkit.alerts`), with the store's weeks before the window as the baseline when it
persists into a store that holds them (a quiet night or a weekly batch is then normal).

>>> monitor = Monitor(client, interval=10, channels=["sms"], on_alert=print)
>>> monitor               # in a notebook: a status line, the alerts and the charts
>>> monitor.start()       # polls in a background thread ...
>>> monitor.stop()
>>> monitor.run(duration=60)   # ... or in the foreground, bounded
"""

from __future__ import annotations

import html
import threading
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import ipywidgets as widgets
import pandas as pd

from toolkit import charts, schemas
from toolkit.alerts import Alerts
from toolkit.errors import ParameterError
from toolkit.frames import Activity, activity_frames
from toolkit.panels import show_figures
from toolkit.store.filters import check_filters
from toolkit.store.incremental import persist
from toolkit.store.state import check_directory
from toolkit.timeutil import parse_duration, parse_time, to_iso

__all__ = ["Monitor"]

#: How far before the end of the last read each poll reads again: a notification stamped just
#: before it but stored just after is still found.
OVERLAP = timedelta(seconds=2)

#: The charts a Monitor shows by default.
MONITOR_CHARTS: tuple[Callable[[Activity], Any], ...] = (
    lambda activity: charts.status_timeline(activity.execution_details, freq="1min"),
    lambda activity: charts.status_by_channel(activity.execution_details),
)
_SPECS = (schemas.NOTIFICATIONS, schemas.JOBS, schemas.EXECUTION_DETAILS)


class Monitor:
    """Keeps the window of the feed since ``since`` (at most ``keep`` long) current.

    Parameters
    ----------
    client : Client
        Where to read from.
    interval : float
        Seconds between polls of `run` and `start`.
    charts : sequence of callables, optional
        ``chart(activity) -> go.Figure``, redrawn after each poll that changed something
        (default `MONITOR_CHARTS`; ``[]`` for none).
    since : str or datetime
        The window's start (``"15m"``: 15 minutes before the service's now).
    keep : str or timedelta
        The longest window held; older notifications are dropped (memory stays bounded).
    store : str or Path, optional
        Also write what each poll reads into this store (made or brought up to date by
        `toolkit.sync` at the first poll).
    clock, sleep : callable, optional
        ``clock() -> seconds`` (default `time.monotonic`) and ``sleep(seconds)`` (default: a wait
        that `stop` interrupts) for `run` and `start`; tests inject both.
    on_alert : callable, optional
        ``on_alert(alert: dict)`` for each alert (see `alerts`).
    webhook_url : str, optional
        POST each alert there as JSON with a Slack-compatible ``text`` (in the background).
    **filters
        Server-side filters of `toolkit.read_activity` (``channels``, ``severity``, ...).

    Attributes
    ----------
    activity : Activity
        The window's notifications, jobs and execution details, as a direct read would give them.
    window : tuple of datetime
        ``(start, end)`` of what ``activity`` holds (``end``: the last poll's pinned now).
    alerts : DataFrame
        Every alert raised: ``at, state`` (firing / resolved), ``kind, channel, provider_id,
        error_code, domain, workflow, summary`` (``workflow``: of a workflow's own row).
    incidents : DataFrame
        `toolkit.find_incidents` of the window at the last poll.
    polls : int
        Polls made.
    error : Exception or None
        The last failed poll's error (also shown in ``output``); polling goes on.
    """

    def __init__(self, client, interval: float = 10.0,
                 charts: Sequence[Callable[[Activity], Any]] | None = None, *,
                 since: str | datetime = "15m", keep: str | timedelta = "24h",
                 store: str | Path | None = None, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], Any] | None = None,
                 on_alert: Callable[[dict], Any] | None = None, webhook_url: str | None = None,
                 **filters: Any):  # fmt: skip
        if isinstance(interval, bool) or not isinstance(interval, int | float) or not interval > 0:
            raise ParameterError("interval", interval, "a positive number of seconds")
        for name, value in (("clock", clock), ("sleep", sleep)):
            if value is not None and not callable(value):
                raise ParameterError(name, value, "a function")
        self.filters = check_filters(filters)
        self.keep = parse_duration(keep, name="keep")
        self.since = parse_time(since, name="since", now=client.now)
        self.store = None if store is None else Path(store).expanduser()
        if self.store is not None:
            check_directory(self.store)
        self.client, self.interval, self.clock = client, float(interval), clock
        self.sleep = sleep or (lambda seconds: self._stopping.wait(seconds))
        self.charts = tuple(MONITOR_CHARTS if charts is None else charts)
        self.activity = activity_frames([])
        self.window = (self.since, self.since)
        self.polls, self.error = 0, None
        self.incidents: pd.DataFrame | None = None
        self._alerts = Alerts(on_alert, webhook_url, on_error=self._show_error)
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self.status = widgets.HTML("not polled yet")
        self.alert_list = widgets.HTML("")
        self.plots = widgets.Output()
        self.output = widgets.Output()
        self.widget = widgets.VBox([self.status, self.alert_list, self.plots, self.output])

    @property
    def alerts(self) -> pd.DataFrame:
        return self._alerts.frame

    def poll_once(self) -> Activity:
        """Read the feed from the oldest notification in flight to now, replace that range of the
        window, evaluate the alerts, redraw; return the notifications new to the window.

        Raises
        ------
        ToolkitError
            The read failed (nothing changes).
        """
        with self._lock:
            now = self.client.now()
            now = now.replace(microsecond=now.microsecond // 1000 * 1000)  # the service's precision
            floor = max(self.since, now - self.keep)
            start = self._read_from(floor)
            if self.store is not None and self.polls == 0:
                from toolkit.store import sync

                sync(self.client, self.store, since=start, lag=OVERLAP, progress=False, **self.filters)  # fmt: skip
            records = self.client.list_activity(**self.filters, after=start, before=now, progress=False)  # fmt: skip
            if self.store is not None:
                persist(self.store, start, now, records)
            fresh = activity_frames(records)
            held = self.activity.notifications["notification_id"]
            new = _rows_of(fresh, ~fresh.notifications["notification_id"].isin(held))
            self.activity = _replace(self.activity, fresh, floor, start)
            self.window = (floor, now)
            self.polls += 1
            self._evaluate(now)
            self._redraw(new)
            return new

    def run(self, duration: float | None = None, max_polls: int | None = None) -> Activity:
        """Poll every ``interval`` seconds in the foreground until ``duration`` seconds have
        passed or ``max_polls`` polls were made (at least one of them is required).

        Returns
        -------
        Activity
            ``self.activity``.
        """
        if duration is None and max_polls is None:
            raise ParameterError("duration", None, "a duration or max_polls (or use start())")
        self._stopping.clear()
        self._loop(duration, max_polls)
        return self.activity

    def start(self) -> None:
        """Poll every ``interval`` seconds in a background thread until `stop`."""
        if self._thread is not None and self._thread.is_alive():
            return
        self._stopping.clear()
        self._thread = threading.Thread(
            target=self._loop, args=(None, None), name="toolkit-monitor", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop the background thread (after its current poll) and deliver queued alerts."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def close(self, timeout: float = 30.0) -> bool:
        """`stop`, then wait at most ``timeout`` seconds for the webhook to deliver what is
        queued (alerts not sent by then are given up and reported). Returns whether all were.
        `start` after `close` polls again, webhook included."""
        self.stop()
        return self._alerts.close(timeout)

    def _repr_mimebundle_(self, **kwargs: Any):
        return self.widget._repr_mimebundle_(**kwargs)

    def _read_from(self, floor: datetime) -> datetime:
        if self.polls == 0:
            return floor
        notifications = self.activity.notifications
        in_flight = notifications["created_at"][notifications["status"] == "pending"]
        start = self.window[1] - OVERLAP
        if not in_flight.empty:
            start = min(start, in_flight.min().to_pydatetime())
        return max(floor, start)

    def _loop(self, duration: float | None, max_polls: int | None) -> None:
        deadline = None if duration is None else self.clock() + duration
        polls = 0
        while not self._stopping.is_set():
            try:
                self.poll_once()
                self.error = None
            except Exception as error:  # shown, and polling goes on
                self.error = error
                self._show_error(f"{type(error).__name__}: {error}", replace=True)
            polls += 1
            if max_polls is not None and polls >= max_polls:
                return
            wait = self.interval
            if deadline is not None:
                wait = min(wait, deadline - self.clock())
                if wait <= 0:
                    return
            self.sleep(wait)

    def _evaluate(self, now: datetime) -> None:
        from toolkit.incidents import find_incidents

        self.incidents = find_incidents(self.activity, baseline=self._history())
        if self._alerts.evaluate(self.incidents, now):
            rows = [
                f"<li><b>{a['state']}</b> {to_iso(a['at'])}: {html.escape(str(a['summary']))}</li>"
                for a in self._alerts.frame.tail(5).to_dict("records")
            ]
            firing = len(self._alerts.firing)
            self.alert_list.value = f"<b>{firing} alert(s) firing</b><ul>{''.join(rows)}</ul>"

    def _history(self) -> Any:
        """What normal looks like for the alerts: the store's weeks before the window when the
        Monitor persists into a store that holds some (else the window's own comparison)."""
        if self.store is None:
            return None
        from toolkit.store import open_store

        store = open_store(self.store)
        first = store.window[0]
        return store if first is not None and first < self.window[0] else None

    def _show_error(self, message: str, replace: bool = False) -> None:
        if replace:
            self.output.outputs = ()
        self.output.append_stderr(message + "\n")

    def _redraw(self, new: Activity) -> None:
        held = self.activity.notifications
        pending = int((held["status"] == "pending").sum())
        self.status.value = (
            f"{len(held)} notifications ({len(new.notifications)} new, {pending} in flight) after"
            f" {self.polls} polls; window {to_iso(self.window[0])} to {to_iso(self.window[1])}"
        )
        show_figures(self.plots, [chart(self.activity) for chart in self.charts])


def _rows_of(activity: Activity, chosen: pd.Series) -> Activity:
    """The notifications ``chosen`` and their jobs and execution details."""
    ids = activity.notifications["notification_id"][chosen.to_numpy()]
    return Activity(*(frame[frame["notification_id"].isin(ids)] for frame in activity))


def _replace(held: Activity, fresh: Activity, floor: datetime, start: datetime) -> Activity:
    """``fresh`` (a read from ``start``) in place of what ``held`` has from ``start`` on, and
    nothing before ``floor``: newest first, as the feed gives them."""
    times = held.notifications["created_at"]
    kept = _rows_of(held, (times >= floor) & (times < start))
    return Activity(*(_concat(a, b, spec) for a, b, spec in zip(fresh, kept, _SPECS, strict=True)))


def _concat(first: pd.DataFrame, second: pd.DataFrame, spec) -> pd.DataFrame:
    """Rows of both, with the columns' dtypes and category order of a direct read."""
    if second.empty or first.empty:
        frame = (second if first.empty else first).reset_index(drop=True)
    else:
        frame = pd.concat([first, second], ignore_index=True)
    for column in spec:
        if column.dtype == schemas.CATEGORY:
            values = frame[column.name].astype(object)
            found = set(values.dropna()) - set(column.categories)
            categories = [*column.categories, *sorted(found)]
            frame[column.name] = pd.Categorical(values, categories=categories)
    frame.attrs = dict(first.attrs)
    return frame
