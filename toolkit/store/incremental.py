"""`sync`: keep a window of activity current in a store, incrementally and crash-safely.

A run pins ``before`` (the service's now) at its start, then reads, day by day:

- the first run: ``[since, before]``;
- later runs: ``[watermark - lag, before]`` (notifications whose jobs may still change), plus
  ``[since, after)`` when ``since`` reaches further back than the store, plus any day of the
  window whose files are missing (deleted to repair them).

Each day is read as time slices small enough that no request pages deep (`Client.list_activity`
slices a window: `toolkit.pagination.read_sliced`), merged
into the day's files (the rows of the day's range replaced: an upsert by id), written aside and
renamed into place, then recorded in the checkpoint. The watermark moves only once every day is
written. A run killed at any moment resumes from the checkpoint and ends with the store a clean
run gives.
"""

from __future__ import annotations

import shutil
import warnings
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from toolkit.errors import ParameterError, RetentionError
from toolkit.frames import activity_frames
from toolkit.store import layout
from toolkit.store.filters import check_filters
from toolkit.store.state import (
    STATE_FILE,
    Checkpoint,
    State,
    StoreError,
    check_directory,
    writer_lock,
)
from toolkit.timeutil import parse_duration, parse_time, resolve_window, to_iso

__all__ = ["SyncResult", "persist", "sync", "upgrade"]

#: Days read at once.
DAYS_AT_ONCE = 4
_MS = timedelta(milliseconds=1)


@dataclass(frozen=True)
class SyncResult:
    """What a `sync` run did.

    Attributes
    ----------
    store : str
        The store's path.
    after, before : pandas.Timestamp
        The window this run read (``before`` pinned at its start).
    added, updated, unchanged : int
        Notifications new to the store, re-read and changed (status, jobs, ...), re-read as held.
    days : int
        Day partitions written.
    resumed : bool
        The run finished a sync that had been interrupted.
    upgraded : int
        Days held in an older layout that this run rewrote in today's (`upgrade`).
    """

    store: str
    after: pd.Timestamp | None
    before: pd.Timestamp | None
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    days: int = 0
    resumed: bool = False
    upgraded: int = 0

    def __str__(self) -> str:
        upgraded = (
            f"\n{self.store}: upgraded {self.upgraded} day(s) written by an older version to"
            " today's layout (jobs keep their workflow and delivery facts; rows unchanged)"
        ) if self.upgraded else ""  # fmt: skip
        if self.before is None:
            return f"{self.store}: already current, nothing read{upgraded}"
        resumed = " (finished an interrupted sync)" if self.resumed else ""
        return (
            f"{self.store}: read {to_iso(self.after)} to {to_iso(self.before)}{resumed}:"
            f" {self.added:,} added, {self.updated:,} updated, {self.unchanged:,} unchanged,"
            f" {self.days} day(s) written{upgraded}"
        )


