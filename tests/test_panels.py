"""Panels and the Explorer, driven from code (``set``) and through their widgets."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from test_charts import sample_activity

from toolkit.errors import ParameterError, ServiceError
from toolkit.panels import (
    ActivityFilter,
    ActivityPanel,
    Explorer,
    SubscriberFilter,
    SubscriberPanel,
)

NOW = datetime(2026, 11, 1, 12, tzinfo=UTC)


def _recorder(panel):
    calls = []
    panel.on_change(calls.append)
    return calls


def test_filter_is_frozen_and_normalized():
    value = ActivityFilter(channels="email, sms", emails=["a@x.com", " "], topic_key="  ")
    assert value.channels == ("email", "sms")
    assert value.emails == ("a@x.com",)
    assert value.topic_key is None
    with pytest.raises(AttributeError):
        value.channels = ()
    with pytest.raises(ParameterError, match="channels"):
        ActivityFilter(channels=["fax"])
    with pytest.raises(ParameterError, match="period"):
        ActivityFilter(period="2d")


def test_to_read_kwargs_presets_and_custom_range():
    assert ActivityFilter(period="7d", channels=["sms"], workflows=["t1"]).to_read_kwargs(NOW) == {
        "after": NOW - timedelta(days=7),
        "before": NOW,
        "channels": ["sms"],
        "templates": ["t1"],
    }
    custom = ActivityFilter(period="custom", after="2026-10-30T00:00:00Z", before="1h")
    kwargs = custom.to_read_kwargs(NOW)
    assert kwargs["after"] == datetime(2026, 10, 30, tzinfo=UTC)
    assert kwargs["before"] == NOW - timedelta(hours=1)
    everything = ActivityFilter(severity=["high"], subscriber_ids="u1,u2", emails="a@x.com",
                                transaction_id="tx", topic_key="k", failed_only=True,
                                providers="twilio", error_text="time")  # fmt: skip
    assert set(everything.to_read_kwargs(NOW)) == {
        "after",
        "before",
        "severity",
        "subscriber_ids",
        "emails",
        "transaction_id",
        "topic_key",
    }  # fmt: skip  (the client-side filters are not sent)
    with pytest.raises(ParameterError):
        ActivityFilter(period="custom", after="yesterday").to_read_kwargs(NOW)
    with pytest.raises(ParameterError):
        ActivityFilter(period="custom", after="1h", before="2h").to_read_kwargs(NOW)


def _consistent(activity):
    assert set(activity.jobs["notification_id"]) <= set(activity.notifications["notification_id"])
    assert set(activity.execution_details["job_id"]) <= set(activity.jobs["job_id"])


def test_apply_keeps_linked_frames_consistent():
    activity = sample_activity()
    assert ActivityFilter().apply(activity) is activity
    failed = ActivityFilter(failed_only=True).apply(activity)
    assert list(failed.jobs["job_id"]) == ["j2"]
    assert list(failed.notifications["transaction_id"]) == ["tx-2"]
    assert len(failed.execution_details) == 3  # every detail of the failed job
    _consistent(failed)
    by_provider = ActivityFilter(providers=["fcm", "svc"]).apply(activity)
    assert list(by_provider.jobs["job_id"]) == ["j3", "j5"]
    assert list(by_provider.notifications["notification_id"]) == ["n3", "n4"]
    _consistent(by_provider)
    by_text = ActivityFilter(error_text="TIMEOUT").apply(activity)
    assert list(by_text.jobs["job_id"]) == ["j2"]
    assert list(ActivityFilter(error_text="503").apply(activity).jobs["job_id"]) == ["j2"]
    assert ActivityFilter(error_text="sent").apply(activity).notifications.empty  # errors only
    assert type(by_text) is type(activity)


def test_set_fires_once_per_real_change():
    panel = ActivityPanel()
    calls = _recorder(panel)
    panel.set(channels=["email", "sms"], severity=["high"])
    assert len(calls) == 1
    assert calls[0] == panel.value
    assert panel.value.channels == ("email", "sms")
    panel.set(channels=("email", "sms"))  # no-op
    panel.set(severity="high")  # normalizes to the same value: no-op
    assert len(calls) == 1
    # the widgets show the value
    assert panel._fields["channels"].value == ("email", "sms")
    assert panel._fields["severity"].value == ("high",)


def test_widgets_drive_the_value():
    panel = ActivityPanel(workflows={"order": "t1"})
    calls = _recorder(panel)
    panel._fields["failed_only"].value = True
    panel._fields["emails"].value = "a@x.com, b@y.org"
    panel._fields["workflows"].value = ("t1",)
    assert len(calls) == 3
    assert panel.value == ActivityFilter(failed_only=True, emails=("a@x.com", "b@y.org"),
                                         workflows=("t1",))  # fmt: skip
    panel._fields["emails"].value = "a@x.com,b@y.org"  # same filter
    assert len(calls) == 3


def test_custom_range_and_period_widgets():
    panel = ActivityPanel()
    assert panel._fields["after"].disabled
    panel.set(after="2026-10-30T00:00:00Z")
    assert panel.value.period == "custom"
    assert panel._fields["period"].value == "custom"
    assert not panel._fields["after"].disabled
    panel._fields["period"].value = "7d"
    assert panel.value.period == "7d"
    assert panel._fields["after"].disabled


def test_bad_value_from_code_raises_and_changes_nothing():
    panel = ActivityPanel()
    calls = _recorder(panel)
    with pytest.raises(ParameterError):
        panel.set(severity=["urgent"])
    assert panel.value == ActivityFilter()
    assert not calls


def test_workflow_choices_from_a_frame_and_unknown_ids_kept():
    activity = sample_activity()
    panel = ActivityPanel(workflows=activity.notifications)
    assert panel._fields["workflows"].options == (("order", "t1"),)
    panel.set(workflows=["t9"])
    assert panel._fields["workflows"].value == ("t9",)


def test_callback_errors_are_shown_in_the_panel():
    panel = SubscriberPanel()

    def broken(value):
        raise RuntimeError("callback failed")

    panel.on_change(broken)
    panel.set(email="a@x.com")
    assert "RuntimeError: callback failed" in panel.output.outputs[0]["text"]


def test_subscriber_panel():
    panel = SubscriberPanel()
    calls = _recorder(panel)
    panel._fields["name"].value = " Ada "
    panel.set(email="ada@x.com", phone="")
    assert len(calls) == 2
    assert panel.value == SubscriberFilter(email="ada@x.com", name="Ada")
    assert panel.value.to_search_kwargs() == {"email": "ada@x.com", "name": "Ada"}


def test_explorer_refreshes_on_change_and_applies_the_client_side():
    activity = sample_activity()
    fetched = []

    def fetch(value):
        fetched.append(value)
        return activity

    panel = ActivityPanel()
    explorer = Explorer(panel, fetch)
    assert len(fetched) == 1
    assert explorer.data is activity
    assert len(explorer.figures) == 3
    assert "5 notifications" in explorer.status.value
    panel.set(failed_only=True)  # client side only: no new fetch
    assert len(fetched) == 1
    assert list(explorer.data.notifications["notification_id"]) == ["n2"]
    panel.set(channels=["sms"])
    assert len(fetched) == 2
    assert fetched[-1].channels == ("sms",)
    explorer.refresh(force=True)
    assert len(fetched) == 3
    table = explorer.table.outputs[0]["data"]["text/html"]
    assert "tx-2" in table and "payload" not in table


def test_explorer_shows_errors_in_the_panel_output():
    def fetch(value):
        if value.period == "custom":
            raise ServiceError("GET", "/v1/notifications", 402, "retention exceeded")
        return sample_activity()

    panel = ActivityPanel()
    explorer = Explorer(panel, fetch, charts=[])
    panel.set(period="custom", after="2020-01-01T00:00:00Z")  # must not raise
    assert isinstance(explorer.error, ServiceError)
    assert "ServiceError: GET /v1/notifications -> 402" in panel.output.outputs[0]["text"]
    assert explorer.data is not None  # the last good data stay
    panel.set(period="24h")
    assert explorer.error is None
    assert panel.output.outputs == ()


def test_explorer_of_subscribers_shows_no_object_columns():
    import pandas as pd

    frame = pd.DataFrame({"subscriber_id": ["u1"], "data": [{"secret": "x"}]})
    frame["subscriber_id"] = frame["subscriber_id"].astype("string")
    explorer = Explorer(SubscriberPanel(), lambda value: frame, charts=[])
    html = explorer.table.outputs[0]["data"]["text/html"]
    assert "u1" in html and "secret" not in html
    assert explorer.status.value == "1 rows"


def test_explorer_against_the_sandbox(sandbox):
    from toolkit.client import connect
    from toolkit.read import read_activity

    client = connect(sandbox=sandbox, progress=False)
    now = client.now()  # one window for every read: the sandbox keeps sending
    fetched = []

    def fetch(value):
        fetched.append(value)
        return read_activity(client, progress=False, **value.to_read_kwargs(now))

    panel = ActivityPanel(value=ActivityFilter(period="30d", channels=["sms"]))
    explorer = Explorer(panel, fetch)
    full = explorer.data
    assert len(full.notifications) > 100
    assert all("sms" in channels for channels in full.notifications["channels"])
    panel.set(failed_only=True, providers=["twilio"])
    assert len(fetched) == 1
    failed = explorer.data
    _consistent(failed)
    expected = full.notifications.loc[full.notifications["status"] == "failed", "notification_id"]
    assert set(failed.notifications["notification_id"]) <= set(expected)
    assert set(failed.jobs["final_status"].astype(str)) == {"failed"}
    assert set(failed.jobs["provider_id"]) == {"twilio"}
    panel.set(error_text="20503")  # the planted outage's code
    codes = explorer.data.execution_details["error_code"].dropna()
    assert len(codes) and set(codes) >= {"20503"}
    assert explorer.figures[0].data  # the charts were redrawn on the filtered data


def test_explorer_status_takes_its_numbers_from_metrics():
    explorer = Explorer(ActivityPanel(), lambda value: sample_activity(), charts=[])
    # delivery jobs j1, j2, j3, j5, j6 (the digest step is none); j2 failed of the four counted
    # (j6 is in flight): 1 / 4
    assert explorer.status.value == (
        "5 notifications, 5 delivery jobs (failure rate 25.0%, 1 in flight), 11 execution details"
    )
    assert explorer.findings.empty  # five notifications: nothing to compare a period with
    ((label, value),) = explorer.incidents.options
    assert label.startswith("no incidents found (") and value is None
    with pytest.raises(ParameterError, match="number"):
        explorer.pick(0)


def test_explorer_lists_its_findings_and_picking_one_filters_on_it(sandbox):
    from toolkit.client import connect
    from toolkit.read import read_activity

    client = connect(sandbox=sandbox, progress=False)
    fetched = []

    def fetch(value):
        fetched.append(value)
        return read_activity(client, progress=False, **value.to_read_kwargs(client.now()))

    now = sandbox.now()
    panel = ActivityPanel(value=ActivityFilter(period="custom", after=now - timedelta(days=7),
                                               before=now))  # fmt: skip
    explorer = Explorer(panel, fetch, charts=[])
    findings = explorer.findings
    assert set(findings["kind"]) == {i["kind"] for i in sandbox.incidents}  # the planted ones
    labels = [label for label, _ in explorer.incidents.options]
    assert labels == [f"{len(findings)} incident(s): pick one to show its window",
                      *findings["summary"]]  # fmt: skip
    outage = findings.iloc[0]
    assert outage["provider_id"] == "twilio"

    explorer.incidents.value = 0  # as a click in the dropdown does
    after, before = outage["started_at"].floor("1min"), outage["ended_at"].ceil("1min")
    assert panel.value.period == "custom"
    assert (panel.value.after, panel.value.before) == (after, before)
    assert panel.value.providers == ("twilio",)
    assert panel._fields["providers"].value == "twilio"  # the widgets show it
    assert len(fetched) == 2 and fetched[-1] == panel.value  # the window was read
    shown = explorer.data
    assert set(shown.jobs["provider_id"]) == {"twilio"}
    assert shown.notifications["created_at"].between(after, before).all()
    failed = shown.jobs[shown.jobs["final_status"].astype(str) == "failed"]
    assert len(failed) >= 0.9 * outage["failed_jobs"]  # the outage's failures are what is shown
    assert explorer.incidents.value is None  # the list is now the findings of that window
    assert explorer.error is None
