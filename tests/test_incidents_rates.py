"""Failure rates against their baseline (`toolkit.incidents.rates`): rates that vary by hour of
the day, measured overdispersion, and what they change in `find_incidents`."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from toolkit.incidents import find_incidents, rates
from toolkit.incidents.scan import Evidence, Scan, flat_dispersion, p_value
from toolkit.sandbox.seed.shaped import shaped_traffic

NOW = pd.Timestamp("2026-11-01T12:00:00Z")
HISTORY = pd.Timedelta(days=28)
NIGHT = range(0, 8)  # UTC hours where the planted provider fails more (the test's own data)


def fail_more(activity, provider, code, share, rng, *, hours=NIGHT, during=None, domain=None,
              weekday=None):  # fmt: skip
    """``activity`` where a ``share`` (or a share on each day or hour: a Series by UTC day or hour) of
    ``provider``'s sends at ``hours`` (and ``during``, on ``weekday``, to recipients of
    ``domain``) that did not fail now fail with ``code``: their last execution detail a Failed
    one."""
    notes, jobs, details = activity
    began = jobs["first_execution_at"]
    if isinstance(share, pd.Series):
        step = share.index[1] - share.index[0]
        share = began.dt.floor(step).map(share).fillna(0.0).to_numpy()
    chosen = jobs["provider_id"].eq(provider).fillna(False) & jobs["final_status"].ne("failed")
    chosen &= began.dt.hour.isin(list(hours))
    if weekday is not None:
        chosen &= began.dt.day_of_week.eq(weekday)
    if during is not None:
        chosen &= (began >= during[0]) & (began < during[1])
    if domain is not None:
        email = jobs["notification_id"].map(notes.set_index("notification_id")["subscriber_email"])
        chosen &= email.str.lower().str.endswith("@" + domain).fillna(False)
    flip = chosen.fillna(False).to_numpy() & (rng.random(len(jobs)) < share)
    jobs, details = jobs.copy(), details.copy()
    jobs.loc[flip, ["final_status", "error_code", "error_text"]] = ["failed", code, "refused"]
    mine = details["job_id"].isin(set(jobs.loc[flip, "job_id"]))
    last = details[mine].groupby("job_id")["created_at"].idxmax().to_numpy()
    details.loc[last, ["status", "raw"]] = ["Failed", f'{{"code": "{code}"}}']
    return type(activity)(notes, jobs, details)


@pytest.fixture(scope="module")
def nights():
    """A quiet week and the four weeks before it where the busiest failing provider fails
    about five times as often at night (UTC 0-8) as by day, every night."""
    traffic, after = shaped_traffic(2, NOW, incidents=False), NOW - pd.Timedelta(days=7)
    week, history = traffic.window(after, NOW)[0], traffic.window(after - HISTORY, after)[0]
    failed = week.jobs[week.jobs["final_status"].eq("failed").fillna(False)]
    provider = failed["provider_id"].value_counts().index[0]
    code = failed.loc[failed["provider_id"].eq(provider), "error_code"].value_counts().index[0]
    rng = np.random.default_rng(0)
    week = fail_more(week, provider, code, 0.08, rng)
    history = fail_more(history, provider, code, 0.08, rng)
    return week, history, provider, code, rng


def test_a_rate_normally_higher_at_night_is_no_incident(nights):
    week, history, provider, _, _ = nights
    jobs = week.jobs[week.jobs["provider_id"].eq(provider).fillna(False)]
    night = jobs["first_execution_at"].dt.hour.isin(list(NIGHT))
    failed = jobs["final_status"].eq("failed")
    assert failed[night].mean() > 3 * failed[~night].mean()  # the case planted
    found = find_incidents(week, baseline=history)
    assert found.empty, list(found["summary"])
    assert "groups whose rate varies by hour" in found.attrs["baseline"]
    assert " 0 of " not in found.attrs["baseline"]


def test_a_rise_at_those_hours_is_still_found_against_their_own_rate(nights):
    week, history, provider, code, rng = nights
    night = (NOW.floor("D") - pd.Timedelta(days=1), NOW.floor("D") - pd.Timedelta(hours=18))
    risen = fail_more(week, provider, code, 0.3, rng, hours=range(0, 3), during=night)
    found = find_incidents(risen, baseline=history)
    rows = found[found["provider_id"].eq(provider).fillna(False)]
    assert len(found) == len(rows) == 1, list(found["summary"])
    row = rows.iloc[0]
    assert row["started_at"] < night[1] and row["ended_at"] > night[0]
    usual = week.jobs[week.jobs["provider_id"].eq(provider).fillna(False)]["final_status"]
    assert row["baseline_rate"] > 2 * usual.eq("failed").mean()  # the rate of those hours
    assert "at these hours" in row["summary"]


def test_a_bad_day_of_a_rate_that_wanders_from_day_to_day_is_no_incident():
    # a provider whose failure rate is its own each day (a carrier's bad day): 3% times a
    # lognormal draw per day, in the four weeks before as in the window; the window's worst
    # day at 2.5 times the usual rate is how its days vary, no incident; four hours at 40%
    # still are
    traffic, after = shaped_traffic(2, NOW, incidents=False), NOW - pd.Timedelta(days=7)
    week, history = traffic.window(after, NOW)[0], traffic.window(after - HISTORY, after)[0]
    provider = week.jobs["provider_id"].value_counts().index[0]
    rng = np.random.default_rng(3)
    days = pd.date_range((after - HISTORY).floor("D"), NOW, freq="D")
    share = pd.Series(0.03 * rng.lognormal(0, 0.5, len(days)), index=days)
    bad = NOW.floor("D") - pd.Timedelta(days=2)
    share[bad] = 0.075
    week = fail_more(week, provider, "30003", share, rng, hours=range(24))
    history = fail_more(history, provider, "30003", share, rng, hours=range(24))
    found = find_incidents(week, baseline=history)
    assert found.empty, list(found["summary"])
    hours = (bad + pd.Timedelta(hours=12), bad + pd.Timedelta(hours=16))
    risen = fail_more(week, provider, "30003", 0.4, rng, hours=range(24), during=hours)
    found = find_incidents(risen, baseline=history)
    assert len(found) == 1 and found["provider_id"].iloc[0] == provider, list(found["summary"])
    assert found["started_at"].iloc[0] < hours[1] and found["ended_at"].iloc[0] > hours[0]


def _four_weeks(rng, night: float, day: float):
    """Four weeks of hourly buckets from Oct 1 and the window's day after them: ``(start,
    step, window, trials)``, the trials Poisson of mean ``night`` at 0-8 UTC, ``day`` after."""
    start, step = pd.Timestamp("2026-10-01", tz="UTC"), pd.Timedelta("1h")
    window = (pd.Timestamp("2026-10-29", tz="UTC"), step, 24)
    trials = rng.poisson(np.tile(np.r_[np.full(8, night), np.full(16, day)], 28))[None]
    return start, step, window, trials


def test_how_much_whole_days_vary_is_measured():
    rng = np.random.default_rng(0)
    start, step, window, trials = _four_weeks(rng, 5.0, 40.0)
    steady = rng.binomial(trials, 0.03)
    assert rates.learn(steady, trials, start, step, window, "the baseline").spread[0] < 0.03
    day = np.repeat(rng.lognormal(0, 0.4, 28), 24)  # each day's rate: 0.03 times a draw
    wandering = rng.binomial(trials, 0.03 * day)
    spread = rates.learn(wandering, trials, start, step, window, "the baseline").spread[0]
    assert 0.08 < spread < 0.3  # exp(0.4**2) - 1 = 0.17
    climbing = steady.copy()  # the first three days of a rate climbing for days, at its end
    climbing[0, -72:] = rng.binomial(trials[0, -72:], np.linspace(0.05, 0.3, 72))
    assert rates.learn(climbing, trials, start, step, window, "the baseline").spread[0] < 0.03
    short = rates.learn(wandering[:, :240], trials[:, :240], start, step, window, "the window")
    assert short.spread[0] == 0  # ten days: too few to tell an incident from a bad day


def test_how_much_buckets_vary_is_measured():
    rng = np.random.default_rng(1)
    start, step, window, trials = _four_weeks(rng, 20.0, 150.0)
    steady = rng.binomial(trials, 0.03)
    assert (
        rates.learn(steady, trials, start, step, window, "the baseline", True).bucket_spread[0]
        < 0.05
    )
    hour = rng.lognormal(-0.125, 0.5, trials.shape[1])  # each hour's rate: 0.03 times a draw
    wandering = rng.binomial(trials, 0.03 * hour)
    learnt = rates.learn(wandering, trials, start, step, window, "the baseline", True)
    assert 0.15 < learnt.bucket_spread[0] < 0.4  # exp(0.5**2) - 1 = 0.28
    assert learnt.spread[0] < 0.05  # its days vary as much as their hours make them
    assert rates.learn(wandering, trials, start, step, window, "the baseline").bucket_spread[0] == 0


def test_how_much_a_rate_follows_the_services_load_is_measured():
    # the service sends its hours' usual load but for bursts (a campaign, a weekly report) of
    # 2 to 6 times it in one hour of ten; a group failing 3% times the load's ratio to its
    # hour's usual to the power 0.7 follows it (its window's hour at 4 times the load: about
    # 4**0.7 = 2.6 times the rate of a usual hour); a steady group and one whose bursts of
    # failures come at other hours (its incidents) do not
    rng = np.random.default_rng(2)
    start, step, window, usual = _four_weeks(rng, 40.0, 300.0)
    ratio = np.where(rng.random(usual.shape[1]) < 0.1, rng.uniform(2, 6, usual.shape[1]), 1.0)
    trials = rng.poisson(usual * ratio)
    now = np.r_[np.full(8, 40.0), np.full(16, 300.0)]
    now[12] *= 4
    load = trials.sum(0).astype(float), now
    following = rng.binomial(trials, 0.03 * ratio**0.7)
    learnt = rates.learn(following, trials, start, step, window, "the baseline", load=load)
    assert learnt.by_load == 1
    assert 2.2 < learnt.weight[0, 12] / learnt.weight[0, 13] < 3.1
    assert 2.2 < learnt.weigh(0, window[0].value + np.array([12, 12]) * step.value,
                              pd.Timedelta(0)) / learnt.weigh(0, window[0].value + np.array([13, 13]) * step.value, pd.Timedelta(0)) < 3.1  # fmt: skip
    minutes = (window[0], pd.Timedelta("1min"), 24 * 60)  # a batch's hour sent in its first minute
    at_once = np.zeros(24 * 60)
    at_once[::60] = now
    fine = rates.learn(
        following, trials, start, step, minutes, "the baseline", load=(load[0], at_once)
    )
    assert np.allclose(fine.load[0].reshape(24, 60), learnt.load[0][:, None])
    steady = rng.binomial(trials, 0.03)
    hit = steady.copy()
    elsewhere = np.flatnonzero(ratio == 1)[::20]
    hit[0, elsewhere] = rng.binomial(trials[0, elsewhere], 0.2)
    for counts in (steady, hit):
        learnt = rates.learn(counts, trials, start, step, window, "the baseline", load=load)
        assert learnt.by_load == 0 and learnt.load is None


def test_a_providers_bad_hour_is_no_incident_of_its_codes():
    # a provider whose failure rate is its own each hour (its load, its own trouble): 1% times
    # a lognormal draw per hour (mean 1), with each of two codes, in the four weeks before as
    # in the window; the window's busiest hour at six times the usual rate of each is how its
    # hours vary, no incident (without their spread measured: a failure row and a 503 row);
    # four hours at 40% of one code still are
    traffic, after = shaped_traffic(2, NOW, incidents=False), NOW - pd.Timedelta(days=7)
    week, history = traffic.window(after, NOW)[0], traffic.window(after - HISTORY, after)[0]
    provider = week.jobs["provider_id"].value_counts().index[0]
    mine = week.jobs[week.jobs["provider_id"].eq(provider).fillna(False)]
    bad = mine["first_execution_at"].dt.floor("h").value_counts().idxmax()
    rng = np.random.default_rng(5)
    hours = pd.date_range((after - HISTORY).floor("D"), NOW, freq="h")
    share = pd.Series(0.01 * rng.lognormal(-0.32, 0.8, len(hours)), index=hours)
    share[bad] = 0.06
    for code in ("503", "429"):
        week = fail_more(week, provider, code, share, rng, hours=range(24))
        history = fail_more(history, provider, code, share, rng, hours=range(24))
    found = find_incidents(week, baseline=history)
    assert found.empty, list(found["summary"])
    during = (bad - pd.Timedelta(hours=4), bad)
    risen = fail_more(week, provider, "503", 0.4, rng, hours=range(24), during=during)
    found = find_incidents(risen, baseline=history)
    assert len(found) == 1 and found["provider_id"].iloc[0] == provider, list(found["summary"])
    assert found["started_at"].iloc[0] < during[1] and found["ended_at"].iloc[0] > during[0]


def test_a_rate_normally_higher_on_monday_mornings_is_no_incident():
    # a weekly batch every Monday morning makes a provider fail more then (rate limited), in
    # the four weeks before as in the window: the hours of the week, not an incident
    traffic, after = shaped_traffic(2, NOW, incidents=False), NOW - pd.Timedelta(days=7)
    week, history = traffic.window(after, NOW)[0], traffic.window(after - HISTORY, after)[0]
    failed = week.jobs[week.jobs["final_status"].eq("failed").fillna(False)]
    provider = failed["provider_id"].value_counts().index[0]
    rng = np.random.default_rng(1)
    monday = {"hours": range(9, 13), "weekday": 0}
    week = fail_more(week, provider, "RateLimited", 0.25, rng, **monday)
    history = fail_more(history, provider, "RateLimited", 0.25, rng, **monday)
    found = find_incidents(week, baseline=history)
    assert found.empty, list(found["summary"])
    assert "by hour of the week" in found.attrs["baseline"]


def test_a_flat_rate_does_not_vary_by_hour_and_a_nightly_one_does():
    rng = np.random.default_rng(0)
    hours = 28 * 24
    trials = rng.poisson(np.tile(np.r_[np.full(8, 5.0), np.full(16, 60.0)], 28))[None]
    window = (pd.Timestamp("2026-10-29", tz="UTC"), pd.Timedelta("1h"), 72)
    start, step = pd.Timestamp("2026-10-01", tz="UTC"), pd.Timedelta("1h")
    flat = rng.binomial(trials, 0.03)
    learnt = rates.learn(flat, trials, start, step, window, "the baseline")
    assert not learnt.varies.any() and learnt.weight is None
    nightly = rng.binomial(trials, np.tile(np.r_[np.full(8, 0.09), np.full(16, 0.03)], 28))
    nightly[0, 100:103] = trials[0, 100:103]  # an outage in the history is not the norm
    learnt = rates.learn(nightly, trials, start, step, window, "the baseline")
    assert learnt.varies.all()
    night = learnt.weight[0, :8].mean() / learnt.weight[0, 8:24].mean()
    assert 2.3 < night < 3.7
    assert len(learnt.weight[0]) == 72 and learnt.dispersion[0] < 1.3
    short = rates.learn(nightly[:, : hours // 2], trials[:, : hours // 2], start, step, window,
                        "the baseline")  # fmt: skip
    assert not short.varies.any()  # two weeks: too short, flat (and said so)
    assert rates.describe([short]).startswith("flat failure rates")
    assert learnt.by_week == 0  # the hours of the day say it all


def test_a_rate_higher_every_monday_morning_varies_by_hour_of_the_week():
    rng = np.random.default_rng(0)
    start, step = pd.Timestamp("2026-10-05", tz="UTC"), pd.Timedelta("1h")  # a Monday
    trials = rng.poisson(100.0, (1, 28 * 24))
    monday = np.zeros(7 * 24, bool)
    monday[6:9] = True  # Mondays 06:00-09:00 UTC
    rate = np.where(np.tile(monday, 4), 0.2, 0.03)
    window = (pd.Timestamp("2026-11-02", tz="UTC"), step, 24)  # the next Monday
    learnt = rates.learn(rng.binomial(trials, rate), trials, start, step, window, "the baseline")
    assert learnt.varies.all() and learnt.by_week == 1
    weight = learnt.weight[0]
    assert 4.5 < weight[6:9].mean() / np.r_[weight[:6], weight[9:]].mean() < 7.5  # 0.2 / 0.034
    assert "1 of them by hour of the week too" in rates.describe([learnt])
    at = np.array([pd.Timestamp("2026-11-02T07:30", tz="UTC").value])  # a job: its own slot
    assert learnt.weigh(0, at, pd.Timedelta(0)) == pytest.approx(weight[7])
    assert learnt.weigh(0, at, pd.Timedelta(hours=2)) == pytest.approx(weight[9])  # usual
    none = rates.learn(np.zeros((0, 28 * 24)), np.zeros((0, 28 * 24)), start, step, window,
                       "the window")  # fmt: skip
    assert none.weight is None and not none.varies.size  # no group: nothing to learn


def test_overdispersion_is_measured():
    rng = np.random.default_rng(1)
    trials = np.full(600, 50.0)
    binomial = rng.binomial(50, 0.05, 600).astype(float)
    # each bucket's rate scaled by a gamma draw: variance 2.5 + 6.25 / 3, 1.83 times the mean
    bunched = rng.poisson(2.5 * rng.gamma(3.0, 1 / 3, 600)).astype(float)
    assert flat_dispersion(binomial, trials) < 1.2
    assert 1.5 < flat_dispersion(bunched, trials) < 2.2
    incident = bunched.copy()
    incident[:6] = 40  # the history's own incident: left out
    assert flat_dispersion(incident, trials) < 2.2


def test_an_incident_holding_much_of_a_short_window_is_tested_with_the_rest_s_dispersion():
    """A Monitor's first minutes: a provider seldom used for three hours (1 job a minute, none
    failed), then live traffic in which it fails 90% (two minutes of 16 jobs). The outage
    raises the window's mean rate, so that around it the other buckets look too low and its
    own are not cut: the dispersion is near 5. Its period is tested with the dispersion around
    the rest's rate, where the outage is cut: about 1."""
    trials = np.r_[np.ones(40), 16.0, 17.0][None, :]
    events = np.r_[np.zeros(40), 14.0, 16.0][None, :]
    phi = np.array([flat_dispersion(events[0], trials[0])])
    assert phi[0] > 4
    rule = Evidence(5, 3, 2.0)
    pick = Scan(events, trials, np.zeros(1, int), rule, dispersion=phi, own=np.ones(1, bool))
    blurred = Scan(events, trials, np.zeros(1, int), rule, dispersion=phi)
    (best,), (wide,) = pick.first_round(), blurred.first_round()
    assert (best.first, best.stop) == (40, 42) and best.p_value < 1e-9
    assert pick.period_law(0, 40, 42, expected=0.1, rate=0.0) == (1.0, 1.0)
    assert wide.p_value > 1e-4  # the old test: not significant over a few thousand periods


