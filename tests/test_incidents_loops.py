"""Runaway loops found by their recipients (`toolkit.incidents.loops`), on shaped traffic."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.test_counts import spark, spark_missing  # noqa: F401 (the Spark session fixture)
from tests.test_incidents_season import HISTORY, HOUR, NOW, looped
from toolkit import metrics, open_store
from toolkit.counts import recipient_counts, recipient_peaks
from toolkit.incidents import find_incidents, loops
from toolkit.sandbox.seed.shaped import shaped_traffic

START = pd.Timestamp("2026-10-28T14:20:00Z")  # a Wednesday afternoon


@pytest.fixture(scope="module")
def week():
    """A quiet week of shaped traffic, its four weeks before, and the workflow triggering in
    the most minutes."""
    traffic, after = shaped_traffic(2, NOW, incidents=False), NOW - pd.Timedelta(days=7)
    activity, history = traffic.window(after, NOW)[0], traffic.window(after - HISTORY, after)[0]
    notes = activity.notifications
    minutes = notes["created_at"].dt.floor("min").groupby(notes["workflow_identifier"])
    return activity, history, minutes.nunique().idxmax()


def _hour(activity, workflow) -> int:
    notes = activity.notifications
    mine = notes["workflow_identifier"].eq(workflow)
    return int((mine & notes["created_at"].between(START, START + HOUR)).sum())


def test_a_loop_its_workflows_count_hides_is_found_by_its_people(week):
    # three people get as many more notifications as the workflow's hour usually sends:
    # too few more for its count (the scan wants two of its busiest hours more); but each of
    # them gets far more in that hour than anyone ever got from it
    activity, history, workflow = week
    count = _hour(activity, workflow)
    people = activity.notifications.drop_duplicates("subscriber_id").iloc[:3]
    found = find_incidents(looped(activity, workflow, START, count, people), baseline=history)
    spikes = found[found["kind"].eq("volume_spike")]
    assert len(spikes) == 1 and len(found) == 1, list(found["summary"])
    row = spikes.iloc[0]
    assert row["workflows"] == [workflow] and row["subscribers"] == 3
    assert abs(row["notifications"] / count - 1) < 0.2, row["summary"]
    assert START - HOUR < row["started_at"] < START + pd.Timedelta("5min")
    assert START + pd.Timedelta("55min") < row["ended_at"] < START + 2 * HOUR
    assert "3 people" in row["summary"] and "a loop re-sending" in row["summary"]


def test_a_crowd_getting_one_each_is_no_loop(week):
    # as many more notifications, each to someone else (a campaign's): no one's peak moves
    activity, history, workflow = week
    count = _hour(activity, workflow)
    people = activity.notifications.drop_duplicates("subscriber_id")
    crowd = looped(activity, workflow, START, count, people, once=True)
    found = find_incidents(crowd, baseline=history, kinds=["volume_spike"])
    assert not found["summary"].str.contains("loop").any(), list(found["summary"])


def test_a_loop_the_count_found_is_one_row_that_counts_what_the_loop_sent(week):
    # five times the hour's usual to five people: the count's spike and the loop are one row,
    # the loop's (what its people got, not the workflow's departure from its season)
    activity, history, workflow = week
    count = 5 * _hour(activity, workflow)
    people = activity.notifications.drop_duplicates("subscriber_id").iloc[:5]
    found = find_incidents(looped(activity, workflow, START, count, people), baseline=history)
    spikes = found[found["kind"].eq("volume_spike")]
    assert len(spikes) == 1, list(found["summary"])
    assert spikes.iloc[0]["subscribers"] == 5 and "a loop" in spikes.iloc[0]["summary"]
    assert abs(spikes.iloc[0]["notifications"] / count - 1) < 0.2


def test_the_tail_of_hourly_peaks_falls_through_its_percentiles_and_no_faster_than_fall():
    # 1000 hours: 900 peak at 2, 90 at 4, 10 at 6: shares 1001/1001 at 2, 101/1001 at 4
    peaks = np.r_[np.full(900, 2.0), np.full(90, 4.0), np.full(10, 6.0)]
    assert list(np.quantile(peaks, loops.TAIL, method="higher")) == [4.0, 6.0]
    at_six, fall = 11 / 1001, np.sqrt(101 / 11)  # per notification, from 4 to 6
    p = loops.tail_p(peaks, np.array([6.0, 8.0, 20.0]))
    assert np.allclose(p, at_six * fall ** -np.array([0.0, 2.0, 14.0]))
    # every hour peaks at one: two is no more likely than the hours say, then ten times less each
    flat = loops.tail_p(np.ones(999), np.array([2.0, 5.0]))
    assert np.allclose(flat, [1 / 1000, 1 / 1000 * loops.FALL**-3])


@pytest.mark.parametrize("engine", ["duckdb", pytest.param("spark", marks=spark_missing)])
def test_recipient_peaks_and_counts_alike_in_a_store(week, engine, tmp_path, request):
    if engine == "spark":
        engine = request.getfixturevalue("spark")
    activity, _, workflow = week
    after, before = NOW - pd.Timedelta(days=2), NOW
    window = shaped_traffic(2, NOW, incidents=False)
    window.write_store(tmp_path / "store", after, before)
    store = open_store(tmp_path / "store", engine=engine)
    given = window.window(after, before)[0]
    peaks = recipient_peaks(given)
    pd.testing.assert_frame_equal(recipient_peaks(store, after=after, before=before), peaks)
    # by hand: the most notifications one subscriber got from the workflow in each hour
    jobs = metrics.delivery_jobs(given).drop_duplicates("notification_id")
    jobs = jobs[jobs["workflow"].eq(workflow)]
    per = jobs.groupby([jobs["triggered_at"].dt.floor("h"), "subscriber_id"], observed=True).size()
    mine = peaks[peaks["workflow"].eq(workflow)]
    assert mine["most"].tolist() == per.groupby(level=0).max().tolist()
    counted = recipient_counts(given, groups=[{"workflow": workflow}], least=3)
    assert sorted(counted["notifications"]) == sorted(per[per >= 3])
    stored = recipient_counts(store, after=after, before=before, groups=[{"workflow": workflow}],
                              least=3)  # fmt: skip
    columns = ["bucket", "workflow", "subscriber_id", "notifications", "jobs"]
    pd.testing.assert_frame_equal(stored[columns], counted[columns])
