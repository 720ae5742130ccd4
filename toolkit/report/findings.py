"""The report's Findings: each incident of `toolkit.find_incidents` as a sentence, its numbers
and a small chart of its window; or what was checked when there is none."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pandas as pd

from toolkit import charts
from toolkit.errors import ParameterError
from toolkit.redact import scrub
from toolkit.report.summary import percent
from toolkit.words import chance, channel_name, kind_name, moment, provider_name, window

__all__ = ["INCIDENT_COLUMNS", "findings"]

#: The columns of `toolkit.find_incidents` (a contract) that the report shows.
INCIDENT_COLUMNS = (
    "kind", "channel", "provider_id", "error_code", "domain", "started_at", "ended_at", "ongoing",
    "jobs", "failed_jobs", "failure_rate", "baseline_rate", "p_value", "notifications",
    "subscribers", "workflows", "example_error", "summary",
)  # fmt: skip


def findings(
    incidents: pd.DataFrame, nearby: pd.DataFrame, figure_html: Callable[[Any, str], str]
) -> dict[str, Any]:
    """What the Findings section shows.

    Parameters
    ----------
    incidents : DataFrame
        From `toolkit.find_incidents` (its ``attrs`` say what was checked).
    nearby : DataFrame
        ``toolkit.counts.around`` of the incidents' `toolkit.charts.incident_spans`, for the
        charts (counted by the source's engine in one query).
    figure_html : callable
        ``figure_html(figure, element_id) -> str``.

    Returns
    -------
    dict
        ``items``: per incident ``id, summary, facts`` (label, text pairs), ``example`` (the
        provider's error, secrets masked) and ``chart`` (HTML); ``checked``: what was examined.
    """
    missing = [c for c in INCIDENT_COLUMNS if c not in getattr(incidents, "columns", ())]
    if not isinstance(incidents, pd.DataFrame) or missing:
        raise ParameterError("findings", type(incidents).__name__,
                             f"a frame from toolkit.find_incidents (missing {missing})")  # fmt: skip
    items = []
    for number, row in enumerate(incidents.to_dict("records"), start=1):
        element_id = f"finding-{number}"
        example = row["example_error"]
        items.append(
            {
                "id": element_id,
                "summary": row["summary"],
                "facts": _facts(row),
                "example": "" if not _known(example) else _masked(str(example)),
                "chart": figure_html(
                    charts.incident_window(_part(nearby, number - 1), row), element_id + "-plot"
                ),  # fmt: skip
            }
        )
    return {"items": items, "checked": _checked(incidents.attrs)}


def _part(nearby: pd.DataFrame, number: int) -> pd.DataFrame:
    """The rows of one incident of `toolkit.counts.around` (its ``attrs`` kept)."""
    part = nearby[nearby["incident"].to_numpy() == number].reset_index(drop=True)
    part.attrs = dict(nearby.attrs)
    return part


def _facts(row: dict[str, Any]) -> list[tuple[str, str]]:
    """The incident's numbers in plain words; its statistics in a last line with their meaning."""
    when = (f"since {moment(row['started_at'])}, still going at the end of the window"
            if row["ongoing"] else window(row["started_at"], row["ended_at"]))  # fmt: skip
    where = [channel_name(row["channel"]) if _known(row["channel"]) else "",
             f"via {provider_name(row['provider_id'])}" if _known(row["provider_id"]) else "",
             f"to {row['domain']}" if _known(row["domain"]) else "",
             f"(error {row['error_code']})" if _known(row["error_code"]) else ""]  # fmt: skip
    workflows = row["workflows"]
    workflows = list(workflows) if isinstance(workflows, list | tuple) else []
    return [
        ("what", kind_name(row["kind"]).capitalize()),
        ("where", " ".join(part for part in where if part) or "everywhere"),
        ("when", when),
        ("failed", f"{int(row['failed_jobs']):,} of {int(row['jobs']):,} delivery jobs in that "
                   f"time ({percent(_rate(row['failure_rate']))}; usually "
                   f"{percent(_rate(row['baseline_rate']))}), counting a job failed when any "
                   "attempt failed (the top failures count jobs by their last error)"),
        ("impact", f"{int(row['notifications']):,} notifications, "
                   f"{int(row['subscribers']):,} people"),
        ("workflows", ", ".join(map(str, workflows)) or "-"),
        ("details", f"p = {row['p_value']:.2g}: a rate this far above the usual one would come "
                    f"by chance about {chance(row['p_value'])} times (exact test against the "
                    "baseline, corrected for the periods examined)"),
    ]  # fmt: skip


def _checked(attrs: dict[str, Any]) -> str:
    """What `find_incidents` examined, from its frame's ``attrs``, in a sentence."""
    checked = attrs.get("checked") or {}
    parts = []
    if "jobs" in checked:
        parts.append(f"{checked['jobs']:,} delivery jobs")
    if checked.get("after") is not None and checked.get("before") is not None:
        parts.append(f"from {window(checked['after'], checked['before'])}")
    if checked.get("freq") is not None:
        parts.append(f"in buckets of {_duration(pd.Timedelta(checked['freq']))}")
    if checked.get("kinds"):
        parts.append("for " + ", ".join(map(kind_name, checked["kinds"])))
    if checked.get("tests"):
        parts.append(f"({checked['tests']:,} periods tested against their baseline)")
    sentence = "Checked " + " ".join(parts) + "." if parts else ""
    reason = attrs.get("reason")
    return " ".join(text for text in (sentence, f"Result: {reason}." if reason else "") if text)


def _masked(text: str) -> str:
    """The provider's error with every secret field masked (it is usually JSON)."""
    try:
        return json.dumps(scrub(json.loads(text)), sort_keys=True, ensure_ascii=False)
    except ValueError:
        return text


def _duration(step: pd.Timedelta) -> str:
    """``1h`` -> ``"1 h"``, ``15min`` -> ``"15 min"``, ``90s`` -> ``"90 s"``."""
    seconds = step.total_seconds()
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds // size:g} {unit}"
    return f"{seconds:g} s"


def _known(value: Any) -> bool:
    return value is not None and not pd.isna(value)


def _rate(value: Any) -> float | None:
    return float(value) if _known(value) else None
