"""`Store`: read a store as `read_activity` frames, query it with SQL (DuckDB), or load only what
the measures of `toolkit.metrics` need, reduced in DuckDB.

>>> store = toolkit.open_store("activity")
>>> store.read(after="24h", channels="sms")          # an Activity, as read_activity gives it
>>> store.sql("SELECT provider_id, count(*) FROM jobs GROUP BY 1")
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from toolkit._version import __version__
from toolkit.engines import check_engine, relations
from toolkit.errors import STORE_REPAIR, ParameterError, StoreError
from toolkit.frames import Activity
from toolkit.store import layout
from toolkit.store.filters import FILTER_COLUMNS, FILTERS, check_filters, filter_mask
from toolkit.store.state import State
from toolkit.timeutil import resolve_window, to_iso

__all__ = ["Store", "open_store", "read_file"]


def open_store(path: str | Path, *, engine: Any = None) -> Store:
    """The store at ``path`` (made by `toolkit.sync`), queried by ``engine``: ``"duckdb"`` (the
    default, embedded), ``"spark"`` (``SparkSession.builder.getOrCreate()``) or a
    ``pyspark.sql.SparkSession`` (local disk, HDFS or S3 paths, as Spark reads them).

    Raises
    ------
    ParameterError
        ``path`` is not a store, or ``engine`` is unknown, stopped, or needs PySpark or Java.
    """
    return Store(path, engine=engine)


class Store:
    """A store of activity on disk (see `toolkit.store.layout`), read-only.

    Attributes
    ----------
    path : Path
        Its directory.
    window : tuple of pandas.Timestamp
        ``(after, watermark)``: every notification created in it is held.
    watermark : pandas.Timestamp or None
        Everything created up to it has been read; later syncs start from it.
    source : str
        The service and environment it was synced from.
    filters : dict
        The filters of its syncs.
    engine : str or SparkSession
        What counts it (`toolkit.engines`): ``"duckdb"`` or a SparkSession.
    """

    def __init__(self, path: str | Path, *, engine: Any = None):
        self.path = Path(path).expanduser()
        self.engine = check_engine(engine)
        state = State.load(self.path) if self.path.is_dir() else None
        if state is None:
            raise ParameterError("path", str(path), "a store made by toolkit.sync (a directory with a state.json)")  # fmt: skip
        self._state = state

    @property
    def window(self) -> tuple[pd.Timestamp | None, pd.Timestamp | None]:
        return _stamp(self._state.after), _stamp(self._state.watermark)

    @property
    def watermark(self) -> pd.Timestamp | None:
        return _stamp(self._state.watermark)

    @property
    def source(self) -> str:
        return self._state.source()

    @property
    def filters(self) -> dict[str, Any]:
        return dict(self._state.filters)

    @property
    def engine_name(self) -> str:
        """``"duckdb"`` or ``"spark"``."""
        return "duckdb" if self.engine == "duckdb" else "spark"

    def refresh(self) -> Store:
        """Re-read the state (after a sync by another process)."""
        self.__init__(self.path, engine=self.engine)
        return self

    def __repr__(self) -> str:
        try:
            rows = self._check_files()
        except StoreError as error:  # shown, not raised: a notebook shows what to do
            return f"<Store {self.path}: {error}>"
        size = sum(p.stat().st_size for files in rows.values() for p in files)
        notifications = sum(rows["notifications"].values())
        after, watermark = self.window
        window = "empty" if watermark is None else f"{to_iso(after)} to {to_iso(watermark)}"
        filters = f", filters {self.filters}" if self.filters else ""
        return (
            f"<Store {self.path}: {notifications:,} notifications, {size / 1e6:,.1f} MB,"
            f" window {window}, source {self.source}{filters}>"
        )

    def _check_files(self) -> dict[str, dict[Path, int]]:
        """Each table's files and their rows, from their footers; `StoreError` naming the first
        file that is damaged or not the store's."""
        return {
            table: {
                path: check_file(path) for path in sorted((self.path / table).glob("*/*.parquet"))
            }  # fmt: skip
            for table in layout.TABLES
        }

    # -- reading -------------------------------------------------------------------------------

    def read(
        self,
        after: str | datetime | None = None,
        before: str | datetime | None = None,
        *,
        columns: Mapping[str, Iterable[str]] | None = None,
        limit: int | None = None,
        **filters: Any,
    ) -> Activity:
        """The notifications of a window as `read_activity` gives them (rows, columns, dtypes).

        Parameters
        ----------
        after, before : str or datetime, optional
            Within the store's `window` (default: all of it); ``"24h"`` counts back from the
            watermark.
        columns : dict, optional
            Only these columns of each frame (``{"jobs": [...], ...}``, such as
            `toolkit.metrics.REQUIRED_COLUMNS`); a frame not named keeps every column.
        limit : int, optional
            The newest ``limit`` notifications only.
        **filters
            The filters of `read_activity` (``channels``, ``severity``, ...).

        Raises
        ------
        ParameterError
            A bad filter, or a window outside the store's.
        StoreError
            A damaged file (named, with how to repair it).
        """
        start, end, filters = self._window(after, before, filters)
        if limit is not None and (
            isinstance(limit, bool) or not isinstance(limit, int) or limit < 1
        ):
            raise ParameterError("limit", limit, "an integer >= 1")  # fmt: skip
        wanted = {t: None if columns is None or t not in columns else list(columns[t]) for t in layout.TABLES}  # fmt: skip
        days = self._days(start, end)
        notifications = self._notifications(start, end, filters, wanted["notifications"], limit)
        ids = notifications["notification_id"]
        provenance = self._provenance(filters, start, end)
        frames = []
        for table in layout.TABLES:  # one table at a time: its Arrow copy is freed once converted
            if table == "notifications":
                rows = notifications
            else:
                needed = wanted[table]
                if needed is not None:
                    needed = list(dict.fromkeys(["notification_id", *needed]))
                rows = _concat(
                    [read_file(layout.day_path(self.path, table, d), needed) for d in days],
                    table,
                    needed,
                )
                rows = _keep(rows, pc.is_in(rows["notification_id"], ids))
            spec = layout.SPECS[table]
            if wanted[table] is not None:
                spec = tuple(c for c in spec if c.name in wanted[table])
            frame = layout.frame_from_arrow(rows, spec)
            del rows
            frame.attrs = dict(provenance)
            frames.append(frame)
        return Activity(*frames)

    def read_for_metrics(
        self,
        after: str | datetime | None = None,
        before: str | datetime | None = None,
        *,
        columns: Mapping[str, Iterable[str]] | None = None,
        **filters: Any,
    ) -> Activity:
        """What `toolkit.metrics` needs of a window, and nothing more, for very large stores.

        Each frame has only its `toolkit.metrics.REQUIRED_COLUMNS` (and the notifications' and
        jobs' ``columns`` named); jobs and execution details are selected in DuckDB, and the
        execution details are reduced there to each job's first ``Success`` and its ``Failed``
        ones (their payloads are the incidents' examples): all that the measures read of them.
        """
        from toolkit.metrics import REQUIRED_COLUMNS

        start, end, filters = self._window(after, before, filters)
        wanted = {
            table: list(dict.fromkeys([*REQUIRED_COLUMNS[table], *(columns or {}).get(table, ())]))
            for table in ("notifications", "jobs")
        }
        notifications = self._notifications(start, end, filters, wanted["notifications"])
        provenance = self._provenance(filters, start, end)
        files = self._files(start, end)
        with _duckdb(notifications, memory_limit="1GB") as con:
            jobs = _query(
                con,
                f"SELECT {', '.join(wanted['jobs'])} FROM read_parquet($1, filename = true,"
                f" file_row_number = true) WHERE {_CHOSEN} ORDER BY filename DESC, file_row_number",
                files["jobs"],
                layout.arrow_schema("jobs", wanted["jobs"]),
            )
            details = _query(
                con,
                _reduced_details(),
                files["execution_details"],
                layout.arrow_schema("execution_details", REQUIRED_COLUMNS["execution_details"]),
            )
        notifications = notifications.select(wanted["notifications"])
        frames = [_frame(rows, table) for table, rows in zip(layout.TABLES, (notifications, jobs, details), strict=True)]  # fmt: skip
        for frame in frames:
            frame.attrs = dict(provenance)
        return Activity(*frames)

    def detail_counts(
        self,
        after: str | datetime | None = None,
        before: str | datetime | None = None,
        *,
        freq: str = "1h",
        **filters: Any,
    ) -> pd.DataFrame:
        """`toolkit.metrics.detail_counts` of a window's execution details (of the notifications
        matching ``filters``), counted by the store's engine: what the status charts draw,
        without loading the details (`toolkit.counts.detail_counts`)."""
        from toolkit.counts import detail_counts

        return detail_counts(_Selection(self, check_filters(filters, allowed=FILTERS)), after=after, before=before, freq=freq)  # fmt: skip

    def report(
        self,
        since: str | datetime = "7d",
        until: str | datetime | None = None,
        *,
        out: str | Path = "delivery-report.html",
        top: int = 10,
        **filters: Any,
    ):
        """The HTML delivery report (`toolkit.report`) of a window of the store; ``since`` and
        ``until`` count back from the watermark. The previous period is compared when the store
        holds it; its headline is counted by the engine, without reading its rows. The same
        report as from every row.
        """
        from toolkit.errors import RetentionError
        from toolkit.report import Window, report_window

        first, watermark = self.window
        filters = check_filters(filters, allowed=FILTERS)

        def read(after: datetime, before: datetime):
            if first is not None and after < first:
                raise RetentionError(
                    "READ", str(self.path), None, f"the store holds activity from {to_iso(first)}",
                    earliest=first,
                )  # fmt: skip
            self._window(after, before, filters)
            return Window(_Selection(self, filters), after, before)

        source = {"base_url": self._state.service or self._state.base_url,
                  "environment": self._state.environment,
                  "store": str(self.path), "engine": self.engine_name}  # fmt: skip
        if watermark is None:
            raise ParameterError("store", str(self.path), "a store with data: run sync first")
        return report_window(read, now=watermark, since=since, until=until, out=out,
                             source=source, filters=filters, top=top)  # fmt: skip

    def report_period(
        self,
        after: str | datetime | None = None,
        before: str | datetime | None = None,
        **filters: Any,
    ):
        """What `toolkit.report` needs of a window (`toolkit.report.period_of`), computed by the
        store's engine."""
        from toolkit.report import period_of

        start, end, filters = self._window(after, before, filters)
        return period_of(_Selection(self, filters), start, end)

    def sql(self, query: str) -> pd.DataFrame:
        """Run a DuckDB query over the views ``notifications``, ``jobs`` and
        ``execution_details`` (each with its ``created_date`` partition key).

        Raises
        ------
        StoreError
            A file of the store is damaged or not the store's (named, with what to do).
        """
        import duckdb

        try:
            return self._sql(query)
        except (duckdb.Error, StoreError):
            self._check_files()  # a damaged file is the cause: named
            raise

    def _sql(self, query: str) -> pd.DataFrame:
        with _duckdb() as con:
            for table in layout.TABLES:
                # the files named, not a pattern: a store path may hold [ * ? (not globs)
                files = sorted(str(p) for p in (self.path / table).glob("*/*.parquet"))
                if files:
                    listed = ", ".join(f"'{_quoted(file)}'" for file in files)
                    con.execute(
                        f"CREATE VIEW {table} AS SELECT * FROM read_parquet([{listed}],"
                        " hive_partitioning = true, hive_types_autocast = false)"
                    )
                else:
                    empty = layout.arrow_schema(table).append(pa.field(layout.PARTITION, pa.string()))  # fmt: skip
                    con.register(f"_{table}", empty.empty_table())
                    con.execute(f"CREATE VIEW {table} AS SELECT * FROM _{table}")
            return con.execute(query).df()

    # -- helpers -------------------------------------------------------------------------------

    def _bounds(self, after, before) -> tuple[pd.Timestamp, pd.Timestamp]:
        """The window asked of the store's relations (`toolkit.counts`)."""
        start, end, _ = self._window(after, before, {})
        return pd.Timestamp(start), pd.Timestamp(end)

    def _relations(self, start, end, filters=None):
        """The store's tables on its engine: the window's partition files on DuckDB (its
        notifications matching ``filters`` only, when given), the window's partitions on Spark."""
        files = self._files(start, end)
        for path in (path for paths in files.values() for path in paths):
            check_file(Path(path))  # a damaged or foreign file is named, from its footer
        jobs = files["jobs"]
        stored = bool(jobs) and not filters and all(current_layout(Path(p)) for p in jobs)
        if self.engine == "duckdb":
            chosen = self._notifications(start, end, filters, []) if filters else None
            return relations(None, files=files, chosen=chosen, facts_stored=stored)
        if filters:
            raise ParameterError("filters", sorted(filters), "none on Spark (count the whole window)")  # fmt: skip
        days = (start.strftime("%Y-%m-%d"), end.strftime("%Y-%m-%d"))
        return relations(None, engine=self.engine, root=str(self.path), days=days, facts_stored=stored)  # fmt: skip

    def _window(self, after, before, filters):
        filters = check_filters(filters, allowed=FILTERS)
        first, watermark = self.window
        if watermark is None:
            raise ParameterError("store", str(self.path), "a store with data: run sync first")
        start, end = resolve_window(after, before, now=watermark)
        start = first if start is None else start
        if start < first or end > watermark:
            raise ParameterError(
                "after" if start < first else "before",
                to_iso(start if start < first else end),
                f"a time within the store's window, {to_iso(first)} to {to_iso(watermark)}"
                " (sync with an earlier since, or again, to widen it)",
            )
        return start, end, filters

    def _notifications(self, start, end, filters, columns, limit=None) -> pa.Table:
        """The notifications of a window matching ``filters`` (only ``columns``, the ids and
        times, when given), newest first."""
        needed = None
        if columns is not None:
            used = [FILTER_COLUMNS[name] for name in filters]
            needed = list(dict.fromkeys(["notification_id", "created_at", *columns, *used]))
        days = self._days(start, end)
        notifications = _concat(
            [read_file(layout.day_path(self.path, "notifications", d), needed) for d in days],
            "notifications",
            needed,
        )
        notifications = _keep(notifications, _in_window(notifications, start, end))
        mask = filter_mask(notifications, filters)
        if mask is not None:
            notifications = _keep(notifications, mask)
        return notifications if limit is None else notifications.slice(0, limit)

    def _files(self, start, end) -> dict[str, list[str]]:
        """The partition files of the window's days, by table."""
        days = self._days(start, end)
        return {t: [str(layout.day_path(self.path, t, d)) for d in days] for t in layout.TABLES}

    def _days(self, start, end) -> list[str]:
        held = layout.days_held(self.path)
        low, high = start.strftime("%Y-%m-%d"), end.strftime("%Y-%m-%d")
        return sorted((day for day in held if low <= day <= high), reverse=True)

    def _provenance(self, filters, start, end) -> dict[str, Any]:
        return {
            "operation": "store",
            "store": str(self.path),
            "base_url": self._state.base_url,
            "environment": self._state.environment,
            "filters": {**self._state.filters, **filters},
            "after": to_iso(start),
            "before": to_iso(end),
            "fetched_at": self._state.synced_at,
            "toolkit_version": __version__,
        }


