"""Frames: pure JSON records → typed DataFrames (no server). Hand-built records of the spec's
shapes, and the seeded sandbox's own documents from an in-memory store."""

from __future__ import annotations

import copy
import json

import pandas as pd
import pytest

from toolkit import schemas
from toolkit.frames import (
    Activity,
    activity_frames,
    empty_frame,
    error_code,
    integrations_frame,
    subscribers_frame,
    subscriptions_frame,
)
from toolkit.sandbox.seed import populate
from toolkit.sandbox.store import Store

NOW = "2026-11-01T12:00:00Z"


# -- records -----------------------------------------------------------------------------------


def detail(n, status="Success", source="Internal", *, raw=None, text=None, at=None, retry=False):
    return {
        "_id": f"d{n}",
        "createdAt": at or f"2026-10-30T10:00:{n:02d}.000Z",
        "status": status,
        "detail": text or f"{status} detail {n}",
        "isRetry": retry,
        "isTest": False,
        "providerId": "twilio",
        "raw": raw,
        "source": source,
    }


def job(job_id, job_type="sms", status="completed", details=(), **extra):
    return {
        "_id": job_id,
        "type": job_type,
        "status": status,
        "providerId": "twilio",
        "step": {
            "_id": f"step-{job_id}",
            "active": True,
            "filters": [],
            "_templateId": "t",
            "name": f"{job_type} step",
        },  # fmt: skip
        "executionDetails": list(details),
        "updatedAt": "2026-10-30T10:01:00.000Z",
        **extra,
    }


def notification(notification_id, jobs=(), **extra):
    return {
        "_id": notification_id,
        "_environmentId": "env1",
        "_organizationId": "org1",
        "_subscriberId": f"internal-{notification_id}",
        "transactionId": f"tx-{notification_id}",
        "_templateId": "tpl1",
        "createdAt": "2026-10-30T10:00:00.000Z",
        "updatedAt": "2026-10-30T10:05:00.000Z",
        "channels": ["sms"],
        "subscriber": {
            "_id": f"internal-{notification_id}",
            "subscriberId": f"user-{notification_id}",
            "firstName": "Ada",
            "lastName": "Lovelace",
            "email": "ada@example.com",
            "phone": "+15555550100",
        },
        "template": {
            "_id": "tpl1",
            "name": "Verification code",
            "origin": "external",
            "triggers": [{"type": "event", "identifier": "verification-code", "variables": []}],
        },
        "jobs": list(jobs),
        "payload": {"code": "123456"},
        "tags": ["security"],
        "topics": [{"_topicId": "topic1", "topicKey": "security"}],
        "severity": "medium",
        "critical": False,
        **extra,
    }


def subscriber(n=1, **extra):
    return {
        "_id": f"internal-{n}",
        "subscriberId": f"user-{n}",
        "firstName": "Ada",
        "lastName": None,
        "email": "ada@example.com",
        "phone": None,
        "locale": "en_GB",
        "timezone": "Europe/London",
        "channels": [
            {
                "providerId": "slack",
                "credentials": {"webhookUrl": "https://hooks.slack.com/services/T1/B2/secret"},
                "_integrationId": "int-slack",
            },
            {
                "providerId": "fcm",
                "credentials": {"deviceTokens": ["token-aaaaaaaaaaaaaaaa", "token-bbbbbbbbbbbbb"]},
                "_integrationId": "int-fcm",
            },
        ],
        "isOnline": True,
        "lastOnlineAt": "2026-10-31T09:00:00.000Z",
        "__v": 2,
        "data": {"plan": "pro"},
        "_organizationId": "org1",
        "_environmentId": "env1",
        "deleted": False,
        "createdAt": "2025-01-01T00:00:00.000Z",
        "updatedAt": "2026-10-01T00:00:00.000Z",
        **extra,
    }


