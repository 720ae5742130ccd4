"""The transport over real HTTP: retries, waits, the max_wait cap, idempotency keys, pacing, logs.

Faults are injected by the sandbox itself; waits go through an injected ``sleep`` that records
them instead of waiting (in the pacing test, it also moves the clock of the sandbox's rate
limiter and of the client's pacer).
"""

from __future__ import annotations

import logging
import random
import socket
import threading
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from toolkit._http import Pacer, Transport, category_of
from toolkit.client import Client
from toolkit.errors import (
    NotFoundError,
    RateLimitError,
    ServerError,
    ServiceConnectionError,
    ValidationError,
    parse_retry_after,
)
from toolkit.redact import MASK


def transport(sandbox, waits, **options):
    options = {"sleep": waits, "rng": random.Random(1), **options}
    return Transport(sandbox.url, sandbox.api_key, **options)


def page(http: Transport, **params):
    return http.request("GET", "/v1/notifications", params={"limit": 5, **params})


def test_plain_get_sends_the_key_and_decodes_json(sandbox, faults, waits):
    body = page(transport(sandbox, waits))
    assert set(body) >= {"data", "hasMore", "page", "pageSize"}
    assert len(body["data"]) == 5
    assert waits == [] and faults.stats["requests"] == 1


def test_server_errors_are_retried_with_jittered_exponential_backoff(sandbox, faults, waits):
    faults.fail_next(3, status=503)
    body = page(transport(sandbox, waits, backoff=0.5))
    assert len(body["data"]) == 5
    assert faults.stats["requests"] == 4
    assert len(waits) == 3
    assert all(0 <= wait <= 0.5 * 2**n for n, wait in enumerate(waits))


@pytest.mark.parametrize("status", [408, 429, 502, 504])
def test_each_transient_status_is_retried(sandbox, faults, waits, status):
    faults.fail_next(1, status=status)
    assert page(transport(sandbox, waits))["data"]
    assert faults.stats["requests"] == 2 and len(waits) == 1


def test_retry_after_is_honoured(sandbox, faults, waits):
    faults.throttle_next(2, retry_after=3)
    assert page(transport(sandbox, waits))["data"]
    assert len(waits) == 2
    assert all(3 <= wait <= 3.3 for wait in waits)


def test_dropped_connections_are_retried(sandbox, faults, waits):
    faults.drop_next(2)
    assert page(transport(sandbox, waits))["data"]
    assert faults.stats["dropped"] == 2 and len(waits) == 2


def test_a_refused_connection_fails_at_once_without_retrying(waits):
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    http = Transport(f"http://127.0.0.1:{port}", "k" * 32, sleep=waits, max_retries=2)
    with pytest.raises(ServiceConnectionError) as caught:
        http.request("GET", "/v1/notifications")
    assert caught.value.attempts == 1 and waits == []
    assert "connection refused: not retried" in str(caught.value)
    assert isinstance(caught.value, ConnectionError)


def test_a_long_wait_is_logged_as_a_warning_saying_the_client_retries(
    sandbox, faults, waits, caplog
):
    http = transport(sandbox, waits)
    for retry_after, level in [(1, logging.INFO), (12, logging.WARNING)]:
        caplog.clear()
        faults.throttle_next(1, retry_after=retry_after)
        with caplog.at_level(logging.INFO, logger="toolkit.http"):
            page(http)
        retries = [r for r in caplog.records if "retrying in" in r.getMessage()]
        assert [r.levelno for r in retries] == [level]
        assert "(attempt 1 of 11" in retries[0].getMessage()


def test_errors_that_retrying_cannot_fix_are_raised_at_once(sandbox, faults, waits):
    http = transport(sandbox, waits)
    with pytest.raises(ValidationError) as caught:
        http.request("GET", "/v1/notifications", params={"limit": 51})
    assert caught.value.status == 422 and list(caught.value.field_errors) == ["limit"]
    with pytest.raises(ValidationError) as caught:
        http.request("GET", "/v1/notifications", params={"after": "soon"})
    assert caught.value.status == 400 and list(caught.value.field_errors) == ["after"]
    with pytest.raises(NotFoundError):
        http.request("GET", "/v2/subscribers/nobody-here/subscriptions")
    faults.fail_next(1, status=500)
    with pytest.raises(ServerError):
        page(http)
    assert waits == [] and faults.stats["requests"] == 4


def test_max_retries_caps_the_attempts(sandbox, faults, waits):
    faults.fail_next(10, status=503)
    with pytest.raises(ServerError) as caught:
        page(transport(sandbox, waits, max_retries=2))
    err = caught.value
    assert err.status == 503 and err.attempts == 3 and faults.stats["requests"] == 3
    assert "gave up after 3 attempts" in str(err) and "\n" not in str(err)


