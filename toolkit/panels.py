"""Filter panels (ipywidgets) and an Explorer joining a panel to a table and charts.

Panels never call the network: ``.value`` is a frozen filter, and an `Explorer` is handed a
``fetch`` callable that turns a filter into data. Set filters from code with ``.set(...)``;
``on_change`` callbacks fire once per real change (one ``set`` of several fields is one
change; a set that changes nothing fires nothing). Errors of callbacks and fetches are shown in
the panel's own ``output``, never raised into the widget machinery.

>>> panel = ActivityPanel(workflows=activity.notifications)
>>> explorer = Explorer(
...     panel, lambda f: read_activity(client, **f.to_read_kwargs(client.now()))
... )
>>> explorer            # in a notebook: the panel, its findings, a table and charts
>>> panel.set(period="7d", channels=["sms"], failed_only=True)
>>> explorer.pick(0)    # the first finding: filters set to its window and provider
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import ipywidgets as widgets
import pandas as pd

from toolkit import charts, metrics
from toolkit.counts import summary
from toolkit.errors import ParameterError
from toolkit.schemas import SEVERITIES, STEP_TYPES
from toolkit.timeutil import resolve_window, to_iso

__all__ = ["PERIODS", "ActivityFilter", "ActivityPanel", "Explorer", "SubscriberFilter", "SubscriberPanel"]  # fmt: skip

#: Period choices of `ActivityPanel`: label -> value (a duration before now, or "custom").
PERIODS = {
    "last hour": "1h",
    "last 24 hours": "24h",
    "last 7 days": "7d",
    "last 30 days": "30d",
    "custom range": "custom",
}
_DURATIONS = {"1h": timedelta(hours=1), "24h": timedelta(days=1), "7d": timedelta(days=7),
              "30d": timedelta(days=30)}  # fmt: skip

#: The columns of the notifications table an Explorer shows (never payloads).
TABLE_COLUMNS = ("created_at", "workflow_identifier", "subscriber_id", "status", "channels",
                 "severity", "transaction_id")  # fmt: skip


# -- filters -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ActivityFilter:
    """What to read from the activity feed (server side) and keep of it (client side).

    Lists are stored as tuples, blank text as None; channels, severities and the period are
    checked against their vocabularies.

    Attributes
    ----------
    period : str
        ``"1h"``, ``"24h"``, ``"7d"``, ``"30d"`` before now, or ``"custom"`` (``after``/``before``).
    after, before : str or datetime, optional
        The custom range (ISO text, a datetime, or a duration such as ``"3d"``).
    channels, workflows, severity, subscriber_ids, emails : tuple of str
        Server-side filters; ``workflows`` are template ids.
    transaction_id, topic_key : str, optional
        Server-side exact filters.
    failed_only : bool
        Client side: only jobs whose ``final_status`` is ``failed`` (so the notifications
        kept are those whose ``status`` is ``failed``).
    providers : tuple of str
        Client side: only jobs of these providers.
    error_text : str, optional
        Client side: only jobs with a failed execution detail whose error text or provider
        error code contains this, ignoring case.
    """

    period: str = "24h"
    after: str | datetime | None = None
    before: str | datetime | None = None
    channels: tuple[str, ...] = ()
    workflows: tuple[str, ...] = ()
    severity: tuple[str, ...] = ()
    subscriber_ids: tuple[str, ...] = ()
    emails: tuple[str, ...] = ()
    transaction_id: str | None = None
    topic_key: str | None = None
    failed_only: bool = False
    providers: tuple[str, ...] = ()
    error_text: str | None = None

    def __post_init__(self) -> None:
        if self.period not in _DURATIONS and self.period != "custom":
            raise ParameterError("period", self.period, f"one of {', '.join(PERIODS.values())}")
        _normalize(self, ("after", "before", "transaction_id", "topic_key", "error_text"))
        for name in ("channels", "workflows", "severity", "subscriber_ids", "emails", "providers"):
            object.__setattr__(self, name, _strings(getattr(self, name)))
        _check("channels", self.channels, STEP_TYPES)
        _check("severity", self.severity, SEVERITIES)
        object.__setattr__(self, "failed_only", bool(self.failed_only))

    def to_read_kwargs(self, now: datetime) -> dict[str, Any]:
        """The server-side filters, as keyword arguments of `toolkit.read_activity`.

        Parameters
        ----------
        now : datetime
            The service's now (``client.now()``), for the period and relative times.

        Raises
        ------
        ParameterError
            A custom time cannot be parsed, or ``after`` is later than ``before``.
        """
        if self.period == "custom":
            after, before = resolve_window(self.after or None, self.before or None, now=now)
        else:
            after, before = now - _DURATIONS[self.period], now
        kwargs = {
            "after": after,
            "before": before,
            "channels": list(self.channels),
            "templates": list(self.workflows),
            "severity": list(self.severity),
            "subscriber_ids": list(self.subscriber_ids),
            "emails": list(self.emails),
            "transaction_id": self.transaction_id,
            "topic_key": self.topic_key,
        }
        return {key: value for key, value in kwargs.items() if value not in (None, [])}

    def server_side(self) -> ActivityFilter:
        """This filter without its client-side part (two filters that differ only client side
        read the same data)."""
        return dataclasses.replace(self, failed_only=False, providers=(), error_text=None)

    def apply(self, activity):
        """Keep the jobs matching the client-side filters, their execution details and their
        notifications: every kept job's notification and every kept detail's job is kept.

        Parameters
        ----------
        activity : Activity
            As read with `to_read_kwargs`.

        Returns
        -------
        Activity
            Of the same type; ``activity`` itself when there is no client-side filter.
        """
        if self == self.server_side():
            return activity
        jobs, details = activity.jobs, activity.execution_details
        keep = pd.Series(True, index=jobs.index)
        if self.failed_only:
            keep &= _equals(jobs["final_status"], "failed")
        if self.providers:
            keep &= jobs["provider_id"].isin(self.providers)
        if self.error_text:
            text = details["error_text"].fillna("") + " " + details["error_code"].fillna("")
            found = text.str.contains(self.error_text, case=False, regex=False)
            keep &= jobs["job_id"].isin(details.loc[found, "job_id"])
        jobs = jobs[keep]
        notifications = activity.notifications
        return type(activity)(
            notifications=notifications[
                notifications["notification_id"].isin(jobs["notification_id"])
            ],
            jobs=jobs,
            execution_details=details[details["job_id"].isin(jobs["job_id"])],
        )


@dataclass(frozen=True)
class SubscriberFilter:
    """A subscriber search: every field optional, blank text means None."""

    email: str | None = None
    name: str | None = None
    phone: str | None = None
    subscriber_id: str | None = None

    def __post_init__(self) -> None:
        _normalize(self, ("email", "name", "phone", "subscriber_id"))

    def to_search_kwargs(self) -> dict[str, str]:
        """The fields that are set, as keyword arguments of ``search_subscribers`` /
        ``read_subscribers``."""
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}


# -- panels ------------------------------------------------------------------------------------


class _Panel:
    """A filter value kept in step with child widgets; subclasses define the widgets."""

    def __init__(self, value: Any, fields: Mapping[str, widgets.Widget], layout: widgets.Widget):
        self._value = value
        self._fields = dict(fields)
        self._callbacks: list[Callable[[Any], Any]] = []
        self._syncing = False
        #: Where callback and fetch errors are shown.
        self.output = widgets.Output()
        self.widget = widgets.VBox([layout, self.output])
        self._show(value)
        for widget in self._fields.values():
            widget.observe(self._on_widget, names="value")

    @property
    def value(self):
        """The current filter (a frozen dataclass)."""
        return self._value

    def set(self, **fields: Any) -> None:
        """Change some fields of the filter (and the widgets); callbacks fire once if it changed.

        Raises
        ------
        ParameterError
            A value is not allowed; nothing changes.
        """
        self._update(dataclasses.replace(self._value, **fields))

    def on_change(self, callback: Callable[[Any], Any]) -> None:
        """Call ``callback(value)`` after each change of the filter."""
        self._callbacks.append(callback)

    def show_error(self, error: BaseException) -> None:
        """Show ``error`` (one line) in the panel's output, replacing what was there."""
        self.output.outputs = ()
        self.output.append_stderr(f"{type(error).__name__}: {error}\n")

    def clear_error(self) -> None:
        """Clear the panel's output."""
        self.output.outputs = ()

    def _repr_mimebundle_(self, **kwargs: Any):
        return self.widget._repr_mimebundle_(**kwargs)

    def _update(self, value: Any) -> None:
        if value == self._value:
            return
        self._value = value
        self._show(value)
        self.clear_error()
        for callback in list(self._callbacks):
            try:
                callback(value)
            except Exception as error:  # shown in the panel, not raised into the widgets
                self.show_error(error)

    def _on_widget(self, change: Mapping[str, Any]) -> None:
        if self._syncing:
            return
        try:
            self._update(self._read())
        except Exception as error:
            self.show_error(error)

    def _show(self, value: Any) -> None:
        """Put ``value`` into the widgets without firing callbacks."""
        self._syncing = True
        try:
            for name, widget in self._fields.items():
                shown = _widget_value(getattr(value, name), widget)
                if isinstance(widget, widgets.SelectMultiple):
                    _add_options(widget, shown)
                widget.value = shown
            self._after_show(value)
        finally:
            self._syncing = False

    def _after_show(self, value: Any) -> None:
        """Hook: adjust widgets (e.g. enable some) after ``value`` is shown."""

    def _read(self):
        """The filter the widgets show."""
        fields = {name: widget.value for name, widget in self._fields.items()}
        return type(self._value)(**fields)


