"""The measures of delivery, each defined once: pure functions, frames in, frames out.

Charts, the report, the panels, the Monitor and incident detection all take their numbers from
here, so that a figure means the same thing wherever it is shown. `DEFINITIONS` holds the
definitions in words (the report's glossary and the README quote it).

>>> jobs = delivery_jobs(activity)
>>> failure_rates(jobs, ["channel", "provider_id"])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from toolkit.errors import ParameterError
from toolkit.schemas import CHANNELS

__all__ = [
    "COUNT_COLUMNS",
    "DEFINITIONS",
    "OUTCOMES",
    "REQUIRED_COLUMNS",
    "bucket_width",
    "delivery_jobs",
    "detail_counts",
    "failure_rates",
    "has_outcome",
    "percentiles",
    "time_to_send",
    "top_failures",
    "totals",
    "wilson_interval",
]

#: A delivery job's outcome, from its ``final_status``.
OUTCOMES = ("finished", "failed", "in_flight", "not_sent")

#: The definitions behind every measure, in words.
DEFINITIONS = {
    "delivery job": "A job that sends on a channel (in_app, email, sms, chat, push); workflow "
    "steps such as digest or delay are not deliveries.",
    "outcome": "A delivery job is failed when its final status is failed (a bounce reported "
    "after the send counts), in flight while it is pending, queued, running or delayed, not sent "
    "when it was skipped, canceled or merged into a digest, and finished otherwise (sent, "
    "delivered, read, completed, warning).",
    "failure rate": "Failed delivery jobs divided by failed plus finished ones. Jobs in flight or "
    "not sent count neither way. The interval is the 95% Wilson score interval.",
    "time to deliver": "Seconds from the trigger (the notification's creation) to the first "
    "Success execution detail of a delivery job; includes digest and delay waits.",
    "job duration": "Seconds from a delivery job's first to its last execution detail.",
    "time to send": "Seconds from a delivery job's first execution detail (the step queued) to "
    "its first Success: the time to deliver without the digest and delay waits before the step.",
    "recipient domain": "For an email job, the lower-cased part after '@' of the subscriber's "
    "email address.",
    "p50, p95": "Percentiles of a timing over the jobs it is known for: half of them took at "
    "most the p50 (the median), 95% at most the p95 (linear interpolation between jobs).",
    "subscribers reached": "Distinct subscribers with at least one finished delivery job.",
}

#: The columns of each activity frame that the measures read (a store can load only these).
REQUIRED_COLUMNS = {
    "notifications": (
        "notification_id",
        "created_at",
        "subscriber_id",
        "subscriber_email",
        "workflow_identifier",
    ),
    "jobs": (
        "job_id",
        "notification_id",
        "type",
        "final_status",
        "provider_id",
        "first_execution_at",
        "last_execution_at",
        "duration_s",
        "error_code",
        "error_text",
    ),
    "execution_details": ("job_id", "notification_id", "status", "created_at", "raw"),
}

#: The columns of `detail_counts`, with their dtypes.
COUNT_COLUMNS = {
    "created_at": "datetime64[ns, UTC]",
    "channel": "string",
    "provider_id": "string",
    "status": "string",
    "count": "int64",
}

_JOB_COLUMNS = {
    "job_id": "string",
    "notification_id": "string",
    "subscriber_id": "string",
    "workflow": "string",
    "channel": pd.CategoricalDtype(CHANNELS),
    "provider_id": "string",
    "triggered_at": "datetime64[ns, UTC]",
    "started_at": "datetime64[ns, UTC]",
    "ended_at": "datetime64[ns, UTC]",
    "final_status": "string",
    "outcome": pd.CategoricalDtype(OUTCOMES),
    "error_code": "string",
    "error_text": "string",
    "domain": "string",
    "time_to_deliver_s": "float64",
    "time_to_send_s": "float64",
    "job_duration_s": "float64",
    "failed_attempts": "int64",
}


def delivery_jobs(activity: Any, *, after: Any = None, before: Any = None) -> pd.DataFrame:
    """One row per delivery job of ``activity``, with its outcome and timings: the rows of the
    one definition of a delivery job (`toolkit.counts.DELIVERY_JOBS`, run by DuckDB over the
    frames or by a store's engine), the rows behind `toolkit.delivery_counts`.

    Parameters
    ----------
    activity : Activity or Store
        From ``read_activity`` or a store: ``notifications``, ``jobs`` and
        ``execution_details`` with at least the `REQUIRED_COLUMNS`; or a store itself.
    after, before : str or datetime, optional
        Only the notifications created in this window (default: all).

    Returns
    -------
    DataFrame
        ``job_id, notification_id, subscriber_id, workflow`` (the workflow identifier),
        ``channel, provider_id, triggered_at, started_at, ended_at`` (first and last execution
        detail), ``final_status, outcome`` (`OUTCOMES`), ``error_code, error_text, domain``
        (email jobs), ``time_to_deliver_s, time_to_send_s, job_duration_s`` (see `DEFINITIONS`),
        ``failed_attempts`` (its Failed execution details: retries that failed too); ordered by
        start (first execution detail, else trigger), then job id. Step jobs (digest, delay, ...) and jobs whose notification is not
        in ``activity`` are left out; an empty activity gives a zero-row frame.
    """
    from toolkit.counts import delivery_job_rows

    frame = delivery_job_rows(activity, after=after, before=before).to_pandas()
    if frame.empty:
        frame = pd.DataFrame({name: pd.Series(dtype=dtype) for name, dtype in _JOB_COLUMNS.items()})
    return frame.astype(_JOB_COLUMNS)[list(_JOB_COLUMNS)]


def detail_counts(details: pd.DataFrame, freq: str = "1h") -> pd.DataFrame:
    """Execution details counted per time bucket, channel, provider and status: what the status
    charts draw, small for any window (`toolkit.counts.detail_counts`, which a store runs over
    its files).

    Parameters
    ----------
    details : DataFrame
        ``activity.execution_details``.
    freq : str
        Bucket width: ``created_at`` is floored to it (from the Unix epoch).

    Returns
    -------
    DataFrame
        `COUNT_COLUMNS` (``created_at`` the bucket's start; missing values form their own
        group), sorted by them; ``attrs["freq"]`` holds the width as a Timedelta.
    """
    from types import SimpleNamespace

    from toolkit.counts import detail_counts as counted

    return counted(SimpleNamespace(execution_details=details), freq=freq)


def is_detail_counts(frame: Any) -> bool:
    """Whether ``frame`` is a `detail_counts` frame (its columns, and its bucket width in
    ``attrs["freq"]``)."""
    return (
        isinstance(frame, pd.DataFrame)
        and "freq" in frame.attrs
        and list(frame.columns) == list(COUNT_COLUMNS)
    )


def bucket_width(freq: str) -> pd.Timedelta:
    """``freq`` (``"15min"``, ``"1h"``, ``"1D"``) as a positive Timedelta, or `ParameterError`."""
    try:
        step = pd.Timedelta(freq)
    except (TypeError, ValueError):
        step = None
    if step is None or step <= pd.Timedelta(0):
        raise ParameterError("freq", freq, "a fixed bucket width such as '15min', '1h' or '1D'")
    return step


def has_outcome(jobs: pd.DataFrame, *outcomes: str) -> np.ndarray:
    """Which of ``jobs`` (from `delivery_jobs`) have one of ``outcomes`` (`OUTCOMES`)."""
    return np.asarray(jobs["outcome"].isin(outcomes), dtype=bool)


def time_to_send(jobs: pd.DataFrame) -> pd.Series:
    """Seconds from each delivery job's first execution detail to its first Success (NaN when
    never sent); ``jobs`` from `delivery_jobs` (its ``time_to_send_s``). See `DEFINITIONS`."""
    return jobs["time_to_send_s"]


def wilson_interval(
    failed: np.ndarray | Sequence[int], total: np.ndarray | Sequence[int], confidence: float = 0.95
) -> tuple[np.ndarray, np.ndarray]:
    """The Wilson score interval of ``failed / total`` (NaN where ``total`` is 0)."""
    from scipy.special import ndtri  # norm.ppf, without importing scipy.stats (~0.6 s)

    if not 0 < confidence < 1:
        raise ParameterError("confidence", confidence, "a probability between 0 and 1")
    k = np.asarray(failed, dtype="float64")
    n = np.asarray(total, dtype="float64")
    z = ndtri(0.5 + confidence / 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = k / n
        centre = (p + z**2 / (2 * n)) / (1 + z**2 / n)
        half = z * np.sqrt(p * (1 - p) / n + z**2 / (4 * n**2)) / (1 + z**2 / n)
        low, high = np.fmin(centre - half, p), np.fmax(centre + half, p)  # around the rate
    return np.clip(low, 0, 1), np.clip(high, 0, 1)


def failure_rates(
    jobs: pd.DataFrame, by: str | Sequence[str], *, confidence: float = 0.95
) -> pd.DataFrame:
    """Failure rate of delivery jobs per group, with its Wilson interval.

    Parameters
    ----------
    jobs : DataFrame
        From `delivery_jobs`.
    by : str or list of str
        Columns of ``jobs`` to group by (``"channel"``, ``["channel", "provider_id"]``,
        ``"workflow"``, ``"domain"``, ...); missing values form their own group.
    confidence : float
        Of the interval.

    Returns
    -------
    DataFrame
        The ``by`` columns, then ``jobs`` (finished plus failed), ``failed``, ``in_flight``,
        ``failure_rate`` (NaN when ``jobs`` is 0), ``ci_low``, ``ci_high``; one row per group.
    """
    from toolkit.counts import summary

    keys = _columns(jobs, by, "by")
    table = summary(jobs, keys, quantiles=(), confidence=confidence)
    return table[[*keys, "jobs", "failed", "in_flight", "failure_rate", "ci_low", "ci_high"]]


def percentiles(
    jobs: pd.DataFrame,
    by: str | Sequence[str],
    measure: str = "time_to_deliver_s",
    quantiles: Sequence[float] = (0.5, 0.95),
) -> pd.DataFrame:
    """Percentiles of a timing per group: columns ``p50``, ``p95``, ... and ``n`` (jobs timed).

    Parameters
    ----------
    jobs : DataFrame
        From `delivery_jobs`.
    by : str or list of str
        Columns to group by.
    measure : str
        ``"time_to_deliver_s"`` or ``"job_duration_s"``.
    quantiles : sequence of float
        Between 0 and 1.
    """
    from toolkit.counts import percentile_name, summary

    keys = _columns(jobs, by, "by")
    table = summary(jobs, keys, measure=measure, quantiles=quantiles)
    names = list(dict.fromkeys(percentile_name(q) for q in quantiles))
    timed = table["n"].to_numpy() > 0
    return table.loc[timed, [*keys, *names, "n"]].reset_index(drop=True)


def top_failures(
    jobs: pd.DataFrame, notifications: pd.DataFrame | None = None, *, top: int | None = 10
) -> pd.DataFrame:
    """The most frequent failures: failed delivery jobs per channel, provider and error
    (`toolkit.counts.failures`, counted by DuckDB over the frames).

    Parameters
    ----------
    jobs : DataFrame
        From `delivery_jobs`.
    notifications : DataFrame, optional
        Notifications (``notification_id``, ``transaction_id``), for example transaction ids.
    top : int or None
        How many rows (None: all).

    Returns
    -------
    DataFrame
        ``channel, provider_id, error_code, error_text`` (missing values form their own group),
        ``failed`` (jobs), ``notifications, subscribers`` (distinct), ``first_seen, last_seen``
        (the failed jobs' first and last execution details), ``transaction_ids`` (up to three, earliest
        first; empty without ``notifications``); most failed jobs first.
    """
    from toolkit.counts import failures

    keys = ["channel", "provider_id", "error_code", "error_text"]
    needed = [*keys, "outcome", "started_at", "ended_at", "notification_id", "subscriber_id"]
    _columns(jobs, needed, "jobs")
    table = failures(jobs, notifications=notifications, top=top)
    shown = table.head(len(table) if top is None else top).reset_index(drop=True)
    return shown.astype({"notifications": "int64", "subscribers": "int64"})  # all counted


def totals(jobs: pd.DataFrame) -> dict[str, Any]:
    """The measures over all of ``jobs`` (from `delivery_jobs`), as plain numbers.

    Returns
    -------
    dict
        ``delivery_jobs`` (all), ``jobs`` (finished plus failed), ``failed``, ``in_flight``,
        ``not_sent``, ``failure_rate``, ``ci_low``, ``ci_high`` (None without jobs),
        ``time_to_deliver_p50``, ``time_to_deliver_p95`` (None when no job was delivered),
        ``subscribers_reached``.
    """
    from toolkit.counts import summary

    _columns(jobs, ["outcome", "subscriber_id", "time_to_deliver_s"], "jobs")
    return totals_of(summary(jobs))


def totals_of(table: pd.DataFrame) -> dict[str, Any]:
    """The one row of a `toolkit.counts.summary` over all jobs, as `totals` gives it."""
    row = table.iloc[0]
    return {
        **{
            key: int(row[key])
            for key in ("delivery_jobs", "jobs", "failed", "in_flight", "not_sent")
        },  # fmt: skip
        **{key: _number(row[key]) for key in ("failure_rate", "ci_low", "ci_high")},
        "time_to_deliver_p50": _number(row["p50"]),
        "time_to_deliver_p95": _number(row["p95"]),
        "subscribers_reached": int(row["subscribers_reached"]),
    }


# --------------------------------------------------------------------------------------------


def check_activity(activity: Any) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    frames = tuple(getattr(activity, name, None) for name in REQUIRED_COLUMNS)
    if not all(isinstance(frame, pd.DataFrame) for frame in frames):
        raise ParameterError(
            "activity",
            type(activity).__name__,
            "an Activity (notifications, jobs, execution_details) from read_activity or a store",
        )
    for (name, needed), frame in zip(REQUIRED_COLUMNS.items(), frames, strict=True):
        missing = [column for column in needed if column not in frame.columns]
        if missing:
            raise ParameterError(
                f"activity.{name}",
                f"columns {list(frame.columns)[:8]}…",
                f"a frame with the columns {missing}",
            )
    return frames


def positions(keys: pd.Series, values: pd.Series) -> np.ndarray:
    """The position in ``keys`` of each of ``values`` (its first occurrence; -1 when absent or
    missing): an index lookup by one hash table of ``keys``, in Arrow."""
    import pyarrow as pa
    import pyarrow.compute as pc

    key_array = pa.array(keys.astype("string").array)
    if isinstance(key_array, pa.ChunkedArray):
        key_array = key_array.combine_chunks()
    found = pc.index_in(pa.array(values.astype("string").array), value_set=key_array)
    return pc.fill_null(found, -1).to_numpy().astype("int64", copy=False)


def _columns(frame: pd.DataFrame, by: str | Sequence[str], name: str) -> list[str]:
    keys = [by] if isinstance(by, str) else list(by)
    unknown = [key for key in keys if key not in frame.columns]
    if not keys or unknown:
        raise ParameterError(name, by, f"column names of the jobs frame: {list(frame.columns)}")
    return keys


def _number(value: Any) -> float | None:
    return None if value is None or pd.isna(value) else float(value)
