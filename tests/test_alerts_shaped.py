"""Alerts on traffic shaped like a real product's (`toolkit.sandbox.seed.shaped`), polled as a
Monitor with a store polls: `find_incidents` on its day-long window, the store's weeks before
it as the baseline. A quiet night and a Monday morning's batch and digest fire nothing; a
public holiday fires once (and resolves once its day reads as the week's off days); an outage fires within two polls. (`benchmarks/accuracy_alerts.py` measures it over weeks.)"""

from __future__ import annotations

import pandas as pd

from toolkit.alerts import Alerts
from toolkit.incidents import find_incidents
from toolkit.sandbox.seed.shaped import shaped_traffic

KEEP = pd.Timedelta(hours=24)
HISTORY = pd.Timedelta(days=28)
EVERY = pd.Timedelta(minutes=30)


def polled(traffic, store, start: pd.Timestamp, polls: int, every=EVERY) -> list[dict]:
    """The alerts of ``polls`` polls every ``every`` from ``start``."""
    alerts = Alerts()
    for n in range(polls):
        at = start + n * every
        found = find_incidents(traffic.window(at - KEEP, at)[0], baseline=store)
        alerts.evaluate(found, at.to_pydatetime())
    return alerts.frame.to_dict("records")


def test_a_quiet_night_and_a_monday_morning_fire_nothing(tmp_path):
    now = pd.Timestamp("2026-11-01T12:00:00Z")
    traffic = shaped_traffic(2, now, incidents=False)
    start = pd.Timestamp("2026-10-25T20:00:00Z")  # Sunday evening to Monday afternoon, UTC
    store = traffic.write_store(tmp_path / "store", start - KEEP - HISTORY, start - KEEP)
    assert polled(traffic, store, start, 37) == []


def test_a_public_holiday_fires_one_alert(tmp_path):
    # every workflow people trigger sends less, the office's chat none: one cause, one alert
    now, holiday = pd.Timestamp("2026-11-01T12:00:00Z"), pd.Timestamp("2026-10-28")
    traffic = shaped_traffic(1, now, incidents=False, holidays=[holiday])
    start = pd.Timestamp("2026-10-27T18:00:00Z")
    store = traffic.write_store(tmp_path / "store", start - KEEP - HISTORY, start - KEEP)
    alerts = polled(traffic, store, start, 36, pd.Timedelta(hours=1))  # to Oct 29 05:00 UTC
    # the office's silence is seen first; the workflows that join it later are the same alert,
    # resolved once the whole day reads as the week's off days (set aside, no row)
    assert [(a["state"], a["kind"], a["channel"]) for a in alerts] == [
        ("firing", "volume_drop", None),
        ("resolved", "volume_drop", None),
    ], alerts
    assert alerts[1]["at"] > holiday.tz_localize("UTC") + pd.Timedelta(days=1)


def test_the_day_after_a_holiday_fires_nothing(tmp_path):
    # the holiday's evening drop of email (a few percent below its day's lowered level) ended
    # at 02:00: the next afternoon's sends show it stopped
    now, holiday = pd.Timestamp("2026-11-01T12:00:00Z"), pd.Timestamp("2026-10-27")
    traffic = shaped_traffic(1, now, incidents=False, holidays=[holiday])
    start = pd.Timestamp("2026-10-28T16:00:00Z")
    store = traffic.write_store(tmp_path / "store", start - KEEP - HISTORY, start - KEEP)
    assert polled(traffic, store, start, 3) == []


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


def test_a_workflow_that_stops_fires_on_polls_off_the_hour(tmp_path):
    # a Monitor started at 17:45 polls at a quarter past and a quarter to: the last hour of
    # its window is partial, and the drop running to the hour before it is still going on
    now = pd.Timestamp("2026-07-04T18:45:00Z")
    traffic = shaped_traffic(1, now)
    stop = next(i for i in traffic.planted if i["kind"] == "volume_drop" and i["workflow"])
    start = stop["start"].ceil("15min")
    assert start.minute in (15, 45)
    store = traffic.write_store(tmp_path / "store", start - KEEP - HISTORY, start - KEEP)
    alerts = polled(traffic, store, start, 8)
    mine = [a for a in alerts if a["workflow"] == stop["workflow"]]
    assert [(a["state"], a["kind"]) for a in mine] == [("firing", "volume_drop")], alerts
    assert stop["start"] < mine[0]["at"] < stop["end"]


def test_each_workflow_s_own_row_is_its_own_alert():
    # seed 3: a runaway loop re-triggers a workflow (a spike, no channel or provider of its
    # own), and ten days later, while its alert still fires, another workflow stops
    now = pd.Timestamp("2026-11-01T12:00:00Z")
    traffic = shaped_traffic(3, now)
    alerts = Alerts(resolve_after=1000)
    for at in (pd.Timestamp("2026-10-20T00:00:00Z"), pd.Timestamp("2026-10-30T11:00:00Z")):
        after = at - KEEP
        found = find_incidents(traffic.window(after, at)[0],
                               baseline=traffic.window(after - HISTORY, after)[0])  # fmt: skip
        alerts.evaluate(found, at.to_pydatetime())
    loop, stop = (next(i for i in traffic.planted if i["kind"] == kind and i["workflow"])
                  for kind in ("volume_spike", "volume_drop"))  # fmt: skip
    workflows = alerts.frame.dropna(subset=["workflow"])
    assert workflows[["kind", "workflow"]].values.tolist() == [
        ["volume_spike", loop["workflow"]],
        ["volume_drop", stop["workflow"]],
    ]
    assert workflows["channel"].isna().all() and workflows["provider_id"].isna().all()
