"""The sandbox server: start/stop, admin routes, fault injection, rate limits, persistence,
live traffic and the CLI, all over real HTTP on 127.0.0.1."""

from __future__ import annotations

import asyncio
import re
import signal
import socket
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests

from tests.conftest import wait_for
from toolkit.sandbox import Faults, start
from toolkit.sandbox.clock import parse_instant

NOW = "2026-11-01T12:00:00Z"
ROOT = Path(__file__).resolve().parents[1]
SMALL = {"now": NOW, "notifications": 300, "subscribers": 50}


@pytest.fixture(scope="module")
def small():
    """A small sandbox of this module's own; its faults are reset around every test."""
    with start(seed=3, **SMALL) as handle:
        yield handle


@pytest.fixture
def faults(small):
    small.faults.reset()
    yield small.faults
    small.faults.reset()


def feed(sandbox, key=None, **params):
    """GET /v1/notifications with the default (or the given) API key."""
    headers = {"Authorization": f"ApiKey {key or sandbox.api_key}"}
    return requests.get(
        f"{sandbox.url}/v1/notifications", params=params, headers=headers, timeout=10
    )


def search(sandbox, key=None, **params):
    """GET /v2/subscribers (a ``configuration`` operation)."""
    headers = {"Authorization": f"ApiKey {key or sandbox.api_key}"}
    return requests.get(f"{sandbox.url}/v2/subscribers", params=params, headers=headers, timeout=10)


def admin(sandbox, route, body=None):
    url = f"{sandbox.url}/_sandbox/{route}"
    if body is None:
        return requests.get(url, timeout=10)
    return requests.post(url, json=body, timeout=10)


# --- start, stop, handle ------------------------------------------------------------------


def test_start_answers_at_once_on_a_free_port_and_stop_is_idempotent():
    sandbox = start(seed=3, **SMALL)
    try:
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+", sandbox.url)
        assert int(sandbox.url.rsplit(":", 1)[1]) > 0
        assert admin(sandbox, "state").status_code == 200
        assert feed(sandbox).status_code == 200
    finally:
        sandbox.stop()
    sandbox.stop()
    with pytest.raises(requests.ConnectionError):
        feed(sandbox)


def test_context_manager_stops_the_server():
    with start(seed=3, **SMALL) as sandbox:
        assert feed(sandbox).status_code == 200
    assert "stopped" in repr(sandbox)
    with pytest.raises(requests.ConnectionError):
        feed(sandbox)


def test_handle_exposes_keys_environments_clock_but_repr_hides_keys(small):
    assert list(small.api_keys) == ["Acme/Development", "Acme/Production", "Globex/Development"]
    assert small.api_key == small.api_keys["Acme/Development"]
    assert [env["api_key"] for env in small.environments] == list(small.api_keys.values())
    assert small.incidents
    assert small.clock.start.isoformat().startswith("2026-11-01T12:00:00")
    assert small.now() >= small.clock.start
    text = repr(small)
    assert small.url in text and "running" in text
    for key in small.api_keys.values():
        assert key not in text
        assert key not in repr(small.faults)


def test_every_key_selects_its_environment_and_unknown_keys_are_refused(small):
    for key in small.api_keys.values():
        assert feed(small, key).status_code == 200
    assert feed(small, "0" * 32).status_code == 401


# --- admin routes ---------------------------------------------------------------------------


def test_state_summarises_without_secrets(small):
    response = admin(small, "state")
    assert response.status_code == 200
    state = response.json()
    assert [env["name"] for env in state["environments"]] == list(small.api_keys)
    assert [env["id"] for env in state["environments"]] == [e["id"] for e in small.environments]
    default = state["environments"][0]["counts"]
    assert default["notifications"] >= 300 and default["subscribers"] >= 50
    assert state["now"].startswith("2026-11-01T12:")
    assert state["faults"]["rate_limit"] == {"enabled": False}
    assert state["traffic"] is None
    for key in small.api_keys.values():
        assert key not in response.text
    assert small.url not in response.text


def test_admin_routes_are_hidden_from_openapi_and_never_faulted(small, faults):
    openapi = requests.get(f"{small.url}/openapi.json", timeout=10).json()
    assert not [path for path in openapi["paths"] if path.startswith("/_sandbox")]
    faults.reset()
    faults.set(error_rate=1.0)
    faults.drop_next(3)
    for _ in range(3):
        assert admin(small, "state").status_code == 200
    assert faults.stats["requests"] == 0