class ActivityPanel(_Panel):
    """Filters of the activity feed; ``.value`` is an `ActivityFilter`.

    Parameters
    ----------
    workflows : mapping or DataFrame, optional
        The workflow choices: label -> template id, or a notifications frame to take them from
        (``workflow_identifier`` -> ``template_id``).
    value : ActivityFilter, optional
        The initial filter (default: the last 24 hours).
    """

    def __init__(self, workflows: Mapping[str, str] | pd.DataFrame | None = None,
                 value: ActivityFilter | None = None):  # fmt: skip
        text = dict(continuous_update=False, style={"description_width": "initial"})
        fields = {
            "period": widgets.Dropdown(options=list(PERIODS.items()), description="Period"),
            "after": widgets.Text(description="After", placeholder="ISO time or 3d", **text),
            "before": widgets.Text(description="Before", placeholder="ISO time or 1h", **text),
            "channels": widgets.SelectMultiple(options=STEP_TYPES, description="Channels", rows=5),
            "workflows": widgets.SelectMultiple(
                options=_workflow_choices(workflows), description="Workflows", rows=5
            ),
            "severity": widgets.SelectMultiple(options=SEVERITIES, description="Severity", rows=4),
            "subscriber_ids": widgets.Text(
                description="Subscriber ids", placeholder="a, b", **text
            ),
            "emails": widgets.Text(description="Emails", placeholder="a@x.com, b@y.org", **text),
            "transaction_id": widgets.Text(description="Transaction id", **text),
            "topic_key": widgets.Text(description="Topic key", **text),
            "failed_only": widgets.Checkbox(description="Failed only", indent=False),
            "providers": widgets.Text(
                description="Providers", placeholder="twilio, sendgrid", **text
            ),
            "error_text": widgets.Text(description="Error contains", **text),
        }
        f = fields
        layout = widgets.VBox(
            [
                widgets.HBox([f["period"], f["after"], f["before"]]),
                widgets.HBox([f["channels"], f["workflows"], f["severity"]]),
                widgets.HBox([f["subscriber_ids"], f["emails"]]),
                widgets.HBox([f["transaction_id"], f["topic_key"]]),
                widgets.HBox([f["failed_only"], f["providers"], f["error_text"]]),
            ]
        )
        super().__init__(value or ActivityFilter(), fields, layout)

    def set(self, **fields: Any) -> None:
        """Change some fields; giving ``after`` or ``before`` without ``period`` selects the
        custom range. See `_Panel.set`."""
        if ("after" in fields or "before" in fields) and "period" not in fields:
            fields["period"] = "custom"
        super().set(**fields)

    def _after_show(self, value: ActivityFilter) -> None:
        custom = value.period == "custom"
        self._fields["after"].disabled = self._fields["before"].disabled = not custom


