"""Times as the toolkit accepts them, and as the service writes them.

Every time is UTC. A time written without an offset (``"2026-11-23 09:00"``, a naive datetime)
is taken as UTC; a string with a time of day and no offset also gives a `NaiveTimeWarning`
(once per value and place), since the writer may have meant local time: add ``Z`` or ``+01:00``.

>>> parse_time("24h", name="after", now=datetime(2026, 11, 1, 12, tzinfo=timezone.utc))
datetime.datetime(2026, 10, 31, 12, 0, tzinfo=datetime.timezone.utc)
>>> to_iso(datetime(2026, 11, 1, 12, tzinfo=timezone.utc))
'2026-11-01T12:00:00.000Z'
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta

from toolkit.errors import ParameterError

__all__ = [
    "NaiveTimeWarning",
    "parse_duration",
    "parse_time",
    "resolve_window",
    "to_iso",
    "utcnow",
]

_RELATIVE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(w|d|h|m|s)\s*$")
_UNITS = {"w": "weeks", "d": "days", "h": "hours", "m": "minutes", "s": "seconds"}
_ALLOWED = (
    "an ISO 8601 time ('2026-11-01T12:00:00Z'), a datetime or pandas.Timestamp (naive = UTC), "
    "a date, or a duration before now such as '90s', '30m', '24h', '7d', '2w'"
)


class NaiveTimeWarning(UserWarning):
    """A time of day written without a UTC offset, taken as UTC."""


def utcnow() -> datetime:
    """The wall clock, as an aware UTC datetime."""
    return datetime.now(UTC)


def parse_time(
    value: str | datetime | date,
    *,
    name: str = "time",
    now: datetime | Callable[[], datetime] = utcnow,
) -> datetime:
    """Parse a time given in any of the accepted forms to an aware UTC datetime.

    Parameters
    ----------
    value : str, datetime, pandas.Timestamp or date
        ISO 8601 (a trailing ``Z`` is fine); a naive datetime is taken as UTC (a string with a
        time of day and no offset warns: `NaiveTimeWarning`); a date means its midnight UTC; ``"7d"``, ``"24h"``, ``"30m"``, ``"90s"``, ``"2w"`` mean now minus that.
    name : str
        The parameter's name, for the error message.
    now : datetime or callable
        "Now" for relative durations (the service's clock when known).

    Raises
    ------
    ParameterError
        The value is none of the accepted forms.
    """
    if isinstance(value, str):
        match = _RELATIVE.match(value)
        if match:
            current = now() if callable(now) else now
            try:
                return _utc(current) - timedelta(**{_UNITS[match.group(2)]: float(match.group(1))})
            except OverflowError:
                raise ParameterError(name, value, "a duration that starts after year 1") from None
        text = value.strip()
        try:
            value = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise ParameterError(name, text, _ALLOWED) from None
        if value.tzinfo is None and len(text) > len("2026-11-01"):
            warnings.warn(
                f"{name}={text!r} has no UTC offset: taken as UTC ({to_iso(value)}); add Z or"
                " an offset such as +01:00 to say which",
                NaiveTimeWarning,
                stacklevel=2,
            )
    if isinstance(value, datetime):  # pandas.Timestamp is a datetime
        if value != value:  # NaT
            raise ParameterError(name, value, _ALLOWED)
        return _utc(value.to_pydatetime() if hasattr(value, "to_pydatetime") else value)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    raise ParameterError(name, value, _ALLOWED)


def resolve_window(
    after: str | datetime | date | None,
    before: str | datetime | date | None,
    *,
    now: datetime | Callable[[], datetime],
    after_name: str = "after",
    before_name: str = "before",
) -> tuple[datetime | None, datetime]:
    """The ``(start, end)`` of a time window, checked: the toolkit's one reading of a window.

    ``before`` defaults to ``now``; ``after`` None stays None (the service's default, the start of
    the plan's retention). Relative times count back from the same ``now``. ``after_name`` and
    ``before_name`` are the caller's names for the two bounds (``since``/``until``...).

    Raises
    ------
    ParameterError
        A bound is not a time (`parse_time`), or the start is later than the end.
    """
    current = _utc(now() if callable(now) else now)
    start = None if after is None else parse_time(after, name=after_name, now=current)
    end = current if before is None else parse_time(before, name=before_name, now=current)
    if start is not None and start > end:
        raise ParameterError(
            after_name, after, f"a time not later than {before_name} ({to_iso(end)})"
        )
    return start, end


def parse_duration(value: str | timedelta, *, name: str = "duration") -> timedelta:
    """A length of time: ``"90s"``, ``"30m"``, ``"24h"``, ``"7d"``, ``"2w"`` or a timedelta >= 0.

    Raises
    ------
    ParameterError
        Anything else.
    """
    if isinstance(value, timedelta) and value >= timedelta(0):
        return value
    match = _RELATIVE.match(value) if isinstance(value, str) else None
    if match is None:
        raise ParameterError(name, value, "a duration such as '90s', '30m', '24h', '7d' or a timedelta >= 0")  # fmt: skip
    return timedelta(**{_UNITS[match.group(2)]: float(match.group(1))})


def to_iso(moment: datetime) -> str:
    """Format as the service does: ``2026-11-01T12:00:00.000Z`` (milliseconds, UTC)."""
    moment = _utc(moment)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _utc(moment: datetime) -> datetime:
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)
