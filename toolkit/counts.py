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
    "FACTS",
    "JOB_FACTS",
    "delivery_counts",
    "delivery_job_rows",
    "detail_counts",
    "notification_count",
    "summary",
    "window_rows",
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

#: A job's delivery facts, the columns a store keeps on its jobs (`toolkit.store.layout.FACTS`):
#: when its notification was triggered, the recipient's email domain, its first ``Success``
#: execution detail and how many of its attempts failed.
FACTS = ("triggered_at", "domain", "delivered_at", "failed_attempts")

#: The jobs of the notifications created in ``[{low}, {high}]`` (epoch microseconds) with their
#: `FACTS`, from the three tables (a job's subscriber and workflow are its notification's).
JOB_FACTS = """
WITH selected AS (
  SELECT notification_id, created_at, subscriber_id, workflow_identifier, subscriber_email
  FROM notifications
  WHERE unix_micros(created_at) BETWEEN {low} AND {high}
), steps AS (
  SELECT job_id,
         min(CASE WHEN CAST(status AS STRING) = 'Success' THEN created_at END) AS first_success_at,
         sum(CASE WHEN CAST(status AS STRING) = 'Failed' THEN 1 ELSE 0 END) AS failed_attempts
  FROM execution_details
  WHERE notification_id IN (SELECT notification_id FROM selected)
  GROUP BY job_id
)
SELECT j.job_id, j.notification_id, n.subscriber_id, n.workflow_identifier AS workflow, j.type,
       j.provider_id, j.first_execution_at, j.last_execution_at, j.final_status, j.error_code,
       j.error_text, j.duration_s, n.created_at AS triggered_at,
       CASE WHEN CAST(j.type AS STRING) = 'email' THEN NULLIF(regexp_extract(
         lower(trim(n.subscriber_email)), '@([^@ ]+)$', 1), '') END AS domain,
       s.first_success_at AS delivered_at,
       CAST(coalesce(s.failed_attempts, 0) AS BIGINT) AS failed_attempts
FROM jobs j
JOIN selected n ON j.notification_id = n.notification_id
LEFT JOIN steps s ON s.job_id = j.job_id
"""

#: `JOB_FACTS` of a store whose jobs keep their facts: one table read, no join.
STORED_FACTS = """
SELECT job_id, notification_id, subscriber_id, workflow, type, provider_id, first_execution_at,
       last_execution_at, final_status, error_code, error_text, duration_s, triggered_at, domain,
       delivered_at, failed_attempts
FROM jobs
WHERE unix_micros(triggered_at) BETWEEN {low} AND {high}
"""

