"""Plotly charts of activity frames: pure functions, frames in, ``go.Figure`` out.

Every chart colours execution-detail statuses with `STATUS_COLORS` and orders them by
`STATUS_ORDER` (the report uses the same two). Known categories come first in their vocabulary's
order, unknown ones follow sorted: they are kept, never dropped. An empty frame gives an empty
figure whose title ends in "no data". `summarize` turns a figure into compact text for notebooks'
checked outputs.

>>> fig = status_by_channel(activity.execution_details)
>>> print(summarize(fig))
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pandas as pd
import plotly.graph_objects as go

from toolkit.errors import ParameterError
from toolkit.schemas import CHANNELS, DETAIL_STATUSES, STEP_TYPES

__all__ = [
    "FUNNEL_STAGES",
    "MISSING",
    "OTHER_COLOR",
    "STATUS_COLORS",
    "STATUS_ORDER",
    "delivery_funnel",
    "delivery_latency",
    "failure_rate_by_provider",
    "failure_reasons",
    "job_outcomes",
    "status_by_channel",
    "status_by_provider",
    "status_color",
    "status_timeline",
    "summarize",
    "top_failures",
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

_REACHED = FUNNEL_STAGES["sent"]
_STEP_TYPES = frozenset(STEP_TYPES) - frozenset(CHANNELS)
_TEMPLATE = "plotly_white"


def status_color(status: str) -> str:
    """The colour of an execution-detail status (`OTHER_COLOR` for an unknown one)."""
    return STATUS_COLORS.get(status, OTHER_COLOR)


def status_by_channel(details: pd.DataFrame) -> go.Figure:
    """Execution details counted by channel (the job type), stacked by status.

    Parameters
    ----------
    details : DataFrame
        Execution details (``channel``, ``status``).
    """
    title = "Execution details by channel and status"
    if details.empty:
        return _empty(title)
    channel = _labels(details["channel"])
    return _stacked(
        channel,
        _labels(details["status"]),
        _ordered(channel, STEP_TYPES),
        title,
        "channel",
    )


def status_by_provider(details: pd.DataFrame) -> go.Figure:
    """Execution details counted by provider (most details first), stacked by status.

    Parameters
    ----------
    details : DataFrame
        Execution details (``provider_id``, ``status``).
    """
    title = "Execution details by provider and status"
    if details.empty:
        return _empty(title)
    provider = _labels(details["provider_id"])
    return _stacked(provider, _labels(details["status"]), _by_size(provider), title, "provider")


def status_timeline(details: pd.DataFrame, freq: str = "1h") -> go.Figure:
    """Execution details per time bucket, stacked by status.

    Parameters
    ----------
    details : DataFrame
        Execution details (``created_at``, ``status``).
    freq : str
        Bucket width, a fixed width such as ``"15min"``, ``"1h"``, ``"1D"``.
    """
    step = _bucket_width(freq)
    title = f"Execution details per {freq} by status"
    if details.empty:
        return _empty(title)
    bucket = details["created_at"].dt.floor(step)
    buckets = pd.date_range(bucket.min(), bucket.max(), freq=step)
    return _stacked(bucket, _labels(details["status"]), list(buckets), title, "time")


def failure_rate_by_provider(frame: pd.DataFrame, freq: str = "1h", min_jobs: int = 5) -> go.Figure:
    """Share of failed delivery jobs per provider and time bucket, one line per provider.

    Parameters
    ----------
    frame : DataFrame
        Execution details, or jobs; see `job_outcomes` for what "failed" means.
    freq : str
        Bucket width, such as ``"1h"``.
    min_jobs : int
        Buckets with fewer finished jobs of a provider are left as gaps: one failure out of
        two jobs is not a 50 % failure rate worth a spike.
    """
    step = _bucket_width(freq)
    title = f"Failure rate per provider ({freq} buckets)"
    jobs = job_outcomes(frame)
    if jobs.empty:
        return _empty(title)
    jobs["bucket"] = jobs["at"].dt.floor(step)
    rates = jobs.groupby(["provider", "bucket"])["failed"].agg(["mean", "size", "sum"])
    fig = go.Figure(layout=_layout(title, "time", "failed jobs", yaxis_tickformat=".0%"))
    for provider in sorted(rates.index.get_level_values("provider").unique()):
        part = rates.loc[provider]
        fig.add_scatter(
            name=provider,
            x=list(part.index),
            y=[
                round(rate, 4) if size >= min_jobs else None
                for rate, size in zip(part["mean"], part["size"], strict=True)
            ],
            customdata=part[["sum", "size"]].to_numpy().tolist(),
            mode="lines+markers",
            hovertemplate="%{x}<br>%{y:.1%} (%{customdata[0]} of %{customdata[1]} jobs)",
        )
    return fig


def top_failures(
    details: pd.DataFrame, notifications: pd.DataFrame | None = None, top: int = 10
) -> pd.DataFrame:
    """The most frequent failures: ``Failed`` execution details grouped by provider and error.

    Parameters
    ----------
    details : DataFrame
        Execution details (``status``, ``provider_id``, ``error_code``, ``error_text``,
        ``created_at``, ``notification_id``).
    notifications : DataFrame, optional
        Notifications, for the example ``transaction_id`` values.
    top : int
        How many rows.

    Returns
    -------
    DataFrame
        ``provider_id, error_code, error_text, count`` (failed details), ``notifications``
        (distinct), ``first_seen, last_seen, transaction_ids`` (up to three examples), most
        frequent first.
    """
    columns = ["provider_id", "error_code", "error_text", "count", "notifications"]
    columns += ["first_seen", "last_seen", "transaction_ids"]
    failed = details[_labels(details["status"]) == "Failed"]
    if failed.empty:
        return pd.DataFrame(columns=columns)
    keys = pd.DataFrame(
        {
            "provider_id": _labels(failed["provider_id"]),
            "error_code": _labels(failed["error_code"]),
            "error_text": _labels(failed["error_text"]),
            "created_at": failed["created_at"],
            "notification_id": failed["notification_id"].astype(object),
        }
    ).sort_values(["created_at", "notification_id"], kind="stable")
    transactions = {} if notifications is None else _transactions(notifications)
    rows = []
    for (provider, code, error), group in keys.groupby(["provider_id", "error_code", "error_text"]):
        examples = [transactions.get(n) for n in group["notification_id"].unique()]
        rows.append(
            {
                "provider_id": provider,
                "error_code": code,
                "error_text": error,
                "count": len(group),
                "notifications": group["notification_id"].nunique(),
                "first_seen": group["created_at"].min(),
                "last_seen": group["created_at"].max(),
                "transaction_ids": [t for t in examples if t][:3],
            }
        )
    table = pd.DataFrame(rows, columns=columns)
    table = table.sort_values(["count", "first_seen", "error_text"], ascending=[False, True, True])
    return table.head(top).reset_index(drop=True)


def failure_reasons(details: pd.DataFrame, top: int = 10) -> go.Figure:
    """The ``top`` most frequent failures (provider · error code · error text), as bars.

    Parameters
    ----------
    details : DataFrame
        Execution details; see `top_failures`.
    top : int
        How many bars.
    """
    title = f"Top {top} failure reasons"
    table = top_failures(details, top=top)
    if table.empty:
        return _empty(title)
    labels = [
        _shorten(f"{rank}. {row.provider_id} · {row.error_code} · {row.error_text}", 80)
        for rank, row in enumerate(table.itertuples(), start=1)
    ]
    fig = go.Figure(layout=_layout(title, "failed execution details", None))
    fig.add_bar(
        name="Failed",
        x=table["count"].tolist(),
        y=labels,
        orientation="h",
        marker_color=status_color("Failed"),
    )
    fig.update_yaxes(autorange="reversed", automargin=True)
    return fig


def delivery_latency(frame: pd.DataFrame) -> go.Figure:
    """Seconds from a delivery job's first execution to its success, per channel (box plots).

    Parameters
    ----------
    frame : DataFrame
        Execution details, or jobs; see `job_outcomes` for how latency is measured.
    """
    title = "Delivery latency per channel (seconds)"
    jobs = job_outcomes(frame).dropna(subset=["latency_s"])
    if jobs.empty:
        return _empty(title)
    fig = go.Figure(layout=_layout(title, "channel", "seconds"))
    for channel in _ordered(jobs["channel"], CHANNELS):
        latency = jobs.loc[jobs["channel"] == channel, "latency_s"]
        fig.add_box(name=channel, y=latency.round(3).tolist(), boxpoints=False)
    fig.update_layout(showlegend=False)
    return fig


def delivery_funnel(activity) -> go.Figure:
    """Notifications triggered, sent, and delivered or read (the notification ``status``).

    Parameters
    ----------
    activity : Activity
        From ``read_activity``; only ``activity.notifications`` is used.
    """
    title = "Delivery funnel (notifications)"
    notifications = activity.notifications
    if notifications.empty:
        return _empty(title)
    status = _labels(notifications["status"]).str.lower()
    counts = [
        len(status) if reached is None else int(status.isin(reached).sum())
        for reached in FUNNEL_STAGES.values()
    ]
    fig = go.Figure(layout=_layout(title, None, None))
    fig.add_funnel(
        name="notifications",
        y=list(FUNNEL_STAGES),
        x=counts,
        textinfo="value+percent initial",
        marker_color=[
            status_color("Queued"),
            status_color("Success"),
            status_color("ReadConfirmation"),
        ],
    )
    return fig


def job_outcomes(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per delivery job (step jobs such as digest or delay left out).

    Parameters
    ----------
    frame : DataFrame
        Execution details (recognised by ``execution_detail_id``) or jobs. From details, a job
        failed when its last detail is ``Failed``, and its latency runs from its first detail to
        its first ``Success``; from jobs, it failed when its ``final_status`` is ``failed``, and
        its latency is the ``duration_s`` (first to last detail) of a job sent, delivered or read.

    Returns
    -------
    DataFrame
        ``at`` (first execution), ``provider``, ``channel`` (text, `MISSING` when absent),
        ``failed`` (bool), ``latency_s`` (float, NaN when unknown).
    """
    columns = ["at", "provider", "channel", "failed", "latency_s"]
    if frame.empty:
        return pd.DataFrame(columns=columns)
    if "execution_detail_id" in frame.columns:
        details = frame.sort_values(["created_at", "execution_detail_id"], kind="stable")
        status = _labels(details["status"])
        job = details["job_id"].astype(object)
        by_job = details.groupby(job, sort=True)
        at = by_job["created_at"].min()
        succeeded = details["created_at"].where(status == "Success").groupby(job).min()
        jobs = pd.DataFrame(
            {
                "at": at,
                "provider": by_job["provider_id"].first(),
                "channel": by_job["channel"].first(),
                "failed": (status == "Failed").groupby(job).last(),
                "latency_s": (succeeded - at).dt.total_seconds(),
            }
        )
    else:
        final = _labels(frame["final_status"])
        failed = final == "failed"
        jobs = pd.DataFrame(
            {
                "at": frame["first_execution_at"],
                "provider": frame["provider_id"],
                "channel": frame["type"],
                "failed": failed,
                "latency_s": frame["duration_s"].astype("float64").where(final.isin(_REACHED)),
            }
        )
    jobs = jobs.assign(provider=_labels(jobs["provider"]), channel=_labels(jobs["channel"]))
    jobs = jobs[~jobs["channel"].isin(_STEP_TYPES) & jobs["at"].notna()]
    return jobs.reset_index(drop=True)[columns]


