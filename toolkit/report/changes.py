"""The report's "What changed since the previous period": `toolkit.what_changed` of the window
against the previous period, for the failure rate and the volume, one sentence per cause (for an
unfiltered report: a store counts its whole window in its engine)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

import pandas as pd

#: A bucket wider than any report's window: a period's counts are one row per combination.
WHOLE = "36500D"


def period_counts(read: Any) -> pd.DataFrame:
    """The delivery counts of a period as the section compares them (`toolkit.delivery_counts`
    over its default dimensions, in one bucket): of an Activity, or of a store's `Window`
    (counted by its engine)."""
    from toolkit.counts import delivery_counts
    from toolkit.report import Window

    if isinstance(read, Window):
        return delivery_counts(read.source, after=read.after, before=read.before, freq=WHOLE)
    return delivery_counts(read, freq=WHOLE)


def whole(counts: pd.DataFrame) -> pd.DataFrame:
    """`toolkit.delivery_counts` in any buckets as `period_counts` gives them, in one bucket
    (counts add up over buckets): the report's window counted once for its charts and here."""
    from toolkit.counts import COUNTS

    keys = [name for name in counts.columns if name != "bucket" and name not in COUNTS]
    if counts.empty:
        return counts.iloc[:0].reset_index(drop=True)
    summed = counts.groupby(keys, dropna=False, sort=False)[list(COUNTS)].sum().reset_index()
    summed.insert(0, "bucket", counts["bucket"].min())
    summed = summed.astype({key: "string" for key in keys})
    return summed.sort_values(keys, ignore_index=True, na_position="last")


def section(
    now: pd.DataFrame | None,
    previous: pd.DataFrame | None,
    window: tuple[datetime, datetime, datetime],
    figure_html: Callable[[Any, str], str],
) -> dict[str, Any] | None:
    """The causes of the change from ``previous`` (its counts, ``window[0]`` to ``window[1]``) to
    ``now`` (``window[1]`` to ``window[2]``): ``{"items": [{"measure", "summary", "chart"}],
    "checked"}`` (why there is none); None when a period is missing or has no delivery jobs.
    ``figure_html(figure, element_id)`` renders a cause's chart (`toolkit.charts.change`)."""
    from toolkit import charts
    from toolkit.changes import MEASURES, what_changed

    if now is None or previous is None or not now["jobs"].sum() or not previous["jobs"].sum():
        return None
    start, after, before = (pd.Timestamp(t) for t in window)
    frame = pd.concat([previous.assign(bucket=start), now.assign(bucket=after)], ignore_index=True)
    frame.attrs = {}  # the buckets are the two periods
    items, reasons = [], []
    for measure in MEASURES:
        found = what_changed(
            frame, period=(after, before), baseline=(start, after), measure=measure
        )
        for _, row in found.iterrows():
            chart = figure_html(charts.change(row, measure), f"change-{len(items) + 1}-plot")
            items.append({"measure": measure, "summary": row["summary"], "chart": chart})
        reasons.append(f"{measure.replace('_', ' ')}: {found.attrs['reason'] or 'see above'}")
    return {"items": items, "checked": "; ".join(reasons)}
