"""Benchmark: the activity store (issue 10), each figure against a baseline measured in the same run.

(a) Sync of a 200,000-notification sandbox (its own process, seeded over 14 days) into a new
    store: time and requests, against ``read_activity`` of the same window; then a second sync
    a minute of sandbox time later: its requests as a share of the first's (target under 5%).
(b) Deep windows: the same 200,000 notifications read with time slicing (``read_activity``)
    against paging from page 0 to the end (``limit=`` makes the client page without slicing).
(c) A store of 2,000,000 notifications over 90 days, written by `generate_store` (not over
    HTTP): ``python -m toolkit report --store PATH --since 90d`` in a child process, its time
    (target under 60 s) and peak memory (target under 1.5 GB); size on disk per notification.
    The baseline: the same report's time on a 200,000-notification generated store (scaling).

Run: ``.venv/bin/python benchmarks/bench_store.py [sync|deep|scale ...]`` (default: all).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np
import pyarrow as pa
from common import sandbox_process

import toolkit
from toolkit.client import Client
from toolkit.store import layout
from toolkit.store.state import State

NOW = "2026-11-01T12:00:00Z"
NOTIFICATIONS = 200_000
BIG = 2_000_000


def counting_client(url: str, key: str) -> tuple[Client, list[int]]:
    """A client on the sandbox's clock (read at each ``now()``), counting its requests."""

    def now():
        with urllib.request.urlopen(f"{url}/_sandbox/state", timeout=30) as response:
            return json.loads(response.read())["now"]

    client = Client(url, key, environment="Acme/Development", clock=now, progress=False)
    count = [0]
    request = client.transport.request

    def counted(*args, **kwargs):
        count[0] += 1
        return request(*args, **kwargs)

    client.transport.request = counted
    return client, count


def timed(work):
    started = time.perf_counter()
    result = work()
    return time.perf_counter() - started, result


def line(name: str, figure: str, baseline: str, ratio: float, target: str) -> None:
    print(f"{name:<46} {figure:>16}  baseline {baseline:>16}  ratio {ratio:7.3f}  target {target}")


def bench_sync_and_deep() -> None:
    with (
        sandbox_process(
            "--now", NOW, "--notifications", str(NOTIFICATIONS), "--subscribers", "20000"
        ) as (url, key),
        tempfile.TemporaryDirectory() as tmp,
    ):
        client, count = counting_client(url, key)
        seconds, first = timed(lambda: toolkit.sync(client, Path(tmp) / "s", since="14d"))
        sync_requests = count[0]
        store = toolkit.open_store(Path(tmp) / "s")
        after, before = store.window
        count[0] = 0
        read_seconds, activity = timed(
            lambda: toolkit.read_activity(client, after=after, before=before)
        )
        read_requests = count[0]
        held = len(store.read().notifications)
        assert held == len(activity.notifications), (held, len(activity.notifications))
        print(f"(a) {held:,} notifications over {first.days} days")
        line("sync, seconds (vs read_activity)", f"{seconds:.1f} s", f"{read_seconds:.1f} s",
             seconds / read_seconds, "same order as a read")  # fmt: skip
        line("sync, requests (vs read_activity)", f"{sync_requests:,}", f"{read_requests:,}",
             sync_requests / read_requests, "same order as a read")  # fmt: skip
        time.sleep(60)  # a minute of sandbox time: the second sync reads lag + that minute
        count[0] = 0
        second_seconds, second = timed(lambda: toolkit.sync(client, Path(tmp) / "s", since="14d"))
        line("second sync, requests (vs the first sync)", f"{count[0]:,}", f"{sync_requests:,}",
             count[0] / sync_requests, "< 0.05")  # fmt: skip
        line("second sync, seconds (vs the first sync)", f"{second_seconds:.2f} s",
             f"{seconds:.1f} s", second_seconds / seconds, "-")  # fmt: skip

        count[0] = 0
        paged_seconds, paged = timed(
            lambda: client.list_activity(after=after, before=before, limit=10**9)
        )
        paged_requests = count[0]
        count[0] = 0
        sliced_seconds, sliced = timed(lambda: client.list_activity(after=after, before=before))
        assert len(paged) == len(sliced) == held
        print(f"(b) deep window: {held:,} notifications, {paged_requests:,} pages from page 0")
        line("sliced read, seconds (vs paging from page 0)", f"{sliced_seconds:.1f} s",
             f"{paged_seconds:.1f} s", sliced_seconds / paged_seconds, "< 1")  # fmt: skip
        line("sliced read, requests (vs paging from page 0)", f"{count[0]:,}",
             f"{paged_requests:,}", count[0] / paged_requests, "about 1")  # fmt: skip


