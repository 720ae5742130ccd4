"""Planting incidents in the sandbox: each kind at chosen times and providers, the quiet data set,
the description in `Sandbox.incidents`, and live outages in live traffic."""

from __future__ import annotations

import json
from collections import Counter
from datetime import timedelta

import pytest
import requests

from tests.conftest import wait_for
from toolkit.sandbox import IncidentSpec, start
from toolkit.sandbox.clock import Clock, iso, parse_instant
from toolkit.sandbox.seed import KINDS, populate
from toolkit.sandbox.store import Store

NOW = "2026-11-01T12:00:00.000Z"
SIZES = {"notifications": 4000, "subscribers": 400}
SPECS = [
    {"kind": "provider_outage", "provider_id": "ses", "start": "100h", "duration": "3h"},
    {"kind": "error_spike", "provider_id": "twilio", "start": "70h", "error_code": "30003"},
    {"kind": "domain_bounces", "domain": "gmail.com", "start": "50h", "duration": "2h"},
    IncidentSpec("stale_credentials", provider_id="slack", start="30h", share=0.5),
    {"kind": "volume_drop", "channel": "sms", "start": "2026-10-24T04:00:00Z", "duration": "6h"},
    {"kind": "latency_degradation", "provider_id": "apns", "start": "150h", "factor": 20},
]


def _docs(store: Store, environment_id: str) -> list[dict]:
    with store.read() as db:
        rows = db.execute(
            "SELECT doc FROM notifications WHERE environment_id = ?", (environment_id,)
        )
        return [json.loads(row[0]) for row in rows]


def _jobs(docs: list[dict], provider: str) -> list[tuple[dict, dict]]:
    """(notification, job) of the jobs that tried to send through ``provider``."""
    return [
        (doc, job)
        for doc in docs
        for job in doc["jobs"]
        if job["providerId"] == provider and _sent_at(job) is not None
    ]  # fmt: skip


def _failed(job: dict) -> list[dict]:
    return [e for e in job["executionDetails"] if e["status"] == "Failed"]


def _sent_at(job: dict) -> str | None:
    """When the job's first attempt answered (its first Success or Failed detail)."""
    answers = [e for e in job["executionDetails"] if e["status"] in ("Success", "Failed")]
    return answers[0]["createdAt"] if answers else None


@pytest.fixture(scope="module")
def planted():
    store = Store()
    tenancy = populate(store, seed=5, now=NOW, incidents=SPECS, **SIZES)
    incidents = {i["kind"]: i for i in tenancy["incidents"]}
    yield _docs(store, tenancy["environments"][0]["id"]), incidents
    store.close()


def test_every_kind_is_described_with_the_contract_fields(planted):
    _, incidents = planted
    assert set(incidents) == set(KINDS)
    fields = {"kind", "name", "summary", "channel", "provider_id", "start", "end", "error_code",
              "domain", "notifications", "subscribers", "notification_ids", "subscriber_ids"}  # fmt: skip
    for incident in incidents.values():
        assert fields <= incident.keys()
        assert incident["notifications"] > 0 and incident["subscribers"] > 0
    outage = incidents["provider_outage"]
    assert (outage["channel"], outage["provider_id"]) == ("email", "ses")
    now = parse_instant(NOW)
    assert outage["start"] == iso(now - timedelta(hours=100))
    assert outage["end"] == iso(now - timedelta(hours=97))
    assert incidents["stale_credentials"]["end"] == NOW  # to now unless given a duration
    assert incidents["error_spike"]["end"] == iso(now - timedelta(hours=70, minutes=-45))
    assert incidents["volume_drop"]["start"] == "2026-10-24T04:00:00.000Z"
    assert incidents["domain_bounces"]["domain"] == "gmail.com"


def test_provider_outage_fails_every_send_of_a_routed_provider_in_its_window(planted):
    docs, incidents = planted
    outage = incidents["provider_outage"]
    jobs = _jobs(docs, "ses")
    inside = [(d, j) for d, j in jobs if outage["start"] <= _sent_at(j) < outage["end"]]
    outside = [(d, j) for d, j in jobs if not outage["start"] <= _sent_at(j) < outage["end"]]
    assert len(outside) > 10 * len(inside) > 0  # a non-primary provider has a normal period too
    assert all(
        j["status"] == "failed" for _, j in inside if _failed(j)[-1]["createdAt"] < outage["end"]
    )
    assert {_failed(j)[0]["createdAt"] >= outage["start"] for _, j in inside} == {True}
    hit = {d["_id"] for d, j in jobs if any(
        outage["start"] <= e["createdAt"] < outage["end"] for e in _failed(j))}  # fmt: skip
    assert hit == set(outage["notification_ids"])
    failed_outside = sum(j["status"] == "failed" for _, j in outside)
    assert failed_outside < 0.1 * len(outside)