class SubscriberPanel(_Panel):
    """A subscriber search by email, name, phone and subscriber id; ``.value`` is a
    `SubscriberFilter`."""

    def __init__(self, value: SubscriberFilter | None = None):
        text = dict(continuous_update=False, style={"description_width": "initial"})
        fields = {
            "email": widgets.Text(description="Email", **text),
            "name": widgets.Text(description="Name", **text),
            "phone": widgets.Text(description="Phone", **text),
            "subscriber_id": widgets.Text(description="Subscriber id", **text),
        }
        layout = widgets.HBox(list(fields.values()))
        super().__init__(value or SubscriberFilter(), fields, layout)


# -- explorer ----------------------------------------------------------------------------------

#: The charts an Explorer of activity shows by default.
ACTIVITY_CHARTS: tuple[Callable[[Any], Any], ...] = (
    lambda activity: charts.status_by_channel(activity.execution_details),
    lambda activity: charts.status_timeline(activity.execution_details),
    charts.failure_reasons,
)


class Explorer:
    """A panel, its findings, a table and charts, refreshed whenever the panel's filter changes.

    The findings are `toolkit.find_incidents` of the activity shown, listed in a dropdown:
    picking one (or calling `pick`) sets the panel's filters to the incident's window (to the
    minute) and provider.

    Parameters
    ----------
    panel : ActivityPanel or SubscriberPanel
        The filters.
    fetch : callable
        ``fetch(filter) -> data``: an Activity or a DataFrame. When the filter has a client
        side (``apply``), the Explorer applies it, and refetches only when the server side
        (``server_side()``) changed.
    charts : sequence of callables, optional
        ``chart(data) -> go.Figure`` (default `ACTIVITY_CHARTS`; pass ``[]`` for none).
    rows : int
        Rows of the table.
    auto : bool
        Fetch once at construction.

    Attributes
    ----------
    data : Activity or DataFrame or None
        The data shown (after the client-side filters).
    findings : DataFrame or None
        The incidents of ``data`` (None when it is not an Activity).
    figures : list of go.Figure
        The charts shown.
    error : Exception or None
        The last refresh's error, also shown in ``panel.output``.
    changes : DataFrame or None
        The last `explain`: what changed in the window shown against the one before it (the
        "What changed?" button).
    """

    def __init__(self, panel: _Panel, fetch: Callable[[Any], Any],
                 charts: Sequence[Callable[[Any], Any]] | None = None, *, rows: int = 20,
                 auto: bool = True):  # fmt: skip
        self.panel, self.fetch, self.rows = panel, fetch, rows
        self.charts = tuple(ACTIVITY_CHARTS if charts is None else charts)
        self.data, self.findings, self.figures, self.error = None, None, [], None
        self.status = widgets.HTML()
        #: The findings: pick one to filter on its window and provider.
        self.incidents = widgets.Dropdown(description="Findings", options=[("", None)],
                                          style={"description_width": "initial"},
                                          layout=widgets.Layout(width="100%", display="none"))  # fmt: skip
        self.incidents.observe(self._on_pick, names="value")
        self.table = widgets.Output()
        self.plots = widgets.Output()
        #: Explain the window shown against the one before it (`explain`).
        self.explain_button = widgets.Button(description="What changed?",
                                             tooltip="this window against the one before it")  # fmt: skip
        self.explain_button.on_click(lambda _: self._on_explain())
        self.changes, self.changes_output = None, widgets.Output()
        self.widget = widgets.VBox([panel.widget, self.status, self.incidents, self.explain_button,
                                    self.changes_output, self.table, self.plots])  # fmt: skip
        self._fetched: tuple[Any, Any] | None = None
        self._listing = False
        panel.on_change(lambda value: self.refresh())
        if auto:
            self.refresh()

    def refresh(self, force: bool = False) -> None:
        """Fetch (unless only the client-side filters changed) and redraw; ``force`` refetches.

        Errors are kept in ``error`` and shown in the panel's output; the last good data stay.
        """
        from toolkit.incidents import find_incidents

        value = self.panel.value
        key = value.server_side() if hasattr(value, "server_side") else value
        try:
            if force or self._fetched is None or self._fetched[0] != key:
                self._fetched = (key, self.fetch(value))
            data = value.apply(self._fetched[1]) if hasattr(value, "apply") else self._fetched[1]
            figures = [chart(data) for chart in self.charts]
            findings = find_incidents(data) if _is_activity(data) else None
        except Exception as error:  # shown in the panel, not raised into the widgets
            self.error = error
            self.panel.show_error(error)
            return
        self.error, self.data, self.figures, self.findings = None, data, figures, findings
        self.panel.clear_error()
        self.status.value = _describe(data)
        self._list(findings)
        self.table.outputs = ()
        self.table.append_display_data(_table(data, self.rows))
        show_figures(self.plots, figures)

    def pick(self, number: int) -> None:
        """Set the panel's filters to finding ``number``'s window (to the minute, custom range)
        and provider: the Explorer then shows that incident's activity."""
        if self.findings is None or not 0 <= number < len(self.findings):
            count = 0 if self.findings is None else len(self.findings)
            raise ParameterError("number", number, f"a row of the {count} findings shown")
        row = self.findings.iloc[number]
        provider = row["provider_id"]
        self.panel.set(
            after=row["started_at"].floor("1min").to_pydatetime(),
            before=row["ended_at"].ceil("1min").to_pydatetime(),
            providers=() if pd.isna(provider) else (provider,),
        )

    def explain(self, measure: str = "failure_rate") -> pd.DataFrame:
        """`toolkit.what_changed` of the activity shown against the window of the same length
        just before it, fetched with the same filters; kept in ``changes`` and shown as
        sentences under the button."""
        from toolkit.changes import what_changed
        from toolkit.frames import Activity

        data, value = self.data, self.panel.value
        window = (data.attrs.get("after"), data.attrs.get("before")) if _is_activity(data) else ()
        if not isinstance(value, ActivityFilter) or None in window or not window:
            raise ParameterError("data", _describe(data), "activity read for a window (an ActivityPanel's)")  # fmt: skip
        start, end = (pd.Timestamp(t) for t in window)
        earlier = dataclasses.replace(value, period="custom", after=(start - (end - start)).to_pydatetime(), before=start.to_pydatetime())  # fmt: skip
        previous = earlier.apply(self.fetch(earlier))
        keys = ("notification_id", "job_id", "execution_detail_id")
        both = Activity(*(pd.concat([a, b], ignore_index=True).drop_duplicates(key)
                          for a, b, key in zip(previous, data, keys, strict=True)))  # fmt: skip
        both.notifications.attrs = {**data.attrs, "after": start - (end - start)}
        self.changes = what_changed(both, period=(start, end), measure=measure)
        self.changes_output.outputs = ()
        lines = list(self.changes["summary"]) or [f"Nothing stands out: {self.changes.attrs['reason']}."]  # fmt: skip
        self.changes_output.append_stdout("\n".join(lines) + "\n")
        return self.changes

    def _on_explain(self) -> None:
        try:
            self.explain()
        except Exception as error:  # shown in the panel, not raised into the widgets
            self.panel.show_error(error)

    def _list(self, findings: pd.DataFrame | None) -> None:
        """Offer ``findings`` in the dropdown, none picked."""
        if findings is None:
            options = [("", None)]
        elif findings.empty:
            options = [(f"no incidents found ({findings.attrs.get('reason', '')})", None)]
        else:
            options = [(f"{len(findings)} incident(s): pick one to show its window", None)]
            options += [(summary, n) for n, summary in enumerate(findings["summary"])]
        self._listing = True
        try:
            self.incidents.options, self.incidents.value = options, None
        finally:
            self._listing = False
        self.incidents.layout.display = "none" if findings is None else None

    def _on_pick(self, change: Mapping[str, Any]) -> None:
        if self._listing or change["new"] is None:
            return
        try:
            self.pick(change["new"])
        except Exception as error:  # shown in the panel, not raised into the widgets
            self.panel.show_error(error)

    def _repr_mimebundle_(self, **kwargs: Any):
        return self.widget._repr_mimebundle_(**kwargs)


