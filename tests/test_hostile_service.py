"""A broken or hostile service (issue 21): stub services on 127.0.0.1 answer what a real one
must not, and the client fails clearly, in bounded time, without losing data or secrets."""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import threading
import time
import zlib
from datetime import UTC, datetime

import pandas as pd
import pytest

from tests.conftest import wait_for
from tests.stub_service import Stub, page, record, send
from toolkit._http import Transport
from toolkit.client import Client
from toolkit.errors import (
    PaginationError,
    RedirectError,
    ResponseError,
    ServiceConnectionError,
    ServiceError,
    ValidationError,
)

KEY = "k" * 32


@pytest.fixture
def stubs():
    made = []

    def make(answer):
        made.append(Stub(answer))
        return made[-1]

    yield make
    for stub in made:
        stub.close()


class FakeTime:
    """A clock that moves only when the test advances it, with the transport's ``call_later``
    on it: an action is called (by the advancing thread) once the clock reaches its time;
    ``called`` keeps those times."""

    def __init__(self):
        self.now, self.called, self.scheduled, self.pending = 0.0, [], 0, {}
        self._ids = itertools.count()
        self._changed = threading.Condition()

    def clock(self):
        return self.now

    def call_later(self, seconds, action):
        with self._changed:
            key = next(self._ids)
            self.pending[key] = (self.now + seconds, action)
            self.scheduled += 1
            self._changed.notify_all()
        self.advance(0)
        return lambda: self._cancel(key)

    def _cancel(self, key):
        with self._changed:
            self.pending.pop(key, None)
            self._changed.notify_all()

    def wait(self, condition):
        """Wait until ``condition()`` holds (a condition, not a time; failing after a minute)."""
        with self._changed:
            assert self._changed.wait_for(condition, timeout=60), "timed out waiting"

    def advance(self, seconds):
        with self._changed:
            self.now += seconds
            due = [key for key, (at, _) in self.pending.items() if at <= self.now]
            actions = [self.pending.pop(key)[1] for key in due]
            self.called += [self.now] * len(actions)
        for action in actions:
            action()

    def headers_read(self):
        """Whether the client has read a response's headers (its cut armed, then cancelled)."""
        return self.scheduled and not self.pending


def transport_of(stub, fake, timeout):
    """A transport of ``stub`` whose deadline is on ``fake``'s clock."""
    return Transport(stub.url, KEY, timeout=timeout, max_retries=0, clock=fake.clock,
                     call_later=fake.call_later)  # fmt: skip


def client_of(stub, **options):
    options = {"max_retries": 0, "progress": False, **options}
    return Client(stub.url, KEY, **options)


# -- never report success on nothing -----------------------------------------------------------

NOT_PAGES = {
    "maintenance message": {"message": "Service under maintenance"},
    "list of scalars": [1, 2, 3],
    "jobs as an object": page([{**record(1), "jobs": {"a": 1}}]),
    "_id as a list": page([{**record(1), "_id": ["x"]}]),
    "createdAt not a time": page([{**record(1), "createdAt": "yesterday"}]),
    "data not a list": {"data": {"x": 1}, "hasMore": False},
}


@pytest.mark.parametrize("body", NOT_PAGES.values(), ids=NOT_PAGES)
def test_a_200_that_is_not_a_page_is_the_services_error_not_an_empty_read(stubs, body):
    stub = stubs(lambda request, handler: send(handler, 200, body))
    with pytest.raises(ResponseError, match="not a page") as caught:
        client_of(stub).list_activity(before="2026-11-01T12:00:00Z")
    assert caught.value.path == "/v1/notifications" and caught.value.status == 200


def test_a_cursor_list_that_is_not_a_page_is_an_error(stubs):
    stub = stubs(lambda request, handler: send(handler, 200, {"message": "down for upgrade"}))
    with pytest.raises(ResponseError, match="down for upgrade"):
        list(client_of(stub).search_subscribers(email="@x"))


