"""Two weeks read alone (no ``baseline=``): each week is the other's history, so an incident in
one week is an opposite departure of the other; a volume row is kept only when its own week is
the one that departs, judged against the window's other days (`toolkit.incidents.volume`)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from toolkit import open_store
from toolkit.incidents import find_incidents, season, volume
from toolkit.sandbox.seed.shaped import shaped_traffic

NOW = pd.Timestamp("2026-11-01T12:00:00Z")
VOLUME = ["volume_drop", "volume_spike", "traffic_shift"]


def alone(traffic, now=NOW, days=14):
    activity, planted = traffic.window(now - pd.Timedelta(days=days), now)
    return planted, find_incidents(activity)


def overlaps(row, incident) -> bool:
    return row["started_at"] <= incident["end"] and row["ended_at"] >= incident["start"]


@pytest.fixture(scope="module")
def traffic():
    return shaped_traffic(3, NOW)


@pytest.fixture(scope="module")
def two_weeks(traffic):
    return alone(traffic)


def test_a_stopped_workflow_and_a_runaway_are_found_and_nothing_else_of_volume(two_weeks):
    planted, found = two_weeks
    assert "other week" in found.attrs["baseline"] and "other days" in found.attrs["baseline"]
    stop = next(i for i in planted if i["kind"] == "volume_drop")
    runaway = next(i for i in planted if i["kind"] == "volume_spike")
    campaign = next(i for i in planted if i["kind"] == "campaign")
    rows = found[found["kind"].isin(VOLUME)]
    drops = rows[rows["kind"].eq("volume_drop")]
    assert len(drops) == 1, list(rows["summary"])
    drop = drops.iloc[0]
    assert drop["workflows"][0] == stop["workflow"] and overlaps(drop, stop)
    assert abs(drop["notifications"] - stop["notifications"]) <= 0.2 * stop["notifications"]
    spikes = rows[rows["kind"].eq("volume_spike")]
    assert any(row["workflows"][0] == runaway["workflow"] and overlaps(row, runaway)
               for _, row in spikes.iterrows())  # fmt: skip
    # besides: at most the campaign's one spike (it is unusual), no mirror of either week
    others = [row for _, row in spikes.iterrows() if not overlaps(row, runaway)]
    said = list(rows["summary"])
    assert all(overlaps(row, campaign) for row in others) and len(others) <= 1, said


def test_a_failover_in_the_second_week_is_one_shift_not_its_mirror_in_the_first(two_weeks):
    # the week before the failover is a "spike" of the old provider against the second week:
    # the old provider's own days say it was as busy as ever then
    planted, found = two_weeks
    failover = next(i for i in planted if i["kind"] == "failover")
    sms = found[found["channel"].eq("sms").fillna(False) & found["kind"].isin(VOLUME)]
    assert list(sms["kind"]) == ["traffic_shift"], list(sms["summary"])
    assert sms.iloc[0]["providers"] == [failover["provider_id"], failover["to"]]
    assert sms.iloc[0]["started_at"] >= failover["start"] - pd.Timedelta("1h")


def test_a_store_of_the_two_weeks_finds_the_same_rows(traffic, two_weeks, tmp_path):
    after = NOW - pd.Timedelta(days=14)
    traffic.write_store(tmp_path / "store", after, NOW)
    found = find_incidents(open_store(tmp_path / "store"), after=after, before=NOW)
    columns = ["kind", "channel", "provider_id", "started_at", "ended_at", "notifications"]
    seconds = {
        "started_at": lambda f: f["started_at"].dt.floor("s"),
        "ended_at": lambda f: f["ended_at"].dt.floor("s"),
    }  # a store keeps microseconds
    pd.testing.assert_frame_equal(found[columns].assign(**seconds),
                                  two_weeks[1][columns].assign(**seconds))  # fmt: skip
    assert found.attrs["baseline"] == two_weeks[1].attrs["baseline"]


@pytest.mark.parametrize("seed", [2, 4])
def test_two_quiet_weeks_have_no_rows(seed):
    found = alone(shaped_traffic(seed, NOW, incidents=False))[1]
    assert found.empty, list(found["summary"])
    assert "other week" in found.attrs["baseline"]


def test_a_drop_on_a_sunday_night_is_not_a_spike_of_the_sunday_before():
    # the drop's hours run from a quiet Sunday into a busy Monday: against the other days
    # (weekdays mostly) the Sunday before looks busy, but the Sunday of the drop departs more
    now = pd.Timestamp("2026-03-18T03:30:00Z")
    planted, found = alone(shaped_traffic(3, now), now)
    stop = next(i for i in planted if i["kind"] == "volume_drop")
    rows = found[found["kind"].isin(VOLUME)]
    its = [row["kind"] for _, row in rows.iterrows() if row["workflows"][0] == stop["workflow"]]
    assert its == ["volume_drop"], list(rows["summary"])


def _season(counts: np.ndarray) -> season.Season:
    """A two-week season of one cell's hourly ``counts`` (336 hours from a Monday)."""
    hours = pd.date_range("2026-10-05", periods=len(counts), freq="h", tz="UTC")
    frame = pd.DataFrame({"bucket": hours, "channel": "email", "provider_id": "ses",
                          "workflow": "digest", "jobs": counts})  # fmt: skip
    built = season.build(lambda: frame, hours[0], hours[-1] + season.HOUR)
    assert built.confirm
    return built