def test_a_period_under_a_day_is_tested_at_its_day_s_level_as_the_hours_around_show_it():
    # hourly buckets of 100 sends, 2% failing, of a group whose whole days vary by a relative
    # variance of 0.3: four hours with 8 failures expected
    trials, rule = np.full((1, 72), 100.0), Evidence(10, 5, 2.0)

    def law(around: float) -> tuple[float, float]:
        events = np.full((1, 72), around)
        scan = Scan(events, trials, np.zeros(1, int), rule, spread=np.array([0.3]),
                    bucket_days=1 / 24)  # fmt: skip
        return scan.period_law(0, 36, 40, expected=8.0, rate=0.02)

    level, phi = law(2.0)  # the hours around at the usual rate: a usual day, and known to be
    assert level == pytest.approx(1.0) and phi < 1.2  # not 1 + 0.3 * 8 = 3.4: any day's
    # three times the usual: 1.8e-5, where as likely a whole bad day it was 0.01
    assert p_value(24 / phi, 400 * level, 1000 / phi, 50_000) < 1e-4
    assert p_value(24 / 3.4, 400, 1000 / 3.4, 50_000) > 1e-2
    level, phi = law(4.0)  # the hours around at twice the usual: a bad day
    assert 1.8 < level < 2.0
    assert p_value(24 / phi, 400 * level, 1000 / phi, 50_000) > 1e-2  # 1.5 times the day's


def test_a_steady_error_that_stops_before_a_window_read_alone_ends_is_no_incident():
    # 2% of a push provider's sends fail Unregistered for 26 of 28 days, then none (another
    # failure took those sends over): the window saw the rate fall at its end, not rise
    traffic, after = shaped_traffic(2, NOW, incidents=False), NOW - HISTORY
    activity = traffic.window(after, NOW)[0]
    push = activity.jobs[activity.jobs["type"].astype(str).eq("push")]
    provider = push["provider_id"].value_counts().index[0]
    until = (after, NOW - pd.Timedelta(days=2))
    steady = fail_more(activity, provider, "Unregistered", 0.02, np.random.default_rng(0),
                       hours=range(24), during=until)  # fmt: skip
    found = find_incidents(steady)
    assert found.empty, list(found["summary"])
    # the same error rising for the last 2 days is one
    until = (NOW - pd.Timedelta(days=2), NOW)
    risen = fail_more(activity, provider, "Unregistered", 0.05, np.random.default_rng(0),
                      hours=range(24), during=until)  # fmt: skip
    found = find_incidents(risen)
    assert found["provider_id"].tolist() == [provider], list(found["summary"])
