"""The shareable delivery report: one self-contained, deterministic HTML file.

Sections, in order: **Findings** (each incident of `toolkit.find_incidents` as a sentence with
its numbers and a small chart of its window, or "no incidents found" and what was checked), the
headline figures with their change against the previous period of the same length, a table per
(channel, provider), the charts, the top failures, a completeness note, a glossary
(`metrics.DEFINITIONS`) and the provenance. Every figure is a query of `toolkit.counts` to the
source (DuckDB over an Activity's frames, a store's engine over its files): the same code for
both, so the same window gives the same report; rows are fetched only for what is shown row by
row (the incidents' examples).

The report is a function of an Activity (+ the previous period's Activity), the provenance and
``generated_at``: `build_report` and `write_report` take them from anywhere (`read_activity`, a
store) as long as the frames have the `COLUMNS`; `delivery_report` reads them from a client,
`report_window` from any ``read(after, before)`` (an Activity or a store's `Window`), and
`store_report` from a store.
plotly.js is inlined once, compressed (`toolkit.report.bundle`), so the file opens offline and
stays under 2 MB; figures have stable element ids, and the same inputs give the same bytes. No payload, credential or API key is rendered.

>>> result = delivery_report(client, since="7d", out="delivery-report.html")
>>> print(result.path, result.headline["failure_rate"], len(result.findings))
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any

import jinja2
import pandas as pd

from toolkit import _checks as arg
from toolkit import charts, metrics, words
from toolkit._fork import Forked
from toolkit._version import __version__
from toolkit.errors import ParameterError, RetentionError
from toolkit.redact import is_secret
from toolkit.report import bundle, changes
from toolkit.report.findings import findings as findings_section
from toolkit.report.summary import (
    cards,
    figures,
    headline,
    headline_lines,
    provider_table,
    source_headline,
)
from toolkit.timeutil import resolve_window, to_iso

__all__ = [
    "COLUMNS",
    "COUNTED_COLUMNS",
    "Report",
    "Window",
    "build_report",
    "check_out",
    "delivery_report",
    "headline",
    "headline_lines",
    "report_window",
    "store_report",
    "write_report",
]

TITLE = "Delivery report"

#: Seconds the report waits at least for its previous period's forked process once the window is
#: read and counted (``concurrent="process"``): one response's deadline (`Transport`'s
#: ``timeout``), or twice what the window took if longer (the period is as long as the window and
#: its read started with it). Then the process is killed and the period read in this process.
PREVIOUS_WAIT = 30.0

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

#: The columns of each activity frame the report reads: the measures' (`metrics.REQUIRED_COLUMNS`)
#: plus what the funnel and the top failures show. The status charts also count every execution
#: detail by channel and provider (`metrics.detail_counts`) unless given the counts.
COLUMNS = {
    name: tuple(dict.fromkeys((*metrics.REQUIRED_COLUMNS[name], *extra)))
    for name, extra in (
        ("notifications", ("transaction_id", "status")),
        ("jobs", ()),
        ("execution_details", ()),
    )
}
#: What the status charts need of the execution details when their counts are not given.
COUNTED_COLUMNS = ("created_at", "channel", "provider_id", "status", "execution_detail_id")

_LABELS = {
    "base_url": "Service",
    "environment": "Environment",
    "after": "From",
    "before": "Until",
    "filters": "Filters",
    "previous": "Previous period",
}
_RETENTION = (
    "The service keeps activity for its plan's retention (24 hours on a free plan, 7 days on pro, "
    "90 days on team and business): an older window cannot be read, nor compared with."
)


@dataclass(frozen=True)
class Window:
    """A window of a source: the report asks it for every figure (`toolkit.counts`, run by its
    engine: DuckDB over an Activity's frames or a store's files, or Spark), and for the rows it
    shows. An Activity is its own window (``after`` and ``before`` None)."""

    source: Any
    after: datetime | None = None
    before: datetime | None = None


@dataclass(frozen=True)
class Report:
    """A written report: where it is, its headline figures (see `headline`) and the previous
    period's (None when it was not read), its findings (`toolkit.find_incidents`), provenance."""

    path: Path
    headline: dict[str, Any]
    previous: dict[str, Any] | None
    findings: pd.DataFrame
    provenance: dict[str, Any]