def subscription(n=1, **extra):
    return {
        "_id": f"sub{n}",
        "createdAt": "2026-09-01T00:00:00.000Z",
        "topic": {"_id": f"topic{n}", "key": "billing-alerts", "name": "Billing alerts"},
        "subscriber": {
            "_id": "internal-1",
            "subscriberId": "user-1",
            "email": "ada@example.com",
            "firstName": "Ada",
            "lastName": "Lovelace",
        },  # fmt: skip
        **extra,
    }


def integration(n=1, **extra):
    return {
        "_id": f"int{n}",
        "_environmentId": "env1",
        "_organizationId": "org1",
        "name": "Twilio",
        "identifier": f"twilio-{n}",
        "providerId": "twilio",
        "channel": "sms",
        "credentials": {"accountSid": "AC" + "0" * 32, "token": "f" * 32, "from": "+14155550100"},
        "active": True,
        "deleted": False,
        "primary": True,
        "conditions": [],
        **extra,
    }


@pytest.fixture(scope="module")
def seeded():
    """The seeded sandbox's activity documents (every environment), newest first."""
    store = Store(":memory:")
    populate(store, seed=11, now=NOW, notifications=600, subscribers=120)
    with store.read() as db:
        rows = db.execute("SELECT doc FROM notifications ORDER BY created_at DESC").fetchall()
    store.close()
    return [json.loads(doc) for (doc,) in rows]


def assert_schema(frame: pd.DataFrame, spec) -> None:
    assert list(frame.columns) == schemas.names(spec)
    for column in spec:
        dtype = frame[column.name].dtype
        if column.dtype == schemas.CATEGORY:
            assert isinstance(dtype, pd.CategoricalDtype), column.name
            known = list(dtype.categories[: len(column.categories)])
            assert known == list(column.categories), column.name
        else:
            assert dtype == pd.api.types.pandas_dtype(column.dtype), column.name


# -- dtypes and empty frames -------------------------------------------------------------------


FRAMES = [
    (subscribers_frame, [subscriber()], schemas.SUBSCRIBERS),
    (subscriptions_frame, [subscription()], schemas.SUBSCRIPTIONS),
    (integrations_frame, [integration()], schemas.INTEGRATIONS),
]


@pytest.mark.parametrize(("build", "records", "spec"), FRAMES)
def test_every_column_has_its_declared_dtype(build, records, spec):
    frame = build(records)
    assert len(frame) == 1
    assert_schema(frame, spec)


@pytest.mark.parametrize(("build", "records", "spec"), FRAMES)
def test_an_empty_result_is_a_zero_row_frame_with_every_column(build, records, spec):
    frame = build([])
    assert len(frame) == 0
    assert_schema(frame, spec)
    assert_schema(empty_frame(spec), spec)


def test_activity_frames_have_their_declared_dtypes(seeded):
    notifications, jobs, details = activity_frames(seeded)
    assert len(notifications) == len(seeded)
    assert_schema(notifications, schemas.NOTIFICATIONS)
    assert_schema(jobs, schemas.JOBS)
    assert_schema(details, schemas.EXECUTION_DETAILS)
    assert str(notifications["created_at"].dtype) == "datetime64[ns, UTC]"


def test_empty_activity_is_three_zero_row_frames():
    activity = activity_frames([])
    for frame, spec in zip(
        activity, (schemas.NOTIFICATIONS, schemas.JOBS, schemas.EXECUTION_DETAILS), strict=True
    ):
        assert len(frame) == 0
        assert_schema(frame, spec)


def test_activity_unpacks_and_carries_provenance():
    provenance = {"base_url": "http://x", "environment": "Acme/Development"}
    activity = activity_frames([notification("n1", [job("j1", details=[detail(1)])])],
                               provenance=provenance)  # fmt: skip
    notifications, jobs, details = activity
    assert isinstance(activity, Activity)
    assert activity.jobs is jobs and activity.execution_details is details
    for frame in activity:
        assert frame.attrs == provenance
    assert activity.attrs == provenance
    assert repr(activity) == "Activity(notifications=1 rows, jobs=1 rows, execution_details=1 rows)"
    assert subscribers_frame([], provenance=provenance).attrs == provenance