def test_error_spike_bunches_one_code_at_a_partial_rate(planted):
    docs, incidents = planted
    spike = incidents["error_spike"]
    assert (spike["provider_id"], spike["error_code"]) == ("twilio", "30003")
    coded = [
        (d, j, e)
        for d, j in _jobs(docs, "twilio")
        for e in _failed(j)
        if json.loads(e["raw"]).get("code") == 30003
    ]
    inside = [d["_id"] for d, _, e in coded if spike["start"] <= e["createdAt"] < spike["end"]]
    assert set(inside) == set(spike["notification_ids"])
    sent = [j for _, j in _jobs(docs, "twilio") if spike["start"] <= _sent_at(j) < spike["end"]]
    assert 0.2 <= len(inside) / len(sent) <= 0.8  # failure_rate 0.5 by default
    assert len(coded) - len(inside) < len(inside)  # background 30003s are rare


def test_domain_bounces_hit_only_that_domain(planted):
    docs, incidents = planted
    bounces = incidents["domain_bounces"]
    by_id = {d["_id"]: d for d in docs}
    assert all(
        by_id[n]["subscriber"]["email"].endswith("@gmail.com") for n in bounces["notification_ids"]
    )
    gmail = [
        j
        for d, j in _jobs(docs, "sendgrid")
        if d["subscriber"].get("email", "").endswith("@gmail.com")
        and bounces["start"] <= _sent_at(j) < bounces["end"]
    ]
    assert gmail and all(json.loads(_failed(j)[-1]["raw"])["status"] == "5.1.1" for j in gmail)


def test_stale_credentials_break_a_share_of_the_providers_subscribers_to_now(planted):
    docs, incidents = planted
    stale = incidents["stale_credentials"]
    assert (stale["channel"], stale["provider_id"], stale["error_code"]) == (
        "chat", "slack", "no_service")  # fmt: skip
    broken = set(stale["subscriber_ids"])
    for doc, job in _jobs(docs, "slack"):
        if doc["subscriber"]["subscriberId"] in broken and _sent_at(job) >= stale["start"]:
            assert job["status"] == "failed"
            assert json.loads(_failed(job)[-1]["raw"])["body"] == "no_service"


def test_volume_drop_silences_the_channel_for_its_period(planted):
    docs, incidents = planted
    drop = incidents["volume_drop"]
    assert (drop["channel"], drop["provider_id"], drop["notification_ids"]) == ("sms", None, [])

    def sms_sends(low, high):
        return sum(
            1 for d, j in _jobs(docs, "twilio") if low <= d["createdAt"] < high
        )  # fmt: skip

    assert sms_sends(drop["start"], drop["end"]) == 0
    day_before = iso(parse_instant(drop["start"]) - timedelta(days=1))
    assert sms_sends(day_before, iso(parse_instant(drop["end"]) - timedelta(days=1))) > 0
    assert drop["notifications"] > 0  # the notifications it suppressed


def test_latency_degradation_slows_the_providers_sends(planted):
    docs, incidents = planted
    slow = incidents["latency_degradation"]
    durations = {True: [], False: []}
    for _, job in _jobs(docs, "apns"):
        queued = parse_instant(job["executionDetails"][0]["createdAt"])
        took = (parse_instant(_sent_at(job)) - queued).total_seconds()
        durations[slow["start"] <= iso(queued) < slow["end"]].append(took)
    assert min(durations[True]) >= 0.2 * 20 - 0.01  # the fastest send (0.2 s) times 20
    assert max(durations[False]) <= 1.2 + 0.01
    assert slow["notifications"] == len(durations[True]) > 0


def test_the_quiet_data_set_has_no_incident_and_low_random_failures():
    store = Store()
    tenancy = populate(store, seed=5, now=NOW, incidents="none", **SIZES)
    assert tenancy["incidents"] == []
    docs = _docs(store, tenancy["environments"][0]["id"])
    for provider in ("sendgrid", "twilio", "fcm", "slack"):
        jobs = [j for _, j in _jobs(docs, provider)]
        assert sum(j["status"] == "failed" for j in jobs) < 0.06 * len(jobs)
    codes = Counter(
        json.loads(e["raw"]).get("code") for d in docs for j in d["jobs"] for e in _failed(j)
        if j["providerId"] == "twilio"
    )  # fmt: skip
    assert 20503 not in codes  # the default outage's error
    store.close()


def test_the_state_lists_the_planted_incidents_without_their_ids():
    with start(seed=5, now=NOW, notifications=300, subscribers=50) as sandbox:
        listed = requests.get(f"{sandbox.url}/_sandbox/state", timeout=10).json()["incidents"]
    assert [i["name"] for i in listed] == [i["name"] for i in sandbox.incidents]
    assert all("notification_ids" not in i and i["kind"] for i in listed)


