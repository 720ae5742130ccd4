"""Bad arguments are refused with a `ParameterError` before any request reaches the service.

"No request sent" is read from the sandbox's own request counter (``faults.stats``).
"""

from __future__ import annotations

import pytest

from toolkit.client import Client
from toolkit.errors import ParameterError


@pytest.fixture
def client(sandbox, faults):
    with Client.from_sandbox(sandbox, progress=False) as client:
        yield client


def _list(iterator_or_value):
    return list(iterator_or_value) if iterator_or_value is not None else None


CASES = {
    # the activity feed
    "page_size 0": (lambda c: c.list_activity(page_size=0), "page_size"),
    "page_size 51": (lambda c: c.list_activity(page_size=51), "page_size"),
    "page_size str": (lambda c: c.list_activity(page_size="50"), "page_size"),
    "limit 0": (lambda c: c.list_activity(limit=0), "limit"),
    "limit bool": (lambda c: c.list_activity(limit=True), "limit"),
    "workers 0": (lambda c: c.list_activity(workers=0), "workers"),
    "unknown channel": (lambda c: c.list_activity(channels=["email", "fax"]), "channels"),
    "channel not str": (lambda c: c.list_activity(channels=[1]), "channels"),
    "channels dict": (lambda c: c.list_activity(channels={"email": 1}), "channels"),
    "unknown severity": (lambda c: c.list_activity(severity="urgent"), "severity"),
    "bad after": (lambda c: c.list_activity(after="yesterday"), "after"),
    "bad before": (lambda c: c.list_activity(before="2026-13-01"), "before"),
    "after number": (lambda c: c.list_activity(after=1700000000), "after"),
    "after > before": (
        lambda c: c.list_activity(after="2026-10-02", before="2026-10-01"),
        "after",
    ),
    "subscriber_ids int": (lambda c: c.list_activity(subscriber_ids=42), "subscriber_ids"),
    "subscriber_ids list of int": (
        lambda c: c.list_activity(subscriber_ids=["a", 7]),
        "subscriber_ids",
    ),
    "empty email": (lambda c: c.list_activity(emails=[""]), "emails"),
    "empty transaction_id": (lambda c: c.list_activity(transaction_id=""), "transaction_id"),
    # cursor lists
    "search page_size 101": (lambda c: _list(c.search_subscribers(page_size=101)), "page_size"),
    "search limit 0": (lambda c: _list(c.search_subscribers(limit=0)), "limit"),
    "search direction": (
        lambda c: _list(c.search_subscribers(order_direction="up")),
        "order_direction",
    ),
    "search email int": (lambda c: _list(c.search_subscribers(email=5)), "email"),
    "subscriptions empty id": (lambda c: _list(c.list_subscriptions("")), "subscriber_id"),
    "subscriptions id None": (lambda c: _list(c.list_subscriptions(None)), "subscriber_id"),
    "subscriptions page_size 101": (
        lambda c: _list(c.list_subscriptions("s", page_size=101)),
        "page_size",
    ),
    "subscriptions many str list": (
        lambda c: c.list_subscriptions_many(["a", None]),
        "subscriber_ids",
    ),
    "subscriptions many int": (lambda c: c.list_subscriptions_many(3), "subscriber_ids"),
    # writes
    "update empty id": (lambda c: c.update_subscriber("  ", first_name="A"), "subscriber_id"),
    "update first_name int": (lambda c: c.update_subscriber("s", first_name=1), "first_name"),
    "update data list": (lambda c: c.update_subscriber("s", data=[1]), "data"),
    "update long idempotency key": (
        lambda c: c.update_subscriber("s", first_name="A", idempotency_key="k" * 256),
        "idempotency_key",
    ),
    "credentials unknown provider": (
        lambda c: c.upsert_credentials("s", "carrier-pigeon", {"webhookUrl": "https://x"}),
        "provider_id",
    ),
    "credentials not a dict": (
        lambda c: c.upsert_credentials("s", "slack", "https://x"),
        "credentials",
    ),
    "credentials unknown field": (
        lambda c: c.upsert_credentials("s", "slack", {"webhook": "https://x"}),
        "credentials['webhook']",
    ),
    "device tokens str": (
        lambda c: c.upsert_credentials("s", "fcm", {"deviceTokens": "abc"}),
        "credentials['deviceTokens']",
    ),
    "device tokens ints": (
        lambda c: c.upsert_credentials("s", "fcm", {"deviceTokens": [1, 2]}),
        "credentials['deviceTokens']",
    ),
    "device tokens over 100": (
        lambda c: c.upsert_credentials("s", "fcm", {"deviceTokens": [f"t{i}" for i in range(101)]}),
        "credentials['deviceTokens']",
    ),
    "integration unknown channel": (
        lambda c: c.create_integration("sendgrid", "fax"),
        "channel",
    ),
    "integration empty provider": (lambda c: c.create_integration("", "email"), "provider_id"),
    "integration credentials list": (
        lambda c: c.create_integration("sendgrid", "email", credentials=["k"]),
        "credentials",
    ),
    "integration active str": (
        lambda c: c.create_integration("sendgrid", "email", active="yes"),
        "active",
    ),
    "integration conditions dict": (
        lambda c: c.create_integration("sendgrid", "email", conditions={"type": "AND"}),
        "conditions",
    ),
    "delete empty id": (lambda c: c.delete_integration(""), "integration_id"),
}