def build_report(
    activity,
    *,
    provenance: Mapping[str, Any],
    generated_at: datetime,
    previous=None,
    incidents: pd.DataFrame | None = None,
    counts: pd.DataFrame | None = None,
    top: int = 10,
) -> str:
    """The report of ``activity`` as one HTML document.

    Parameters
    ----------
    activity : Activity
        ``notifications``, ``jobs`` and ``execution_details`` with at least the `COLUMNS`.
    provenance : mapping
        Where the data came from, printed as given: usually ``base_url``, ``environment``,
        ``after``, ``before``, ``filters`` and ``previous`` (the previous period, or why it is
        missing). Keys that name a secret (API key, token, password, credentials) are refused.
    generated_at : datetime
        Printed as the generation time (passed in, so output is reproducible).
    previous : Activity, optional
        The previous period of the same length, for the headline's changes.
    incidents : DataFrame, optional
        ``toolkit.find_incidents(activity)``, if already computed.
    counts : DataFrame, optional
        ``metrics.detail_counts(activity.execution_details)`` (hourly), if already counted;
        without them the execution details need the `COUNTED_COLUMNS` too.
    top : int
        Rows of the top-failures table and bars of the failure-reasons chart.

    Raises
    ------
    ParameterError
        ``top`` is not a positive whole number, a provenance key names a secret, or a frame
        lacks a column of `COLUMNS`.
    """
    arg.top(top)
    before = None if previous is None else _headline_of(previous)
    window = _window(activity, "activity", counts)
    return _render(_contents(window, before, incidents, top, counts), provenance, generated_at)


def write_report(path: str | Path, activity, **options: Any) -> Path:
    """Write ``build_report(activity, **options)`` to ``path`` (UTF-8, checked first with
    `check_out`) and return the path."""
    path = check_out(path)
    from toolkit.store.state import write_text  # atomic: a failed write leaves the old report

    write_text(path, build_report(activity, **options))
    return path


def check_out(out: str | Path) -> Path:
    """``out`` as a Path, if a report can be written there: not a directory, in an existing
    directory, writable. Raises `ParameterError` (name ``out``) otherwise."""
    path = Path(out)
    folder = path.parent.resolve()
    if path.is_dir():
        raise ParameterError("out", str(out), "a file name, not a directory")
    if not folder.is_dir():
        raise ParameterError("out", str(out), f"a file in an existing directory ({folder} is not one)")  # fmt: skip
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
    """Read the activity of a window and of the period before it, and write their report.

    Parameters
    ----------
    client : Client, optional
        Default `toolkit.connect()` (the configured service, else the local sandbox).
    since, until : str, datetime or duration
        The window; ``"7d"`` is seven days before the service's now; ``until`` defaults to now.
        The previous period is as long and ends where the window starts; when the plan's
        retention does not reach it, the report says so and shows no changes.
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

    out, top = check_out(out), arg.top(top)
    client = connect() if client is None else client
    read, source, filters = _client_read(client, progress, {"channels": channels, **filters})
    return report_window(read, now=client.now(), since=since, until=until, out=out,
                         source=source, filters=filters, generated_at=generated_at, top=top,
                         concurrent=True)  # fmt: skip


def _client_read(client, progress: bool, filters: Mapping[str, Any]):
    """``read(after, before)`` of `read_activity` with ``filters`` (None ones left out), the
    client's provenance and the filters kept: what `report_window` takes for a client."""
    from toolkit.read import read_activity

    filters = {k: v for k, v in filters.items() if v is not None}

    def read(after: datetime, before: datetime):
        return read_activity(client, after=after, before=before, progress=progress, **filters)

    source = {"base_url": client.source, "environment": client.environment or "unknown"}
    return read, source, filters


