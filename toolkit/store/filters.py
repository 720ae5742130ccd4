"""The activity feed's server-side filters, checked once, before anything is read or written."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from toolkit._checks import strings as _strings
from toolkit._checks import text as _text
from toolkit.errors import ParameterError
from toolkit.vocab import NOTIFICATION_CHANNELS, SEVERITIES

__all__ = ["FILTERS", "FILTER_COLUMNS", "check_filters", "filter_mask"]

#: The filters of `toolkit.read_activity` that select notifications (``limit`` is not one).
FILTERS = (
    "channels",
    "templates",
    "emails",
    "subscriber_ids",
    "severity",
    "transaction_id",
    "topic_key",
)
#: The notifications' column each filter reads.
FILTER_COLUMNS = {
    "channels": "channels",
    "templates": "template_id",
    "emails": "subscriber_email",
    "subscriber_ids": "subscriber_id",
    "severity": "severity",
    "transaction_id": "transaction_id",
    "topic_key": "topic_keys",
}
_CHOICES = {"channels": NOTIFICATION_CHANNELS, "severity": SEVERITIES}


def check_filters(filters: dict[str, Any], *, allowed: tuple[str, ...] = FILTERS) -> dict[str, Any]:
    """The filters given, checked and normalised (None ones dropped, lists sorted).

    Raises
    ------
    ParameterError
        An unknown filter (``chanels=``, ``limit=``) or a bad value (``channels="fax"``).
    """
    checked: dict[str, Any] = {}
    for name, value in filters.items():
        if name not in allowed:
            raise ParameterError(name, value, f"one of the filters {', '.join(allowed)}")
        if name in ("transaction_id", "topic_key"):
            value = _text(name, value, optional=True)
        else:
            value = _strings(name, value, _CHOICES.get(name))
            value = None if value is None else sorted(set(value))
        if value is not None:
            checked[name] = value
    return checked


def filter_mask(notifications: pa.Table, filters: dict[str, Any]) -> pa.ChunkedArray | None:
    """Which notifications match ``filters`` (as the service filters them); None: all."""
    masks = []
    for name, value in filters.items():
        if name == "channels":
            masks.append(_any_in_list(notifications["channels"], value))
        elif name == "topic_key":
            masks.append(_any_in_list(notifications["topic_keys"], [value]))
        elif name == "severity":
            severity = notifications["severity"].cast(pa.string())
            mask = pc.is_in(severity, pa.array(value))
            if "none" in value:
                mask = pc.or_(mask, pc.is_null(severity))
            masks.append(mask)
        else:
            values = value if isinstance(value, list) else [value]
            column = notifications[FILTER_COLUMNS[name]]
            masks.append(pc.is_in(column, pa.array(values, pa.string())))
    if not masks:
        return None
    mask = masks[0]
    for other in masks[1:]:
        mask = pc.and_(mask, other)
    return pc.fill_null(mask, False)


def _any_in_list(lists: pa.ChunkedArray, values: list[str]) -> pa.Array:
    """Whether each list holds any of ``values``."""
    lists = lists.combine_chunks() if isinstance(lists, pa.ChunkedArray) else lists
    hit = pc.fill_null(pc.is_in(pc.list_flatten(lists), pa.array(values, pa.string())), False)
    rows = np.zeros(len(lists), dtype=bool)
    rows[pc.list_parent_indices(lists).to_numpy()[hit.to_numpy(zero_copy_only=False)]] = True
    return pa.array(rows)
