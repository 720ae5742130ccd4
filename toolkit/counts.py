"""Counts: the one reduction every measure reads, defined once in SQL and run by the engine that
holds the data (`toolkit.engines`: DuckDB over frames or Parquet, Spark over Parquet).

`DELIVERY_JOBS` defines a delivery job, its outcome, its time to deliver and its recipient domain
(the words are `toolkit.metrics.DEFINITIONS`); `delivery_counts` reduces delivery jobs to counts
per time bucket and dimensions, small whatever the history's size;
`toolkit.metrics.delivery_jobs` returns the same relation's rows.

>>> counts = toolkit.delivery_counts(activity, freq="1h", by=["channel", "provider_id"])
>>> counts.groupby("provider_id")[["failed", "finished"]].sum()
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from toolkit.errors import ParameterError
from toolkit.schemas import CHANNELS

__all__ = [
    "COUNTS",
    "DEFAULT_BY",
    "DIMENSIONS",
    "DELIVERY_JOBS",
    "delivery_counts",
    "delivery_job_rows",
]

#: The dimensions a count may be grouped by (columns of `DELIVERY_JOBS`).
DIMENSIONS = ("channel", "provider_id", "workflow", "error_code", "domain", "final_status")
DEFAULT_BY = ("channel", "provider_id", "workflow", "error_code", "domain")

_FINISHED = ("sent", "delivered", "read", "completed", "warning")
_NOT_SENT = ("skipped", "canceled", "merged")


def _listed(values: Sequence[str]) -> str:
    return ", ".join(f"'{value}'" for value in values)


#: A delivery job's outcome from its final status (`toolkit.metrics.OUTCOMES`); an unknown or
#: missing status is in flight.
OUTCOME = (
    f"CASE WHEN final_status IN ({_listed(_FINISHED)}) THEN 'finished'"
    " WHEN final_status = 'failed' THEN 'failed'"
    f" WHEN final_status IN ({_listed(_NOT_SENT)}) THEN 'not_sent' ELSE 'in_flight' END"
)

#: The delivery jobs of the notifications created in ``[{low}, {high}]`` (epoch microseconds):
#: one row per job of a channel type (digest and delay steps are not deliveries), with what
#: every measure reads. Written in the SQL that DuckDB and Spark share.
DELIVERY_JOBS = f"""
WITH selected AS (
  SELECT notification_id, created_at, subscriber_id, workflow_identifier, subscriber_email
  FROM notifications
  WHERE unix_micros(created_at) BETWEEN {{low}} AND {{high}}
), steps AS (
  SELECT job_id,
         min(CASE WHEN CAST(status AS STRING) = 'Success' THEN created_at END) AS first_success_at,
         sum(CASE WHEN CAST(status AS STRING) = 'Failed' THEN 1 ELSE 0 END) AS failed_attempts
  FROM execution_details
  WHERE notification_id IN (SELECT notification_id FROM selected)
  GROUP BY job_id
), jobs_of_window AS (
  SELECT j.job_id, j.notification_id, n.subscriber_id, n.workflow_identifier AS workflow,
         CAST(j.type AS STRING) AS channel, j.provider_id, n.created_at AS triggered_at,
         j.first_execution_at AS started_at, j.last_execution_at AS ended_at,
         CAST(j.final_status AS STRING) AS final_status, j.error_code, j.error_text,
         CASE WHEN CAST(j.type AS STRING) = 'email' THEN NULLIF(regexp_extract(
           lower(trim(n.subscriber_email)), '@([^@ ]+)$', 1), '') END AS domain,
         (unix_micros(s.first_success_at) - unix_micros(n.created_at)) / 1e6 AS time_to_deliver_s,
         CAST(j.duration_s AS DOUBLE) AS job_duration_s,
         CAST(coalesce(s.failed_attempts, 0) AS BIGINT) AS failed_attempts
  FROM jobs j
  JOIN selected n ON j.notification_id = n.notification_id
  LEFT JOIN steps s ON s.job_id = j.job_id
  WHERE CAST(j.type AS STRING) IN ({_listed(CHANNELS)})
)
SELECT *, {OUTCOME} AS outcome FROM jobs_of_window
"""

#: The counts of `delivery_counts`, each a number of delivery jobs (see `delivery_counts`).
COUNTS = {
    "jobs": "count(*)",
    **{
        outcome: f"sum(CASE WHEN outcome = '{outcome}' THEN 1 ELSE 0 END)"
        for outcome in ("finished", "failed", "in_flight", "not_sent")
    },
    "met_failure": "sum(CASE WHEN failed_attempts > 0 THEN 1 ELSE 0 END)",
    "delivered": "sum(CASE WHEN time_to_deliver_s IS NOT NULL THEN 1 ELSE 0 END)",
}


def delivery_counts(
    source: Any,
    *,
    after: str | datetime | None = None,
    before: str | datetime | None = None,
    freq: str = "1h",
    by: str | Sequence[str] | None = None,
) -> pd.DataFrame:
    """Delivery jobs counted per time bucket and combination of dimensions.

    Parameters
    ----------
    source : Activity or Store
        Frames in memory (counted by DuckDB over them, without copying), or a store
        (`toolkit.open_store`, on DuckDB or on Spark: ``open_store(path, engine="spark")``).
    after, before : str or datetime, optional
        The window of notifications counted (by their creation); default all of ``source``.
        Relative times (``"24h"``) count back from the end of ``source``'s window.
    freq : str
        Bucket width (``"15min"``, ``"1h"``, ``"1D"``), from the Unix epoch.
    by : str or list of str, optional
        Dimensions, from `DIMENSIONS` (default `DEFAULT_BY`; ``[]`` for totals per bucket).

    Returns
    -------
    DataFrame
        One row per bucket and combination that has delivery jobs, sorted: ``bucket`` (UTC, the
        notifications' creation floored to ``freq``), the ``by`` columns (``string``; missing
        values form their own group), and the ``int64`` counts ``jobs`` (all delivery jobs),
        ``finished``, ``failed``, ``in_flight``, ``not_sent`` (their outcomes, which sum to
        ``jobs``), ``met_failure`` (jobs with at least one Failed attempt, retried or not) and
        ``delivered`` (jobs with a Success). The failure rate of any group of rows is
        ``failed / (finished + failed)``; counts add up over rows, distinct subscribers or
        notifications do not (ask the engine). ``attrs``: ``freq`` (a Timedelta), ``after``,
        ``before`` (ISO text) and ``engine``.
    """
    from toolkit.metrics import bucket_width

    step = bucket_width(freq)
    dimensions = _dimensions(by)
    micros = step // pd.Timedelta(microseconds=1)
    keys = ", ".join(dimensions)
    sql = (
        f"SELECT CAST(floor(unix_micros(triggered_at) / {micros}) AS BIGINT) * {micros} AS bucket"
        f"{', ' + keys if keys else ''}, "
        + ", ".join(f"CAST({expr} AS BIGINT) AS {name}" for name, expr in COUNTS.items())
        + " FROM delivery_jobs GROUP BY "
        + ", ".join(str(i) for i in range(1, len(dimensions) + 2))
    )
    with _window_of(source, after, before) as (rel, start, end):
        table = rel.query(f"WITH delivery_jobs AS ({_delivery_jobs(start, end)}) {sql}")
    frame = _typed(table, dimensions)
    frame = frame.sort_values(["bucket", *dimensions], ignore_index=True, na_position="last")
    frame.attrs = {
        "freq": step,
        "after": _iso(start),
        "before": _iso(end),
        "engine": rel.engine,
    }
    return frame


def delivery_job_rows(source: Any, *, after=None, before=None) -> pa.Table:
    """The rows of `DELIVERY_JOBS` of ``source``'s window, ordered by trigger then job id."""
    with _window_of(source, after, before) as (rel, start, end):
        return rel.query(
            f"SELECT * FROM ({_delivery_jobs(start, end)}) ORDER BY triggered_at, job_id"
        )


