"""Charts: traces, data and colours, on small hand-built frames with the documented dtypes."""

from __future__ import annotations

import json

import pandas as pd
import plotly.graph_objects as go
import pytest

from toolkit import charts, metrics
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


def test_status_by_channel_counts_every_delivery_detail_in_status_order():
    details = details_frame()
    fig = charts.status_by_channel(details)
    details = details[details["channel"].astype(str) != "digest"]  # a step, not a channel
    assert [t.name for t in fig.data] == [
        "Success",
        "Failed",
        "Pending",
        "ReadConfirmation",
        "Mystery",
    ]
    assert _totals(fig) == details["status"].value_counts().loc[lambda c: c > 0].to_dict()
    assert sum(_totals(fig).values()) == len(details) == 10
    assert list(fig.data[0].x) == ["in_app", "email", "sms", "chat", "push"]
    assert [t.marker.color for t in fig.data] == [
        charts.STATUS_COLORS[s] for s in ("Success", "Failed", "Pending", "ReadConfirmation")
    ] + [charts.OTHER_COLOR]  # the unknown status is kept, in its own colour
    assert fig.layout.barmode == "stack"


def test_status_by_provider_orders_providers_by_size_and_keeps_missing():
    fig = charts.status_by_provider(details_frame())
    # providers as people write them; the digest step's detail is not a channel's
    assert list(fig.data[0].x) == ["SendGrid", "Twilio", "In-app (built-in)", "(none)", "FCM"]
    assert sum(_totals(fig).values()) == 10


def test_status_timeline_buckets_and_fills_gaps():
    fig = charts.status_timeline(details_frame(), freq="30min")
    assert len(fig.data[0].x) == 3  # 10:00, 10:30 (no data), 11:00
    assert _series(fig)["Failed"] == [0, 0, 2]
    assert sum(_totals(fig).values()) == 10  # the digest step's detail is left out
    with pytest.raises(ParameterError):
        charts.status_timeline(details_frame(), freq="soon")


def test_failure_rate_by_provider_from_the_activity_or_its_delivery_jobs():
    activity = sample_activity()
    # the digest step is left out; the pending chat job (no provider) is in flight: no rate
    expected = {"FCM": [0.0], "SendGrid": [0.0], "In-app (built-in)": [0.0], "Twilio": [1.0]}
    assert _series(charts.failure_rate_by_provider(activity, min_jobs=1)) == expected
    jobs = metrics.delivery_jobs(activity)
    assert _series(charts.failure_rate_by_provider(jobs, min_jobs=1)) == expected


def test_failure_rate_by_provider_leaves_thin_buckets_as_gaps():
    fig = charts.failure_rate_by_provider(sample_activity(), min_jobs=2)
    twilio = next(trace for trace in fig.data if trace.name == "Twilio")
    assert list(twilio.y) == [None]  # one failed job of one: not a 100 % spike
    assert [list(point) for point in twilio.customdata] == [[1, 1]]  # the counts stay in the hover


def test_time_to_deliver_and_job_duration_are_two_charts():
    activity = sample_activity()
    # every notification is triggered at T0; first Success: email +2 s, push +3603, in-app +3605
    fig = charts.time_to_deliver(activity)
    assert fig.layout.title.text.startswith("Time to deliver per channel")
    assert fig.layout.yaxis.type == "log"
    assert _series(fig) == {"p50": [3605.0, 2.0, 3603.0], "p95": [3605.0, 2.0, 3603.0]}
    assert list(fig.data[0].x) == ["in_app", "email", "push"]
    assert list(fig.data[0].text) == ["60 min", "2 s", "60 min"]
    # first to last detail, whatever the outcome: in-app 1 s, email 5, sms 2, chat 0, push 0
    duration = charts.job_duration(activity)
    assert duration.layout.title.text.startswith("Job duration per channel")
    assert _series(duration)["p50"] == [1.0, 5.0, 2.0, 0.0, 0.0]


def test_time_to_deliver_percentiles_by_hand():
    times = [1.0, 2.0, 3.0, 4.0, 100.0]  # one slow job must not hide the others
    jobs = pd.DataFrame({"channel": ["email"] * 5, "outcome": ["finished"] * 5,
                         "time_to_deliver_s": times})  # fmt: skip
    fig = charts.time_to_deliver(jobs)
    # p95 by linear interpolation: position 0.95 * 4 = 3.8, so 4 + 0.8 * (100 - 4)
    assert _series(fig) == {"p50": [3.0], "p95": [80.8]}
    assert list(fig.data[1].text) == ["81 s"]
    assert list(fig.data[0].customdata) == [5]  # jobs timed, in the hover


def test_failure_reasons_count_failed_jobs():
    fig = charts.failure_reasons(sample_activity())
    assert [t.name for t in fig.data] == ["Failed"]
    assert list(fig.data[0].x) == [1]  # one failed job (two Failed details)
    assert fig.data[0].y[0] == "1. Twilio · 503 · Timeout"
    assert fig.data[0].marker.color == charts.STATUS_COLORS["Failed"]


def test_delivery_funnel_is_cumulative():
    fig = charts.delivery_funnel(sample_activity())
    assert list(fig.data[0].y) == ["triggered", "sent", "delivered or read"]
    assert list(fig.data[0].x) == [5, 3, 2]