def test_a_window_read_with_bad_created_at_is_the_services_error(stubs):
    # full pages (the slice read asks for more): the oldest createdAt is not a time
    def answer(request, handler):
        records = [{**record(n), "createdAt": "not-a-time"} for n in range(50)]
        send(handler, 200, page(records, has_more=True))

    stub = stubs(answer)
    with pytest.raises(ResponseError, match="createdAt"):
        client_of(stub).list_activity(after="2026-11-01T00:00:00Z", before="2026-11-01T12:00:00Z")


# -- bounded ------------------------------------------------------------------------------------


def trickle(handler, data, fake, step=0.25):
    """Send ``data`` a byte at a time, ``fake``'s clock moving ``step`` s before each byte:
    each socket read is quick, the whole is not."""
    for byte in data:
        fake.advance(step)
        handler.wfile.write(bytes([byte]))
        handler.wfile.flush()


def test_a_trickling_response_ends_at_the_timeout(stubs):
    body = json.dumps(page([])).encode() + b" " * 200  # 57 s of the test's clock
    fake = FakeTime()

    def answer(request, handler):
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        fake.wait(fake.headers_read)
        trickle(handler, body, fake)

    stub = stubs(answer)
    with pytest.raises(ServiceConnectionError, match="took more than 5 s"):
        transport_of(stub, fake, timeout=5).request("GET", "/v1/notifications")


@pytest.fixture(scope="module")
def bomb():
    """Valid JSON of 256 MiB (mostly spaces), gzip-compressed to about 260 KB."""
    squeeze = zlib.compressobj(9, zlib.DEFLATED, 31)
    parts = [squeeze.compress(b'{"data": [], "hasMore": false')]
    chunk = b" " * 2**20
    parts += [squeeze.compress(chunk) for _ in range(256)]
    parts += [squeeze.compress(b"}"), squeeze.flush()]
    data = b"".join(parts)
    assert len(data) < 300_000 and zlib.decompressobj(31).decompress(data, 7) == b'{"data"'
    return data


def test_a_decompression_bomb_is_refused_not_read(stubs, bomb):
    stub = stubs(lambda request, h: send(h, 200, bomb, {"Content-Encoding": "gzip"}))
    with pytest.raises(ServiceError, match="larger than 64 MiB once decompressed"):
        client_of(stub).transport.request("GET", "/v1/notifications")


def test_activity_pages_that_cycle_stop_at_the_first_repeat(stubs):
    pages = {0: [record(1), record(2)], 1: [record(3), record(4)]}

    def answer(request, handler):  # A, B, A, B, ... always full, always hasMore
        if len(stub.requests) > 200:  # (before the fix: ends the endless read)
            return send(handler, 200, page([]))
        number = int(request.query["page"][0])
        send(handler, 200, page(pages[number % 2], has_more=True, number=number))

    stub = stubs(answer)
    with pytest.raises(PaginationError, match="earlier pages"):
        client_of(stub, workers=2).list_activity(page_size=2, before="2026-11-01T12:00:00Z")
    assert len(stub.requests) < 40


def test_cursors_that_return_items_already_seen_stop(stubs):
    cursors = itertools.count()

    def answer(request, handler):  # a new cursor each time, the same two items
        if len(stub.requests) > 200:
            return send(handler, 200, {"data": [], "next": None})
        items = [{"_id": "a" * 24, "subscriberId": "a"}, {"_id": "b" * 24, "subscriberId": "b"}]
        send(handler, 200, {"data": items, "next": f"c{next(cursors)}", "totalCount": 2})

    stub = stubs(answer)
    with pytest.raises(PaginationError, match="already read"):
        list(client_of(stub).search_subscribers(email="@x"))
    assert len(stub.requests) == 2


def limited(window: str, limit: str = "1", remaining: str = "0"):
    def answer(request, handler):
        headers = {
            "RateLimit-Limit": limit,
            "RateLimit-Remaining": remaining,
            "RateLimit-Policy": f"{limit};w={window}",
        }
        send(handler, 200, page([]), headers)

    return answer


def test_pacing_by_rate_limit_headers_respects_max_wait(stubs, waits):
    stub = stubs(limited("3600"))  # one request an hour
    client = client_of(stub, sleep=waits, max_wait=2)
    for _ in range(3):
        client.transport.request("GET", "/v1/notifications")
    assert waits and max(waits) <= 2