def test_post_faults_sets_and_resets(small, faults):
    response = admin(small, "faults", {"fail_next": {"n": 2, "status": 500}, "latency": 0.01})
    assert response.status_code == 200
    assert response.json()["fail_next"] == {"n": 2, "status": 500}
    assert [feed(small).status_code for _ in range(3)] == [500, 500, 200]
    assert admin(small, "faults", {"reset": True}).json()["latency"] == 0.0
    assert admin(small, "faults", {"rate_limit": True}).json()["rate_limit"]["enabled"]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"latency": -1}, "latency"),
        ({"error_rate": 2}, "error_rate"),
        ({"fail_next": "many"}, "fail_next"),
        ({"throttle_next": {"n": 1, "later": 3}}, "throttle_next"),
        ({"rate_limit": {"global_rps": 0}}, "global_rps"),
        ({"explode": True}, "explode"),
        ([1, 2], "JSON object"),
    ],
)
def test_post_faults_rejects_bad_settings_and_changes_nothing(small, faults, body, message):
    faults.set(latency=0.001)
    response = admin(small, "faults", body)
    assert response.status_code == 422
    assert message in response.json()["message"]
    assert faults.as_dict()["latency"] == 0.001


def test_post_faults_rejects_a_body_that_is_not_json(small, faults):
    response = requests.post(f"{small.url}/_sandbox/faults", data="latency=1", timeout=10)
    assert response.status_code == 422
    assert "JSON object" in response.json()["message"]


# --- faults ---------------------------------------------------------------------------------


@pytest.fixture
def waits(faults):
    """The waits of the fault layer, recorded instead of waited (``faults.sleep`` injected)."""
    recorded = []

    async def sleep(seconds):
        recorded.append(seconds)

    faults.sleep = sleep
    yield recorded
    faults.sleep = asyncio.sleep


def test_latency_delays_each_request(small, faults, waits):
    faults.set(latency=0.3)
    assert feed(small).status_code == 200
    assert waits == [0.3] and faults.stats["delayed"] == 1


def test_concurrent_delayed_requests_wait_together_without_blocking_the_server(small, faults):
    arrived, everyone = [], None

    async def barrier(seconds):  # returns only once all four requests are waiting at once
        nonlocal everyone
        everyone = everyone or asyncio.Event()
        arrived.append(seconds)
        if len(arrived) == 4:
            everyone.set()
        await asyncio.wait_for(everyone.wait(), 20)

    faults.sleep = barrier
    faults.set(latency=0.3)
    try:
        with ThreadPoolExecutor(4) as pool:
            statuses = list(pool.map(lambda _: feed(small).status_code, range(4)))
    finally:
        faults.sleep = asyncio.sleep
    assert statuses == [200] * 4 and arrived == [0.3] * 4


def test_jitter_spreads_latency_within_bounds(small, faults, waits):
    faults.set(latency=0.1, jitter=0.05)
    for _ in range(20):
        feed(small)
    assert len(waits) == 20 and len(set(waits)) > 1
    assert all(0.05 <= wait <= 0.15 for wait in waits)


def test_error_rate_fails_about_that_fraction_with_the_service_error_body(small, faults):
    faults.set(error_rate=0.3, error_status=502)
    responses = [feed(small, limit=1) for _ in range(100)]
    failed = [r for r in responses if r.status_code == 502]
    assert {r.status_code for r in responses} == {200, 502}
    assert 15 <= len(failed) <= 45
    body = failed[0].json()
    assert set(body) == {"statusCode", "timestamp", "path", "message", "error"}
    assert body["statusCode"] == 502 and body["error"] == "Bad Gateway"
    assert body["path"] == "/v1/notifications?limit=1"
    assert body["timestamp"].startswith("2026-11-01T12:")
    assert faults.stats["errors"] == len(failed)


def test_fail_next_fails_exactly_n_requests(small, faults):
    faults.fail_next(3, status=500)
    assert [feed(small).status_code for _ in range(5)] == [500, 500, 500, 200, 200]
    assert faults.stats == {**faults.stats, "requests": 5, "errors": 3}


def test_throttle_next_answers_429_with_retry_after(small, faults):
    faults.throttle_next(2, retry_after=3)
    first, second, third = (search(small) for _ in range(3))
    for response in (first, second):
        assert response.status_code == 429
        assert response.headers["Retry-After"] == "3"
        assert response.json()["message"] == "API rate limit exceeded"
    assert third.status_code == 200
    assert faults.stats["throttled"] == 2


def test_drop_next_closes_the_connection_without_a_response(small, faults):
    faults.drop_next(1)
    with pytest.raises(requests.ConnectionError):
        feed(small)
    assert feed(small).status_code == 200
    with requests.Session() as session:  # a kept-alive connection is dropped as well
        session.headers["Authorization"] = f"ApiKey {small.api_key}"
        assert session.get(f"{small.url}/v1/notifications", timeout=10).status_code == 200
        faults.drop_next(1)
        with pytest.raises(requests.ConnectionError):
            session.get(f"{small.url}/v1/notifications", timeout=10)
        assert session.get(f"{small.url}/v1/notifications", timeout=10).status_code == 200
    assert faults.stats["dropped"] == 2