def test_max_wait_caps_the_waiting_and_says_so(sandbox, faults, waits):
    faults.throttle_next(10, retry_after=25)
    with pytest.raises(RateLimitError) as caught:
        page(transport(sandbox, waits, max_wait=60))
    err = caught.value
    assert len(waits) == 2 and sum(waits) <= 60
    assert err.retry_after == 25 and err.attempts == 3
    assert "max_wait=60 s" in str(err) and "gave up after 3 attempts" in str(err)


def test_a_write_keeps_one_idempotency_key_across_its_retries(fresh_sandbox, waits):
    client = Client.from_sandbox(fresh_sandbox, sleep=waits, progress=False)
    sent = []
    client.transport.session.hooks["response"].append(
        lambda response, **_: sent.append(
            (response.request.method, response.request.headers.get("Idempotency-Key"))
        )
    )
    before = _integrations(fresh_sandbox)
    fresh_sandbox.faults.fail_next(1, status=503)
    fresh_sandbox.faults.drop_next(1)  # the drop comes first, then the 503, then success
    created = client.create_integration("sendgrid", "email", name="Retried")
    keys = [key for method, key in sent if method == "POST"]
    assert len(keys) == 2 and len(waits) == 2  # the dropped attempt has no response to hook
    assert keys[0] == keys[1] and len(keys[0]) == 36
    assert created["name"] == "Retried"
    assert _integrations(fresh_sandbox) == before + 1
    list(client.search_subscribers(limit=1))
    client.delete_integration(created["_id"])
    assert [key for method, key in sent if method in ("GET", "DELETE")] == [None, None]


def test_the_same_idempotency_key_twice_creates_one_integration(fresh_sandbox, waits):
    client = Client.from_sandbox(fresh_sandbox, sleep=waits, progress=False)
    replays = []
    client.transport.session.hooks["response"].append(
        lambda response, **_: replays.append(response.headers.get("Idempotency-Replay"))
    )
    before = _integrations(fresh_sandbox)
    first = client.create_integration("slack", "chat", idempotency_key="create-slack-1")
    again = client.create_integration("slack", "chat", idempotency_key="create-slack-1")
    assert again == first
    assert replays == [None, "true"]
    assert _integrations(fresh_sandbox) == before + 1


class SharedTime:
    """Seconds that pass only when a thread sleeps, shared by concurrent threads: a sleep ends
    at the sleeping thread's last reading of the clock plus the wait, and the clock moves there
    unless another thread's sleep took it further (sleeps that overlap in real time overlap
    here too: they do not add up)."""

    def __init__(self):
        self.now, self.slept = 0.0, []
        self._lock = threading.Lock()
        self._read = threading.local()

    def clock(self):
        with self._lock:
            self._read.at = self.now
            return self.now

    def sleep(self, seconds):
        with self._lock:
            self.slept.append(seconds)
            self.now = max(self.now, getattr(self._read, "at", self.now) + seconds)


def test_pacing_keeps_a_concurrent_read_under_the_rate_limit(sandbox, faults, monkeypatch):
    # A bucket of 20 tokens refilling at 20/s: 100 pages need 4 s of refill, and the pacer
    # spreads them over it. The sandbox's bucket and the client's pacer read the test's clock,
    # which moves only when the client waits.
    shared = SharedTime()
    faults.rate_limit(global_rps=20, window=1, burst=1)
    monkeypatch.setattr(faults, "timer", shared.clock)
    client = Client.from_sandbox(sandbox, progress=False, workers=8, sleep=shared.sleep)
    client.transport.pacer = Pacer(sleep=shared.sleep, clock=shared.clock)
    rows = client.list_activity(page_size=10, limit=1000)
    assert len(rows) == 1000
    assert faults.stats["rate_limited"] == 0
    assert faults.stats["requests"] == 100
    assert shared.slept and all(wait > 0 for wait in shared.slept)  # it waited, paced, not retried
    assert 4 <= shared.now <= 5  # the refill it needed ((100 - 20) / 20 s), not much more


def test_logs_name_method_path_status_and_never_the_key(sandbox, faults, waits, caplog):
    faults.fail_next(1, status=503)
    with caplog.at_level(logging.DEBUG, logger="toolkit.http"):
        page(transport(sandbox, waits), subscriberIds=["s-1"])
    text = "\n".join(record.getMessage() for record in caplog.records)
    assert "GET /v1/notifications -> 503 (attempt 1" in text
    assert "GET /v1/notifications -> 200 (attempt 2" in text
    assert "retrying in" in text
    assert sandbox.api_key not in text and "s-1" not in text


