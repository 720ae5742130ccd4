"""find_incidents on traffic shaped like a real product's at other sizes than the sweep's 2,000
notifications a day: a small product's 600 and a larger one's 8,000 (`shaped_traffic`'s
``scale``). Small counts leave hours the history expects nothing at; large ones make days that
vary together weigh more than their hours."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from toolkit.incidents import find_incidents, season
from toolkit.sandbox.seed.shaped import shaped_traffic

HISTORY = pd.Timedelta(days=28)


def found(seed: int, now: str, days: int, scale: float, *, incidents: bool = False):
    """The incidents of the ``days`` ending at ``now`` (with the four weeks before as
    ``baseline=`` under 28 days), and the traffic."""
    end = pd.Timestamp(now)
    traffic = shaped_traffic(seed, end, scale=scale, incidents=incidents)
    after = end - pd.Timedelta(days=days)
    base = traffic.window(after - HISTORY, after)[0] if days < 28 else None
    return find_incidents(traffic.window(after, end)[0], baseline=base), traffic


@pytest.mark.parametrize(
    ("seed", "now", "scale"),
    [(2, "2026-11-01T12:00:00Z", 0.3), (2, "2026-07-04T18:45:00Z", 4.0)],
)
def test_days_as_unlike_as_a_months_days_are_no_drop(seed, now, scale):
    # quiet weeks whose days vary by a seventh: three quiet days in a row (0.3), a quiet night
    # (4.0) were drops when the days' spread was the median of a month's 28 days
    rows = found(seed, now, 7, scale)[0]
    assert rows.empty, list(rows["summary"])


def test_a_months_day_spread_is_seldom_half_the_truth():
    rng = np.random.default_rng(7)
    estimates = []
    for _ in range(150):  # months of four weeks whose days vary by 14% (relative variance 0.02)
        level = np.repeat(rng.gamma(50, 1 / 50, (1, 4, 7)), 24, axis=2)
        hours = rng.gamma(25, 1 / 25, (1, 4, season.WEEK))
        weeks = rng.poisson(10.0 * level * hours).astype(float)
        estimates.append(season.day_spread(weeks, season.dispersion(weeks))[0])
    assert np.mean(np.array(estimates) < 0.01) < 0.04  # the median's: 7%


def test_a_burst_where_the_history_sent_nothing_is_no_spike():
    # 600 a day: a small workflow's fan-out of 11 at 04:32, an hour each of its weeks left at
    # 0 (the median of sends now and then)
    rows = found(3, "2026-07-04T18:45:00Z", 28, 0.3)[0]
    assert rows.empty, list(rows["summary"])


def test_a_small_products_runaway_is_a_spike_beyond_its_bursts():
    # 90 sends in 90 minutes where 3 were expected: more than any week's bursts, however
    # they scored against an hour the history left at nothing
    rows, traffic = found(1, "2026-11-01T12:00:00Z", 28, 0.3, incidents=True)
    runaway = next(p for p in traffic.planted if p["kind"] == "volume_spike")
    spikes = rows[rows["kind"].eq("volume_spike")]
    assert runaway["workflow"] in {w[0] for w in spikes["workflows"]}, list(rows["summary"])
