"""The store's layout on disk, a contract other engines rely on (no toolkit needed to read it).

::

    PATH/notifications/created_date=YYYY-MM-DD/part.parquet
    PATH/jobs/created_date=YYYY-MM-DD/part.parquet
    PATH/execution_details/created_date=YYYY-MM-DD/part.parquet
    PATH/state.json

Hive partitions by the notification's ``createdAt`` day (UTC, a string key); a job and its
execution details live in their notification's day. Each file has the columns of the frames of
`toolkit.read_activity` under an explicit Arrow schema built from `toolkit.schemas`: text as
``string``, times as ``timestamp[us, UTC]``, counts ``int64``, flags ``bool``, categories as
dictionary-encoded strings, lists of text as ``list<string>``, and ``payload`` (a JSON object) as
its JSON text. Rows are in feed order (newest notification first, a notification's jobs and
details in the service's order). After its frame's columns, each job keeps its delivery facts
(`FACT_SCHEMA`: ``triggered_at``, ``domain``, ``delivered_at``, ``failed_attempts``, defined by
`toolkit.counts.JOB_FACTS`), so that counting a window reads the jobs alone. Every day of the
window has a file, empty days a zero-row one.

A partition is replaced whole: written next to its target under a temporary name, flushed to
disk, then renamed over it, so a reader or a crash never sees half a file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from toolkit import schemas
from toolkit.schemas import Column

__all__ = ["SPECS", "TABLES", "arrow_schema", "day_of", "frame_from_arrow", "write_day"]

#: The three tables, in `Activity` order, with their column specs.
SPECS: dict[str, tuple[Column, ...]] = {
    "notifications": schemas.NOTIFICATIONS,
    "jobs": schemas.JOBS,
    "execution_details": schemas.EXECUTION_DETAILS,
}
TABLES = tuple(SPECS)
#: A job's delivery facts, kept after the jobs frame's columns (`toolkit.counts.FACTS`, computed
#: by `toolkit.counts.JOB_FACTS` when a day is written): counts read one table, no join.
FACT_SCHEMA = pa.schema(
    [
        pa.field("triggered_at", pa.timestamp("us", tz="UTC")),
        pa.field("domain", pa.string()),
        pa.field("delivered_at", pa.timestamp("us", tz="UTC")),
        pa.field("failed_attempts", pa.int64()),
    ]
)
#: Columns added to the layout since its first version: files written before lack them, and
#: are read without them (the job's ``workflow``: its notification's ``workflow_identifier``;
#: its delivery facts, `FACT_SCHEMA`), until the next `sync` upgrades them.
ADDED_COLUMNS = {"jobs": frozenset({"workflow", *FACT_SCHEMA.names})}
#: The hive partition key, and the file name inside a partition.
PARTITION = "created_date"
FILE = "part.parquet"
#: Object columns holding one JSON value (stored as its text); other object columns are lists.
JSON_COLUMNS = frozenset({"payload"})

_ARROW_TYPES = {
    schemas.STRING: pa.string(),
    schemas.DATETIME: pa.timestamp("us", tz="UTC"),
    schemas.INT: pa.int64(),
    schemas.FLOAT: pa.float64(),
    schemas.BOOL: pa.bool_(),
    schemas.CATEGORY: pa.dictionary(pa.int32(), pa.string()),
}


def arrow_type(column: Column) -> pa.DataType:
    """The Arrow type a column is stored as."""
    if column.dtype == schemas.OBJECT:
        return pa.string() if column.name in JSON_COLUMNS else pa.list_(pa.string())
    return _ARROW_TYPES[column.dtype]


def arrow_schema(table: str, columns: Iterable[str] | None = None) -> pa.Schema:
    """The explicit Arrow schema of one table (of only ``columns`` when given)."""
    spec = SPECS[table]
    wanted = None if columns is None else set(columns)
    return pa.schema(
        [pa.field(c.name, arrow_type(c)) for c in spec if wanted is None or c.name in wanted]
    )


def day_of(times: pd.Series) -> np.ndarray:
    """The partition key (``YYYY-MM-DD``, UTC) of each time."""
    return times.dt.strftime("%Y-%m-%d").to_numpy(dtype=object)


def day_path(root: Path, table: str, day: str) -> Path:
    """The file holding one table's rows of one day."""
    return root / table / f"{PARTITION}={day}" / FILE


