"""find_incidents on traffic shaped like a real product's (`toolkit.sandbox.seed.shaped`): the
seasonal baseline, volume both ways, failovers, one row per cause, and the fallback."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from tests.test_counts import spark, spark_missing  # noqa: F401 (the Spark session fixture)
from toolkit import delivery_counts, metrics, open_store
from toolkit.counts import occasion_counts
from toolkit.errors import ParameterError
from toolkit.frames import Activity
from toolkit.incidents import detect, find_incidents, scan, season, volume
from toolkit.incidents.cli import print_incidents
from toolkit.sandbox.seed.shaped import Traffic, shaped_traffic
from toolkit.words import provider_name

NOW = pd.Timestamp("2026-11-01T12:00:00Z")
HISTORY = pd.Timedelta(days=28)
HOUR = pd.Timedelta(hours=1)


def read(traffic, days: int, *, baseline: bool = True, now: pd.Timestamp = NOW):
    """The window of ``days`` ending at ``now``, its planted incidents, and its incidents found
    with the four weeks before it as ``baseline=`` (a 28-day window: its own weeks)."""
    after = now - pd.Timedelta(days=days)
    activity, planted = traffic.window(after, now)
    base = traffic.window(after - HISTORY, after)[0] if baseline and days < 28 else None
    return activity, planted, find_incidents(activity, baseline=base)


@pytest.fixture(scope="module")
def shaped():
    return shaped_traffic(3, NOW)


@pytest.fixture(scope="module")
def week(shaped):
    return read(shaped, 7)


def planted_of(planted, kind):
    return next(incident for incident in planted if incident["kind"] == kind)


@pytest.mark.parametrize("days", [1, 7, 28])
def test_rhythm_batches_and_bursts_are_not_incidents(days):
    quiet = shaped_traffic(2, NOW, incidents=False)
    found = read(quiet, days)[2]
    assert found.empty, list(found["summary"])
    assert "same hour of the week" in found.attrs["baseline"]


def test_a_groups_usual_bursts_are_not_a_spike():
    # seed 3's four weeks: a small workflow's fan-outs bunched in one afternoon, more than a
    # quasi-Poisson law allows, no more than the same workflow's bursts in its other weeks
    found = read(shaped_traffic(3, NOW, incidents=False), 28)[2]
    assert found.empty, list(found["summary"])


def test_a_workflow_that_stops_is_one_volume_drop_with_what_is_missing(week):
    _, planted, found = week
    stop = next(i for i in planted if i["kind"] == "volume_drop" and i["workflow"])
    drops = found[found["kind"].eq("volume_drop")]
    assert len(drops) == 1
    row = drops.iloc[0]
    assert row["workflows"][0] == stop["workflow"] and pd.isna(row["channel"])
    assert row["started_at"] <= stop["end"] and row["ended_at"] >= stop["start"]
    assert abs(row["notifications"] - stop["notifications"]) <= 0.2 * stop["notifications"]
    assert isinstance(found.attrs["checked"]["tests"], int)  # periods, as people count them


@pytest.mark.parametrize("days", [3, 7])
def test_a_public_holiday_is_one_row_naming_the_workflows_it_quietened(days):
    # a weekday at weekend level, office hours closed: each workflow people trigger sends less,
    # one cause; the batch, digest and newsletter go out as usual
    holiday = pd.Timestamp("2026-10-30")
    found = read(shaped_traffic(1, NOW, incidents=False, holidays=[holiday]), days)[2]
    assert list(found["kind"]) == ["volume_drop"], list(found["summary"])
    row = found.iloc[0]
    assert pd.isna(row["channel"]) and pd.isna(row["provider_id"])
    assert len(row["workflows"]) >= 3
    assert row["started_at"] < holiday.tz_localize("UTC") + pd.Timedelta(days=1)
    assert row["ended_at"] > holiday.tz_localize("UTC")
    # its workflows named, the most missing first (a weaker one may be only in ``workflows``)
    assert row["summary"].startswith(f"Workflows {row['workflows'][0]}")
    assert row["notifications_low"] < row["notifications"] < row["notifications_high"]
    if days == 7:  # a push provider's drop that day, of workflows with no row: one of them
        assert (
            len(row["providers"]) == 1
            and f"with {provider_name(row['providers'][0])} push" in row["summary"]
        )


@pytest.mark.parametrize("days", [7, 28])
def test_a_sale_day_is_one_spike_row_naming_the_workflows_it_lifted(days):
    # people use the product three times as much that day: each workflow they trigger sends
    # more, one cause
    sale = pd.Timestamp("2026-10-29", tz="UTC")
    found = read(shaped_traffic(1, NOW, incidents=False, sales=[sale]), days)[2]
    assert list(found["kind"]) == ["volume_spike"], list(found["summary"])
    row = found.iloc[0]
    assert pd.isna(row["channel"]) and pd.isna(row["provider_id"])
    assert len(row["workflows"]) >= 3
    assert sale <= row["started_at"] < row["ended_at"] <= sale + pd.Timedelta(days=2)
    assert row["summary"].startswith(f"Workflows {row['workflows'][0]}, ")


def test_a_drop_is_ongoing_until_the_hours_after_it_show_its_group_sending_again():
    # the office's chat workflow sends nothing from 13:00 UTC on a Thursday to the end of the
    # day: at 23:00 the office has been closed since 18:00, and nothing expected since can
    # show that it is back; the next day's office hours do
    traffic = shaped_traffic(1, NOW, incidents=False)
    notes, jobs = traffic.notifications, traffic.jobs
    office = notes["notification_id"].isin(jobs.loc[jobs["type"].eq("chat"), "notification_id"])
    workflow = notes.loc[office, "workflow_identifier"].iloc[0]
    stopped = notes["notification_id"][
        notes["workflow_identifier"].eq(workflow).to_numpy()
        & notes["created_at"].between("2026-10-29T13:00:00Z", "2026-10-30T00:00:00Z").to_numpy()
    ]
    traffic = Traffic(*(frame[~frame["notification_id"].isin(stopped)].reset_index(drop=True)
                        for frame in (notes, jobs)),
                      traffic.execution_details[~traffic.execution_details["job_id"].isin(
                          jobs.loc[jobs["notification_id"].isin(stopped), "job_id"])])  # fmt: skip
    ongoing = []
    for end in ("2026-10-29T23:00:00Z", "2026-10-30T12:00:00Z"):
        after = pd.Timestamp(end) - pd.Timedelta(days=1)
        found = find_incidents(traffic.window(after, end)[0],
                               baseline=traffic.window(after - HISTORY, after)[0])  # fmt: skip
        assert list(found["workflows"].str[0]) == [workflow], list(found["summary"])
        ongoing.append(bool(found["ongoing"].iloc[0]))
    assert ongoing == [True, False]


def test_a_failover_is_one_traffic_shift_naming_both_providers(week):
    _, planted, found = week
    failover = planted_of(planted, "failover")
    shifts = found[found["kind"].eq("traffic_shift")]
    assert len(shifts) == 1
    assert shifts.iloc[0]["providers"] == [failover["provider_id"], failover["to"]]
    sms = found[found["channel"].eq("sms").fillna(False)]
    assert set(sms["kind"]) == {"traffic_shift"}  # never a drop and a spike


def test_a_shift_names_the_workflows_that_moved(shaped):
    # a day after the move: the provider it left sent nothing in the window
    activity, planted, found = read(shaped, 1)
    failover = planted_of(planted, "failover")
    assert failover["start"] < NOW - pd.Timedelta(days=1)
    moved = activity.jobs.loc[activity.jobs["provider_id"].eq(failover["to"]), "notification_id"]
    notes = activity.notifications
    flows = notes.loc[notes["notification_id"].isin(moved), "workflow_identifier"].unique()
    shift = found[found["kind"].eq("traffic_shift")].iloc[0]
    assert shift["workflows"] == sorted(flows), shift["summary"]
    # what moved: what the provider it moved to sent (it sent none before), not the other's
    # shortfall against its expected count (99 where 80 moved: the day ran busier)
    sent = activity.jobs["first_execution_at"].between(shift["started_at"], shift["ended_at"])
    carried = activity.jobs.loc[sent, "notification_id"].isin(moved).sum()
    assert abs(shift["notifications"] - carried) <= 0.02 * carried + 1, shift["summary"]


@pytest.mark.parametrize("hours", [1, 2])
def test_a_failover_polled_in_its_first_hours_is_one_ongoing_shift(hours, tmp_path):
    # what a Monitor with a store sees an hour or two after the move: seed 1's SMS moved
    # mid-hour on an evening busier than usual, so the new provider's first hours held more
    # than twice the old one's missing jobs; the hour the traffic moved in holds both
    now = pd.Timestamp("2026-03-18T03:30:00Z")
    traffic = shaped_traffic(1, now)
    failover = next(i for i in traffic.planted if i["kind"] == "failover")
    at = failover["start"].ceil("h") + pd.Timedelta(hours=hours)
    after = at - pd.Timedelta(hours=24)
    store = traffic.write_store(tmp_path / "store", after - HISTORY, after)
    found = find_incidents(traffic.window(after, at)[0], baseline=store)
    sms = found[found["channel"].eq("sms").fillna(False)]
    assert sms["kind"].tolist() == ["traffic_shift"], list(sms["summary"])
    assert sms.iloc[0]["providers"] == [failover["provider_id"], failover["to"]]
    assert sms.iloc[0]["ongoing"]


def test_a_campaign_is_at_most_one_spike_and_never_a_drop_elsewhere(week):
    _, planted, found = week
    campaign = planted_of(planted, "campaign")
    during = found[
        (found["started_at"] <= campaign["end"]) & (found["ended_at"] >= campaign["start"])
    ]
    spikes = during[during["kind"].eq("volume_spike")]
    assert len(spikes) <= 1 and not during["kind"].eq("volume_drop").any()
    if len(spikes):
        assert spikes.iloc[0]["workflows"][0] == campaign["workflow"]


def test_a_domain_bouncing_through_two_providers_is_one_row_with_both(week):
    _, planted, found = week
    bounces = planted_of(planted, "domain_bounces")
    rows = found[found["domain"].eq(bounces["domain"]).fillna(False)]
    assert len(rows) == 1 and rows.iloc[0]["kind"] == "domain_bounces"
    assert len(rows.iloc[0]["providers"]) == 2
    assert (
        abs(rows.iloc[0]["notifications"] - bounces["notifications"])
        <= 0.2 * bounces["notifications"]
    )


#: Seed 2's week before this clock: a domain bounces 11 times through one provider and 3 times
#: through another, too few for a period of their own.
BOUNCES_AT = pd.Timestamp("2026-03-18T03:30:00Z")


@pytest.fixture(scope="module")
def two_providers():
    traffic, after = shaped_traffic(2, BOUNCES_AT), BOUNCES_AT - pd.Timedelta(days=7)
    activity, planted = traffic.window(after, BOUNCES_AT)
    history = traffic.window(after - HISTORY, after)[0]
    return traffic, activity, planted, history, find_incidents(activity, baseline=history)


def test_a_domains_few_bounces_through_a_second_provider_join_its_row(two_providers):
    _, activity, planted, _, found = two_providers
    bounces = planted_of(planted, "domain_bounces")
    jobs = metrics.delivery_jobs(activity)
    hit = jobs[jobs["domain"].eq(bounces["domain"]).fillna(False)
               & jobs["started_at"].between(bounces["start"], bounces["end"])
               & jobs["failed_attempts"].gt(0)]  # fmt: skip
    shares = hit["provider_id"].value_counts()
    assert len(shares) == 2 and shares.iloc[-1] <= 3  # the case: a small share on the second
    rows = found[found["domain"].eq(bounces["domain"]).fillna(False)]
    assert len(rows) == 1 and rows.iloc[0]["kind"] == "domain_bounces"
    row = rows.iloc[0]
    assert sorted(row["providers"]) == sorted(shares.index)
    assert row["notifications"] == hit["notification_id"].nunique() == bounces["notifications"]
    assert row["subscribers"] == hit["subscriber_id"].nunique()
    assert row["failed_jobs"] == len(hit)
    # the window: its cause's first failure to its last one
    assert row["started_at"] == hit["started_at"].min()
    assert row["ended_at"] == hit["ended_at"].max()


@pytest.mark.parametrize("engine", ["duckdb", pytest.param("spark", marks=spark_missing)])
def test_a_store_joins_the_second_providers_bounces_alike(two_providers, engine, tmp_path, request):
    if engine == "spark":
        engine = request.getfixturevalue("spark")
    traffic, activity, _, history, found = two_providers
    after = BOUNCES_AT - pd.Timedelta(days=7)
    traffic.write_store(tmp_path / "store", after, BOUNCES_AT)
    store = open_store(tmp_path / "store", engine=engine)
    stored = find_incidents(store, after=after, before=BOUNCES_AT, baseline=history)
    bounce = lambda frame: frame[frame["kind"].eq("domain_bounces")].reset_index(drop=True)  # noqa: E731
    columns = ["domain", "providers", "notifications", "subscribers", "failed_jobs", "jobs"]
    pd.testing.assert_frame_equal(bounce(stored)[columns], bounce(found)[columns])
    assert len(bounce(stored).loc[0, "providers"]) == 2


def test_a_slowdown_of_a_few_hours_is_found_in_four_weeks():
    # seed 1's four weeks before Mar 18: one provider four hours slow (6-hour buckets diluted it)
    traffic = shaped_traffic(1, BOUNCES_AT)
    activity, planted = traffic.window(BOUNCES_AT - pd.Timedelta(days=28), BOUNCES_AT)
    found = find_incidents(activity)
    slow = planted_of(planted, "latency_degradation")
    rows = found[found["kind"].eq("latency_degradation")]
    assert found.attrs["checked"]["freq"] == pd.Timedelta("3h")
    assert list(rows["provider_id"]) == [slow["provider_id"]]
    assert rows.iloc[0]["started_at"] <= slow["end"] and rows.iloc[0]["ended_at"] >= slow["start"]


def test_sends_slow_as_a_tenth_usually_are_is_no_slowdown_however_fast_the_rest_is():
    # three days alone: in-app sends are a little slower in busy hours, and the hours outside
    # the best period are nights; "slow" is above the 90th percentile, so a tenth usually are
    now = pd.Timestamp("2026-03-18T03:30:00Z")
    activity, _ = shaped_traffic(3, now).window(now - pd.Timedelta(days=3), now)
    found = find_incidents(activity, kinds=["latency_degradation"])
    assert not found["channel"].eq("in_app").any(), list(found["summary"])


def test_a_runaway_workflow_is_a_volume_spike():
    found = read(shaped_traffic(1, NOW), 28)[2]
    traffic = shaped_traffic(1, NOW)
    runaway = next(p for p in traffic.planted if p["kind"] == "volume_spike")
    spikes = found[found["kind"].eq("volume_spike")]
    assert runaway["workflow"] in {w[0] for w in spikes["workflows"]}


def looped(activity, workflow, start, count, people, among=None, named=None, once=False):
    """``activity`` with ``count`` more notifications of ``workflow`` over the hour from
    ``start``, each for one of the subscribers of ``people`` (notifications rows; each at most
    ``once``, a campaign's, when so): copies of its own (of those whose ids are ``among``, when
    given), their jobs and execution details moved to their new time; of the workflow
    ``named`` instead, when given."""
    notes, jobs, details = activity
    rng = np.random.default_rng(0)
    own = notes[notes["workflow_identifier"].eq(workflow)]
    if among is not None:
        own = own[own["notification_id"].isin(among)]
    own = own.sample(count, replace=True, random_state=1)
    at = start + pd.to_timedelta(rng.random(count) * 3600, unit="s")
    copies = pd.DataFrame({"old": own["notification_id"].to_numpy(),
                           "new": [f"loop-{start:%m%d%H%M}-{n}" for n in range(count)],
                           "shift": at - pd.DatetimeIndex(own["created_at"])})  # fmt: skip
    who = people.iloc[rng.permutation(len(people))[:count] if once
                      else rng.integers(0, len(people), count)]  # fmt: skip
    new_notes = own.assign(notification_id=copies["new"].to_numpy(), created_at=at,
                           subscriber_id=who["subscriber_id"].to_numpy(),
                           subscriber_email=who["subscriber_email"].to_numpy(),
                           workflow_identifier=named or workflow)  # fmt: skip
    new_jobs = copies.merge(jobs, left_on="old", right_on="notification_id")
    new_jobs["notification_id"] = new_jobs["new"]
    new_jobs["old_job"], new_jobs["job_id"] = new_jobs["job_id"], new_jobs["new"] + "-" + new_jobs["job_id"]  # fmt: skip
    for column in ("first_execution_at", "last_execution_at"):
        new_jobs[column] = new_jobs[column] + new_jobs["shift"]
    new_details = new_jobs[["old_job", "job_id", "notification_id", "shift"]].merge(
        details.drop(columns=["notification_id"]).rename(columns={"job_id": "old_job"})
    )
    new_details["created_at"] = new_details["created_at"] + new_details["shift"]
    return type(activity)(
        pd.concat([notes, new_notes], ignore_index=True),
        pd.concat([jobs, new_jobs[jobs.columns]], ignore_index=True),
        pd.concat([details, new_details[details.columns]], ignore_index=True),
    )


def test_a_loop_in_a_workflow_that_triggers_every_minute_is_a_volume_spike():
    # a loop re-triggering the busiest workflow for five people: nearly every minute of its
    # hours had a trigger already, so its send occasions cannot grow; its repeats do
    traffic, after = shaped_traffic(2, NOW, scale=3, incidents=False), NOW - pd.Timedelta(days=7)
    week, history = traffic.window(after, NOW)[0], traffic.window(after - HISTORY, after)[0]
    notes = week.notifications
    minutes = notes["created_at"].dt.floor("min").groupby(notes["workflow_identifier"])
    workflow = minutes.nunique().idxmax()  # the one triggering in the most minutes
    start = pd.Timestamp("2026-10-28T14:20:00Z")  # a Wednesday afternoon
    hour = notes[notes["workflow_identifier"].eq(workflow)
                 & (notes["created_at"] >= start) & (notes["created_at"] < start + HOUR)]  # fmt: skip
    assert hour["created_at"].dt.floor("min").nunique() >= 50  # of 60 minutes
    people = notes.drop_duplicates("subscriber_id").iloc[:5]
    found = find_incidents(looped(week, workflow, start, 3 * len(hour), people), baseline=history)
    spikes = found[found["kind"].eq("volume_spike")]
    assert [flows[0] for flows in spikes["workflows"]] == [workflow], list(found["summary"])
    assert abs(spikes.iloc[0]["notifications"] / (3 * len(hour)) - 1) < 0.2
    assert found["kind"].eq("volume_spike").all(), list(found["summary"])


@pytest.mark.parametrize("days", [7, 28])
def test_a_weekend_loop_smaller_than_two_weekday_peak_hours_is_a_volume_spike(days):
    # a loop on a Saturday afternoon, three times the hour's usual sends: fewer than two of the
    # workflow's weekday peak hours (the least a spike had to add), many times its own hours;
    # over 28 days, more than any of its history's runs as long (a busy week's days outscored it)
    traffic, after = shaped_traffic(2, NOW, incidents=False), NOW - pd.Timedelta(days=days)
    week, history = traffic.window(after, NOW)[0], traffic.window(after - HISTORY, after)[0]
    notes, workflow = week.notifications, "login-code"  # a client retrying in a loop
    mine = notes[notes["workflow_identifier"].eq(workflow)]
    hourly = mine["created_at"].dt.floor("h").value_counts()
    start = pd.Timestamp("2026-10-31T14:10:00Z")  # a Saturday afternoon
    count = 3 * int(mine["created_at"].between(start, start + HOUR).sum())
    assert 20 <= count < 2 * hourly.max()  # below the old floor
    people = notes.drop_duplicates("subscriber_id").iloc[:30]
    baseline = history if days < 28 else None  # four weeks: their own season
    found = find_incidents(looped(week, workflow, start, count, people), baseline=baseline)
    spikes = found[found["kind"].eq("volume_spike")]
    assert [flows[0] for flows in spikes["workflows"]] == [workflow], list(found["summary"])
    assert abs(spikes.iloc[0]["notifications"] / count - 1) < 0.2
    assert len(found) == 1, list(found["summary"])


def slowed(activity, provider, start, times):
    """``activity`` with the sends of ``provider`` whose first attempt was in the hour from
    ``start`` taking ``times`` as long to deliver (their Success execution details later): a
    queue's wait."""
    jobs = activity.jobs
    began = jobs["first_execution_at"]
    return _later(
        activity, jobs["provider_id"].eq(provider) & began.between(start, start + HOUR), times
    )


