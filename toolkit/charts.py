"""Plotly charts of activity frames: pure functions, frames in, ``go.Figure`` out.

Charts only draw: every number they show is a query of `toolkit.counts` (run by DuckDB over
frames, or by a store's engine). Charts of execution details take ``activity.execution_details``
or their `metrics.detail_counts`; charts of delivery jobs (outcomes, timings, failures) take
``metrics.delivery_jobs(activity)``, the Activity itself, or the counts the report asks its
source for (`toolkit.delivery_counts`, `toolkit.counts.summary`, `toolkit.counts.failures`,
`toolkit.counts.notification_statuses`, `toolkit.counts.around`). Any other frame is refused
with a `ParameterError` naming the frame expected. Every chart colours execution-detail statuses with `STATUS_COLORS` and orders them by
`STATUS_ORDER` (the report uses the same two). Known categories come first in their vocabulary's
order, unknown ones follow sorted: they are kept, never dropped. An empty frame gives an empty
figure whose title ends in "no data". `summarize` turns a figure into compact text for notebooks'
checked outputs.

>>> fig = status_by_channel(activity.execution_details)
>>> print(summarize(fig))
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio

from toolkit import _checks as arg
from toolkit import metrics
from toolkit.errors import ParameterError
from toolkit.schemas import CHANNELS, DETAIL_STATUSES
from toolkit.words import channel_name, kind_name, provider_name

__all__ = [
    "FUNNEL_STAGES",
    "change",
    "MISSING",
    "OTHER_COLOR",
    "STATUS_COLORS",
    "STATUS_ORDER",
    "delivery_funnel",
    "failure_rate_by_provider",
    "failure_reasons",
    "format_seconds",
    "incident_spans",
    "incident_window",
    "job_duration",
    "status_by_channel",
    "status_by_provider",
    "status_color",
    "status_timeline",
    "summarize",
    "time_to_deliver",
]

#: Execution-detail statuses in display order (the spec's enumeration).
STATUS_ORDER = DETAIL_STATUSES

#: One colour per execution-detail status, shared by notebooks and the report.
STATUS_COLORS = {
    "Success": "#2e7d32",
    "Warning": "#f9a825",
    "Failed": "#c62828",
    "Pending": "#90a4ae",
    "Queued": "#5c6bc0",
    "ReadConfirmation": "#00897b",
}

#: The colour of a status outside `STATUS_ORDER`.
OTHER_COLOR = "#8d6e63"

#: Stages of `delivery_funnel` and the notification statuses that reached each (cumulative).
FUNNEL_STAGES = {
    "triggered": None,
    "sent": ("sent", "delivered", "read"),
    "delivered or read": ("delivered", "read"),
}

#: The label of a missing provider, channel or error field.
MISSING = "(none)"

_TEMPLATE = "plotly_white"
#: The log time axis's ticks: a second, ten, a minute, ten minutes, an hour, a day.
_TIME_TICKS = {0.1: "0.1 s", 1: "1 s", 10: "10 s", 60: "1 min", 600: "10 min", 3600: "1 h",
               86400: "1 day"}  # fmt: skip
_OUTCOME_COLORS = {"finished": STATUS_COLORS["Success"], "failed": STATUS_COLORS["Failed"]}


def status_color(status: str) -> str:
    """The colour of an execution-detail status (`OTHER_COLOR` for an unknown one)."""
    return STATUS_COLORS.get(status, OTHER_COLOR)


def format_seconds(value: float) -> str:
    """``0.25`` -> ``"0.25 s"``, ``95`` -> ``"95 s"``, ``150`` -> ``"2.5 min"``, ``7200`` -> ``"2 h"``."""
    units = (("h", 3600), ("min", 60))
    unit, size = next(((u, size) for u, size in units if value >= 2 * size), ("s", 1))
    scaled = value / size
    return f"{scaled:.2g} {unit}" if scaled < 10 else f"{scaled:.0f} {unit}"


def status_by_channel(details: pd.DataFrame) -> go.Figure:
    """Execution details counted by channel (the job type), stacked by status. The status
    charts count the delivery channels' details only: digest and delay steps are not channels.

    Parameters
    ----------
    details : DataFrame
        ``activity.execution_details``, or their `metrics.detail_counts`.
    """
    counts = _counted(details)
    title = "Execution details by channel and status"
    if counts.empty:
        return _empty(title)
    channel = _labels(counts["channel"])
    return _stacked(counts, channel, _ordered(channel, CHANNELS), title, "channel")


def status_by_provider(details: pd.DataFrame) -> go.Figure:
    """Execution details counted by provider (most details first), stacked by status.

    Parameters
    ----------
    details : DataFrame
        ``activity.execution_details``, or their `metrics.detail_counts`.
    """
    counts = _counted(details)
    title = "Execution details by provider and status"
    if counts.empty:
        return _empty(title)
    provider = counts["provider_id"].map(provider_name, na_action=None).astype("string")
    return _stacked(counts, provider, _by_size(provider, counts["count"]), title, "provider")


def status_timeline(details: pd.DataFrame, freq: str = "1h") -> go.Figure:
    """Execution details per time bucket, stacked by status.

    Parameters
    ----------
    details : DataFrame
        ``activity.execution_details``, or their `metrics.detail_counts` (in buckets that
        divide ``freq``).
    freq : str
        Bucket width, a fixed width such as ``"15min"``, ``"1h"``, ``"1D"``.
    """
    step = metrics.bucket_width(freq)
    counts = _counted(details, freq)
    title = f"Execution details per {freq} by status"
    if counts.empty:
        return _empty(title)
    bucket = counts["created_at"].dt.floor(step)
    buckets = pd.date_range(bucket.min(), bucket.max(), freq=step)
    return _stacked(counts, bucket, list(buckets), title, "time")


def failure_rate_by_provider(jobs, freq: str = "1h", min_jobs: int = 5) -> go.Figure:
    """Failure rate (failed / (finished + failed), `metrics.DEFINITIONS`) per provider and time
    bucket, one line each.

    Parameters
    ----------
    jobs : DataFrame or Activity
        ``metrics.delivery_jobs(activity)``, the Activity, or their `toolkit.delivery_counts`
        by ``provider_id`` (in buckets that divide ``freq``). A job falls in the bucket of its
        notification's creation.
    freq : str
        Bucket width, such as ``"1h"``.
    min_jobs : int
        Buckets with fewer finished or failed jobs of a provider are left as gaps: one failure
        out of two jobs is not a 50 % failure rate worth a spike.
    """
    step = metrics.bucket_width(freq)
    title = f"Failure rate per provider ({freq} buckets)"
    if _is_delivery_counts(jobs):
        counts = jobs
    else:
        from toolkit.counts import delivery_counts

        counts = delivery_counts(_delivery_jobs(jobs), freq=freq, by=["provider_id"])
    rates = (
        counts.assign(provider=counts["provider_id"].astype("string").fillna(MISSING),
                      bucket=counts["bucket"].dt.floor(step))
        .groupby(["provider", "bucket"], sort=True)[["finished", "failed"]].sum()
        .reset_index()
    )  # fmt: skip
    rates["jobs"] = rates["finished"] + rates["failed"]
    rates = rates[rates["jobs"] > 0]
    if rates.empty:
        return _empty(title)
    fig = _figure(title, "time", "failure rate", yaxis_tickformat=".0%")
    for provider, part in rates.groupby("provider", sort=True):
        fig.add_scatter(
            name=provider_name(None if provider == MISSING else provider),
            x=list(part["bucket"]),
            y=[
                round(failed / size, 4) if size >= min_jobs else None
                for failed, size in zip(part["failed"], part["jobs"], strict=True)
            ],
            customdata=part[["failed", "jobs"]].to_numpy().tolist(),
            mode="lines+markers",
            hovertemplate="%{x}<br>%{y:.1%} (%{customdata[0]} of %{customdata[1]} jobs)",
        )
    return fig


def failure_reasons(jobs, top: int = 10) -> go.Figure:
    """The ``top`` most frequent failures (`toolkit.counts.failures`) as bars of failed jobs.

    Parameters
    ----------
    jobs : DataFrame or Activity
        ``metrics.delivery_jobs(activity)``, the Activity, or their `toolkit.counts.failures`.
    top : int
        How many bars.
    """
    from toolkit.counts import FAILURE_KEYS, failures

    arg.top(top)
    title = f"Top {top} failure reasons"
    if isinstance(jobs, pd.DataFrame) and {*FAILURE_KEYS, "failed"} <= set(jobs.columns):
        table = jobs.head(top)
    else:
        table = failures(_delivery_jobs(jobs), examples=0).head(top)
    if table.empty:
        return _empty(title)
    labels = [
        _shorten(
            f"{rank}. "
            + " · ".join([provider_name(row.provider_id), *_labels(pd.Series(row[2:4]))]),
            80,
        )
        for rank, row in enumerate(table.itertuples(index=False), start=1)
    ]
    fig = _figure(title, "failed delivery jobs", None)
    fig.add_bar(
        name="Failed",
        x=table["failed"].tolist(),
        y=labels,
        orientation="h",
        marker_color=status_color("Failed"),
    )
    fig.update_yaxes(autorange="reversed", automargin=True)
    return fig


def time_to_deliver(jobs) -> go.Figure:
    """Time to deliver (`metrics.DEFINITIONS`) per channel: its median and 95th percentile.

    Two bars per channel (p50, p95, labelled with their values) on a logarithmic axis: times
    to deliver span from about a second to many minutes (digest and delay waits), and on a
    linear axis, or as box plots, the one-second medians vanish under the long tail. The
    percentiles are those of `toolkit.counts.summary`, as in the report's table.

    Parameters
    ----------
    jobs : DataFrame or Activity
        ``metrics.delivery_jobs(activity)``, the Activity, or their `toolkit.counts.summary`
        by ``channel``.
    """
    return _timing_chart(jobs, "time_to_deliver_s", "Time to deliver")


def job_duration(jobs) -> go.Figure:
    """Job duration (first to last execution detail) per channel: p50 and p95, as
    `time_to_deliver` draws them.

    Parameters
    ----------
    jobs : DataFrame or Activity
        ``metrics.delivery_jobs(activity)``, the Activity, or their `toolkit.counts.summary`
        by ``channel`` with ``measure="job_duration_s"``.
    """
    return _timing_chart(jobs, "job_duration_s", "Job duration")


def delivery_funnel(activity) -> go.Figure:
    """Notifications triggered, sent, and delivered or read (the notification ``status``).

    Parameters
    ----------
    activity : Activity or DataFrame
        From ``read_activity`` (its notifications are counted), or the
        `toolkit.counts.notification_statuses` of a window.
    """
    from toolkit.counts import notification_statuses

    title = "Delivery funnel (notifications)"
    if isinstance(activity, pd.DataFrame) and list(activity.columns) == ["status", "notifications"]:
        statuses = activity
    else:
        notifications = getattr(activity, "notifications", None)
        if not isinstance(notifications, pd.DataFrame) or "status" not in notifications.columns:
            raise ParameterError("activity", _kind(activity), "an Activity (from read_activity)")
        statuses = notification_statuses(activity)
    if statuses.empty:
        return _empty(title)
    status, number = statuses["status"].fillna(""), statuses["notifications"]
    counts = [
        int(number.sum() if reached is None else number[status.isin(reached).to_numpy()].sum())
        for reached in FUNNEL_STAGES.values()
    ]
    fig = _figure(title, None, None)
    fig.add_funnel(
        name="notifications",
        y=list(FUNNEL_STAGES),
        x=counts,
        texttemplate="%{value:,}<br>%{percentInitial:.0%}",
        marker_color=[
            status_color("Queued"),
            status_color("Success"),
            status_color("ReadConfirmation"),
        ],
    )
    return fig


def incident_window(jobs, incident) -> go.Figure:
    """A small chart of one incident: the jobs of its channel, provider and domain around it.

    Finished and failed jobs per bucket (stacked bars) from a little before the incident to a
    little after it, its period shaded; for a ``latency_degradation``, also the median time to
    deliver (a line on the right axis). A job is placed at its first execution detail, else its
    trigger.

    Parameters
    ----------
    jobs : DataFrame or Activity
        ``metrics.delivery_jobs(activity)``, the Activity, or the incident's rows of
        `toolkit.counts.around` (of its `incident_spans`).
    incident : mapping or Series
        A row of `toolkit.find_incidents`: ``kind, channel, provider_id, domain, started_at,
        ended_at`` are used (missing ``channel``, ``provider_id`` or ``domain``: any).
    """
    from toolkit.counts import around

    needed = ("kind", "started_at", "ended_at")
    if not isinstance(incident, Mapping | pd.Series) or not all(k in incident for k in needed):
        raise ParameterError("incident", _kind(incident), "a row of toolkit.find_incidents")
    if isinstance(jobs, pd.DataFrame) and list(jobs.columns) == AROUND_COLUMNS:
        part = jobs
    else:
        part = around(_delivery_jobs(jobs), incident_spans(pd.DataFrame([dict(incident)])))
    start, end = pd.Timestamp(incident["started_at"]), pd.Timestamp(incident["ended_at"])
    pad = max((end - start) / 2, pd.Timedelta("30min"))
    step = _nice_step((end - start) + 2 * pad)
    names = {"channel": channel_name, "provider_id": provider_name, "domain": str}
    where = " · ".join(names[c](incident[c]) for c in names if not pd.isna(incident.get(c)))
    fig = _figure(f"{kind_name(incident['kind']).capitalize()}: {where}", None, "delivery jobs",
                  barmode="stack", height=280, showlegend=True)  # fmt: skip
    fig.update_layout(margin={"l": 50, "r": 50, "t": 40, "b": 30}, title_font_size=13,
                      legend={"orientation": "h", "x": 1, "xanchor": "right", "y": 1.02,
                              "yanchor": "bottom"})  # fmt: skip
    latest = part.attrs.get("latest")
    last = end + pad if latest is None else min(end + pad, latest)  # the window's end
    buckets = pd.date_range((start - pad).floor(step), max(end, last).floor(step), freq=step)
    counted = part.set_index("bucket")
    for name, color in _OUTCOME_COLORS.items():
        fig.add_bar(name=name, x=list(buckets), y=counted[name].reindex(buckets, fill_value=0).tolist(),
                    marker_color=color)  # fmt: skip
    if incident["kind"] == "latency_degradation":
        median = counted["median"].reindex(buckets)
        fig.add_scatter(name="median time to deliver (s)", x=list(buckets),
                        y=[None if pd.isna(v) else round(v, 3) for v in median], yaxis="y2",
                        mode="lines", line_color=STATUS_COLORS["Queued"])  # fmt: skip
        fig.update_layout(yaxis2={"overlaying": "y", "side": "right", "title": "seconds"})
    fig.add_vrect(x0=start, x1=end, fillcolor=STATUS_COLORS["Failed"], opacity=0.12, line_width=0)
    return fig


#: The columns of an incident's `toolkit.counts.around` rows, as `incident_window` takes them.
AROUND_COLUMNS = ["incident", "bucket", "finished", "failed", "median"]


def incident_spans(incidents: pd.DataFrame) -> pd.DataFrame:
    """What `incident_window` draws of each incident (rows of `toolkit.find_incidents`), as
    `toolkit.counts.around` takes it: its channel, provider and domain, from half its length
    (at least 30 min) before it to as long after, in at most 60 round buckets."""
    rows = []
    for incident in incidents.to_dict("records"):
        start, end = pd.Timestamp(incident["started_at"]), pd.Timestamp(incident["ended_at"])
        pad = max((end - start) / 2, pd.Timedelta("30min"))
        rows.append({**{key: incident.get(key) for key in ("channel", "provider_id", "domain")},
                     "low": start - pad, "high": end + pad,
                     "step": _nice_step((end - start) + 2 * pad),
                     "timed": incident["kind"] == "latency_degradation"})  # fmt: skip
    return pd.DataFrame(rows, columns=["channel", "provider_id", "domain", "low", "high", "step", "timed"])  # fmt: skip


def change(cause, measure: str = "failure_rate") -> go.Figure:
    """A small chart of one cause of `toolkit.what_changed`: its failure rate (volume: its
    delivery jobs) in the baseline, as expected for the period, and in the period.

    Parameters
    ----------
    cause : mapping or Series
        A row of `toolkit.what_changed` (``cause, jobs, failed, failure_rate, baseline_jobs,
        baseline_rate, excess``).
    measure : {"failure_rate", "volume"}
        The measure the row explains.
    """
    needed = ("cause", "jobs", "failed", "failure_rate", "baseline_jobs", "baseline_rate", "excess")
    if not isinstance(cause, Mapping | pd.Series) or not all(k in cause for k in needed):
        raise ParameterError("cause", _kind(cause), "a row of toolkit.what_changed")
    if measure not in ("failure_rate", "volume"):
        raise ParameterError("measure", measure, "'failure_rate' or 'volume'")
    where = " & ".join(f"{name}={value}" for name, value in cause["cause"].items())
    if measure == "volume":
        values = [cause["baseline_jobs"], cause["jobs"] - cause["excess"], cause["jobs"]]
    else:
        expected = (cause["failed"] - cause["excess"]) / cause["jobs"] if cause["jobs"] else None
        values = [cause["baseline_rate"], expected, cause["failure_rate"]]
    axis = "delivery jobs" if measure == "volume" else "failure rate"
    fig = _figure(where, None, axis, height=220, showlegend=False)
    fig.update_layout(margin={"l": 50, "r": 20, "t": 40, "b": 30}, title_font_size=13)
    fig.add_bar(x=["baseline", "expected", "period"], y=values,
                marker_color=[OTHER_COLOR, OTHER_COLOR, STATUS_COLORS["Failed"]])  # fmt: skip
    if measure == "failure_rate":
        fig.update_yaxes(tickformat=".0%")
    return fig


def summarize(fig: go.Figure) -> str:
    """Compact text of a figure: its title, then one line per trace with its totals.

    Bars of counts give their sum (bars of timings their value per category), a funnel its
    stages, a box its count and median, a line its number of points and its maximum.
    """
    lines = [fig.layout.title.text or "(untitled)"]
    for trace in fig.data:
        lines.append(f"  {trace.name}: {_trace_total(trace)}")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------


def _trace_total(trace) -> str:
    if trace.type == "funnel":
        return ", ".join(f"{stage} {value}" for stage, value in zip(trace.y, trace.x, strict=True))
    if trace.type == "bar" and trace.meta == "timing":
        return ", ".join(f"{x} {y:g}" for x, y in zip(trace.x, trace.y, strict=True))
    if trace.type == "bar":
        values = trace.x if trace.orientation == "h" else trace.y
        return str(int(sum(values)))
    values = pd.Series(trace.y, dtype="float64")
    if trace.type == "box":
        return f"n={len(values)}, median={values.median():.3g}"
    return f"{len(values)} points, max={values.max():.3g}"


def _timing_chart(jobs: Any, measure: str, name: str) -> go.Figure:
    from toolkit.counts import summary

    title = f"{name} per channel: p50 and p95"
    if isinstance(jobs, pd.DataFrame) and {"channel", "p50", "p95", "n"} <= set(jobs.columns):
        table = jobs
    else:
        table = summary(_delivery_jobs(jobs), "channel", measure=measure)
    table = table[table["n"].to_numpy() > 0]
    if table.empty:
        return _empty(title)
    table = table.set_index("channel").reindex(_ordered(table["channel"], CHANNELS))
    fig = _figure(title, "channel", "time (log scale)", barmode="group", yaxis_type="log")
    top = table[["p50", "p95"]].max().max()
    ticks = [t for t in _TIME_TICKS if t <= 10 * top] if top > 0 else list(_TIME_TICKS)
    fig.update_yaxes(tickvals=ticks, ticktext=[_TIME_TICKS[t] for t in ticks], minor_showgrid=False)
    for column, color in (("p50", STATUS_COLORS["Success"]), ("p95", STATUS_COLORS["Warning"])):
        values = table[column].round(3).tolist()
        fig.add_bar(
            name=column,
            x=list(table.index),
            y=values,
            text=[format_seconds(value) for value in values],
            customdata=table["n"].tolist(),
            hovertemplate=f"%{{x}}: {column} %{{text}} (%{{customdata}} jobs)<extra></extra>",
            marker_color=color,
            textangle=0,
            meta="timing",
        )
    return fig


def _counted(frame: Any, freq: str | None = None) -> pd.DataFrame:
    """`metrics.detail_counts` of an execution-details frame (in buckets of ``freq``), or such
    counts themselves when their buckets divide ``freq``, of the delivery channels (not digest
    or delay steps); anything else is refused."""
    if isinstance(frame, pd.DataFrame) and "execution_detail_id" in frame.columns:
        counts = metrics.detail_counts(frame, freq or "1D")
    elif metrics.is_detail_counts(frame):
        width = frame.attrs["freq"]
        if freq is not None and metrics.bucket_width(freq) % width:
            raise ParameterError("freq", freq, f"a multiple of the counts' bucket width ({width})")
        counts = frame
    else:
        raise ParameterError(
            "details", _kind(frame), "execution details (activity.execution_details) or their metrics.detail_counts"
        )  # fmt: skip
    return counts[counts["channel"].astype("string").isin(CHANNELS).fillna(False).to_numpy()]


def _delivery_jobs(data: Any) -> Any:
    """``data`` itself if it is a `metrics.delivery_jobs` frame or an Activity (which the
    queries of `toolkit.counts` read alike), or a `ParameterError`."""
    if isinstance(data, pd.DataFrame) and "outcome" in data.columns:
        return data
    if all(isinstance(getattr(data, n, None), pd.DataFrame) for n in metrics.REQUIRED_COLUMNS):
        return data
    raise ParameterError(
        "jobs", _kind(data), "delivery jobs (metrics.delivery_jobs(activity)) or an Activity"
    )


def _is_delivery_counts(frame: Any) -> bool:
    """Whether ``frame`` is a `toolkit.delivery_counts` frame by ``provider_id``."""
    return isinstance(frame, pd.DataFrame) and {"bucket", "provider_id", "finished", "failed"} <= set(frame.columns) and "freq" in frame.attrs  # fmt: skip


def _kind(value: Any) -> str:
    """What ``value`` looks like, in words, for error messages."""
    if not isinstance(value, pd.DataFrame):
        return f"a {type(value).__name__}"
    for column, kind in (
        ("execution_detail_id", "execution details"),
        ("outcome", "delivery jobs"),
        ("final_status", "jobs (activity.jobs)"),
        ("transaction_id", "notifications"),
    ):
        if column in value.columns:
            return f"a frame of {kind}"
    return f"a frame with columns {list(value.columns)[:6]}"


def _nice_step(span: pd.Timedelta) -> pd.Timedelta:
    """The smallest round bucket width giving at most 60 buckets over ``span``."""
    for width in ("1min", "5min", "15min", "30min", "1h", "3h", "6h", "12h"):
        if span / pd.Timedelta(width) <= 60:
            return pd.Timedelta(width)
    return pd.Timedelta("1D")


def _figure(title: str, xaxis: str | None, yaxis: str | None, **extra) -> go.Figure:
    """An empty figure with the charts' layout (`_layout`). Its template is set the way plotly
    sets its default one, without validating it again (a deep copy of the template: about
    15 ms a figure, a quarter of the report's findings and charts)."""
    fig = go.Figure(layout=_layout(title, xaxis, yaxis, template=None, **extra))
    fig.layout._validate = False
    try:
        fig.layout.template = pio.templates[_TEMPLATE]
    finally:
        fig.layout._validate = True
    return fig


def _layout(
    title: str, xaxis: str | None, yaxis: str | None, template: str | None = _TEMPLATE, **extra
) -> go.Layout:
    return go.Layout(
        title={"text": title},
        template=template,
        xaxis_title=xaxis,
        yaxis_title=yaxis,
        legend={"traceorder": "normal"},
        margin={"l": 60, "r": 20, "t": 60, "b": 50},
        **extra,
    )


def _empty(title: str) -> go.Figure:
    fig = _figure(f"{title}: no data", None, None)
    fig.add_annotation(text="no data", x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False)
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return fig


def _stacked(
    counts: pd.DataFrame, x: pd.Series, categories: Sequence, title: str, xaxis: str
) -> go.Figure:
    """One bar trace per status (in `STATUS_ORDER`): the ``counts`` summed over ``categories``
    of ``x``."""
    status = _labels(counts["status"])
    table = (
        pd.DataFrame({"x": x, "status": status, "count": counts["count"]})
        .groupby(["x", "status"], sort=False)["count"]
        .sum()
        .unstack(fill_value=0)
        .reindex(categories, fill_value=0)
    )
    fig = _figure(title, xaxis, "execution details", barmode="stack")
    for name in _ordered(status, STATUS_ORDER):
        fig.add_bar(
            name=name,
            x=list(categories),
            y=table[name].astype(int).tolist(),
            marker_color=status_color(name),
        )
    return fig


def _labels(series: pd.Series) -> pd.Series:
    """Text labels (plain ``object`` strings), missing values as `MISSING`."""
    return series.astype("string").fillna(MISSING).astype(object)


def _ordered(values: Iterable, known: Sequence[str]) -> list[str]:
    """The distinct ``values``: the known ones in ``known`` order, then the others sorted."""
    present = set(values)
    return [v for v in known if v in present] + sorted(present.difference(known))


def _by_size(values: pd.Series, weights: pd.Series) -> list[str]:
    """The distinct ``values``, largest total weight first (ties by name)."""
    totals = weights.groupby(values.to_numpy(), sort=False).sum()
    return sorted(totals.index, key=lambda v: (-totals[v], v))


def _shorten(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
