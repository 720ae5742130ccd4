"""Readers against the real sandbox: typed frames, provenance, and the same records as the client."""

from __future__ import annotations

import json
from datetime import UTC, timedelta

import pandas as pd
import pytest

from toolkit import __version__, schemas
from toolkit.client import Client
from toolkit.errors import ParameterError
from toolkit.read import read_activity, read_integrations, read_subscribers, read_subscriptions
from toolkit.redact import MASK

WINDOW = ("2026-10-29T00:00:00Z", "2026-10-30T00:00:00Z")


@pytest.fixture
def client(sandbox, faults):
    with Client.from_sandbox(sandbox, progress=False) as client:
        yield client


@pytest.fixture
def writer(fresh_sandbox):
    with Client.from_sandbox(fresh_sandbox, progress=False) as client:
        yield client


def assert_typed(frame: pd.DataFrame, spec) -> None:
    assert list(frame.columns) == schemas.names(spec)
    declared = [column.dtype for column in spec]
    actual = [
        "category" if isinstance(dtype, pd.CategoricalDtype) else str(dtype)
        for dtype in frame.dtypes
    ]
    assert actual == declared


def assert_provenance(frame: pd.DataFrame, sandbox, operation: str, filters: dict) -> None:
    attrs = frame.attrs
    assert attrs["operation"] == operation
    assert attrs["base_url"] == sandbox.url
    assert attrs["environment"] == "Acme/Development"
    assert attrs["filters"] == filters
    assert attrs["toolkit_version"] == __version__
    assert pd.Timestamp(attrs["fetched_at"]).tz == UTC
    assert json.loads(json.dumps(attrs)) == attrs  # JSON-ready: kept by to_parquet/to_feather


# -- activity ----------------------------------------------------------------------------------


def test_read_activity_gives_typed_linked_frames_with_provenance(client, sandbox):
    activity = read_activity(client, after="2d", severity=["high"], progress=False)
    notifications, jobs, details = activity
    assert len(notifications) > 100
    for frame, spec in zip(
        activity, (schemas.NOTIFICATIONS, schemas.JOBS, schemas.EXECUTION_DETAILS), strict=True
    ):
        assert_typed(frame, spec)
        assert_provenance(frame, sandbox, "list_activity", {"severity": ["high"]})
    after, before, fetched_at = (pd.Timestamp(activity.attrs[n]) for n in ("after", "before", "fetched_at"))  # fmt: skip
    assert before - after == timedelta(days=2)
    assert before <= fetched_at
    assert notifications["created_at"].between(after, before).all()
    assert (notifications["severity"] == "high").all()
    assert jobs["notification_id"].isin(notifications["notification_id"]).all()
    assert details["job_id"].isin(jobs["job_id"]).all()


def test_read_activity_holds_the_same_records_as_a_raw_client_read(client):
    after, before = WINDOW
    raw = client.list_activity(after=after, before=before, progress=False)
    notifications, jobs, details = read_activity(client, after=after, before=before, progress=False)
    assert len(raw) > 500
    assert notifications["notification_id"].tolist() == [record["_id"] for record in raw]
    assert notifications["subscriber_id"].tolist() == [r["subscriber"]["subscriberId"] for r in raw]
    raw_jobs = [job for record in raw for job in record["jobs"]]
    assert jobs["job_id"].tolist() == [job["_id"] for job in raw_jobs]
    raw_details = [detail for job in raw_jobs for detail in job["executionDetails"]]
    assert details["execution_detail_id"].tolist() == [detail["_id"] for detail in raw_details]
    assert details["raw"].tolist() == [
        pd.NA if detail["raw"] is None else detail["raw"] for detail in raw_details
    ]
    assert pd.Timestamp(notifications.attrs["after"]) == pd.Timestamp(after)
    assert pd.Timestamp(notifications.attrs["before"]) == pd.Timestamp(before)


def test_read_activity_under_errors_and_throttling_gives_exactly_the_fault_free_frames(
    sandbox, faults
):
    after, before = WINDOW
    with Client.from_sandbox(sandbox, progress=False) as client:
        expected = read_activity(client, after=after, before=before)
    waits: list[float] = []
    with Client.from_sandbox(
        sandbox, progress=False, sleep=waits.append, max_retries=16, max_wait=600
    ) as client:
        faults.set(error_rate=0.3)
        faults.throttle_next(6, retry_after=1)
        faulty = read_activity(client, after=after, before=before)
    assert faults.stats["errors"] > 5 and faults.stats["throttled"] == 6
    assert len(waits) == faults.stats["errors"] + faults.stats["throttled"]
    for got, want in zip(faulty, expected, strict=True):
        pd.testing.assert_frame_equal(got, want)


