"""Monitor against a real sandbox with live traffic: its frames equal a direct read of its window
(statuses included), its window is bounded, it persists into a store, and it never sleeps in
real time in these tests (clock and sleep are injected; the sandbox's clock stands still until
a test moves it, live traffic with it)."""

from __future__ import annotations

import queue
import threading

import pandas as pd
import pytest

import toolkit
from toolkit.client import connect
from toolkit.errors import ParameterError, ServerError
from toolkit.monitor import Monitor
from toolkit.read import read_activity

NOW = "2026-11-01T12:00:00Z"


@pytest.fixture(scope="module")
def live():
    from toolkit.sandbox import start

    with start(seed=5, now=NOW, notifications=300, subscribers=60, clock_speed=0) as sandbox:
        yield sandbox, connect(sandbox=sandbox, progress=False)


class FakeTime:
    """A clock that only moves when slept on."""

    def __init__(self):
        self.now, self.slept = 0.0, []

    def clock(self):
        return self.now

    def sleep(self, seconds):
        self.slept.append(seconds)
        self.now += seconds


def _direct(client, monitor):
    start, end = monitor.window
    return read_activity(client, after=start, before=end, progress=False)


def _equal(got, expected):
    for name, mine, theirs in zip(got._fields, got, expected, strict=True):
        pd.testing.assert_frame_equal(mine, theirs, obj=name)


def _traffic(sandbox, count, rate=40.0):
    """Live traffic until ``count`` new notifications were inserted, the clock moved with it."""
    traffic = sandbox.start_traffic(rate=rate)
    try:
        sandbox.advance(count / rate)
        assert traffic.count >= count
    finally:
        sandbox.stop_traffic()


def test_filters_are_checked_when_built(live):
    sandbox, client = live
    before = sandbox.faults.stats["requests"]
    for filters, name in (
        ({"chanels": ["sms"]}, "chanels"),
        ({"channels": "fax"}, "channels"),
        ({"limit": 5}, "limit"),
        ({"keep": "a day"}, "keep"),
        ({"sleep": 3}, "sleep"),
        ({"webhook_url": "ftp://hooks.example/T000/secret"}, "webhook_url"),
    ):
        with pytest.raises(ParameterError) as raised:
            Monitor(client, **filters)
        assert raised.value.name == name
    assert "secret" not in str(raised.value)
    with pytest.raises(ParameterError):
        Monitor(client, interval=0)
    assert sandbox.faults.stats["requests"] == before  # refused before any request


def test_frames_equal_a_direct_read_statuses_included(live):
    sandbox, client = live
    monitor = Monitor(client, since="2m", charts=None)
    first = monitor.poll_once()
    assert len(monitor.plots.outputs) == 2  # the default charts were drawn
    _equal(monitor.activity, _direct(client, monitor))
    seen = set(first.notifications["notification_id"])

    sandbox.start_traffic(rate=10.0)
    try:
        for _ in range(3):
            held = len(monitor.activity.notifications)
            sandbox.advance(3)  # 30 new notifications; those in flight before move on
            new = monitor.poll_once()
            assert len(new.notifications) >= 30
            assert len(monitor.activity.notifications) == held + len(new.notifications)
            assert not set(new.notifications["notification_id"]) & seen
            seen |= set(new.notifications["notification_id"])
            _equal(monitor.activity, _direct(client, monitor))  # under live traffic too
    finally:
        sandbox.stop_traffic()
    assert (monitor.activity.notifications["status"] == "pending").any()
    last = monitor.poll_once()  # the traffic has stopped: all it holds is read again as it is
    _equal(monitor.activity, _direct(client, monitor))
    ids = monitor.activity.notifications["notification_id"]
    assert ids.is_unique and len(ids) == len(seen) + len(last.notifications)


def test_window_is_bounded_by_keep(live):
    _, client = live
    monitor = Monitor(client, since="6h", keep="1h", charts=[])
    monitor.poll_once()
    start, end = monitor.window
    assert end - start == pd.Timedelta("1h")
    assert monitor.activity.notifications["created_at"].min() >= start
    _equal(monitor.activity, _direct(client, monitor))


def test_run_is_bounded_without_real_sleep(live):
    _, client = live
    fake = FakeTime()
    monitor = Monitor(
        client, interval=10, charts=[], since="1m", clock=fake.clock, sleep=fake.sleep
    )
    monitor.run(duration=60)
    assert monitor.polls == 7 and fake.slept == [10.0] * 6
    monitor.run(max_polls=3)
    assert monitor.polls == 10
    with pytest.raises(ParameterError):
        monitor.run()


def test_background_polling_with_live_traffic(live):
    sandbox, client = live
    ticks: queue.Queue = queue.Queue()
    asleep: queue.Queue = queue.Queue()  # the polls done, each time the loop goes to sleep
    stopping = threading.Event()  # once set, the injected sleep returns at once

    def sleep(seconds):
        asleep.put(monitor.polls)
        return None if stopping.is_set() else ticks.get()

    monitor = Monitor(client, interval=5, charts=[], since="1s", sleep=sleep)
    monitor.start()
    try:
        assert asleep.get(timeout=120) == 1
        _traffic(sandbox, 20)
        ticks.put("poll")
        assert asleep.get(timeout=120) == 2
    finally:  # the loop may poll again after the release: its sleep no longer waits
        stopping.set()
        ticks.put("release")
        monitor.stop()
    assert monitor.error is None
    _equal(monitor.activity, _direct(client, monitor))
    assert len(monitor.activity.notifications) >= 20


def test_poll_errors_are_shown_and_polling_goes_on(live):
    sandbox, _ = live
    client = connect(sandbox=sandbox, progress=False, max_retries=0)
    fake = FakeTime()
    monitor = Monitor(client, charts=[], since="1m", clock=fake.clock, sleep=fake.sleep)
    sandbox.faults.fail_next(1, status=500)
    try:
        monitor.run(max_polls=1)
        assert isinstance(monitor.error, ServerError) and monitor.polls == 0
        assert "ServerError" in monitor.output.outputs[0]["text"]
        monitor.run(max_polls=1)
        assert monitor.error is None and monitor.polls == 1
    finally:
        sandbox.faults.reset()


def test_monitor_persists_into_a_store(live, tmp_path):
    sandbox, client = live
    path = tmp_path / "store"
    monitor = Monitor(client, charts=[], since="10m", store=path)
    monitor.poll_once()
    _traffic(sandbox, 15)
    monitor.poll_once()
    store = toolkit.open_store(path)
    assert store.watermark == monitor.window[1]
    _equal(store.read(after=monitor.window[0]), monitor.activity)
    with pytest.raises(ParameterError, match="a directory"):
        Monitor(client, store=path / "state.json")


def test_the_alerts_use_the_store_history_before_the_window_as_baseline(live, tmp_path):
    sandbox, client = live
    path = tmp_path / "store"
    toolkit.sync(client, path, since="2d", progress=False)
    monitor = Monitor(client, charts=[], since="12h", store=path)
    monitor.poll_once()
    assert monitor.error is None
    # two days of history: too short for a weekly season, and said so
    assert "baseline (" in monitor.incidents.attrs["baseline"]
    assert "fewer than 3 weeks" in monitor.incidents.attrs["baseline"]
    without = Monitor(client, charts=[], since="12h")
    without.poll_once()
    assert "no baseline= was given" in without.incidents.attrs["baseline"]
