"""The on-disk cache of seeded databases, so that a start with the same inputs is fast."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import tempfile
import threading
from contextlib import closing, suppress
from datetime import datetime
from pathlib import Path

from toolkit.sandbox import seed as seeding
from toolkit.sandbox.clock import Clock, iso
from toolkit.sandbox.seed.incidents import specs_of
from toolkit.sandbox.store import Store

#: The modules whose source is part of the cache key: those that make the seeded data.
SEEDING = ("clock.py", "ids.py", "store.py", "seed/*.py")
#: Seeded databases kept in the cache (the most recently used ones).
CACHE_SIZE = 4


def _cache_path(
    seed: int, now: datetime, notifications: int, subscribers: int, incidents: str | list
) -> Path:
    """Where the seeded database of these inputs is cached; the key covers the seeding code."""
    specs = specs_of(incidents)
    planted = incidents if specs is None or not specs else [spec.key(now) for spec in specs]
    key = json.dumps([seed, iso(now), notifications, subscribers, planted], default=str)
    digest = hashlib.sha256(key.encode())
    package = Path(__file__).parent
    for module in sorted(path for pattern in SEEDING for path in package.glob(pattern)):
        digest.update(module.read_bytes())
    return (
        Path(tempfile.gettempdir()) / "toolkit-sandbox-cache" / f"{digest.hexdigest()[:24]}.sqlite"
    )


def seed_store(
    store: Store,
    clock: Clock,
    seed: int,
    notifications: int,
    subscribers: int,
    incidents: str | list,
    cache: bool,
) -> None:
    """Populate an empty store, through the on-disk cache when ``cache`` (deterministic data).

    Cache files are written whole and renamed into place, so concurrent test runs are safe.
    """
    path = None
    if cache:
        path = _cache_path(seed, clock.start, notifications, subscribers, incidents)
    if path is not None:
        with suppress(sqlite3.OperationalError):  # not cached (yet)
            source = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
            with closing(source), store.read() as db:
                source.backup(db)
            with suppress(OSError):
                path.touch()  # most recently used
            return
    seeding.populate(
        store,
        seed=seed,
        now=clock.start,
        notifications=notifications,
        subscribers=subscribers,
        incidents=incidents,
    )
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
        with closing(sqlite3.connect(partial)) as target, store.read() as db:
            db.backup(target)
        os.replace(partial, path)
        with suppress(OSError):  # another process may be pruning too
            cached = sorted(path.parent.glob("*.sqlite"), key=lambda p: -p.stat().st_mtime)
            for stale in cached[CACHE_SIZE:]:
                stale.unlink(missing_ok=True)
