"""Seeded databases, made once and shifted in time: every start after the first is fast.

The data of ``start(seed, now, sizes, incidents)`` are the data seeded at a fixed `ANCHOR`
instant, with every timestamp moved by ``now - ANCHOR`` (so at ``now=ANCHOR`` they are exactly
what `populate` writes). A snapshot of the anchor database is kept on disk, keyed by (seed,
sizes, incident specs relative to now, source of the seeding modules): the SQLite file image
(64 KiB pages, so that no record spills onto an overflow page and every ISO timestamp is 24
contiguous bytes), the offsets of those timestamps in it and their instants. Shifting rewrites
their digits in place with numpy and loads the image with ``sqlite3.Connection.deserialize``:
a uniform shift keeps every index in order. Object ids keep their anchor-time prefix (opaque
to clients; new ids made at the shifted clock still sort after the seeded ones when now is
after the anchor).

The cache lives in ``<temp>/toolkit-sandbox-cache/seed-v2-*.npz`` (the most recently used, up
to `CACHE_BYTES`); files are written whole and renamed into place, so concurrent runs are safe.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import threading
from contextlib import suppress
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np

from toolkit.sandbox import seed as seeding
from toolkit.sandbox.clock import parse_instant
from toolkit.sandbox.seed.incidents import specs_of
from toolkit.sandbox.store import Store

#: The instant seeded data are made at before being shifted to the requested clock.
ANCHOR = parse_instant("2026-11-01T12:00:00Z")
#: The modules whose source is part of the cache key: those that make the seeded data.
SEEDING = ("clock.py", "ids.py", "store.py", "cache.py", "seed/*.py")
#: Bytes of snapshots kept in the cache (the most recently used ones; a test run uses several).
CACHE_BYTES = 2_000_000_000
#: Larger data sets are seeded at their clock directly, not through a snapshot (memory).
SNAPSHOT_UP_TO = 100_000
#: Page size of a snapshot, and the largest record it accepts (no overflow pages).
PAGE_SIZE = 65536
MAX_RECORD = 60_000
ISO = re.compile(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")
#: Offsets of the 17 digits in ``YYYY-MM-DDTHH:MM:SS.mmmZ``.
DIGITS = np.array([0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18, 20, 21, 22])
DAY_MS = 86_400_000


class Snapshot:
    """A seeded database's file image, with the offsets and instants (epoch ms) of its ISO
    timestamps."""

    def __init__(self, image: np.ndarray, positions: np.ndarray, times: np.ndarray):
        self.image, self.positions, self.times = image, positions, times

    @classmethod
    def of(cls, store: Store) -> Snapshot:
        """Snapshot a populated store made with `PAGE_SIZE` pages."""
        with store.read() as db:
            largest = db.execute("SELECT max(length(CAST(doc AS BLOB))) FROM notifications")
            if (largest.fetchone()[0] or 0) > MAX_RECORD:
                raise ValueError("a seeded document is too large to snapshot")
            if db.execute("PRAGMA page_size").fetchone()[0] != PAGE_SIZE:
                raise ValueError(f"a snapshot needs a store of {PAGE_SIZE}-byte pages")
            image = db.serialize()
        positions = np.fromiter((m.start() for m in ISO.finditer(image)), dtype=np.int64)
        array = np.frombuffer(image, dtype=np.uint8).copy()
        text = array[positions[:, None] + np.arange(23)].view("S23").ravel()
        return cls(array, positions, text.astype("datetime64[ms]").astype(np.int64))

    def shift(self, delta: timedelta) -> None:
        """Move every timestamp of the image by ``delta`` (whole milliseconds, floored)."""
        delta_ms = delta // timedelta(milliseconds=1)
        if delta_ms and len(self.positions):
            self.image[self.positions[:, None] + DIGITS] = _digits(self.times + delta_ms)
            self.times = self.times + delta_ms

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        with open(partial, "wb") as file:
            np.savez(file, image=self.image, positions=self.positions, times=self.times)
        os.replace(partial, path)

    @classmethod
    def load(cls, path: Path) -> Snapshot | None:
        try:
            with np.load(path) as data:
                snapshot = cls(data["image"], data["positions"], data["times"])
        except (OSError, ValueError, KeyError):
            return None
        with suppress(OSError):
            path.touch()  # most recently used
        return snapshot


def _digits(times: np.ndarray) -> np.ndarray:
    """The 17 ASCII digits of each epoch-millisecond instant, as ``YYYYMMDDHHMMSSmmm`` (numpy
    writes the ISO text; its separators are dropped)."""
    text = times.astype("datetime64[ms]").astype("S23")
    return np.frombuffer(text.tobytes(), dtype=np.uint8).reshape(-1, 23)[:, DIGITS]


def _anchored(incidents: str | list, now: datetime) -> str | list:
    """The incident specs for data made at `ANCHOR` that stand for data ending at ``now``."""
    specs = specs_of(incidents)
    if not specs:
        return incidents
    return [
        replace(spec, start=ANCHOR - (now - spec.start))
        if isinstance(spec.start, datetime)
        else spec
        for spec in specs
    ]


def _cache_path(seed: int, notifications: int, subscribers: int, incidents: str | list) -> Path:
    """Where the snapshot of these inputs is cached; the key covers the seeding code."""
    planted = incidents if isinstance(incidents, str) else [s.key(ANCHOR) for s in incidents]
    key = json.dumps([seed, notifications, subscribers, planted], default=str)
    digest = hashlib.sha256(key.encode())
    package = Path(__file__).parent
    for module in sorted(path for pattern in SEEDING for path in package.glob(pattern)):
        digest.update(module.read_bytes())
    folder = Path(tempfile.gettempdir()) / "toolkit-sandbox-cache"
    return folder / f"seed-v2-{digest.hexdigest()[:24]}.npz"


def seeded_image(
    seed: int, now: datetime, notifications: int, subscribers: int, incidents: str | list
) -> np.ndarray:
    """The seeded database ending at ``now`` as a SQLite file image (from the cache if there)."""
    anchored = _anchored(incidents, now)
    path = _cache_path(seed, notifications, subscribers, anchored)
    snapshot = Snapshot.load(path)
    if snapshot is None:
        scratch = Store(":memory:", page_size=PAGE_SIZE)
        try:
            seeding.populate(
                scratch,
                seed=seed,
                now=ANCHOR,
                notifications=notifications,
                subscribers=subscribers,
                incidents=anchored,
            )
            snapshot = Snapshot.of(scratch)
        finally:
            scratch.close()
        with suppress(OSError):
            snapshot.save(path)
            _prune(path.parent)
    snapshot.shift(now - ANCHOR)
    return snapshot.image


def _prune(folder: Path) -> None:
    with suppress(OSError):  # another process may be pruning too
        cached = sorted(folder.glob("seed-v2-*.npz"), key=lambda p: -p.stat().st_mtime)
        kept = 0
        for path in cached:
            kept += path.stat().st_size
            if kept > CACHE_BYTES:
                path.unlink(missing_ok=True)