# -- helpers -----------------------------------------------------------------------------------


def show_figures(output: widgets.Output, figures: Iterable[Any]) -> None:
    """Make ``output`` show ``figures`` (and only them), drawn by plotly's default renderer.

    The figures' MIME bundles are written into the widget directly: displaying a plotly figure
    the usual way would draw it in whichever cell happens to be running, not in ``output``.
    """
    output.outputs = tuple(
        {
            "output_type": "display_data",
            "data": figure._repr_mimebundle_() or {"text/plain": charts.summarize(figure)},
            "metadata": {},
        }
        for figure in figures
    )


def _normalize(value: Any, names: Iterable[str]) -> None:
    """Strip text fields of a frozen dataclass; blank text becomes None."""
    for name in names:
        field = getattr(value, name)
        if isinstance(field, str):
            object.__setattr__(value, name, field.strip() or None)


def _strings(values: str | Iterable[str] | None) -> tuple[str, ...]:
    """A tuple of non-blank strings from a comma-separated string or an iterable."""
    if values is None:
        return ()
    items = values.split(",") if isinstance(values, str) else values
    return tuple(text for text in (str(item).strip() for item in items) if text)


def _check(name: str, values: tuple[str, ...], allowed: Sequence[str]) -> None:
    unknown = [value for value in values if value not in allowed]
    if unknown:
        raise ParameterError(name, unknown, f"any of {', '.join(allowed)}")


