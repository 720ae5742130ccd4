"""The report's previous period read in a forked process (``report_window(concurrent="process")``,
what ``python -m toolkit report`` does on Linux): the same report as in a thread, the child's
errors raised here, no child left behind, and a child that deadlocks or dies killed and its work
done here instead. (A forked `Transport` opening its own connections is tested in test_http.)"""

from __future__ import annotations

import os
import re
import signal
import sys
import threading
import warnings
from datetime import UTC, datetime

import pytest
import requests
from conftest import NOW, wait_for

from toolkit import report
from toolkit._fork import Forked
from toolkit.client import connect
from toolkit.errors import AuthenticationError, ParameterError, ToolkitError
from toolkit.read import read_activity
from toolkit.report import _client_read, report_window
from toolkit.sandbox.process import SandboxProcess

GENERATED_AT = datetime(2026, 11, 1, 12, 30, tzinfo=UTC)


@pytest.fixture(scope="module")
def sandbox():
    """A sandbox in its own process, as the command uses: this process forks no server thread."""
    with SandboxProcess("--now", NOW, "--notifications", "2000", "--subscribers", "200") as child:
        yield child


def _until(client):
    """The sandbox's now, to the second: a fixed end for a window."""
    return client.now().replace(microsecond=0)


def _reports(client, tmp_path, since: str = "7d"):
    """The report of ``since`` with the previous period read in a thread, then in a process."""
    read, source, filters = _client_read(client, False, {})
    until = _until(client)  # the sandbox's clock runs: the same window for both
    return [
        report_window(
            read,
            now=until,
            since=since,
            until=until,
            out=tmp_path / f"{how}.html",
            source=source,
            filters=filters,
            generated_at=GENERATED_AT,
            concurrent=how,
        )  # fmt: skip
        for how in (True, "process")
    ]


def test_the_report_is_the_same_as_with_a_thread(sandbox, tmp_path):
    in_thread, in_process = _reports(connect(sandbox=sandbox, progress=False), tmp_path)
    assert in_process.previous is not None
    assert in_process.previous == in_thread.previous
    assert in_process.headline == in_thread.headline
    assert in_process.path.read_bytes() == in_thread.path.read_bytes()


def test_a_previous_period_beyond_retention_is_reported_as_not_available(sandbox, tmp_path):
    client = connect(sandbox=sandbox, environment="Globex/Development", progress=False)  # 24 h
    in_thread, in_process = _reports(client, tmp_path, since="20h")
    assert in_process.previous is None
    assert in_process.provenance["previous"].startswith("not available: it starts before the plan")
    moving = re.compile(r"the earliest readable instant is [^)]+")  # the sandbox's clock runs
    html = [moving.sub("", report.path.read_text(encoding="utf-8")) for report in (in_thread, in_process)]  # fmt: skip
    assert html[1] == html[0]


def test_the_child_and_this_process_share_the_rate_limits(tmp_path):
    """What the command does: while the child reads, each process paces at half the limits."""
    with SandboxProcess("--now", NOW, "--notifications", "2000", "--subscribers", "200") as child:
        faults = f"{child.url}/_sandbox/faults"
        limit = {"rate_limit": {"global_rps": 20, "window": 1, "burst": 1}}
        requests.post(faults, json=limit, timeout=30).raise_for_status()
        client = connect(sandbox=child, progress=False)
        read, source, filters = _client_read(client, False, {})
        until = _until(client)
        with client.transport.pacer.shared(2):
            report = report_window(read, now=until, since="7d", until=until,
                                   out=tmp_path / "r.html", concurrent="process")  # fmt: skip
        stats = requests.post(faults, json={}, timeout=30).json()["stats"]
    assert report.previous is not None
    assert stats["requests"] > 40  # more than the bucket holds: both processes were paced
    assert stats["rate_limited"] == 0


@pytest.mark.parametrize("how", ["thread", "fork", 1, None])
def test_an_unknown_way_is_refused_before_anything_is_read(how, tmp_path):
    reads = []
    with pytest.raises(ParameterError, match=r"concurrent=.* is not allowed: True, False or"):
        report_window(lambda *window: reads.append(window), now=GENERATED_AT,
                      out=tmp_path / "r.html", concurrent=how)  # fmt: skip
    assert reads == []