#: The delivery jobs of a window from its jobs' facts (``{facts}``: `JOB_FACTS` or
#: `STORED_FACTS`): one row per job of a channel type (digest and delay steps are not
#: deliveries), with what every measure reads. Written in the SQL that DuckDB and Spark share.
DELIVERY_JOBS = f"""
WITH facts AS ({{facts}})
SELECT job_id, notification_id, subscriber_id, workflow, CAST(type AS STRING) AS channel,
       provider_id, triggered_at, first_execution_at AS started_at, last_execution_at AS ended_at,
       CAST(final_status AS STRING) AS final_status, error_code, error_text, domain,
       (unix_micros(delivered_at) - unix_micros(triggered_at)) / 1e6 AS time_to_deliver_s,
       CAST(duration_s AS DOUBLE) AS job_duration_s, failed_attempts,
       {OUTCOME.replace("final_status", "CAST(final_status AS STRING)")} AS outcome
FROM facts
WHERE CAST(type AS STRING) IN ({_listed(CHANNELS)})
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
    source : Activity, Store or DataFrame
        Frames in memory (counted by DuckDB over them, without copying), a store
        (`toolkit.open_store`, on DuckDB or on Spark: ``open_store(path, engine="spark")``), or
        delivery jobs already computed (`toolkit.metrics.delivery_jobs`).
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
    if isinstance(source, pd.DataFrame):  # delivery jobs already computed: counted the same way
        from toolkit import engines

        start, end = _jobs_window(source, after, before)
        within = f" WHERE unix_micros(triggered_at) BETWEEN {_micros(start, -(2**62))} AND {_micros(end, 2**62)}"  # fmt: skip
        with engines.relations(None, frames={"jobs_frame": source}) as rel:
            table = rel.query(f"WITH delivery_jobs AS (SELECT * FROM jobs_frame{within}) {sql}")
    else:
        with _window_of(source, after, before) as (rel, start, end):
            table = rel.query(f"WITH delivery_jobs AS ({_delivery_jobs(start, end, rel)}) {sql}")
    frame = _typed(table, dimensions)
    frame = frame.sort_values(["bucket", *dimensions], ignore_index=True, na_position="last")
    frame.attrs = {
        "freq": step,
        "after": _iso(start),
        "before": _iso(end),
        "engine": rel.engine,
    }
    return frame


def summary(
    data: Any,
    by: str | Sequence[str] = (),
    *,
    after: Any = None,
    before: Any = None,
    measure: str = "time_to_deliver_s",
    quantiles: Sequence[float] = (0.5, 0.95),
    confidence: float = 0.95,
) -> pd.DataFrame:
    """The measures of delivery jobs per group, computed by the engine: the one definition of the
    failure rate, its interval, the timing percentiles and the subscribers reached.

    Parameters
    ----------
    data : Activity, Store or DataFrame
        A source (its `DELIVERY_JOBS` in the window), or delivery jobs already computed
        (`toolkit.metrics.delivery_jobs`, grouped by any of their columns).
    by : str or list of str
        The grouping columns (``()``: one row for all).
    measure : str
        The timing of the percentiles: ``"time_to_deliver_s"`` or ``"job_duration_s"``.
    quantiles : sequence of float
        Between 0 and 1; columns ``p50``, ``p95``, ... (linear interpolation between jobs).

    Returns
    -------
    DataFrame
        The ``by`` columns, ``delivery_jobs`` (all), ``jobs`` (finished plus failed),
        ``failed``, ``in_flight``, ``not_sent``, ``failure_rate`` (NaN without jobs),
        ``ci_low``, ``ci_high`` (the Wilson interval), the percentiles, ``n`` (jobs timed) and
        ``subscribers_reached`` (distinct subscribers with a finished job); sorted by ``by``.
    """
    from toolkit.metrics import wilson_interval

    keys = [by] if isinstance(by, str) else list(by)
    if measure not in ("time_to_deliver_s", "job_duration_s"):
        raise ParameterError("measure", measure, "'time_to_deliver_s' or 'job_duration_s'")
    if not all(isinstance(q, float | int) and 0 <= q <= 1 for q in quantiles):
        raise ParameterError("quantiles", quantiles, "numbers between 0 and 1")
    present = set(data.columns) if isinstance(data, pd.DataFrame) else None  # None: all
    timed = present is None or measure in present
    percentiles = {percentile_name(q): q for q in quantiles} if timed else {}
    columns = [
        *keys,
        "CAST(count(*) AS BIGINT) AS delivery_jobs",
        *(f"CAST({COUNTS[o]} AS BIGINT) AS {o}" for o in ("finished", "failed", "in_flight", "not_sent")),  # fmt: skip
        *(f"CAST(percentile_cont({q}) WITHIN GROUP (ORDER BY {measure}) AS DOUBLE) AS {name}" for name, q in percentiles.items()),  # fmt: skip
        *([f"CAST(count({measure}) AS BIGINT) AS n"] if timed else []),
        *(["CAST(count(DISTINCT CASE WHEN outcome = 'finished' THEN subscriber_id END) AS BIGINT) AS subscribers_reached"]
          if present is None or "subscriber_id" in present else []),
    ]  # fmt: skip
    grouped = f" GROUP BY {', '.join(keys)}" if keys else ""
    sql = f"SELECT {', '.join(columns)} FROM delivery_jobs{grouped}"
    if isinstance(data, pd.DataFrame):
        from toolkit import engines

        missing = [key for key in keys if key not in data.columns]
        if missing or not keys and by not in ((), []):
            raise ParameterError("by", by, f"column names of the jobs frame: {list(data.columns)}")
        with engines.relations(None, frames={"delivery_jobs": data}) as rel:
            table = rel.query(sql)
    else:
        unknown = [key for key in keys if key not in DIMENSIONS]
        if unknown:
            raise ParameterError("by", by, f"dimensions from {list(DIMENSIONS)}")
        with _window_of(data, after, before) as (rel, start, end):
            table = rel.query(f"WITH delivery_jobs AS ({_delivery_jobs(start, end, rel)}) {sql}")
    frame = table.to_pandas()
    for key in keys:
        frame[key] = frame[key].astype(data[key].dtype if isinstance(data, pd.DataFrame) else "string")  # fmt: skip
    counted = ("delivery_jobs", "finished", "failed", "in_flight", "not_sent", "n", "subscribers_reached")  # fmt: skip
    for name in (name for name in counted if name in frame):
        frame[name] = frame[name].to_numpy("int64", na_value=0) if len(frame) else frame[name].astype("int64")  # fmt: skip
    frame["jobs"] = frame.pop("finished") + frame["failed"]
    total = frame["jobs"].to_numpy("float64")
    with np.errstate(invalid="ignore", divide="ignore"):
        frame["failure_rate"] = frame["failed"].to_numpy("float64") / np.where(total > 0, total, np.nan)  # fmt: skip
    frame["ci_low"], frame["ci_high"] = wilson_interval(frame["failed"], total, confidence)
    for name in percentiles:
        frame[name] = frame[name].astype("float64")
    order = ["delivery_jobs", "jobs", "failed", "in_flight", "not_sent", "failure_rate", "ci_low", "ci_high", *percentiles, "n", "subscribers_reached"]  # fmt: skip
    frame = frame[[*keys, *(name for name in order if name in frame)]]
    if keys:
        frame = frame.sort_values(keys, ignore_index=True, na_position="last")
    return frame


def percentile_name(q: float) -> str:
    """The column of the ``q`` quantile in `summary`: ``p50``, ``p95``, ..."""
    return f"p{round(q * 100):g}"


def detail_counts(source: Any, *, after=None, before=None, freq: str = "1h") -> pd.DataFrame:
    """Execution details counted per time bucket, channel, provider and status: what the status
    charts draw (`toolkit.metrics.detail_counts`, `toolkit.metrics.COUNT_COLUMNS`), counted by
    the engine. ``source``: an Activity (or anything with ``execution_details``) or a Store; with
    a window, the details of the notifications created in it."""
    from toolkit.metrics import COUNT_COLUMNS, bucket_width

    step = bucket_width(freq)
    micros = step // pd.Timedelta(microseconds=1)
    with _window_of(source, after, before) as (rel, start, end):
        chosen = "" if start is None and end is None else (
            f"WHERE {rel.in_window(_micros(start, -(2**62)), _micros(end, 2**62))}"
        )  # fmt: skip
        table = rel.query(
            f"SELECT CAST(floor(unix_micros(created_at) / {micros}) AS BIGINT) * {micros}"
            " AS created_at, CAST(channel AS STRING) AS channel, provider_id,"
            " CAST(status AS STRING) AS status, CAST(count(*) AS BIGINT) AS count"
            f" FROM execution_details {chosen} GROUP BY 1, 2, 3, 4"
        )
    frame = table.to_pandas()
    frame["created_at"] = _instants(frame["created_at"])
    frame = frame.astype(COUNT_COLUMNS)[list(COUNT_COLUMNS)]
    frame = frame.sort_values(list(COUNT_COLUMNS)[:4], ignore_index=True, na_position="last")
    frame.attrs["freq"] = step
    return frame


def delivery_job_rows(source: Any, *, after=None, before=None) -> pa.Table:
    """The rows of `DELIVERY_JOBS` of ``source``'s window, ordered by start (the first execution
    detail, else the trigger), then job id: the order the incident finder scans them in."""
    with _window_of(source, after, before) as (rel, start, end):
        return rel.query(
            f"SELECT * FROM ({_delivery_jobs(start, end, rel)})"
            " ORDER BY coalesce(started_at, triggered_at), job_id"
        )


def notification_count(source: Any, *, after=None, before=None) -> int:
    """How many notifications were created in the window."""
    with _window_of(source, after, before) as (rel, start, end):
        table = rel.query(
            "SELECT CAST(count(*) AS BIGINT) AS n FROM notifications WHERE unix_micros(created_at)"
            f" BETWEEN {_micros(start, -(2**62))} AND {_micros(end, 2**62)}"
        )
    return int(table.column(0)[0].as_py())


def window_rows(
    source: Any,
    table: str,
    columns: Sequence[str],
    *,
    after=None,
    before=None,
    where: str | None = None,
) -> pa.Table:
    """The ``columns`` of ``table``'s rows (``where`` they match) belonging to the notifications
    created in the window, newest notification first: rows fetched to be shown."""
    with _window_of(source, after, before) as (rel, start, end):
        window = f"unix_micros(created_at) BETWEEN {_micros(start, -(2**62))} AND {_micros(end, 2**62)}"  # fmt: skip
        chosen = window if table == "notifications" else (
            rel.in_window(_micros(start, -(2**62)), _micros(end, 2**62))
        )  # fmt: skip
        return rel.query(
            f"SELECT {', '.join(columns)} FROM {table} WHERE {chosen}"
            f"{' AND ' + where if where else ''} ORDER BY created_at DESC, notification_id"
        )


# --------------------------------------------------------------------------------------------


def _delivery_jobs(start: pd.Timestamp | None, end: pd.Timestamp | None, rel: Any = None) -> str:
    """`DELIVERY_JOBS` of the window, from the facts ``rel``'s jobs keep if they do."""
    facts = STORED_FACTS if getattr(rel, "facts_stored", False) else JOB_FACTS
    window = {"low": _micros(start, -(2**62)), "high": _micros(end, 2**62)}
    return DELIVERY_JOBS.format(facts=facts.format(**window))