# -- (c) a generated store -----------------------------------------------------------------------

CHANNELS = ("email", "sms", "push", "in_app", "chat")
PROVIDERS = {"email": "sendgrid", "sms": "twilio", "push": "fcm", "in_app": "svc", "chat": "slack"}


def generate_store(path: Path, notifications: int, days: int = 90, seed: int = 1) -> None:
    """A store of ``notifications`` synthetic notifications at an even rate over the ``days`` days
    up to `NOW`, its watermark (the data fill the window up to it), in the store's layout (each
    notification one or two delivery jobs of two execution details)."""
    rng = np.random.default_rng(seed)
    end = np.datetime64(NOW.rstrip("Z"), "ms")
    start = end - np.timedelta64(days, "D")
    per_ms = notifications // days / 86_400_000
    ids = iter(range(10**9))
    day = end.astype("datetime64[D]")  # NOW's own day first, held up to NOW
    while day >= start.astype("datetime64[D]"):
        low = max(start, day.astype("datetime64[ms]"))
        high = min(end, (day + 1).astype("datetime64[ms]"))
        span = int((high - low).astype(int))
        created = np.sort(low + rng.integers(0, span, round(per_ms * span)).astype("timedelta64[ms]"))  # fmt: skip
        layout.write_day(path, str(day), _day_tables(rng, created[::-1], ids))
        day -= 1
    state = State("http://generated.invalid", "Generated/Benchmark", {})
    state.after = str(start) + "Z"
    state.watermark = NOW
    state.synced_at = NOW
    state.save(path)


def _day_tables(rng, created, ids) -> list[pa.Table]:
    n = len(created)
    notification_ids = np.array([f"{next(ids):024x}" for _ in range(n)], dtype=object)
    jobs_per = rng.integers(1, 3, n)
    channel = rng.choice(CHANNELS, int(jobs_per.sum()))
    failed = rng.random(len(channel)) < 0.05
    subscribers = rng.integers(0, 50_000, n)
    notifications = {
        "notification_id": notification_ids,
        "created_at": created, "updated_at": created,
        "transaction_id": notification_ids, "template_id": rng.choice(["t1", "t2", "t3"], n),
        "workflow_name": rng.choice(["Welcome", "Digest", "Alert"], n),
        "workflow_identifier": rng.choice(["welcome", "digest", "alert"], n),
        "template_origin": np.full(n, "svc-cloud"),
        "subscriber_internal_id": np.array([f"s{s}" for s in subscribers], dtype=object),
        "subscriber_id": np.array([f"user-{s}" for s in subscribers], dtype=object),
        "subscriber_email": np.array([f"user{s}@d{s % 40}.example" for s in subscribers], dtype=object),  # fmt: skip
        "subscriber_first_name": np.full(n, "Ada"), "subscriber_last_name": np.full(n, "L"),
        "subscriber_phone": np.full(n, None),
        "channels": [[c] for c in rng.choice(CHANNELS, n)], "topic_keys": [[]] * n, "tags": [[]] * n,
        "severity": rng.choice(["none", "high"], n), "critical": np.zeros(n, bool),
        "digested_notification_id": np.full(n, None), "payload": np.full(n, "{}"),
        "job_count": jobs_per, "failed_job_count": np.zeros(n, int),
        "status": np.full(n, "sent"), "environment_id": np.full(n, "env"),
        "organization_id": np.full(n, "org"),
    }  # fmt: skip
    parent = np.repeat(np.arange(n), jobs_per)
    m = len(parent)
    job_ids = np.array([f"{next(ids):024x}" for _ in range(m)], dtype=object)
    first = created[parent] + rng.integers(100, 3000, m).astype("timedelta64[ms]")
    last = first + rng.integers(100, 5000, m).astype("timedelta64[ms]")
    code = np.where(failed, "30003", None)
    jobs = {
        "job_id": job_ids, "notification_id": notification_ids[parent], "type": channel,
        "status": np.where(failed, "failed", "completed"),
        "final_status": np.where(failed, "failed", "sent"), "step_id": np.full(m, "step"),
        "step_name": channel, "provider_id": np.array([PROVIDERS[c] for c in channel]),
        "digest_type": np.full(m, None), "updated_at": last, "first_execution_at": first,
        "last_execution_at": last, "duration_s": (last - first).astype(float) / 1000,
        "execution_count": np.full(m, 2), "failed_count": failed.astype(int),
        "retry_count": np.zeros(m, int),
        "error_text": np.where(failed, "Unreachable destination handset", None),
        "error_code": code, "subscriber_id": notifications["subscriber_id"][parent],
        "workflow": notifications["workflow_identifier"][parent],
    }  # fmt: skip
    k = np.repeat(np.arange(m), 2)
    second = np.tile([False, True], m)
    detail_failed = failed[k] & second
    details = {
        "execution_detail_id": np.array([f"{next(ids):024x}" for _ in range(2 * m)], dtype=object),
        "job_id": job_ids[k], "notification_id": jobs["notification_id"][k],
        "created_at": np.where(second, last[k], first[k]),
        "status": np.where(second, np.where(detail_failed, "Failed", "Success"), "Pending"),
        "source": np.full(2 * m, "Internal"), "detail": np.full(2 * m, "Message sent"),
        "provider_id": jobs["provider_id"][k], "is_retry": np.zeros(2 * m, bool),
        "is_test": np.zeros(2 * m, bool),
        "raw": np.where(detail_failed, '{"code": 30003, "message": "Unreachable"}', None),
        "error_text": np.where(detail_failed, "Unreachable destination handset", None),
        "error_code": np.where(detail_failed, "30003", None), "channel": channel[k],
    }  # fmt: skip
    notifications["failed_job_count"] = np.bincount(parent, weights=failed, minlength=n).astype(int)
    notifications["status"] = np.where(notifications["failed_job_count"] > 0, "failed", "sent")
    return [
        _table(name, columns)
        for name, columns in zip(layout.TABLES, (notifications, jobs, details), strict=True)
    ]