def report_window(
    read: Callable[[datetime, datetime], Any],
    *,
    now: datetime,
    since: Any = "7d",
    until: Any = None,
    out: str | Path = "delivery-report.html",
    source: Mapping[str, Any] | None = None,
    filters: Mapping[str, Any] | None = None,
    generated_at: datetime | None = None,
    top: int = 10,
    concurrent: bool = False,
) -> Report:
    """Resolve a window, read it and the previous period with ``read``, and write their report:
    what `delivery_report` does, for any source of activity (a client, a store).

    Parameters
    ----------
    read : callable
        ``read(after, before) -> Activity`` (or a `Window` of a source that counts, a store);
        it may raise `RetentionError` for a previous period it cannot serve (the report then
        says so and shows no changes).
    now : datetime
        What ``since``/``until`` count back from; the default ``generated_at``.
    since, until, out, generated_at, top
        As in `delivery_report`.
    source : mapping, optional
        The provenance of the source (``base_url``, ``environment``, a store's path, ...).
    filters : mapping, optional
        The filters ``read`` applies, for the provenance.
    concurrent : bool or "process"
        Read and count the previous period while the window is read and counted: True in a
        thread (``read`` must be thread-safe), ``"process"`` in a forked child process, on the
        other core (for a program whose only thread is this one, not a notebook: see
        `toolkit._fork`); a child without an answer `PREVIOUS_WAIT` after the window is done
        is killed and the period read in this process (a warning logged).
    """
    out, top = check_out(out), arg.top(top)
    if not (isinstance(concurrent, bool) or concurrent == "process"):
        raise ParameterError("concurrent", concurrent, 'True, False or "process"')
    after, before = resolve_window(since, until, now=now, after_name="since", before_name="until")
    start = after - (before - after)
    if concurrent == "process":  # only the previous period's headline and counts cross back
        forked_at = time.monotonic()
        earlier_read = Forked(_previous, read, start, after, what="the previous period's read")
        try:  # the window's contents first: the child ends meanwhile, on the other core
            contents = _contents(_window(read(after, before), "activity"), None, None, top)
        except BaseException:
            earlier_read.cancel()
            raise
        took = time.monotonic() - forked_at
        previous, earlier, earlier_counts = earlier_read.result(max(PREVIOUS_WAIT, 2 * took))
    elif concurrent:  # the previous period is read and counted while the window is
        with ThreadPoolExecutor(1, thread_name_prefix="toolkit-report") as pool:
            earlier_read = pool.submit(_previous, read, start, after)
            contents = _contents(_window(read(after, before), "activity"), None, None, top)
            previous, earlier, earlier_counts = earlier_read.result()
    else:  # the previous period first: only its headline and counts are kept
        previous, earlier, earlier_counts = _previous(read, start, after)
        contents = _contents(_window(read(after, before), "activity"), None, None, top)
    contents["previous"] = previous
    if not filters:  # a store counts its whole window in its engine: unfiltered only
        window = (start, after, before)
        contents["changes"] = changes.section(contents["counts"], earlier_counts, window, _figure_html)  # fmt: skip
    provenance = {**(source or {}), "after": after, "before": before,
                  "filters": dict(filters or {}), "previous": earlier}  # fmt: skip
    from toolkit.store.state import write_text  # atomic: a failed write leaves the old report

    write_text(out, _render(contents, provenance, generated_at or now))
    return Report(path=out, headline=contents["headline"], previous=contents["previous"],
                  findings=contents["incidents"], provenance=provenance)  # fmt: skip


def store_report(
    store,
    since: str | datetime = "7d",
    until: str | datetime | None = None,
    *,
    out: str | Path = "delivery-report.html",
    top: int = 10,
    **filters: Any,
) -> Report:
    """The HTML delivery report of a window of a store (`toolkit.open_store`), every figure
    counted by the store's engine (DuckDB, or Spark); ``since`` and ``until`` count back from
    its watermark. The previous period is compared when the store holds it. The same report as
    `build_report` of the window's rows.

    >>> toolkit.report.store_report(toolkit.open_store("activity"), since="30d", out="r.html")
    """
    first, watermark = store.window
    selection = store.selection(**filters)  # checked before anything is read

    def read(after: datetime, before: datetime) -> Window:
        if first is not None and after < first:
            raise RetentionError(
                "READ", str(store.path), None, f"the store holds activity from {to_iso(first)}",
                earliest=first,
            )  # fmt: skip
        store._window(after, before, selection.filters)
        return Window(selection, after, before)

    source = {"base_url": store.service, "environment": store.environment,
              "store": str(store.path), "engine": store.engine_name}  # fmt: skip
    if watermark is None:
        raise ParameterError("store", str(store.path), "a store with data: run sync first")
    return report_window(read, now=watermark, since=since, until=until, out=out,
                         source=source, filters=selection.filters, top=top)  # fmt: skip


# --------------------------------------------------------------------------------------------


def _previous(read: Callable[[datetime, datetime], Any], start: datetime, end: datetime):
    """The previous period's headline figures (its activity is not kept), its provenance text
    and its counts for `changes`; None, why and None when it is beyond the retention."""
    try:
        previous = read(start, end)
    except RetentionError as error:
        return None, "not available: it starts before the plan's retention" + (
            f" (the earliest readable instant is {to_iso(error.earliest)})" if error.earliest else ""
        ), None  # fmt: skip
    text = f"{to_iso(start)} to {to_iso(end)}"
    if not isinstance(previous, Window):
        _check_columns(previous, "previous", counted=False)
        previous = Window(_counted(previous))
    return _headline_of(previous), text, changes.period_counts(previous)


