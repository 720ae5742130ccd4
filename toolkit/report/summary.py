"""The report's figures, from the queries of `toolkit.counts` (frames of counts in, plain values
out)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from toolkit import metrics
from toolkit.charts import MISSING, format_seconds
from toolkit.schemas import CHANNELS

__all__ = [
    "CARDS",
    "cards",
    "figures",
    "headline",
    "headline_lines",
    "percent",
    "provider_table",
    "source_headline",
]

#: The headline cards: key of `headline`, label, and how the value reads (count, rate, seconds).
CARDS = (
    ("notifications", "notifications", "count"),
    ("delivery_jobs", "delivery jobs", "count"),
    ("failure_rate", "failure rate", "rate"),
    ("failed", "failed jobs", "count"),
    ("time_to_deliver_p50", "time to deliver, p50", "seconds"),
    ("time_to_deliver_p95", "time to deliver, p95", "seconds"),
    ("subscribers_reached", "subscribers reached", "count"),
)


def headline(activity) -> dict[str, Any]:
    """The headline figures of an Activity (`source_headline` of its frames).

    Returns
    -------
    dict
        ``notifications`` (their number), the keys of `metrics.totals`, and ``by_channel``:
        ``{"channel", "jobs", "failed", "failure_rate"}`` per channel, in vocabulary order.
    """
    return source_headline(activity, None, None)


def source_headline(source: Any, after: Any, before: Any) -> dict[str, Any]:
    """`headline` of a source's window (an Activity, a store), counted by its engine in one pass
    over the delivery jobs (`toolkit.counts.summaries`), without its rows."""
    from toolkit.counts import notification_count, summaries

    window = {"after": after, "before": before}
    totals, channels = summaries(source, [(), "channel"], **window)
    return figures(notification_count(source, **window), totals, channels)


def figures(notifications: int, totals: pd.DataFrame, channels: pd.DataFrame) -> dict[str, Any]:
    """`headline` from the number of notifications and `toolkit.counts.summary` of all delivery
    jobs and by channel."""
    rates = channels.set_index(channels["channel"].astype(str))
    return {
        "notifications": notifications,
        **metrics.totals_of(totals),
        "by_channel": [
            {
                "channel": channel,
                "jobs": int(rates.loc[channel, "jobs"]),
                "failed": int(rates.loc[channel, "failed"]),
                "failure_rate": _number(rates.loc[channel, "failure_rate"]),
            }
            for channel in _channel_order(rates.index)
        ],
    }


def cards(current: dict[str, Any], previous: dict[str, Any] | None) -> list[dict[str, str]]:
    """The `CARDS` as text: ``id, label, value, detail`` (the interval of a rate) and
    ``previous`` (the previous period's value and the change, or why there is none: not read,
    or no delivery jobs in it, as when it lies before the service's first)."""
    shown = []
    for key, label, kind in CARDS:
        value = current[key]
        detail = ""
        if key == "failure_rate" and value is not None:
            detail = f"95% CI {percent(current['ci_low'])} to {percent(current['ci_high'])}"
        if previous is None:
            before = "previous period: not read"
        elif not previous["delivery_jobs"]:  # before the service's history: nothing to compare
            before = "previous period: no delivery jobs"
        else:
            before = f"previous: {_format(previous[key], kind)} ({_change(value, previous[key], kind)})"  # fmt: skip
        shown.append({"id": key.replace("_", "-"), "label": label, "value": _format(value, kind),
                      "detail": detail, "previous": before})  # fmt: skip
    return shown


def provider_table(providers: pd.DataFrame, failures: pd.DataFrame) -> list[dict[str, Any]]:
    """One row per (channel, provider): ``channel, provider_id, jobs`` (finished plus failed),
    ``failed, in_flight, failure_rate`` (with its interval, as text), ``p50, p95`` (time to
    deliver, as text) and ``top_error`` (its most frequent failure, as text).

    Parameters
    ----------
    providers : DataFrame
        ``toolkit.counts.summary`` by ``channel`` and ``provider_id``.
    failures : DataFrame
        ``toolkit.counts.failures`` (most first).
    """
    keys = ["channel", "provider_id"]
    errors = failures.drop_duplicates(keys)[[*keys, "error_code", "error_text", "failed"]]
    table = providers.astype({key: "string" for key in keys}).merge(
        errors.astype({key: "string" for key in keys}), on=keys, how="left", suffixes=("", "_top")
    )
    table["channel"] = table["channel"].astype(str)
    order = {channel: rank for rank, channel in enumerate(_channel_order(table["channel"]))}
    table = table.sort_values(["channel", "jobs"], key=lambda c: c.map(order) if c.name == "channel" else -c)  # fmt: skip
    rows = []
    for row in table.to_dict("records"):
        rate = row["failure_rate"]
        rows.append(
            {
                "channel": row["channel"],
                "provider_id": _label(row["provider_id"]),
                "jobs": f"{row['jobs']:,}",
                "failed": f"{row['failed']:,}",
                "in_flight": f"{row['in_flight']:,}",
                "failure_rate": "n/a" if pd.isna(rate) else
                f"{percent(rate)} ({percent(row['ci_low'])} to {percent(row['ci_high'])})",
                "p50": _format(_number(row["p50"]), "seconds"),
                "p95": _format(_number(row["p95"]), "seconds"),
                "top_error": "" if pd.isna(row["failed_top"]) else
                f"{_label(row['error_code'])} · {_label(row['error_text'])} ({int(row['failed_top']):,})",
            }
        )  # fmt: skip
    return rows


def headline_lines(figures: dict[str, Any], previous: dict[str, Any] | None = None) -> list[str]:
    """A few lines of text for a terminal: the headline figures, with the previous period's."""
    lines = []
    for card in cards(figures, previous):
        detail = f", {card['detail']}" if card["detail"] else ""
        change = f" [{card['previous']}]" if previous is not None else ""
        lines.append(f"{card['label']}: {card['value']}{detail}{change}")
    by_channel = ", ".join(
        f"{row['channel']} {row['jobs']} ({percent(row['failure_rate'])} failed)"
        for row in figures["by_channel"]
    )
    lines.append(f"delivery jobs by channel: {by_channel or MISSING}")
    return lines


def percent(share: float | None) -> str:
    """``0.1234`` -> ``"12.3%"``; None -> ``"n/a"``."""
    return "n/a" if share is None else f"{100 * share:.1f}%"


# --------------------------------------------------------------------------------------------


def _format(value: float | None, kind: str) -> str:
    if value is None:
        return "n/a"
    if kind == "rate":
        return percent(value)
    return format_seconds(value) if kind == "seconds" else f"{value:,}"


def _change(value: float | None, before: float | None, kind: str) -> str:
    """The change from ``before`` to ``value``: points for rates, else relative."""
    if value is None or before is None:
        return "no change to show"
    if kind == "rate":
        return f"{round(100 * (value - before), 1) + 0.0:+.1f} pts"  # + 0.0: no "-0.0"
    if before == 0:
        return "was 0" if value else "no change"
    return f"{round(100 * (value - before) / before, 1) + 0.0:+.1f}%"


def _channel_order(channels) -> list[str]:
    present = set(channels)
    return [c for c in CHANNELS if c in present] + sorted(present - set(CHANNELS))


def _label(value: Any) -> str:
    return MISSING if value is None or pd.isna(value) else str(value)


def _number(value: Any) -> float | None:
    return None if pd.isna(value) else float(value)