def summarize(fig: go.Figure) -> str:
    """Compact text of a figure: its title, then one line per trace with its totals.

    Bars give their sum, a funnel its stages, a box its count and median, a line its number of
    points and its maximum.
    """
    lines = [fig.layout.title.text or "(untitled)"]
    for trace in fig.data:
        lines.append(f"  {trace.name}: {_trace_total(trace)}")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------


def _trace_total(trace) -> str:
    if trace.type == "funnel":
        return ", ".join(f"{stage} {value}" for stage, value in zip(trace.y, trace.x, strict=True))
    if trace.type == "bar":
        values = trace.x if trace.orientation == "h" else trace.y
        return str(int(sum(values)))
    values = pd.Series(trace.y, dtype="float64")
    if trace.type == "box":
        return f"n={len(values)}, median={values.median():.3g}"
    return f"{len(values)} points, max={values.max():.3g}"


def _layout(title: str, xaxis: str | None, yaxis: str | None, **extra) -> go.Layout:
    return go.Layout(
        title={"text": title},
        template=_TEMPLATE,
        xaxis_title=xaxis,
        yaxis_title=yaxis,
        legend={"traceorder": "normal"},
        margin={"l": 60, "r": 20, "t": 60, "b": 50},
        **extra,
    )


def _empty(title: str) -> go.Figure:
    fig = go.Figure(layout=_layout(f"{title}: no data", None, None))
    fig.add_annotation(text="no data", x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False)
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return fig