def days_held(root: Path) -> set[str]:
    """The days for which every table has its file."""
    held = [
        {p.parent.name.split("=", 1)[1] for p in (root / table).glob(f"{PARTITION}=*/{FILE}")}
        for table in TABLES
    ]
    return set.intersection(*held)


def table_from_frame(frame: pd.DataFrame, table: str) -> pa.Table:
    """One activity frame as an Arrow table of the layout's schema."""
    schema = arrow_schema(table)
    arrays = []
    for field in schema:
        values = frame[field.name]
        if field.name in JSON_COLUMNS:
            values = [None if v is None else json.dumps(v) for v in values]
        elif pa.types.is_list(field.type):
            values = list(values)
        elif pa.types.is_dictionary(field.type):
            values = values.astype("string")
        arrays.append(
            pa.array(values, type=field.type if not pa.types.is_dictionary(field.type) else None)
        )
        if pa.types.is_dictionary(field.type):
            arrays[-1] = pc.dictionary_encode(arrays[-1]).cast(field.type)
    return pa.Table.from_arrays(arrays, schema=schema)


def frame_from_arrow(table: pa.Table, spec: Sequence[Column]) -> pd.DataFrame:
    """The frame `toolkit.read_activity` would give for these rows (the columns of ``spec``
    present in ``table``, with their declared dtypes and category order)."""
    data = {}
    for column in spec:
        if column.name not in table.column_names:
            continue
        values = table.column(column.name)
        if column.dtype == schemas.CATEGORY:
            data[column.name] = _categorical(values, column.categories)
            continue
        if pa.types.is_dictionary(values.type):
            values = values.cast(pa.string())
        if column.dtype == schemas.OBJECT:
            items = values.to_pylist()
            if column.name in JSON_COLUMNS:
                items = [None if v is None else json.loads(v) for v in items]
            data[column.name] = np.fromiter(items, dtype=object, count=len(items))
        elif column.dtype == schemas.DATETIME:
            data[column.name] = values.to_pandas().dt.as_unit("ns").array
        elif column.dtype == schemas.FLOAT:
            data[column.name] = values.to_numpy().astype("float64")
        else:
            data[column.name] = pd.array(values, dtype=column.dtype)
    return pd.DataFrame(data, index=pd.RangeIndex(table.num_rows))


def _categorical(values: pa.ChunkedArray, known: tuple[str, ...]) -> pd.Categorical:
    """Dictionary-encoded (or plain) text as the categorical of a direct read: the known
    categories first, then the other values present, sorted."""
    if not pa.types.is_dictionary(values.type):
        values = pc.dictionary_encode(values)
    array = values.unify_dictionaries().combine_chunks() if isinstance(values, pa.ChunkedArray) else values  # fmt: skip
    if isinstance(array, pa.ChunkedArray):  # no chunks at all
        array = pa.array([], pa.dictionary(pa.int32(), pa.string()))
    indices = pc.fill_null(array.indices, -1).to_numpy(zero_copy_only=False)
    dictionary = array.dictionary.cast(pa.string()).to_pylist()
    present = {dictionary[i] for i in np.unique(indices[indices >= 0])}
    categories = [*known, *sorted(present.difference(known))]
    position = {category: code for code, category in enumerate(categories)}
    mapping = np.array([position.get(value, -1) for value in dictionary] + [-1], dtype=np.int32)
    return pd.Categorical.from_codes(mapping[indices], categories=categories)


def write_day(root: Path, day: str, tables: Sequence[pa.Table]) -> None:
    """Replace the three files of ``day`` with ``tables`` (in `TABLES` order, each atomically),
    the jobs with their delivery facts (`FACT_SCHEMA`)."""
    from toolkit.counts import with_facts

    tables = [tables[0], with_facts(*tables), tables[2]]
    for name, table in zip(TABLES, tables, strict=True):
        write_atomically(day_path(root, name, day), table)


def write_atomically(path: Path, table: pa.Table) -> None:
    """Write ``table`` to ``path`` through a temporary file flushed to disk, then renamed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(temporary, "wb") as sink:
        pq.write_table(table, sink, compression="zstd")
        sink.flush()
        os.fsync(sink.fileno())
    os.replace(temporary, path)
    _fsync_directory(path.parent)


def _fsync_directory(directory: Path) -> None:
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