def _headline_of(previous) -> dict[str, Any]:
    """The headline figures of the previous period (an Activity or a `Window`)."""
    if isinstance(previous, Window):
        return source_headline(previous.source, previous.after, previous.before)
    _check_columns(previous, "previous", counted=False)
    return headline(_counted(previous))


def _window(read: Any, name: str, counts: pd.DataFrame | None = None) -> Window:
    """What ``read`` gave as a `Window`: an Activity (its columns checked) is its own."""
    if isinstance(read, Window):
        return read
    if counts is not None and not metrics.is_detail_counts(counts):
        raise ParameterError("counts", type(counts).__name__, "metrics.detail_counts(activity.execution_details)")  # fmt: skip
    _check_columns(read, name, counted=counts is None)
    return Window(_counted(read))


def _counted(activity) -> Any:
    """An Activity as the report's queries read it: its delivery jobs computed once and its
    frames converted for the engine once (`toolkit.counts.Given`), not once per query."""
    from toolkit.counts import Given

    return Given(activity)


def _find_incidents(source: Any, after: datetime | None, before: datetime | None) -> pd.DataFrame:
    """`toolkit.find_incidents` of a window, the report's one call: counted by the source's
    engine (a store's weeks before the window are the volume's baseline)."""
    from toolkit.counts import Given
    from toolkit.incidents import find_incidents

    if isinstance(source, Given):  # an Activity: its delivery jobs as computed already
        return find_incidents(source.activity, jobs=source.jobs, after=after, before=before)
    from toolkit.store.reader import Store, _Selection

    if after is None and before is None:
        return find_incidents(source)
    store = source.store if isinstance(source, _Selection) else source
    baseline = store if isinstance(store, Store) else None
    return find_incidents(source, after=after, before=before, baseline=baseline)


def _contents(window: Window, before, incidents, top: int, counts=None) -> dict[str, Any]:
    """Everything the report shows, computed (no HTML yet), each figure a query of
    `toolkit.counts` to the window's source; ``before``: the previous period's headline
    figures; ``counts``: the hourly detail counts, when given."""
    from toolkit.counts import (
        DEFAULT_BY,
        around,
        delivery_counts,
        detail_counts,
        failures,
        notification_statuses,
        summaries,
    )

    source, span = window.source, {"after": window.after, "before": window.before}
    if incidents is None:
        incidents = _find_incidents(source, **span)
    totals, channels, providers = summaries(source, [(), "channel", ["channel", "provider_id"]], **span)  # fmt: skip
    counts = detail_counts(source, **span) if counts is None else counts
    freq, rate_freq = _buckets(counts)
    delivery = delivery_counts(source, freq=rate_freq, by=DEFAULT_BY, **span)
    failed = failures(source, top=top, **span)
    shown = failed.head(top).copy()
    labels = ["channel", "provider_id", "error_code", "error_text"]
    shown[labels] = shown[labels].astype("string").fillna(charts.MISSING)
    nearby = around(source, charts.incident_spans(incidents), **span)
    statuses = notification_statuses(source, **span)  # summed: the number of notifications
    figures_of = {
        "chart-status-by-channel": charts.status_by_channel(counts),
        "chart-status-timeline": charts.status_timeline(counts, freq),
        "chart-failure-rate-by-provider": charts.failure_rate_by_provider(delivery, rate_freq),
        "chart-failure-reasons": charts.failure_reasons(failed, top),
        "chart-time-to-deliver": charts.time_to_deliver(channels),
        "chart-delivery-funnel": charts.delivery_funnel(statuses),
        "chart-status-by-provider": charts.status_by_provider(counts),
    }
    return {
        "headline": figures(int(statuses["notifications"].sum()), totals, channels),
        "previous": before,
        "changes": None,  # the window against the previous period (`report_window`)
        "counts": changes.whole(delivery),
        "incidents": incidents,
        "findings": findings_section(incidents, nearby, _figure_html),
        "providers": provider_table(providers, failed),
        "charts": [
            {"id": element_id, "html": _figure_html(figures_of[element_id], element_id + "-plot")}
            for element_id in CHARTS
        ],
        "failures": [
            {
                **row,
                "first_seen": words.moment(row["first_seen"]),
                "last_seen": words.moment(row["last_seen"]),
            }
            for row in shown.to_dict("records")
        ],  # fmt: skip
        "in_flight_notifications": int(totals["in_flight_notifications"].iloc[0]),
    }


