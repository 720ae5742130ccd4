"""Bad arguments are refused with a `ParameterError` before any request reaches the service.

"No request sent" is read from the sandbox's own request counter (``faults.stats``).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

import toolkit
from toolkit.client import Client, connect
from toolkit.errors import ConfigurationError, ParameterError
from toolkit.timeutil import to_iso

#: A filter list far longer than a URL can carry.
LONG = [f"nobody-{i:05d}" for i in range(20_000)]


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
    "credentials provider not an id": (
        lambda c: c.upsert_credentials("s", "Carrier Pigeon!", {"webhookUrl": "https://x"}),
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
    # ids that would move the route, header injection, JSON the service cannot take
    "update id dot": (lambda c: c.update_subscriber(".", first_name="A"), "subscriber_id"),
    "delete id dot dot": (lambda c: c.delete_integration(".."), "integration_id"),
    "subscriptions id dot dot": (lambda c: _list(c.list_subscriptions("..")), "subscriber_id"),
    "idempotency key newline": (
        lambda c: c.update_subscriber("s", first_name="A", idempotency_key="k\nX-Evil: 1"),
        "idempotency_key",
    ),
    "data with a set": (lambda c: c.update_subscriber("s", data={"tags": {"a"}}), "data['tags']"),
    "data with infinity": (
        lambda c: c.update_subscriber("s", data={"score": [1.0, float("inf")]}),
        "data['score'][1]",
    ),
    "data with an object": (lambda c: c.update_subscriber("s", data={"o": object()}), "data['o']"),
    "data with a number key": (lambda c: c.update_subscriber("s", data={1: "x"}), "data[1]"),
    "configurations with -infinity": (
        lambda c: c.create_integration("sendgrid", "email", configurations={"x": -math.inf}),
        "configurations['x']",
    ),
    "two long lists": (
        lambda c: c.list_activity(subscriber_ids=LONG, emails=[f"{i}@x.example" for i in LONG]),
        "subscriber_ids",
    ),
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


def test_data_nested_2000_deep_is_refused_with_its_path(client, faults):
    deep = leaf = {}
    for _ in range(2000):
        leaf["a"] = {}
        leaf = leaf["a"]
    before = faults.stats["requests"]
    with pytest.raises(ParameterError) as caught:
        client.update_subscriber("s", data=deep)
    assert caught.value.name.startswith("data['a']['a']") and "64 levels" in str(caught.value)
    assert faults.stats["requests"] == before


def test_numpy_and_pandas_values_in_data_are_sent_as_users_expect(fresh_sandbox):
    client = Client.from_sandbox(fresh_sandbox, progress=False)
    subscriber = next(client.search_subscribers(limit=1))["subscriberId"]
    data = {
        "count": np.int64(3), "share": np.float64(0.5), "flag": np.bool_(True),
        "name": np.str_("Ada"), "at": pd.Timestamp("2026-01-02 03:04:05", tz="UTC"),
        "day": np.datetime64("2026-01-02T00:00:00"), "nan": float("nan"), "na": pd.NA,
        "nat": pd.NaT, "pair": (1, np.int32(2)),
    }  # fmt: skip
    updated = client.update_subscriber(subscriber, data=data)
    assert updated["data"] == {
        "count": 3, "share": 0.5, "flag": True, "name": "Ada", "at": "2026-01-02T03:04:05.000Z",
        "day": "2026-01-02T00:00:00.000Z", "nan": None, "na": None, "nat": None, "pair": [1, 2],
    }  # fmt: skip


@pytest.mark.parametrize(
    "options, parameter",
    [
        ({"timeout": -1}, "timeout"),
        ({"timeout": float("nan")}, "timeout"),
        ({"max_retries": -1}, "max_retries"),
        ({"max_wait": -5}, "max_wait"),
        ({"workers": 0}, "workers"),
    ],
)
def test_bad_client_settings_are_refused(sandbox, options, parameter):
    with pytest.raises(ParameterError) as caught:
        Client.from_sandbox(sandbox, **options)
    assert caught.value.name == parameter


@pytest.mark.parametrize("url", ["http://127.0.0.1:99999", "http://127.0.0.1:0", "http://:80"])
def test_a_port_out_of_range_or_no_host_is_refused(url):
    with pytest.raises(ParameterError, match="base_url"):
        connect(url, "k" * 32)


def test_an_api_key_with_a_line_break_is_refused_without_echoing_it(sandbox):
    key = sandbox.api_key + "\nX-Injected: yes"
    with pytest.raises(ParameterError) as caught:
        connect(sandbox.url, key)
    assert caught.value.name == "api_key"
    assert sandbox.api_key not in str(caught.value) + repr(caught.value.value)


@pytest.mark.parametrize(
    "call, parameter",
    [
        (lambda c: toolkit.read_activity(None), "client"),
        (lambda c: toolkit.read_subscriptions(c, None), "subscriber_ids"),
        (lambda c: toolkit.read_integrations(c, "x"), "integrations"),
        (lambda c: toolkit.read_integrations(c, [{"_id": "i"}, "x"]), "integrations"),
    ],
)
def test_readers_refuse_what_is_not_their_input(client, faults, call, parameter):
    before = faults.stats["requests"]
    with pytest.raises(ParameterError) as caught:
        call(client)
    assert caught.value.name == parameter
    assert faults.stats["requests"] == before


def test_a_long_subscriber_list_is_split_over_requests_and_merged(client, faults):
    before = to_iso(client.now())
    everyone = client.list_activity(before=before, limit=400)
    chosen = sorted({r["subscriber"]["subscriberId"] for r in everyone[::40]})
    expected = client.list_activity(before=before, subscriber_ids=chosen)
    requests = faults.stats["requests"]
    got = client.list_activity(before=before, subscriber_ids=[*LONG[:10_000], *chosen, *LONG])
    assert sorted(r["_id"] for r in got) == sorted(r["_id"] for r in expected)
    assert len({r["_id"] for r in got}) == len(got)
    created = [r["createdAt"] for r in got]
    assert created == sorted(created, reverse=True)
    assert faults.stats["requests"] - requests > 10  # several requests, none refused


def test_connect_without_the_sandbox_extra_says_how_to_install_it(monkeypatch):
    import sys

    monkeypatch.delenv("SVC_BASE_URL", raising=False)
    monkeypatch.delenv("SVC_API_KEY", raising=False)
    monkeypatch.setattr("toolkit.client._sandbox", None)
    monkeypatch.setitem(sys.modules, "fastapi", None)  # as if not installed
    for name in [m for m in sys.modules if m.startswith("toolkit.sandbox")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.delattr(toolkit, "sandbox", raising=False)
    with pytest.raises(ConfigurationError, match=r"pip install 'toolkit\[sandbox\]'"):
        connect()