def _window_or_else(end, window_read, earlier_read):
    """A read that reads the window (up to ``end``) with ``window_read``, anything earlier with
    the other."""
    return lambda after, before: (window_read if before == end else earlier_read)(after, before)


def test_a_service_error_in_the_child_is_raised_here_with_its_class(sandbox, tmp_path):
    client = connect(sandbox=sandbox, progress=False)
    wrong = connect(sandbox.url, "wrong-key-0123456789abcdef", progress=False)
    until = _until(client)
    read = _window_or_else(
        until,
        lambda after, before: read_activity(client, after=after, before=before),
        lambda after, before: read_activity(wrong, after=after, before=before),  # 401
    )
    with pytest.raises(AuthenticationError) as raised:
        report_window(read, now=until, since="7d", until=until, out=tmp_path / "r.html",
                      concurrent="process")  # fmt: skip
    assert raised.value.status == 401
    assert "wrong-key-0123456789abcdef" not in str(raised.value)
    assert not (tmp_path / "r.html").exists()


def test_an_error_whose_class_takes_other_arguments_keeps_them(sandbox, tmp_path):
    client = connect(sandbox=sandbox, progress=False)
    until = _until(client)
    read = _window_or_else(
        until,
        lambda after, before: read_activity(client, after=after, before=before),
        lambda after, before: read_activity(client, after=after, before=before, channels="fax"),
    )
    with pytest.raises(ParameterError, match="channels='fax' is not allowed") as raised:
        report_window(read, now=until, since="7d", until=until, out=tmp_path / "r.html",
                      concurrent="process")  # fmt: skip
    assert (raised.value.name, raised.value.value) == ("channels", "fax")


def test_the_child_is_killed_when_the_window_cannot_be_read(sandbox, tmp_path):
    marker = tmp_path / "child.pid"

    def earlier(after, before):  # in the child: say who it is, then wait forever
        marker.write_text(str(os.getpid()))
        signal.pause()

    def window(after, before):
        wait_for(lambda: marker.exists() and marker.read_text())
        raise ToolkitError("the window could not be read")

    until = _until(connect(sandbox=sandbox, progress=False))
    with pytest.raises(ToolkitError, match="the window could not be read"):
        report_window(_window_or_else(until, window, earlier), now=until, since="7d",
                      until=until, out=tmp_path / "r.html", concurrent="process")  # fmt: skip
    with pytest.raises(ProcessLookupError):  # killed and waited for: gone
        os.kill(int(marker.read_text()), 0)


def test_a_child_deadlocked_at_the_fork_is_killed_and_the_period_read_here(
    sandbox, tmp_path, monkeypatch, caplog
):
    """A lock another thread holds when the process forks stays held in the child forever (what
    DuckDB's or BLAS's threads can do): the report is the one read in process, and says so once."""
    monkeypatch.setattr(report, "PREVIOUS_WAIT", 0.0)  # twice the window's time, not 30 s
    client = connect(sandbox=sandbox, progress=False)
    read, source, filters = _client_read(client, False, {})
    until = _until(client)
    lock, held, release = threading.Lock(), threading.Event(), threading.Event()

    def holder():
        with lock:
            held.set()
            release.wait()

    def window(after, before):
        release.set()  # lets go of the lock in this process; the child's copy stays held
        return read(after, before)

    def earlier(after, before):
        with lock:  # in the child, forever; here, once the holder has let go
            return read(after, before)

    thread = threading.Thread(target=holder)
    thread.start()
    held.wait()
    same = {"now": until, "since": "7d", "until": until, "source": source, "filters": filters,
            "generated_at": GENERATED_AT}  # fmt: skip
    recovered = report_window(_window_or_else(until, window, earlier), out=tmp_path / "f.html",
                              concurrent="process", **same)  # fmt: skip
    thread.join()
    in_process = report_window(read, out=tmp_path / "p.html", concurrent=False, **same)
    assert recovered.previous is not None
    assert recovered.previous == in_process.previous
    assert recovered.path.read_bytes() == in_process.path.read_bytes()
    [message] = [r.getMessage() for r in caplog.records if r.name == "toolkit.fork"]
    assert re.fullmatch(
        r"the previous period's read: the forked process \(pid \d+\) gave no answer within "
        r"[\d.e-]+ s \(killed\); running it in this process instead",
        message,
    )


