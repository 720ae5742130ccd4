"""Object-id style identifiers (24 hex characters, time first) from a seeded generator."""

from __future__ import annotations

import random
import threading
from datetime import datetime


class IdFactory:
    """Makes unique 24-hex ids: 8 hex of epoch seconds, then 16 hex from ``rng`` and a counter.

    Ids made for later instants sort after earlier ones, like the service's object ids, so
    ordering by ``_id`` follows creation time.
    """

    def __init__(self, rng: random.Random):
        self._rng = rng
        self._counter = rng.randrange(1 << 24)
        self._lock = threading.Lock()

    def new(self, when: datetime) -> str:
        with self._lock:
            self._counter = (self._counter + 1) & 0xFFFFFF
            return f"{int(when.timestamp()) & 0xFFFFFFFF:08x}{self._rng.getrandbits(40):010x}{self._counter:06x}"