def _weeks_of_rhythm(seed: int) -> np.ndarray:
    """Two weeks of hourly counts: busy days, quiet nights, weekends at a third."""
    hour = np.arange(2 * season.WEEK)
    day = np.where((hour // 24) % 7 >= 5, 1 / 3, 1.0)
    return np.random.default_rng(seed).poisson(day * np.where(hour % 24 >= 8, 60, 8)).astype(float)


def _row(kind: str, first: int, stop: int) -> dict:
    return {"kind": kind, "cells": np.array([0]), "first": first, "stop": stop}


def test_a_departure_is_its_own_weeks_not_the_mirror_of_the_other():
    counts = _weeks_of_rhythm(1)
    saturday = 5 * 24 + 10  # Saturday 10:00 of the first week, six hours silent
    counts[saturday : saturday + 6] = 0
    built = _season(counts)
    assert volume.confirmed(built, _row("volume_drop", saturday, saturday + 6), 0.01)
    # the second week's same hours: a "spike" against the first week's silence, not its own
    mirror = saturday + season.WEEK
    assert not volume.confirmed(built, _row("volume_spike", mirror, mirror + 6), 0.01)
    # a Saturday at its usual third is no drop against the weekdays: its level is its own day's
    assert not volume.confirmed(built, _row("volume_drop", mirror, mirror + 6), 0.01)


def test_a_one_off_burst_in_two_weeks_does_not_hide_in_their_dispersion():
    counts = _weeks_of_rhythm(2)
    a = season.dispersion(counts.reshape(1, 2, season.WEEK))[0, 0]
    counts[3 * 24 + 14 : 3 * 24 + 16] += 150  # a runaway of two hours in the first week
    burst = season.dispersion(counts.reshape(1, 2, season.WEEK))[0, 0]
    # a count against one other week's varies twice a Poisson count's: about 2, burst or not
    assert 1.5 <= a <= 2.5 and 1.5 <= burst <= 2.5


def test_a_spike_before_the_first_whole_week_is_weighed_against_every_week():
    # a window read alone begins 30 hours before its first whole week: a spike there is in
    # none of the weeks, so none is left out of its history (the last one was)
    hours = pd.date_range("2026-10-01", periods=2 * season.WEEK + 30, freq="h", tz="UTC")
    weekly = np.zeros((1, 2, season.WEEK))
    weekly[0, 1, 5] = 40  # the second week's busiest hour
    observed = np.zeros((1, len(hours)))
    observed[0, 3] = 60  # before the first whole week: less than twice 40
    built = season.Season([("email", "p1", "flow")], hours, np.ones(len(hours), bool), observed,
                          np.zeros((1, len(hours))), weekly, "its own weeks", 2, hours[0],
                          hours[-1], own=30, confirm=True)  # fmt: skip
    row = {"cells": np.array([0]), "first": 3, "stop": 4}
    assert not volume._larger_than_any(built, row)
    observed[0, 3] = 81
    assert volume._larger_than_any(built, row)


def test_a_silence_in_a_group_that_dropped_elsewhere_is_tested_as_a_silence_too():
    # seed 5: push stops for five hours on Feb 28, 20 days read alone; push's best drop is
    # elsewhere (a workflow of it stopped later), so the stop is its second round's pick,
    # which is tested as the silence it is, not by the count's law alone
    now = pd.Timestamp("2026-03-18T03:30:00Z")
    planted, found = alone(shaped_traffic(5, now), now, days=20)
    (stop,) = [p for p in planted if p["kind"] == "volume_drop" and p["channel"] == "push"]
    drops = found[found["kind"].eq("volume_drop") & found["channel"].eq("push")]
    assert len(drops) == 1 and overlaps(drops.iloc[0], stop), list(found["summary"])
    assert abs(drops["notifications"].iloc[0] / stop["notifications"] - 1) <= 0.2