def test_records_are_not_mutated(seeded):
    records = copy.deepcopy(seeded[:50])
    activity_frames(records)
    subscribers_frame([subscriber()])
    integrations_frame([integration()])
    assert records == seeded[:50]


# -- unknown values ----------------------------------------------------------------------------


def test_unknown_enumeration_values_are_kept_as_extra_categories():
    records = [
        notification(
            "n1",
            [job("j1", "webhook", "paused", [detail(1, "Bounced", "Provider")])],
            severity="critical",
            channels=["webhook"],
        ),
        notification("n2", [job("j2", "sms", "completed", [detail(2, "Success")])]),
    ]
    notifications, jobs, details = activity_frames(records)
    assert len(notifications) == 2 and len(jobs) == 2 and len(details) == 2
    assert list(details["status"]) == ["Bounced", "Success"]
    assert list(details["status"].cat.categories) == [*schemas.DETAIL_STATUSES, "Bounced"]
    assert list(details["source"].cat.categories) == [*schemas.DETAIL_SOURCES, "Provider"]
    assert list(jobs["type"].cat.categories) == [*schemas.STEP_TYPES, "webhook"]
    assert list(jobs["status"].cat.categories) == [*schemas.JOB_STATUSES, "paused"]
    assert jobs["final_status"].iloc[0] == "paused"
    assert list(notifications["severity"]) == ["critical", "medium"]
    assert details["channel"].iloc[0] == "webhook"

    frame = integrations_frame([integration(channel="whatsapp"), integration(2)])
    assert list(frame["channel"]) == ["whatsapp", "sms"]
    assert list(frame["channel"].cat.categories) == [*schemas.CHANNELS, "whatsapp"]


def test_missing_fields_give_missing_values_not_errors():
    notifications, jobs, details = activity_frames([{"_id": "n1", "jobs": [{"_id": "j1"}]}])
    row = notifications.iloc[0]
    assert row["subscriber_id"] is pd.NA and pd.isna(row["created_at"])
    assert row["channels"] == [] and row["topic_keys"] == [] and row["status"] == "pending"
    assert jobs["execution_count"].iloc[0] == 0 and pd.isna(jobs["duration_s"].iloc[0])
    assert len(details) == 0


# -- keys --------------------------------------------------------------------------------------


def test_linked_frames_keep_their_keys(seeded):
    notifications, jobs, details = activity_frames(seeded)
    assert notifications["notification_id"].is_unique
    assert jobs["job_id"].is_unique and details["execution_detail_id"].is_unique
    assert jobs["notification_id"].isin(notifications["notification_id"]).all()
    assert details["job_id"].isin(jobs["job_id"]).all()
    job_notification = jobs.set_index("job_id")["notification_id"]
    assert (details["job_id"].map(job_notification) == details["notification_id"]).all()
    counts = jobs.groupby("notification_id").size()
    job_count = notifications.set_index("notification_id")["job_count"]
    assert (counts == job_count[counts.index]).all()
    assert jobs["execution_count"].sum() == len(details)


def test_subscriber_id_is_always_the_external_id(seeded):
    notifications, jobs, _ = activity_frames(seeded)
    external = {r["_id"]: r["subscriber"]["subscriberId"] for r in seeded}
    internal = {r["_id"]: r["_subscriberId"] for r in seeded}
    ids = notifications.set_index("notification_id")
    assert (ids["subscriber_id"] == pd.Series(external)[ids.index]).all()
    assert (ids["subscriber_internal_id"] == pd.Series(internal)[ids.index]).all()
    assert (notifications["subscriber_id"] != notifications["subscriber_internal_id"]).all()
    assert (jobs["subscriber_id"] == jobs["notification_id"].map(ids["subscriber_id"])).all()

    subscribers = subscribers_frame([subscriber()])
    assert subscribers.loc[0, ["subscriber_id", "subscriber_internal_id"]].tolist() == [
        "user-1",
        "internal-1",
    ]
    subscriptions = subscriptions_frame([subscription()])
    assert subscriptions.loc[0, ["subscriber_id", "subscriber_internal_id"]].tolist() == [
        "user-1",
        "internal-1",
    ]


