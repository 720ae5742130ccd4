"""`Store`: read a store as `read_activity` frames, query it with SQL (DuckDB), or load only what
the measures of `toolkit.metrics` need, reduced in DuckDB.

>>> store = toolkit.open_store("activity")
>>> store.read(after="24h", channels="sms")          # an Activity, as read_activity gives it
>>> store.sql("SELECT provider_id, count(*) FROM jobs GROUP BY 1")
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from toolkit._version import __version__
from toolkit.errors import ParameterError
from toolkit.frames import Activity
from toolkit.store import layout
from toolkit.store.filters import FILTERS, check_filters, filter_mask
from toolkit.store.state import State, StoreError
from toolkit.timeutil import resolve_window, to_iso

__all__ = ["Store", "open_store", "read_file"]


def open_store(path: str | Path) -> Store:
    """The store at ``path`` (made by `toolkit.sync`).

    Raises
    ------
    ParameterError
        ``path`` is not a store.
    """
    return Store(path)


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
    """

    def __init__(self, path: str | Path):
        self.path = Path(path).expanduser()
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

    def refresh(self) -> Store:
        """Re-read the state (after a sync by another process)."""
        self.__init__(self.path)
        return self

    def __repr__(self) -> str:
        files = [p for t in layout.TABLES for p in (self.path / t).glob("*/*.parquet")]
        size = sum(p.stat().st_size for p in files)
        notifications = sum(
            pq.read_metadata(p).num_rows for p in (self.path / "notifications").glob("*/*.parquet")
        )
        after, watermark = self.window
        window = "empty" if watermark is None else f"{to_iso(after)} to {to_iso(watermark)}"
        filters = f", filters {self.filters}" if self.filters else ""
        return (
            f"<Store {self.path}: {notifications:,} notifications, {size / 1e6:,.1f} MB,"
            f" window {window}, source {self.source}{filters}>"
        )

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
        filter_columns = ["channels", "topic_keys", "severity", "template_id", "subscriber_email",
                          "subscriber_id", "transaction_id"]  # fmt: skip
        needed = None if wanted["notifications"] is None else list(dict.fromkeys(["notification_id", "created_at", *wanted["notifications"], *filter_columns]))  # fmt: skip
        notifications = _concat(
            [read_file(layout.day_path(self.path, "notifications", d), needed) for d in days],
            "notifications",
            needed,
        )
        notifications = _keep(notifications, _in_window(notifications, start, end))
        mask = filter_mask(notifications, filters)
        if mask is not None:
            notifications = _keep(notifications, mask)
        if limit is not None:
            notifications = notifications.slice(0, limit)
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
        self, after: str | datetime | None = None, before: str | datetime | None = None,
        **filters: Any,
    ) -> Activity:  # fmt: skip
        """What `toolkit.metrics` needs of a window, and nothing more, for very large stores.

        Each frame has only its `toolkit.metrics.REQUIRED_COLUMNS`; jobs and execution details
        are selected in DuckDB, and the execution details are reduced there to each job's first
        ``Success`` and its ``Failed`` ones (their payloads are the incidents' examples): all
        that the measures read of them.
        """
        import duckdb

        from toolkit.metrics import REQUIRED_COLUMNS

        start, end, filters = self._window(after, before, filters)
        notifications = self.read(
            start, end, columns={"notifications": REQUIRED_COLUMNS["notifications"]}, **filters
        ).notifications
        days = self._days(start, end)
        selected = pa.table({"notification_id": pa.array(notifications["notification_id"])})
        files = {t: [str(layout.day_path(self.path, t, d)) for d in days] for t in layout.TABLES}
        with duckdb.connect() as con:
            con.execute("SET TimeZone = 'UTC'")
            con.register("selected", selected)
            chosen = "notification_id IN (SELECT notification_id FROM selected)"
            job_columns = ", ".join(REQUIRED_COLUMNS["jobs"])
            jobs = _query(
                con,
                f"SELECT {job_columns} FROM read_parquet(?, filename = true,"
                f" file_row_number = true) WHERE {chosen} ORDER BY filename DESC, file_row_number",
                files["jobs"],
                "jobs",
            )
            details = _query(con, _reduced_details(chosen), files["execution_details"], "execution_details")  # fmt: skip
        frames = [notifications]
        for table, rows in (("jobs", jobs), ("execution_details", details)):
            spec = tuple(c for c in layout.SPECS[table] if c.name in REQUIRED_COLUMNS[table])
            frame = layout.frame_from_arrow(rows, spec)
            frame.attrs = dict(notifications.attrs)
            frames.append(frame)
        return Activity(*frames)

    def report(
        self,
        since: str | datetime = "7d",
        until: str | datetime | None = None,
        *,
        out: str | Path = "delivery-report.html",
        top: int = 10,
        **filters: Any,
    ):
        """The HTML delivery report (`toolkit.report`) of a window of the store, reading only the
        columns the report needs; ``since``/``until`` count back from the watermark. The previous
        period is compared when the store holds it.
        """
        from toolkit.errors import RetentionError
        from toolkit.report import COLUMNS, report_window

        first, watermark = self.window
        filters = check_filters(filters, allowed=FILTERS)

        def read(after: datetime, before: datetime) -> Activity:
            if first is not None and after < first:
                raise RetentionError(
                    "READ", str(self.path), None, f"the store holds activity from {to_iso(first)}",
                    earliest=first,
                )  # fmt: skip
            return self.read(after, before, columns=COLUMNS, **filters)

        source = {"base_url": self._state.base_url, "environment": self._state.environment,
                  "store": str(self.path)}  # fmt: skip
        if watermark is None:
            raise ParameterError("store", str(self.path), "a store with data: run sync first")
        return report_window(read, now=watermark, since=since, until=until, out=out,
                             source=source, filters=filters, top=top)  # fmt: skip

    def sql(self, query: str) -> pd.DataFrame:
        """Run a DuckDB query over the views ``notifications``, ``jobs`` and
        ``execution_details`` (each with its ``created_date`` partition key)."""
        import duckdb

        with duckdb.connect() as con:
            con.execute("SET TimeZone = 'UTC'")
            for table in layout.TABLES:
                if any((self.path / table).glob("*/*.parquet")):
                    pattern = str(self.path / table / "*" / "*.parquet")
                    con.execute(
                        f"CREATE VIEW {table} AS SELECT * FROM read_parquet('{_quoted(pattern)}',"
                        " hive_partitioning = true, hive_types_autocast = false)"
                    )
                else:
                    empty = layout.arrow_schema(table).append(pa.field(layout.PARTITION, pa.string()))  # fmt: skip
                    con.register(f"_{table}", empty.empty_table())
                    con.execute(f"CREATE VIEW {table} AS SELECT * FROM _{table}")
            try:
                return con.execute(query).df()
            except duckdb.IOException as error:
                raise StoreError(f"{error}: {_REPAIR}") from None

    # -- helpers -------------------------------------------------------------------------------

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
            "after": pd.Timestamp(start),
            "before": pd.Timestamp(end),
            "fetched_at": _stamp(self._state.synced_at),
            "toolkit_version": __version__,
        }


