"""find_incidents on traffic whose shape is drawn too (`shaped_traffic(vary=True)`): night and
weekend levels, mornings, zone shares, noise and fan-outs nobody tuned the detector on."""

from __future__ import annotations

import pandas as pd

from toolkit.incidents import find_incidents
from toolkit.sandbox.seed.shaped import shaped_traffic

NOW = pd.Timestamp("2026-07-04T18:45:00Z")
HISTORY = pd.Timedelta(days=28)


def test_a_drawn_shape_is_the_seeds_own():
    drawn = [shaped_traffic(seed, NOW, vary=True, incidents=False) for seed in (7, 7, 8)]
    assert drawn[0].notifications.equals(drawn[1].notifications)
    assert len(drawn[0].notifications) != len(drawn[2].notifications)
    plain = shaped_traffic(7, NOW, incidents=False)
    assert len(plain.notifications) != len(drawn[0].notifications)


def test_a_stopped_workflow_is_one_row_not_also_its_channel_and_provider():
    # seed 7's shape: between 14:00 and 19:00 the workflow that stopped is all that push sends,
    # so push sent nothing; counted as the workflow's other channel says (it stopped there
    # too), push expected nothing either, and its provider's shortfall is the workflow's
    traffic = shaped_traffic(7, NOW, vary=True)
    after = NOW - pd.Timedelta(days=7)
    rows = find_incidents(traffic.window(after, NOW)[0],
                          baseline=traffic.window(after - HISTORY, after)[0])  # fmt: skip
    drops = rows[rows["kind"] == "volume_drop"]
    (planted,) = [p for p in traffic.planted if p["kind"] == "volume_drop" and p["workflow"]]
    assert drops["workflows"].map(lambda names: names[:1]).tolist() == [[planted["workflow"]]]
    assert drops["channel"].isna().all(), list(drops["summary"])


def test_a_small_outage_at_night_found_by_its_code_is_a_provider_outage():
    # seed 1's shape: a provider that took over five days before fails all of its 11 sends at
    # night with one code, retried; its own scan's 3-hour buckets dilute it, its code's scan
    # finds it: the provider is down, and usually fails as its scan says, not as its code does
    now = pd.Timestamp("2026-11-01T12:00:00Z")
    traffic = shaped_traffic(1, now, vary=True)
    rows = find_incidents(traffic.window(now - pd.Timedelta(days=28), now)[0])
    (planted,) = [p for p in traffic.planted if p["kind"] == "provider_outage"]
    (row,) = rows[rows["provider_id"].eq(planted["provider_id"]) & rows["error_code"].eq("503")
                  ].itertuples()  # fmt: skip
    assert row.kind == "provider_outage" and row.failure_rate == 1.0, row.summary
    assert 0.01 < row.baseline_rate < 0.1, row.summary


def test_a_stop_whose_backlog_is_sent_after_it_is_no_schedule_an_hour_off():
    # seed 9's shape: push stops for five hours, then sends more than usual for two: the hour
    # after it holds half of what it missed, but no schedule moved by an hour misses five
    # hours' traffic
    traffic = shaped_traffic(9, NOW, vary=True)
    rows = find_incidents(traffic.window(NOW - pd.Timedelta(days=28), NOW)[0])
    (planted,) = [p for p in traffic.planted if p["kind"] == "volume_drop" and p["channel"]]
    drops = rows[rows["kind"].eq("volume_drop") & rows["channel"].eq(planted["channel"])]
    assert len(drops) == 1 and drops["started_at"].iloc[0] <= planted["end"], list(rows["summary"])