# -- derived columns ---------------------------------------------------------------------------


def test_notification_fields():
    row = activity_frames([notification("n1", [job("j1", details=[detail(1)])])]).notifications
    row = row.iloc[0]
    assert row["workflow_name"] == "Verification code"
    assert row["workflow_identifier"] == "verification-code"
    assert row["template_origin"] == "external" and row["template_id"] == "tpl1"
    assert row["topic_keys"] == ["security"] and row["tags"] == ["security"]
    assert row["payload"] == {"code": "123456"} and row["channels"] == ["sms"]
    assert row["subscriber_email"] == "ada@example.com" and not row["critical"]


def test_job_execution_columns():
    details = [
        detail(1, "Pending", at="2026-10-30T10:00:00.000Z"),
        detail(
            2,
            "Failed",
            "Credentials",
            raw='{"code": 20503}',
            text="Provider down",
            at="2026-10-30T10:00:01.500Z",
        ),  # fmt: skip
        detail(
            3,
            "Failed",
            "Credentials",
            raw='{"code": 20429}',
            text="Too many",
            at="2026-10-30T10:01:00.000Z",
            retry=True,
        ),  # fmt: skip
        detail(4, "Success", "Credentials", at="2026-10-30T10:02:00.250Z", retry=True),
    ]
    activity = activity_frames([notification("n1", [job("j1", details=details)])])
    row = activity.jobs.iloc[0]
    assert row["first_execution_at"] == pd.Timestamp("2026-10-30T10:00:00Z")
    assert row["last_execution_at"] == pd.Timestamp("2026-10-30T10:02:00.250Z")
    assert row["duration_s"] == pytest.approx(120.25)
    assert (row["execution_count"], row["failed_count"], row["retry_count"]) == (4, 2, 2)
    assert (row["error_text"], row["error_code"]) == ("Too many", "20429")
    assert row["final_status"] == "sent" and row["step_name"] == "sms step"
    frame = activity.execution_details
    assert frame["error_text"].tolist() == [pd.NA, "Provider down", "Too many", pd.NA]
    assert frame["error_code"].tolist() == [pd.NA, "20503", "20429", pd.NA]
    assert (frame["channel"] == "sms").all() and (frame["job_id"] == "j1").all()


FINAL_STATUS_CASES = [
    # job type, job status, detail statuses (with sources), expected final status
    ("sms", "pending", [], "pending"),
    ("sms", "queued", [("Failed", "Credentials")], "queued"),  # a retry is scheduled
    ("sms", "failed", [("Pending", "Internal"), ("Failed", "Credentials")], "failed"),
    ("email", "completed", [("Success", "Credentials"), ("Failed", "Webhook")], "failed"),
    ("email", "completed", [("Success", "Credentials")], "sent"),
    ("email", "completed", [("Success", "Credentials"), ("Success", "Webhook")], "delivered"),
    ("push", "completed", [("Success", "Credentials"), ("ReadConfirmation", "Webhook")], "read"),
    ("in_app", "completed", [("Warning", "Internal")], "warning"),
    ("sms", "skipped", [("Pending", "Internal"), ("Warning", "Payload")], "skipped"),
    ("digest", "completed", [("Queued", "Internal"), ("Success", "Internal")], "completed"),
    ("digest", "merged", [("Queued", "Internal"), ("Success", "Internal")], "merged"),
    ("delay", "delayed", [("Queued", "Internal")], "delayed"),
]


@pytest.mark.parametrize(("job_type", "status", "steps", "expected"), FINAL_STATUS_CASES)
def test_final_status(job_type, status, steps, expected):
    details = [detail(n, s, source) for n, (s, source) in enumerate(steps)]
    jobs = activity_frames([notification("n1", [job("j1", job_type, status, details)])]).jobs
    assert jobs["final_status"].iloc[0] == expected