@dataclass(frozen=True)
class _Selection:
    """A store's notifications matching ``filters``, as a source of `toolkit.counts`."""

    store: Store
    filters: dict[str, Any]

    def _bounds(self, after, before):
        return self.store._bounds(after, before)

    def _relations(self, start, end):
        return self.store._relations(start, end, self.filters)


def read_file(path: Path, columns: list[str] | None = None) -> pa.Table:
    """One partition file, or `StoreError` naming it and how to repair it."""
    try:
        table = pq.read_table(path, columns=columns)
    except (pa.ArrowInvalid, OSError) as error:
        raise damaged(path, str(error)) from None
    wanted = layout.arrow_schema(path.parent.parent.name, columns).names
    added = layout.ADDED_COLUMNS.get(path.parent.parent.name, frozenset())
    missing = sorted(set(wanted) - set(table.column_names) - added)
    if missing:
        raise damaged(path, f"not a file of this store: no {', '.join(missing[:3])}")
    return table


def check_file(path: Path) -> int:
    """The rows of a partition file, from its footer; `StoreError` if it is damaged or not a
    file of the store (its table's columns missing)."""
    return _footer(path)[0]


def current_layout(path: Path) -> bool:
    """Whether a partition file has today's layout (`layout.ADDED_COLUMNS` present)."""
    return layout.ADDED_COLUMNS.get(path.parent.parent.name, frozenset()) <= _footer(path)[1]


