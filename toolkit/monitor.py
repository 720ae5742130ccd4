"""Watch the activity feed: poll for new notifications only, and keep charts of them current.

>>> monitor = Monitor(client, interval=10, channels=["sms"])
>>> monitor               # in a notebook: a status line and the charts
>>> monitor.start()       # polls in a background thread ...
>>> monitor.stop()
>>> monitor.run(duration=60)   # ... or in the foreground, bounded
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

import ipywidgets as widgets
import pandas as pd

from toolkit import charts
from toolkit.errors import ParameterError
from toolkit.frames import Activity, activity_frames
from toolkit.panels import show_figures
from toolkit.read import read_activity
from toolkit.timeutil import parse_time, to_iso

__all__ = ["Monitor"]

#: How far before the newest notification held each poll reads again: a notification stamped
#: just before it but stored just after is still found (and duplicates are dropped by id).
OVERLAP = timedelta(seconds=2)

#: The charts a Monitor shows by default.
MONITOR_CHARTS: tuple[Callable[[Activity], Any], ...] = (
    lambda activity: charts.status_timeline(activity.execution_details, freq="1min"),
    lambda activity: charts.status_by_channel(activity.execution_details),
)


class Monitor:
    """Polls the feed for new notifications and appends them to ``activity``.

    Parameters
    ----------
    client : Client
        Where to read from.
    interval : float
        Seconds between polls of `run` and `start`.
    charts : sequence of callables, optional
        ``chart(activity) -> go.Figure``, redrawn after each poll that found something (default
        `MONITOR_CHARTS`; ``[]`` for none).
    since : str or datetime
        Where the first poll starts (``"15m"``: 15 minutes before the service's now).
    **filters
        Server-side filters of `toolkit.read_activity` (``channels``, ``severity``, ...).

    Attributes
    ----------
    activity : Activity
        Every notification seen, with its jobs and execution details, de-duplicated by id.
    since : datetime
        Where the watch starts: no notification created before it is read.
    polls : int
        Polls made.
    error : Exception or None
        The last failed poll's error (also shown in ``output``); polling goes on.
    """

    def __init__(self, client, interval: float = 10.0,
                 charts: Sequence[Callable[[Activity], Any]] | None = None, *,
                 since: str | datetime = "15m", **filters: Any):  # fmt: skip
        if not interval > 0:
            raise ParameterError("interval", interval, "a positive number of seconds")
        self.client, self.interval, self.filters = client, float(interval), filters
        self.charts = tuple(MONITOR_CHARTS if charts is None else charts)
        self.activity = activity_frames([])
        self.polls, self.error = 0, None
        self.since = parse_time(since, name="since", now=client.now)
        self._newest: datetime | None = None
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self.status = widgets.HTML("not polled yet")
        self.plots = widgets.Output()
        self.output = widgets.Output()
        self.widget = widgets.VBox([self.status, self.plots, self.output])

    def poll_once(self) -> Activity:
        """Read the notifications newer than those held, append them, redraw; return the new ones.

        Raises
        ------
        ToolkitError
            The read failed (nothing is appended).
        """
        with self._lock:
            after = self.since
            if self._newest is not None:
                after = max(after, self._newest - OVERLAP)
            read = read_activity(self.client, after=after, progress=False, **self.filters)
            new = _drop_known(read, self.activity.notifications["notification_id"])
            self.activity = Activity(*map(_append, self.activity, new))
            if not new.notifications.empty:
                newest = new.notifications["created_at"].max().to_pydatetime()
                self._newest = newest if self._newest is None else max(self._newest, newest)
            self.polls += 1
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
        """Stop the background thread (after its current poll)."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def _repr_mimebundle_(self, **kwargs: Any):
        return self.widget._repr_mimebundle_(**kwargs)

    def _loop(self, duration: float | None, max_polls: int | None) -> None:
        deadline = None if duration is None else time.monotonic() + duration
        polls = 0
        while not self._stopping.is_set():
            try:
                self.poll_once()
                self.error = None
            except Exception as error:  # shown, and polling goes on
                self.error = error
                self.output.outputs = ()
                self.output.append_stderr(f"{type(error).__name__}: {error}\n")
            polls += 1
            if max_polls is not None and polls >= max_polls:
                return
            wait = self.interval
            if deadline is not None:
                wait = min(wait, deadline - time.monotonic())
                if wait <= 0:
                    return
            self._stopping.wait(wait)

    def _redraw(self, new: Activity) -> None:
        held = self.activity.notifications
        latest = to_iso(self._newest) if self._newest else "none yet"
        self.status.value = (
            f"{len(held)} notifications ({len(new.notifications)} new) after {self.polls} polls;"
            f" newest {latest}"
        )
        if new.notifications.empty and self.polls > 1:
            return
        show_figures(self.plots, [chart(self.activity) for chart in self.charts])


def _drop_known(activity: Activity, known: pd.Series) -> Activity:
    """``activity`` without the notifications (and their jobs and details) already held."""
    keep = [~frame["notification_id"].isin(known) for frame in activity]
    return Activity(*(frame[mask] for frame, mask in zip(activity, keep, strict=True)))


def _append(held: pd.DataFrame, new: pd.DataFrame) -> pd.DataFrame:
    """``new`` rows after ``held`` ones, keeping dtypes (category values: the union, in order)."""
    if new.empty:
        return held
    if held.empty:
        return new.reset_index(drop=True)
    frame = pd.concat([held, new], ignore_index=True)
    for name, dtype in held.dtypes.items():
        if isinstance(dtype, pd.CategoricalDtype):
            extra = [c for c in new[name].cat.categories if c not in dtype.categories]
            categories = [*dtype.categories, *extra]
            frame[name] = pd.Categorical(frame[name].astype(object), categories=categories)
    return frame
