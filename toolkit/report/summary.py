"""The report's headline figures, computed from an Activity (pure)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from toolkit import metrics
from toolkit.charts import FUNNEL_STAGES, MISSING
from toolkit.schemas import CHANNELS

__all__ = ["headline", "headline_lines"]


def headline(activity) -> dict[str, Any]:
    """The headline figures of an Activity.

    Returns
    -------
    dict
        ``notifications``; ``subscribers_reached`` (distinct subscribers of the notifications
        that were sent, delivered or read); ``delivery_rate`` and ``failure_rate`` (shares of
        the notifications sent or better, and failed; None without notifications);
        ``failed_notifications``; ``by_channel``: a list of ``{"channel", "jobs", "failed",
        "failure_rate"}`` over the delivery jobs, channels in vocabulary order.
    """
    notifications = activity.notifications
    status = notifications["status"].astype("string").str.lower()
    reached = status.isin(FUNNEL_STAGES["sent"]).fillna(False)
    failed = (status == "failed").fillna(False)
    total = len(notifications)
    rates = metrics.failure_rates(metrics.delivery_jobs(activity), "channel")
    rates = rates.set_index(rates["channel"].astype(str)).drop(columns="channel")
    known = [c for c in CHANNELS if c in rates.index]
    order = known + sorted(set(rates.index) - set(known))
    return {
        "notifications": total,
        "subscribers_reached": int(notifications.loc[reached, "subscriber_id"].nunique()),
        "delivery_rate": int(reached.sum()) / total if total else None,
        "failure_rate": int(failed.sum()) / total if total else None,
        "failed_notifications": int(failed.sum()),
        "by_channel": [
            {
                "channel": channel,
                "jobs": int(rates.loc[channel, "jobs"]),
                "failed": int(rates.loc[channel, "failed"]),
                "failure_rate": _share(rates.loc[channel, "failure_rate"]),
            }
            for channel in order
        ],
    }


def headline_lines(figures: dict[str, Any]) -> list[str]:
    """A few lines of text for a terminal: the headline figures of `headline`."""
    by_channel = ", ".join(
        f"{row['channel']} {row['jobs']} ({percent(row['failure_rate'])} failed)"
        for row in figures["by_channel"]
    )
    return [
        f"notifications: {figures['notifications']}",
        f"subscribers reached: {figures['subscribers_reached']}",
        f"delivery rate: {percent(figures['delivery_rate'])}",
        f"failure rate: {percent(figures['failure_rate'])}"
        f" ({figures['failed_notifications']} failed notifications)",
        f"delivery jobs by channel: {by_channel or MISSING}",
    ]


def _share(value: float) -> float | None:
    return None if pd.isna(value) else float(value)


def percent(share: float | None) -> str:
    """``0.1234`` -> ``"12.3%"``; None -> ``"n/a"``."""
    return "n/a" if share is None else f"{100 * share:.1f}%"
