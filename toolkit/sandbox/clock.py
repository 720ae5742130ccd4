"""The sandbox's clock: real time, optionally anchored to a chosen instant for reproducible data,
sped up, or stopped and moved by hand (deterministic tests)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta


def parse_instant(value: str | datetime) -> datetime:
    """Parse an ISO 8601 string (``Z`` allowed) or a datetime into an aware UTC datetime."""
    if isinstance(value, str):
        value = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def iso(moment: datetime) -> str:
    """Format as the service does: ``2026-11-22T05:07:57.123Z`` (sorts lexicographically)."""
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


class Clock:
    """Time that starts at ``start`` (default: the real now) and then advances ``speed`` times
    as fast as real time (read from ``timer``, seconds), plus what `advance` added.

    ``speed=0`` stops it: it moves only by `advance`, so that a test decides what time it is.
    """

    def __init__(
        self,
        start: str | datetime | None = None,
        speed: float = 1.0,
        timer: Callable[[], float] = time.monotonic,
    ):
        if isinstance(speed, bool) or not isinstance(speed, int | float) or not 0 <= speed <= 1e6:
            raise ValueError(f"clock_speed must be a number >= 0 (0: stopped), got {speed!r}")
        self.start = parse_instant(start) if start is not None else datetime.now(UTC)
        self.speed = float(speed)
        self._timer = timer
        self._origin = timer()
        self._advanced = 0.0  # seconds added by advance()
        self._lock = threading.Lock()

    def now(self) -> datetime:
        elapsed = (self._timer() - self._origin) * self.speed + self._advanced
        return self.start + timedelta(seconds=elapsed)

    def advance(self, seconds: float) -> None:
        """Move the clock ``seconds`` (>= 0) forward at once."""
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not 0 <= seconds < 1e9:  # fmt: skip
            raise ValueError(f"seconds must be a number >= 0, got {seconds!r}")
        with self._lock:
            self._advanced += seconds

    def __repr__(self) -> str:
        speed = f", speed={self.speed:g}" if self.speed != 1 else ""
        return f"Clock(start={iso(self.start)!r}{speed})"