@pytest.mark.parametrize("call, parameter", CASES.values(), ids=CASES.keys())
def test_bad_argument_is_refused_before_any_request(client, faults, call, parameter):
    before = faults.stats["requests"]
    with pytest.raises(ParameterError) as caught:
        call(client)
    assert faults.stats["requests"] == before
    err = caught.value
    assert err.name == parameter
    assert isinstance(err, ValueError)
    message = str(err)
    assert "\n" not in message and parameter in message and "allowed" in message


def test_vocabularies_are_case_insensitive_and_normalized(client, faults):
    rows = client.list_activity(channels="EMAIL", severity=["High"], limit=5)
    assert rows and all("email" in row["channels"] for row in rows)
    assert all(row.get("severity") == "high" for row in rows)
    subscribers = list(client.search_subscribers(order_direction="asc", limit=3))
    assert len(subscribers) == 3
    assert subscribers[0]["_id"] < subscribers[1]["_id"] < subscribers[2]["_id"]


def test_relative_and_absolute_times_are_accepted(client, sandbox):
    now = sandbox.now()
    recent = client.list_activity(after="6h", progress=False)
    assert recent
    cutoff = now.timestamp() - 6 * 3600 - 5
    assert all(_epoch(row["createdAt"]) >= cutoff for row in recent)


def _epoch(text: str) -> float:
    from toolkit.timeutil import parse_time

    return parse_time(text).timestamp()


SECRET_URL = "https://hooks.slack.com/services/T000/B000/XXXXXXXXXXXXXXXXXXXXXXXX"
SECRET_KEY = "SG.abcdefghijklmnopqrstuvwxyz0123456789"


@pytest.mark.parametrize(
    "call",
    [
        lambda c: c.upsert_credentials("s", "slack", {"webhookURL": SECRET_URL}),
        lambda c: c.upsert_credentials("s", "fcm", {"deviceTokens": [SECRET_KEY, 3]}),
        lambda c: c.upsert_credentials("s", "slack", {"webhookUrl": [SECRET_URL]}),
        lambda c: c.create_integration(
            "sendgrid", "email", credentials={"apiKey": SECRET_KEY, 1: 2}
        ),
    ],
    ids=["misspelt field", "bad device tokens", "webhook not a string", "bad credentials key"],
)
def test_a_refused_credential_is_never_echoed(client, call):
    with pytest.raises(ParameterError) as caught:
        call(client)
    shown = str(caught.value) + repr(caught.value.value)
    assert "XXXXXXXX" not in shown and SECRET_KEY[:-4] not in shown


def test_every_window_is_checked_by_one_function_with_one_message(client, sandbox):
    from toolkit.panels import ActivityFilter
    from toolkit.read import read_activity
    from toolkit.report import delivery_report

    calls = [
        lambda: client.list_activity(after="2026-10-02", before="2026-10-01"),
        lambda: read_activity(client, after="2026-10-02", before="2026-10-01"),
        lambda: ActivityFilter(
            period="custom", after="2026-10-02", before="2026-10-01"
        ).to_read_kwargs(sandbox.now()),
        lambda: delivery_report(client, out="unused.html", since="2026-10-02", until="2026-10-01"),
    ]
    messages = []
    for call in calls:
        with pytest.raises(ParameterError) as caught:
            call()
        messages.append(str(caught.value).replace("since", "after").replace("until", "before"))
    assert messages == [messages[0]] * len(calls)
    assert "not later than before (2026-10-01T00:00:00.000Z)" in messages[0]


def test_a_duration_beyond_the_calendar_is_refused(client, faults):
    before = faults.stats["requests"]
    with pytest.raises(ParameterError, match="after"):
        client.list_activity(after="999999999d")
    assert faults.stats["requests"] == before