OVERALL_CASES = [
    ([], "pending"),
    ([("email", "completed", "Success", "Webhook"), ("sms", "failed", "Failed", "Credentials")],
     "failed"),
    ([("in_app", "completed", "ReadConfirmation", "Internal"), ("delay", "delayed", "Queued",
      "Internal")], "pending"),
    ([("in_app", "completed", "Success", "Internal"), ("email", "completed", "Success",
      "Webhook")], "delivered"),
    ([("in_app", "completed", "ReadConfirmation", "Internal"), ("email", "completed", "Success",
      "Webhook")], "read"),
    ([("in_app", "completed", "Success", "Internal"), ("sms", "skipped", "Warning", "Payload")],
     "sent"),
    ([("digest", "merged", "Success", "Internal"), ("email", "skipped", "Warning", "Internal")],
     "merged"),
    ([("sms", "skipped", "Warning", "Payload")], "skipped"),
]  # fmt: skip


@pytest.mark.parametrize(("jobs", "expected"), OVERALL_CASES)
def test_overall_notification_status(jobs, expected):
    built = [
        job(f"j{n}", job_type, status, [detail(n, outcome, source)])
        for n, (job_type, status, outcome, source) in enumerate(jobs)
    ]
    notifications = activity_frames([notification("n1", built)]).notifications
    assert notifications["status"].iloc[0] == expected
    assert notifications["failed_job_count"].iloc[0] == (expected == "failed")


def test_seeded_incidents_show_their_error_codes(seeded):
    _, jobs, details = activity_frames(seeded)
    failed = details[details["status"] == "Failed"]
    assert len(failed) > 0
    assert failed["error_code"].notna().all() and failed["error_text"].notna().all()
    assert "20503" in set(failed["error_code"])  # the planted SMS outage
    assert details.loc[details["status"] != "Failed", "error_code"].isna().all()
    assert (jobs.loc[jobs["final_status"] == "failed", "failed_count"] > 0).all()


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"code": 20503, "message": "Service unavailable", "status": 503}', "20503"),
        ('{"errorCode": "E_LIMIT"}', "E_LIMIT"),
        ('{"error": {"code": "messaging/registration-token-not-registered"}}',
         "messaging/registration-token-not-registered"),
        ('{"Error": {"Code": "Throttling", "Message": "Rate exceeded"}}', "Throttling"),
        ('{"errors": [{"code": "invalid_to", "message": "bad"}], "statusCode": 400}', "invalid_to"),
        ('{"errors": [{"message": "Too many requests"}], "statusCode": 429}', "429"),
        ('{"response": {"code": 550}}', "550"),
        ('{"MessageStatus": "undelivered", "ErrorCode": "30007"}', "30007"),
        ('{"eventType": "Bounce", "bounce": {"bouncedRecipients": [{"status": "5.7.1"}]}}', "5.7.1"),
        ('{"status": "error", "details": {"error": "DeviceNotRegistered"}}', "DeviceNotRegistered"),
        ('{"reason": "BadDeviceToken", "status": 400}', "BadDeviceToken"),
        ('{"event": "bounce", "status": "5.1.1", "reason": "550 5.1.1 No such user"}', "5.1.1"),
        ('{"event": "dropped", "reason": "Spam Reporting Address"}', "dropped"),
        ('{"status": 404, "body": "no_service"}', "no_service"),
        ('{"status": 502, "message": "Bad Gateway"}', "502"),
        ('{"message": "Something went wrong"}', None),
        ("Connection reset by peer", None),
        ("{not json", None),
        ('["a list"]', None),
        ("", None),
        (None, None),
    ],
)  # fmt: skip
def test_error_code_from_raw(raw, expected):
    assert error_code(raw) == expected