def _micros(at: pd.Timestamp | None, default: int) -> int:
    return default if at is None else pd.Timestamp(at).value // 1000


def _instants(micros: pd.Series) -> pd.Series:
    return pd.Series(pd.to_datetime(micros.to_numpy("int64", na_value=0), unit="us", utc=True).as_unit("ns"), index=micros.index)  # fmt: skip


def _dimensions(by: str | Sequence[str] | None) -> list[str]:
    names = list(DEFAULT_BY) if by is None else [by] if isinstance(by, str) else list(by)
    unknown = [name for name in names if name not in DIMENSIONS]
    if unknown or len(set(names)) != len(names):
        raise ParameterError("by", by, f"distinct dimensions from {list(DIMENSIONS)}")
    return names


def _typed(table: pa.Table, dimensions: list[str]) -> pd.DataFrame:
    frame = table.to_pandas()
    frame["bucket"] = _instants(frame["bucket"])
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


def _jobs_window(jobs: pd.DataFrame, after: Any, before: Any):
    from toolkit.metrics import _columns
    from toolkit.timeutil import resolve_window

    _columns(jobs, ["triggered_at", "outcome", "failed_attempts", "time_to_deliver_s"], "source")
    if after is None and before is None:
        return None, None
    latest = jobs["triggered_at"].max() if len(jobs) else pd.Timestamp(0, tz="UTC")
    start, end = resolve_window(after, before, now=pd.Timestamp(latest).to_pydatetime())
    return (None if start is None else pd.Timestamp(start)), pd.Timestamp(end)