@pytest.mark.parametrize(
    "headers",
    [("5", "1e-300", "0"), ("-5", "10", "0"), ("5", "1e400", "1"), ("nan", "10", "3")],
    ids=["tiny limit", "negative window", "huge limit", "nan window"],
)
def test_garbage_rate_limit_headers_are_ignored_with_a_warning(stubs, waits, caplog, headers):
    stub = stubs(limited(*headers))
    client = client_of(stub, sleep=waits)
    with caplog.at_level(logging.WARNING, "toolkit.http"):
        for _ in range(3):
            client.transport.request("GET", "/v1/notifications")
    assert not waits  # no pacing by garbage, and no OverflowError
    assert "ignoring RateLimit headers" in caplog.text


@pytest.mark.parametrize(
    "body",
    [
        {"message": "x" * 100_000, "statusCode": 500},
        "<html>" + "y" * 100_000,
        {"message": ["z" * 50_000] * 3},
    ],  # fmt: skip
    ids=["json message", "html page", "message list"],
)
def test_an_error_quotes_a_bounded_part_of_the_body(stubs, body):
    status = 400 if isinstance(body, dict) and isinstance(body["message"], list) else 500
    stub = stubs(lambda request, handler: send(handler, status, body if not isinstance(body, str) else body.encode()))  # fmt: skip
    with pytest.raises(ServiceError) as caught:
        client_of(stub).transport.request("GET", "/v1/notifications")
    assert len(str(caught.value)) < 500


# -- redirects on writes ------------------------------------------------------------------------


@pytest.mark.parametrize("status", [301, 302, 303])
def test_a_write_redirected_with_a_method_change_fails_naming_the_location(stubs, status):
    def answer(request, handler):
        if request.path == "/v2/subscribers/s1":
            return send(handler, status, {}, {"Location": "/v2/subscribers/moved"})
        send(handler, 200, {"data": {"subscriberId": "s1"}})

    stub = stubs(answer)
    with pytest.raises(RedirectError, match="/v2/subscribers/moved") as caught:
        client_of(stub).update_subscriber("s1", first_name="Ada")
    assert caught.value.status == status
    assert [r.method for r in stub.requests] == ["PATCH"]  # nothing re-sent


def test_a_write_is_never_sent_to_another_host(stubs):
    other = stubs(lambda request, handler: send(handler, 200, {"data": {}}))
    moved = other.url.replace("127.0.0.1", "localhost") + "/v1/subscribers/s1/credentials"
    stub = stubs(lambda request, handler: send(handler, 307, {}, {"Location": moved}))
    secret = "https://hooks.slack.com/services/T0/B0/SECRETSECRET"
    with pytest.raises(RedirectError, match="another host") as caught:
        client_of(stub).upsert_credentials("s1", "slack", {"webhookUrl": secret})
    assert other.requests == [] and "localhost" in str(caught.value)


@pytest.mark.parametrize("status", [307, 308])
def test_a_same_host_307_or_308_is_followed_with_method_and_body(stubs, status):
    def answer(request, handler):
        if request.path == "/v2/subscribers/s1":
            return send(handler, status, {}, {"Location": "/v2/subscribers/s1b"})
        send(handler, 200, {"data": {"subscriberId": "s1", "firstName": request.json()["firstName"]}})  # fmt: skip

    stub = stubs(answer)
    result = client_of(stub).update_subscriber("s1", first_name="Ada")
    assert result == {"subscriberId": "s1", "firstName": "Ada"}
    second = stub.requests[1]
    assert (second.method, second.path, second.json()) == ("PATCH", "/v2/subscribers/s1b", {"firstName": "Ada"})  # fmt: skip
    assert second.headers["Idempotency-Key"] == stub.requests[0].headers["Idempotency-Key"]


# -- secrets ------------------------------------------------------------------------------------


