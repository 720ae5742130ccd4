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

import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from toolkit import _checks as arg
from toolkit.errors import ParameterError
from toolkit.percentiles import bin_of, percentiles
from toolkit.schemas import CHANNELS

__all__ = [
    "COUNTS",
    "FAILURE_KEYS",
    "DEFAULT_BY",
    "DIMENSIONS",
    "DELIVERY_JOBS",
    "FACTS",
    "JOB_FACTS",
    "delivery_counts",
    "occasion_counts",
    "recipient_counts",
    "recipient_peaks",
    "around",
    "delivery_job_rows",
    "detail_counts",
    "failures",
    "SCAN_COUNTS",
    "SCANNED_JOBS",
    "failure_payloads",
    "group_counts",
    "scan_counts",
    "scan_window",
    "scanned_job_rows",
    "slow_thresholds",
    "sent_counts",
    "notification_count",
    "notification_statuses",
    "summaries",
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
#: `FACTS`, from the three tables (a job's subscriber and workflow are its notification's; an
#: email job's domain is its recipient's, read once per distinct address).
JOB_FACTS = """
WITH selected AS (
  SELECT notification_id, created_at, subscriber_id, workflow_identifier, subscriber_email
  FROM notifications
  WHERE unix_micros(created_at) BETWEEN {low} AND {high}
), domains AS (
  SELECT subscriber_email,
         NULLIF(regexp_extract(lower(trim(subscriber_email)), '@([^@ ]+)$', 1), '') AS domain
  FROM (SELECT DISTINCT subscriber_email FROM selected) addresses
), steps AS (
  SELECT job_id,
         min(CASE WHEN CAST(status AS STRING) = 'Success' THEN created_at END) AS first_success_at,
         sum(CASE WHEN CAST(status AS STRING) = 'Failed' THEN 1 ELSE 0 END) AS failed_attempts
  FROM execution_details
  WHERE notification_id IN (SELECT notification_id FROM selected)
    AND CAST(status AS STRING) IN ('Success', 'Failed')
  GROUP BY job_id
)
SELECT j.job_id, j.notification_id, n.subscriber_id, n.workflow_identifier AS workflow, j.type,
       j.provider_id, j.first_execution_at, j.last_execution_at, j.final_status, j.error_code,
       j.error_text, j.duration_s, n.created_at AS triggered_at,
       CASE WHEN CAST(j.type AS STRING) = 'email' THEN d.domain END AS domain,
       s.first_success_at AS delivered_at,
       CAST(coalesce(s.failed_attempts, 0) AS BIGINT) AS failed_attempts
FROM jobs j
JOIN selected n ON j.notification_id = n.notification_id
LEFT JOIN steps s ON s.job_id = j.job_id
LEFT JOIN domains d ON d.subscriber_email = n.subscriber_email
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
       (unix_micros(delivered_at) - unix_micros(first_execution_at)) / 1e6 AS time_to_send_s,
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

#: Delivery jobs as the incident finder scans them (`toolkit.incidents`), from
#: ``delivery_jobs`` and ``slow_above`` (thresholds of ``time_to_send_s``: a workflow's own
#: through its (channel, provider_id), else the pair's, `WORKFLOW_SENDS`): ``scan_at`` (when it
#: starts: its first execution detail, else its trigger), its threshold (``slow_above``) and its
#: flags: ``met_failure`` (a Failed attempt), ``tried`` (finished, failed or met a
#: failure), ``retried`` (two Failed attempts, or one and still in flight), ``attempted``
#: (finished, failed or in flight: not skipped nor canceled) and ``slow`` (sent above its
#: threshold).
SCANNED_JOBS = """
SELECT j.*, coalesce(j.started_at, j.triggered_at) AS scan_at,
       j.failed_attempts > 0 AS met_failure,
       (j.outcome IN ('finished', 'failed') OR j.failed_attempts > 0) AS tried,
       (j.failed_attempts >= 2 OR (j.failed_attempts > 0 AND j.outcome = 'in_flight')) AS retried,
       j.outcome IN ('finished', 'failed', 'in_flight') AS attempted,
       coalesce(w.slow_above, t.slow_above) AS slow_above,
       coalesce(j.time_to_send_s > coalesce(w.slow_above, t.slow_above), false) AS slow
FROM delivery_jobs j
LEFT JOIN slow_above t ON j.channel = t.channel AND j.provider_id = t.provider_id
     AND t.workflow IS NULL
LEFT JOIN slow_above w ON j.channel = w.channel AND j.provider_id = w.provider_id
     AND j.workflow = w.workflow
"""

#: The fewest timed sends of a workflow through a (channel, provider_id), in the jobs its slow
#: threshold is read from, for a threshold of its own: a batch whose sends queue by design (a
#: monthly statement's minute) is slow against its own sends, not against a card alert's
#: second, and a slowdown of the provider slows each workflow past its own. A workflow with
#: fewer takes the pair's.
WORKFLOW_SENDS = 100
#: The columns of a table of slow thresholds (``workflow`` missing: the pair's).
THRESHOLDS = ["channel", "provider_id", "workflow", "slow_above"]
_PAIR, _OWN = ["channel", "provider_id"], ["channel", "provider_id", "workflow"]

#: What the incident finder's scans count per bucket and group (`scan_counts`), over
#: `SCANNED_JOBS`: the jobs tried and those of them that met a failure, the jobs sent
#: (``time_to_send_s`` known); `scan_counts` adds ``slow``, those sent above their pair's
#: threshold (`SCANNED_JOBS`' ``slow``, counted from the bins of `toolkit.percentiles`).
SCAN_COUNTS = {
    "tried": "sum(CASE WHEN tried THEN 1 ELSE 0 END)",
    "met_failure": "sum(CASE WHEN tried AND met_failure THEN 1 ELSE 0 END)",
    "sent": "count(time_to_send_s)",
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
    keys = ", ".join(dimensions)
    sql = (
        f"SELECT {_bucketed(step)} AS bucket{', ' + keys if keys else ''}, "
        + ", ".join(f"CAST({expr} AS BIGINT) AS {name}" for name, expr in COUNTS.items())
        + " FROM delivery_jobs GROUP BY "
        + ", ".join(str(i) for i in range(1, len(dimensions) + 2))
    )
    table, start, end, engine = _over_jobs(source, after, before, sql)
    return _counts_frame(table, dimensions, step, start, end, engine)


def _over_jobs(source: Any, after: Any, before: Any, sql: str) -> tuple:
    """``sql`` over the ``delivery_jobs`` of ``source``'s window (frames, a store, or delivery
    jobs already computed): its rows, the window ``(start, end)`` and the engine."""
    if isinstance(source, pd.DataFrame):  # delivery jobs already computed: counted the same way
        from toolkit import engines

        start, end = _jobs_window(source, after, before)
        within = f" WHERE unix_micros(triggered_at) BETWEEN {_micros(start, -(2**62))} AND {_micros(end, 2**62)}"  # fmt: skip
        with engines.relations(None, frames={"jobs_frame": source}) as rel:
            table = rel.query(f"WITH delivery_jobs AS (SELECT * FROM jobs_frame{within}) {sql}")
    else:
        with _window_of(source, after, before) as (rel, start, end):
            table = rel.query(
                f"WITH delivery_jobs AS ({_delivery_jobs(start, end, rel, source)}) {sql}"
            )
    return table, start, end, rel.engine


#: A send occasion of a group: a minute in which it triggered at least one delivery job
#: (`occasion_counts`).
OCCASION = "floor(unix_micros(triggered_at) / 60000000)"


def occasion_counts(
    source: Any,
    *,
    after: Any = None,
    before: Any = None,
    by: Sequence[Sequence[str]],
    groups: Sequence[Sequence[dict[str, Any]]] | None = None,
) -> list[pd.DataFrame]:
    """Send occasions per hour and group: how many distinct minutes (`OCCASION`) of each hour
    ``bucket`` had at least one delivery job triggered in the group. A burst, a fan-out or a
    batch sent at once is one occasion whatever it sends, so occasions vary about as a Poisson
    count where people trigger the sends one by one (the incident finder tests a silence on
    them, `toolkit.incidents.volume`). ``source``, ``after`` and ``before`` as
    `delivery_counts`; ``by`` lists groupings (each a list of `DIMENSIONS`), counted in one
    query; ``groups``, for each grouping, the only groups to count (each a dict of its
    dimensions' values, None: missing). One frame per grouping, one row per bucket and group
    with jobs: ``bucket``, its dimensions (``string``), ``occasions`` (``int64``) and the first
    and last trigger in the bucket (``first_at``, ``last_at``); `delivery_counts`' ``attrs``.
    Occasions add up over buckets, not over groups. ``notifications`` (``int64``): the
    bucket's notifications of the group; ``repeats`` (``int64``): those beyond one per
    subscriber (a loop re-triggering a workflow for a few subscribers repeats; a fan-out to
    many, once each, does not)."""
    if isinstance(by, str) or not all(isinstance(one, list | tuple) for one in by):
        raise ParameterError("by", by, "a list of groupings, each a list of dimensions")
    if groups is not None and len(groups) != len(by):
        raise ParameterError("groups", f"{len(groups)} lists", f"one list per grouping of by ({len(by)})")  # fmt: skip
    if isinstance(source, pd.DataFrame):  # a jobs frame: the repeats need whom each job is for
        from toolkit.metrics import _columns

        _columns(source, ["notification_id", "subscriber_id"], "source")
    hour = pd.Timedelta("1h")
    sets = [_dimensions(list(one)) for one in by]
    names = list(dict.fromkeys(name for one in sets for name in one))
    selects = []
    for n, one in enumerate(sets):
        where = "true" if groups is None else " OR ".join(f"({_condition(keys)})" for keys in groups[n]) or "false"  # fmt: skip
        columns = "".join(f", {name}" if name in one else f", CAST(NULL AS STRING) AS {name}" for name in names)  # fmt: skip
        selects.append(
            f"SELECT {n} AS grouping_set, {_bucketed(hour)} AS bucket{columns},"
            f" CAST(count(DISTINCT {OCCASION}) AS BIGINT) AS occasions,"
            " CAST(count(DISTINCT notification_id) AS BIGINT) AS notifications,"
            " CAST(count(DISTINCT notification_id) - count(DISTINCT subscriber_id) AS BIGINT)"
            " AS repeats,"
            " min(unix_micros(triggered_at)) AS first_at, max(unix_micros(triggered_at)) AS last_at"
            f" FROM delivery_jobs WHERE {where} GROUP BY {', '.join(['2', *one])}"
        )
    table, start, end, engine = _over_jobs(source, after, before, " UNION ALL ".join(selects))
    out, grouping = [], table["grouping_set"].to_numpy(zero_copy_only=False)
    for n, one in enumerate(sets):
        part = table.filter(pa.array(grouping == n))
        frame = _counts_frame(part, one, hour, start, end, engine, ("occasions", "notifications", "repeats", "first_at", "last_at"))  # fmt: skip
        for name in ("first_at", "last_at"):
            frame[name] = _instants(frame[name])
        out.append(frame)
    return out


def recipient_peaks(source: Any, *, after: Any = None, before: Any = None,
                    by: Sequence[str] = ("workflow",)) -> pd.DataFrame:  # fmt: skip
    """The most notifications one subscriber got from each group in each hour: one row per
    bucket and group (``by``: `DIMENSIONS`) with sends, and ``most`` (``int64``). A loop
    re-triggering a workflow for a few subscribers sends one of them more in an hour than
    anyone usually gets (`toolkit.incidents.loops`). ``source``, ``after`` and ``before`` as
    `delivery_counts`."""
    dimensions = _dimensions(list(by))
    names = "".join(f", {name}" for name in dimensions)
    per_person = (
        f"SELECT {_bucketed(pd.Timedelta('1h'))} AS bucket{names},"
        " count(DISTINCT notification_id) AS notifications FROM delivery_jobs"
        f" GROUP BY {', '.join(['1', *dimensions, 'subscriber_id'])}"
    )
    sql = (f"SELECT bucket{names}, CAST(max(notifications) AS BIGINT) AS most"
           f" FROM ({per_person}) AS per_person GROUP BY {', '.join(['bucket', *dimensions])}")  # fmt: skip
    table, start, end, engine = _over_jobs(source, after, before, sql)
    return _counts_frame(table, dimensions, pd.Timedelta("1h"), start, end, engine, ("most",))


def recipient_counts(source: Any, *, after: Any = None, before: Any = None,
                     by: Sequence[str] = ("workflow",), groups: Sequence[dict[str, Any]] = (),
                     least: int = 2) -> pd.DataFrame:  # fmt: skip
    """The subscribers who got at least ``least`` notifications from one of ``groups`` (each a
    dict of ``by``'s values) in an hour: one row per bucket, group and subscriber with
    ``subscriber_id``, ``notifications``, ``jobs`` and their first and last trigger
    (``first_at``, ``last_at``). ``source``, ``after`` and ``before`` as `delivery_counts`."""
    dimensions = _dimensions(list(by))
    names = "".join(f", {name}" for name in dimensions)
    where = " OR ".join(f"({_condition(keys)})" for keys in groups) or "false"
    least = arg.count("least", least, 1)
    sql = (
        f"SELECT {_bucketed(pd.Timedelta('1h'))} AS bucket{names}, subscriber_id,"
        " CAST(count(DISTINCT notification_id) AS BIGINT) AS notifications,"
        " CAST(count(*) AS BIGINT) AS jobs,"
        " min(unix_micros(triggered_at)) AS first_at, max(unix_micros(triggered_at)) AS last_at"
        f" FROM delivery_jobs WHERE {where}"
        f" GROUP BY {', '.join(['1', *dimensions, 'subscriber_id'])}"
        f" HAVING count(DISTINCT notification_id) >= {least}"
    )
    table, start, end, engine = _over_jobs(source, after, before, sql)
    frame = _typed(table, [*dimensions, "subscriber_id"], ("notifications", "jobs", "first_at", "last_at"))  # fmt: skip
    for name in ("first_at", "last_at"):
        frame[name] = _instants(frame[name])
    return frame.sort_values(["bucket", *dimensions, "subscriber_id"], ignore_index=True)


def _bucketed(step: pd.Timedelta) -> str:
    """A delivery job's bucket of `delivery_counts`: its trigger floored to ``step``."""
    micros = step // pd.Timedelta(microseconds=1)
    return f"CAST(floor(unix_micros(triggered_at) / {micros}) AS BIGINT) * {micros}"


def _counts_frame(table, dimensions, step, start, end, engine, names=tuple(COUNTS)) -> pd.DataFrame:
    """The frame `delivery_counts` returns from the engine's rows."""
    frame = _typed(table, dimensions, names)
    frame = frame.sort_values(["bucket", *dimensions], ignore_index=True, na_position="last")
    frame.attrs = {"freq": step, "after": _iso(start), "before": _iso(end), "engine": engine}
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
        ``ci_low``, ``ci_high`` (the Wilson interval), the percentiles, ``n`` (jobs timed),
        ``subscribers_reached`` (distinct subscribers with a finished job) and
        ``in_flight_notifications`` (distinct notifications with a job in flight); sorted by
        ``by``.
    """
    options = {"measure": measure, "quantiles": quantiles, "confidence": confidence}
    return summaries(data, [by], after=after, before=before, **options)[0]


def summaries(
    data: Any,
    groupings: Sequence[str | Sequence[str]],
    *,
    after: Any = None,
    before: Any = None,
    measure: str = "time_to_deliver_s",
    quantiles: Sequence[float] = (0.5, 0.95),
    confidence: float = 0.95,
) -> list[pd.DataFrame]:
    """`summary` of ``data`` for each of ``groupings``, in one query (SQL grouping sets): one
    pass over the delivery jobs for the headline, its channels and the providers' table."""
    from toolkit.metrics import wilson_interval

    sets = [[by] if isinstance(by, str) else list(by) for by in groupings]
    keys = list(dict.fromkeys(key for grouping in sets for key in grouping))
    if measure not in ("time_to_deliver_s", "job_duration_s"):
        raise ParameterError("measure", measure, "'time_to_deliver_s' or 'job_duration_s'")
    if not all(isinstance(q, float | int) and 0 <= q <= 1 for q in quantiles):
        raise ParameterError("quantiles", quantiles, "numbers between 0 and 1")
    present = set(data.columns) if isinstance(data, pd.DataFrame) else None  # None: all
    if present is None:
        unknown = [key for key in keys if key not in DIMENSIONS]
        if unknown:
            raise ParameterError("by", groupings[0] if len(sets) == 1 else groupings, f"dimensions from {list(DIMENSIONS)}")  # fmt: skip
    elif [key for key in keys if key not in present] or any(not s and b not in ((), []) for s, b in zip(sets, groupings, strict=True)):  # fmt: skip
        raise ParameterError("by", groupings[0] if len(sets) == 1 else groupings, f"column names of the jobs frame: {list(data.columns)}")  # fmt: skip
    timed = present is None or measure in present
    percentiles_of = {percentile_name(q): q for q in quantiles} if timed else {}
    distinct = {  # distinct ids of the jobs with an outcome: counted by the engine, never summed
        name: f"CASE WHEN outcome = '{outcome}' THEN {column} END"
        for name, outcome, column in (("subscribers_reached", "finished", "subscriber_id"),
                                      ("in_flight_notifications", "in_flight", "notification_id"))
        if present is None or column in present
    }  # fmt: skip
    # two stages: the counts per finest group and distinct id (bounded by groups x subscribers
    # and notifications in flight), then summed per grouping set, where the ids are counted
    # distinct: one distinct table over those rows instead of one per set over every job. The
    # same pass counts the timings' histogram (`toolkit.percentiles`) as a second grouping set.
    counted = {
        "delivery_jobs": "count(*)",
        **{o: COUNTS[o] for o in ("finished", "failed", "in_flight", "not_sent")},
        **({"n": f"count({measure})"} if timed else {}),
    }
    ids = [f"_{name}" for name in distinct]
    binned = [f"CASE WHEN {measure} IS NOT NULL THEN {bin_of(measure)} END AS _bin"] if percentiles_of else []  # fmt: skip
    first = (
        f"SELECT {', '.join([*keys, *ids, *(['_bin', 'CAST(GROUPING(_bin) AS INT) AS _counts'] if binned else []), *(f'{expr} AS {name}' for name, expr in counted.items())])}"
        f" FROM (SELECT *, {', '.join([*(f'{expr} AS _{name}' for name, expr in distinct.items()), *binned]) or '1 AS _one'} FROM delivery_jobs) j"
        + (f" GROUP BY GROUPING SETS (({', '.join([*keys, *ids])}), ({', '.join([*keys, '_bin'])}))" if binned
           else f" GROUP BY {', '.join([*keys, *ids])}" if keys or ids else "")
    )  # fmt: skip
    columns = [
        *keys,
        *(f"CAST(GROUPING({key}) AS INT) AS _grouping_{key}" for key in keys if len(sets) > 1),
        *(f"CAST(sum({name}) AS BIGINT) AS {name}" for name in counted),
        *(f"CAST(count(DISTINCT _{name}) AS BIGINT) AS {name}" for name in distinct),
    ]  # fmt: skip
    if len(sets) > 1:
        grouped = " GROUP BY GROUPING SETS (" + ", ".join(f"({', '.join(s)})" for s in sets) + ")"
    else:
        grouped = f" GROUP BY {', '.join(keys)}" if keys else ""
    sql = f"WITH per_id AS ({first}) SELECT {', '.join(columns)}"
    if binned:  # the histogram's rows follow, told apart by ``_bin`` (NULL on the counts' rows)
        padded = [*keys, *(f"CAST(NULL AS {'INT' if name.startswith('CAST(GROUPING') else 'BIGINT'})" for name in columns[len(keys):])]  # fmt: skip
        sql += (
            f", CAST(NULL AS BIGINT) AS _bin, CAST(NULL AS BIGINT) AS c FROM per_id WHERE _counts = 1{grouped}"
            f" UNION ALL SELECT {', '.join(padded)}, _bin, delivery_jobs FROM per_id WHERE _counts = 0 AND _bin IS NOT NULL"
        )  # fmt: skip
    else:
        sql += f" FROM per_id{grouped}"
    table = _jobs_query(data, after, before, sql)
    if binned:
        hist = table.filter(pc.is_valid(table["_bin"]))
        table = table.filter(pc.is_null(table["_bin"])).drop_columns(["_bin", "c"])
        hist = hist.select([*keys, "_bin", "c"]).rename_columns([*keys, "bin", "c"]).to_pandas()
    timings = percentiles(lambda sql: _jobs_query(data, after, before, sql), keys, sets, measure, quantiles=percentiles_of, literal=_literal, hist=hist) if binned else None  # fmt: skip
    frame = table.to_pandas()
    for key in keys:
        frame[key] = frame[key].astype(data[key].dtype if isinstance(data, pd.DataFrame) else "string")  # fmt: skip
    for name in (name for name in (*counted, *distinct) if name in frame):
        frame[name] = frame[name].to_numpy("int64", na_value=0) if len(frame) else frame[name].astype("int64")  # fmt: skip
    frame["jobs"] = frame.pop("finished") + frame["failed"]
    total = frame["jobs"].to_numpy("float64")
    with np.errstate(invalid="ignore", divide="ignore"):
        frame["failure_rate"] = frame["failed"].to_numpy("float64") / np.where(total > 0, total, np.nan)  # fmt: skip
    frame["ci_low"], frame["ci_high"] = wilson_interval(frame["failed"], total, confidence)
    order = ["delivery_jobs", "jobs", "failed", "in_flight", "not_sent", "failure_rate", "ci_low", "ci_high", *percentiles_of, "n", *distinct]  # fmt: skip
    tables = []
    for number, grouping in enumerate(sets):
        part = frame
        if len(sets) > 1:
            chosen = np.ones(len(frame), dtype=bool)
            for key in keys:
                chosen &= frame[f"_grouping_{key}"].to_numpy() == (0 if key in grouping else 1)
            part = frame[chosen]
        if timings is not None:
            part = _with_timings(part, timings[number], grouping)
        part = part[[*grouping, *(name for name in order if name in part)]]
        if grouping:
            part = part.sort_values(grouping, na_position="last")
        tables.append(part.reset_index(drop=True))
    return tables


def _with_timings(part: pd.DataFrame, timings: pd.DataFrame, grouping: list[str]) -> pd.DataFrame:
    """``part`` (one grouping's rows of `summaries`) with the percentile columns of ``timings``
    (`toolkit.percentiles.percentiles`), NaN for groups without a timed job."""
    if not grouping:
        values = timings.iloc[0] if len(timings) else pd.Series(np.nan, index=timings.columns)
        return part.assign(**{name: float(values[name]) for name in timings.columns})

    def plain(values) -> tuple:
        return tuple(None if pd.isna(value) else value for value in values)

    width = len(grouping)
    keyed = {plain(row[:width]): row[width:] for row in timings.itertuples(index=False)}
    names = list(timings.columns[width:])
    own = [plain(row) for row in part[grouping].itertuples(index=False)]
    columns = {name: [float(keyed[key][i]) if key in keyed else np.nan for key in own] for i, name in enumerate(names)}  # fmt: skip
    return part.assign(**columns)


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


#: The groups of `failures`: a failure is a failed delivery job, by its last error.
FAILURE_KEYS = ("channel", "provider_id", "error_code", "error_text")


def failures(
    data: Any,
    *,
    after=None,
    before=None,
    examples: int = 3,
    notifications: pd.DataFrame | None = None,
    top: int | None = None,
) -> pd.DataFrame:
    """Failed delivery jobs per channel, provider and error, counted by the engine, most first.

    Parameters
    ----------
    data : Activity, Store or DataFrame
        A source (its window), or delivery jobs already computed (`toolkit.metrics.delivery_jobs`).
    examples : int
        Up to this many example transaction ids per group (0: none).
    notifications : DataFrame, optional
        With delivery jobs as ``data``: their notifications (``notification_id``,
        ``transaction_id``), for the examples (none without).
    top : int, optional
        Distinct counts and examples for the first ``top`` groups only (the others' are <NA>
        and empty lists): what a report shows; None: all.

    Returns
    -------
    DataFrame
        ``channel, provider_id, error_code, error_text`` (missing values form their own group),
        ``failed`` (jobs), ``notifications, subscribers`` (distinct; ``Int64`` with ``top``),
        ``first_seen, last_seen`` (the failed jobs' first and last execution details),
        ``transaction_ids`` (those of the group's first notifications, by their failed job's last
        execution detail); sorted by failed jobs (most first), first seen, error text.
    """
    arg.top(top, or_all=True)
    arg.count("examples", examples, 0)
    keys = ", ".join(FAILURE_KEYS)
    named = examples > 0 and (notifications is not None or not isinstance(data, pd.DataFrame))
    frames = {}
    if isinstance(data, pd.DataFrame) and named:
        ids = notifications[["notification_id", "transaction_id"]]
        frames = {"notifications": ids.drop_duplicates("notification_id")}
    sql = (
        f"SELECT {keys}, CAST(count(*) AS BIGINT) AS failed, min(started_at) AS first_seen,"
        f" max(ended_at) AS last_seen FROM delivery_jobs WHERE outcome = 'failed' GROUP BY {keys}"
    )
    frame = _jobs_query(data, after, before, sql, frames).to_pandas()
    for key in FAILURE_KEYS:
        frame[key] = frame[key].astype("string")
    frame["failed"] = frame["failed"].astype("int64")
    for name in ("first_seen", "last_seen"):
        frame[name] = pd.to_datetime(frame[name], utc=True).astype("datetime64[ns, UTC]")
    frame = frame.sort_values(
        ["failed", "first_seen", "error_text", *FAILURE_KEYS[:3]],
        ascending=[False, True, True, True, True, True], na_position="last", ignore_index=True,
    )  # fmt: skip
    shown = frame.head(len(frame) if top is None else top)
    distinct = _distinct_failed(data, after, before, shown, frames)
    for name in ("notifications", "subscribers"):
        frame[name] = pd.array([*distinct[name], *[pd.NA] * (len(frame) - len(shown))], dtype="Int64" if top is not None else "int64")  # fmt: skip
    found = _examples(data, after, before, shown if named else shown.iloc[:0], examples, frames)
    frame["transaction_ids"] = found + [[] for _ in range(len(frame) - len(found))]
    return frame[[*FAILURE_KEYS, "failed", "notifications", "subscribers", "first_seen", "last_seen", "transaction_ids"]]  # fmt: skip


def _distinct_failed(data, after, before, groups: pd.DataFrame, frames) -> dict[str, list[int]]:
    """The distinct notifications and subscribers of the failed jobs of each of ``groups``
    (rows of `failures`), in their order: each group joined by its position, so that the
    engine's distinct table holds a number and an id per failed notification, not the group's
    texts (half the memory)."""
    if not len(groups):
        return {"notifications": [], "subscribers": []}
    shown = " UNION ALL ".join(
        f"SELECT {number} AS g, "
        + ", ".join(
            f"{_literal(_plain(value))} AS {key}"
            for key, value in zip(FAILURE_KEYS, row, strict=True)
        )  # fmt: skip
        for number, row in enumerate(groups[list(FAILURE_KEYS)].itertuples(index=False))
    )
    matched = " AND ".join(f"CAST(j.{key} AS STRING) IS NOT DISTINCT FROM s.{key}" for key in FAILURE_KEYS)  # fmt: skip
    table = _jobs_query(data, after, before, (
        f"WITH shown AS ({shown}) SELECT s.g, CAST(count(DISTINCT j.notification_id) AS BIGINT)"
        " AS notifications, CAST(count(DISTINCT j.subscriber_id) AS BIGINT) AS subscribers"
        f" FROM delivery_jobs j JOIN shown s ON {matched} WHERE j.outcome = 'failed' GROUP BY s.g"
    ), frames).to_pandas().set_index("g").reindex(range(len(groups)), fill_value=0)  # fmt: skip
    return {name: table[name].astype("int64").tolist() for name in ("notifications", "subscribers")}


def _examples(data, after, before, groups: pd.DataFrame, examples: int, frames) -> list[list[str]]:
    """The example transaction ids of each of ``groups`` (rows of `failures`): those of the
    group's first ``examples`` notifications with one, in order of their failed jobs' last
    execution detail (each notification at its first job). Read by bounded queries: the first
    failed jobs of the groups still short of examples (``ORDER BY ... LIMIT``), more each round,
    so that no query keeps state per failed job."""
    order = "ended_at ASC NULLS LAST, job_id ASC"
    keys = [tuple(_plain(value) for value in row) for row in groups[list(FAILURE_KEYS)].itertuples(index=False)]  # fmt: skip
    found: list[list[str]] = [[] for _ in keys]
    pending, per = list(range(len(keys))), 2 * examples
    while pending:
        limit = per * len(pending)
        chosen = " OR ".join(f"({_condition(dict(zip(FAILURE_KEYS, keys[i], strict=True)))})" for i in pending)  # fmt: skip
        rows = _jobs_query(data, after, before, (
            f"WITH first AS (SELECT {', '.join(f'CAST({key} AS STRING) AS {key}' for key in FAILURE_KEYS)}, notification_id, ended_at, job_id"
            f" FROM delivery_jobs WHERE outcome = 'failed' AND ({chosen}) ORDER BY {order}"
            f" LIMIT {limit}) SELECT f.*, CAST(n.transaction_id AS STRING) AS transaction_id"
            " FROM first f LEFT JOIN notifications n ON n.notification_id = f.notification_id"
            f" ORDER BY {order.replace('ended_at', 'f.ended_at').replace('job_id', 'f.job_id')}"
        ), frames).to_pylist()  # fmt: skip
        seen: dict[tuple, list] = {keys[i]: [] for i in pending}  # a group's first jobs, in order
        for row in rows:
            seen[tuple(row[key] for key in FAILURE_KEYS)].append(row)
        still = []
        for i in pending:
            named, ids = set(), []
            for row in seen[keys[i]]:
                if row["notification_id"] not in named:
                    named.add(row["notification_id"])
                    if row["transaction_id"] is not None:
                        ids.append(row["transaction_id"])
            found[i] = ids[:examples]
            whole = len(rows) < limit or len(seen[keys[i]]) >= groups["failed"].iloc[i]
            if len(found[i]) < examples and not whole:
                still.append(i)
        pending, per = still, 4 * per
    return found


def _plain(value: Any) -> Any:
    return None if value is None or pd.isna(value) else value


def notification_statuses(source: Any, *, after=None, before=None) -> pd.DataFrame:
    """Notifications created in the window per ``status`` (lower-cased; missing: <NA>), with
    their number in ``notifications``: what the delivery funnel draws."""
    with _window_of(source, after, before) as (rel, start, end):
        table = rel.query(
            "SELECT lower(CAST(status AS STRING)) AS status, CAST(count(*) AS BIGINT) AS"
            f" notifications FROM notifications WHERE {_created(start, end)} GROUP BY 1"
        )
    frame = table.to_pandas().astype({"status": "string", "notifications": "int64"})
    return frame.sort_values("status", na_position="last", ignore_index=True)


def around(data: Any, shown: pd.DataFrame, *, after=None, before=None) -> pd.DataFrame:
    """Finished and failed delivery jobs per bucket around incidents (the report's findings'
    charts), all in one query.

    Parameters
    ----------
    data : Activity, Store or DataFrame
        A source (its window), or delivery jobs already computed.
    shown : DataFrame
        One row per incident: ``channel, provider_id, domain`` (missing: any), ``low, high``
        (the instants around it), ``step`` (the bucket width, a Timedelta) and ``timed`` (also
        the median time to deliver). A job is placed by its first execution detail, else its
        trigger.

    Returns
    -------
    DataFrame
        ``incident`` (the position in ``shown``), ``bucket``, ``finished``, ``failed`` and
        ``median`` (time to deliver, when ``timed``); ``attrs["latest"]``: when the last job of
        the window started (None without jobs).
    """
    at = "unix_micros(coalesce(j.started_at, j.triggered_at))"
    rows = " UNION ALL ".join(
        f"SELECT {number} AS incident, {_literal(row['channel'])} AS channel,"
        f" {_literal(row['provider_id'])} AS provider_id, {_literal(row['domain'])} AS domain,"
        f" {_micros(row['low'], 0)} AS low, {_micros(row['high'], 0)} AS high,"
        f" {pd.Timedelta(row['step']) // pd.Timedelta(microseconds=1)} AS step,"
        f" {'TRUE' if row['timed'] else 'FALSE'} AS timed"
        for number, row in enumerate(shown.to_dict("records"))
    )
    matched = " AND ".join(
        f"(s.{key} IS NULL OR CAST(j.{key} AS STRING) = s.{key})"
        for key in ("channel", "provider_id", "domain")
    )
    sql = (
        f"WITH shown AS ({rows}) SELECT s.incident,"
        f" CAST(floor({at} / s.step) AS BIGINT) * s.step AS bucket,"
        + ", ".join(
            f"CAST(sum(CASE WHEN j.outcome = '{o}' THEN 1 ELSE 0 END) AS BIGINT) AS {o}"
            for o in ("finished", "failed")
        )  # fmt: skip
        + ", CAST(percentile_cont(0.5) WITHIN GROUP (ORDER BY CASE WHEN s.timed THEN"
        f" j.time_to_deliver_s END) AS DOUBLE) AS median, max({at}) AS latest"
        f" FROM delivery_jobs j LEFT JOIN shown s ON {at} BETWEEN s.low AND s.high AND {matched}"
        " GROUP BY 1, 2"
    )
    frame = _jobs_query(data, after, before, sql).to_pandas() if len(shown) else pd.DataFrame(
        {"incident": [], "bucket": [], "finished": [], "failed": [], "median": [], "latest": []}
    )  # fmt: skip
    latest = frame["latest"].max() if len(frame) else None
    frame = frame[frame["incident"].notna()].astype({"incident": "int64", "finished": "int64", "failed": "int64", "median": "float64"})  # fmt: skip
    frame["bucket"] = _instants(frame["bucket"])
    frame = frame.drop(columns="latest").sort_values(["incident", "bucket"], ignore_index=True)
    frame.attrs["latest"] = None if latest is None or pd.isna(latest) else _instants(pd.Series([latest]))[0]  # fmt: skip
    return frame


def delivery_job_rows(source: Any, *, after=None, before=None) -> pa.Table:
    """The rows of `DELIVERY_JOBS` of ``source``'s window, ordered by start (the first execution
    detail, else the trigger), then job id: the order the incident finder scans them in."""
    with _window_of(source, after, before) as (rel, start, end):
        return rel.query(
            f"SELECT * FROM ({_delivery_jobs(start, end, rel, source)})"
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


# -- what the incident finder reads (`toolkit.incidents`) ------------------------------------

#: When a delivery job starts for the incident scans: its first execution detail, else its
#: trigger.
AT = "coalesce(started_at, triggered_at)"


def slow_thresholds(
    source: Any, *, after=None, before=None, quantile: float = 0.9, hist: pd.DataFrame | None = None
) -> pd.DataFrame:
    """`THRESHOLDS` of the window's delivery jobs: each (channel, provider_id)'s ``quantile`` of
    ``time_to_send_s`` (``workflow`` missing), and each workflow's own through it where it sent
    at least `WORKFLOW_SENDS` (linear interpolation): the slow thresholds of `SCANNED_JOBS`.
    ``hist``: the window's histogram (`scan_window`), when read already."""
    with _window_of(source, after, before) as (rel, start, end):
        hist = _window_pass(source, rel, start, end, None)[2] if hist is None else hist.copy()
        jobs = f"WITH delivery_jobs AS ({_delivery_jobs(start, end, rel, source)}) "
        timings = percentiles(lambda sql: rel.query(jobs + sql), _OWN, [_PAIR, _OWN], "time_to_send_s", {"slow_above": float(quantile)}, _literal, hist=hist)  # fmt: skip
    return _thresholds(timings, _own_groups(hist))


def _own_groups(hist: pd.DataFrame) -> set[tuple]:
    """The (channel, provider_id, workflow) of a histogram of `scan_window` that sent at least
    `WORKFLOW_SENDS`: those with a slow threshold of their own."""
    sent = hist.groupby(_OWN, sort=False)["c"].sum()
    return {key for key, count in sent.items() if count >= WORKFLOW_SENDS and None not in key}


def _thresholds(timings: list[pd.DataFrame], own: set[tuple]) -> pd.DataFrame:
    """`THRESHOLDS` from `toolkit.percentiles` frames of the pairs and of their workflows (those
    of ``own`` kept)."""
    pairs, workflows = (frame.itertuples(index=False, name=None) for frame in timings)
    rows = [(c, p, None, at) for c, p, at in pairs]
    return _threshold_frame(rows + [row for row in workflows if row[:3] in own])


def _threshold_frame(rows: list[tuple]) -> pd.DataFrame:
    """`THRESHOLDS` of ``(channel, provider_id, workflow or None, slow_above)`` rows."""
    return pd.DataFrame(rows, columns=THRESHOLDS, dtype=object).astype({"slow_above": "float64"})


def scan_window(
    source: Any, *, after=None, before=None, by: Sequence[str] | None = None
) -> tuple[pd.DataFrame, pd.DataFrame | None, pd.DataFrame]:
    """Per (channel, provider_id) of the window's delivery jobs: ``jobs``, the first and last
    start (``first_at``, ``last_at``, `AT`) and trigger (``first_trigger``, ``last_trigger``),
    what the incident scans' grid is set from; the histogram of ``time_to_send_s`` by pair and
    workflow (``channel, provider_id, workflow, bin, c``: `toolkit.percentiles`, for
    `scan_counts`); with ``by``, the delivery jobs of the window per hour and ``by``
    (`delivery_counts`' ``bucket``, ``by`` and ``jobs``). One pass over the delivery jobs (SQL
    grouping sets)."""
    with _window_of(source, after, before) as (rel, start, end):
        return _window_pass(source, rel, start, end, by)


def _window_pass(source, rel, start, end, by):
    from toolkit.percentiles import bin_of

    pair = ["channel", "provider_id"]
    dimensions = None if by is None else _dimensions(by)
    sets = [[*_OWN, "bin"], *([["bucket", *dimensions]] if by is not None else [])]
    keys = list(dict.fromkeys(key for one in sets for key in one))
    ends = ["first_at", "last_at", "first_trigger", "last_trigger"]
    columns = [
        *keys,
        *(["CAST(GROUPING(bucket) AS INT) AS _grouping_bucket"] if by is not None else []),
        f"CAST({COUNTS['jobs']} AS BIGINT) AS c",
        f"min({AT}) AS first_at, max({AT}) AS last_at",
        "min(triggered_at) AS first_trigger, max(triggered_at) AS last_trigger",
    ]
    hourly = pd.Timedelta("1h")
    binned = (
        f"SELECT *, CASE WHEN time_to_send_s IS NOT NULL THEN {bin_of('time_to_send_s')} END"
        f" AS bin, {_bucketed(hourly)} AS bucket FROM delivery_jobs"
    )
    grouped = ", ".join(f"({', '.join(one)})" for one in sets)
    table = rel.query(
        f"WITH delivery_jobs AS ({_delivery_jobs(start, end, rel, source)})"
        f" SELECT {', '.join(columns)} FROM ({binned}) binned GROUP BY GROUPING SETS ({grouped})"
    )
    binned = table if by is None else table.filter(pc.equal(table["_grouping_bucket"], 1))
    hist = binned.filter(pc.is_valid(binned["bin"])).select([*_OWN, "bin", "c"]).to_pandas()
    # each pair's figures, from its bins' (untimed jobs: a bin of their own, null)
    done = [("c", "sum"), *((name, "min" if name.startswith("first") else "max") for name in ends)]
    pairs = binned.select([*pair, "c", *ends]).group_by(pair, use_threads=False).aggregate(done)
    frame = pairs.to_pandas().rename(columns={f"{name}_{how}": name for name, how in done})
    frame = frame.rename(columns={"c": "jobs"})[[*pair, "jobs", *ends]]
    for name in ends:
        frame[name] = pd.to_datetime(frame[name], utc=True).astype("datetime64[ns, UTC]")
    frame["jobs"] = frame["jobs"].astype("int64")
    frame = frame.sort_values(pair, ignore_index=True)
    counted = None
    if by is not None:
        counted = table.filter(pc.equal(table["_grouping_bucket"], 0))
        counted = counted.select(["bucket", *dimensions, "c"]).to_pandas().rename(columns={"c": "jobs"})  # fmt: skip
        counted["bucket"] = _instants(counted["bucket"])
        for name in dimensions:
            counted[name] = counted[name].astype("string")
        counted = counted.sort_values(["bucket", *dimensions], ignore_index=True, na_position="last")  # fmt: skip
    return frame, counted, hist


def scan_counts(
    source: Any,
    *,
    after=None,
    before=None,
    grid: tuple[pd.Timestamp, pd.Timedelta, int],
    slow_above: pd.DataFrame,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """`SCAN_COUNTS` per bucket of ``grid`` (``(origin, step, count)``: a job's bucket is
    ``(at - origin) // step``, clipped to ``[0, count)``) and ``channel, provider_id,
    error_code, domain``, and the thresholds they were counted with (`THRESHOLDS`).

    ``slow_above``: `THRESHOLDS` (a frame of `slow_thresholds`; one without ``workflow``: the
    pairs'). A job is slow when sent above its workflow's threshold, else its pair's (a pair
    with a missing provider has none): counted from the bins of `toolkit.percentiles`, all of a
    bin above the threshold's, and of the threshold's bin each value, compared with it."""
    from toolkit.percentiles import bin_of

    known = [(c, p, None if pd.isna(w) else w, at) for c, p, w, at
             in slow_above.reindex(columns=THRESHOLDS).itertuples(index=False, name=None)
             if not pd.isna(p) and not pd.isna(at)]  # fmt: skip
    edges = {(c, p, w): (bin_of(f"CAST({float(at)!r}E0 AS DOUBLE)"),) * 2 for c, p, w, at in known}
    bins = " UNION ALL ".join(
        f"SELECT {_literal(channel)} AS channel, {_literal(provider)} AS provider_id,"
        f" {'CAST(NULL AS STRING)' if workflow is None else _literal(workflow)} AS workflow,"
        f" {low} AS low, {high} AS high"
        for (channel, provider, workflow), (low, high) in edges.items()
    ) or (
        "SELECT CAST(NULL AS STRING) AS channel, CAST(NULL AS STRING) AS provider_id,"
        " CAST(NULL AS STRING) AS workflow, CAST(NULL AS BIGINT) AS low,"
        " CAST(NULL AS BIGINT) AS high WHERE 1 = 0"
    )
    keys = ["channel", "provider_id", "error_code", "domain"]
    near = "(b.bin BETWEEN b.pair_low AND b.pair_high OR b.bin BETWEEN b.own_low AND b.own_high)"
    none = pd.DataFrame(columns=THRESHOLDS)
    with _window_of(source, after, before) as (rel, start, end):
        table = rel.query(
            f"{_scanned(source, rel, start, end, none)}, bins AS ({bins}), binned AS (SELECT s.*,"
            f" CASE WHEN s.time_to_send_s IS NOT NULL THEN {bin_of('s.time_to_send_s')} END AS bin,"
            " t.low AS pair_low, t.high AS pair_high, w.low AS own_low, w.high AS own_high"
            " FROM scanned s LEFT JOIN bins t ON s.channel = t.channel AND"
            " s.provider_id = t.provider_id AND t.workflow IS NULL LEFT JOIN bins w ON"
            " s.channel = w.channel AND s.provider_id = w.provider_id AND s.workflow = w.workflow)"
            f" SELECT {_bucket(AT, *grid)} AS bucket,"
            f" {', '.join(keys)}, CASE WHEN {near} THEN b.bin END AS near_bin,"
            f" CASE WHEN {near} THEN b.time_to_send_s END AS v,"
            f" CASE WHEN {near} AND b.own_low IS NOT NULL THEN b.workflow END AS near_workflow,"
            " coalesce(b.bin > coalesce(b.own_high, b.pair_high), false) AS above, "
            + ", ".join(f"CAST({expr} AS BIGINT) AS {name}" for name, expr in SCAN_COUNTS.items())
            + " FROM binned b GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9"
        )
    frame = table.to_pandas()
    for name in (*keys, "near_workflow"):
        frame[name] = frame[name].astype("string")
    timed = frame[frame["near_bin"].notna().to_numpy()]
    thresholds = _threshold_frame(known)
    at = {(c, p, None if pd.isna(w) else w): limit for c, p, w, limit
          in thresholds.itertuples(index=False, name=None)}  # fmt: skip
    workflow = timed["near_workflow"].to_numpy(dtype=object, na_value=None)
    limit = np.array([at.get(key, np.inf) for key in zip(timed["channel"], timed["provider_id"], workflow, strict=True)], dtype="float64")  # fmt: skip
    slow = frame["above"].to_numpy(bool).copy()
    slow[np.flatnonzero(frame["near_bin"].notna().to_numpy())] = (
        timed["v"].to_numpy("float64") > limit
    )
    frame["slow"] = np.where(slow, frame["sent"].to_numpy("int64"), 0)
    frame = frame.groupby(["bucket", *keys], dropna=False, sort=False)[[*SCAN_COUNTS, "slow"]].sum().reset_index()  # fmt: skip
    for name in ("bucket", *SCAN_COUNTS, "slow"):
        frame[name] = frame[name].astype("int64")
    return frame, thresholds


def slow_counts(
    source: Any,
    *,
    after=None,
    before=None,
    grid: tuple[pd.Timestamp, pd.Timedelta, int],
    slow_above: pd.DataFrame,
) -> pd.DataFrame:
    """The jobs sent (``sent``) and of them those sent above their pair's threshold of
    ``slow_above`` (``slow``: `SCANNED_JOBS`' flag) per bucket of ``grid`` (as `scan_counts`)
    and ``channel, provider_id, workflow``: what each workflow's sends usually take, for the
    latency scan's expected slow share of a period's mix of workflows."""
    with _window_of(source, after, before) as (rel, start, end):
        table = rel.query(
            f"{_scanned(source, rel, start, end, slow_above)}"
            f" SELECT {_bucket(AT, *grid)} AS bucket, channel, provider_id, workflow,"
            f" CAST({SCAN_COUNTS['sent']} AS BIGINT) AS sent,"
            " CAST(sum(CASE WHEN slow THEN 1 ELSE 0 END) AS BIGINT) AS slow"
            " FROM scanned WHERE time_to_send_s IS NOT NULL GROUP BY 1, 2, 3, 4"
        )
    frame = table.to_pandas()
    for name in ("channel", "provider_id", "workflow"):
        frame[name] = frame[name].astype("string")
    for name in ("bucket", "sent", "slow"):
        frame[name] = frame[name].astype("int64")
    return frame


def sent_counts(
    source: Any, *, after=None, before=None, grid: tuple[pd.Timestamp, pd.Timedelta, int]
) -> pd.DataFrame:
    """Notifications per bucket of ``grid`` (their creation), and of them those sent (a job
    finished, failed or in flight) per channel and per (channel, provider_id): rows of
    ``bucket, channel, provider_id, notifications`` (``channel`` and ``provider_id`` missing:
    all notifications; ``provider_id`` missing and ``level`` "channel": per channel)."""
    empty = pd.DataFrame(columns=THRESHOLDS)
    with _window_of(source, after, before) as (rel, start, end):
        window = f"unix_micros(created_at) BETWEEN {_micros(start, -(2**62))} AND {_micros(end, 2**62)}"  # fmt: skip
        sent = f"{_bucket('triggered_at', *grid)} AS bucket"
        table = rel.query(
            f"{_scanned(source, rel, start, end, empty)}"
            f" SELECT 'all' AS level, {_bucket('created_at', *grid)} AS bucket,"
            " CAST(NULL AS STRING) AS channel, CAST(NULL AS STRING) AS provider_id,"
            " CAST(count(DISTINCT notification_id) AS BIGINT) AS notifications"
            f" FROM notifications WHERE created_at IS NOT NULL AND {window} GROUP BY 1, 2"
            " UNION ALL SELECT CASE WHEN GROUPING(provider_id) = 1 THEN 'channel' ELSE"
            " 'provider' END, bucket, channel, provider_id,"
            " CAST(count(DISTINCT notification_id) AS BIGINT) FROM (SELECT"
            f" {sent}, channel, provider_id, notification_id FROM scanned WHERE attempted) sent"
            " GROUP BY GROUPING SETS ((bucket, channel), (bucket, channel, provider_id))"
        )
    frame = table.to_pandas()
    for name in ("level", "channel", "provider_id"):
        frame[name] = frame[name].astype("string")
    for name in ("bucket", "notifications"):
        frame[name] = frame[name].astype("int64")
    return frame


def scanned_job_rows(
    source: Any,
    *,
    after=None,
    before=None,
    slow_above: pd.DataFrame,
    where: Sequence[dict[str, Any]],
    among: tuple[str, Sequence[Any]] | None = None,
    columns: Sequence[str] | None = None,
) -> pa.Table:
    """The ``columns`` (default all) of the rows of `SCANNED_JOBS` matching any of ``where``,
    ordered by ``scan_at`` then job id: each a dict of column values (None: missing), and
    optionally ``"at": (low, high)`` (a half-open range of a time column, ``"column"``, default
    ``scan_at``; None: unbounded); with ``among``, ``(column, values)``, only the rows whose
    ``column`` is one of ``values``."""
    with _window_of(source, after, before) as (rel, start, end):
        chosen = " OR ".join(f"({_condition(one)})" for one in _merged(where)) or "false"
        if among is not None:
            listed = ", ".join(_literal(value) for value in among[1])
            chosen = f"({chosen}) AND {among[0]} IN ({listed})" if listed else "false"
        return rel.query(
            f"{_scanned(source, rel, start, end, slow_above)}"
            f" SELECT {', '.join(columns or ['*'])} FROM scanned WHERE {chosen}"
            " ORDER BY scan_at, job_id"
        )


#: How long before its period a volume row's group is counted for its jobs per notification
#: (distinct notifications: a week's, not the whole window's).
NEAR = pd.Timedelta(days=7)


def group_counts(
    source: Any, *, after=None, before=None, groups: Sequence[tuple[dict, Any, Any]]
) -> pd.DataFrame:
    """Per ``workflow``, for each ``(keys, start, end)`` of ``groups`` (``n`` its position):
    the group's delivery jobs (``keys``: column values, None for missing) triggered from the
    `NEAR` week before ``start`` to ``end``, ``jobs_n``, and their notifications
    ``notifications_n`` (distinct; a notification has one workflow, so they add up over
    workflows), and of them those triggered in ``[start, end)``: ``period_n``, their first and
    last trigger ``first_n``, ``last_n``; a row per workflow with a job in those weeks.

    Only those weeks are read, a store's a day at a time: a notification's jobs share its
    trigger, so the distinct notifications of days add up, and memory follows a day's
    notifications, not a week's."""
    columns, near_any = [], []
    for n, (keys, low, high) in enumerate(groups):
        mine = _condition(keys)
        period = f"{mine} AND {_condition({'at': (low, high), 'column': 'triggered_at'})}"  # fmt: skip
        near = f"{mine} AND {_condition({'at': (low - NEAR, high), 'column': 'triggered_at'})}"  # fmt: skip
        near_any.append(f"({near})")
        columns += [
            f"CAST(count(CASE WHEN {near} THEN 1 END) AS BIGINT) AS jobs_{n}",
            f"CAST(count(DISTINCT CASE WHEN {near} THEN notification_id END) AS BIGINT) AS notifications_{n}",  # fmt: skip
            f"CAST(count(CASE WHEN {period} THEN 1 END) AS BIGINT) AS period_{n}",
            f"min(CASE WHEN {period} THEN triggered_at END) AS first_{n}",
            f"max(CASE WHEN {period} THEN triggered_at END) AS last_{n}",
        ]
    days = []
    with _window_of(source, after, before) as (rel, start, end):
        first = min(low for _, low, _ in groups) - NEAR
        last = max(high for _, _, high in groups)
        first, last = max(first, start or first), min(last, end or last)
        spans = [(first, last)] if first <= last else []
        if rel.partitioned:  # a store's days one at a time
            day = pd.Timedelta(days=1)
            spans = [(max(at, first), min(at + day - pd.Timedelta(microseconds=1), last))
                     for at in pd.date_range(first.floor("D"), last, freq="D")]  # fmt: skip
        for low, high in spans:
            days.append(rel.query(
                f"WITH delivery_jobs AS ({_delivery_jobs(low, high, rel, source)}) SELECT workflow,"
                f" {', '.join(columns)} FROM delivery_jobs WHERE {' OR '.join(near_any)}"
                " GROUP BY workflow"
            ).to_pandas())  # fmt: skip
    names = ["workflow", *(column.rsplit(" AS ", 1)[1] for column in columns)]
    frame = pd.concat(days, ignore_index=True) if days else pd.DataFrame(columns=names)
    frame["workflow"] = frame["workflow"].astype("string")
    if len(days) != 1:  # a store's days added up (one query: a row per workflow already)
        added = {name: "min" if name.startswith("first_") else "max" if name.startswith("last_") else "sum" for name in frame.columns[1:]}  # fmt: skip
        frame = frame.groupby("workflow", dropna=False, sort=False).agg(added).reset_index()
    for n in range(len(groups)):
        for name in (f"jobs_{n}", f"notifications_{n}", f"period_{n}"):
            frame[name] = frame[name].astype("int64")
        for name in (f"first_{n}", f"last_{n}"):
            frame[name] = pd.to_datetime(frame[name], utc=True).astype("datetime64[ns, UTC]")
    return frame


def failure_payloads(
    source: Any, *, after=None, before=None, job_ids: Sequence[str]
) -> dict[str, str]:
    """The raw payload of each job's last Failed execution detail (jobs without one left out)."""
    if not len(job_ids):
        return {}
    with _window_of(source, after, before) as (rel, start, end):
        listed = ", ".join(_literal(job_id) for job_id in job_ids)
        table = rel.query(
            "SELECT job_id, raw, created_at FROM execution_details WHERE notification_id IN"
            " (SELECT notification_id FROM notifications WHERE unix_micros(created_at) BETWEEN"
            f" {_micros(start, -(2**62))} AND {_micros(end, 2**62)}) AND job_id IN ({listed})"
            " AND CAST(status AS STRING) = 'Failed' AND raw IS NOT NULL"
        )
    frame = table.to_pandas().sort_values("created_at", kind="stable")
    return dict(zip(frame["job_id"].astype(str), frame["raw"].astype(str), strict=True))


# --------------------------------------------------------------------------------------------


def _jobs_query(data: Any, after, before, sql: str, frames: dict[str, pd.DataFrame] | None = None) -> pa.Table:  # fmt: skip
    """``sql`` over ``delivery_jobs``: the `DELIVERY_JOBS` of a source's window (with its tables),
    or delivery jobs already computed (a frame; ``frames``: other frames it reads, by name)."""
    if isinstance(data, pd.DataFrame):
        from toolkit import engines

        with engines.relations(None, frames={"delivery_jobs": data, **(frames or {})}) as rel:
            return rel.query(sql)
    with _window_of(data, after, before) as (rel, start, end):
        joined = f", {sql[5:]}" if sql.startswith("WITH ") else f" {sql}"  # its own CTEs after
        return rel.query(f"WITH delivery_jobs AS ({_delivery_jobs(start, end, rel, data)}){joined}")


def _created(start: pd.Timestamp | None, end: pd.Timestamp | None) -> str:
    """The SQL condition of a notification created in the window."""
    return f"unix_micros(created_at) BETWEEN {_micros(start, -(2**62))} AND {_micros(end, 2**62)}"


def _literal(value: Any) -> str:
    """``value`` as an SQL string literal both engines read alike (NULL when missing): quotes
    and backslashes, which their literals escape differently, as ``chr`` codes."""
    if value is None or pd.isna(value):
        return "CAST(NULL AS STRING)"
    parts = re.split(r"(['\\])", str(value))
    pieces = [f"chr({ord(part)})" if part in ("'", "\\") else f"'{part}'" for part in parts if part]
    if len(pieces) < 2:
        return pieces[0] if pieces else "''"
    return f"concat({', '.join(pieces)})"


def _delivery_jobs(
    start: pd.Timestamp | None, end: pd.Timestamp | None, rel: Any = None, source: Any = None
) -> str:
    """`DELIVERY_JOBS` of the window, from the facts ``rel``'s jobs keep if they do (``source``
    `Given`: the rows it holds)."""
    if isinstance(source, Given):  # computed already: the same relation's rows
        low, high = _micros(start, -(2**62)), _micros(end, 2**62)
        return f"SELECT * FROM given_jobs WHERE unix_micros(triggered_at) BETWEEN {low} AND {high}"
    facts = STORED_FACTS if getattr(rel, "facts_stored", False) else JOB_FACTS
    window = {"low": _micros(start, -(2**62)), "high": _micros(end, 2**62)}
    return DELIVERY_JOBS.format(facts=facts.format(**window))


class Given:
    """An Activity whose delivery jobs are computed already (`delivery_job_rows`, or
    `toolkit.metrics.delivery_jobs`: ``jobs``): queries read those rows instead of running
    `DELIVERY_JOBS` again, and its frames are converted for the engine once (its
    ``notifications`` and ``execution_details`` may be lean: what those queries read)."""

    def __init__(self, activity: Any, jobs: pd.DataFrame | pa.Table | None = None):
        from toolkit import engines

        self.activity, self.attrs = activity, dict(activity.attrs)
        self._tables: dict[str, pa.Table] = {}
        if jobs is None:  # the activity's tables converted once, for this query and the others
            _activity_window(activity, None, None)
            frames = {**self._frames(), "jobs": engines._arrow(activity.jobs)}
            with engines.relations(None, frames=frames) as rel:
                jobs = rel.query(_delivery_jobs(None, None, rel))
        self.jobs = jobs

    def _bounds(self, after: Any, before: Any):
        if after is None and before is None:
            return None, None
        return _activity_window(self.activity, after, before)

    def _frames(self) -> dict[str, pa.Table]:
        from toolkit import engines

        for name in ("notifications", "execution_details"):
            if name not in self._tables:
                self._tables[name] = engines._arrow(getattr(self.activity, name))
        return self._tables

    def _relations(self, start: Any, end: Any):
        from toolkit import engines

        if "given_jobs" not in self._tables:
            self._tables["given_jobs"] = engines._arrow(self.jobs)
        return engines.relations(None, frames=self._frames())


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


def _typed(table: pa.Table, dimensions: list[str], names=tuple(COUNTS)) -> pd.DataFrame:
    frame = table.to_pandas()
    frame["bucket"] = _instants(frame["bucket"])
    for name in dimensions:
        frame[name] = frame[name].astype("string")
    for name in names:
        frame[name] = frame[name].to_numpy("int64", na_value=0) if len(frame) else np.array([], "int64")  # fmt: skip
    return frame[["bucket", *dimensions, *names]]


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


def _scanned(source, rel, start, end, slow_above: pd.DataFrame) -> str:
    """The ``WITH`` clause defining ``scanned`` (`SCANNED_JOBS`) of the window, with the slow
    thresholds of ``slow_above`` inlined."""
    thresholds = [
        f"SELECT {_literal(channel)} AS channel, {_literal(provider)} AS provider_id,"
        f" {'CAST(NULL AS STRING)' if pd.isna(workflow) else _literal(workflow)} AS workflow,"
        f" CAST({float(limit)!r}E0 AS DOUBLE) AS slow_above"
        for channel, provider, workflow, limit
        in slow_above.reindex(columns=THRESHOLDS).itertuples(index=False, name=None)
        if not pd.isna(provider) and not pd.isna(limit)
    ]  # fmt: skip
    thresholds = " UNION ALL ".join(thresholds) or (
        "SELECT CAST(NULL AS STRING) AS channel, CAST(NULL AS STRING) AS provider_id,"
        " CAST(NULL AS STRING) AS workflow, CAST(NULL AS DOUBLE) AS slow_above WHERE 1 = 0"
    )
    return (
        f"WITH delivery_jobs AS ({_delivery_jobs(start, end, rel, source)}), slow_above AS ({thresholds}),"
        f" scanned AS ({SCANNED_JOBS})"
    )


def _bucket(column: str, origin: pd.Timestamp, step: pd.Timedelta, count: int) -> str:
    micros = step // pd.Timedelta(microseconds=1)
    index = f"floor((unix_micros({column}) - {_micros(origin, 0)}) / {micros})"
    return f"CAST(greatest(0, least({count - 1}, coalesce({index}, 0))) AS BIGINT)"


def _merged(where: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """``where`` (of `_condition`) with the time ranges of otherwise equal conditions merged
    where they overlap or touch: the same rows, fewer conditions to test."""
    alike: dict[str, tuple[dict, list]] = {}
    for one in where:
        rest = {name: value for name, value in one.items() if name != "at"}
        alike.setdefault(repr(rest), (rest, []))[1].append(one.get("at", (None, None)))
    out = []
    for rest, spans in alike.values():
        spans = sorted(spans, key=lambda span: (span[0] is not None, span[0] or 0))
        joined = [list(spans[0])]
        for low, high in spans[1:]:
            last = joined[-1]
            if last[1] is None or low is None or low <= last[1]:  # overlapping or touching
                last[1] = None if last[1] is None or high is None else max(last[1], high)
            else:
                joined.append([low, high])
        out += [{**rest, "at": tuple(span)} for span in joined]
    return out


def _condition(one: dict[str, Any]) -> str:
    parts = []
    for name, value in one.items():
        if name == "at":
            column = one.get("column", "scan_at")
            low, high = value
            if low is not None:
                parts.append(f"unix_micros({column}) >= {_micros(low, 0)}")
            if high is not None:
                parts.append(f"unix_micros({column}) < {_micros(high, 0)}")
        elif name != "column":
            is_missing = value is None or value is pd.NA
            parts.append(f"{name} IS NULL" if is_missing else f"{name} = {_literal(value)}")
    return " AND ".join(parts) or "true"


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
