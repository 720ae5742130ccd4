"""Percentiles read from a histogram and the chosen bins equal SQL's percentile_cont exactly."""

import numpy as np
import pandas as pd
import pytest

from toolkit import counts


def _jobs(seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = 20_000
    values = np.round(rng.lognormal(1.2, 0.8, n), 3)  # milliseconds: many ties
    values[:50] = 0.0  # sent at once
    values[50:60] = -0.001  # a clock running behind
    values[rng.random(n) < 0.05] = np.nan  # never delivered
    return pd.DataFrame(
        {
            "channel": pd.array(rng.choice(["email", "sms", "push"], n), dtype="string"),
            "provider_id": pd.array(rng.choice(["a", "b", None], n), dtype="string"),
            "outcome": "finished",
            "failed_attempts": 0,
            "triggered_at": pd.Timestamp("2026-11-01", tz="UTC"),
            "time_to_deliver_s": values,
        }
    ).astype({"provider_id": "string"})


def _expected(values: pd.Series, q: float):
    """The linear interpolation at rank q (n - 1) (numpy rounds its last bit differently)."""
    present = values.dropna().to_numpy()
    return pytest.approx(float(np.percentile(present, q * 100)), rel=1e-12, abs=1e-15)


def test_percentiles_equal_the_linear_interpolation_of_the_sorted_values():
    jobs = _jobs()
    quantiles = (0.0, 0.05, 0.5, 0.9, 0.95, 0.99, 1.0)
    overall, by_channel, by_pair = counts.summaries(
        jobs, [(), "channel", ["channel", "provider_id"]], quantiles=quantiles
    )
    for q in quantiles:
        name = counts.percentile_name(q)
        assert overall[name].iloc[0] == _expected(jobs["time_to_deliver_s"], q)
        for row in by_channel.itertuples():
            own = jobs.loc[jobs["channel"] == row.channel, "time_to_deliver_s"]
            assert getattr(row, name) == _expected(own, q)
        for _, row in by_pair.iterrows():
            same = jobs["channel"] == row["channel"]
            same &= jobs["provider_id"].isna() if pd.isna(row["provider_id"]) else jobs["provider_id"] == row["provider_id"]  # fmt: skip
            assert row[name] == _expected(jobs.loc[same, "time_to_deliver_s"], q)


def test_a_group_without_a_timed_job_has_no_percentile():
    jobs = _jobs().head(3).assign(channel=pd.array(["email", "sms", "sms"], dtype="string"))
    jobs["time_to_deliver_s"] = [np.nan, 2.5, 4.5]
    table = counts.summary(jobs, "channel")
    assert table["p50"].isna().tolist() == [True, False]
    assert table["p50"].iloc[1] == 3.5 and table["n"].tolist() == [0, 2]


def test_no_timed_job_at_all_gives_no_percentile():
    jobs = _jobs().head(2).assign(time_to_deliver_s=np.nan)
    assert counts.summary(jobs)["p50"].isna().all()
    assert len(counts.summary(jobs.head(0), "channel")) == 0
