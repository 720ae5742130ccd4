"""`what_changed`: its inputs checked, the counts of the two windows, the frame of causes."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import numpy as np
import pandas as pd

from toolkit.changes.localize import Cause, explain, leaves
from toolkit.errors import ParameterError
from toolkit.timeutil import parse_time, to_iso

MEASURES = ("failure_rate", "volume")

#: The columns of the frame (the dimensions' columns come between ``cause`` and ``jobs``).
COLUMNS = {
    "cause": "object",
    "jobs": "int64",
    "failed": "int64",
    "failure_rate": "float64",
    "baseline_jobs": "int64",
    "baseline_failed": "int64",
    "baseline_rate": "float64",
    "excess": "float64",
    "share_of_change": "float64",
    "summary": "string",
}
_COUNTS = ("jobs", "failed")
#: The counts a counts frame may have that `what_changed` reads.
_NUMBERS = (*_COUNTS, "finished", "met_failure")


def what_changed(
    data: Any,
    *,
    period: tuple[Any, Any],
    baseline: tuple[Any, Any] | None = None,
    dimensions: list[str] | None = None,
    measure: str = "failure_rate",
    alpha: float = 0.01,
) -> pd.DataFrame:
    """The root causes of a change of the failure rate or the volume, largest effect first.

    How they are decided: `toolkit.changes` (``help(toolkit.changes)``).

    Parameters
    ----------
    data : Activity, Store or DataFrame
        Activity or a store (counted by `toolkit.delivery_counts`), or a counts frame: a
        ``bucket`` column (UTC), one string column per dimension, ``jobs`` and ``failed``.
    period : (start, end)
        The window to explain, as ``read_activity`` takes times (``"7d"`` counts back from the
        data's end). A counts frame's rows are in it when their bucket starts in it.
    baseline : (start, end), optional
        The window to compare with; default the same length just before ``period``.
    dimensions : list of str, optional
        Default: every dimension of the data (a counts frame: its string columns; an Activity
        or a Store: ``toolkit.counts.DEFAULT_BY``; ``toolkit.counts.DIMENSIONS`` may be named).
    measure : {"failure_rate", "volume"}
        Failures per job, or jobs (a drop or a spike).
    alpha : float
        The family-wise significance of the causes named.

    Returns
    -------
    DataFrame
        One row per root cause: ``cause`` (dimension -> value), one column per dimension (its
        value, or missing), then `COLUMNS`. No row when nothing stands out, with the reason in
        ``attrs["reason"]``.

    Raises
    ------
    ParameterError
        A bad measure, dimension, window (outside the data, overlapping, empty baseline) or
        counts frame (no ``jobs``/``failed``, negative or fractional counts, ``failed > jobs``).
    """
    if measure not in MEASURES:
        raise ParameterError("measure", measure, f"one of {list(MEASURES)}")
    if isinstance(alpha, bool) or not isinstance(alpha, int | float) or not 0 < alpha < 1:
        raise ParameterError("alpha", alpha, "a probability between 0 and 1")
    source = _source(data)
    dims = _dimensions(source, dimensions)
    (start, end), (base_start, base_end) = _windows(source, period, baseline)
    now, then = source.counts(start, end, dims), source.counts(base_start, base_end, dims)
    symptoms = _symptoms(now, then, dims)
    if measure == "failure_rate" and "finished" in now.columns:
        now, then = (f.assign(jobs=f["finished"] + f["failed"]) for f in (now, then))
    if not then["jobs"].sum():
        window = (to_iso(base_start), to_iso(base_end))
        raise ParameterError("baseline", window, "a window with (finished or failed) delivery jobs")
    searched = [d for d in dims if d not in symptoms]
    scale = (end - start) / (base_end - base_start)
    causes, reason = explain(leaves(now, then, searched), measure, scale, alpha)
    frame = _frame(causes, dims, measure, scale, now, symptoms)
    frame.attrs.update(
        reason=reason,
        measure=measure,
        period=(to_iso(start), to_iso(end)),
        baseline=(to_iso(base_start), to_iso(base_end)),
        dimensions=searched,
    )
    return frame


class _Counts:
    """A counts frame: rows selected by bucket."""

    def __init__(self, frame: pd.DataFrame):
        for name in ("bucket", *_COUNTS):
            if name not in frame.columns:
                raise ParameterError("data", f"a frame without {name!r}", _DATA)
        self.numbers = [name for name in _NUMBERS if name in frame.columns]
        for name in self.numbers:
            _check_counts(name, frame[name])
        if (frame["failed"].to_numpy() > frame["jobs"].to_numpy()).any():
            raise ParameterError("data", "failed > jobs", "counts with failed <= jobs")
        self.frame = frame
        self.bucket = pd.to_datetime(frame["bucket"], utc=True)
        freq = frame.attrs.get("freq")
        if freq is None:  # the buckets' spacing; a single bucket counts as an instant
            steps = self.bucket.drop_duplicates().sort_values().diff().dropna()
            freq = steps.min() if len(steps) else pd.Timedelta(1)
        self.first, self.end = self.bucket.min(), self.bucket.max() + pd.Timedelta(freq)
        text = pd.api.types.is_string_dtype
        self.dimensions = [
            name
            for name, column in frame.items()
            if name != "bucket" and (text(column) or isinstance(column.dtype, pd.CategoricalDtype))
        ]

    def counts(self, start, end, dims) -> pd.DataFrame:
        inside = ((self.bucket >= start) & (self.bucket < end)).to_numpy()
        return self.frame.loc[inside, [*dims, *self.numbers]]


class _Engine:
    """An Activity or a Store, counted by `toolkit.delivery_counts` in its engine."""

    def __init__(self, source: Any, first: pd.Timestamp | None, end: pd.Timestamp | None):
        from toolkit.counts import DEFAULT_BY, DIMENSIONS

        self.source, self.first, self.end = source, first, end
        self.dimensions, self.default = list(DIMENSIONS), list(DEFAULT_BY)

    def counts(self, start, end, dims) -> pd.DataFrame:
        from toolkit.counts import delivery_counts

        width = f"{max(1, int((end - start).total_seconds()))}s"  # one or two buckets
        last = pd.Timestamp(end) - pd.Timedelta(microseconds=1)  # its window is closed
        return delivery_counts(self.source, after=start, before=last, freq=width, by=dims)


_DATA = "an Activity, a Store or a counts frame (bucket, dimensions, jobs, failed)"


def _source(data: Any) -> _Counts | _Engine:
    from toolkit.frames import Activity

    if isinstance(data, pd.DataFrame):
        return _Counts(data)
    if isinstance(data, Activity):
        created = data.notifications["created_at"]
        before = data.attrs.get("before")
        end = pd.Timestamp(before) if before is not None else created.max()
        return _Engine(data, created.min(), end)
    from toolkit.store import Store

    if isinstance(data, Store):
        return _Engine(data, *data.window)
    raise ParameterError("data", type(data).__name__, _DATA)


def _dimensions(source, dimensions) -> list[str]:
    if dimensions is None:
        if not source.dimensions:
            raise ParameterError("data", "a frame without dimensions", _DATA)
        return list(getattr(source, "default", source.dimensions))
    if isinstance(dimensions, str) or not isinstance(dimensions, list | tuple) or not dimensions:
        raise ParameterError("dimensions", dimensions, "a non-empty list of column names")
    unknown = [d for d in dimensions if d not in source.dimensions]
    if unknown or len(set(dimensions)) != len(dimensions):
        raise ParameterError("dimensions", dimensions, f"distinct names among {source.dimensions}")
    return list(dimensions)


def _windows(source, period, baseline) -> tuple[tuple[datetime, datetime], ...]:
    if source.first is None or pd.isna(source.first):
        raise ParameterError("data", "no rows", "data with delivery jobs in them")
    now = pd.Timestamp(source.end).to_pydatetime()
    start, end = _window("period", period, now)
    if end <= pd.Timestamp(source.first) or start >= pd.Timestamp(source.end):
        raise ParameterError(
            "period", period, f"a window overlapping the data ({source.first} to {source.end})"
        )
    if baseline is None:
        return (start, end), (start - (end - start), start)
    base_start, base_end = _window("baseline", baseline, now)
    if base_start < end and start < base_end:
        raise ParameterError("baseline", baseline, "a window that does not overlap the period")
    return (start, end), (base_start, base_end)


def _window(name: str, value: Any, now: datetime) -> tuple[datetime, datetime]:
    if not isinstance(value, tuple | list) or len(value) != 2:
        raise ParameterError(name, value, "a (start, end) pair of times")
    start, end = (parse_time(v, name=name, now=now) for v in value)
    if start >= end:
        raise ParameterError(name, value, "a start earlier than its end")
    return start, end


def _check_counts(name: str, values: pd.Series) -> None:
    numbers = pd.to_numeric(values, errors="coerce")
    if numbers.isna().any() or (numbers < 0).any() or (numbers != np.floor(numbers)).any():
        raise ParameterError("data", f"{name} counts", f"{name}: non-negative whole numbers")


def _symptoms(now: pd.DataFrame, then: pd.DataFrame, dims: list[str]) -> list[str]:
    """Dimensions whose values are only on jobs that met a failure (an error code)."""
    both = pd.concat([now, then], ignore_index=True)
    event = both["met_failure"] if "met_failure" in both.columns else both["failed"]
    total = both["jobs"]
    out = []
    for name in dims:
        present = both[name].notna().to_numpy()
        if present.any() and (event.to_numpy()[present] == total.to_numpy()[present]).all():
            out.append(name)
    return out


def _frame(causes: list[Cause], dims, measure, scale, now, symptoms) -> pd.DataFrame:
    rows = []
    for c in causes:
        rows.append(
            {
                "cause": c.cause,
                **{d: c.cause.get(d) for d in dims},
                "jobs": c.jobs,
                "failed": c.failed,
                "failure_rate": c.failed / c.jobs if c.jobs else np.nan,
                "baseline_jobs": c.baseline_jobs,
                "baseline_failed": c.baseline_failed,
                "baseline_rate": c.baseline_failed / c.baseline_jobs if c.baseline_jobs else np.nan,
                "excess": c.excess,
                "share_of_change": c.share,
                "summary": _sentence(c, measure, scale, _how(c, now, symptoms)),
            }
        )
    dtypes = {"cause": "object", **dict.fromkeys(dims, "string"), **COLUMNS}
    frame = pd.DataFrame(rows, columns=list(dtypes))
    return frame.astype(dtypes)


def _how(cause: Cause, now: pd.DataFrame, symptoms: list[str]) -> str:
    """The most common value of each symptom dimension among the cause's failures."""
    if not cause.failed:
        return ""
    inside = np.ones(len(now), dtype=bool)
    for name, value in cause.cause.items():
        inside &= (now[name] == value).fillna(False).to_numpy()
    parts = []
    for name in symptoms:
        failed = now.loc[inside].groupby(name, dropna=True)["failed"].sum()
        if failed.sum():
            parts.append(f"{name} {failed.idxmax()} ({failed.max() / cause.failed:.0%})")
    return f"; mostly {', '.join(parts)}" if parts else ""


def _sentence(cause: Cause, measure: str, scale: float, how: str) -> str:
    where = " & ".join(f"{d}={v}" for d, v in cause.cause.items())
    share = f", {cause.share:.0%} of the change" if np.isfinite(cause.share) else ""
    if measure == "volume":
        expected = cause.jobs - cause.excess
        rest = expected / (cause.baseline_jobs * scale) - 1 if cause.baseline_jobs else 0.0
        more = "more" if cause.excess > 0 else "fewer"
        return (
            f"{where}: {cause.jobs:,.0f} jobs against {cause.baseline_jobs:,.0f} in the baseline, "
            f"{expected:,.0f} expected if it had moved as the rest did ({rest:+.0%}): "
            f"{abs(cause.excess):,.0f} {more}{share}."
        )
    rate = cause.failed / cause.jobs if cause.jobs else np.nan
    before = cause.baseline_failed / cause.baseline_jobs if cause.baseline_jobs else np.nan
    more = "more" if cause.excess > 0 else "fewer"
    return (
        f"{where}: {cause.failed:,.0f} of {cause.jobs:,.0f} jobs failed ({rate:.1%}) against "
        f"{before:.1%} in the baseline: {abs(cause.excess):,.0f} {more} failures than expected"
        f"{share}{how}."
    )