def test_drop_rate_drops_about_that_fraction(small, faults):
    faults.set(drop_rate=0.5)
    dropped = 0
    for _ in range(40):
        try:
            feed(small, limit=1)
        except requests.ConnectionError:
            dropped += 1
    assert 8 <= dropped <= 32
    assert faults.stats["dropped"] == dropped


def test_faults_are_reproducible_from_the_seed():
    def outcomes(seed):
        faults = Faults(seed=seed)
        faults.set(latency=0.1, jitter=0.05, error_rate=0.3, drop_rate=0.1)
        return [faults._plan() for _ in range(50)]

    assert outcomes(5) == outcomes(5)
    assert outcomes(5) != outcomes(6)


def test_reset_turns_everything_off(small, faults):
    faults.set(latency=0.5, error_rate=1.0)
    faults.fail_next(3)
    faults.throttle_next(3)
    faults.drop_next(3)
    faults.rate_limit(global_rps=0.2, window=5, burst=1.0)
    faults.reset()
    responses = [feed(small) for _ in range(5)]
    assert {r.status_code for r in responses} == {200}
    assert "RateLimit-Limit" not in responses[0].headers
    assert faults.stats["requests"] == 5


# --- rate limits ----------------------------------------------------------------------------


def test_rate_limit_headers_and_429_beyond_the_burst(small, faults):
    faults.rate_limit(global_rps=0.5, configuration_rps=0.5, window=4, burst=1.0)  # 2 tokens
    first, second, third = (feed(small) for _ in range(3))
    assert [first.status_code, second.status_code, third.status_code] == [200, 200, 429]
    for response in (first, second, third):
        for header in ("RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"):
            assert int(response.headers[header]) >= 0
        assert 'category="global"' in response.headers["RateLimit-Policy"]
    assert [r.headers["RateLimit-Remaining"] for r in (first, second, third)] == ["1", "0", "0"]
    assert first.headers["RateLimit-Limit"] == "2"
    assert int(third.headers["Retry-After"]) >= 1
    assert third.json()["message"] == "API rate limit exceeded"
    assert faults.stats["rate_limited"] == 1


def test_rate_limits_are_per_environment_and_per_category(small, faults):
    faults.rate_limit(global_rps=0.5, configuration_rps=0.5, window=2, burst=1.0)  # 1 token
    assert feed(small).status_code == 200
    assert feed(small).status_code == 429
    production = small.api_keys["Acme/Production"]
    assert feed(small, production).status_code == 200  # another environment: its own bucket
    response = search(small)  # another category: its own bucket
    assert response.status_code == 200
    assert 'category="configuration"' in response.headers["RateLimit-Policy"]
    assert search(small).status_code == 429


def test_rate_limit_is_off_by_default_and_spares_unknown_keys(small, faults):
    assert "RateLimit-Limit" not in feed(small).headers
    faults.rate_limit(global_rps=0.5, window=2, burst=1.0)
    for _ in range(3):
        assert feed(small, "f" * 32).status_code == 401


def test_start_with_rate_limit_uses_the_service_defaults():
    with start(seed=3, rate_limit=True, **SMALL) as sandbox:
        response = feed(sandbox)
        assert response.headers["RateLimit-Limit"] == "150"
        assert response.headers["RateLimit-Policy"].startswith("150;w=5;burst=165;")
        assert search(sandbox).headers["RateLimit-Limit"] == "100"


# --- persistence ----------------------------------------------------------------------------


def test_a_database_file_persists_across_restarts_without_reseeding(tmp_path):
    path = tmp_path / "s.db"
    with start(seed=3, db=path, notifications=300, subscribers=50) as first:
        keys = first.api_keys
        counts = admin(first, "state").json()["environments"][0]["counts"]
        subscriber_id = search(first, limit=1).json()["data"][0]["subscriberId"]
        response = requests.patch(
            f"{first.url}/v2/subscribers/{subscriber_id}",
            json={"firstName": "Persisted"},
            headers={"Authorization": f"ApiKey {first.api_key}"},
            timeout=10,
        )
        assert response.status_code == 200
    with start(seed=99, db=path, notifications=1000, subscribers=500) as second:
        assert second.api_keys == keys
        assert second.seed == 3
        assert admin(second, "state").json()["environments"][0]["counts"] == counts
        found = search(second, subscriberId=subscriber_id).json()["data"]
        assert [s["firstName"] for s in found] == ["Persisted"]


def test_a_cached_seed_gives_the_same_data(small):
    with start(seed=3, **SMALL) as again:
        assert again.api_keys == small.api_keys
        assert feed(again, limit=50).json()["data"] == feed(small, limit=50).json()["data"]


# --- live traffic ---------------------------------------------------------------------------


