"""The shareable delivery report: one self-contained, deterministic HTML file.

plotly.js is inlined once, so the file opens offline; figures have stable element ids, and the
same activity, provenance and ``generated_at`` give the same bytes. No payload, credential or API
key is rendered: only counts, statuses, providers, error texts and ids.

>>> result = delivery_report(client, since="7d", out="delivery-report.html")
>>> print(result.path, result.headline["notifications"])
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any

import jinja2
import pandas as pd
import plotly.offline

from toolkit import charts, metrics
from toolkit._version import __version__
from toolkit.errors import ParameterError
from toolkit.redact import is_secret
from toolkit.report.summary import headline, headline_lines, percent
from toolkit.timeutil import resolve_window, to_iso

__all__ = [
    "Report",
    "build_report",
    "check_out",
    "delivery_report",
    "headline",
    "headline_lines",
    "write_report",
]

TITLE = "Delivery report"

#: Element ids of the report's charts, in page order (see `_figures`).
CHARTS = (
    "chart-status-by-channel",
    "chart-status-timeline",
    "chart-failure-rate-by-provider",
    "chart-failure-reasons",
    "chart-time-to-deliver",
    "chart-delivery-funnel",
    "chart-status-by-provider",
)

_LABELS = {
    "base_url": "Service",
    "environment": "Environment",
    "after": "From",
    "before": "Until",
    "filters": "Filters",
}
_PLOT_CONFIG = {"displaylogo": False, "responsive": True}


@dataclass(frozen=True)
class Report:
    """A written report: where it is, its headline figures (see `headline`), its provenance."""

    path: Path
    headline: dict[str, Any]
    provenance: dict[str, Any]


def build_report(
    activity, *, provenance: Mapping[str, Any], generated_at: datetime, top: int = 10
) -> str:
    """The report of ``activity`` as one HTML document.

    Parameters
    ----------
    activity : Activity
        ``notifications``, ``jobs`` and ``execution_details`` frames.
    provenance : mapping
        Where the data came from, printed as given: usually ``base_url``, ``environment``,
        ``after``, ``before`` and ``filters``. Keys that name a secret (API key, token,
        password, credentials) are refused.
    generated_at : datetime
        Printed as the generation time (passed in, so output is reproducible).
    top : int
        Rows of the top-failures table and bars of the failure-reasons chart.

    Raises
    ------
    ParameterError
        A provenance key names a secret.
    """
    secret = sorted(key for key in provenance if is_secret(str(key)))
    if secret:
        raise ParameterError("provenance", secret, "no secrets (API keys, tokens, credentials)")
    figures = headline(activity)
    rendered = [
        {"id": element_id, "html": _figure_html(figure, element_id + "-plot")}
        for element_id, figure in _figures(activity, top).items()
    ]
    failures = metrics.top_failures(
        metrics.delivery_jobs(activity), activity.notifications, top=top
    )
    labels = ["channel", "provider_id", "error_code", "error_text"]
    failures[labels] = failures[labels].astype("string").fillna(charts.MISSING)
    rows = [
        {**row, "first_seen": to_iso(row["first_seen"]), "last_seen": to_iso(row["last_seen"])}
        for row in failures.to_dict("records")
    ]
    subtitle = [str(provenance.get("environment") or "unknown environment")]
    if provenance.get("after") or provenance.get("before"):
        subtitle.append(f"{_text(provenance.get('after'))} to {_text(provenance.get('before'))}")
    subtitle.append(f"generated {to_iso(generated_at)}")
    return _template().render(
        title=TITLE,
        subtitle=" · ".join(subtitle),
        version=__version__,
        plotlyjs=_plotlyjs(),
        cards=_cards(figures),
        by_channel=[
            {**row, "failure_rate": percent(row["failure_rate"])} for row in figures["by_channel"]
        ],
        charts=rendered,
        failures=rows,
        provenance=[
            *(
                (_LABELS.get(key, key.replace("_", " ").capitalize()), _text(value))
                for key, value in provenance.items()
            ),
            ("Generated at", to_iso(generated_at)),
            ("Toolkit version", __version__),
        ],  # fmt: skip
    )


def write_report(
    path: str | Path,
    activity,
    *,
    provenance: Mapping[str, Any],
    generated_at: datetime,
    top: int = 10,
) -> Path:
    """Write `build_report` to ``path`` (UTF-8, checked first with `check_out`); the path."""
    path = check_out(path)
    html = build_report(activity, provenance=provenance, generated_at=generated_at, top=top)
    path.write_text(html, encoding="utf-8")
    return path


def check_out(out: str | Path) -> Path:
    """``out`` as a Path, if a report can be written there: not a directory, in an existing
    directory, writable. Raises `ParameterError` (name ``out``) otherwise."""
    path = Path(out)
    folder = path.parent.resolve()
    if path.is_dir():
        raise ParameterError("out", str(out), "a file name, not a directory")
    if not folder.is_dir():
        raise ParameterError(
            "out", str(out), f"a file in an existing directory ({folder} is not one)"
        )
    if not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise ParameterError("out", str(out), "a file you may write")
    return path


def delivery_report(
    client=None,
    *,
    since: Any = "7d",
    until: Any = None,
    out: str | Path = "delivery-report.html",
    channels: str | list[str] | None = None,
    generated_at: datetime | None = None,
    top: int = 10,
    progress: bool = True,
    **filters: Any,
) -> Report:
    """Read the activity of a window and write its report.

    Parameters
    ----------
    client : Client, optional
        Default `toolkit.connect()` (the configured service, else the local sandbox).
    since, until : str, datetime or duration
        The window; ``"7d"`` is seven days before the service's now; ``until`` defaults to now.
    out : str or Path
        The HTML file to write, checked (`check_out`) before anything is read.
    channels : str or list of str, optional
        Only these channels.
    generated_at : datetime, optional
        Default the service's clock (``client.now()``).
    top : int
        Size of the top-failures table.
    progress : bool
        Show a progress bar while reading.
    **filters
        Other filters of `toolkit.read_activity` (``severity``, ``templates``, ...).

    Returns
    -------
    Report
    """
    from toolkit.client import connect
    from toolkit.read import read_activity

    out = check_out(out)
    client = connect() if client is None else client
    now = client.now()
    after, before = resolve_window(since, until, now=now, after_name="since", before_name="until")
    filters = {k: v for k, v in {"channels": channels, **filters}.items() if v is not None}
    activity = read_activity(client, after=after, before=before, progress=progress, **filters)
    provenance = {
        "base_url": client.base_url,
        "environment": client.environment or "unknown",
        "after": after,
        "before": before,
        "filters": filters,
    }
    path = write_report(
        out, activity, provenance=provenance, generated_at=generated_at or now, top=top
    )
    return Report(path=path, headline=headline(activity), provenance=provenance)


# --------------------------------------------------------------------------------------------


@cache
def _template() -> jinja2.Template:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("toolkit.report", ""),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )
    return env.get_template("template.html.j2")


@cache
def _plotlyjs() -> str:
    return plotly.offline.get_plotlyjs()


def _figure_html(fig, div_id: str) -> str:
    return fig.to_html(
        full_html=False,
        include_plotlyjs=False,
        div_id=div_id,
        default_height="420px",
        config=_PLOT_CONFIG,
    )


def _cards(figures: dict[str, Any]) -> list[dict[str, str]]:
    return [
        {"id": "notifications", "label": "notifications", "value": f"{figures['notifications']:,}"},
        {"id": "subscribers-reached", "label": "subscribers reached",
         "value": f"{figures['subscribers_reached']:,}"},
        {"id": "delivery-rate", "label": "delivery rate (sent or better)",
         "value": percent(figures["delivery_rate"])},
        {"id": "failure-rate", "label": "failure rate", "value": percent(figures["failure_rate"])},
        {"id": "failed-notifications", "label": "failed notifications",
         "value": f"{figures['failed_notifications']:,}"},
    ]  # fmt: skip


def _figures(activity, top: int) -> dict[str, Any]:
    """The figures of `CHARTS`, by element id."""
    details = activity.execution_details
    jobs = metrics.delivery_jobs(activity)
    freq, rate_freq = _buckets(details)
    figures = (
        charts.status_by_channel(details),
        charts.status_timeline(details, freq),
        charts.failure_rate_by_provider(jobs, rate_freq),
        charts.failure_reasons(jobs, top),
        charts.time_to_deliver(jobs),
        charts.delivery_funnel(activity),
        charts.status_by_provider(details),
    )
    return dict(zip(CHARTS, figures, strict=True))


def _buckets(details: pd.DataFrame) -> tuple[str, str]:
    """Bucket widths of the status timeline and of the (noisier) failure rates, by data span:
    up to 2 days hourly for both; up to 8 days hourly and 6-hourly; then 6-hourly and daily."""
    span = details["created_at"].max() - details["created_at"].min() if len(details) else None
    if span is None or span <= pd.Timedelta(days=2):
        return "1h", "1h"
    return ("1h", "6h") if span <= pd.Timedelta(days=8) else ("6h", "1D")


def _text(value: Any) -> str:
    """A provenance value as text: times in ISO, mappings as ``k=v; ...``, lists comma-joined."""
    if value is None:
        return "-"
    if isinstance(value, datetime):
        return to_iso(value)
    if isinstance(value, Mapping):
        return "; ".join(f"{k}={_text(v)}" for k, v in value.items()) or "none"
    if isinstance(value, list | tuple | set | frozenset):
        items = sorted(value) if isinstance(value, set | frozenset) else value
        return ", ".join(map(_text, items))
    return str(value)
