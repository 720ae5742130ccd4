"""Seeded data made once at an anchor instant and shifted to the requested clock: the data of
every start are those of `populate` at the anchor, every timestamp moved by the same amount."""

from __future__ import annotations

import re
import tempfile
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

from toolkit.sandbox import start
from toolkit.sandbox.cache import ANCHOR, Snapshot, _digits
from toolkit.sandbox.clock import iso, parse_instant
from toolkit.sandbox.seed import populate
from toolkit.sandbox.store import Store

SIZES = {"notifications": 300, "subscribers": 50}
TABLES = ["meta", "environments", "subscribers", "subscriptions", "integrations", "workflows",
          "notifications", "notification_topics", "topics"]  # fmt: skip
ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")


def _rows(store: Store) -> dict[str, list[tuple]]:
    with store.read() as db:
        return {t: sorted(map(tuple, db.execute(f"SELECT * FROM {t}")), key=repr) for t in TABLES}


def _shift(rows: dict[str, list[tuple]], delta: timedelta) -> dict[str, list[tuple]]:
    def moved(value):
        if not isinstance(value, str):
            return value
        return ISO.sub(lambda m: iso(parse_instant(m.group()) + delta), value)

    return {t: sorted((tuple(map(moved, r)) for r in rs), key=repr) for t, rs in rows.items()}


@pytest.fixture(scope="module")
def anchored():
    store = Store()
    populate(store, seed=3, now=ANCHOR, **SIZES)
    yield _rows(store)
    store.close()


@pytest.mark.parametrize(
    "now", ["2026-11-01T12:00:00Z", "2027-02-28T23:59:59.999Z", "2024-02-29T01:02:03.456Z"]
)
def test_a_start_serves_the_anchor_data_shifted_to_its_clock(anchored, now):
    with start(seed=3, now=now, **SIZES) as sandbox:
        served = _rows(sandbox.store)
        assert sandbox.store.get_meta("now") == iso(parse_instant(now))
    assert served == _shift(anchored, parse_instant(now) - ANCHOR)


def test_a_start_without_a_clock_is_the_same_data_shifted_to_the_real_now(anchored):
    with start(seed=3, **SIZES) as sandbox:
        now = parse_instant(sandbox.store.get_meta("now"))
        served = _rows(sandbox.store)
    assert now <= parse_instant(iso(sandbox.clock.start)) + timedelta(milliseconds=1)
    assert served == _shift(anchored, now - ANCHOR)


def test_snapshots_are_cached_under_the_new_file_names():
    with start(seed=3, **SIZES):
        pass
    folder = Path(tempfile.gettempdir()) / "toolkit-sandbox-cache"
    assert list(folder.glob("seed-v2-*.npz"))


def test_the_digits_of_instants_across_leap_days_and_centuries():
    instants = ["1999-12-31T23:59:59.999Z", "2000-02-29T00:00:00.000Z", "2024-02-29T12:34:56.789Z",
                "2100-03-01T00:00:00.001Z", "1970-01-01T00:00:00.000Z"]  # fmt: skip
    times = [int(parse_instant(i).timestamp() * 1000) for i in instants]
    digits = _digits(np.array(times, dtype=np.int64))
    assert ["".join(map(chr, row)) for row in digits] == [re.sub(r"\D", "", i) for i in instants]


def test_a_store_of_small_pages_cannot_be_snapshotted():
    store = Store()
    populate(store, seed=3, now=ANCHOR, notifications=20, subscribers=10)
    with pytest.raises(ValueError, match="pages"):
        Snapshot.of(store)
    store.close()