def queued(activity, provider, workflow, times):
    """``activity`` with every send of ``workflow`` through ``provider`` taking ``times`` as
    long (`slowed`): a batch workflow whose sends queue by design."""
    notes, jobs = activity.notifications, activity.jobs
    ids = notes.loc[notes["workflow_identifier"].eq(workflow), "notification_id"]
    return _later(
        activity, jobs["provider_id"].eq(provider) & jobs["notification_id"].isin(ids), times
    )


def _later(activity, mine, times):
    """``activity`` with the jobs ``mine`` (a mask of its jobs) ``times`` as long to deliver
    (a number, or a Series by job id)."""
    notes, jobs, details = activity
    first = details["job_id"].map(jobs.loc[mine].set_index("job_id")["first_execution_at"])
    late = first.notna() & details["status"].eq("Success")
    if isinstance(times, pd.Series):
        times = details["job_id"].map(times).fillna(1.0).astype("float64").to_numpy()
    later = first + (details["created_at"] - first) * times
    return type(activity)(
        notes, jobs, details.assign(created_at=later.where(late, details["created_at"]))
    )


@pytest.fixture(scope="module")
def loop_week():
    """A week with a runaway loop on a weekday afternoon, its baseline, the provider it sends
    through, and the hour it began."""
    traffic, after = shaped_traffic(2, NOW, incidents=False), NOW - pd.Timedelta(days=7)
    week, history = traffic.window(after, NOW)[0], traffic.window(after - HISTORY, after)[0]
    notes, workflow = week.notifications, "login-code"
    start = pd.Timestamp("2026-10-28T14:10:00Z")  # a Wednesday afternoon
    mine = notes[notes["workflow_identifier"].eq(workflow)]
    count = 5 * int(mine["created_at"].between(start, start + HOUR).sum())
    jobs = week.jobs[week.jobs["notification_id"].isin(mine["notification_id"])]
    provider = jobs.loc[jobs["type"].ne("in_app"), "provider_id"].mode().iloc[0]  # not built in
    people = notes.drop_duplicates("subscriber_id").iloc[:30]
    return looped(week, workflow, start, count, people), history, provider, start


