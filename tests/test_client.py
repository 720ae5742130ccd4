"""The client against a real sandbox: connecting, the seven operations, errors, and reads that
stay exact under faults and live traffic."""

from __future__ import annotations

import random
from collections import Counter
from datetime import UTC

import pytest
from conftest import Waits

import toolkit
from toolkit._checks import unwrap as _unwrap
from toolkit.client import Client, connect
from toolkit.errors import (
    AuthenticationError,
    ConfigurationError,
    ConflictError,
    NotFoundError,
    RateLimitError,
    RetentionError,
    ServerError,
    ValidationError,
)
from toolkit.timeutil import parse_time, to_iso


@pytest.fixture
def client(sandbox, faults):
    with Client.from_sandbox(sandbox, progress=False, sleep=Waits()) as client:
        yield client


@pytest.fixture
def writer(fresh_sandbox):
    with Client.from_sandbox(fresh_sandbox, progress=False, sleep=Waits()) as client:
        yield client


@pytest.fixture(scope="module")
def pinned(sandbox):
    """One fault-free full read of the shared sandbox, and the ``before`` it was pinned to."""
    before = to_iso(sandbox.now())
    with Client.from_sandbox(sandbox, progress=False) as client:
        return before, client.list_activity(before=before)


# -- connecting --------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", ["/", "/v1/", "/v1", "/v2"])
def test_connect_reads_the_environment_variables(sandbox, monkeypatch, suffix):
    # once, SVC_BASE_URL ending in /v1/ gave "Cannot GET /v1/v1/notifications"
    monkeypatch.setenv("SVC_BASE_URL", sandbox.url + suffix)
    monkeypatch.setenv("SVC_API_KEY", sandbox.api_key)
    client = connect(progress=False)
    assert client.base_url == sandbox.url and client.source == sandbox.url
    (record,) = client.list_activity(limit=1)
    # the environment the service tells: once, None (a report headed "unknown")
    assert client.environment == record["_environmentId"]
    assert repr(client) == f"<Client {sandbox.url} ({record['_environmentId']})>"


def test_a_repr_says_what_is_wrong_instead_of_raising(sandbox):
    client = Client(sandbox.url, "wrong-key-0123456789abcdef", progress=False, max_retries=0)
    assert repr(client) == f"<Client {sandbox.url} (environment unknown: AuthenticationError)>"
    assert "wrong-key" not in repr(client)


