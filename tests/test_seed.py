"""The seeded data (seed.populate) and live traffic (traffic.LiveTraffic), on small stores."""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from datetime import timedelta

import pytest

from tests.conftest import wait_for
from toolkit.sandbox.clock import Clock, iso, parse_instant
from toolkit.sandbox.ids import IdFactory
from toolkit.sandbox.seed import NotificationFactory, populate
from toolkit.sandbox.store import CHANNEL_BITS, Store
from toolkit.sandbox.traffic import LiveTraffic, _Feed, load_catalog

NOW = "2026-11-01T12:00:00.000Z"
CHANNELS = {"in_app", "email", "sms", "chat", "push"}
SIZES = {"notifications": 1500, "subscribers": 200}
TABLES = [
    "meta", "organizations", "environments", "subscribers", "topics", "subscriptions",
    "integrations", "workflows", "notifications", "notification_topics",
]  # fmt: skip

DETAIL_STATUSES = {"Success", "Warning", "Failed", "Pending", "Queued", "ReadConfirmation"}
SOURCES = {"Credentials", "Internal", "Payload", "Webhook"}


@pytest.fixture(scope="module")
def seeded():
    store = Store(":memory:")
    tenancy = populate(store, seed=7, now=NOW, **SIZES)
    yield store, tenancy
    store.close()


def _dump(store: Store) -> dict[str, list[tuple]]:
    with store.read() as db:
        return {
            t: sorted((tuple(r) for r in db.execute(f"SELECT * FROM {t}")), key=repr)
            for t in TABLES
        }


def _docs(store: Store, environment_id: str) -> list[dict]:
    with store.read() as db:
        rows = db.execute(
            "SELECT doc FROM notifications WHERE environment_id = ? ORDER BY created_at",
            (environment_id,),
        ).fetchall()
    return [json.loads(row[0]) for row in rows]


def _default(tenancy: dict) -> str:
    return tenancy["environments"][0]["id"]


def test_same_inputs_give_identical_rows_and_another_seed_differs(seeded):
    store, tenancy = seeded
    again, other = Store(":memory:"), Store(":memory:")
    assert populate(again, seed=7, now=parse_instant(NOW), **SIZES) == tenancy
    assert _dump(again) == _dump(store)
    populate(other, seed=8, now=NOW, **SIZES)
    assert _dump(other)["notifications"] != _dump(store)["notifications"]


def test_tenancy_and_meta(seeded):
    store, tenancy = seeded
    envs = tenancy["environments"]
    assert [(e["organization"], e["name"], e["plan"]) for e in envs] == [
        ("Acme", "Development", "business"),
        ("Acme", "Production", "business"),
        ("Globex", "Development", "free"),
    ]
    assert len({e["api_key"] for e in envs}) == 3
    assert all(re.fullmatch("[0-9a-f]{32}", e["api_key"]) for e in envs)
    assert envs[0]["organization_id"] == envs[1]["organization_id"] != envs[2]["organization_id"]
    assert json.loads(store.get_meta("tenancy")) == {"environments": envs}
    assert json.loads(store.get_meta("incidents")) == tenancy["incidents"]
    assert (store.get_meta("seed"), store.get_meta("now")) == ("7", NOW)
    assert store.get_meta("notifications") == "1500"
    with store.read() as db:
        counts = dict(db.execute("SELECT environment_id, count(*) FROM notifications GROUP BY 1"))
        people = dict(db.execute("SELECT environment_id, count(*) FROM subscribers GROUP BY 1"))
    assert [counts[e["id"]] for e in envs] == [1500, 75, 75]
    assert [people[e["id"]] for e in envs] == [200, 10, 10]


def test_free_environment_has_records_older_and_newer_than_a_day(seeded):
    store, tenancy = seeded
    created = [
        parse_instant(d["createdAt"]) for d in _docs(store, tenancy["environments"][2]["id"])
    ]
    day_ago = parse_instant(NOW) - timedelta(days=1)
    assert min(created) < day_ago - timedelta(days=1)
    assert sum(when > day_ago for when in created) >= 10


def test_every_channel_severity_and_status_present(seeded):
    store, tenancy = seeded
    docs = _docs(store, _default(tenancy))
    assert {c for d in docs for c in d["channels"]} >= CHANNELS
    assert Counter(d.get("severity") for d in docs).keys() == {
        "high",
        "medium",
        "low",
        "none",
        None,
    }
    assert any(d["critical"] for d in docs) and not all(d["critical"] for d in docs)
    assert any("topics" in d for d in docs) and any("_digestedNotificationId" in d for d in docs)
    jobs = [j for d in docs for j in d["jobs"]]
    statuses = {j["status"] for j in jobs}
    assert {"completed", "failed", "skipped", "merged", "canceled"} <= statuses
    details = [e for j in jobs for e in j["executionDetails"]]
    assert {e["status"] for e in details} == DETAIL_STATUSES
    assert {e["source"] for e in details} == SOURCES
    assert any(e["isRetry"] for e in details)