def test_an_error_body_echoing_sent_credentials_is_masked(stubs):
    secret = "https://hooks.slack.com/services/T000/B000/XSECRETX"

    def answer(request, handler):
        sent = request.json()["credentials"]["webhookUrl"]
        send(handler, 422, {
            "statusCode": 422,
            "message": f"Validation failed for {sent}",
            "errors": {"credentials.webhookUrl": {"messages": [f"bad url {sent}"], "value": sent},
                       "note": f"path {sent.split('.com', 1)[1]} refused"},
        })  # fmt: skip

    stub = stubs(answer)
    with pytest.raises(ValidationError) as caught:
        client_of(stub).upsert_credentials("s1", "slack", {"webhookUrl": secret})
    error = caught.value
    shown = " ".join([str(error), repr(error.body), repr(error.field_errors), repr(error.args)])
    assert "XSECRETX" not in shown and "Validation failed" in shown


def test_a_base_url_password_is_masked_everywhere(stubs, tmp_path, caplog):
    import toolkit

    stub = stubs(lambda request, handler: send(handler, 200, page([])))
    url = stub.url.replace("http://", "http://ada:hunter2secret@")
    client = Client(url, KEY, max_retries=0, progress=False)
    with caplog.at_level(logging.DEBUG):
        activity = toolkit.read_activity(client, after="1h")
        toolkit.sync(client, tmp_path / "store", since="2h", progress=False)
    state = (tmp_path / "store" / "state.json").read_text()
    seen = [repr(client), client.base_url, repr(client.transport), str(activity.notifications.attrs),
            state, caplog.text]  # fmt: skip
    assert all("hunter2secret" not in text for text in seen)
    assert "127.0.0.1" in client.base_url
    # a store written before base URLs were masked: masked at its next sync, same source
    old = json.loads(state)
    (tmp_path / "store" / "state.json").write_text(json.dumps({**old, "base_url": url}))
    toolkit.sync(client, tmp_path / "store", since="2h", progress=False)
    assert "hunter2secret" not in (tmp_path / "store" / "state.json").read_text()


@pytest.mark.parametrize(
    "url", ["ftp://ada:hunter2secret@h/", "http://ada:hunter2secret@h:0", "ada:hunter2secret@h"]
)
def test_a_refused_base_url_is_shown_without_its_password(url):
    from toolkit.client import connect
    from toolkit.errors import ToolkitError

    with pytest.raises(ToolkitError) as caught:
        connect(url, KEY)
    assert "hunter2secret" not in str(caught.value) and "h" in str(caught.value)


# -- the service's clock ------------------------------------------------------------------------


def test_sync_never_moves_the_watermark_past_the_services_now(stubs, tmp_path):
    import toolkit
    from toolkit.timeutil import parse_time

    behind = time.time() - 3600  # the service's clock is an hour behind ours

    def answer(request, handler):
        date = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(behind))
        handler.date_time_string = lambda *args: date  # the Date header it sends
        send(handler, 200, page([]))

    stub = stubs(answer)
    client = client_of(stub)
    toolkit.sync(client, tmp_path / "store", since="3h", progress=False)
    state = json.loads((tmp_path / "store" / "state.json").read_text())
    assert parse_time(state["watermark"]).timestamp() <= behind + 1


# -- the service's vocabulary -------------------------------------------------------------------


@pytest.mark.parametrize("provider", ["novu-slack", "svc-slack", "slack", "appio"])
def test_provider_ids_are_sent_as_given_unknown_ones_with_a_warning(stubs, provider, recwarn):
    stub = stubs(lambda request, handler: send(handler, 200, {"data": {"subscriberId": "s1"}}))
    client_of(stub).upsert_credentials("s1", provider, {"deviceTokens": ["t1"]})
    assert stub.requests[0].json()["providerId"] == provider
    warned = [str(w.message) for w in recwarn if "provider" in str(w.message)]
    assert bool(warned) == (provider == "appio")