def _stuck_in_a_child(parent: int, marker):
    """This process's pid; in a forked child, its pid written to ``marker``, then waits forever."""
    if os.getpid() != parent:
        (marker.parent / "writing").write_text(str(os.getpid()))
        os.replace(marker.parent / "writing", marker)
        threading.Event().wait()
    return os.getpid()


def test_a_child_without_an_answer_in_time_is_killed_and_the_work_done_here(tmp_path, caplog):
    marker = tmp_path / "child.pid"
    forked = Forked(_stuck_in_a_child, os.getpid(), marker, what="the work")
    wait_for(marker.exists)
    child = int(marker.read_text())
    assert forked.result(timeout=0) == os.getpid()  # done here
    with pytest.raises(ProcessLookupError):  # killed and waited for: gone
        os.kill(child, 0)
    assert [r.getMessage() for r in caplog.records] == [
        f"the work: the forked process (pid {child}) gave no answer within 0 s (killed); "
        "running it in this process instead"
    ]


@pytest.mark.parametrize(
    "end, how",
    [
        (lambda: os._exit(3), "exit code 3"),
        (lambda: os.kill(os.getpid(), signal.SIGKILL), "killed by signal 9"),  # its own pid
    ],
)
def test_a_child_that_ends_without_an_answer_has_its_work_done_here(end, how, caplog):
    parent = os.getpid()

    def work():
        if os.getpid() != parent:
            end()
        return "done here"

    assert Forked(work).result() == "done here"
    [message] = [r.getMessage() for r in caplog.records]
    assert f"ended without an answer ({how}); running it in this process instead" in message


def test_a_progress_bar_lock_held_by_another_thread_at_the_fork_does_not_block_the_child(caplog):
    """tqdm's lock (a semaphore shared with the child, and a thread lock its monitor thread
    takes every few seconds) held by another thread when the process forks: the child's bars
    take a lock of its own and it answers; before, it waited forever, holding the semaphore
    this process's next bar then waited for (what hung a report under load)."""
    from tqdm import tqdm

    parent, lock = os.getpid(), tqdm.get_lock()
    held, release = threading.Event(), threading.Event()

    def holder():
        with lock:
            held.set()
            release.wait()

    def bar():
        if os.getpid() == parent:  # done here: the child did not answer
            return parent
        with tqdm(total=1, disable=True):
            return os.getpid()

    thread = threading.Thread(target=holder)
    thread.start()
    held.wait()
    try:
        forked = Forked(bar)
    finally:
        release.set()
        thread.join()
    assert forked.result(timeout=60) != parent
    assert caplog.records == []
    with tqdm(total=1, disable=True):  # nor is this process's next bar held up
        pass


def test_an_answer_in_time_comes_from_the_child(caplog):
    assert Forked(os.getpid).result(timeout=600) != os.getpid()
    assert caplog.records == []


def test_python_3_12s_warning_on_forking_with_threads_is_not_shown(monkeypatch):
    """Python 3.12 warns from `os.fork` when other threads run (here, reproduced on older ones)."""
    if sys.version_info < (3, 12):
        fork = os.fork

        def warning_fork():
            pid = fork()
            if pid:  # the parent, as 3.12 does
                warnings.warn(f"This process (pid={os.getpid()}) is multi-threaded, use of fork() "
                              "may lead to deadlocks in the child.", DeprecationWarning, 2)  # fmt: skip
            return pid

        monkeypatch.setattr(os, "fork", warning_fork)
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        with warnings.catch_warnings(record=True) as shown:
            warnings.simplefilter("always")
            assert Forked(os.getpid).result() != os.getpid()
    finally:
        release.set()
        other.join()
    assert [str(w.message) for w in shown] == []
