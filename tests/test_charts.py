"""Charts: traces, data and colours, on small hand-built frames with the documented dtypes."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import pytest

from toolkit import charts
from toolkit.errors import ParameterError
from toolkit.frames import activity_frames

T0 = pd.Timestamp("2026-11-01T10:00:00Z")


def _detail(detail_id, seconds, status, source="Internal", text="", raw=None):
    when = (T0 + pd.Timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    return {"_id": detail_id, "createdAt": when, "status": status, "source": source,
            "detail": text, "isRetry": False, "isTest": False, "raw": raw}  # fmt: skip


def _job(job_id, job_type, provider, status, *details):
    return {"_id": job_id, "type": job_type, "providerId": provider, "status": status,
            "step": {"_id": "s-" + job_id}, "executionDetails": list(details)}  # fmt: skip


def _notification(n, *jobs):
    return {"_id": f"n{n}", "transactionId": f"tx-{n}", "createdAt": T0.isoformat(),
            "subscriber": {"_id": f"i{n}", "subscriberId": f"user-{n}"},
            "template": {"_id": "t1", "name": "Order", "triggers": [{"identifier": "order"}]},
            "jobs": list(jobs)}  # fmt: skip


def records():
    """Five notifications: delivered email (2 s to send), failed sms, sent push plus a digest
    step, read in-app, and a pending chat job whose one detail has an unknown status."""
    timeout = '{"code": "503"}'
    return [
        _notification(1, _job("j1", "email", "sendgrid", "completed",
                              _detail("d1", 0, "Pending"), _detail("d2", 2, "Success"),
                              _detail("d3", 5, "Success", "Webhook"))),
        _notification(2, _job("j2", "sms", "twilio", "failed", _detail("d4", 3600, "Pending"),
                              _detail("d5", 3601, "Failed", text="Timeout", raw=timeout),
                              _detail("d6", 3602, "Failed", text="Timeout", raw=timeout))),
        _notification(3, _job("j3", "push", "fcm", "completed", _detail("d7", 3603, "Success")),
                      _job("j4", "digest", None, "completed", _detail("d8", 3604, "Success"))),
        _notification(4, _job("j5", "in_app", "svc", "completed", _detail("d9", 3605, "Success"),
                              _detail("d10", 3606, "ReadConfirmation"))),
        _notification(5, _job("j6", "chat", None, "pending", _detail("d11", 3607, "Mystery"))),
    ]  # fmt: skip


def sample_activity():
    """The `records` as an Activity (real frames, documented dtypes)."""
    return activity_frames(records())


def details_frame():
    return sample_activity().execution_details


def _totals(fig):
    return {t.name: sum(t.y) for t in fig.data}


def _series(fig):
    return {t.name: list(t.y) for t in fig.data}


def test_status_by_channel_counts_every_detail_in_status_order():
    details = details_frame()
    fig = charts.status_by_channel(details)
    assert [t.name for t in fig.data] == [
        "Success",
        "Failed",
        "Pending",
        "ReadConfirmation",
        "Mystery",
    ]
    assert _totals(fig) == details["status"].value_counts().loc[lambda c: c > 0].to_dict()
    assert sum(_totals(fig).values()) == len(details) == 11
    assert list(fig.data[0].x) == ["in_app", "email", "sms", "chat", "push", "digest"]
    assert [t.marker.color for t in fig.data] == [
        charts.STATUS_COLORS[s] for s in ("Success", "Failed", "Pending", "ReadConfirmation")
    ] + [charts.OTHER_COLOR]  # the unknown status is kept, in its own colour
    assert fig.layout.barmode == "stack"


def test_status_by_provider_orders_providers_by_size_and_keeps_missing():
    fig = charts.status_by_provider(details_frame())
    assert list(fig.data[0].x) == ["sendgrid", "twilio", "(none)", "svc", "fcm"]
    assert sum(_totals(fig).values()) == 11


def test_status_timeline_buckets_and_fills_gaps():
    fig = charts.status_timeline(details_frame(), freq="30min")
    assert len(fig.data[0].x) == 3  # 10:00, 10:30 (no data), 11:00
    assert _series(fig)["Failed"] == [0, 0, 2]
    assert sum(_totals(fig).values()) == 11
    with pytest.raises(ParameterError):
        charts.status_timeline(details_frame(), freq="soon")


def test_failure_rate_by_provider_from_details_and_from_jobs():
    activity = sample_activity()
    expected = {"(none)": [0.0], "fcm": [0.0], "sendgrid": [0.0], "svc": [0.0], "twilio": [1.0]}
    # the digest step is left out; the chat job without provider is kept as "(none)"
    assert (
        _series(charts.failure_rate_by_provider(activity.execution_details, min_jobs=1)) == expected
    )
    assert _series(charts.failure_rate_by_provider(activity.jobs, min_jobs=1)) == expected


def test_failure_rate_by_provider_leaves_thin_buckets_as_gaps():
    fig = charts.failure_rate_by_provider(sample_activity().jobs, min_jobs=2)
    twilio = next(trace for trace in fig.data if trace.name == "twilio")
    assert list(twilio.y) == [None]  # one failed job of one: not a 100 % spike
    assert [list(point) for point in twilio.customdata] == [[1, 1]]  # the counts stay in the hover


def test_delivery_latency_from_details_and_from_jobs():
    activity = sample_activity()
    from_details = charts.delivery_latency(activity.execution_details)
    assert _series(from_details) == {"in_app": [0.0], "email": [2.0], "push": [0.0]}
    from_jobs = charts.delivery_latency(activity.jobs)  # first to last detail of sent jobs
    assert _series(from_jobs) == {"in_app": [1.0], "email": [5.0], "push": [0.0]}


def test_top_failures_and_failure_reasons():
    activity = sample_activity()
    table = charts.top_failures(activity.execution_details, activity.notifications)
    assert table.drop(columns=["first_seen", "last_seen"]).to_dict("records") == [
        {
            "provider_id": "twilio",
            "error_code": "503",
            "error_text": "Timeout",
            "count": 2,
            "notifications": 1,
            "transaction_ids": ["tx-2"],
        }
    ]
    assert table["first_seen"][0] == T0 + pd.Timedelta(seconds=3601)
    fig = charts.failure_reasons(activity.execution_details)
    assert [t.name for t in fig.data] == ["Failed"]
    assert list(fig.data[0].x) == [2]
    assert fig.data[0].y[0] == "1. twilio · 503 · Timeout"
    assert fig.data[0].marker.color == charts.STATUS_COLORS["Failed"]


def test_delivery_funnel_is_cumulative():
    fig = charts.delivery_funnel(sample_activity())
    assert list(fig.data[0].y) == ["triggered", "sent", "delivered or read"]
    assert list(fig.data[0].x) == [5, 3, 2]


@pytest.mark.parametrize(
    "chart",
    [
        charts.status_by_channel,
        charts.status_by_provider,
        charts.status_timeline,
        charts.failure_rate_by_provider,
        charts.failure_reasons,
        charts.delivery_latency,
    ],
)
def test_empty_frames_give_a_no_data_figure(chart):
    fig = chart(activity_frames([]).execution_details)
    assert isinstance(fig, go.Figure)
    assert fig.layout.title.text.endswith("no data")
    assert not fig.data


def test_empty_activity():
    empty = activity_frames([])
    assert charts.delivery_funnel(empty).layout.title.text.endswith("no data")
    assert charts.failure_rate_by_provider(empty.jobs).layout.title.text.endswith("no data")
    assert charts.top_failures(empty.execution_details).empty


def test_summarize_lists_traces_and_totals():
    text = charts.summarize(charts.status_by_channel(details_frame()))
    assert text.splitlines() == [
        "Execution details by channel and status",
        "  Success: 5",
        "  Failed: 2",
        "  Pending: 2",
        "  ReadConfirmation: 1",
        "  Mystery: 1",
    ]
    funnel = charts.summarize(charts.delivery_funnel(sample_activity()))
    assert funnel.endswith("notifications: triggered 5, sent 3, delivered or read 2")
    latency = charts.summarize(charts.delivery_latency(details_frame()))
    assert "  email: n=1, median=2" in latency.splitlines()
    assert "twilio: 1 points, max=1" in charts.summarize(
        charts.failure_rate_by_provider(details_frame(), min_jobs=1)
    )