def test_sends_a_loops_load_slowed_are_the_loops_row(loop_week):
    # a runaway loop on a weekday afternoon queues its provider's every send, two and a half
    # times as slow: one spike row, that names the slowdown (a latency row of its own before)
    loop, history, provider, start = loop_week
    found = find_incidents(slowed(loop, provider, start, 2.5), baseline=history)
    assert found["kind"].tolist() == ["volume_spike"], list(found["summary"])
    assert f"its load slowed {provider_name(provider)}" in found.iloc[0]["summary"]


@pytest.mark.parametrize("others", [1.6, 6.0])
def test_a_new_batchs_own_sends_queueing_long_are_its_load_if_the_others_are_not(others):
    # three hours of a batch of a workflow the history never saw (no spike: it has no usual
    # size), sent once to each of 1,500 people through the busiest provider: its own sends
    # there take six times as long (p95 at 6.9 times their threshold, more than LOAD_SLOWS: a
    # batch queues its own), the provider's other sends then ``others`` times: 1.6 times (2.5
    # times their thresholds) is the batch's load, no row (a latency row before); six times is
    # the provider's slowdown
    traffic, after = shaped_traffic(2, NOW, incidents=False), NOW - pd.Timedelta(days=7)
    week, history = traffic.window(after, NOW)[0], traffic.window(after - HISTORY, after)[0]
    provider, workflow = _busiest_pair(week)
    start = pd.Timestamp("2026-10-28T12:10:00Z")  # a Wednesday
    people, batch = week.notifications.drop_duplicates("subscriber_id"), week
    for hour in range(3):
        some = people.iloc[hour * 500 : (hour + 1) * 500]
        batch = looped(
            batch, workflow, start + hour * HOUR, 500, some, named="statement", once=True
        )
    jobs, notes = batch.jobs, batch.notifications
    mine = notes.loc[notes["workflow_identifier"].eq("statement"), "notification_id"]
    during = jobs["first_execution_at"].between(start, start + 3 * HOUR)
    hours = jobs["provider_id"].eq(provider) & during
    own = hours & jobs["notification_id"].isin(mine)
    assert own.sum() > 1000 and (hours & ~own).sum() > 50  # the case planted
    found = find_incidents(_later(_later(batch, hours & ~own, others), own, 6.0),
                           baseline=history)  # fmt: skip
    if others < 2:
        assert found.empty, list(found["summary"])
        aside = found.attrs["set_aside"]  # said, with the burst it is the load of
        assert len(aside) == 1 and "burst of workflow statement" in aside[0], aside
    else:
        assert found["kind"].tolist() == ["latency_degradation"], list(found["summary"])


@pytest.mark.parametrize(
    ("share", "code", "said"),
    [
        (0.05, "rate_limit_exceeded", "rate limited"),
        (0.5, "rate_limit_exceeded", None),
        (0.05, "service_unavailable", "failed by the provider"),
        (0.05, "invalid_payload", None),
    ],
)
def test_a_loops_load_rate_limiting_a_few_sends_is_the_loops_row_most_of_them_is_not(
    loop_week, share, code, said
):
    # the provider rate limits (its servers refuse) a share of the sends in the loop's hour: a
    # few (a load's) are named in the loop's row; half of them is a cause of its own, an error
    # spike too, and so is a payload error, which no load makes
    loop, history, provider, start = loop_week
    jobs = loop.jobs
    hour = jobs[jobs["provider_id"].eq(provider)
                & jobs["first_execution_at"].between(start, start + HOUR)]  # fmt: skip
    limited = hour["job_id"].sample(frac=share, random_state=2)
    found = find_incidents(failed_later(loop, limited, code), baseline=history)
    if said:
        assert found["kind"].tolist() == ["volume_spike"], list(found["summary"])
        named = f"its load had {provider_name(provider)}"
        assert named in found.iloc[0]["summary"] and said in found.iloc[0]["summary"]
    else:
        assert sorted(found["kind"]) == ["error_spike", "volume_spike"], list(found["summary"])