def test_a_workflow_that_stops_on_a_channel_that_failed_over_is_still_a_drop():
    # seed 1's shape: SMS moved to another provider four days before the only SMS workflow
    # stopped for six hours; the provider it left, expected to carry that workflow, claimed
    # the drop as its own before the failover was named
    now = pd.Timestamp("2026-03-18T03:30:00Z")
    traffic = shaped_traffic(1, now, vary=True)
    after = now - pd.Timedelta(days=7)
    rows = find_incidents(traffic.window(after, now)[0],
                          baseline=traffic.window(after - HISTORY, after)[0])  # fmt: skip
    (planted,) = [p for p in traffic.planted if p["kind"] == "volume_drop" and p["workflow"]]
    assert rows["kind"].tolist().count("traffic_shift") == 1, list(rows["summary"])
    drops = rows[rows["kind"].eq("volume_drop")]
    assert drops["workflows"].map(lambda names: names[:1]).tolist() == [[planted["workflow"]]]


def test_an_outage_is_planted_as_the_sends_it_made_fail():
    # seed 18's shape: its outage begins as a burst's sends are being delivered; a send made
    # (and delivered) before it began is no hit, though its retries would have fallen inside:
    # the planted truth is the jobs that failed with the outage's code, no more
    traffic = shaped_traffic(18, NOW, vary=True)
    (planted,) = [p for p in traffic.planted if p["kind"] == "provider_outage"]
    jobs = traffic.jobs.merge(traffic.notifications[["notification_id", "created_at"]])
    failed = jobs[jobs["provider_id"].eq(planted["provider_id"]) & jobs["error_code"].eq("503")]
    assert len(planted["hits"]) > 0
    assert sorted(failed["created_at"]) == list(planted["hits"])


def test_a_few_bounces_of_a_domain_in_a_short_row_are_its_domain_s_row():
    # seed 3's shape: icloud.com bounces 8 notifications through two providers; one provider's
    # row holds 6 of them in 37 minutes, where its sends to other domains mostly went out:
    # the domain's sends failed, the others' did not, so the row is the domain's
    now = pd.Timestamp("2026-03-18T03:30:00Z")
    rows, planted = _a_week_with_its_history(3, now)
    (bounces,) = [p for p in planted if p["kind"] == "domain_bounces"]
    mine = rows[rows["kind"].eq("domain_bounces")]
    assert mine["domain"].tolist() == [bounces["domain"]], list(rows["summary"])
    assert mine["notifications"].iloc[0] == bounces["notifications"]
    assert not rows["error_code"].eq("5.1.1").loc[rows["kind"].ne("domain_bounces")].any()


def test_a_runaway_of_a_workflow_that_fans_out_is_found_by_its_send_occasions():
    # seed 17's shape: a workflow whose triggers often fan out to tens of notifications at once
    # (its hourly counts vary eleven times as much as a Poisson count's) sends 311 jobs in two
    # hours where 35 were expected: by its counts, possibly a few fan-outs more than usual; by
    # its send occasions (minutes with a send), many triggers more than usual: a runaway
    now = pd.Timestamp("2026-03-18T03:30:00Z")
    traffic = shaped_traffic(17, now, vary=True)
    rows = find_incidents(traffic.window(now - HISTORY, now)[0])
    (runaway,) = [p for p in traffic.planted if p["kind"] == "volume_spike"]
    spikes = rows[rows["kind"].eq("volume_spike") & rows["workflows"].map(
        lambda names: names[:1] == [runaway["workflow"]])]  # fmt: skip
    assert len(spikes) == 1, list(rows["summary"])
    assert abs(spikes["notifications"].iloc[0] / len(runaway["hits"]) - 1) <= 0.2


def test_a_channel_whose_every_provider_stopped_is_the_channel_s_row():
    # seed 15's shape: push stops for five hours at night; its larger provider's row misses all
    # of its 26 expected jobs in its own hours, the channel's scan took in the hours' edges and
    # misses 90%; in the provider's hours the other provider sent 2 of 21 expected jobs, as the
    # provider did, not as usual: the channel stopped, one row, its whole impact
    now = pd.Timestamp("2026-03-18T03:30:00Z")
    traffic = shaped_traffic(15, now, vary=True)
    activity, planted = traffic.window(now - HISTORY, now)
    rows = find_incidents(activity, kinds=["volume_drop"])
    (stop,) = [p for p in planted if p["kind"] == "volume_drop" and p["channel"] == "push"]
    mine = rows[rows["channel"].eq("push").fillna(False)]
    assert len(mine) == 1 and mine["provider_id"].isna().all(), list(rows["summary"])
    assert abs(mine["notifications"].iloc[0] / stop["notifications"] - 1) <= 0.2


