"""Alerts on traffic shaped like a real product's (`toolkit.sandbox.seed.shaped`), polled as a
Monitor with a store polls: `find_incidents` on its day-long window, the store's weeks before
it as the baseline. A quiet night and a Monday morning's batch and digest fire nothing; an
outage fires within two polls. (`benchmarks/accuracy_alerts.py` measures it over weeks.)"""

from __future__ import annotations

import pandas as pd

from toolkit.alerts import Alerts
from toolkit.incidents import find_incidents
from toolkit.sandbox.seed.shaped import shaped_traffic

KEEP = pd.Timedelta(hours=24)
HISTORY = pd.Timedelta(days=28)
EVERY = pd.Timedelta(minutes=30)


def polled(traffic, store, start: pd.Timestamp, polls: int) -> list[dict]:
    """The alerts of ``polls`` polls every `EVERY` from ``start``."""
    alerts = Alerts()
    for n in range(polls):
        at = start + n * EVERY
        found = find_incidents(traffic.window(at - KEEP, at)[0], baseline=store)
        alerts.evaluate(found, at.to_pydatetime())
    return alerts.frame.to_dict("records")


def test_a_quiet_night_and_a_monday_morning_fire_nothing(tmp_path):
    now = pd.Timestamp("2026-11-01T12:00:00Z")
    traffic = shaped_traffic(2, now, incidents=False)
    start = pd.Timestamp("2026-10-25T20:00:00Z")  # Sunday evening to Monday afternoon, UTC
    store = traffic.write_store(tmp_path / "store", start - KEEP - HISTORY, start - KEEP)
    assert polled(traffic, store, start, 37) == []


def test_an_outage_fires_within_two_polls(tmp_path):
    now = pd.Timestamp("2026-03-18T03:30:00Z")
    traffic = shaped_traffic(1, now)
    outage = next(i for i in traffic.planted if i["kind"] == "provider_outage")
    start = outage["start"] - 2 * EVERY
    store = traffic.write_store(tmp_path / "store", start - KEEP - HISTORY, start - KEEP)
    alerts = polled(traffic, store, start, 5)  # two before the outage, three after its start
    # (the SMS failover five days before is still a shift against these weeks, and fires too)
    mine = [a for a in alerts if a["provider_id"] == outage["provider_id"]]
    assert [(a["state"], a["kind"]) for a in mine] == [("firing", "provider_outage")]
    assert outage["start"] < mine[0]["at"] <= outage["start"] + 2 * EVERY