def test_channels_sends_only_channel_types_and_filters_step_types_after(stubs):
    records = [
        {**record(1), "channels": ["email", "digest"]},
        {**record(2), "channels": ["sms"]},
        {**record(3), "channels": ["delay", "push"]},
    ]
    stub = stubs(lambda request, handler: send(handler, 200, page(records)))
    client = client_of(stub)
    got = client.list_activity(channels=["digest", "push"], before="2026-11-01T12:00:00Z")
    assert [r["transactionId"] for r in got] == ["t1", "t3"]
    assert "channels" not in stub.requests[-1].query
    client.list_activity(channels=["email", "sms"], before="2026-11-01T12:00:00Z")
    assert stub.requests[-1].query["channels"] == ["email", "sms"]


# -- the Monitor's webhook ----------------------------------------------------------------------

ALERT = {
    "at": datetime(2026, 11, 1, 12, tzinfo=UTC),
    "state": "firing",
    "summary": "sms failing",
    "kind": "k",
}


def deliver(url, **options):
    from toolkit.alerts import Webhook

    errors = []
    hook = Webhook(url, retries=0, on_error=errors.append, **options)
    hook.send(ALERT)
    assert hook.close(timeout=30)
    return hook, errors


def test_a_webhook_redirect_not_followed_with_its_body_is_not_delivered(stubs):
    def answer(request, handler):
        if request.path == "/hooks/T0/SECRET":
            return send(handler, 301, {}, {"Location": "/moved"})
        send(handler, 200, {"ok": True})  # a GET here would look delivered

    stub = stubs(answer)
    hook, errors = deliver(stub.url + "/hooks/T0/SECRET")
    assert (hook.sent, hook.failed) == (0, 1)
    assert "HTTP 301" in errors[0] and "SECRET" not in errors[0] and "moved" not in errors[0]
    assert [r.method for r in stub.requests] == ["POST"]


def test_a_webhook_307_to_the_same_host_is_followed_with_its_body(stubs):
    def answer(request, handler):
        if request.path == "/hooks/T0/SECRET":
            return send(handler, 307, {}, {"Location": "/hooks/T0/SECRET2"})
        send(handler, 200, {"ok": True})

    stub = stubs(answer)
    hook, errors = deliver(stub.url + "/hooks/T0/SECRET")
    assert (hook.sent, hook.failed, errors) == (1, 0, [])
    assert stub.requests[1].method == "POST" and stub.requests[1].json()["text"] == "FIRING: sms failing"  # fmt: skip


def test_a_trickling_webhook_is_not_delivered_past_its_timeout(stubs):
    fake = FakeTime()

    def answer(request, handler):  # 25 s of the test's clock
        handler.send_response(200)
        handler.send_header("Content-Length", "100")
        handler.end_headers()
        fake.wait(fake.headers_read)
        trickle(handler, b" " * 100, fake)

    stub = stubs(answer)
    hook, errors = deliver(stub.url + "/hook", timeout=5, clock=fake.clock, call_later=fake.call_later)  # fmt: skip
    assert (hook.sent, hook.failed) == (0, 1) and "Timeout" in errors[0]


@pytest.fixture
def stalled(stubs):
    """A stub that sends its headers and a byte of its body, then nothing until the test ends:
    a POST to it stays under way."""
    released = threading.Event()

    def answer(request, handler):
        handler.send_response(200)
        handler.send_header("Content-Length", "2")
        handler.end_headers()
        handler.wfile.write(b" ")
        handler.wfile.flush()
        released.wait(120)
        handler.wfile.write(b" ")

    yield stubs(answer)
    released.set()


def test_close_returns_within_its_bound_with_a_stalled_webhook_and_start_after_close_works(stubs, stalled):  # fmt: skip
    from toolkit.alerts import Webhook

    slow = stalled
    hook = Webhook(slow.url + "/hook", retries=0, timeout=60)
    hook.send(ALERT)
    hook.send(ALERT)
    wait_for(lambda: slow.requests)  # the first POST is under way, stalled
    assert hook.close(timeout=0) is False  # given up, not waited for
    fast = stubs(lambda request, handler: send(handler, 200, {"ok": True}))
    hook._url = fast.url + "/hook"  # the same Webhook, used again after close
    hook.send(ALERT)
    assert hook.close(timeout=30) and len(fast.requests) == 1