def _table(name: str, columns: dict) -> pa.Table:
    schema = layout.arrow_schema(name)
    arrays = []
    for field in schema:
        values = columns[field.name]
        if pa.types.is_timestamp(field.type):
            arrays.append(pa.array(values.astype("datetime64[us]")).cast(field.type))
        elif pa.types.is_dictionary(field.type):
            arrays.append(pa.array(np.asarray(values, dtype=object), pa.string()).dictionary_encode().cast(field.type))  # fmt: skip
        else:
            arrays.append(pa.array(list(values) if pa.types.is_list(field.type) else values, field.type))  # fmt: skip
    return pa.Table.from_arrays(arrays, schema=schema)


def report_from_store(path: Path, out: Path) -> tuple[float, float]:
    """Seconds and peak RSS (MB) of ``python -m toolkit report --store`` run as a user runs it."""
    command = [sys.executable, "-m", "toolkit", "report", "--store", str(path), "--since", "90d",
               "--out", str(out)]  # fmt: skip
    with tempfile.TemporaryFile("w+") as log:
        started = time.perf_counter()
        child = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(child.pid, 0)  # this child's own resource usage
        seconds = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode:
            log.seek(0)
            raise RuntimeError(log.read()[-2000:])
    return seconds, usage.ru_maxrss / 1024


def bench_scale() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        small, big = Path(tmp) / "small", Path(tmp) / "big"
        generate_store(small, BIG // 10)
        small_seconds, small_rss = report_from_store(small, Path(tmp) / "small.html")
        generated, _ = timed(lambda: generate_store(big, BIG))
        seconds, rss = report_from_store(big, Path(tmp) / "big.html")
        size = sum(p.stat().st_size for p in big.rglob("*.parquet"))
        print(f"(c) generated store: {BIG:,} notifications in {generated:.0f} s")
        line("report --store 2,000,000: seconds (vs 200,000)", f"{seconds:.1f} s",
             f"{small_seconds:.1f} s", seconds / small_seconds, "< 60 s")  # fmt: skip
        line("report --store 2,000,000: peak MB (vs 200,000)", f"{rss:,.0f} MB",
             f"{small_rss:,.0f} MB", rss / small_rss, "< 1,500 MB")  # fmt: skip
        print(f"{'size on disk per notification':<46} {size / BIG:>14.0f} B  (jobs and details included)")  # fmt: skip


if __name__ == "__main__":
    parts = sys.argv[1:] or ["sync", "scale"]
    if "sync" in parts or "deep" in parts:
        bench_sync_and_deep()
    if "scale" in parts:
        bench_scale()