def test_a_raw_object_becomes_text():
    raw = {"code": "E1"}
    details = activity_frames(
        [notification("n1", [job("j1", details=[detail(1, "Failed", raw=raw)])])]
    ).execution_details
    assert details["raw"].iloc[0] == '{"code": "E1"}'
    assert details["error_code"].iloc[0] == "E1"


# -- other frames ------------------------------------------------------------------------------


def test_subscriber_columns():
    row = subscribers_frame([subscriber()]).iloc[0]
    assert row["provider_ids"] == ["slack", "fcm"]
    assert row["device_token_count"] == 2
    assert row["is_online"] and row["version"] == 2 and row["data"] == {"plan": "pro"}
    assert row["last_name"] is pd.NA
    assert row["last_online_at"] == pd.Timestamp("2026-10-31T09:00:00Z")


def test_subscription_and_integration_columns():
    row = subscriptions_frame([subscription()]).iloc[0]
    assert (row["topic_key"], row["topic_name"], row["topic_id"]) == (
        "billing-alerts",
        "Billing alerts",
        "topic1",
    )
    deleted = integration(deleted=True, deletedAt="2026-10-31T00:00:00.000Z", deletedBy="u1")
    row = integrations_frame([deleted]).iloc[0]
    assert row["deleted"] and row["deleted_by"] == "u1" and row["primary"]
    assert row["deleted_at"] == pd.Timestamp("2026-10-31T00:00:00Z")
    assert row["credentials"]["from"] == "+14155550100"


# -- every column by name: a distinct sentinel in every field -----------------------------------


def _t(second):
    return f"2026-01-01T00:00:{second}Z"


SENTINEL_NOTIFICATION = {
    "_id": "n-id", "createdAt": _t("01.000"), "updatedAt": _t("02.000"), "transactionId": "tx-id",
    "_templateId": "tpl-id", "_subscriberId": "sub-internal", "channels": ["chat"],
    "template": {"_id": "tpl-other", "name": "wf-name", "origin": "external",
                 "triggers": [{"identifier": "wf-identifier"}]},
    "subscriber": {"_id": "sub-other", "subscriberId": "sub-external", "email": "e@x.example",
                   "firstName": "First", "lastName": "Last", "phone": "+100"},
    "topics": [{"topicKey": "topic-key"}], "tags": ["tag-1"], "severity": "medium",
    "critical": True, "_digestedNotificationId": "digested-id", "payload": {"p": 1},
    "_environmentId": "env-id", "_organizationId": "org-id",
    "jobs": [{
        "_id": "job-id", "type": "chat", "status": "completed", "providerId": "job-provider",
        "step": {"_id": "step-id", "name": "step-name"}, "digest": {"type": "timed"},
        "updatedAt": _t("03.000"),
        "executionDetails": [
            {"_id": "d1", "createdAt": _t("04.000"), "status": "Success", "source": "Internal",
             "detail": "d1-text", "providerId": "d1-provider", "isRetry": False, "isTest": True,
             "raw": None},
            {"_id": "d2", "createdAt": _t("06.500"), "status": "Failed", "source": "Webhook",
             "detail": "d2-text", "isRetry": True, "isTest": False, "raw": '{"code": "E42"}'},
        ],
    }],
}  # fmt: skip

EXPECTED_NOTIFICATION = {
    "notification_id": "n-id", "created_at": _t("01.000"), "updated_at": _t("02.000"),
    "transaction_id": "tx-id", "template_id": "tpl-id", "workflow_name": "wf-name",
    "workflow_identifier": "wf-identifier", "template_origin": "external",
    "subscriber_internal_id": "sub-internal", "subscriber_id": "sub-external",
    "subscriber_email": "e@x.example", "subscriber_first_name": "First",
    "subscriber_last_name": "Last", "subscriber_phone": "+100", "channels": ["chat"],
    "topic_keys": ["topic-key"], "tags": ["tag-1"], "severity": "medium", "critical": True,
    "digested_notification_id": "digested-id", "payload": {"p": 1}, "job_count": 1,
    "failed_job_count": 1, "status": "failed", "environment_id": "env-id",
    "organization_id": "org-id",
}  # fmt: skip