def test_arguments_win_over_the_environment(sandbox, monkeypatch):
    monkeypatch.setenv("SVC_BASE_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("SVC_API_KEY", "wrong")
    client = connect(sandbox.url, sandbox.api_key, progress=False)
    assert client.list_activity(limit=1)


@pytest.mark.parametrize("given", [{"base_url": "http://x"}, {"api_key": "k" * 32}])
def test_half_a_configuration_is_refused(monkeypatch, given):
    monkeypatch.delenv("SVC_BASE_URL", raising=False)
    monkeypatch.delenv("SVC_API_KEY", raising=False)
    with pytest.raises(ConfigurationError, match="SVC_BASE_URL and SVC_API_KEY"):
        connect(**given)


def test_connect_without_configuration_starts_one_local_sandbox(monkeypatch, capsys):
    monkeypatch.delenv("SVC_BASE_URL", raising=False)
    monkeypatch.delenv("SVC_API_KEY", raising=False)
    first = connect(progress=False)
    second = connect(progress=False)
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 2 and lines[0] == lines[1]
    assert lines[0] == (
        "toolkit: no SVC_BASE_URL/SVC_API_KEY set; using the local sandbox at "
        f"{first.base_url} (Acme/Development)"
    )
    assert second.base_url == first.base_url
    assert first.list_activity(limit=3)


def test_a_client_of_a_sandbox_knows_its_environment_and_clock(sandbox):
    client = connect(sandbox=sandbox, progress=False)
    assert client.environment == "Acme/Development"
    assert abs((client.now() - sandbox.now()).total_seconds()) < 1
    assert repr(client) == f"<Client {sandbox.url} (Acme/Development)>"
    other = Client.from_sandbox(sandbox, environment="Acme/Production")
    assert other.environment == "Acme/Production"
    assert "ApiKey" not in repr(client) and sandbox.api_key not in repr(client.transport)
    assert toolkit.connect is connect and toolkit.Client is Client


# -- reads -------------------------------------------------------------------------------------


def test_a_full_activity_read_has_every_record_once_newest_first(pinned, sandbox):
    _, rows = pinned
    ids = [row["_id"] for row in rows]
    assert len(ids) == len(set(ids)) == 20_000
    created = [row["createdAt"] for row in rows]
    assert created == sorted(created, reverse=True)


def test_concurrent_and_sequential_reads_agree(client, pinned):
    before, rows = pinned
    sequential = client.list_activity(before=before, workers=1, page_size=50, limit=1234)
    concurrent = client.list_activity(before=before, workers=8, page_size=17, limit=1234)
    assert [r["_id"] for r in sequential] == [r["_id"] for r in concurrent]
    assert [r["_id"] for r in concurrent] == [r["_id"] for r in rows[:1234]]


def test_limit_caps_the_rows_and_the_requests(client, faults):
    rows = client.list_activity(limit=120, page_size=50)
    assert len(rows) == 120 and faults.stats["requests"] == 3
    assert len(client.list_activity(limit=7)) == 7


def test_activity_filters_are_sent(client, pinned):
    before, rows = pinned
    sample = rows[100]
    subscriber = sample["subscriber"]["subscriberId"]
    by_subscriber = client.list_activity(before=before, subscriber_ids=subscriber)
    assert by_subscriber and all(
        r["subscriber"]["subscriberId"] == subscriber for r in by_subscriber
    )
    assert by_subscriber == [r for r in rows if r["subscriber"]["subscriberId"] == subscriber]
    by_transaction = client.list_activity(before=before, transaction_id=sample["transactionId"])
    assert sample["_id"] in {r["_id"] for r in by_transaction}
    sms_or_chat = client.list_activity(before=before, channels=["sms", "chat"], limit=200)
    assert all({"sms", "chat"} & set(r["channels"]) for r in sms_or_chat)
    severe = client.list_activity(before=before, severity=["high", "medium"], limit=200)
    assert {r["severity"] for r in severe} <= {"high", "medium"}
    template = sample["_templateId"]
    by_template = client.list_activity(before=before, templates=[template], limit=100)
    assert by_template and all(r["_templateId"] == template for r in by_template)


def test_the_window_is_respected(client, pinned):
    before, rows = pinned
    middle = rows[5000]["createdAt"]
    window = client.list_activity(after=middle, before=before)
    assert window and all(middle <= r["createdAt"] <= before for r in window)
    assert {r["_id"] for r in window} == {r["_id"] for r in rows if r["createdAt"] >= middle}


def test_search_subscribers_follows_cursors(client):
    everyone = list(client.search_subscribers())
    assert len(everyone) == len({s["_id"] for s in everyone}) >= 2000
    small_pages = list(client.search_subscribers(page_size=7, limit=50))
    assert [s["_id"] for s in small_pages] == [s["_id"] for s in everyone[:50]]
    ascending = list(client.search_subscribers(order_direction="ASC", limit=20))
    assert [s["_id"] for s in ascending] == sorted(s["_id"] for s in everyone)[:20]
    target = everyone[10]
    found = list(client.search_subscribers(subscriber_id=target["subscriberId"]))
    assert [s["_id"] for s in found] == [target["_id"]]
    if target.get("email"):
        by_email = list(client.search_subscribers(email=target["email"]))
        assert target["_id"] in {s["_id"] for s in by_email}


def test_subscriptions_one_and_many(client):
    subscribers = [s["subscriberId"] for s in client.search_subscribers(limit=40)]
    many = client.list_subscriptions_many(subscribers + subscribers[:3])
    assert list(many) == subscribers
    assert any(many.values())
    someone = next(sid for sid, subs in many.items() if subs)
    one = list(client.list_subscriptions(someone, page_size=1))
    assert [s["_id"] for s in one] == [s["_id"] for s in many[someone]]
    assert all(s["subscriber"]["subscriberId"] == someone for s in one)
    key = one[0]["topic"]["key"]
    assert [s["topic"]["key"] for s in client.list_subscriptions(someone, key=key)] == [key]


# -- writes ------------------------------------------------------------------------------------


def test_update_subscriber_sets_clears_and_leaves_alone(writer):
    someone = next(iter(writer.search_subscribers(limit=1)))
    sid = someone["subscriberId"]
    updated = writer.update_subscriber(sid, first_name="Ada", data={"plan": "gold"})
    assert updated["firstName"] == "Ada" and updated["data"] == {"plan": "gold"}
    assert updated["lastName"] == someone.get("lastName")
    cleared = writer.update_subscriber(sid, first_name=None, locale="fr-FR")
    assert cleared["firstName"] is None and cleared["locale"] == "fr-FR"
    assert cleared["data"] == {"plan": "gold"}


def test_credentials_need_an_integration_then_replace_device_tokens(writer):
    sid = next(iter(writer.search_subscribers(limit=1)))["subscriberId"]
    writer.create_integration("fcm", "push", identifier="fcm-test", active=True)
    writer.upsert_credentials(sid, "fcm", {"device_tokens": ["a", "b"]})
    subscriber = writer.upsert_credentials(
        sid, "fcm", {"deviceTokens": ["c"]}, integration_identifier="fcm-test"
    )
    [channel] = [c for c in subscriber["channels"] if c["providerId"] == "fcm"]
    assert channel["credentials"]["deviceTokens"] == ["c"]


def test_create_and_delete_an_integration(writer, fresh_sandbox):
    created = writer.create_integration(
        "sendgrid",
        "email",
        name="Mail",
        identifier="mail-1",
        credentials={"apiKey": "SG.x", "senderName": "Acme"},
        active=True,
    )
    assert created["identifier"] == "mail-1" and created["channel"] == "email"
    with pytest.raises(ConflictError) as caught:
        writer.create_integration("sendgrid", "email", identifier="mail-1")
    assert caught.value.status == 409
    remaining = writer.delete_integration(created["_id"])
    assert isinstance(remaining, list) and created["_id"] not in {i["_id"] for i in remaining}
    with pytest.raises(NotFoundError):
        writer.delete_integration(created["_id"])


# -- errors ------------------------------------------------------------------------------------


def _one_line(err: Exception, *needles: str) -> str:
    text = str(err)
    assert "\n" not in text
    for needle in needles:
        assert needle in text
    return text


def test_a_wrong_key_is_an_authentication_error(sandbox):
    client = Client(sandbox.url, "0" * 32, progress=False)
    with pytest.raises(AuthenticationError) as caught:
        client.list_activity(limit=1)
    assert caught.value.status == 401
    _one_line(caught.value, "GET /v1/notifications -> 401", "API Key not found", "SVC_API_KEY")


def test_another_environment_id_is_forbidden(writer, fresh_sandbox):
    other = fresh_sandbox.environment("Acme/Production")["id"]
    with pytest.raises(AuthenticationError) as caught:
        writer.create_integration("sendgrid", "email", environment_id=other)
    assert caught.value.status == 403


def test_unknown_ids_are_not_found(client):
    with pytest.raises(NotFoundError) as caught:
        list(client.list_subscriptions("no-such-subscriber"))
    _one_line(caught.value, "/v2/subscribers/no-such-subscriber/subscriptions -> 404")


def test_the_service_refusing_a_field_is_a_validation_error(writer):
    sid = next(iter(writer.search_subscribers(limit=1)))["subscriberId"]
    with pytest.raises(ValidationError) as caught:
        writer.update_subscriber(sid, email="not an email")
    err = caught.value
    assert err.status == 422 and "email" in err.field_errors
    _one_line(err, f"PATCH /v2/subscribers/{sid} -> 422", "email")


def test_a_window_beyond_retention_says_how_far_back_is_allowed(sandbox):
    client = Client.from_sandbox(sandbox, environment="Globex/Development", progress=False)
    with pytest.raises(RetentionError) as caught:
        client.list_activity(after="7d")
    err = caught.value
    assert err.status == 402
    _one_line(err, "GET /v1/notifications -> 402")
    assert abs((client.now() - err.earliest).total_seconds() - 86400) < 120
    assert f"use after >= {to_iso(err.earliest)}" in str(err)
    assert client.list_activity(after="23h") is not None


def test_rate_limited_and_server_errors_map_to_their_classes(sandbox, faults):
    client = Client.from_sandbox(sandbox, progress=False, max_retries=0)
    faults.throttle_next(1, retry_after=7)
    with pytest.raises(RateLimitError) as caught:
        client.list_activity(limit=1)
    assert caught.value.retry_after == 7
    _one_line(caught.value, "-> 429", "retry after 7 s")
    faults.fail_next(1, status=500)
    with pytest.raises(ServerError):
        client.list_activity(limit=1)


def test_lone_data_envelopes_are_removed_and_bare_bodies_kept():
    assert _unwrap({"data": {"_id": "a"}}) == {"_id": "a"}
    assert _unwrap({"data": [1, 2]}) == [1, 2]
    assert _unwrap({"_id": "a", "data": {"x": 1}}) == {"_id": "a", "data": {"x": 1}}
    assert _unwrap({"data": [], "hasMore": False}) == {"data": [], "hasMore": False}
    assert _unwrap([1]) == [1]


# -- exact reads under faults and live traffic -------------------------------------------------


def test_a_read_under_errors_and_throttling_returns_exactly_the_same_records(
    sandbox, faults, pinned
):
    before, rows = pinned
    waits = Waits()
    client = Client.from_sandbox(
        sandbox, progress=False, sleep=waits, rng=random.Random(3), max_retries=16, max_wait=600
    )
    faults.set(error_rate=0.3)
    faults.throttle_next(8, retry_after=1)  # one burst of 429s, shared by the workers
    faulty = client.list_activity(before=before)
    stats = faults.stats
    assert stats["errors"] > 50 and stats["throttled"] == 8
    assert [r["_id"] for r in faulty] == [r["_id"] for r in rows]
    assert faulty == rows
    assert len(waits) == stats["errors"] + stats["throttled"]


def test_a_read_with_dropped_connections_is_complete(sandbox, faults, pinned):
    before, rows = pinned
    client = Client.from_sandbox(sandbox, progress=False, sleep=Waits(), max_retries=10)
    faults.set(drop_rate=0.05)
    dropped = client.list_activity(before=before, limit=5000)
    assert faults.stats["dropped"] > 0
    assert [r["_id"] for r in dropped] == [r["_id"] for r in rows[:5000]]


def test_live_traffic_during_a_read_neither_hides_nor_repeats_records(fresh_sandbox):
    client = Client.from_sandbox(fresh_sandbox, progress=False, workers=4)
    fresh_sandbox.faults.set(latency=0.02)
    fresh_sandbox.start_traffic(rate=50)
    try:
        before = to_iso(client.now())
        first = client.list_activity(before=before, page_size=10)
        second = client.list_activity(before=before, page_size=10)
    finally:
        fresh_sandbox.stop_traffic()
    first_ids = [r["_id"] for r in first]
    assert len(first_ids) == len(set(first_ids))
    assert first_ids == [r["_id"] for r in second]
    assert all(parse_time(r["createdAt"]) <= parse_time(before) for r in first)
    # Both bounds are inclusive: a window ending at the newest record's instant holds it, and
    # the window starting there holds it too (the overlap of the two reads is that record).
    newest = first[0]["createdAt"]
    up_to = client.list_activity(before=newest, limit=5)
    from_there = client.list_activity(after=newest, before=before)
    assert up_to[0]["createdAt"] == newest
    overlap = {r["_id"] for r in up_to} & {r["_id"] for r in from_there}
    assert first[0]["_id"] in overlap
    assert all(r["createdAt"] == newest for r in up_to + from_there if r["_id"] in overlap)


def test_the_default_window_is_pinned_so_live_traffic_does_not_shift_pages(fresh_sandbox):
    client = Client.from_sandbox(fresh_sandbox, progress=False, workers=4)
    fresh_sandbox.faults.set(latency=0.02)
    seeded = len(client.list_activity())
    fresh_sandbox.start_traffic(rate=50)
    try:
        rows = client.list_activity(page_size=5)
    finally:
        fresh_sandbox.stop_traffic()
    counts = Counter(r["_id"] for r in rows)
    assert max(counts.values()) == 1 and len(rows) >= seeded
    created = [r["createdAt"] for r in rows]
    assert created == sorted(created, reverse=True)


def test_a_short_result_is_not_over_fetched(client, faults, pinned):
    before, rows = pinned
    window = dict(after=rows[14]["createdAt"], before=rows[0]["createdAt"])
    expected = [r["_id"] for r in rows if window["after"] <= r["createdAt"] <= window["before"]]
    assert 10 < len(expected) < 20  # two pages of 10
    requests = faults.stats["requests"]
    got = client.list_activity(**window, page_size=10, workers=16)
    assert [r["_id"] for r in got] == expected
    assert faults.stats["requests"] - requests == 2


def test_a_progress_bar_shows_only_for_reads_of_more_than_one_page(sandbox, capsys):
    client = Client.from_sandbox(sandbox)  # progress on, as in a notebook
    client.list_activity(limit=50)
    assert capsys.readouterr().err == ""
    client.list_activity(limit=120, page_size=20)
    assert "activity" in capsys.readouterr().err
    client.list_activity(limit=120, page_size=20, progress=False)
    assert capsys.readouterr().err == ""


def test_a_progress_bar_in_a_log_is_not_redrawn_many_times_a_second(sandbox, faults, capsys):
    faults.set(latency=0.02)
    client = Client.from_sandbox(sandbox, workers=1)  # progress on; stderr is not a terminal
    client.list_activity(limit=600, page_size=10)
    drawn = capsys.readouterr().err
    assert "activity" in drawn
    assert drawn.count("\r") <= 3  # first draw, last draw (60 pages took over a second)


def test_time_slices_cut_a_window_newest_first_sharing_their_edges():
    from datetime import datetime

    from toolkit.pagination import time_slices

    start, end = (
        datetime(2026, 1, 1, tzinfo=UTC),
        datetime(2026, 1, 4, tzinfo=UTC),
    )
    slices = time_slices(start, end, 3)
    assert slices[0][1] == end and slices[-1][0] == start
    assert all(newer[0] == older[1] for newer, older in zip(slices, slices[1:], strict=False))
    assert [high - low for low, high in slices] == [(end - start) / 3] * 3


def test_a_window_is_read_as_slices_that_never_page_deep(sandbox, faults, pinned, monkeypatch):
    from urllib.parse import parse_qs, urlsplit

    before, rows = pinned
    after = rows[700]["createdAt"]
    expected = [r["_id"] for r in rows if after <= r["createdAt"] <= before]
    monkeypatch.setattr("toolkit.client.SLICE_PAGES", 3)  # at most 30 records a slice
    client = Client.from_sandbox(sandbox, progress=False, sleep=Waits())
    pages = []
    client.transport.session.hooks["response"].append(
        lambda response, **_: pages.append(int(parse_qs(urlsplit(response.url).query)["page"][0]))
    )
    got = client.list_activity(after=after, before=before, page_size=10)
    assert [r["_id"] for r in got] == expected  # same order, no gap, no repeat at slice edges
    assert max(pages) <= 2 and len(pages) > len(expected) / 10


@pytest.mark.parametrize("pages", [4, 12, 34])  # fewer, about as many, more than expected
def test_a_slice_asks_for_few_pages_past_its_end(pages):
    from toolkit.pagination import ActivityPager

    items = [{"_id": str(n)} for n in range(pages * 50 - 30)]  # the last page is short
    fetch = lambda page, size: {"data": items[page * size : (page + 1) * size]}  # noqa: E731
    pager = ActivityPager(fetch, workers=16, expected=1000)  # 20 pages: 10 at once, then by 5
    assert pager.read() == items
    assert pager.requested <= max(pager.eager + 1, pages + 5)  # page 0 came first, alone


def test_a_sliced_read_is_exact_under_errors(sandbox, faults, pinned):
    before, rows = pinned
    after = rows[1500]["createdAt"]
    expected = [r["_id"] for r in rows if after <= r["createdAt"] <= before]
    # the waits are recorded, not slept: 20 retries in an hour keep a run of 503s (0.3**7 a
    # request, ~300 requests) from giving up, which is not what this test is about
    client = Client.from_sandbox(
        sandbox, progress=False, sleep=Waits(), max_retries=20, max_wait=3600
    )
    faults.set(error_rate=0.3)
    got = client.list_activity(after=after, before=before)
    assert faults.stats["errors"] > 0
    assert [r["_id"] for r in got] == expected


def test_the_garbage_collector_is_paused_only_while_a_whole_read_runs(sandbox, faults):
    import gc

    client = Client.from_sandbox(sandbox, progress=False, sleep=Waits(), max_retries=0)
    paused = []
    client.transport.session.hooks["response"].append(
        lambda response, **_: paused.append(not gc.isenabled())
    )
    assert client.list_activity(limit=120, page_size=20) and all(paused) and gc.isenabled()
    started = client.iter_activity(limit=120, page_size=20)
    next(started)  # a caller's own iteration leaves the collector alone
    assert gc.isenabled()
    started.close()
    faults.fail_next(1, status=503)
    with pytest.raises(ServerError):
        toolkit.read_activity(client, limit=120)
    assert gc.isenabled()