def test_read_activity_passes_filters_and_limit_through(client):
    activity = read_activity(client, after="7d", channels="sms", limit=40, progress=False)
    notifications = activity.notifications
    assert len(notifications) == 40
    assert notifications["channels"].map(lambda channels: "sms" in channels).all()
    assert notifications["created_at"].is_monotonic_decreasing
    assert activity.attrs["filters"] == {"channels": "sms", "limit": 40}


def test_the_planted_sms_outage_shows_as_failed_jobs_with_the_provider_code(client, sandbox):
    outage = next(i for i in sandbox.incidents if i["name"] == "sms-provider-outage")
    activity = read_activity(
        client, after=outage["start"], before=outage["end"], channels="sms", progress=False
    )
    failed = activity.jobs[
        (activity.jobs["type"] == "sms") & (activity.jobs["final_status"] == "failed")
    ]
    assert len(failed) > 0
    assert set(failed["error_code"]) == {"20503"}
    assert (activity.notifications.loc[
        activity.notifications["notification_id"].isin(failed["notification_id"]), "status"
    ] == "failed").all()  # fmt: skip


def test_bad_arguments_raise_before_any_request():
    offline = Client("http://127.0.0.1:9", "0" * 32, progress=False, max_retries=0)
    with pytest.raises(ParameterError, match="channels"):
        read_activity(offline, channels=["fax"])
    with pytest.raises(ParameterError, match="after"):
        read_activity(offline, after="last tuesday")
    with pytest.raises(ParameterError, match="order_direction"):
        read_subscribers(offline, order_direction="UP")
    offline.close()


# -- subscribers and subscriptions -------------------------------------------------------------


def test_read_subscribers_gives_typed_frames_with_secrets_masked(client, sandbox):
    raw = list(client.search_subscribers(limit=300))
    frame = read_subscribers(client, limit=300, progress=False)
    assert_typed(frame, schemas.SUBSCRIBERS)
    assert_provenance(frame, sandbox, "search_subscribers", {"limit": 300})
    assert frame["subscriber_id"].tolist() == [record["subscriberId"] for record in raw]
    secrets = [
        secret
        for record in raw
        for setting in record["channels"]
        for secret in [
            setting["credentials"].get("webhookUrl"),
            *setting["credentials"].get("deviceTokens", []),
        ]  # fmt: skip
        if secret
    ]
    assert len(secrets) > 50  # the seeded subscribers have webhooks and device tokens
    text = "\n".join([repr(frame), frame.to_html(), frame.to_json(date_format="iso")])
    assert not [secret for secret in secrets if secret in text]
    assert MASK in str(frame["channels"].tolist())
    expected = [
        sum(len(s["credentials"].get("deviceTokens", [])) for s in record["channels"])
        for record in raw
    ]
    assert frame["device_token_count"].tolist() == expected

    revealed = read_subscribers(client, limit=300, reveal_secrets=True, progress=False)
    assert revealed["channels"].tolist() == [record["channels"] for record in raw]


def test_read_subscribers_filters(client):
    frame = read_subscribers(client, email="@northwind.example", progress=False)
    assert len(frame) > 0
    assert frame["email"].str.endswith("@northwind.example").all()
    one = read_subscribers(client, subscriber_id=frame["subscriber_id"].iloc[0], progress=False)
    assert one["subscriber_id"].tolist() == [frame["subscriber_id"].iloc[0]]


def test_read_subscriptions_of_many_subscribers(client, sandbox):
    ids = read_subscribers(client, limit=30, progress=False)["subscriber_id"].tolist()
    frame = read_subscriptions(client, ids, workers=4, progress=False)
    assert_typed(frame, schemas.SUBSCRIPTIONS)
    assert_provenance(frame, sandbox, "list_subscriptions", {"subscriber_ids": ids})
    expected = [record for i in ids for record in client.list_subscriptions(i)]
    assert len(expected) > 30
    assert frame["subscription_id"].tolist() == [record["_id"] for record in expected]
    assert frame["subscriber_id"].tolist() == [r["subscriber"]["subscriberId"] for r in expected]
    assert frame["identifier"].tolist() == [r["identifier"] for r in expected]
    assert frame["context_keys"].tolist() == [r["contextKeys"] for r in expected]
    assert frame["identifier"].notna().all()
    key = frame["topic_key"].iloc[0]
    keyed = read_subscriptions(client, ids, key=key, progress=False)
    assert len(keyed) > 0 and (keyed["topic_key"] == key).all()
    assert keyed.attrs["filters"]["key"] == key