def _footer(path: Path) -> tuple[int, frozenset[str]]:
    """A file's rows and columns, checked (`check_file`): read once per version of the file."""
    try:
        stat = path.stat()
    except OSError as error:
        raise damaged(path, str(error)) from None
    return _read_footer(str(path), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=4096)
def _read_footer(name: str, mtime_ns: int, size: int) -> tuple[int, frozenset[str]]:
    path = Path(name)
    try:
        metadata = pq.read_metadata(path)
    except (pa.ArrowInvalid, OSError) as error:
        raise damaged(path, str(error)) from None
    table = path.parent.parent.name
    present = frozenset(metadata.schema.to_arrow_schema().names)
    missing = sorted(set(layout.arrow_schema(table).names) - present - layout.ADDED_COLUMNS.get(table, frozenset()))  # fmt: skip
    if missing:
        raise damaged(path, f"not a file of this store: no {', '.join(missing[:3])}")
    return metadata.num_rows, present


def damaged(path: Path, why: str) -> StoreError:
    """The error of a damaged partition file: named, with how to repair it without losing a
    day that cannot be read again."""
    day = path.parent.name.split("=", 1)[-1]
    return StoreError(
        f"{path} is damaged or truncated ({why[:200]}): move it out of the store (keep a copy if"
        f" {day} is older than the plan's retention: it cannot be read again) and run sync again"
        f" (python -m toolkit sync --store {path.parent.parent.parent}) to re-read {day}"
    )