def sync(
    client: Any,
    store: str | Path,
    *,
    since: str | datetime | None = None,
    lag: str | timedelta = "1h",
    allow_source_change: bool = False,
    progress: bool | None = None,
    **filters: Any,
) -> SyncResult:
    """Bring the store at ``store`` up to the service's now (create it on the first run).

    Parameters
    ----------
    client : Client
        The service to read from.
    store : str or Path
        The store's directory (new or empty on the first run).
    since : str or datetime, optional
        The window's start: ``"7d"`` (before now), an ISO time or a datetime; default ``"7d"``
        for a new store, else the store's own start (a later run keeps the window). An earlier
        start than the store's reads the added range.
    lag : str or timedelta
        How far before the watermark each run reads again, for notifications still changing:
        sends settle in minutes; digests and delays take as long as their step (see README).
    allow_source_change : bool
        Accept a client of another service or environment than the store's (its data is mixed).
    progress : bool, optional
        Show a progress bar over the days (default: the client's setting).
    **filters
        Server-side filters of `toolkit.read_activity` (``channels``, ``severity``, ...); every
        run of a store must use the same ones.

    Returns
    -------
    SyncResult

    Raises
    ------
    ParameterError
        Bad arguments, a path that cannot be a store, another source or other filters than the
        store's, or ``since`` beyond the plan's retention; nothing is written.
    StoreLockedError
        Another sync is writing to the store.
    """
    root = Path(store).expanduser()
    filters = check_filters(filters)
    if not isinstance(allow_source_change, bool):
        raise ParameterError("allow_source_change", allow_source_change, "True or False")
    check_directory(root)
    state = State.load(root) if root.is_dir() else None
    if state is not None:
        _check_same(state, client, filters, allow_source_change)
    now = client.now()
    lag = parse_duration(lag, name="lag")
    if since is None and state is not None and state.after is not None:
        start, before = min(state.time("after"), now), now  # the store's window, kept
    else:
        since = "7d" if since is None else since
        start, before = resolve_window(since, None, now=now, after_name="since")
        _check_retention(client, since, start, before, filters)
    now = before = min(before, client.now())  # the service's Date, known once it answered
    show = client.progress if progress is None else progress

    root.mkdir(parents=True, exist_ok=True)
    with writer_lock(root):
        _remove_leftovers(root)
        state = State.load(root)
        if state is None:
            state = State(client.base_url, client.environment, filters)
        state.adopt(client)
        state.save(root)
        _clamp_watermark(root, state, now)
        upgraded = upgrade(root)
        counts = [0, 0, 0, 0]
        checkpoint = Checkpoint.load(root)
        resumed = checkpoint is not None
        if checkpoint is not None:
            _run(client, root, state, checkpoint, counts, show, allow_source_change)
        checkpoint = _plan(root, state, start, before, lag)
        _run(client, root, state, checkpoint, counts, show, allow_source_change)
        state.synced_at = to_iso(now)
        state.save(root)
    added, updated, unchanged, days = counts
    return SyncResult(
        str(root),
        pd.Timestamp(checkpoint.start),
        pd.Timestamp(checkpoint.before),
        added,
        updated,
        unchanged,
        days,
        resumed,
        upgraded,
    )


# -- a run -------------------------------------------------------------------------------------


def _plan(
    root: Path, state: State, start: datetime, before: datetime, lag: timedelta
) -> Checkpoint:
    """The days to read and each day's range, saved as the run's checkpoint."""
    after, watermark = state.time("after"), state.time("watermark")
    ranges = []
    if watermark is None:
        ranges.append((start, before))
    else:
        ranges.append((min(watermark - lag, before), before))
        if start < after:
            ranges.append((start, after))
        held = layout.days_held(root)
        for day in _days(after, watermark):
            if day not in held:
                ranges.append((max(after, _day_start(day)), min(watermark, _day_end(day))))
    pieces: dict[str, list[datetime]] = {}
    for low, high in ranges:
        for day in _days(low, high):
            piece = [max(low, _day_start(day)), min(high, _day_end(day))]
            if day in pieces:
                piece = [min(piece[0], pieces[day][0]), max(piece[1], pieces[day][1])]
            pieces[day] = piece
    run_start = min(start if watermark is None else min(ranges)[0], before)
    checkpoint = Checkpoint(
        to_iso(run_start),
        to_iso(before),
        {day: [to_iso(low), to_iso(high)] for day, (low, high) in sorted(pieces.items())},
    )
    checkpoint.save(root)
    return checkpoint


