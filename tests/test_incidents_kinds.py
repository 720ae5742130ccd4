"""find_incidents on every kind of planted incident (other providers than the default ones), on
the quiet data set, against a separate baseline, and at the edges of its thresholds."""

from __future__ import annotations

import pandas as pd
import pytest

import toolkit
from tests.conftest import NOW
from tests.test_incidents import matches
from toolkit import metrics
from toolkit.incidents import COLUMNS, KINDS, find_incidents

SIZES = {"notifications": 10_000, "subscribers": 1_000}
#: One incident of every kind, none on the default incidents' providers where it can be helped.
EVERY_KIND = [
    {"kind": "provider_outage", "provider_id": "sendgrid", "start": "200h", "duration": "4h"},
    {"kind": "error_spike", "provider_id": "twilio", "error_code": "30003", "start": "150h",
     "duration": "2h"},
    {"kind": "domain_bounces", "domain": "gmail.com", "start": "100h", "duration": "6h"},
    {"kind": "volume_drop", "channel": "sms", "start": "60h", "duration": "6h"},
    {"kind": "latency_degradation", "provider_id": "apns", "start": "290h", "duration": "4h"},
    {"kind": "stale_credentials", "provider_id": "expo", "start": "30h", "share": 0.5},
]  # fmt: skip
#: A short outage at night: the sandbox plants a dozen SMS in it, all failing.
NIGHT = {"kind": "provider_outage", "provider_id": "twilio", "start": "2026-10-23T03:00:00Z",
         "duration": "12m"}  # fmt: skip


def read(**options):
    with toolkit.sandbox.start(seed=1, now=NOW, **SIZES, **options) as sandbox:
        client = toolkit.connect(sandbox=sandbox)
        return toolkit.read_activity(client, after="14d", progress=False), sandbox.incidents


@pytest.fixture(scope="module")
def every_kind():
    activity, planted = read(incidents=[*EVERY_KIND, NIGHT])
    return activity, planted, find_incidents(activity)


@pytest.fixture(scope="module")
def quiet():
    return read(incidents="none")[0]


def test_every_kind_is_found_once(every_kind):
    _, planted, found = every_kind
    # one row each; spikes and shifts are planted on shaped traffic (tests/test_incidents_season.py)
    planted_kinds = [kind for kind in KINDS if kind not in ("volume_spike", "traffic_shift")]
    assert sorted(found["kind"]) == sorted([*planted_kinds, "provider_outage"])
    for incident in planted:
        if incident["kind"] == "volume_drop":
            continue  # below: a channel-wide drop, and an estimate of what is missing
        rows = [matches(row, incident) for _, row in found.iterrows()]
        assert rows.count(True) == 1, incident["summary"]


def test_a_silent_channel_is_one_row_with_an_estimate_of_what_is_missing(every_kind):
    _, planted, found = every_kind
    drop = found.set_index("kind").loc["volume_drop"]
    spec = next(i for i in planted if i["kind"] == "volume_drop")
    assert drop["channel"] == "sms" and drop["jobs"] == 0 and pd.isna(drop["error_code"])
    assert drop["started_at"] <= pd.Timestamp(spec["end"]) and drop["ended_at"] >= pd.Timestamp(
        spec["start"]
    )
    # Both counts are draws of a Poisson count (what was suppressed, what the baseline share
    # expects): within two standard deviations of each other.
    assert abs(drop["notifications"] - spec["notifications"]) <= 2 * spec["notifications"] ** 0.5
    assert "were expected" in drop["summary"]


def test_each_kind_says_what_it_is(every_kind):
    found = every_kind[2].set_index("kind")
    assert found.loc["stale_credentials", "ongoing"]
    assert found.loc["stale_credentials", "error_code"] == "DeviceNotRegistered"
    assert found.loc["domain_bounces", "domain"] == "gmail.com"
    assert found.loc["error_spike", "error_code"] == "30003"
    assert not found.loc[["provider_outage", "error_spike", "domain_bounces"], "ongoing"].any()
    latency = found.loc["latency_degradation"]
    assert pd.isna(latency["example_error"]) and "s to send (p95)" in latency["summary"]
    for kind, row in found.iterrows():
        assert (
            row["p_value"] <= 0.01
            and row["failure_rate"] > row["baseline_rate"]
            or kind == "volume_drop"
        )
        assert f"{row['notifications']:,}" in row["summary"]


def test_the_quiet_data_set_has_no_incident(quiet):
    found = find_incidents(quiet)
    assert found.empty and list(found.columns) == list(COLUMNS)
    assert found.attrs["reason"] == "no period of any group departs from its baseline"
    assert found.attrs["checked"]["tests"] > 1000  # what was examined


def test_a_separate_baseline_replaces_the_rest_of_the_window(every_kind, quiet):
    activity, planted, _ = every_kind
    found = find_incidents(activity, baseline=quiet, kinds=["provider_outage", "domain_bounces"])
    for incident in planted[:3:2]:
        assert [matches(row, incident) for _, row in found.iterrows()].count(True) == 1
    assert find_incidents(quiet, baseline=quiet).empty


def test_the_minimum_evidence_is_a_boundary(every_kind):
    activity, _, found = every_kind
    outage = found[found["provider_id"].eq("sendgrid") & found["kind"].eq("provider_outage")]
    jobs, people = int(outage["jobs"].iloc[0]), int(outage["subscribers"].iloc[0])

    def found_with(**options):
        rows = find_incidents(activity, kinds=["provider_outage"], **options)
        return rows[rows["provider_id"].eq("sendgrid")]

    assert len(found_with(min_jobs=jobs)) == len(found_with(min_failed=people)) == 1
    assert found_with(min_failed=people + 1).empty
    # a run of failures with fewer jobs than a period needs takes in the jobs nearest to it
    wider = found_with(min_jobs=jobs + 1)
    assert wider["jobs"].tolist() == [jobs + 1]
    assert wider["failed_jobs"].tolist() == outage["failed_jobs"].tolist()


def test_two_of_two_failed_at_night_is_no_incident_even_with_no_minimum(quiet):
    """The quiet data set has its background failures: somewhere a provider's two jobs in a
    row both failed within minutes; the test with its correction rejects them."""
    jobs = metrics.delivery_jobs(quiet).sort_values("started_at")
    jobs = jobs[jobs["outcome"].isin(["finished", "failed"])]
    failed = jobs["outcome"].eq("failed")
    pair = jobs.groupby("provider_id")["outcome"].shift().eq("failed") & failed
    gap = jobs.groupby("provider_id")["started_at"].diff() < pd.Timedelta("15min")
    assert (pair & gap).any()  # 2 of 2 failed
    assert find_incidents(quiet, min_jobs=1, min_failed=1, min_ratio=1).empty