def test_incident_window_shows_the_jobs_of_its_provider_around_it():
    incident = {"kind": "provider_outage", "channel": "sms", "provider_id": "twilio",
                "domain": None, "started_at": T0 + pd.Timedelta(seconds=3600),
                "ended_at": T0 + pd.Timedelta(seconds=3660)}  # fmt: skip
    fig = charts.incident_window(sample_activity(), incident)
    assert fig.layout.title.text == "Provider outage: SMS · Twilio"
    # 1 min incident, 30 min either side in 5-min buckets from 10:30, to the window's end (the
    # last job, 11:00) rather than past it; a legend says which bars are which
    finished, failed = fig.data
    assert len(failed.x) == 7 and failed.x[0] == T0 + pd.Timedelta("30min")
    assert fig.layout.showlegend and (finished.name, failed.name) == ("finished", "failed")
    assert dict(zip(failed.x, failed.y, strict=True))[T0 + pd.Timedelta("1h")] == 1
    assert sum(failed.y) == 1 and sum(finished.y) == 0  # only twilio's sms job
    (shade,) = fig.layout.shapes
    assert (shade.x0, shade.x1) == (incident["started_at"], incident["ended_at"])


DETAIL_CHARTS = [charts.status_by_channel, charts.status_by_provider, charts.status_timeline]
JOB_CHARTS = [charts.failure_rate_by_provider, charts.failure_reasons, charts.time_to_deliver,
              charts.job_duration]  # fmt: skip


@pytest.mark.parametrize("chart", DETAIL_CHARTS)
def test_empty_details_give_a_no_data_figure(chart):
    fig = chart(activity_frames([]).execution_details)
    assert isinstance(fig, go.Figure)
    assert fig.layout.title.text.endswith("no data")
    assert not fig.data


@pytest.mark.parametrize("chart", [*JOB_CHARTS, charts.delivery_funnel])
def test_an_empty_activity_gives_a_no_data_figure(chart):
    fig = chart(activity_frames([]))
    assert fig.layout.title.text.endswith("no data")
    assert not fig.data


@pytest.mark.parametrize("chart", DETAIL_CHARTS)
@pytest.mark.parametrize("frame", ["notifications", "jobs"])
def test_detail_charts_refuse_other_frames(chart, frame):
    given = getattr(sample_activity(), frame)
    with pytest.raises(ParameterError, match=r"details=.* execution details \(activity"):
        chart(given)  # notifications have created_at and status: once a mis-titled chart


@pytest.mark.parametrize("chart", JOB_CHARTS)
@pytest.mark.parametrize("frame", ["notifications", "jobs", "execution_details"])
def test_job_charts_refuse_other_frames(chart, frame):
    given = getattr(sample_activity(), frame)
    with pytest.raises(ParameterError, match=r"jobs=.*metrics.delivery_jobs") as error:
        chart(given)
    assert error.value.value.startswith("a frame of ")


def test_wrong_types_are_refused():
    with pytest.raises(ParameterError, match="incident='a frame of notifications'"):
        charts.incident_window(sample_activity(), sample_activity().notifications)
    with pytest.raises(ParameterError, match="incident='a NoneType'"):
        charts.incident_window(sample_activity(), None)
    with pytest.raises(ParameterError, match="activity='a NoneType'"):
        charts.delivery_funnel(None)
    with pytest.raises(ParameterError, match="details='a dict'"):
        charts.status_by_channel({})
    with pytest.raises(ParameterError, match="jobs='a frame of jobs"):
        charts.failure_reasons(sample_activity().jobs)


def test_summarize_lists_traces_and_totals():
    text = charts.summarize(charts.status_by_channel(details_frame()))
    assert text.splitlines() == [
        "Execution details by channel and status",
        "  Success: 4",
        "  Failed: 2",
        "  Pending: 2",
        "  ReadConfirmation: 1",
        "  Mystery: 1",
    ]
    funnel = charts.summarize(charts.delivery_funnel(sample_activity()))
    assert funnel.endswith("notifications: triggered 5, sent 3, delivered or read 2")
    timing = charts.summarize(charts.time_to_deliver(sample_activity()))
    assert "  p50: in_app 3605, email 2, push 3603" in timing.splitlines()
    assert "Twilio: 1 points, max=1" in charts.summarize(
        charts.failure_rate_by_provider(sample_activity(), min_jobs=1)
    )


def test_figures_skip_revalidating_the_template_without_changing_it():
    """`charts._figure` sets plotly's template without validating it again (plotly's private
    ``_validate`` flag): a plotly upgrade that changes this shows here."""
    fast = charts._figure("Title", "x", "y", barmode="stack")
    checked = go.Figure(layout=charts._layout("Title", "x", "y", barmode="stack"))
    assert json.loads(fast.to_json()) == json.loads(checked.to_json())  # the same, keys aside


def test_charts_read_right_at_a_glance():
    activity = sample_activity()
    rates = charts.failure_rate_by_provider(activity)
    assert rates.layout.yaxis.title.text == "failure rate"  # once "failed jobs" over percents
    timing = charts.time_to_deliver(activity)
    assert timing.layout.yaxis.type == "log"
    assert "1 s" in timing.layout.yaxis.ticktext and "1 min" in timing.layout.yaxis.ticktext
    funnel = charts.delivery_funnel(activity).data[0]
    assert funnel.texttemplate == "%{value:,}<br>%{percentInitial:.0%}"  # one number format