def test_a_loops_load_rate_limiting_and_failing_sends_names_its_provider_once(loop_week):
    # in the loop's hour the provider rate limits a few sends and its servers fail a few
    # others: one spike row, naming the provider once for both
    loop, history, provider, start = loop_week
    jobs = loop.jobs
    hour = jobs[jobs["provider_id"].eq(provider)
                & jobs["first_execution_at"].between(start, start + HOUR)]  # fmt: skip
    some = hour["job_id"].sample(frac=0.1, random_state=3)
    limited, refused = some.iloc[: len(some) // 2], some.iloc[len(some) // 2 :]
    activity = failed_later(failed_later(loop, limited, "rate_limit_exceeded"), refused, "503")
    found = find_incidents(activity, baseline=history)
    assert found["kind"].tolist() == ["volume_spike"], list(found["summary"])
    summary = found.iloc[0]["summary"]
    assert summary.count(provider_name(provider)) == 1, summary
    assert "rate limited (" in summary and "failed by the provider (" in summary, summary


@pytest.mark.parametrize("apart", [pd.Timedelta(0), pd.Timedelta(days=1)])
def test_a_provider_rate_limiting_and_failing_at_once_is_one_row(apart):
    # for three hours of an evening a provider rate limits 15% of its sends and its
    # servers fail another 15%: one error spike naming both codes, with all their failures;
    # a day apart, they are two
    traffic, after = shaped_traffic(2, NOW, incidents=False), NOW - pd.Timedelta(days=7)
    week, history = traffic.window(after, NOW)[0], traffic.window(after - HISTORY, after)[0]
    jobs = week.jobs[week.jobs["type"].ne("in_app") & week.jobs["final_status"].ne("failed")]
    provider = jobs["provider_id"].value_counts().index[0]
    start = pd.Timestamp("2026-10-27T19:00:00Z")  # a Tuesday evening

    def some(at, seed):
        mine = jobs[jobs["provider_id"].eq(provider)
                    & jobs["first_execution_at"].between(at, at + 3 * HOUR)]  # fmt: skip
        return mine["job_id"].sample(frac=0.15, random_state=seed)

    limited, refused = some(start, 5), some(start + apart, 6)
    refused = refused[~refused.isin(limited)]
    activity = failed_later(failed_later(week, limited, "rate_limit_exceeded"), refused, "503")
    found = find_incidents(activity, baseline=history)
    assert found["kind"].eq("error_spike").all(), list(found["summary"])
    if apart:
        assert sorted(found["error_code"]) == ["503", "rate_limit_exceeded"], list(found["summary"])
        return
    assert len(found) == 1, list(found["summary"])
    row = found.iloc[0]
    assert "errors rate_limit_exceeded and 503 on " in row["summary"], row["summary"]
    assert f"({len(limited)} and {len(refused)} sends)" in row["summary"], row["summary"]
    assert row["failed_jobs"] >= 0.95 * (len(limited) + len(refused)), row["summary"]


@pytest.mark.parametrize(("begins", "hours", "share", "rows"), [
    ("13:00", 1, 0.08, 0),  # the newsletter's hour: its load
    ("10:00", 7, 0.08, 1),  # holds without that hour
    ("13:00", 1, 0.3, 1),  # more than a load makes
])  # fmt: skip
def test_a_rate_limit_in_the_services_busiest_hour_is_its_load(begins, hours, share, rows, capsys):
    # the weekly newsletter's hour (Monday 13:00 UTC) sends 5.7 times that hour's usual jobs;
    # its email provider rate limiting 8% of its sends then is the load, no row; 8% for seven
    # hours around it, or 30% in it, is a rate limit of its own
    traffic, after = shaped_traffic(2, NOW, incidents=False), NOW - pd.Timedelta(days=7)
    week, history = traffic.window(after, NOW)[0], traffic.window(after - HISTORY, after)[0]
    newsletter, start = pd.Timestamp("2026-10-26T13:00Z"), pd.Timestamp(f"2026-10-26T{begins}Z")
    sent = week.jobs[week.jobs["type"].eq("email")]
    provider = sent.loc[sent["first_execution_at"].between(newsletter, newsletter + HOUR),
                        "provider_id"].mode().iloc[0]  # fmt: skip
    jobs = sent[sent["provider_id"].eq(provider) & sent["final_status"].ne("failed")
                & sent["first_execution_at"].between(start, start + hours * HOUR)]  # fmt: skip
    limited = jobs["job_id"].sample(frac=share, random_state=7)
    found = find_incidents(failed_later(week, limited, "rate_limit_exceeded"), baseline=history)
    assert found["kind"].eq("error_spike").sum() == rows, list(found["summary"])
    assert len(found) == rows, list(found["summary"])
    # what was read as the load is said, not lost
    aside = found.attrs["set_aside"]
    assert len(aside) == 1 - rows, aside
    if not rows:
        assert "rate_limit_exceeded" in aside[0] and "busy hours" in aside[0], aside
        assert "1 significant period(s) set aside as a load" in found.attrs["reason"]
        print_incidents(found)  # as ``python -m toolkit incidents`` prints it
        printed = capsys.readouterr().out
        assert (
            printed.startswith("no incidents: ")
            and f"load, not an incident:\n- {aside[0]}" in printed
        )


def test_sends_half_as_slow_again_on_a_busy_evening_are_no_slowdown():
    # an evening's load queues a provider's sends: four hours of them 1.6 times as slow, more
    # of them above its usual 90th percentile, the p95 under twice it (Wrenfield's rain days,
    # Saturday peaks); three times as slow is a slowdown
    traffic, after = shaped_traffic(2, NOW, incidents=False), NOW - pd.Timedelta(days=7)
    week, history = traffic.window(after, NOW)[0], traffic.window(after - HISTORY, after)[0]
    jobs = week.jobs[week.jobs["type"].ne("in_app")]
    provider = jobs["provider_id"].value_counts().index[0]
    evening = [pd.Timestamp("2026-10-28T17:00:00Z") + n * HOUR for n in range(4)]
    busy, slow = week, week
    for hour in evening:
        busy, slow = slowed(busy, provider, hour, 1.6), slowed(slow, provider, hour, 3.0)
    found = find_incidents(busy, baseline=history)
    assert found.empty, list(found["summary"])
    found = find_incidents(slow, baseline=history)
    assert found["kind"].tolist() == ["latency_degradation"], list(found["summary"])
    assert found["provider_id"].iloc[0] == provider


def test_sends_slower_as_the_service_sends_more_than_its_hours_usual_are_the_loads(
    loop_week, monkeypatch
):
    # the loop's provider's sends take (the service's jobs in their hour over the median of
    # that hour of the day) times as long, in the four weeks before (a weekly newsletter's
    # hour, 5.7 times its usual load, queues every send) as in the loop's week: the loop's
    # hour (2.2 times) slows them as much as such a load usually does, so the spike's row
    # names no slowdown (without the load's law measured, "its load slowed" them); three
    # times as slow again for four hours of a quiet evening is a slowdown
    loop, history, provider, start = loop_week
    hours = pd.concat([loop.jobs, history.jobs])["first_execution_at"].dt.floor("h")
    load = hours.value_counts().sort_index()
    ratio = (load / load.groupby(load.index.hour).transform("median")).clip(lower=1.0)

    def follow(activity):
        jobs = activity.jobs
        times = jobs["first_execution_at"].dt.floor("h").map(ratio).fillna(1.0)
        mine = jobs["provider_id"].eq(provider).fillna(False)
        return _later(activity, mine, times.set_axis(jobs["job_id"]))

    loop, history = follow(loop), follow(history)
    assert ratio[start.floor("h")] > 2  # the case planted
    found = find_incidents(loop, baseline=history)
    assert found["kind"].tolist() == ["volume_spike"], list(found["summary"])
    assert "slowed" not in found["summary"].iloc[0]
    assert "follow the service's load" in found.attrs["baseline"]
    with monkeypatch.context() as patch:
        patch.setattr(detect, "LOAD_SCANS", ())
        found = find_incidents(loop, baseline=history)
    assert f"its load slowed {provider_name(provider)}" in found["summary"].iloc[0]
    evening = pd.Timestamp("2026-10-29T18:00:00Z")
    for hour in [evening + n * HOUR for n in range(4)]:
        loop = slowed(loop, provider, hour, 3.0)
    found = find_incidents(loop, baseline=history)
    assert found["kind"].tolist() == ["volume_spike", "latency_degradation"], list(found["summary"])
    assert found["provider_id"].iloc[1] == provider


def _busiest_pair(week):
    """The provider most of ``week``'s sends (in-app aside) went through, and its busiest
    workflow there."""
    jobs = week.jobs[week.jobs["type"].ne("in_app")]
    provider = jobs["provider_id"].value_counts().index[0]
    flows = week.notifications.set_index("notification_id")["workflow_identifier"]
    mine = jobs.loc[jobs["provider_id"].eq(provider), "notification_id"]
    return provider, flows.reindex(mine).value_counts().index[0]


@pytest.mark.parametrize("days", [7, 28])
def test_a_provider_slower_for_its_quick_workflows_while_its_batch_sends_is_a_slowdown(days):
    # the provider's busiest workflow queues by design (thirty times as long as the others, in
    # the history too), so the provider's 90th percentile is the batch's; three times as slow
    # for four hours leaves the other workflows' sends under it, but above their own: against
    # a baseline's, and in four weeks read alone, against the window's own
    traffic, after = shaped_traffic(2, NOW, incidents=False), NOW - pd.Timedelta(days=days)
    week, history = traffic.window(after, NOW)[0], traffic.window(after - HISTORY, after)[0]
    provider, workflow = _busiest_pair(week)
    week, history = (queued(one, provider, workflow, 30) for one in (week, history))
    slow = week
    for hour in [pd.Timestamp("2026-10-29T15:00:00Z") + n * HOUR for n in range(4)]:
        slow = slowed(slow, provider, hour, 3.0)
    found = find_incidents(slow, baseline=history if days < 28 else None)
    rows = found[found["kind"].eq("latency_degradation")]
    assert list(rows["provider_id"]) == [provider], list(found["summary"])
    assert "longer than 90% of their workflow's usually do" in rows.iloc[0]["summary"]


def test_a_workflows_own_burst_queueing_its_sends_is_no_slowdown():
    # the provider's busiest workflow sends a burst to 3,000 people on a Wednesday afternoon
    # whose sends queue eight times as long as its others: its own sends are slow, the
    # provider is not slower for the rest (its spike may be a row; a slowdown is none)
    traffic, after = shaped_traffic(2, NOW, incidents=False), NOW - pd.Timedelta(days=7)
    week, history = traffic.window(after, NOW)[0], traffic.window(after - HISTORY, after)[0]
    provider, workflow = _busiest_pair(week)
    people = week.notifications.drop_duplicates("subscriber_id")
    start = pd.Timestamp("2026-10-28T14:10:00Z")
    burst = looped(week, workflow, start, min(3000, len(people)), people, once=True)
    notes, jobs = burst.notifications, burst.jobs
    added = notes["notification_id"].str.startswith(f"loop-{start:%m%d%H%M}-")
    mine = jobs["provider_id"].eq(provider) & jobs["notification_id"].isin(notes.loc[added, "notification_id"])  # fmt: skip
    found = find_incidents(_later(burst, mine, 8), baseline=history)
    assert not found["kind"].eq("latency_degradation").any(), list(found["summary"])


@pytest.mark.parametrize("days", [7, 28])
def test_a_slowdown_a_campaign_was_sent_into_is_the_providers(days):
    # seed 2's week to Jul 4 18:45: an email provider twenty times as slow from 01:48 on a
    # Sunday night, and a new workflow's campaign at 04:50 through it, most of the slow sends
    # since: the night's few other sends were slow before it began, so it is no burst's queue;
    # in four weeks read alone, the campaign's own threshold would be the slowdown's (it sent
    # nothing else), so it keeps the provider's
    now = pd.Timestamp("2026-07-04T18:45:00Z")
    activity, planted, found = read(shaped_traffic(2, now), days, now=now)
    slow, campaign = planted_of(planted, "latency_degradation"), planted_of(planted, "campaign")
    assert slow["start"] < campaign["start"] < slow["end"]
    rows = found[found["kind"].eq("latency_degradation")]
    assert list(rows["provider_id"]) == [slow["provider_id"]], list(found["summary"])


def test_a_batch_whose_sends_always_queue_is_no_slowdown_a_provider_slower_for_all_is():
    # a small workflow whose sends queue by design (thirty times as long as the provider's
    # others, in the history too) sends a batch on a Wednesday afternoon, three times the provider's
    # sends there: most of them above the provider's slow threshold, as its sends always are.
    # The provider three times as slow for every workflow for four hours is a slowdown.
    traffic, after = shaped_traffic(2, NOW, incidents=False), NOW - pd.Timedelta(days=7)
    week, history = traffic.window(after, NOW)[0], traffic.window(after - HISTORY, after)[0]
    jobs = week.jobs[week.jobs["type"].ne("in_app")]
    provider = jobs["provider_id"].value_counts().index[0]
    flows = week.notifications.set_index("notification_id")["workflow_identifier"]
    mine = jobs[jobs["provider_id"].eq(provider)]
    workflow = flows.reindex(mine["notification_id"]).value_counts().index[-1]  # 4% of its sends
    start = pd.Timestamp("2026-10-28T14:10:00Z")  # a Wednesday afternoon
    sent = int(mine["first_execution_at"].between(start, start + HOUR).sum())
    week, history = (queued(one, provider, workflow, 30) for one in (week, history))
    people = week.notifications.drop_duplicates("subscriber_id")
    batch = looped(week, workflow, start, 3 * sent, people)
    found = find_incidents(batch, baseline=history)
    assert not found["kind"].eq("latency_degradation").any(), list(found["summary"])
    slow = batch
    for hour in [pd.Timestamp("2026-10-29T15:00:00Z") + n * HOUR for n in range(4)]:  # a Thursday
        slow = slowed(slow, provider, hour, 3.0)
    found = find_incidents(slow, baseline=history)
    rows = found[found["kind"].eq("latency_degradation")]
    assert list(rows["provider_id"]) == [provider], list(found["summary"])
    began = pd.Timestamp("2026-10-29T15:00:00Z")
    assert began - HOUR <= rows.iloc[0]["started_at"] < rows.iloc[0]["ended_at"] <= began + 5 * HOUR


def test_a_slowdown_that_began_hours_before_a_campaign_is_its_own_row():
    # the planted slowdown of an email provider runs from three hours before the campaign to an
    # hour into it, twenty times as slow: not the campaign's load, so it stays a row of its own;
    # the campaign, its workflow's first send, to each person once, is no spike
    activity, planted, found = read(shaped_traffic(2, NOW), 7)
    slow, campaign = planted_of(planted, "latency_degradation"), planted_of(planted, "campaign")
    assert slow["start"] < campaign["start"] - 2 * HOUR and campaign["start"] < slow["end"]
    rows = found[found["kind"].eq("latency_degradation")]
    assert list(rows["provider_id"]) == [slow["provider_id"]], list(found["summary"])
    assert not found["kind"].eq("volume_spike").any(), list(found["summary"])


def test_a_promotion_sent_on_days_that_change_every_week_is_no_spike():
    # a push promotion at four hours of the day (four markets), each on about half the days,
    # which ones changing every week: the hours of a week may expect none (no other week sent
    # it that day: "where about 0 were expected"), the same hours of the other days say usual
    traffic = shaped_traffic(2, NOW, incidents=False)
    after, start = NOW - pd.Timedelta(days=28), NOW - pd.Timedelta(days=28) - HISTORY
    activity = traffic.window(start, NOW)[0]
    people = activity.notifications.drop_duplicates("subscriber_id")
    days = pd.date_range(start.floor("D") + pd.Timedelta(days=1), NOW, freq="D", inclusive="left")
    rng = np.random.default_rng(3)
    for hour in (6, 11, 17, 20):
        for day in days[rng.random(len(days)) < 0.5]:
            activity = looped(activity, "login-code", day + pd.Timedelta(hours=hour), 60, people,
                              named="flash-sale")  # fmt: skip
    promoted = Traffic(*activity)
    found = find_incidents(
        promoted.window(after, NOW)[0], baseline=promoted.window(start, after)[0]
    )
    assert not found["workflows"].map(lambda flows: "flash-sale" in flows).any(), list(
        found["summary"]
    )


#: A campaign most weeks, on a different day and hour each time: when, and to how many.
CAMPAIGNS = (("2026-09-29T15:00Z", 300), ("2026-10-08T09:00Z", 420), ("2026-10-13T18:00Z", 360),
             ("2026-10-21T10:00Z", 480))  # fmt: skip


@pytest.mark.parametrize("days", [7, 28])
def test_a_campaign_most_weeks_on_whichever_day_is_no_spike_one_three_times_as_large_is(days):
    # the window's campaign to 500 people adds no more than twice the most the history's did
    # over as many hours (over 28 days read alone: the window's other weeks); one to 1,500
    # people is a spike, and so is a loop as large as the first, re-triggering for 5 people
    traffic = shaped_traffic(2, NOW, incidents=False)
    after, start = NOW - pd.Timedelta(days=days), NOW - pd.Timedelta(days=35)
    activity = traffic.window(start, NOW)[0]
    people = activity.notifications.drop_duplicates("subscriber_id")

    for at, size in CAMPAIGNS:
        activity = looped(activity, "promo-campaign", pd.Timestamp(at), size, people,
                          named="news", once=True)  # fmt: skip

    def news(size: int, among: pd.DataFrame) -> pd.DataFrame:
        sent = Traffic(*looped(activity, "promo-campaign", pd.Timestamp("2026-10-29T14:00Z"),
                               size, among, named="news", once=len(among) >= size))  # fmt: skip
        base = sent.window(after - HISTORY, after)[0] if days < 28 else None
        found = find_incidents(sent.window(after, NOW)[0], baseline=base)
        return found[found["workflows"].map(lambda flows: "news" in flows)]

    assert news(500, people).empty
    assert list(news(1500, people)["kind"]) == ["volume_spike"]
    assert list(news(500, people.iloc[:5])["kind"]) == ["volume_spike"]


@pytest.mark.parametrize(("once", "again"), [(570, 30), (400, 300)])
def test_a_campaign_reaching_a_few_of_its_people_twice_is_no_loop_one_repeating_them_is(once, again):  # fmt: skip
    # a campaign most weeks, on whichever day; the window's reaches 570 people once and 30 of
    # them twice (a crowd: a twentieth of it repeats, none did before), or 400 once and 300
    # more to 30 of them (a loop: its repeats are two fifths of it)
    traffic, after = shaped_traffic(2, NOW, incidents=False), NOW - pd.Timedelta(days=7)
    activity = traffic.window(after - HISTORY, NOW)[0]
    people = activity.notifications.drop_duplicates("subscriber_id")
    for at, size in CAMPAIGNS:
        activity = looped(activity, "promo-campaign", pd.Timestamp(at), size, people,
                          named="news", once=True)  # fmt: skip
    start = pd.Timestamp("2026-10-29T14:00Z")
    activity = looped(activity, "promo-campaign", start, once, people, named="news", once=True)
    notes = activity.notifications
    reached = notes[notes["notification_id"].str.startswith(f"loop-{start:%m%d%H%M}-")].iloc[:30]
    activity = looped(activity, "promo-campaign", start + pd.Timedelta(minutes=1), again, reached,
                      named="news", once=again <= 30)  # fmt: skip
    sent = Traffic(*activity)
    found = find_incidents(sent.window(after, NOW)[0], baseline=sent.window(after - HISTORY, after)[0])  # fmt: skip
    mine = found["workflows"].map(lambda flows: "news" in flows).astype(bool)
    assert found.loc[mine, "kind"].tolist() == ["volume_spike"] * (again > 30), list(found["summary"])  # fmt: skip


def test_a_monthly_batch_a_baseline_saw_is_no_spike_in_a_window_of_four_weeks():
    # a statement to 800 people on the same weekday four weeks apart: the 28-day window makes
    # its own season, the baseline's weeks are its bursts' history too; read alone, the
    # window's other weeks never saw it send: each person once, no loop, no row
    traffic = shaped_traffic(2, NOW, incidents=False)
    after = NOW - pd.Timedelta(days=28)
    activity = traffic.window(after - HISTORY, NOW)[0]
    people = activity.notifications.drop_duplicates("subscriber_id")
    for at in ("2026-09-08T08:00Z", "2026-10-06T08:00Z"):
        activity = looped(activity, "promo-campaign", pd.Timestamp(at), 800, people,
                          named="statement", once=True)  # fmt: skip
    sent = Traffic(*activity)
    window, base = sent.window(after, NOW)[0], sent.window(after - HISTORY, after)[0]
    for baseline in (base, None):
        found = find_incidents(window, baseline=baseline)
        assert not found["workflows"].map(lambda flows: "statement" in flows).any(), list(
            found["summary"]
        )


@pytest.mark.parametrize(("people", "spike"), [(800, False), (30, True)])
def test_a_workflow_the_history_never_saw_is_a_spike_only_as_a_loop(people, spike):
    # a new workflow's first send: 800 notifications to 800 people once (a broadcast: it has no
    # usual size to be larger than), or to 30 people again and again (a loop of the new one)
    traffic = shaped_traffic(2, NOW, incidents=False)
    after = NOW - pd.Timedelta(days=7)
    activity = traffic.window(after - HISTORY, NOW)[0]
    reached = activity.notifications.drop_duplicates("subscriber_id").iloc[:people]
    activity = looped(activity, "promo-campaign", pd.Timestamp("2026-10-29T14:00Z"), 800,
                      reached, named="launch", once=not spike)  # fmt: skip
    sent = Traffic(*activity)
    found = find_incidents(sent.window(after, NOW)[0], baseline=sent.window(after - HISTORY, after)[0])  # fmt: skip
    mine = found["workflows"].map(lambda flows: "launch" in flows).astype(bool)
    assert found.loc[mine, "kind"].tolist() == ["volume_spike"] * spike, list(found["summary"])


def test_a_baseline_beginning_within_an_hour_holds_all_its_weeks():
    # a week's window ending at half past: the 28 days before it begin within an hour, and
    # the statement sent in their first days (four weeks before the window's) is history too
    end = NOW - pd.Timedelta(minutes=30)
    after = end - pd.Timedelta(days=7)
    activity = shaped_traffic(2, NOW, incidents=False).window(after - HISTORY, end)[0]
    people = activity.notifications.drop_duplicates("subscriber_id")
    for at in ("2026-09-29T08:00Z", "2026-10-27T08:00Z"):
        activity = looped(activity, "promo-campaign", pd.Timestamp(at), 800, people,
                          named="statement", once=True)  # fmt: skip
    sent = Traffic(*activity)
    found = find_incidents(sent.window(after, end)[0], baseline=sent.window(after - HISTORY, after)[0])  # fmt: skip
    assert "in the 4 weeks of baseline=" in found.attrs["baseline"]
    assert not found["workflows"].map(lambda flows: "statement" in flows).any(), list(found["summary"])  # fmt: skip


#: The hour of the day (from a window's first) each market's promotion goes out at.
MARKETS = (0, 5, 10, 16)


def _promotions(on: np.ndarray, start: pd.Timestamp) -> pd.DataFrame:
    """Hourly counts of a push promotion: each market's (``on``: markets x days) 50 jobs at its
    hour, nothing else."""
    jobs = np.zeros(on.shape[1] * 24)
    for market, hour in enumerate(MARKETS):
        jobs[np.flatnonzero(on[market]) * 24 + hour] = 50.0
    hours = pd.date_range(start, periods=len(jobs), freq="h")
    return pd.DataFrame({"bucket": hours, "channel": "push", "provider_id": "fcm",
                         "workflow": "promo-push", "jobs": jobs})  # fmt: skip


def test_a_promotion_on_a_windows_first_day_is_weighed_against_the_baselines_days_too():
    # each of four markets sends a promotion on about half the days, which ones changing every
    # week; a week's window begins with all four on a weekday none had it in the four weeks
    # before: "about 0 expected". Too few of the window's own days lie clear of its 17 hours;
    # the baseline's days have it most days
    start, day = pd.Timestamp("2026-10-01T08:00Z"), pd.Timedelta(days=1)
    on = np.random.default_rng(4).random((4, 35)) < 0.5
    on[:, :28][:, np.arange(28) % 7 == 0] = False  # the window's first weekday
    on[:, 28] = True
    after = start + 28 * day
    history, window = _promotions(on[:, :28], start), _promotions(on[:, 28:], after)
    built = season.build(lambda: window, after, after + 7 * day, history, (start, after))
    row = {"kind": "volume_spike", "cells": np.array([0]), "first": 0, "stop": 17}
    row["expected"] = float(built.expected[0, :17].sum())
    assert row["expected"] < 17  # under a job an hour: the days must say so too
    assert not volume.confirmed(built, row, 0.01)
    # a burst at hours no day sends at is confirmed by them
    built.observed[0, 20:22] = 60
    assert volume.confirmed(built, {**row, "first": 20, "stop": 22, "expected": 0.0}, 0.01)


def test_a_small_workflows_fan_out_on_a_quiet_evening_is_no_spike():
    # a security notice to 14 people within a minute, on a Saturday evening where one an hour
    # is usual: more than two of the evening's busiest hours, fewer than two of the window's,
    # and no one reached twice (a spike that small must be a loop's)
    end = pd.Timestamp("2026-11-01T12:00:00Z")
    traffic = shaped_traffic(3, end, incidents=False, vary=True)
    activity = traffic.window(end - pd.Timedelta(days=28), end)[0]
    notes = activity.notifications
    burst = notes[notes["workflow_identifier"].eq("security-notice")
                  & notes["created_at"].between("2026-10-10T19:16:50Z", "2026-10-10T19:17:55Z")]  # fmt: skip
    assert len(burst) == 14 and burst["subscriber_id"].is_unique
    found = find_incidents(activity)
    assert found.empty, list(found["summary"])


def test_a_loop_across_two_clock_hours_is_counted_in_both():
    # a loop from 14:47 to 15:47: its 13 minutes in the 14:00 hour are as much its jobs as the
    # rest (counted on the 15:00 hour alone, its impact was a fifth short)
    traffic, after = shaped_traffic(2, NOW, incidents=False), NOW - pd.Timedelta(days=7)
    week, history = traffic.window(after, NOW)[0], traffic.window(after - HISTORY, after)[0]
    notes = week.notifications
    minutes = notes["created_at"].dt.floor("min").groupby(notes["workflow_identifier"])
    workflow = minutes.nunique().idxmax()  # the one triggering in the most minutes
    start = pd.Timestamp("2026-10-28T14:47:00Z")  # a Wednesday afternoon
    hour = notes["workflow_identifier"].eq(workflow) & notes["created_at"].between(
        start, start + HOUR
    )
    count = 5 * int(hour.sum())  # six times its hour's jobs
    people = notes.drop_duplicates("subscriber_id").iloc[:3]
    found = find_incidents(looped(week, workflow, start, count, people), baseline=history)
    assert found["kind"].eq("volume_spike").all() and len(found) == 1, list(found["summary"])
    row = found.iloc[0]
    assert row["workflows"][0] == workflow and row["started_at"] < start + pd.Timedelta("13min")
    assert abs(row["notifications"] / count - 1) < 0.2, (count, row["summary"])


def test_one_persons_dead_token_re_triggered_all_day_is_no_failure_incident():
    # a loop re-triggers a push notification three times an hour for a day for one person
    # whose token is dead: 72 failures, and the provider's usual few of five other people
    # (before a row mostly one person's had to hold without them: a OneSignal error row); the
    # loop itself may be its workflow's spike (more than any day of its history), no more
    traffic, after = shaped_traffic(2, NOW, incidents=False), NOW - pd.Timedelta(days=7)
    week, history = traffic.window(after, NOW)[0], traffic.window(after - HISTORY, after)[0]
    notes, jobs = week.notifications, week.jobs
    failed = jobs[jobs["type"].eq("push") & jobs["final_status"].eq("failed")]
    dead = notes[notes["notification_id"].eq(failed["notification_id"].iloc[0])]
    workflow, start = dead["workflow_identifier"].iloc[0], pd.Timestamp("2026-10-28T14:10:00Z")
    looping = week
    for hour in range(24):
        looping = looped(looping, workflow, start + hour * HOUR, 3, dead, among=dead["notification_id"])  # fmt: skip
    notes, jobs, details = looping  # its push only (its other channels' copies would be slow)
    jobs = jobs[~jobs["job_id"].str.startswith("loop-") | jobs["type"].eq("push")]
    details = details[details["job_id"].isin(jobs["job_id"])]
    found = find_incidents(type(looping)(notes, jobs, details), baseline=history)
    assert found["kind"].eq("volume_spike").all(), list(found["summary"])
    assert all(flows[0] == workflow for flows in found["workflows"]), list(found["summary"])


@pytest.mark.parametrize("days", [3, 7])
def test_without_weeks_of_history_shares_that_follow_the_day_are_not_compared(shaped, days):
    # the fallback compares each channel's share with the rest of the window: with chat only in
    # office hours and a nightly batch, every night would be a drop, so volume says it cannot
    _, planted, found = read(shaped, days, baseline=False)
    said = found.attrs["baseline"]
    assert said.startswith("volume not compared: no seasonal baseline (the window")
    assert "follow the hour of the day" in said and "pass baseline=" in said
    assert not found["kind"].isin(["volume_drop", "volume_spike", "traffic_shift"]).any()
    failures = {i["kind"] for i in planted} & {"provider_outage", "domain_bounces", "error_spike"}
    assert failures <= set(found["kind"])  # failures are still compared: they are rates


def test_a_share_follows_the_day_when_its_hours_differ_beyond_chance():
    from toolkit.incidents.rates import follow_the_day

    rng = np.random.default_rng(5)
    hours = np.arange(7 * 24)
    total = rng.poisson(np.where(hours % 24 >= 8, 200, 20))  # busy days, quiet nights
    start, step = pd.Timestamp("2026-10-05", tz="UTC"), pd.Timedelta("1h")
    flat = rng.binomial(total, 0.3)  # the same share at every hour: the rest of the window fits
    office = rng.binomial(total, np.where((hours % 24 >= 9) & (hours % 24 < 18), 0.4, 0.05))
    assert follow_the_day(flat[None], total[None], start, step) is False
    assert follow_the_day(np.stack([flat, office]), np.stack([total, total]), start, step)
    assert follow_the_day(office[None, :36], total[None, :36], start, step) is None  # < 2 days


def test_counts_are_a_baseline_too(shaped):
    after = NOW - pd.Timedelta(days=1)
    activity, _ = shaped.window(after, NOW)
    history, _ = shaped.window(after - HISTORY, after)
    counts = delivery_counts(history, by=season.CELL)
    counts.attrs.update(after=(after - HISTORY).isoformat(), before=after.isoformat())
    found = find_incidents(activity, baseline=counts)
    same = find_incidents(activity, baseline=history)
    assert "4 weeks of baseline=" in found.attrs["baseline"]
    shifts = lambda frame: frame[frame["kind"].eq("traffic_shift")]  # noqa: E731
    assert len(shifts(found)) == len(shifts(same)) == 1


def test_a_frame_that_is_not_counts_is_refused(shaped):
    activity, _ = shaped.window(NOW - pd.Timedelta(days=1), NOW)
    with pytest.raises(ParameterError, match="baseline"):
        find_incidents(activity, baseline=pd.DataFrame({"x": [1]}))


def test_dispersion_is_measured_not_assumed():
    rng = np.random.default_rng(0)
    poisson = rng.poisson(20.0, (1, 4, season.WEEK)).astype(float)
    bursty = rng.negative_binomial(4, 4 / 24, (1, 4, season.WEEK)).astype(float)  # mean 20
    assert season.dispersion(poisson)[0, 0] < 1.3
    assert season.dispersion(bursty)[0, 0] > 3


def test_quiet_hours_vary_less_than_busy_ones():
    # a day of 2 an hour at night and 60 by day, each hour's rate scaled by its own gamma
    # draw (relative variance 0.05): variance 1 * e + 0.05 * e**2, measured (against the
    # median of five other weeks, itself uncertain: a little more)
    rng = np.random.default_rng(1)
    rate = np.tile(np.where(np.arange(24) < 8, 2.0, 60.0), 7)
    weeks = rng.poisson(rate * rng.gamma(20, 1 / 20, (1, 6, season.WEEK))).astype(float)
    a, b = season.dispersion(weeks)[0]
    assert 0.03 < b < 0.09
    night, day = season.hourly_variance(np.array([[a, b]]), np.array([[2.0, 60.0]]))[0]
    assert night / 2 < 2.5 and day / 60 > 4  # a quiet night is not tested as a busy afternoon


def test_whole_days_busier_or_quieter_are_measured():
    # each day's rate scaled as a whole (relative variance 0.02) on top of Poisson hours
    rng = np.random.default_rng(2)
    rate = np.full((1, 8, season.WEEK), 40.0)
    level = np.repeat(rng.gamma(50, 1 / 50, (1, 8, 7)), 24, axis=2)
    weeks = rng.poisson(rate * level).astype(float)
    spread = season.day_spread(weeks, season.dispersion(weeks))[0]
    assert 0.01 < spread < 0.04
    flat = rng.poisson(rate).astype(float)
    assert season.day_spread(flat, season.dispersion(flat))[0] < 0.005


def test_the_count_tail_is_negative_binomial():
    # mean 20, variance 60: nothing sent is about 1 in 3.6e6 (a Poisson law: 1 in 4.9e8)
    assert scan.count_p_value(0, 20.0, 3.0, low=True) == pytest.approx(3**-10)
    assert scan.count_p_value(0, 20.0, 1.0, low=True) == pytest.approx(np.exp(-20))
    # the upper tail, P(X >= 50), heavier than a Poisson law's of the same mean
    assert scan.count_p_value(50, 20.0, 3.0, low=False) > 100 * scan.count_p_value(
        50, 20.0, 1.0, low=False
    )


def test_overlapping_periods_count_as_the_disjoint_periods_that_fit():
    # every run of 1 to 4 buckets of 8: 8 + 7 + 6 + 5 periods, as many tests as
    # 8/1 + 7/2 + 6/3 + 5/4 disjoint ones
    valid = np.ones((8, 4), dtype=bool)
    valid[np.arange(8)[:, None] + np.arange(1, 5)[None, :] > 8] = False
    tests = scan.effective_tests(valid, np.arange(1, 5)[None, :])
    assert tests == pytest.approx(8 + 7 / 2 + 6 / 3 + 5 / 4)


def test_a_one_off_week_does_not_move_the_season():
    weeks = np.full((1, 4, season.WEEK), 10.0)
    weeks[0, 2, 50:52] = 500  # a campaign in one week
    weeks[0, 1, 80:86] = 0  # an outage in another
    assert np.allclose(season.center(weeks), 10.0)


def test_a_quiet_hour_is_expected_from_its_neighbours_too_a_batch_hour_is_not():
    # a quiet cell (3 an hour, bursty) and a nightly batch (400 at one hour a day) over 3 weeks
    rng = np.random.default_rng(3)
    quiet = rng.negative_binomial(1, 1 / 4, (1, 3, season.WEEK)).astype(float)  # mean 3
    errors = [np.mean((f(quiet)[0] - 3.0) ** 2) for f in (season.center, season.pooled)]
    assert errors[1] < 0.6 * errors[0]
    batch = np.zeros((1, 3, season.WEEK))
    batch[0, :, 2::24] = rng.poisson(400.0, (3, 7))
    pooled = season.pooled(batch)[0]
    assert np.allclose(pooled[2::24], season.center(batch)[0, 2::24], rtol=0.05)
    assert pooled[3::24].max() < 1
    # a small cell (1.5 an hour) whose three weeks happened to send nothing at an hour: its
    # median is 0, and no more certain than a Poisson count of its neighbours' level
    sparse = rng.poisson(1.5, (1, 3, season.WEEK)).astype(float)
    sparse[0, :, 100] = 0
    assert season.center(sparse)[0, 100] == 0 and season.pooled(sparse)[0, 100] > 0.8


def test_a_one_off_week_does_not_move_the_pooled_season_either():
    weeks = np.full((1, 4, season.WEEK), 10.0)
    weeks[0, 2, 50:52] = 500
    weeks[0, 1, 80:86] = 0
    assert np.allclose(season.pooled(weeks), 10.0)


def failed_later(activity, job_ids, code: str):
    """``activity`` with the jobs ``job_ids`` failed with ``code``: their final status and code,
    and a Failed execution detail a second after their last one."""
    notes, jobs, details = activity
    chosen = jobs.index[jobs["job_id"].isin(job_ids)]
    assert len(chosen) == len(job_ids)
    jobs = jobs.copy()
    jobs.loc[chosen, ["final_status", "error_code"]] = ["failed", code]
    last = details.groupby("job_id")["created_at"].max()
    extra = pd.DataFrame({
        "job_id": jobs.loc[chosen, "job_id"].to_numpy(),
        "notification_id": jobs.loc[chosen, "notification_id"].to_numpy(),
        "status": "Failed",
        "created_at": last.reindex(jobs.loc[chosen, "job_id"]).to_numpy() + pd.Timedelta("1s"),
        "raw": json.dumps({"code": code}),
    }).astype(details.dtypes.to_dict())  # fmt: skip
    return type(activity)(notes, jobs, pd.concat([details, extra], ignore_index=True))


@pytest.mark.parametrize("standing", [True, False])
def test_mail_to_people_whose_mailboxes_always_bounced_is_no_incident(standing):
    # six people get 30 emails in an afternoon, all refused (5.1.1: no such mailbox); when
    # their mail had bounced so all month, that is how their addresses are, no incident;
    # when it had been delivered until then, it is one
    traffic, after = shaped_traffic(2, NOW, incidents=False), NOW - pd.Timedelta(days=28)
    activity = traffic.window(after, NOW)[0]
    notes = activity.notifications.set_index("notification_id")
    emailed = notes.loc[activity.jobs.loc[activity.jobs["type"].eq("email"), "notification_id"]]
    people = emailed.drop_duplicates("subscriber_id").iloc[:6]
    start = pd.Timestamp("2026-10-28T14:00Z")
    activity = looped(activity, emailed["workflow_identifier"].mode().iloc[0], start, 30, people)
    jobs, notes = activity.jobs, activity.notifications.set_index("notification_id")
    whom = pd.Series(notes.loc[jobs["notification_id"], "subscriber_id"].to_numpy(), jobs.index)
    theirs = jobs["type"].eq("email") & whom.isin(people["subscriber_id"])
    if not standing:
        theirs &= jobs["first_execution_at"].ge(start)
    found = find_incidents(failed_later(activity, jobs.loc[theirs, "job_id"], "5.1.1"))
    failures = found[~found["kind"].isin(["volume_spike"])]  # the 30 emails: a loop's
    assert failures["kind"].tolist() == ([] if standing else ["stale_credentials"]), list(found["summary"])  # fmt: skip


def test_an_outage_ends_at_its_own_last_failure_not_a_later_one_of_the_provider(shaped):
    """Failures of another code on the provider just after the outage are not the outage's."""
    activity, planted = shaped.window(NOW - pd.Timedelta(days=1), NOW)
    outage = planted_of(planted, "provider_outage")
    notes, jobs, _ = activity
    created = jobs["notification_id"].map(notes.set_index("notification_id")["created_at"])
    after = jobs.loc[
        jobs["provider_id"].eq(outage["provider_id"]).fillna(False)
        & (created > outage["end"]).to_numpy()
        & (created < outage["end"] + pd.Timedelta("90min")).to_numpy(),
        "job_id",
    ][:3]
    assert len(after) == 3
    found = find_incidents(failed_later(activity, list(after), "OTHER"), kinds=["provider_outage"])
    row = found[found["provider_id"].eq(outage["provider_id"])].iloc[0]
    assert row["ended_at"] <= outage["end"] + pd.Timedelta("10min")
    assert row["error_code"] == "503"


def test_a_domains_bounces_end_at_their_last_bounce_not_a_later_failure_to_it(shaped, week):
    """Failures of another code to the domain through the provider it bounced on, just after
    its bounces, are neither in the bounces' window nor in their impact."""
    activity, planted, found = week
    bounces = planted_of(planted, "domain_bounces")
    sent = metrics.delivery_jobs(activity)
    to_it = sent[sent["domain"].eq(bounces["domain"]).fillna(False)]
    bounced = to_it.loc[to_it["error_code"].eq("5.1.1").fillna(False), "provider_id"].mode()[0]
    after = to_it.loc[
        to_it["provider_id"].eq(bounced).fillna(False)
        & to_it["started_at"].between(bounces["end"], bounces["end"] + pd.Timedelta("1h"))
        & to_it["failed_attempts"].eq(0),
        "job_id",
    ][:3]
    assert len(after) == 3
    history = shaped.window(NOW - pd.Timedelta(days=7) - HISTORY, NOW - pd.Timedelta(days=7))[0]
    changed = find_incidents(failed_later(activity, list(after), "OTHER"), baseline=history)
    columns = ["kind", "error_code", "started_at", "ended_at", "notifications", "subscribers",
               "failed_jobs", "jobs", "providers"]  # fmt: skip
    row = lambda frame: frame.loc[frame["domain"].eq(bounces["domain"]).fillna(False), columns]  # noqa: E731
    pd.testing.assert_frame_equal(
        row(changed).reset_index(drop=True), row(found).reset_index(drop=True)
    )
    assert row(found).iloc[0]["ended_at"] <= bounces["end"] + pd.Timedelta("10min")


def test_a_rate_limit_that_slows_what_it_retries_is_one_row(week):
    activity, planted, found = week
    limited = planted_of(planted, "error_spike")
    sent = metrics.delivery_jobs(activity)
    mine = sent["provider_id"].eq(limited["provider_id"]).fillna(False)
    retried = sent.loc[mine & sent["error_code"].eq("RateLimited").fillna(False), "time_to_send_s"]
    usual = sent.loc[mine & sent["failed_attempts"].eq(0), "time_to_send_s"].quantile(0.9)
    assert retried.min() > 10 * usual  # the case: every send it retried is slow
    rows = found[
        found["provider_id"].eq(limited["provider_id"]).fillna(False)
        & (found["started_at"] <= limited["end"])
        & (found["ended_at"] >= limited["start"])
    ]
    assert list(rows["kind"]) == ["error_spike"]
    assert rows.iloc[0]["error_code"] == "RateLimited"
    assert rows.iloc[0]["notifications"] == len(retried) == limited["notifications"]


def test_a_provider_throttling_most_sends_is_an_error_spike_not_an_outage(shaped):
    # the planted outage's failures as a rate limit (HTTP 429, "Too many requests"): retried
    # and failing most sends as before, but a provider throttling is up
    after = NOW - pd.Timedelta(days=7)
    (notes, jobs, details), planted = shaped.window(after, NOW)
    down = planted_of(planted, "provider_outage")
    hit = jobs["provider_id"].eq(down["provider_id"]) & jobs["error_code"].eq("503")
    jobs = jobs.assign(error_code=jobs["error_code"].mask(hit, "429"),
                       error_text=jobs["error_text"].mask(hit, "Too many requests"))  # fmt: skip
    raw = details["raw"].mask(details["job_id"].isin(jobs.loc[hit, "job_id"]) & details["raw"].eq('{"code": "503"}'),
                              '{"code": "429", "message": "Too many requests"}')  # fmt: skip
    throttled = Activity(notes, jobs, details.assign(raw=raw))
    history = shaped.window(after - HISTORY, after)[0]
    found = find_incidents(throttled, baseline=history)
    rows = found[found["provider_id"].eq(down["provider_id"]).fillna(False)
                 & (found["started_at"] <= down["end"]) & (found["ended_at"] >= down["start"])]  # fmt: skip
    assert list(rows["kind"]) == ["error_spike"], list(found["summary"])
    assert rows.iloc[0]["error_code"] == "429" and rows.iloc[0]["failure_rate"] >= 0.5


def test_a_baseline_of_other_groups_is_refused(shaped):
    after = NOW - pd.Timedelta(days=1)
    activity, _ = shaped.window(after, NOW)
    history, _ = shaped.window(after - HISTORY, after)
    counts = delivery_counts(history, by=season.CELL)
    counts["workflow"] = "another-environment-" + counts["workflow"]
    counts.attrs.update(after=(after - HISTORY).isoformat(), before=after.isoformat())
    with pytest.raises(ParameterError, match="same service"):
        find_incidents(activity, baseline=counts)


def test_a_channel_varies_as_its_workflows_do_not_as_its_steadiest_sends():
    # four weeks of one channel: people's sends (40 an hour by day, each hour's rate scaled by
    # its own gamma draw) split between two providers, which move together, and a nightly
    # batch of about 300 that hardly varies
    rng = np.random.default_rng(3)
    hours = pd.date_range("2026-10-01", periods=4 * season.WEEK, freq="h", tz="UTC")
    rate = np.where((hours.hour >= 8) & (hours.hour < 20), 40.0, 2.0)
    people = rng.poisson(rate * rng.gamma(10, 1 / 10, len(hours)))
    first = rng.binomial(people, 0.5)
    batch = np.where(hours.hour == 2, rng.binomial(320, 0.95, len(hours)), 0)
    counts = pd.concat([
        pd.DataFrame({"bucket": hours, "channel": "email", "provider_id": provider,
                      "workflow": workflow, "jobs": jobs})
        for provider, workflow, jobs in (("p1", "people", first), ("p2", "people", people - first),
                                         ("p1", "batch", batch))
    ])  # fmt: skip
    built = season.build(lambda: counts, hours[0], hours[-1] + season.HOUR)
    busy = np.flatnonzero(built.hours.hour == 14)
    channel = built.groups("channel")[3][0][0, busy]
    workflows = dict(zip([k["workflow"] for k in built.groups("workflow")[0]],
                         built.groups("workflow")[3][0], strict=True))  # fmt: skip
    cells = [n for n, key in enumerate(built.keys) if key[2] == "people"]
    apart = season.hourly_variance(season.dispersion(built.reference), built.expected)[cells]
    assert (channel >= 0.95 * workflows["people"][busy]).all()
    assert (channel > 1.4 * apart[:, busy].sum(0)).all()  # the providers' parts move together


def test_what_a_drop_missed_is_counted_at_its_days_level():
    # four weeks of 60 an hour by day, 6 at night, each day busier or quieter as a whole
    # (relative variance 0.03); then a day running at 70% of usual all along, silent from
    # 10:00 to 15:00: what is missing is 70% of a usual day's hours, not 100%
    from toolkit.incidents import volume
    from toolkit.incidents.scan import Evidence

    rng = np.random.default_rng(4)
    hours = pd.date_range("2026-10-01", periods=29 * 24, freq="h", tz="UTC")
    rate = np.where((hours.hour >= 7) & (hours.hour < 22), 60.0, 6.0)
    level = np.repeat(rng.gamma(33, 1 / 33, 29), 24)
    level[-24:] = 0.7
    jobs = rng.poisson(rate * level)
    silent = np.zeros(len(hours), dtype=bool)
    silent[-24 + 10 : -24 + 15] = True
    missing = int(jobs[silent].sum())
    jobs[silent] = 0
    counts = pd.DataFrame({"bucket": hours, "channel": "email", "provider_id": "p1",
                           "workflow": "people", "jobs": jobs})  # fmt: skip
    day = hours[-24]
    built = season.build(lambda: counts[counts["bucket"] >= day], day, hours[-1] + season.HOUR,
                         counts[counts["bucket"] < day], (hours[0], day))  # fmt: skip
    scan, groups = volume.scans(built, Evidence(10, 5, 2.0))["workflow", True]
    row = volume.candidate(built, "workflow", True, groups, scan.first_round()[0], scan.tests)
    usual = built.expected[0, row["first"] : row["stop"]].sum()
    assert abs(row["expected"] - row["events"] - missing) <= 0.1 * missing
    assert usual - row["events"] > 1.25 * missing  # the usual day's count: far too many


def test_a_stopped_workflows_usual_count_is_what_it_sends_on_average():
    # the benchmark's "knowing its season exactly": over seeds, the hits of each stop average
    # its usual count (each seed's day and hour vary it about 16%)
    ratios = []
    for seed in range(1, 17):
        traffic = shaped_traffic(seed, NOW, days=29, scale=0.5)
        stop = next(i for i in traffic.planted if i["kind"] == "volume_drop" and i["workflow"])
        ratios.append(len(stop["hits"]) / stop["usual"])
    assert abs(np.mean(ratios) - 1) < 0.1, ratios


def test_a_campaign_sent_at_the_usual_failure_rate_is_no_failure_incident(week):
    # ten times the usual email for two hours, failing as often as usual: no failure row in it
    # but the planted incidents' own
    _, planted, found = week
    campaign = planted_of(planted, "campaign")
    during = found[
        found["channel"].eq("email").fillna(False)
        & (found["started_at"] <= campaign["end"])
        & (found["ended_at"] >= campaign["start"])
        & ~found["kind"].isin(["volume_spike", "volume_drop", "traffic_shift"])
    ]
    kinds = {"degradation": "error_spike"}
    for _, row in during.iterrows():
        assert any(
            kinds.get(p["kind"], p["kind"]) == row["kind"]
            and p["channel"] == "email"
            and p["start"] <= row["ended_at"]
            and p["end"] >= row["started_at"]
            for p in planted
        ), row["summary"]


def _jobs_at(times: np.ndarray, channel: str, provider: str, workflow: str) -> pd.DataFrame:
    """Delivery jobs (as `toolkit.metrics.delivery_jobs` gives them) triggered at ``times``,
    each of its own notification, for its own subscriber."""
    at = pd.to_datetime(np.sort(times) // 1000 * 1000, utc=True)
    ids = [f"{workflow}-{n}" for n in range(len(at))]
    return pd.DataFrame({"triggered_at": at, "channel": channel, "provider_id": provider,
                         "workflow": workflow, "outcome": "finished", "failed_attempts": 0,
                         "time_to_deliver_s": 1.0, "notification_id": ids,
                         "subscriber_id": ids})  # fmt: skip


def test_a_silence_is_tested_on_send_occasions_not_on_the_counts_law():
    # four weeks, then a day: people's sends (6 an hour, each hour's rate its own gamma draw,
    # one in 12 fanning out to 5-10 more in the same minute) stop from 10:00 to 14:00 on the
    # last day; a batch of about 24 sent at once at 03:00 every day skips the last one. Both
    # miss about as many sends; only the people's silence is unlikely: no send for four hours
    # where some 20 independent send occasions were expected, against one batch not run
    from toolkit.incidents import volume
    from toolkit.incidents.detect import _occasions, _significant
    from toolkit.incidents.scan import Evidence

    rng = np.random.default_rng(5)
    hours = pd.date_range("2026-10-01", periods=29 * 24, freq="h", tz="UTC").as_unit("ns")
    day, end = hours[-24], hours[-1] + season.HOUR
    people = rng.poisson(6 * rng.gamma(10, 1 / 10, len(hours)))
    times = np.repeat(hours.asi8, people) + (rng.random(people.sum()) * 3.6e12).astype("int64")
    fans = times[rng.random(len(times)) < 1 / 12]
    times = np.concatenate([times, np.repeat(fans, rng.integers(5, 11, len(fans)))])
    stopped = (times >= (day + pd.Timedelta("10h")).value) & (
        times < (day + pd.Timedelta("14h")).value
    )
    nights = hours[hours.hour == 3][:-1].asi8
    sent = rng.binomial(25, 0.95, len(nights))
    batch = np.repeat(nights, sent) + rng.integers(0, 30e9, sent.sum())
    jobs = pd.concat([_jobs_at(times[~stopped], "sms", "p1", "people"),
                      _jobs_at(batch, "push", "p2", "batch")], ignore_index=True)  # fmt: skip
    counts = delivery_counts(jobs, by=season.CELL)
    history = (counts[counts["bucket"] < day], (hours[0], day))
    built = season.build(lambda: counts[counts["bucket"] >= day], day, end, *history)
    counted = volume.scans(built, Evidence(10, 5, 2.0))
    scan, (keys, _, _) = counted["workflow", True]
    tests = sum(one.tests for one, _ in counted.values())
    by_law = {keys[pick.group]["workflow"]: pick.p_value * tests for pick in scan.first_round()}
    assert by_law["batch"] <= 0.01  # the counts' law: a regular batch never skips
    volume.on_occasions(counted, lambda level: _occasions(level, jobs, {"after": day, "before": end},
                                                      (day, end, []), jobs, history), 0.01 / tests)  # fmt: skip
    found = {keys[pick.group]["workflow"]: pick for pick in _significant(scan, 0.01 / tests)}
    assert set(found) == {"people"}
    silence = found["people"]
    assert silence.events == 0 and built.hours[silence.first] == day + pd.Timedelta("10h")
    assert silence.p_value * tests < by_law["people"] / 50


@pytest.mark.parametrize("engine", ["duckdb", pytest.param("spark", marks=spark_missing)])
def test_send_occasions_are_distinct_minutes_alike_in_a_store(engine, tmp_path, request):
    if engine == "spark":
        engine = request.getfixturevalue("spark")
    traffic, after = shaped_traffic(2, BOUNCES_AT), BOUNCES_AT - pd.Timedelta(days=2)
    activity, _ = traffic.window(after, BOUNCES_AT)
    jobs = metrics.delivery_jobs(activity)
    workflow = jobs["workflow"].value_counts().index[0]
    channel, provider = jobs[["channel", "provider_id"]].iloc[0]
    by = [["workflow"], ["channel", "provider_id"]]
    groups = [[{"workflow": workflow}], [{"channel": channel, "provider_id": provider}]]
    given = occasion_counts(activity, by=by, groups=groups)
    traffic.write_store(tmp_path / "store", after, BOUNCES_AT)
    store = open_store(tmp_path / "store", engine=engine)
    for stored, counted in zip(occasion_counts(store, after=after, before=BOUNCES_AT, by=by,
                                               groups=groups), given, strict=True):  # fmt: skip
        ends = ["first_at", "last_at"]  # a store keeps milliseconds
        pd.testing.assert_frame_equal(stored.drop(columns=ends), counted.drop(columns=ends))
        for end in ends:
            assert ((stored[end] - counted[end]).abs() < pd.Timedelta("1ms")).all()
    # by hand: the minutes of each hour with a job of the workflow
    mine = jobs[jobs["workflow"].eq(workflow)]
    minute = mine["triggered_at"].dt.floor("min")
    by_hand = minute.groupby(minute.dt.floor("h")).nunique()
    assert given[0]["workflow"].eq(workflow).all()
    assert given[0]["occasions"].tolist() == by_hand.tolist()
    hourly = mine.groupby(minute.dt.floor("h"))
    repeats = hourly["notification_id"].nunique() - hourly["subscriber_id"].nunique()
    assert given[0]["repeats"].tolist() == repeats.tolist()
    last = mine.groupby(minute.dt.floor("h"))["triggered_at"].max().to_numpy()
    assert (
        abs(given[0]["last_at"].to_numpy() - last) <= pd.Timedelta("1us")
    ).all()  # the engine's µs
    assert set(zip(given[1]["channel"], given[1]["provider_id"], strict=True)) == {
        (channel, provider)
    }


@pytest.mark.parametrize(
    ("options", "named"),
    [({"by": "workflow"}, "by"), ({"by": [["workflow"]], "groups": []}, "groups")],
)
def test_send_occasions_refuse_a_bad_grouping_before_counting(options, named):
    with pytest.raises(ParameterError) as caught:
        occasion_counts(None, **options)  # no source read: the check comes first
    assert caught.value.name == named


def test_send_occasions_of_jobs_without_whom_they_are_for_are_refused(week):
    jobs = metrics.delivery_jobs(week[0]).drop(columns=["subscriber_id"])
    with pytest.raises(ParameterError, match="subscriber_id") as caught:
        occasion_counts(jobs, by=[["workflow"]])
    assert caught.value.name == "source"


def _two_channels(seed: int, *, push_share: float):
    """Four weeks and a day of one workflow's notifications (60 an hour by day, 6 at night, each
    hour and day busier or quieter as a whole), each sending in_app, and push to
    ``push_share`` of them; on the last day push is silent from 10:00 to 15:00. Returns the
    counts, the jobs push missed and the last day's start."""
    rng = np.random.default_rng(seed)
    hours = pd.date_range("2026-10-01", periods=29 * 24, freq="h", tz="UTC")
    rate = np.where((hours.hour >= 7) & (hours.hour < 22), 60.0, 6.0)
    level = np.repeat(rng.gamma(33, 1 / 33, 29), 24) * rng.gamma(4, 1 / 4, len(hours))
    notes = rng.poisson(rate * level)
    push = rng.binomial(notes, push_share)
    silent = np.zeros(len(hours), dtype=bool)
    silent[-24 + 10 : -24 + 15] = True
    missing = int(push[silent].sum())
    push[silent] = 0
    counts = pd.concat([
        pd.DataFrame({"bucket": hours, "channel": "in_app", "provider_id": "a",
                      "workflow": "people", "jobs": notes}),
        pd.DataFrame({"bucket": hours, "channel": "push", "provider_id": "p",
                      "workflow": "people", "jobs": push}),
    ], ignore_index=True)  # fmt: skip
    return counts, missing, hours


@pytest.mark.parametrize("push_share", [1.0, 0.5])
def test_a_silent_channel_misses_what_its_workflows_other_channels_say(push_share):
    # hours far busier or quieter than usual (relative variance 0.25): the season alone cannot
    # say what push missed; the workflow's in_app jobs at the time can
    from toolkit.incidents import volume
    from toolkit.incidents.scan import Evidence

    counts, missing, hours = _two_channels(8, push_share=push_share)
    day = hours[-24]
    built = season.build(lambda: counts[counts["bucket"] >= day], day, hours[-1] + season.HOUR,
                         counts[counts["bucket"] < day], (hours[0], day))  # fmt: skip
    scan, groups = volume.scans(built, Evidence(10, 5, 2.0))["channel", True]
    pick = next(pick for pick in scan.first_round() if groups[0][pick.group]["channel"] == "push")
    row = volume.candidate(built, "channel", True, groups, pick, scan.tests)
    push = np.array([n for n, key in enumerate(built.keys) if key[0] == "push"])
    level = volume._level(built, push, row["first"], row["stop"], row["spread"])[0]
    alone = built.expected[push, row["first"] : row["stop"]].sum() * level - row["events"]
    # within 3 sd of what push would have sent of the notifications (binomial), or 5%
    close = max(0.05 * missing, 3 * np.sqrt(missing * (1 - push_share)))
    assert abs(row["expected"] - row["events"] - missing) <= close
    assert abs(alone - missing) > close  # the season alone: far off


def test_how_closely_a_channel_follows_the_others_is_measured():
    from toolkit.incidents.volume import _follows

    rng = np.random.default_rng(3)
    notes = rng.poisson(40, (4, 168))
    there = notes.astype(float)
    assert _follows(there, there) == (1.0, 0.0)  # every notification sends on both
    # half of the notifications send here: p (1 - p) against p (1 + p) sent independently
    k, tie = _follows(rng.binomial(notes, 0.5).astype(float), there)
    assert abs(k - 0.5) < 0.01 and 0.2 < tie < 0.5
    k, tie = _follows(rng.poisson(20, (4, 168)).astype(float), there)  # independent
    assert abs(k - 0.5) < 0.01 and 0.7 < tie < 1.4


CLOCK = pd.Timestamp("2026-03-18T03:30:00Z")  # windows from half past: a part-hour at each end


def test_an_hour_only_partly_in_the_window_is_no_drop():
    # seed 4's morning digest goes out in the first quarter of 03:00 UTC: a window from 03:30
    # holds none of it, so that hour is left out, not compared with half its usual count
    quiet = shaped_traffic(4, CLOCK, incidents=False)
    after = CLOCK - pd.Timedelta(days=7)
    activity, _ = quiet.window(after, CLOCK)
    found = find_incidents(activity, baseline=quiet.window(after - HISTORY, after)[0])
    assert found.empty, list(found["summary"])


def test_a_channel_silent_over_two_rounds_of_its_scan_is_one_channel_row():
    # the push channel's drop is found in two overlapping periods, joined: the channel departs
    # as far as each of its providers, so the channel's row is kept, with the whole impact
    traffic = shaped_traffic(4, CLOCK)
    activity, planted = traffic.window(CLOCK - HISTORY, CLOCK)
    found = find_incidents(activity)
    push = next(i for i in planted if i["kind"] == "volume_drop" and i["channel"] == "push")
    drops = found[found["kind"].eq("volume_drop") & found["channel"].eq("push")]
    assert len(drops) == 1 and pd.isna(drops.iloc[0]["provider_id"]), list(drops["summary"])
    assert (
        abs(drops.iloc[0]["notifications"] - push["notifications"]) <= 0.1 * push["notifications"]
    )


def test_a_silence_after_a_batch_is_no_less_likely_than_the_silence_of_those_who_stopped():
    # a group sends 12 occasions an hour; another also sends a batch of 30 occasions in the
    # first minutes of 02:00; a third's mornings begin at 04:00. All are silent from 02:35 to
    # 04:00: the batch sent in its hour's first minutes, so the part of 02:00 inside the silence
    # expects no more than the hours around it do, and both silences are as unlikely; the
    # morning's 04:00 is busier than 03:00 and 05:00 is busier still: a ramp, expected as it is
    from toolkit.incidents.volume import _silence

    people = np.full(30, 12.0)
    batch, morning = people.copy(), people.copy()
    batch[2] += 30
    morning[4:] += 20
    variance = batch.copy()
    variance[2] *= 5  # the batch's size varies
    edges = (1 - 35 / 60, 0.5)  # the last occasion at 02:35, the next at 04:30
    p = {}
    for name, expected, hourly in (("people", people, people), ("batch", batch, variance),
                                   ("morning", morning, morning)):  # fmt: skip
        observed = expected.copy()
        observed[3] = 0
        p[name] = _silence(observed, expected, hourly, 0.05, 3, 4, edges)
    assert p["people"] < 1e-3
    assert p["batch"] >= p["people"]
    assert p["morning"] < p["people"] / 100


def test_a_silence_is_as_likely_as_empty_hours_were_in_the_history():
    # an order sends four notifications minutes apart through one provider: 2.5 orders an
    # hour are 10 sends an hour, in chains. Its hours are empty as often as 2.5 orders say
    # (exp(-2.5), not the chance of 10 independent sends), and so a silence of three hours
    from toolkit.incidents.volume import _silence

    rng = np.random.default_rng(7)
    orders = rng.poisson(2.5, (4, season.WEEK))
    chained, single = (4 * orders).astype(float), orders.astype(float)
    assert season.empty_rate(chained) == pytest.approx(0.25, rel=0.2)
    assert season.empty_rate(single) == pytest.approx(1.0, rel=0.2)
    assert season.empty_rate(chained + 1) == np.inf  # never empty: no measure, no limit
    expected = np.full(30, 10.0)
    observed = expected.copy()
    observed[10:13] = 0
    hourly = expected * 4  # the chains' variance: as many sends, four at a time
    edges = (0.5, 0.5)
    p = _silence(observed, expected, hourly, 0.0, 10, 13, edges)
    measured = _silence(observed, expected, hourly, 0.0, 10, 13, edges, season.empty_rate(chained))
    assert p < 1e-5 < measured  # about exp(-0.25 * 40) * 3, against exp(-10)


def test_a_silence_in_a_window_read_alone_is_not_its_own_history():
    # four weeks of about 8 sends an hour, the window's own season; a workflow silent for four
    # hours in its last week: that week's empty hours are the silence itself, not its history
    from toolkit.incidents import volume

    rng = np.random.default_rng(5)
    hours = pd.date_range("2026-10-01", periods=4 * season.WEEK, freq="h", tz="UTC")
    jobs = rng.poisson(8.0, len(hours))
    silent = slice(3 * season.WEEK + 50, 3 * season.WEEK + 54)
    jobs[silent] = 0
    counts = pd.DataFrame({"bucket": hours, "channel": "email", "provider_id": "p1",
                           "workflow": "people", "jobs": jobs})  # fmt: skip
    built = season.build(lambda: counts, hours[0], hours[-1] + season.HOUR)
    assert built.own is not None
    first = int(np.flatnonzero(built.hours == hours[silent.start])[0])
    cells = np.arange(len(built.keys))
    assert season.empty_rate(built.reference[cells].sum(0)) < 1  # with its own silence
    assert volume.history_empty_rate(built, cells, first, first + 4) == np.inf