def _run(client, root, state, checkpoint, counts, show, allow_source_change) -> None:
    """Read and write the checkpoint's days not yet done, then move the window."""
    todo = [day for day in sorted(checkpoint.days, reverse=True) if day not in checkpoint.done]
    workers = max(1, client.workers // DAYS_AT_ONCE)
    bar = _bar(show, len(checkpoint.days), len(checkpoint.days) - len(todo))
    pool = ThreadPoolExecutor(DAYS_AT_ONCE, thread_name_prefix="toolkit-sync")
    try:
        for day, records in _in_turn(pool, todo, client, checkpoint, state.filters, workers):
            low, high = (parse_time(t) for t in checkpoint.days[day])
            written = _merge(root, day, low, high, records, state, allow_source_change)
            layout.write_day(root, day, written[0])
            counts[:3] = [c + n for c, n in zip(counts, written[1], strict=False)]
            counts[3] += 1
            checkpoint.done.append(day)
            checkpoint.save(root)
            if bar is not None:
                bar.update()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        if bar is not None:
            bar.close()
    _widen(state, parse_time(checkpoint.start), parse_time(checkpoint.before))
    state.save(root)
    Checkpoint.clear(root)


def persist(
    store: str | Path, start: datetime, end: datetime, records: list[dict[str, Any]]
) -> None:
    """Write the records a caller read of ``[start, end]`` into a store that `sync` made, as a
    sync run would (a Monitor's polls). The window grows to ``end`` only when ``start`` is not
    after the watermark (no gap).

    Raises
    ------
    StoreLockedError
        A sync is writing to the store.
    """
    root = Path(store)
    with writer_lock(root):
        state = State.load(root)
        if state is None:
            raise StoreError(f"{root} is not a store: run sync first")
        by_day: dict[str, list[dict[str, Any]]] = {day: [] for day in _days(start, end)}
        for record in records:
            by_day.setdefault(parse_time(record["createdAt"]).strftime("%Y-%m-%d"), []).append(
                record
            )
        for day, chunk in by_day.items():
            low, high = max(start, _day_start(day)), min(end, _day_end(day))
            layout.write_day(root, day, _merge(root, day, low, high, chunk, state, False)[0])
        watermark = state.time("watermark")
        if watermark is not None and start <= watermark:
            _widen(state, start, end)
        state.save(root)


def _clamp_watermark(root: Path, state: State, now: datetime) -> None:
    """A watermark after the service's now (clock skew, an edited ``state.json``) would skip
    what is created until then: it is moved back to the last sync (or now), with a warning."""
    watermark = state.time("watermark")
    if watermark is None or watermark <= now:
        return
    synced = state.time("synced_at")
    clamped = min(now, synced) if synced is not None else now
    warnings.warn(
        f"{root / STATE_FILE}: the watermark {to_iso(watermark)} is after the service's now"
        f" {to_iso(now)} (clock skew, or an edited file); moved back to {to_iso(clamped)}, and"
        " read again from there",
        stacklevel=3,
    )
    state.watermark = to_iso(clamped)
    state.save(root)


def _widen(state: State, start: datetime, end: datetime) -> None:
    """Move the store's window to cover ``[start, end]``."""
    after, watermark = state.time("after"), state.time("watermark")
    state.after = to_iso(start if after is None else min(after, start))
    state.watermark = to_iso(end if watermark is None else max(watermark, end))


def _in_turn(pool, days, client, checkpoint, filters, workers) -> Iterator[tuple[str, list]]:
    """Each day's records as their reads complete, with at most twice the pool's size held."""
    pending: dict[Future, str] = {}
    queue = list(days)
    while queue or pending:
        while queue and len(pending) < 2 * DAYS_AT_ONCE:
            day = queue.pop(0)
            low, high = (parse_time(t) for t in checkpoint.days[day])
            read = pool.submit(client.list_activity, **filters, after=low, before=high,
                               workers=workers, progress=False)  # fmt: skip
            pending[read] = day
        done, _ = wait(pending, return_when=FIRST_COMPLETED)
        for future in done:
            yield pending.pop(future), future.result()


def _merge(root, day, low, high, records, state, allow_source_change):
    """The day's three tables with ``records`` replacing the rows of ``[low, high]``, and the
    counts (added, updated, unchanged)."""
    new = [layout.table_from_frame(f, t) for f, t in zip(activity_frames(records), layout.TABLES, strict=True)]  # fmt: skip
    environments = set(pc.unique(new[0]["environment_id"]).drop_null().to_pylist())
    foreign = state.environment_ids and not environments <= set(state.environment_ids)
    if foreign and not allow_source_change:
        raise StoreError(
            f"the service returned notifications of environment(s) {sorted(environments)}"
            f" but the store holds {state.environment_ids}; nothing was written for this"
            " run's remaining days (pass allow_source_change=True to mix them)"
        )
    state.environment_ids = sorted(environments.union(state.environment_ids))
    old = _old_day(root, day)
    if old is None:
        return new, (new[0].num_rows, 0, 0)
    times = old[0]["created_at"]
    in_range = pc.and_(pc.greater_equal(times, pa.scalar(low, times.type)),
                       pc.less_equal(times, pa.scalar(high, times.type)))  # fmt: skip
    ids = new[0]["notification_id"]
    kept = old[0].filter(pc.and_(pc.invert(in_range), pc.invert(pc.is_in(old[0]["notification_id"], ids))))  # fmt: skip
    counts = _changes(old[0], new[0])
    notifications = _sorted(pa.concat_tables([new[0], kept]).unify_dictionaries())
    order = notifications["notification_id"]
    tables = [notifications]
    for fresh, held in zip(new[1:], old[1:], strict=True):
        held = held.filter(pc.is_in(held["notification_id"], kept["notification_id"]))
        both = pa.concat_tables([fresh, held]).unify_dictionaries()
        rank = pc.index_in(both["notification_id"], order)
        tables.append(both.take(pc.sort_indices(rank)))
    return tables, counts


def _changes(old: pa.Table, new: pa.Table) -> tuple[int, int, int]:
    """(added, updated, unchanged) notifications of ``new`` against ``old``."""
    columns = ["notification_id", "status", "updated_at", "job_count", "failed_job_count"]
    before = {row[0]: row for row in zip(*(old[c].to_pylist() for c in columns), strict=True)}
    added = updated = 0
    for row in zip(*(new[c].to_pylist() for c in columns), strict=True):
        held = before.get(row[0])
        added += held is None
        updated += held is not None and held != row
    return added, updated, new.num_rows - added - updated


def _sorted(notifications: pa.Table) -> pa.Table:
    """Feed order: newest first, then by id descending."""
    keys = [("created_at", "descending"), ("notification_id", "descending")]
    return notifications.take(pc.sort_indices(notifications, sort_keys=keys))


def _old_day(root: Path, day: str) -> list[pa.Table] | None:
    """The day's three tables as held, in the frames' columns (without the jobs' facts)."""
    from toolkit.store.reader import read_file

    paths = [layout.day_path(root, table, day) for table in layout.TABLES]
    if not all(path.exists() for path in paths):
        return None
    tables = [read_file(path) for path in paths]
    return [table.select(layout.arrow_schema(name).names) for name, table in zip(layout.TABLES, tables, strict=True)]  # fmt: skip


def upgrade(root: Path) -> int:
    """Rewrite the days held in an older layout (jobs without their workflow or delivery facts,
    `layout.ADDED_COLUMNS`) in today's, rows unchanged; the number of days rewritten."""
    from toolkit.store.reader import current_layout, read_file

    upgraded = 0
    for day in sorted(layout.days_held(root)):
        if current_layout(layout.day_path(root, "jobs", day)):  # a damaged file is named
            continue
        notifications, jobs, details = (read_file(layout.day_path(root, t, day)) for t in layout.TABLES)  # fmt: skip
        if "workflow" not in jobs.column_names:  # a job's workflow: its notification's
            ids = pc.index_in(jobs["notification_id"], notifications["notification_id"])
            jobs = jobs.append_column("workflow", notifications["workflow_identifier"].take(ids))
        layout.write_day(root, day, [notifications, jobs.select(layout.arrow_schema("jobs").names), details])  # fmt: skip
        upgraded += 1
    return upgraded


# -- checks ------------------------------------------------------------------------------------


def _check_same(state: State, client: Any, filters: dict[str, Any], allow: bool) -> None:
    if not allow and not state.same_source(client):
        raise ParameterError(
            "client",
            f"{client.source} ({client.environment})",
            f"a client of the store's source {state.source()}, or allow_source_change=True"
            " (--allow-source-change) to mix another service's data into it",
        )
    if filters != state.filters:
        raise ParameterError(
            "filters",
            filters or "none",
            f"the store's filters ({state.filters or 'none'}): a store holds one selection;"
            " use another store for other filters",
        )


def _check_retention(client, since, start, before, filters) -> None:
    """One small request: a window beyond the plan's retention is refused before any write."""
    try:
        client.list_activity(**filters, after=start, before=before, limit=1, progress=False)
    except RetentionError as error:
        earliest = f" (the earliest is {to_iso(error.earliest)})" if error.earliest else ""
        raise ParameterError(
            "since",
            since,
            f"a start within the plan's retention{earliest}: pass a later --since / since=;"
            " the store keeps what it already holds beyond it",
        ) from None


def _remove_leftovers(root: Path) -> None:
    """Temporary files of a killed run (never renamed into place)."""
    for path in root.glob("**/.*.tmp"):
        path.unlink(missing_ok=True)
    for directory in root.glob("*/created_date=*"):
        if directory.is_dir() and not any(directory.iterdir()):
            shutil.rmtree(directory, ignore_errors=True)


def _days(low: datetime, high: datetime) -> list[str]:
    if low > high:
        return []
    days = pd.date_range(pd.Timestamp(low).normalize(), pd.Timestamp(high).normalize(), freq="D")
    return [day.strftime("%Y-%m-%d") for day in days]


def _day_start(day: str) -> datetime:
    return parse_time(day)


def _day_end(day: str) -> datetime:
    return parse_time(day) + timedelta(days=1) - _MS


def _bar(show: bool, total: int, done: int):
    if not show:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=done, unit=" days", desc="sync", delay=1.0)