def _widget_value(value: Any, widget: widgets.Widget) -> Any:
    if isinstance(widget, widgets.Text):
        if isinstance(value, tuple):
            return ", ".join(value)
        return to_iso(value) if isinstance(value, datetime) else value or ""
    return value


def _equals(column: pd.Series, value: str) -> pd.Series:
    """``column == value`` as plain booleans (missing values are not equal)."""
    return (column.astype("string") == value).fillna(False).astype(bool)


def _add_options(widget: widgets.SelectMultiple, values: Iterable[str]) -> None:
    """Add values set from code that the widget does not offer yet (labelled by themselves)."""
    known = {option[1] if isinstance(option, tuple) else option for option in widget.options}
    missing = [value for value in values if value not in known]
    if missing:
        widget.options = [*widget.options, *((value, value) for value in missing)]


def _workflow_choices(workflows: Mapping[str, str] | pd.DataFrame | None) -> list[tuple[str, str]]:
    if workflows is None:
        return []
    if isinstance(workflows, pd.DataFrame):
        pairs = workflows[["workflow_identifier", "template_id"]].dropna().drop_duplicates()
        workflows = dict(zip(pairs["workflow_identifier"], pairs["template_id"], strict=True))
    return sorted(workflows.items())


def _is_activity(data: Any) -> bool:
    return all(isinstance(getattr(data, n, None), pd.DataFrame) for n in metrics.REQUIRED_COLUMNS)


def _describe(data: Any) -> str:
    """A line about ``data``: for an Activity, its size and measures (`toolkit.metrics`)."""
    if not _is_activity(data):
        return f"{len(data)} rows"
    totals = metrics.totals_of(summary(data))
    rate = totals["failure_rate"]
    return (
        f"{len(data.notifications)} notifications, {totals['delivery_jobs']} delivery jobs "
        f"(failure rate {'n/a' if rate is None else f'{rate:.1%}'}, "
        f"{totals['in_flight']} in flight), {len(data.execution_details)} execution details"
    )


def _table(data: Any, rows: int) -> pd.DataFrame:
    """The first ``rows`` rows to show: notifications' `TABLE_COLUMNS`, or a frame's scalar
    columns (object columns, which may hold payloads or credentials, are left out)."""
    if _is_activity(data):
        frame = data.notifications
        return frame[[c for c in TABLE_COLUMNS if c in frame.columns]].head(rows)
    return data.select_dtypes(exclude="object").head(rows)
