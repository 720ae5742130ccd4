"""Alerts: the state machine on real detector frames, the webhook against a local HTTP receiver,
and a Monitor alerting end to end on an outage started in a live sandbox."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pandas as pd
import pytest

import toolkit
from toolkit.alerts import ALERT_COLUMNS, Alerts
from toolkit.client import connect
from toolkit.monitor import Monitor

NOW = "2026-11-01T12:00:00Z"


class Receiver:
    """A local HTTP server keeping the JSON bodies POSTed to it (answering ``status``)."""

    def __init__(self, status=200):
        self.bodies, self.status = [], status
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers["Content-Length"])
                receiver.bodies.append(json.loads(self.rfile.read(length)))
                self.send_response(receiver.status)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hooks/T000/secret-token"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver():
    server = Receiver()
    yield server
    server.close()


@pytest.fixture(scope="module")
def outage_frames(sandbox):
    """find_incidents of two windows of the seeded data: one ending during the planted SMS
    outage, one ending after it."""
    client = connect(sandbox=sandbox, progress=False)
    outage = next(i for i in sandbox.incidents if i["kind"] == "provider_outage")
    start, end = pd.Timestamp(outage["start"]), pd.Timestamp(outage["end"])
    during = toolkit.read_activity(client, after=start - pd.Timedelta("2D"), before=start + pd.Timedelta("1h"))  # fmt: skip
    after = toolkit.read_activity(client, after=start - pd.Timedelta("2D"), before=end + pd.Timedelta("6h"))  # fmt: skip
    during, after = toolkit.find_incidents(during), toolkit.find_incidents(after)
    assert "provider_outage" in set(during["kind"]) and "provider_outage" in set(after["kind"])
    only = [frame[frame["kind"] == "provider_outage"] for frame in (during, after)]
    return only[0], only[1], start, end


def test_one_firing_and_one_resolved_with_hysteresis(outage_frames, receiver):
    during, after, start, end = outage_frames
    assert during["ongoing"].any() and not after.loc[after["kind"] == "provider_outage", "ongoing"].any()  # fmt: skip
    seen = []
    alerts = Alerts(on_alert=seen.append, webhook_url=receiver.url, resolve_after=2)
    assert alerts.evaluate(during, at=start)[0]["state"] == "firing"
    assert alerts.evaluate(during, at=start) == []  # still ongoing: no second firing
    assert alerts.evaluate(after, at=end) == []  # one quiet evaluation does not resolve it
    assert alerts.evaluate(during, at=end) == []  # back again: still the same alert, no flapping
    assert alerts.evaluate(after, at=end) == []
    resolved = alerts.evaluate(after, at=end + pd.Timedelta("1m"))
    assert [a["state"] for a in resolved] == ["resolved"]
    # the incident as last found ongoing, its end said instead of "(ongoing)"
    firing_summary = during["summary"].iloc[0]
    assert "(ongoing)" in firing_summary
    assert resolved[0]["summary"] == firing_summary.replace(
        "(ongoing)", f"(resolved by {end + pd.Timedelta('1m'):%H:%M} UTC)"
    )
    alerts.close()
    frame = alerts.frame
    assert list(frame.columns) == list(ALERT_COLUMNS)
    assert frame["state"].tolist() == ["firing", "resolved"] == [a["state"] for a in seen]
    assert frame["kind"].tolist() == ["provider_outage"] * 2
    assert frame["provider_id"].tolist() == ["twilio"] * 2
    assert [body["text"].split(":")[0] for body in receiver.bodies] == ["FIRING", "RESOLVED"]
    assert receiver.bodies[0]["alert"]["channel"] == "sms"
    assert "twilio" in receiver.bodies[0]["text"].lower()


def test_a_failing_webhook_is_retried_never_blocks_and_is_reported_once(outage_frames):
    during, after, start, end = outage_frames
    failing = Receiver(status=500)
    errors, waits = [], []
    try:
        alerts = Alerts(webhook_url=failing.url, resolve_after=1, on_error=errors.append,
                        sleep=waits.append)  # fmt: skip
        alerts.evaluate(during, at=start)
        alerts.evaluate(after, at=end)
        alerts.close()
    finally:
        failing.close()
    assert len(failing.bodies) == 2 * 4  # each alert: one attempt and three retries
    assert waits == [1.0, 2.0, 4.0] * 2
    assert errors == ["webhook POST failed after 4 attempts: HTTP 500"]  # once, no URL
    assert alerts.frame["state"].tolist() == ["firing", "resolved"]
    assert "secret" not in repr(alerts.webhook)


def test_monitor_alerts_on_a_live_outage_end_to_end(receiver):
    """Live traffic of 10/s in a sandbox whose clock stands still until the test moves it,
    polled every 15 sandbox seconds: no alert in normal traffic, one firing within two polls of
    the outage's start (a job counts as failed as soon as an attempt fails), one resolved
    within four polls of its end (two quiet polls), received over HTTP. Polls are counted, so
    a busy machine changes nothing. The Monitor starts with the traffic and has no store: the
    window's own comparison is its baseline, where the outage soon holds much of the
    provider's jobs; it still fires within two polls."""
    from toolkit.sandbox import start

    with start(seed=3, now=NOW, notifications=20000, subscribers=2000, incidents="none",
               clock_speed=0) as sandbox:  # fmt: skip
        client = connect(sandbox=sandbox, progress=False)
        received = []
        monitor = Monitor(client, charts=[], since="3h", webhook_url=receiver.url,
                          on_alert=received.append)  # fmt: skip
        sandbox.start_traffic(rate=10)

        def polls_until(condition, most):  # poll every 15 s until condition(); the polls made
            for made in range(1, most + 1):
                sandbox.advance(15)
                monitor.poll_once()
                if condition():
                    return made
            return None

        assert polls_until(lambda: received, most=8) is None  # two minutes of normal traffic
        sandbox.start_outage("twilio", failure_rate=0.9)
        started = client.now()
        assert polls_until(lambda: received, most=2) is not None
        assert [a["state"] for a in received] == ["firing"]
        sandbox.stop_outage("twilio")
        ended = client.now()
        assert polls_until(lambda: len(received) > 1, most=4) is not None
        sandbox.stop_traffic()
        monitor.close()
    assert [a["state"] for a in received] == ["firing", "resolved"]
    assert started < received[0]["at"] <= started + pd.Timedelta("30s")
    assert ended < received[1]["at"] <= ended + pd.Timedelta("60s")
    assert [body["text"].split(":")[0] for body in receiver.bodies] == ["FIRING", "RESOLVED"]
    assert monitor.alerts["provider_id"].tolist() == ["twilio", "twilio"]
    assert "resolved" in monitor.alert_list.value and receiver.url not in monitor.alert_list.value
