"""Monitor against a real sandbox with live traffic: only new notifications, never twice."""

from __future__ import annotations

import time

import pytest

from toolkit.client import connect
from toolkit.errors import ParameterError
from toolkit.monitor import Monitor
from toolkit.read import read_activity

NOW = "2026-11-01T12:00:00Z"


@pytest.fixture(scope="module")
def live():
    from toolkit.sandbox import start

    with start(seed=5, now=NOW, notifications=300, subscribers=60) as sandbox:
        yield sandbox, connect(sandbox=sandbox, progress=False)


def _ids(monitor):
    return list(monitor.activity.notifications["notification_id"])


def _traffic(sandbox, seconds=1.5, rate=40.0):
    sandbox.start_traffic(rate=rate)
    try:
        time.sleep(seconds)
    finally:
        sandbox.stop_traffic()


def _consistent(activity):
    assert set(activity.jobs["notification_id"]) <= set(activity.notifications["notification_id"])
    assert set(activity.execution_details["job_id"]) <= set(activity.jobs["job_id"])


def test_poll_once_picks_up_only_new_notifications(live):
    sandbox, client = live
    monitor = Monitor(client, interval=0.2, since="6h")
    first = monitor.poll_once()
    seeded = set(_ids(monitor))
    assert len(first.notifications) == len(seeded) > 0
    assert len(monitor.plots.outputs) == 2  # the default charts were drawn

    _traffic(sandbox)
    second = monitor.poll_once()
    new = set(second.notifications["notification_id"])
    assert new and not new & seeded
    ids = _ids(monitor)
    assert len(ids) == len(set(ids)) == len(seeded) + len(new)
    # everything the service holds since the monitor's start, nothing more
    start = monitor.since
    assert set(ids) == set(
        read_activity(client, after=start, progress=False).notifications["notification_id"]
    )
    assert monitor.poll_once().notifications.empty  # no traffic: nothing new
    assert monitor.polls == 3
    _consistent(monitor.activity)
    assert str(monitor.activity.notifications["status"].dtype) == "category"


def test_background_polling_with_live_traffic(live):
    sandbox, client = live
    monitor = Monitor(client, interval=0.1, charts=[], since="1s")
    monitor.start()
    try:
        _traffic(sandbox, seconds=2.0)
    finally:
        monitor.stop()
    assert monitor.polls >= 5 and monitor.error is None
    monitor.poll_once()  # catch up after the traffic stopped
    ids = _ids(monitor)
    assert len(ids) == len(set(ids)) > 0
    expected = read_activity(client, after=monitor.since, progress=False)
    assert set(ids) == set(expected.notifications["notification_id"])
    _consistent(monitor.activity)


def test_run_is_bounded(live):
    _, client = live
    monitor = Monitor(client, interval=0.05, charts=[], since="1m")
    monitor.run(max_polls=3)
    assert monitor.polls == 3
    started = time.monotonic()
    monitor.run(duration=0.3)
    assert time.monotonic() - started < 2
    with pytest.raises(ParameterError):
        monitor.run()
    with pytest.raises(ParameterError):
        Monitor(client, interval=0)


def test_poll_errors_are_shown_and_polling_goes_on(live):
    _, client = live
    monitor = Monitor(client, interval=0.01, charts=[], since="1m", channels=["fax"])
    monitor.run(max_polls=2)
    assert isinstance(monitor.error, ParameterError)
    assert "ParameterError" in monitor.output.outputs[0]["text"]
    assert monitor.polls == 0  # no poll succeeded