def _frame(table: pa.Table, name: str) -> pd.DataFrame:
    """``table`` as the frame of ``name`` (its columns only)."""
    spec = [column for column in layout.SPECS[name] if column.name in table.column_names]
    return layout.frame_from_arrow(table, spec)


def _concat(tables: list[pa.Table], table: str, columns: list[str] | None) -> pa.Table:
    if not tables:
        return layout.arrow_schema(table, columns).empty_table()
    return pa.concat_tables(tables).unify_dictionaries()


def _keep(table: pa.Table, mask) -> pa.Table:
    """The rows of ``table`` where ``mask`` holds (``table`` itself when all do: no copy)."""
    return table if pc.all(mask).as_py() is not False and len(table) else table.filter(mask)


def _in_window(notifications: pa.Table, start, end) -> pa.ChunkedArray:
    times = notifications["created_at"]
    low, high = pa.scalar(start, times.type), pa.scalar(end, times.type)
    return pc.and_(pc.greater_equal(times, low), pc.less_equal(times, high))


_CHOSEN = "notification_id IN (SELECT notification_id FROM selected)"


@contextmanager
def _duckdb(selected: pa.Table | None = None, **config: str):
    """A DuckDB connection on UTC, where ``selected`` holds the ids of the notifications that
    `_CHOSEN` keeps; a damaged file becomes a `StoreError` saying how to repair it."""
    import duckdb

    with duckdb.connect(config=config) as con:
        con.execute("SET TimeZone = 'UTC'")
        if selected is not None:
            con.register("selected", selected.select(["notification_id"]))
        try:
            yield con
        except (duckdb.IOException, duckdb.InvalidInputException) as error:
            raise StoreError(f"{str(error)[:300]}: {STORE_REPAIR}") from None