def _stacked(
    x: pd.Series, status: pd.Series, categories: Sequence, title: str, xaxis: str
) -> go.Figure:
    """One bar trace per status (in `STATUS_ORDER`), counts over ``categories``."""
    counts = pd.crosstab(x, status).reindex(categories, fill_value=0)
    fig = go.Figure(layout=_layout(title, xaxis, "execution details", barmode="stack"))
    for name in _ordered(status, STATUS_ORDER):
        fig.add_bar(
            name=name,
            x=list(categories),
            y=counts[name].astype(int).tolist(),
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


def _by_size(values: pd.Series) -> list[str]:
    """The distinct ``values``, most frequent first (ties by name)."""
    counts = values.value_counts()
    return sorted(counts.index, key=lambda v: (-counts[v], v))


def _transactions(notifications: pd.DataFrame) -> dict[str, str]:
    ids = notifications["notification_id"].astype(object)
    return dict(zip(ids, notifications["transaction_id"].astype(object), strict=True))


def _bucket_width(freq: str) -> pd.Timedelta:
    try:
        step = pd.Timedelta(freq)
    except (TypeError, ValueError):
        step = None
    if step is None or step <= pd.Timedelta(0):
        raise ParameterError("freq", freq, "a fixed bucket width such as '15min', '1h' or '1D'")
    return step


def _shorten(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
