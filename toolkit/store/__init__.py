"""An activity store: a window of activity kept current on disk as Parquet, queried with DuckDB.

>>> result = toolkit.sync(client, "activity", since="30d")   # incremental after the first run
>>> store = toolkit.open_store("activity")
>>> store.read(after="7d")                                  # an Activity, like read_activity
>>> store.sql("SELECT count(*) FROM notifications")

The layout on disk is a contract (`toolkit.store.layout`): Spark, Dask, Polars and DuckDB read it
as it is.
"""

from toolkit.store.incremental import SyncResult, sync
from toolkit.store.reader import Store, open_store
from toolkit.store.state import StoreError, StoreLockedError

__all__ = ["Store", "StoreError", "StoreLockedError", "SyncResult", "open_store", "sync"]