_REPAIR = (
    "a file of the store is damaged or truncated: delete it and run sync again, which reads its"
    " day again (python -m toolkit sync --store PATH)"
)


def read_file(path: Path, columns: list[str] | None = None) -> pa.Table:
    """One partition file, or `StoreError` naming it and how to repair it."""
    try:
        return pq.read_table(path, columns=columns)
    except (pa.ArrowInvalid, OSError) as error:
        day = path.parent.name.split("=", 1)[-1]
        raise StoreError(
            f"{path} is damaged or truncated ({error}): delete it and run sync again"
            f" (python -m toolkit sync --store {path.parent.parent.parent}) to re-read {day}"
        ) from None


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


def _reduced_details(chosen: str) -> str:
    """Each job's first Success, and its Failed details whole, in time order."""
    from toolkit.metrics import REQUIRED_COLUMNS

    columns = REQUIRED_COLUMNS["execution_details"]
    first = {"job_id": "job_id", "status": "'Success'", "created_at": "min(created_at)"}
    success = ", ".join(f"{first.get(c, 'CAST(NULL AS VARCHAR)')} AS {c}" for c in columns)
    return (
        f"SELECT {success} FROM read_parquet($1) WHERE status = 'Success' AND {chosen}"
        f" GROUP BY job_id UNION ALL SELECT {', '.join(columns)} FROM read_parquet($1)"
        f" WHERE status = 'Failed' AND {chosen} ORDER BY created_at, job_id"
    )


def _query(con, sql: str, files: list[str], table: str) -> pa.Table:
    if not files:
        from toolkit.metrics import REQUIRED_COLUMNS

        return layout.arrow_schema(table, REQUIRED_COLUMNS[table]).empty_table()
    return con.sql(sql, params=[files]).to_arrow_table()


def _quoted(text: str) -> str:
    return text.replace("'", "''")


def _stamp(value: str | None) -> pd.Timestamp | None:
    return None if value is None else pd.Timestamp(value)