def test_documents_have_the_spec_fields_and_match_their_columns(seeded):
    store, tenancy = seeded
    with store.read() as db:
        rows = [dict(r) for r in db.execute("SELECT * FROM notifications")]
        topics = Counter(
            r[0] for r in db.execute("SELECT notification_id FROM notification_topics")
        )
    for row in rows:
        doc = json.loads(row["doc"])
        assert {
            "_id",
            "_environmentId",
            "_organizationId",
            "_subscriberId",
            "transactionId",
        } <= doc.keys()
        assert (doc["_id"], doc["_environmentId"], doc["_subscriberId"]) == (
            row["id"],
            row["environment_id"],
            row["subscriber_id"],
        )
        assert (doc["_templateId"], doc["transactionId"]) == (
            row["template_id"],
            row["transaction_id"],
        )
        assert doc.get("severity") == row["severity"] and doc["createdAt"] == row["created_at"]
        assert row["channel_mask"] == sum(CHANNEL_BITS[c] for c in doc["channels"])
        assert topics[row["id"]] == len(doc.get("topics", []))
        assert {"_id", "subscriberId"} <= doc["subscriber"].keys()
        template = doc["template"]
        assert template["name"] and template["origin"] in {"svc-cloud", "svc-cloud-v1", "external"}
        assert [t["type"] for t in template["triggers"]] == ["event"]
        assert all({"name"} == v.keys() for v in template["triggers"][0]["variables"])
        assert [j["type"] for j in doc["jobs"]] == doc["channels"] or "digest" in doc["channels"]
        for job in doc["jobs"]:
            assert {"_id", "type", "executionDetails", "step", "providerId", "status"} <= job.keys()
            assert {"_id", "active", "filters", "_templateId"} <= job["step"].keys()
            assert job["type"] != "trigger"
            for detail in job["executionDetails"]:
                assert {"_id", "status", "detail", "isRetry", "isTest", "source"} <= detail.keys()
                assert detail["status"] in DETAIL_STATUSES and detail["source"] in SOURCES
                assert detail["isTest"] is False
                assert detail["raw"] is None or isinstance(json.loads(detail["raw"]), dict)


def test_jobs_and_details_are_ordered_and_never_after_now(seeded):
    store, _ = seeded
    with store.read() as db:
        docs = [json.loads(r[0]) for r in db.execute("SELECT doc FROM notifications")]
    for doc in docs:
        assert doc["createdAt"] <= doc["updatedAt"] <= NOW
        starts = []
        for job in doc["jobs"]:
            times = [e["createdAt"] for e in job["executionDetails"]]
            assert times == sorted(times)
            assert all(doc["createdAt"] <= t <= NOW for t in times)
            assert not times or job["updatedAt"] == times[-1]
            starts.extend(times[:1])
        assert starts == sorted(starts)


def test_digest_and_delay_jobs_take_minutes_to_hours(seeded):
    store, tenancy = seeded
    waits = []
    for doc in _docs(store, _default(tenancy)):
        for job in doc["jobs"]:
            details = job["executionDetails"]
            if job["type"] in ("digest", "delay") and job["status"] == "completed":
                first, last = (parse_instant(details[i]["createdAt"]) for i in (0, -1))
                waits.append(last - first)
                assert job["type"] != "digest" or job["digest"]["type"] in {"regular", "timed"}
    assert min(waits) >= timedelta(minutes=10) and max(waits) >= timedelta(hours=24)


def _failed_sms(store: Store, environment_id: str) -> list[tuple[str, str]]:
    """``(createdAt, raw)`` of the failed twilio execution details."""
    return [
        (e["createdAt"], e["raw"])
        for d in _docs(store, environment_id)
        for j in d["jobs"]
        if j["providerId"] == "twilio"
        for e in j["executionDetails"]
        if e["status"] == "Failed"
    ]


def test_sms_outage_failures_concentrate_in_its_window(seeded):
    store, tenancy = seeded
    outage = next(i for i in tenancy["incidents"] if i["name"] == "sms-provider-outage")
    assert (outage["channel"], outage["provider_id"], outage["error_code"]) == (
        "sms",
        "twilio",
        "20503",
    )
    start, end = parse_instant(outage["start"]), parse_instant(outage["end"])
    assert timedelta(hours=3) <= end - start <= timedelta(hours=4)
    failures = _failed_sms(store, _default(tenancy))
    inside = [raw for at, raw in failures if outage["start"] <= at < outage["end"]]
    coded = [raw for _, raw in failures if json.loads(raw)["code"] == 20503]
    assert len(coded) == len(inside) >= 10
    hours = (end - start) / timedelta(hours=1)
    outside_per_hour = (len(failures) - len(inside)) / (14 * 24 - hours)
    assert len(inside) / hours > 20 * outside_per_hour
    assert outage["notifications"] == len(outage["notification_ids"]) > 0