def test_a_domain_s_bounces_with_fewer_sends_between_them_than_a_period_needs_are_found():
    # seed 13's shape: northwind.example bounces 15 notifications through two providers; one
    # provider's 9 failures come one after the other, fewer jobs than a period needs
    # (min_jobs=10): the period takes in the job nearest to them, 9 failed of 10
    now = pd.Timestamp("2026-11-01T12:00:00Z")
    rows, planted = _a_week_with_its_history(13, now)
    (bounces,) = [p for p in planted if p["kind"] == "domain_bounces"]
    mine = rows[rows["kind"].eq("domain_bounces")]
    assert mine["domain"].tolist() == [bounces["domain"]], list(rows["summary"])
    assert sorted(mine["providers"].iloc[0]) == ["mailjet", "postmark"]
    assert mine["jobs"].iloc[0] >= 10
    assert abs(mine["notifications"].iloc[0] / bounces["notifications"] - 1) <= 0.2


def test_an_outage_with_fewer_sends_than_a_period_needs_is_an_outage():
    # seed 8's shape: a provider fails all of its 9 sends in three hours at night, retried; a
    # period needs 10 jobs (min_jobs), so it takes in the send nearest to them: 9 of 10 failed,
    # an outage, not an error spike diluted by its buckets' other sends
    now = pd.Timestamp("2026-11-01T12:00:00Z")
    traffic = shaped_traffic(8, now, vary=True)
    activity, planted = traffic.window(now - HISTORY, now)
    rows = find_incidents(activity, kinds=["provider_outage", "error_spike"])
    (outage,) = [p for p in planted if p["kind"] == "provider_outage"]
    mine = rows[rows["provider_id"].eq(outage["provider_id"]).fillna(False)]
    assert mine["kind"].tolist() == ["provider_outage"], list(rows["summary"])
    assert mine["notifications"].iloc[0] == outage["notifications"]
    assert mine["jobs"].iloc[0] == 10


def _a_week_with_its_history(seed: int, now: pd.Timestamp) -> tuple[pd.DataFrame, list[dict]]:
    """The incidents found in the week before ``now`` of seed's drawn traffic, its four weeks
    before as the baseline, and those planted in the week."""
    traffic = shaped_traffic(seed, now, vary=True)
    after = now - pd.Timedelta(days=7)
    activity, planted = traffic.window(after, now)
    return find_incidents(activity, baseline=traffic.window(after - HISTORY, after)[0]), planted


def test_a_drop_s_estimate_comes_with_the_range_its_season_says_it_likely_lies_in():
    # seed 9's shape: a workflow stops for six hours on an evening that ran far quieter than its
    # weeks and the hours around it said: 146 notifications not sent, estimated 256; its range
    # (its hours' variance and how whole days vary, 95%) holds them. Counted impacts have none
    now = pd.Timestamp("2026-03-18T03:30:00Z")
    rows, planted = _a_week_with_its_history(9, now)
    (stop,) = [p for p in planted if p["kind"] == "volume_drop" and p["workflow"]]
    drop = rows[rows["kind"].eq("volume_drop")].iloc[0]
    assert drop["workflows"][:1] == [stop["workflow"]]
    assert drop["notifications_low"] <= stop["notifications"] < 0.8 * drop["notifications"]
    assert drop["notifications"] <= drop["notifications_high"]
    assert (
        f"(likely {drop['notifications_low']:,} to {drop['notifications_high']:,})"
        in drop["summary"]
    )
    counted = rows[~rows["kind"].isin(["volume_drop", "volume_spike", "traffic_shift"])]
    assert len(counted) and counted[["notifications_low", "notifications_high"]].isna().all().all()