def _activity_window(activity: Any, after: Any, before: Any):
    from toolkit.metrics import check_activity
    from toolkit.timeutil import resolve_window

    if not hasattr(activity, "notifications") and hasattr(activity, "execution_details"):
        return None, None  # execution details alone (`toolkit.metrics.detail_counts`)
    check_activity(activity)
    if after is None and before is None:
        return None, None
    created = activity.notifications["created_at"]
    now = activity.attrs.get("before") or (created.max() if len(created) else pd.Timestamp.now("UTC"))  # fmt: skip
    start, end = resolve_window(after, before, now=pd.Timestamp(now).to_pydatetime())
    return (None if start is None else pd.Timestamp(start)), pd.Timestamp(end)


def with_facts(notifications: pa.Table, jobs: pa.Table, details: pa.Table) -> pa.Table:
    """``jobs`` with their `FACTS` (computed by `JOB_FACTS` over the three tables, in DuckDB)
    appended, in their order: what a store keeps (`toolkit.store.layout.write_day`)."""
    from toolkit import engines
    from toolkit.store.layout import FACT_SCHEMA

    jobs = jobs.drop_columns([name for name in FACTS if name in jobs.column_names])
    numbered = jobs.append_column("_row", pa.array(np.arange(jobs.num_rows, dtype="int64")))
    frames = {"notifications": notifications, "jobs": numbered, "execution_details": details}
    with engines.relations(None, frames=frames) as rel:
        facts = rel.query(
            f"SELECT {', '.join('f.' + name for name in FACTS)} FROM jobs r"
            f" LEFT JOIN ({JOB_FACTS.format(low=-(2**62), high=2**62)}) f ON f.job_id = r.job_id"
            " ORDER BY r._row"
        )
    if facts.num_rows != jobs.num_rows:
        raise ValueError("a job id is repeated in one day's jobs")
    for field in FACT_SCHEMA:
        jobs = jobs.append_column(field, facts[field.name].cast(field.type))
    return jobs