def _reduced_details() -> str:
    """Each job's first Success, and its Failed details whole, in time order."""
    from toolkit.metrics import REQUIRED_COLUMNS

    columns = REQUIRED_COLUMNS["execution_details"]
    first = {"job_id": "job_id", "notification_id": "any_value(notification_id)",
             "status": "'Success'", "created_at": "min(created_at)"}  # fmt: skip
    success = ", ".join(f"{first.get(c, 'CAST(NULL AS VARCHAR)')} AS {c}" for c in columns)
    return (
        f"SELECT {success} FROM read_parquet($1) WHERE status = 'Success' AND {_CHOSEN}"
        f" GROUP BY job_id UNION ALL SELECT {', '.join(columns)} FROM read_parquet($1)"
        f" WHERE status = 'Failed' AND {_CHOSEN} ORDER BY created_at, job_id"
    )


def _query(con, sql: str, files: list[str], schema: pa.Schema) -> pa.Table:
    """``sql`` over ``files`` (its ``$1``), as an Arrow table of ``schema`` (empty without files)."""
    import duckdb

    if not files:
        return schema.empty_table()
    try:
        return con.sql(sql, params=[files]).to_arrow_table()
    except duckdb.Error:
        for file in files:  # a damaged file is the cause: named
            check_file(Path(file))
        raise


def _quoted(text: str) -> str:
    return text.replace("'", "''")


def _stamp(value: str | None) -> pd.Timestamp | None:
    return None if value is None else pd.Timestamp(value)