EXPECTED_JOB = {
    "job_id": "job-id", "notification_id": "n-id", "type": "chat", "status": "completed",
    "final_status": "failed", "step_id": "step-id", "step_name": "step-name",
    "provider_id": "job-provider", "digest_type": "timed", "updated_at": _t("03.000"),
    "first_execution_at": _t("04.000"), "last_execution_at": _t("06.500"), "duration_s": 2.5,
    "execution_count": 2, "failed_count": 1, "retry_count": 1, "error_text": "d2-text",
    "error_code": "E42", "subscriber_id": "sub-external", "workflow": "wf-identifier",
}  # fmt: skip

EXPECTED_DETAILS = [
    {"execution_detail_id": "d1", "job_id": "job-id", "notification_id": "n-id",
     "created_at": _t("04.000"), "status": "Success", "source": "Internal", "detail": "d1-text",
     "provider_id": "d1-provider", "is_retry": False, "is_test": True, "raw": None,
     "error_text": None, "error_code": None, "channel": "chat"},
    {"execution_detail_id": "d2", "job_id": "job-id", "notification_id": "n-id",
     "created_at": _t("06.500"), "status": "Failed", "source": "Webhook", "detail": "d2-text",
     "provider_id": "job-provider", "is_retry": True, "is_test": False,
     "raw": '{"code": "E42"}', "error_text": "d2-text", "error_code": "E42", "channel": "chat"},
]  # fmt: skip

SENTINEL_SUBSCRIBER = {
    "subscriberId": "sub-external", "_id": "sub-internal", "firstName": "First",
    "lastName": "Last", "email": "e@x.example", "phone": "+100", "avatar": "avatar-url",
    "locale": "fr_FR", "timezone": "Europe/Paris", "data": {"d": 2},
    "channels": [{"providerId": "fcm", "credentials": {"deviceTokens": ["t1", "t2", "t3"]}}],
    "isOnline": True, "lastOnlineAt": _t("07.000"), "createdAt": _t("08.000"),
    "updatedAt": _t("09.000"), "deleted": False, "__v": 5, "_environmentId": "env-id",
    "_organizationId": "org-id",
}  # fmt: skip

EXPECTED_SUBSCRIBER = {
    "subscriber_id": "sub-external", "subscriber_internal_id": "sub-internal",
    "first_name": "First", "last_name": "Last", "email": "e@x.example", "phone": "+100",
    "avatar": "avatar-url", "locale": "fr_FR", "timezone": "Europe/Paris", "data": {"d": 2},
    "channels": SENTINEL_SUBSCRIBER["channels"], "provider_ids": ["fcm"],
    "device_token_count": 3, "is_online": True, "last_online_at": _t("07.000"),
    "created_at": _t("08.000"), "updated_at": _t("09.000"), "deleted": False, "version": 5,
    "environment_id": "env-id", "organization_id": "org-id",
}  # fmt: skip

SENTINEL_SUBSCRIPTION = {
    "_id": "subscription-id", "identifier": "tk=topic-key:si=sub-external",
    "createdAt": _t("10.000"), "contextKeys": ["tenant:acme"],
    "topic": {"_id": "topic-id", "key": "topic-key", "name": "Topic name"},
    "subscriber": {"_id": "sub-internal", "subscriberId": "sub-external", "email": "e@x.example",
                   "firstName": "First", "lastName": "Last"},
}  # fmt: skip

EXPECTED_SUBSCRIPTION = {
    "subscription_id": "subscription-id", "identifier": "tk=topic-key:si=sub-external",
    "created_at": _t("10.000"), "topic_id": "topic-id", "topic_key": "topic-key",
    "topic_name": "Topic name", "context_keys": ["tenant:acme"],
    "subscriber_internal_id": "sub-internal", "subscriber_id": "sub-external",
    "subscriber_email": "e@x.example", "subscriber_first_name": "First",
    "subscriber_last_name": "Last",
}  # fmt: skip