def test_live_traffic_from_the_handle_adds_notifications_to_the_feed():
    with start(seed=4, **SMALL) as sandbox:
        before = {n["_id"] for n in feed(sandbox, limit=50).json()["data"]}
        traffic = sandbox.start_traffic(rate=20)
        assert sandbox.traffic is traffic and traffic.running
        wait_for(lambda: traffic.count >= 3)
        latest = {n["_id"] for n in feed(sandbox, limit=50).json()["data"]}
        assert len(latest - before) >= 3
        sandbox.stop_traffic()
        assert sandbox.traffic is None and not traffic.running


def test_live_traffic_through_the_admin_route():
    with start(seed=4, **SMALL) as sandbox:
        production = sandbox.api_keys["Acme/Production"]
        before = {n["_id"] for n in feed(sandbox, production, limit=50).json()["data"]}
        response = admin(sandbox, "traffic", {"rate": 20, "environment": "Acme/Production"})
        assert response.status_code == 200
        assert response.json()["environment"] == "Acme/Production"
        assert response.json()["running"]
        wait_for(lambda: admin(sandbox, "state").json()["traffic"]["count"] >= 3)
        latest = {n["_id"] for n in feed(sandbox, production, limit=50).json()["data"]}
        assert latest - before
        assert admin(sandbox, "traffic", {"rate": 0}).json() is None
        assert sandbox.traffic is None


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"rate": -1}, "rate"),
        ({"rate": "fast"}, "rate"),
        ({}, "rate"),
        ({"rate": 5, "environment": "Nope/Nothing"}, "Nope/Nothing"),
    ],
)
def test_admin_traffic_rejects_bad_input(small, body, message):
    response = admin(small, "traffic", body)
    assert response.status_code == 422
    assert message in response.json()["message"]
    assert small.traffic is None


def test_start_with_traffic_rate_starts_traffic():
    with start(seed=4, traffic_rate=10, **SMALL) as sandbox:
        assert sandbox.traffic is not None and sandbox.traffic.running
        assert admin(sandbox, "state").json()["traffic"]["rate"] == 10
    assert sandbox.traffic is None


# --- CLI ------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_cli_serves_prints_the_keys_and_stops_on_sigterm():
    port = free_port()
    command = [sys.executable, "-m", "toolkit", "sandbox", "--port", str(port)]
    command += ["--notifications", "300", "--subscribers", "50"]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        lines = []
        while not lines or not lines[-1].startswith("Press Ctrl-C"):
            line = process.stdout.readline()
            assert line, f"the CLI exited early: {lines}"
            lines.append(line.rstrip())
        output = "\n".join(lines)
        url = re.search(r"serving at (\S+)", output).group(1)
        assert url == f"http://127.0.0.1:{port}"
        keys = dict(re.findall(r"^  (\S+)\s+([0-9a-f]{32})", output, re.MULTILINE))
        assert list(keys) == ["Acme/Development", "Acme/Production", "Globex/Development"]
        response = requests.get(
            f"{url}/v1/notifications",
            params={"limit": 5, "channels": "email"},
            headers={"Authorization": f"ApiKey {keys['Acme/Development']}"},
            timeout=10,
        )
        assert response.status_code == 200 and len(response.json()["data"]) == 5
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=20) == 0
        assert "Sandbox stopped." in process.stdout.read()
    finally:
        process.kill()
        process.stdout.close()


@pytest.mark.parametrize(
    ("argument", "value"), [("--port", "nope"), ("--now", "yesterday"), ("--error-rate", "2")]
)
def test_cli_rejects_bad_arguments_naming_the_value(argument, value):
    result = subprocess.run(
        [sys.executable, "-m", "toolkit", "sandbox", argument, value],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert argument in result.stderr and repr(value) in result.stderr


def test_sandbox_process_serves_from_a_child_and_stops_when_its_parent_is_gone():
    from toolkit.sandbox.process import SandboxProcess

    with SandboxProcess("--now", NOW, "--notifications", "300", "--subscribers", "50") as sandbox:
        assert list(sandbox.api_keys) == ["Acme/Development", "Acme/Production", "Globex/Development"]  # fmt: skip
        assert sandbox.api_key == sandbox.api_keys["Acme/Development"]
        assert sandbox.api_key not in repr(sandbox)
        assert 0 <= (sandbox.now() - parse_instant(NOW)).total_seconds() < 60  # its clock
        response = requests.get(f"{sandbox.url}/v1/notifications", params={"limit": 5},
                                headers={"Authorization": f"ApiKey {sandbox.api_key}"}, timeout=10)  # fmt: skip
        assert response.status_code == 200 and len(response.json()["data"]) == 5
        child = sandbox._process
        child.stdin.close()  # what the parent's exit does, however it exits
        assert child.wait(timeout=30) == 0
    with pytest.raises(requests.ConnectionError):
        requests.get(f"{sandbox.url}/v1/notifications", timeout=10)
