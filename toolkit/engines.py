"""Engines: where the toolkit's relational definitions (`toolkit.counts`) run.

The same SQL text runs on every engine: DuckDB over frames in memory (registered as Arrow, no
copy), DuckDB over a store's Parquet files, and Apache Spark over the same files (local, HDFS or
S3 paths, as Spark reads them). The text keeps to what both dialects share; the one function
they spell differently, ``unix_micros(t)`` (microseconds since the epoch), is a DuckDB macro.

>>> with relations(activity) as rel:                # notifications, jobs, execution_details
...     rel.query("SELECT count(*) AS n FROM jobs")
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
import pyarrow as pa

from toolkit.errors import STORE_REPAIR, ParameterError, StoreError

__all__ = ["ENGINES", "Relations", "check_engine", "relations", "spark_session"]

#: The engines by name; a `pyspark.sql.SparkSession` may be given in place of ``"spark"``.
ENGINES = ("duckdb", "spark")
TABLES = ("notifications", "jobs", "execution_details")


@dataclass
class Relations:
    """The three activity tables of one source, queryable by SQL on one engine."""

    engine: str
    run: Any  # (sql) -> pyarrow.Table
    #: The jobs keep their delivery facts (`toolkit.counts.FACTS`): a store's, written so.
    facts_stored: bool = False
    #: The tables are a store's, partitioned by their notification's day (``created_date``).
    partitioned: bool = False

    def query(self, sql: str) -> pa.Table:
        """``sql`` over the tables, as an Arrow table."""
        return self.run(sql)

    def in_window(self, low: int, high: int) -> str:
        """A condition on a table's rows: their notification was created in ``[low, high]``
        (epoch microseconds). On a store, only the first and last days' notifications are
        looked up: the days between are whole (a row lives in its notification's day)."""
        created = f"unix_micros(created_at) BETWEEN {low} AND {high}"
        if not self.partitioned:
            return f"notification_id IN (SELECT notification_id FROM notifications WHERE {created})"
        first, last = (pd.Timestamp(us, unit="us", tz="UTC").strftime("%Y-%m-%d") for us in (max(low, 0), min(high, 2**62 // 1000)))  # fmt: skip
        edges = f"created_date IN (DATE '{first}', DATE '{last}')"
        return (
            f"(created_date > DATE '{first}' AND created_date < DATE '{last}'"
            f" OR {edges} AND notification_id IN"
            f" (SELECT notification_id FROM notifications WHERE {edges} AND {created}))"
        )


def check_engine(engine: Any) -> Any:
    """``engine`` as ``"duckdb"``, ``"spark"`` or a live SparkSession, or `ParameterError`."""
    if engine is None or engine == "duckdb":
        return "duckdb"
    if engine == "spark":
        return spark_session()
    if _is_spark(engine):
        if _stopped(engine):
            raise ParameterError("engine", "a stopped SparkSession", "a running SparkSession (SparkSession.builder.getOrCreate())")  # fmt: skip
        return engine
    raise ParameterError("engine", engine, f"one of {list(ENGINES)}, or a pyspark.sql.SparkSession")  # fmt: skip


def spark_session() -> Any:
    """``SparkSession.builder.getOrCreate()`` on UTC, or a `ParameterError` saying what to install."""
    import shutil

    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise ParameterError(
            "engine", "spark", "an installed PySpark: pip install 'toolkit[spark]' (and Java 17: apt-get install openjdk-17-jre-headless)"
        ) from None  # fmt: skip
    import os

    if not (shutil.which("java") or os.environ.get("JAVA_HOME")):
        raise ParameterError("engine", "spark", "Java 17 for Spark: apt-get install openjdk-17-jre-headless (or set JAVA_HOME)")  # fmt: skip
    return SparkSession.builder.config("spark.sql.session.timeZone", "UTC").getOrCreate()


@contextlib.contextmanager
def relations(
    source: Any,
    *,
    files: dict[str, Sequence[str]] | None = None,
    engine: Any = "duckdb",
    root: str | None = None,
    days: tuple[str, str] | None = None,
    chosen: pa.Table | None = None,
    frames: dict[str, pd.DataFrame | pa.Table] | None = None,
    facts_stored: bool = False,
) -> Iterator[Relations]:
    """The tables of ``source``: an Activity (DuckDB over its frames), or a store's Parquet
    ``files`` by table (DuckDB; only the notifications whose ids ``chosen`` holds, when given), or a
    store's ``root`` directory on a SparkSession ``engine`` (its partitions from ``days[0]`` to
    ``days[1]``); ``frames``: other frames (or Arrow tables) by name (DuckDB); ``facts_stored``:
    the store's jobs keep their delivery facts."""
    if engine == "duckdb":
        with _duckdb(source, files, chosen, frames or {}) as rel:
            rel.facts_stored, rel.partitioned = facts_stored, files is not None and chosen is None
            yield rel
    else:
        rel = _spark(engine, root, days)
        rel.facts_stored, rel.partitioned = facts_stored, True
        yield rel


@contextlib.contextmanager
def _duckdb(activity: Any, files: dict[str, Sequence[str]] | None, chosen: pa.Table | None, frames: dict[str, pd.DataFrame]) -> Iterator[Relations]:  # fmt: skip
    import duckdb

    with _database(os.getpid()).cursor() as con:  # a cursor: its registrations are its own
        con.execute("SET TimeZone = 'UTC'")
        pending = dict(frames)  # registered (converted) when a query names them
        for table in TABLES if activity is not None or files is not None else ():
            if files is None:
                frame = getattr(activity, table, None)
                if frame is not None:
                    pending[table] = frame
            elif files[table]:
                listed = ", ".join(f"'{_quoted(path)}'" for path in files[table])
                only = ""
                if chosen is not None and table == "notifications":
                    con.register("chosen", chosen.select(["notification_id"]))
                    only = " WHERE notification_id IN (SELECT notification_id FROM chosen)"
                con.execute(f"CREATE TEMP VIEW {table} AS SELECT * FROM read_parquet([{listed}]){only}")  # fmt: skip
            else:
                from toolkit.store import layout

                con.register(table, layout.arrow_schema(table).empty_table())

        def run(sql: str) -> pa.Table:
            for name in [name for name in pending if name in sql]:
                frame = pending.pop(name)
                con.register(name, frame if isinstance(frame, pa.Table) else _arrow(frame))
            try:
                return con.sql(sql).to_arrow_table()
            except (duckdb.IOException, duckdb.InvalidInputException) as error:
                raise StoreError(f"{str(error)[:300]}: {STORE_REPAIR}") from None

        yield Relations("duckdb", run)


@functools.cache
def _database(pid: int) -> Any:
    """This process's in-memory DuckDB database (one per process: a forked child opens its
    own), where the macro of the SQL's one dialect difference is defined once."""
    import duckdb

    con = duckdb.connect()
    con.execute("CREATE MACRO unix_micros(t) AS epoch_us(CAST(t AS TIMESTAMPTZ))")
    return con


def _spark(spark: Any, root: str, days: tuple[str, str]) -> Relations:
    from pyspark.sql import functions

    for table in TABLES:
        try:
            reader = spark.read.option("basePath", f"{root}/{table}").option("mergeSchema", "true")
            frame = reader.parquet(f"{root}/{table}")
        except Exception as error:  # noqa: BLE001 (Spark's AnalysisException: a path it cannot read)
            raise StoreError(f"Spark cannot read {root}/{table}: {str(error).splitlines()[0]}") from None  # fmt: skip
        partition = functions.col("created_date")
        frame.where(partition.between(*days)).createOrReplaceTempView(table)

    def run(sql: str) -> pa.Table:
        frame = spark.sql(sql)
        try:
            return frame.toArrow()
        except AttributeError:  # PySpark < 4
            return pa.Table.from_pandas(frame.toPandas(), preserve_index=False)

    return Relations("spark", run)


def _arrow(frame: pd.DataFrame | pa.Table) -> pa.Table:
    """A frame as Arrow for DuckDB: object columns (payloads, lists) are left out."""
    if isinstance(frame, pa.Table):
        return frame
    kept = frame[
        [name for name, dtype in frame.dtypes.items() if not pd.api.types.is_object_dtype(dtype)]
    ]
    kept.attrs = {}
    return pa.Table.from_pandas(kept, preserve_index=False)


def _is_spark(engine: Any) -> bool:
    return type(engine).__name__ == "SparkSession" and type(engine).__module__.startswith("pyspark")


def _stopped(spark: Any) -> bool:
    try:
        return spark.sparkContext._jsc is None
    except Exception:  # noqa: BLE001 (a Connect session has no context: it is live or fails later)
        return False


def _quoted(text: str) -> str:
    return text.replace("'", "''")