# --------------------------------------------------------------------------------------------


def _delivery_jobs(start: pd.Timestamp | None, end: pd.Timestamp | None) -> str:
    low = -(2**62) if start is None else start.value // 1000
    high = 2**62 if end is None else end.value // 1000
    return DELIVERY_JOBS.format(low=low, high=high)


def _dimensions(by: str | Sequence[str] | None) -> list[str]:
    names = list(DEFAULT_BY) if by is None else [by] if isinstance(by, str) else list(by)
    unknown = [name for name in names if name not in DIMENSIONS]
    if unknown or len(set(names)) != len(names):
        raise ParameterError("by", by, f"distinct dimensions from {list(DIMENSIONS)}")
    return names


def _typed(table: pa.Table, dimensions: list[str]) -> pd.DataFrame:
    frame = table.to_pandas()
    if "bucket" in frame:
        frame["bucket"] = pd.to_datetime(
            frame["bucket"].to_numpy("int64", na_value=0), unit="us", utc=True
        ).as_unit("ns")
    for name in dimensions:
        frame[name] = frame[name].astype("string")
    for name in COUNTS:
        frame[name] = frame[name].to_numpy("int64", na_value=0) if len(frame) else np.array([], "int64")  # fmt: skip
    return frame[["bucket", *dimensions, *COUNTS]]


def _iso(value: pd.Timestamp | None) -> str | None:
    return None if value is None else value.isoformat()


class _window_of:
    """A context: the relations of ``source`` and the window ``(start, end)`` asked of it."""

    def __init__(self, source: Any, after: Any, before: Any):
        self.source, self.after, self.before = source, after, before

    def __enter__(self):
        from toolkit import engines

        opened = getattr(self.source, "_relations", None)
        if opened is not None:  # a Store: its engine, its files, its window
            start, end = self.source._bounds(self.after, self.before)
            self._context = opened(start, end)
        else:
            start, end = _activity_window(self.source, self.after, self.before)
            self._context = engines.relations(self.source)
        rel = self._context.__enter__()
        return rel, start, end

    def __exit__(self, *exc):
        return self._context.__exit__(*exc)


def _activity_window(activity: Any, after: Any, before: Any):
    from toolkit.metrics import check_activity
    from toolkit.timeutil import resolve_window

    check_activity(activity)
    if after is None and before is None:
        return None, None
    created = activity.notifications["created_at"]
    now = activity.attrs.get("before") or (created.max() if len(created) else pd.Timestamp.now("UTC"))  # fmt: skip
    start, end = resolve_window(after, before, now=pd.Timestamp(now).to_pydatetime())
    return (None if start is None else pd.Timestamp(start)), pd.Timestamp(end)