# -- integrations ------------------------------------------------------------------------------


def test_read_integrations_of_a_create_and_a_delete(writer, fresh_sandbox):
    api_key = "SG.readtestreadtestread.readtestreadtestreadtestreadtestreadte5t"
    created = writer.create_integration(
        "sendgrid",
        "email",
        name="Read test",
        credentials={"apiKey": api_key, "from": "ops@acme.example"},
    )
    frame = read_integrations(writer, created)
    assert_typed(frame, schemas.INTEGRATIONS)
    assert_provenance(frame, fresh_sandbox, "integrations", {})
    assert frame["integration_id"].tolist() == [created["_id"]]
    credentials = frame.loc[0, "credentials"]
    assert credentials["from"] == "ops@acme.example" and credentials["apiKey"] == MASK + "te5t"
    assert api_key not in frame.to_html()
    assert (
        read_integrations(writer, created, reveal_secrets=True).loc[0, "credentials"]["apiKey"]
        == api_key
    )

    remaining = read_integrations(writer, writer.delete_integration(created["_id"]))
    assert_typed(remaining, schemas.INTEGRATIONS)
    assert len(remaining) > 5
    assert created["_id"] not in set(remaining["integration_id"])
    assert not remaining["deleted"].any()


def test_activity_slices_add_up_to_the_window_with_each_edge_notification_once(client):
    from toolkit.read import read_activity_slices

    whole = read_activity(client, after="2d", before=client.now())
    created = whole.notifications["created_at"]
    start, middle = created.iloc[-1], created.iloc[len(created) // 2]
    end = middle + (middle - start)  # the middle slice edge falls on a notification
    window = read_activity(client, after=start, before=end)
    slices = list(read_activity_slices(client, after=start, before=end, every=middle - start))
    assert [(low, high) for low, high, _ in slices] == [(middle, end), (start, middle)]
    assert (window.notifications["created_at"] == middle).any()
    for name, frame in zip(window._fields, window, strict=True):
        parts = pd.concat([getattr(activity, name) for _, _, activity in slices])
        key = frame.columns[0]
        assert list(parts[key]) == list(frame[key]), name


def test_activity_slices_need_a_start_and_a_positive_step(client):
    from toolkit.read import read_activity_slices

    with pytest.raises(ParameterError, match="every"):
        next(read_activity_slices(client, after="1d", every="-1h"))
    with pytest.raises(ParameterError, match="every"):
        next(read_activity_slices(client, after="1d", every="often"))


def test_frames_save_to_parquet_feather_and_csv_keeping_their_provenance(client, tmp_path):
    # once, every reader's frame failed to_parquet: its provenance held Timestamps
    activity = read_activity(client, after="6h", progress=False)
    for frame in activity:
        frame.to_parquet(tmp_path / "frame.parquet")
        assert pd.read_parquet(tmp_path / "frame.parquet").attrs == frame.attrs
        frame.to_feather(tmp_path / "frame.feather")
        assert pd.read_feather(tmp_path / "frame.feather").attrs == frame.attrs
        frame.to_csv(tmp_path / "frame.csv", index=False)
        assert len(pd.read_csv(tmp_path / "frame.csv")) == len(frame)
    subscribers = read_subscribers(client, limit=5)
    subscribers.to_parquet(tmp_path / "subscribers.parquet")
    assert pd.read_parquet(tmp_path / "subscribers.parquet").attrs == subscribers.attrs


def test_jobs_carry_their_notifications_workflow(client):
    notifications, jobs, _ = read_activity(client, after="1d", progress=False)
    merged = jobs.merge(notifications[["notification_id", "workflow_identifier"]], on="notification_id")  # fmt: skip
    assert jobs["workflow"].notna().all()
    assert merged["workflow"].equals(merged["workflow_identifier"])
    failed = jobs[jobs["final_status"] == "failed"].groupby("workflow").size()  # no merge
    assert failed.sum() == (jobs["final_status"] == "failed").sum() > 0