SENTINEL_INTEGRATION = {
    "_id": "integration-id", "name": "Integration name", "identifier": "integration-identifier",
    "providerId": "sendgrid", "channel": "email", "active": True, "primary": False,
    "deleted": True, "deletedAt": _t("11.000"), "deletedBy": "deleter-id",
    "credentials": {"from": "a@x.example"}, "conditions": [{"type": "AND"}],
    "configurations": {"inboundWebhookEnabled": False}, "createdAt": _t("12.000"),
    "updatedAt": _t("13.000"), "_environmentId": "env-id", "_organizationId": "org-id",
}  # fmt: skip

EXPECTED_INTEGRATION = {
    "integration_id": "integration-id", "name": "Integration name",
    "identifier": "integration-identifier", "provider_id": "sendgrid", "channel": "email",
    "active": True, "primary": False, "deleted": True, "deleted_at": _t("11.000"),
    "deleted_by": "deleter-id", "credentials": {"from": "a@x.example"},
    "conditions": [{"type": "AND"}], "configurations": {"inboundWebhookEnabled": False},
    "created_at": _t("12.000"), "updated_at": _t("13.000"), "environment_id": "env-id",
    "organization_id": "org-id",
}  # fmt: skip


def _assert_rows(frame, spec, expected_rows):
    assert list(frame.columns) == schemas.names(spec)
    assert len(frame) == len(expected_rows)
    for position, expected in enumerate(expected_rows):
        assert set(expected) == set(frame.columns)
        for column in spec:
            value, want = frame[column.name].iloc[position], expected[column.name]
            if column.dtype == schemas.DATETIME:
                want = pd.Timestamp(want)
            if want is None:
                assert pd.isna(value), column.name
            else:
                assert value == want, (column.name, value, want)
        for column in spec:
            assert str(frame[column.name].dtype) == str(column.dtype) or (
                column.dtype == schemas.CATEGORY
                and isinstance(frame[column.name].dtype, pd.CategoricalDtype)
            ), column.name


def test_every_activity_column_gets_its_own_field():
    notifications, jobs, details = activity_frames([SENTINEL_NOTIFICATION])
    _assert_rows(notifications, schemas.NOTIFICATIONS, [EXPECTED_NOTIFICATION])
    _assert_rows(jobs, schemas.JOBS, [EXPECTED_JOB])
    _assert_rows(details, schemas.EXECUTION_DETAILS, EXPECTED_DETAILS)


def test_every_subscriber_subscription_and_integration_column_gets_its_own_field():
    frame = subscribers_frame([SENTINEL_SUBSCRIBER], reveal_secrets=True)
    _assert_rows(frame, schemas.SUBSCRIBERS, [EXPECTED_SUBSCRIBER])
    _assert_rows(
        subscriptions_frame([SENTINEL_SUBSCRIPTION]), schemas.SUBSCRIPTIONS, [EXPECTED_SUBSCRIPTION]
    )
    frame = integrations_frame([SENTINEL_INTEGRATION], reveal_secrets=True)
    _assert_rows(frame, schemas.INTEGRATIONS, [EXPECTED_INTEGRATION])


def test_older_subscriptions_without_identifier_and_context_keys_give_missing_values():
    older = {
        k: v for k, v in SENTINEL_SUBSCRIPTION.items() if k not in ("identifier", "contextKeys")
    }
    expected = {**EXPECTED_SUBSCRIPTION, "identifier": None, "context_keys": None}
    _assert_rows(subscriptions_frame([older]), schemas.SUBSCRIPTIONS, [expected])


def test_frames_built_in_small_chunks_equal_frames_built_at_once(seeded, monkeypatch):
    whole = activity_frames(seeded)
    monkeypatch.setattr("toolkit.frames._Table.CHUNK", 7)
    chunked = activity_frames(seeded)
    assert len(whole.execution_details) > 7 * 3
    for expected, got in zip(whole, chunked, strict=True):
        pd.testing.assert_frame_equal(got, expected)