def _render(contents: dict[str, Any], provenance: Mapping[str, Any], generated_at) -> str:
    secret = sorted(key for key in provenance if is_secret(str(key)))
    if secret:
        raise ParameterError("provenance", secret, "no secrets (API keys, tokens, credentials)")
    subtitle = [str(provenance.get("environment") or "unknown environment")]
    if provenance.get("base_url"):
        subtitle.append(str(provenance["base_url"]))
    if provenance.get("after") and provenance.get("before"):
        subtitle.append(words.window(provenance["after"], provenance["before"]))
    subtitle.append(f"generated {words.moment(generated_at)}")
    return _template().render(
        title=TITLE,
        subtitle=" · ".join(subtitle),
        version=__version__,
        plotlyjs=bundle.packed_plotlyjs(),
        loader=bundle.LOADER,
        findings=contents["findings"],
        changes=contents["changes"],
        cards=cards(contents["headline"], contents["previous"]),
        providers=contents["providers"],
        charts=contents["charts"],
        failures=contents["failures"],
        completeness=_completeness(contents, provenance),
        glossary=list(metrics.DEFINITIONS.items()),
        provenance=[
            *(
                (_LABELS.get(key, key.replace("_", " ").capitalize()), _text(value))
                for key, value in provenance.items()
            ),
            ("Generated at", to_iso(generated_at)),
            ("Toolkit version", __version__),
        ],  # fmt: skip
    )


def _completeness(contents: dict[str, Any], provenance: Mapping[str, Any]) -> list[str]:
    figures = contents["headline"]
    notes = [
        f"{figures['in_flight']:,} delivery jobs of {contents['in_flight_notifications']:,} "
        "notifications were still in flight when read: their outcome may still change, and "
        "they count neither as failures nor as successes.",
        f"{figures['not_sent']:,} delivery jobs were not sent (skipped, canceled or merged into "
        "a digest) and are not counted in the failure rates.",
        "Records keep changing after they are read (late provider webhooks, read confirmations, "
        "retries): the same window read later can give slightly different numbers.",
        _RETENTION,
    ]
    if contents["previous"] is None:
        reason = provenance.get("previous") or "not read"
        notes.append(f"Previous period: {reason}; the headline shows no changes.")
    return notes


def _check_columns(activity, name: str, *, counted: bool) -> None:
    """Refuse an Activity without the `COLUMNS` (and the `COUNTED_COLUMNS`, when ``counted``:
    the report counts its execution details itself)."""
    for frame_name, needed in COLUMNS.items():
        if counted and frame_name == "execution_details":
            needed = tuple(dict.fromkeys((*needed, *COUNTED_COLUMNS)))
        frame = getattr(activity, frame_name, None)
        if not isinstance(frame, pd.DataFrame):
            raise ParameterError(name, type(activity).__name__, "an Activity (notifications, jobs, execution_details)")  # fmt: skip
        missing = [column for column in needed if column not in frame.columns]
        if missing:
            raise ParameterError(f"{name}.{frame_name}", f"a frame without {missing}",
                                 f"the columns {list(needed)}")  # fmt: skip


def _preload() -> None:
    """Import and load what a report needs later (the reads and their progress bars, the incident
    finder, scipy's special functions of the headline, DuckDB and its database, plotly's figures,
    the template, plotly.js, the atomic write): a command does it while its local sandbox starts,
    instead of after the reads."""
    import plotly.graph_objects
    import scipy.special  # noqa: F401 - the headline's intervals and tails (`toolkit.metrics`)
    import tqdm.auto  # noqa: F401 - the reads' progress bars

    import toolkit.changes  # noqa: F401 - the section "what changed"
    import toolkit.incidents  # noqa: F401
    import toolkit.read  # noqa: F401
    import toolkit.store.state  # noqa: F401 - the report's atomic write
    from toolkit import engines

    engines._database(os.getpid())
    plotly.graph_objects.Figure()
    _template()
    bundle.packed_plotlyjs()


@cache
def _template() -> jinja2.Template:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("toolkit.report", ""),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )
    env.filters.update(provider=words.provider_name, channel=words.channel_name)
    return env.get_template("template.html.j2")


def _figure_html(fig, div_id: str) -> str:
    return bundle.figure_html(fig, div_id)


def _buckets(counts: pd.DataFrame) -> tuple[str, str]:
    """Bucket widths of the status timeline and of the (noisier) failure rates, by the span of
    the hours with execution details: up to 2 days hourly for both; up to 8 days hourly and
    6-hourly; then 6-hourly and daily."""
    span = counts["created_at"].max() - counts["created_at"].min() if len(counts) else None
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