def test_bounce_spike_and_invalid_push_tokens_are_visible(seeded):
    store, tenancy = seeded
    incidents = {i["name"]: i for i in tenancy["incidents"]}
    assert set(incidents) == {"sms-provider-outage", "email-bounce-spike", "push-tokens-invalid"}
    docs = {d["_id"]: d for d in _docs(store, _default(tenancy))}
    bounce, tokens = incidents["email-bounce-spike"], incidents["push-tokens-invalid"]
    for incident, code_of in (
        (bounce, lambda raw: raw["status"]),
        (tokens, lambda raw: raw["error"]["code"]),
    ):
        assert incident["notification_ids"]
        for notification_id in incident["notification_ids"]:
            doc = docs[notification_id]
            failed = [
                e
                for j in doc["jobs"]
                if j["providerId"] == incident["provider_id"]
                for e in j["executionDetails"]
                if e["status"] == "Failed"
            ]
            assert code_of(json.loads(failed[-1]["raw"])) == incident["error_code"]
            assert incident["start"] <= failed[-1]["createdAt"] <= NOW
            assert doc["subscriber"]["subscriberId"] in incident["subscriber_ids"]
    assert all(
        docs[n]["subscriber"]["email"].endswith("@northwind.example")
        for n in bounce["notification_ids"]
    )


def test_subscribers_topics_and_integrations_look_real(seeded):
    store, tenancy = seeded
    env = _default(tenancy)
    with store.read() as db:
        people = [
            dict(r)
            for r in db.execute("SELECT * FROM subscribers WHERE environment_id = ?", (env,))
        ]
        per_subscriber = Counter(
            r[0] for r in db.execute("SELECT subscriber_id FROM subscriptions")
        )
        topics = [
            r[0] for r in db.execute("SELECT key FROM topics WHERE environment_id = ?", (env,))
        ]
        integrations = [
            dict(r)
            for r in db.execute("SELECT * FROM integrations WHERE environment_id = ?", (env,))
        ]
    assert all(re.fullmatch(r"\+[1-9]\d{7,14}", p["phone"]) for p in people if p["phone"])
    domains = {p["email"].split("@")[1] for p in people if p["email"]}
    assert {"gmail.com", "outlook.com", "yahoo.com", "northwind.example"} <= domains
    channels = [c for p in people for c in json.loads(p["channels"])]
    assert {"slack", "fcm", "apns"} <= {c["providerId"] for c in channels}
    assert all({"providerId", "credentials", "_integrationId"} <= c.keys() for c in channels)
    assert all(
        json.loads(p["data"]).keys() >= {"plan", "signupSource", "accountId"} for p in people
    )
    assert len(topics) == 30 and "security" in topics
    assert max(per_subscriber.values()) <= 8 and len(per_subscriber) < len(people) * 3
    primaries = {(i["channel"], i["provider_id"]) for i in integrations if i["is_primary"]}
    assert primaries == {("email", "sendgrid"), ("sms", "twilio")}
    assert {i["channel"] for i in integrations} == CHANNELS
    assert sum(not i["active"] for i in integrations) == 1


def test_live_traffic_inserts_notifications_until_stopped(seeded):
    store, tenancy = seeded
    env = tenancy["environments"][1]["id"]
    clock = Clock(NOW)
    traffic = LiveTraffic(store, clock, env, rate=40.0, seed=3).start()
    wait_for(lambda: traffic.count >= 10, timeout=30)  # the thread of a running clock
    traffic.stop()
    assert not traffic.running
    docs = [d for d in _docs(store, env) if d["createdAt"] >= NOW]
    assert len(docs) == traffic.count
    assert all(
        e["createdAt"] <= iso(clock.now())
        for d in docs
        for j in d["jobs"]
        for e in j["executionDetails"]
    )


def test_live_documents_progress_as_their_details_come_due(seeded):
    store, tenancy = seeded
    catalog = load_catalog(store, tenancy["environments"][0]["id"])
    feed = _Feed(NotificationFactory(catalog, random.Random(1), IdFactory(random.Random(2))))
    start = parse_instant(NOW) + timedelta(days=30)
    new = [s for i in range(20) for s in feed.tick(start + timedelta(seconds=i))[0]]
    later = start + timedelta(hours=2)
    _, changed = feed.tick(later)
    assert {s.id for s in changed} & {s.id for s in new}
    for story in changed:
        before = story.document(story.created_at)
        after = story.document(later)
        assert before != after and after["updatedAt"] <= iso(later)