def test_the_default_incidents_keep_their_names_and_get_kinds():
    store = Store()
    tenancy = populate(store, seed=5, now=NOW, notifications=600, subscribers=100)
    kinds = {i["name"]: i["kind"] for i in tenancy["incidents"]}
    assert kinds == {
        "sms-provider-outage": "provider_outage",
        "email-bounce-spike": "domain_bounces",
        "push-tokens-invalid": "stale_credentials",
    }
    store.close()


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"kind": "meltdown", "channel": "sms"}, "kind"),
        ({"kind": "provider_outage", "provider_id": "pigeon"}, "pigeon"),
        ({"kind": "provider_outage", "provider_id": "msteams"}, "msteams"),  # inactive
        ({"kind": "provider_outage", "channel": "sms", "duration": "soon"}, "duration"),
        ({"kind": "provider_outage", "channel": "sms", "start": "yesterday"}, "start"),
        ({"kind": "domain_bounces", "domain": "nowhere.example"}, "domain"),
        ({"kind": "stale_credentials", "channel": "sms"}, "stale_credentials"),
        ({"kind": "error_spike", "channel": "sms", "failure_rate": 2}, "failure_rate"),
        ({"kind": "volume_drop"}, "channel"),
        ({"kind": "volume_drop", "channel": "sms", "when": "now"}, "when"),
    ],
)
def test_bad_specs_are_refused_before_anything_starts(spec, message):
    with pytest.raises(ValueError, match=message):
        start(now=NOW, incidents=[spec], notifications=50, subscribers=10)


def test_the_clock_runs_at_its_speed():
    ticks = iter([100.0, 100.0, 103.0])
    clock = Clock(NOW, speed=10, timer=lambda: next(ticks))
    assert clock.now() == parse_instant(NOW)
    assert clock.now() == parse_instant(NOW) + timedelta(seconds=30)
    with pytest.raises(ValueError, match="clock_speed"):
        Clock(NOW, speed=-1)


def test_a_stopped_clock_moves_only_when_advanced_and_traffic_keeps_up():
    ticks = iter([100.0, 500.0, 900.0])
    clock = Clock(NOW, speed=0, timer=lambda: next(ticks))
    assert clock.now() == parse_instant(NOW)  # real time passed: the clock did not move
    clock.advance(2.5)
    assert clock.now() == parse_instant(NOW) + timedelta(seconds=2.5)
    with pytest.raises(ValueError, match="seconds"):
        clock.advance(-1)
    with start(seed=4, now=NOW, incidents="none", clock_speed=0, notifications=300,
               subscribers=60) as sandbox:  # fmt: skip
        traffic = sandbox.start_traffic(rate=4)
        assert traffic.running and traffic.count == 0 and sandbox.now() == parse_instant(NOW)
        assert sandbox.advance(10) == parse_instant(NOW) + timedelta(seconds=10)
        docs = _docs(sandbox.store, sandbox.environments[0]["id"])
        new = [d for d in docs if d["createdAt"] >= iso(parse_instant(NOW))]
        assert len(new) == traffic.count >= 4 * 10  # every trigger due by then, inserted
        assert max(d["createdAt"] for d in new) <= iso(sandbox.now())
        sandbox.stop_traffic()
        assert not traffic.running
    with (
        start(seed=4, now=NOW, notifications=300, subscribers=60) as running,
        pytest.raises(ValueError, match="stopped clock"),
    ):
        running.advance(1)


def test_a_live_outage_fails_the_providers_sends_in_live_traffic_until_stopped():
    with start(seed=4, now=NOW, incidents="none", clock_speed=5, notifications=300,
               subscribers=60) as sandbox:  # fmt: skip
        assert sandbox.incidents == [] and sandbox.state()["clock_speed"] == 5
        assert sandbox.state()["incidents"] == []
        response = requests.post(
            f"{sandbox.url}/_sandbox/outage",
            json={"provider_id": "twilio", "failure_rate": 1.0},
            timeout=10,
        )
        assert response.status_code == 200
        [outage] = response.json()
        assert (outage["provider_id"], outage["channel"], outage["error_code"]) == (
            "twilio", "sms", "20503")  # fmt: skip
        sandbox.start_traffic(rate=40)

        def failed_sms() -> list[dict]:
            docs = _docs(sandbox.store, sandbox.environments[0]["id"])
            return [
                j for d in docs if d["createdAt"] >= outage["start"] for j in d["jobs"]
                if j["providerId"] == "twilio" and _failed(j)
            ]  # fmt: skip

        wait_for(lambda: len(failed_sms()) >= 3)
        assert {json.loads(_failed(j)[0]["raw"])["code"] for j in failed_sms()} == {20503}
        assert sandbox.state()["outages"] == [outage]
        bad = requests.post(f"{sandbox.url}/_sandbox/outage", json={"provider_id": 3}, timeout=10)
        assert bad.status_code == 422 and "provider_id" in bad.json()["message"]
        stopped = requests.post(f"{sandbox.url}/_sandbox/outage", json={"stop": True}, timeout=10)
        assert stopped.json() == [] and sandbox.outages() == []
        sandbox.stop_traffic()
        with pytest.raises(ValueError, match="pigeon"):
            sandbox.start_outage("pigeon")