def test_the_key_is_scrubbed_from_messages_and_paths(fresh_sandbox, waits):
    client = Client.from_sandbox(fresh_sandbox, sleep=waits, progress=False)
    with pytest.raises(NotFoundError) as caught:
        client.update_subscriber(fresh_sandbox.api_key, first_name="X")
    err = caught.value
    assert fresh_sandbox.api_key not in str(err) + err.path + repr(err.body)
    assert MASK in err.path


def _paced() -> tuple[Pacer, list[float]]:
    """A pacer (margin 2) on a test clock that its sleeps advance, and the list of its sleeps."""
    now = [0.0]
    slept: list[float] = []

    def sleep(seconds):
        slept.append(seconds)
        now[0] += seconds

    return Pacer(sleep=sleep, margin=2, clock=lambda: now[0]), slept


def test_pacer_spreads_requests_once_the_bucket_is_empty():
    pacer, slept = _paced()
    assert pacer.wait("global") == 0  # nothing known yet: no pacing
    pacer.observe(
        "global",
        {
            "RateLimit-Limit": "10",
            "RateLimit-Remaining": "3",
            "RateLimit-Policy": "10;w=1;burst=10",
        },
    )
    for _ in range(5):
        pacer.wait("global")
    # 3 tokens, margin 2: one goes at once, the next ones one refill (0.1 s) apart
    assert slept == pytest.approx([0.1, 0.1, 0.1, 0.1])


def test_a_shared_pacer_takes_its_part_of_each_bucket():
    pacer, slept = _paced()
    headers = {"RateLimit-Limit": "10", "RateLimit-Remaining": "3", "RateLimit-Policy": "10;w=1"}
    pacer.observe("global", headers)
    with pacer.shared(2):  # half of the 3 tokens left and of the 10 a second
        pacer.observe("global", headers)
        for _ in range(4):
            pacer.wait("global")
    assert slept == pytest.approx([0.3, 0.2, 0.2, 0.2])  # then one request every 1/5 s
    slept.clear()
    for _ in range(4):  # the whole rate again: what the last wait reserved, then 1/10 s apart
        pacer.wait("global")
    assert slept == pytest.approx([0.1, 0.1])


def test_categories_follow_the_service():
    assert category_of("/v1/notifications") == "global"
    assert category_of("/v1/integrations/abc") == "global"
    assert category_of("/v2/subscribers/x/subscriptions") == "configuration"
    assert category_of("/v1/subscribers/x/credentials") == "configuration"
    assert category_of("/_sandbox/state") is None


def test_retry_after_accepts_seconds_and_http_dates():
    assert parse_retry_after("2") == 2.0
    assert parse_retry_after(None) is None and parse_retry_after("soon") is None
    later = datetime.now(UTC) + timedelta(seconds=30)
    assert 25 < parse_retry_after(format_datetime(later, usegmt=True)) <= 30


def _integrations(sandbox) -> int:
    return sandbox.state()["environments"][0]["counts"]["integrations"]


def test_a_forked_child_opens_its_own_connections():
    """A `Transport` in a forked child (``os.fork``, multiprocessing's fork) lets the parent's
    pooled connections go and reads over its own."""
    import os

    from conftest import NOW

    from toolkit.client import connect
    from toolkit.read import read_activity
    from toolkit.sandbox.process import SandboxProcess

    with SandboxProcess("--now", NOW, "--notifications", "300", "--subscribers", "50") as child:
        client = connect(sandbox=child, progress=False)

        def pooled() -> int:
            pools = client.transport.session.get_adapter(child.url).poolmanager.pools
            keys = pools.keys()  # noqa: SIM118 - a container of pools, not a dict
            return sum(conn is not None for key in keys for conn in list(pools[key].pool.queue))

        expected = len(read_activity(client, after="2h")[0])
        assert pooled() > 0  # this process's connections, to share with no other process
        reader, writer = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: its answer through the pipe, then out without exit handlers
            code = 1
            try:
                os.write(writer, f"{pooled()} {len(read_activity(client, after='2h')[0])}".encode())
                code = 0
            finally:
                os._exit(code)
        os.close(writer)
        with open(reader, "rb") as pipe:
            answer = pipe.read().decode()
        assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
        assert answer == f"0 {expected}"


def test_call_in_thread_calls_due_actions_in_order_on_one_thread_and_not_a_cancelled_one():
    import threading

    from toolkit._http import call_in_thread

    called, done = [], threading.Event()
    cancel = call_in_thread(1.0, lambda: called.append("cancelled"))
    cancel()  # due before the next ones: it would be called before them
    call_in_thread(1.0, lambda: called.append(threading.current_thread()))
    call_in_thread(1.0, lambda: (called.append(threading.current_thread()), done.set()))
    assert done.wait(60)
    assert len(called) == 2 and called[0] is called[1] is not threading.current_thread()