def test_urllib3_debug_logs_do_not_show_the_webhook_path(stubs, caplog):
    stub = stubs(lambda request, handler: send(handler, 200, {"ok": True}))
    with caplog.at_level(logging.DEBUG):
        hook, _ = deliver(stub.url + "/services/T000/B000/XSECRETPATHX")
    assert hook.sent == 1 and "XSECRETPATHX" not in caplog.text
    assert "POST" in caplog.text  # urllib3's request line is there, masked


def test_numeric_fields_of_odd_types_give_a_typed_frame_with_a_warning(stubs):
    import toolkit

    versions = [2, "3", 4.0, 1.5, "abc", [1], 2**70, None]
    items = [{"_id": f"{n:024x}", "subscriberId": f"s{n}", "__v": v} for n, v in enumerate(versions)]  # fmt: skip

    def answer(request, handler):  # the feed (asked for the environment) holds nothing
        feed = request.path.endswith("/notifications")
        page = {"data": [], "hasMore": False, "page": 0, "pageSize": 1} if feed else {"data": items, "next": None}  # fmt: skip
        send(handler, 200, page)

    stub = stubs(answer)
    with pytest.warns(UserWarning, match="version: 4 value"):
        frame = toolkit.read_subscribers(client_of(stub), email="@x")
    assert str(frame["version"].dtype) == "Int64"
    assert frame["version"].tolist() == [2, 3, 4, *[pd.NA] * 5]


WRITES = {
    "update_subscriber": lambda c: c.update_subscriber("s1", first_name="Ada"),
    "upsert_credentials": lambda c: c.upsert_credentials(
        "s1", "slack", {"webhookUrl": "https://x.example/h"}
    ),  # fmt: skip
    "create_integration": lambda c: c.create_integration("sendgrid", "email"),
    "delete_integration": lambda c: c.delete_integration("i1"),
}


@pytest.mark.parametrize("write", WRITES.values(), ids=WRITES)
@pytest.mark.parametrize("body", [{"message": "Service under maintenance"}, None, [1]], ids=["message", "empty", "scalars"])  # fmt: skip
def test_a_write_answered_with_something_else_is_not_reported_done(stubs, write, body):
    stub = stubs(lambda request, handler: send(handler, 200, b"" if body is None else body))
    with pytest.raises(ResponseError, match="the answer is"):
        write(client_of(stub))


def test_monitor_close_is_bounded_and_start_after_close_polls_and_delivers_again(stubs, stalled, sandbox):  # fmt: skip
    import queue

    from toolkit.client import connect
    from toolkit.monitor import Monitor

    polls = queue.Queue()

    def sleep(seconds):  # each background poll reports here, then waits to be stopped
        polls.put(seconds)
        monitor._stopping.wait()

    slow = stalled
    client = connect(sandbox=sandbox, progress=False)
    monitor = Monitor(client, charts=[], since="10m", sleep=sleep, webhook_url=slow.url + "/hook")
    monitor._alerts.webhook.timeout = 60
    monitor._alerts.webhook.send(ALERT)
    wait_for(lambda: slow.requests)  # the POST is under way, stalled
    assert monitor.close(timeout=0) is False  # returned, the stalled POST given up
    fast = stubs(lambda request, handler: send(handler, 200, {"ok": True}))
    monitor._alerts.webhook._url = fast.url + "/hook"
    monitor.start()
    polls.get(timeout=60)
    monitor._alerts.webhook.send(ALERT)
    assert monitor.close(timeout=30) and monitor.polls >= 1 and len(fast.requests) == 1


def test_a_service_trickling_its_status_line_and_headers_ends_at_the_timeout(stubs):
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + b"X-Pad: 1\r\n" * 40
    fake = FakeTime()

    def answer(request, handler):  # 112 s of the test's clock, never ending the headers
        fake.wait(lambda: fake.pending)  # the client waits for the status line
        with contextlib.suppress(OSError):  # the client has hung up
            trickle(handler, head, fake)

    stub = stubs(answer)
    with pytest.raises(ServiceConnectionError, match="took more than 5 s"):
        transport_of(stub, fake, timeout=5).request("GET", "/v1/notifications")
    assert fake.called == [5.0]  # the connection was cut at the deadline, while reading headers
