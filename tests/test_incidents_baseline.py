"""The seasonal baseline's bad input: a store with gaps in its history, a baseline from another
environment, a baseline that does not overlap the activity's groups."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from toolkit import delivery_counts
from toolkit.errors import ParameterError
from toolkit.frames import Activity
from toolkit.incidents import find_incidents, season
from toolkit.sandbox.seed.shaped import shaped_traffic
from toolkit.store import layout

NOW = pd.Timestamp("2026-11-01T12:00:00Z")
AFTER = NOW - pd.Timedelta(days=1)
HISTORY = pd.Timedelta(days=28)


@pytest.fixture(scope="module")
def traffic():
    return shaped_traffic(3, NOW, days=30)


def test_a_store_without_gaps_is_a_baseline_of_four_weeks(traffic, tmp_path):
    store = traffic.write_store(tmp_path / "store", AFTER - HISTORY, AFTER)
    activity, _ = traffic.window(AFTER, NOW)
    found = find_incidents(activity, baseline=store)
    counts, rates = found.attrs["baseline"].split("; ")  # volume's, then failure rates'
    assert counts.endswith("the 4 weeks of baseline=")
    assert rates.startswith("flat failure rates (the window spans fewer than 3 weeks")
    history, _ = traffic.window(AFTER - HISTORY, AFTER)
    same = find_incidents(activity, baseline=history)
    volume = lambda frame: frame[frame["kind"].str.startswith(("volume", "traffic"))]  # noqa: E731
    assert list(volume(found)["summary"]) == list(volume(same)["summary"])


def test_days_a_store_never_synced_are_left_out_not_read_as_zeros(traffic, tmp_path):
    gap = (AFTER - pd.Timedelta(days=10)).strftime("%Y-%m-%d")
    store = traffic.write_store(tmp_path / "store", AFTER - HISTORY, AFTER, skip={gap})
    assert gap not in layout.days_held(store.path)
    activity, _ = traffic.window(AFTER, NOW)
    found = find_incidents(activity, baseline=store)
    assert (
        "3 weeks of baseline= (1 with hours the baseline does not hold" in found.attrs["baseline"]
    )
    # the same counts with the gap read as zeros: a season of four weeks, one of them too quiet
    counts = delivery_counts(store, after=AFTER - HISTORY, before=AFTER, by=season.CELL)
    counts.attrs.update(after=(AFTER - HISTORY).isoformat(), before=AFTER.isoformat())
    zeros = season.build(lambda: delivery_counts(activity, by=season.CELL), AFTER, NOW, counts,
                         (AFTER - HISTORY, AFTER))  # fmt: skip
    kept = season.build(lambda: delivery_counts(activity, by=season.CELL), AFTER, NOW, counts,
                        (AFTER - HISTORY, AFTER), season.missing_days(layout.days_held(store.path), AFTER - HISTORY, AFTER))  # fmt: skip
    assert zeros.reference.shape[1] == 4 and kept.reference.shape[1] == 3
    silent = lambda built: np.convolve(built.reference.sum(0).ravel() == 0, np.ones(24)).max()  # noqa: E731
    assert silent(zeros) == 24 and silent(kept) < 24  # a day of zeros, read as a quiet day


def test_a_store_with_gaps_in_two_weeks_falls_back_and_says_so(traffic, tmp_path):
    skip = {(AFTER - pd.Timedelta(days=d)).strftime("%Y-%m-%d") for d in (3, 12)}
    store = traffic.write_store(tmp_path / "store", AFTER - HISTORY, AFTER, skip=skip)
    activity, _ = traffic.window(AFTER, NOW)
    found = find_incidents(activity, baseline=store)
    # a day alone cannot tell the hour of the day's rhythm: the rest of it is no baseline either
    said = found.attrs["baseline"]
    assert said.startswith("volume not compared: no seasonal baseline (the baseline has 2 whole")
    assert "less than two days" in said and "pass baseline= the 3 weeks or more" in said


def with_environment(activity, environment):
    notes = activity.notifications.assign(environment_id=environment)
    notes.attrs = activity.notifications.attrs
    return Activity(notes, activity.jobs, activity.execution_details)


@pytest.mark.parametrize("days", [14, 28])
def test_a_day_missing_from_a_stores_window_is_no_drop(days, tmp_path):
    # quiet traffic: the day the store never synced is not read as a day without sends
    after = NOW - pd.Timedelta(days=days)
    store = shaped_traffic(2, NOW, incidents=False).write_store(
        tmp_path / "store", after, NOW, skip={"2026-10-28"}
    )
    found = find_incidents(store, after=after, before=NOW)
    assert found.empty, list(found["summary"])
    said = found.attrs["baseline"]
    assert "1 day its source does not hold left out" in said
    # the week with the day is no week of history: two weeks are one, four three
    assert ("fewer than 2 whole weeks" if days == 14 else "the window's other 2 weeks") in said


def test_a_baseline_from_another_environment_is_refused(traffic):
    activity, _ = traffic.window(AFTER, NOW)
    history, _ = traffic.window(AFTER - HISTORY, AFTER)
    production = with_environment(activity, "env-production")
    with pytest.raises(ParameterError, match=r"environment\(s\) \['env-staging'\]") as error:
        find_incidents(production, baseline=with_environment(history, "env-staging"))
    assert error.value.name == "baseline"
    found = find_incidents(production, baseline=with_environment(history, "env-production"))
    assert "4 weeks of baseline=" in found.attrs["baseline"]


def test_a_baseline_activity_of_other_groups_is_refused(traffic):
    activity, _ = traffic.window(AFTER, NOW)
    history, _ = traffic.window(AFTER - HISTORY, AFTER)
    jobs = history.jobs.assign(provider_id="elsewhere-" + history.jobs["provider_id"].astype(str))
    other = Activity(history.notifications, jobs, history.execution_details)
    with pytest.raises(ParameterError, match="same service"):
        find_incidents(activity, baseline=other)


@pytest.mark.parametrize("source", ["activity", "store"])
def test_a_window_reaching_before_the_services_history_is_no_drop_nor_spike(source, tmp_path):
    # a service of 15 days read over 30: its first 15 days are no history, not two weeks of
    # silence that make every week since a spike
    traffic = shaped_traffic(2, NOW, days=30, incidents=False)
    begins, after = NOW - pd.Timedelta(days=15), NOW - pd.Timedelta(days=30)
    if source == "store":
        unsynced = pd.date_range(after.floor("D"), begins, freq="D", inclusive="left")
        read = traffic.write_store(
            tmp_path / "store", after, NOW, skip=set(unsynced.strftime("%Y-%m-%d"))
        )
    else:
        read, _ = traffic.window(begins, NOW)
        read.notifications.attrs["after"] = after.isoformat()  # a read of "30d"
    found = find_incidents(read, after=after, before=NOW)
    assert found.empty, list(found["summary"])
    said = found.attrs["baseline"]
    assert "fewer than 3 weeks with jobs" in said  # failure rates: two weeks, not four
    if source == "activity":
        assert (
            said.startswith("no jobs before Oct 17 12:00 UTC, 15 days into")
            and "not as silence" in said
        )


def test_a_window_starting_silent_after_a_baseline_that_sent_is_a_drop():
    # the baseline shows the service sending before the window: two days of nothing at its
    # start are the service down, not before its history
    traffic = shaped_traffic(2, NOW, days=42, incidents=False)
    after = NOW - pd.Timedelta(days=7)
    read, _ = traffic.window(after + pd.Timedelta(days=2), NOW)
    read.notifications.attrs["after"] = after.isoformat()
    found = find_incidents(read, baseline=traffic.window(after - HISTORY, after)[0])
    assert found["kind"].eq("volume_drop").any(), list(found["summary"])
    assert found["started_at"].min() < after + pd.Timedelta(hours=2)
    assert "not as silence" not in found.attrs["baseline"]


def test_a_service_silent_at_night_or_on_weekends_has_its_history_from_the_start():
    hours = pd.date_range("2026-11-07", periods=24 * 21, freq="h", tz="UTC")  # from a Saturday
    office = (hours.day_of_week < 5) & (hours.hour >= 8) & (hours.hour < 18)
    counts = pd.DataFrame({"bucket": hours, "jobs": np.where(office, 10, 0)})
    # two days of nothing at the start, as every weekend after: the service's weekend
    assert season.no_history(counts, hours[0], hours[-1]) == []
    late = counts.assign(jobs=np.where(hours >= hours[0] + pd.Timedelta(days=9), counts["jobs"], 0))
    # nine days of nothing, longer than any silence after: the service began then
    first = hours[0] + pd.Timedelta(days=9, hours=8)  # its first job: Monday 08:00
    assert season.no_history(late, hours[0], hours[-1]) == [(hours[0], first + pd.Timedelta("1h"))]
