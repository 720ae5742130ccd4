"""Metrics: each measure checked by hand on small real frames, and on a sandbox read."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.test_charts import _detail, _job, _notification, records
from toolkit import metrics
from toolkit.errors import ParameterError
from toolkit.frames import activity_frames


def _activity():
    rows = records()
    rows[0]["subscriber"]["email"] = "Ann@Example.COM"
    rows[0]["jobs"][0]["executionDetails"][0]["createdAt"] = "2026-11-01T10:00:01.000Z"
    return activity_frames(rows)


def test_delivery_jobs_outcomes_and_timings_by_hand():
    jobs = metrics.delivery_jobs(_activity()).set_index("job_id")
    assert list(jobs.index) == ["j1", "j2", "j3", "j5", "j6"]  # the digest step j4 is no delivery
    assert jobs["outcome"].astype(str).to_dict() == {
        "j1": "finished", "j2": "failed", "j3": "finished", "j5": "finished", "j6": "in_flight",
    }  # fmt: skip
    # trigger (10:00:00) to the first Success (10:00:02); first (10:00:01) to last detail (10:00:05)
    assert jobs.loc["j1", "time_to_deliver_s"] == 2.0
    assert jobs.loc["j1", "job_duration_s"] == 4.0
    assert np.isnan(jobs.loc["j2", "time_to_deliver_s"])
    assert jobs.loc["j1", "domain"] == "example.com"
    assert jobs["domain"].drop("j1").isna().all()  # only email jobs have a recipient domain
    assert jobs.loc["j1", "workflow"] == "order"
    assert list(metrics.delivery_jobs(_activity()).columns) == list(metrics._JOB_COLUMNS)


def test_failure_rates_leave_in_flight_jobs_out_and_give_wilson_intervals():
    jobs = metrics.delivery_jobs(_activity())
    table = metrics.failure_rates(jobs, "channel").set_index("channel")
    assert table.loc["sms", ["jobs", "failed"]].tolist() == [1, 1]
    assert table.loc["chat", ["jobs", "failed", "in_flight"]].tolist() == [0, 0, 1]
    assert np.isnan(table.loc["chat", "failure_rate"])
    assert table.loc["email", "failure_rate"] == 0.0
    low, high = metrics.wilson_interval([0, 5], [10, 10])
    np.testing.assert_allclose(low, [0.0, 0.236593], atol=1e-6)
    np.testing.assert_allclose(high, [0.277533, 0.763407], atol=1e-6)


def test_percentiles_per_group():
    table = metrics.percentiles(metrics.delivery_jobs(_activity()), "channel")
    assert table.set_index("channel").loc["email", ["p50", "p95", "n"]].tolist() == [2.0, 2.0, 1]
    assert "sms" not in set(table["channel"])  # never delivered: not timed


def test_top_failures_count_failed_jobs_per_provider_and_error():
    activity = _activity()
    table = metrics.top_failures(metrics.delivery_jobs(activity), activity.notifications)
    assert table.drop(columns=["first_seen", "last_seen"]).to_dict("records") == [
        {
            "channel": "sms",
            "provider_id": "twilio",
            "error_code": "503",
            "error_text": "Timeout",
            "failed": 1,
            "notifications": 1,
            "subscribers": 1,
            "transaction_ids": ["tx-2"],
        },
    ]  # fmt: skip  (one failed job, although it has two Failed details)
    # its first and last execution details
    assert table.loc[0, "first_seen"] == pd.Timestamp("2026-11-01T11:00:00Z")
    assert table.loc[0, "last_seen"] == pd.Timestamp("2026-11-01T11:00:02Z")
    jobs = pd.DataFrame({
        "job_id": ["a", "b", "c", "d", "e"], "notification_id": ["n1", "n2", "n3", "n4", "n5"],
        "subscriber_id": ["u1", "u1", "u2", "u3", "u4"], "channel": ["sms"] * 4 + ["email"],
        "provider_id": ["p", "p", "q", "p", None], "error_code": ["E1", "E1", "E1", "E2", None],
        "error_text": ["x"] * 5, "outcome": ["failed"] * 4 + ["finished"],
        "ended_at": pd.to_datetime([f"2026-11-01T10:0{m}:00Z" for m in (3, 1, 0, 2, 4)]),
    })  # fmt: skip
    jobs["started_at"] = jobs["ended_at"]
    table = metrics.top_failures(jobs, top=2)
    assert table[["provider_id", "error_code", "failed", "subscribers"]].values.tolist() == [
        ["p", "E1", 2, 1],  # most failed jobs first
        ["q", "E1", 1, 1],  # then the earliest (10:00, before p/E2 at 10:02)
    ]
    assert len(metrics.top_failures(jobs, top=None)) == 3  # the finished job is no failure
    with pytest.raises(ParameterError, match="top"):
        metrics.top_failures(jobs, top=0)


def test_the_recipient_domain_is_the_lower_cased_part_after_the_last_at():
    emails = [" Bob@Mail.Example.org", "no-at-sign", None, "a@b@c.io", "x@"]
    rows = []
    for n, email in enumerate(emails):
        rows.append(_notification(n, _job(f"j{n}", "email", "sendgrid", "completed", _detail(f"d{n}", 1, "Success"))))  # fmt: skip
        rows[-1]["subscriber"]["email"] = email
    jobs = metrics.delivery_jobs(activity_frames(rows)).set_index("job_id").sort_index()
    assert jobs["domain"].tolist() == ["mail.example.org", pd.NA, pd.NA, "c.io", pd.NA]


def test_bad_input_is_a_parameter_error():
    activity = _activity()
    with pytest.raises(ParameterError, match="an Activity"):
        metrics.delivery_jobs(activity.jobs)
    with pytest.raises(ParameterError, match="created_at"):
        metrics.delivery_jobs(activity._replace(execution_details=pd.DataFrame({"job_id": []})))
    jobs = metrics.delivery_jobs(activity)
    with pytest.raises(ParameterError, match="column names"):
        metrics.failure_rates(jobs, "provider")
    with pytest.raises(ParameterError, match="measure"):
        metrics.percentiles(jobs, "channel", "latency")
    with pytest.raises(ParameterError, match="confidence"):
        metrics.wilson_interval([1], [2], confidence=95)


def test_empty_activity_gives_empty_frames():
    jobs = metrics.delivery_jobs(activity_frames([]))
    assert jobs.empty and list(jobs.columns) == list(metrics._JOB_COLUMNS)
    assert metrics.failure_rates(jobs, ["channel", "provider_id"]).empty


def test_on_a_sandbox_read_outcomes_agree_with_final_statuses(sandbox):
    import toolkit

    client = toolkit.connect(sandbox=sandbox)
    activity = toolkit.read_activity(client, after="2d", progress=False)
    jobs = metrics.delivery_jobs(activity)
    final = activity.jobs.set_index("job_id")["final_status"].astype(str)
    failed = set(final[final == "failed"].index)
    assert set(jobs.loc[jobs["outcome"] == "failed", "job_id"]) == failed & set(jobs["job_id"])
    rates = metrics.failure_rates(jobs, ["channel", "provider_id"])
    assert rates["failed"].sum() == len(jobs[jobs["outcome"] == "failed"]) > 0
    assert (rates["ci_low"] <= rates["failure_rate"]).all()
    assert (rates["failure_rate"] <= rates["ci_high"]).all()
