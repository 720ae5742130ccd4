"""`find_incidents`: scan every group and period of an Activity or a Store from counts its engine
computes, fetch the rows of the few significant periods, keep what the tests say, one row per
incident (the rules are in the package docstring)."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from toolkit import counts as engine_counts
from toolkit import metrics, words
from toolkit.counts import delivery_counts, occasion_counts
from toolkit.error_codes import RATE_LIMITED, SERVER_ERROR
from toolkit.errors import ParameterError
from toolkit.incidents import loops, offdays, rates, season, tables, volume
from toolkit.incidents.mix import Mix
from toolkit.incidents.scan import (
    PSEUDO_EVENTS,
    PSEUDO_TRIALS,
    STILL_GOING,
    Evidence,
    Pick,
    Scan,
    p_value,
    segment,
)
from toolkit.incidents.summary import KINDS, empty, group_of, row_code, rows_frame, set_aside

#: Bucket widths `find_incidents` picks from (the first giving at most `MAX_BUCKETS` buckets).
FREQS = ("1min", "2min", "5min", "10min", "15min", "30min", "1h", "2h", "3h", "6h", "12h", "1D")
MAX_BUCKETS = 224  # four weeks in 3-hour buckets: a few hours' incident is not diluted
#: The most buckets a given ``freq`` may make (the scan's work grows with their square).
FREQ_LIMIT = 1440
#: Fewer buckets than this: the window is too short to compare a period with the rest of it.
MIN_BUCKETS = 6
#: Error codes and messages that say a token or credential is no longer valid (any provider).
CREDENTIAL_WORDS = re.compile(
    r"token|regist|credential|unauthori[sz]ed|invalid[_ ]?auth|revoked|expired|forbidden|"
    r"no_service|\bgone\b|\b(401|403|410)\b|not[_ ]?found|deactivated|uninstalled|"
    r"invalid[_ ]?(api[_ ]?)?key|bad[_ ]?device",
    re.IGNORECASE,
)
#: Share of a row's affected jobs already in a kept row above which it is the same incident;
#: also the share of a provider's failures one domain must have to be that domain's bounces,
#: and the share of an outage's failed jobs that the service retried.
MOST = 0.5
#: The scans whose buckets vary as a whole beyond their dispersion (`rates.bucket_spread`): a
#: provider's bad hours fail its sends together, and its queue slows a bucket's sends together.
SPREAD_SCANS = ("provider", "latency")
#: The scans whose rates may follow the service's load (`rates.load_law`): a queue slows every
#: send when the service sends more than its hours usually do. Failures were measured with it
#: too and left out: the power of the relative load misweighed a provider's ordinary hours
#: (Tidewater gained SES Throttling rows lasting days).
LOAD_SCANS = ("latency",)
#: Share of a window's days a workflow must send through a provider on for a window read alone
#: to set its own slow threshold (`_steady_own`).
STEADY_DAYS = 0.5
#: Periods tested per group: the best, then the best apart from those found, ...
ROUNDS = 4
#: The scans each kind needs.
SCANS_OF = {
    "provider_outage": ("provider",),
    "error_spike": ("code", "provider"),
    "stale_credentials": ("code",),
    "domain_bounces": ("domain",),
    "latency_degradation": ("latency",),
    "volume_drop": ("volume", "channel_volume"),  # without a season only
    "volume_spike": (),
    "traffic_shift": (),
}
#: The kinds a seasonal baseline decides.
VOLUME = frozenset(("volume_drop", "volume_spike", "traffic_shift"))
#: Which kind wins when two rows are one incident (first wins); see the package docstring.
PRECEDENCE = (
    "standing",  # people already failing so (`_standing`): it claims its jobs, and is no row
    "domain_bounces",
    "stale_credentials",
    "provider_outage",
    "error_spike",
    "provider_outage:partial",
    "latency_degradation",
    "volume_drop",
)
#: How much history a Store baseline is asked for (weeks before the window).
HISTORY = pd.Timedelta(days=28)
#: How long before a failure row its subscribers' failures with its code are looked for: a
#: week of them is their standing state (`_standing`).
STANDING = pd.Timedelta(days=7)
#: The columns of the jobs fetched to see whether an error row's subscribers succeed again.
AGAIN = ("job_id", "channel", "provider_id", "subscriber_id", "scan_at", "met_failure",
         "error_code")  # fmt: skip


def find_incidents(
    source: Any,
    *,
    after: Any = None,
    before: Any = None,
    baseline: Any = None,
    jobs: pd.DataFrame | pa.Table | None = None,
    kinds: list[str] | tuple[str, ...] | None = None,
    alpha: float = 0.01,
    min_jobs: int = 10,
    min_failed: int = 5,
    min_ratio: float = 2.0,
    outage_rate: float = 0.5,
    freq: str | None = None,
) -> pd.DataFrame:
    """The incidents in ``source``, one row each, sorted by impact.

    Parameters
    ----------
    source : Activity or Store
        From ``read_activity`` (`toolkit.metrics.REQUIRED_COLUMNS` at least), or a store
        (`toolkit.open_store`, on DuckDB or Spark): its engine counts, and only the rows of the
        significant periods are fetched.
    after, before : str or datetime, optional
        The window of notifications (by their creation); default all of ``source``.
    baseline : Activity, Store or DataFrame, optional
        What normal looks like: for volume, the weeks before the window (an Activity, a Store:
        its four weeks before the window, or `toolkit.delivery_counts` by channel, provider_id
        and workflow at ``freq="1h"``), needed when the window spans fewer than three weeks
        (two weeks alone are each other's history, each row confirmed by the other days);
        for failure rates, an Activity replaces the rest of the window.
    jobs : DataFrame or pyarrow.Table, optional
        ``metrics.delivery_jobs(source)`` (or `toolkit.counts.Given`'s ``jobs``) if already
        computed (an Activity only; not needed).
    kinds : list of str, optional
        Report only these `KINDS` (default all).
    alpha : float
        Family-wise error rate: the largest corrected p-value reported.
    min_jobs, min_failed : int
        A period needs at least ``min_jobs`` jobs, and failed (slow) jobs of at least
        ``min_failed`` different subscribers (a volume drop: that many notifications expected).
    min_ratio : float
        Its rate must be at least ``min_ratio`` times the baseline's (volume: at most 1/that).
    outage_rate : float
        A provider failing at least this share of its sends, retried, is down
        (``provider_outage``); below it, one error code is an ``error_spike``.
    freq : str, optional
        Bucket width of the scan (default: about 150-190 buckets over the window).

    Returns
    -------
    DataFrame
        `COLUMNS`; ``attrs["reason"]`` says why it is empty, ``attrs["checked"]`` what was
        examined (window, bucket width, jobs, periods tested), ``attrs["set_aside"]`` the
        significant periods read as a load or as a day like the week's off days, a sentence
        each.
    """
    _check(kinds, alpha, min_jobs, min_failed, min_ratio, outage_rate)
    if baseline is not None:  # a baseline of another environment is refused
        season.same_environment(source, baseline)
    if jobs is None:
        _check_source(source)
    if not _is_store(source):  # its delivery jobs computed once, read by every query below
        source = engine_counts.Given(source, jobs)
    window = {"after": after, "before": before}
    wanted = tuple(KINDS) if kinds is None else tuple(kinds)
    # the jobs by hour and cell: volume's season, and a window read alone's steady workflows
    hourly = VOLUME & set(wanted) or (baseline is None and "latency_degradation" in wanted)
    reference, season_counts, histogram = engine_counts.scan_window(  # one pass
        source, **window, by=season.CELL if hourly else None
    )
    after, before = _window(source, after, before, reference)
    total = int(reference["jobs"].sum())
    checked = {"kinds": list(wanted), "jobs": total, "after": after, "before": before}
    if not total or after is None:
        return empty("no delivery jobs in the activity", checked)
    # counts, a store: volume only; what its send occasions are counted from
    baseline, base_reference, history, sends = _baseline(baseline, after)
    step = _freq(freq, before - after)
    grid = tables.Grid(after, step, max(1, int(np.ceil((before - after) / step))))
    checked["freq"] = step
    if baseline is None and grid.count < MIN_BUCKETS:
        reason = (f"the window ({before - after}) is too short to compare a period with the rest "
                  "of it: read a longer window or pass baseline=")  # fmt: skip
        return empty(reason, checked)
    seasonal, missing, fresh = None, [], []
    if VOLUME & set(wanted):
        # read alone, nothing for days before the first job is no history; a baseline's
        # jobs before the window say the service was sending: the same is then a silence
        fresh = season.no_history(season_counts, after, before) if baseline is None else []
        missing = _unheld(source, after, before) + fresh
        seasonal = season.build(lambda: season_counts, after, before, *history, missing=missing)
        if isinstance(seasonal, str):
            checked["baseline"] = (f"no seasonal baseline ({seasonal}): volume is compared with "
                                   "the rest of the window")  # fmt: skip
        else:
            checked["baseline"] = f"expected counts: {seasonal.source}"
    names = {name for kind in wanted for name in SCANS_OF[kind]}
    # two weeks alone: where the channels' shares are flat, the rest of the window is a better
    # baseline than the other week, so the share scans run to tell (`_unjudged`)
    paired = isinstance(seasonal, season.Season) and seasonal.confirm
    if paired:
        names |= {"volume", "channel_volume"}
    elif not isinstance(seasonal, str):
        names -= {"volume", "channel_volume"}
    if names - {"volume", "channel_volume"}:  # kinds that can be one incident: decide together
        names |= {"provider", "code", "domain"}
    names = sorted(names)
    slow_above = base_reference  # a window read alone: its own (`_steady_own`), if scanned
    if base_reference is None and "latency" in names:
        slow_above = _steady_own(engine_counts.slow_thresholds(
            source, **window, quantile=tables.SLOW_QUANTILE, hist=histogram), season_counts,
            before - after)  # fmt: skip
    elif base_reference is None:  # no slow sends scanned: none counted
        slow_above = pd.DataFrame(columns=engine_counts.THRESHOLDS)
    span = history[1] if baseline is not None else None  # an Activity's: failure rates by hour
    busy = None  # the service's busy hours, where failures are scanned (`volume.busy_hours`)
    if isinstance(seasonal, season.Season) and {"provider", "code"} & set(names):
        busy = volume.busy_hours(seasonal)
    found = _Found(source, window, grid, slow_above, baseline, names, span, busy)
    rule = {
        name: Evidence(min_jobs, min_failed, min_ratio, low=tables.SPECS[name].low)
        for name in names
    }
    # the providers' first: how much their failures vary by bucket is their codes' and domains'
    scans = {
        name: found.scan(name, rule[name])
        for name in sorted(names, key=lambda name: name != "provider")
    }
    shares = {name for name in ("volume", "channel_volume") if name in scans}
    why = _unjudged([scans[name] for name in shares], grid) if baseline is None else None
    unjudged = shares if why else set()  # their periods still count in the correction
    uncounted = set()
    if paired and why:  # shares that follow the day: the weeks decide, the shares are not tested
        uncounted, why = shares, None
    elif paired:
        seasonal = ("two weeks whose channels' shares of the notifications do not follow the "
                    "hour of the day: the rest of the window is the better baseline")  # fmt: skip
        checked["baseline"] = f"no seasonal baseline ({seasonal}): volume is compared with it"
    if why:
        checked["baseline"] = (f"volume not compared: no seasonal baseline ({seasonal}), and "
                               f"{why}; pass baseline= the {season.MIN_WEEKS} weeks or more "
                               "before the window")  # fmt: skip
    learnt = [found.rates[name] for name in names if not tables.SPECS[name].low]
    if learnt:  # what the failure rates were compared with
        said = checked.get("baseline")
        checked["baseline"] = (
            f"{said}; {rates.describe(learnt)}" if said else rates.describe(learnt)
        )
    if fresh:  # said first: every comparison below is of the hours after
        begins = fresh[0][1] - season.HOUR
        checked["baseline"] = (f"no jobs before {words.day(begins)} {begins:%H:00} UTC, {(begins - after).days} "
                               "days into the window: read as before the service's history, not "
                               f"as silence; {checked['baseline']}")  # fmt: skip
    counted, evidence = {}, Evidence(min_jobs, min_failed, min_ratio)
    if isinstance(seasonal, season.Season):
        counted = volume.scans(seasonal, evidence)
    tests = sum(scan.tests for name, scan in scans.items() if name not in uncounted)
    tests = tests + sum(scan.tests for scan, _ in counted.values()) or 1

    def occasions(groups: dict) -> dict:  # the groups' send occasions, counted when asked
        return _occasions(groups, source, window, (after, before, missing), sends, history)

    if counted:  # silences, and spikes of fan-outs: send occasions (a query)
        volume.on_occasions(counted, occasions, alpha / tests)
    checked["tests"] = round(tests)  # volume periods count as effective tests: fractions
    picked = [(name, pick) for name, scan in scans.items() if name not in unjudged
              for pick in _significant(scan, alpha / tests)]  # fmt: skip
    found.fetch(picked)
    candidates = []
    for name, pick in picked:
        row = found.refine(name, scans[name], pick, tests, rule[name])
        if row is not None and row["p_value"] <= alpha:
            candidates.append(row)
    rows = _one_per_incident(found, candidates, wanted, outage_rate, min_failed)
    _whole_domain(found, rows, scans.get("domain"), alpha, min_ratio)
    moved = []
    for (level, low), (scan, groups) in counted.items():
        again = partial(volume.on_occasions, counted, occasions, alpha / tests, (level, low))
        for pick in _significant(scan, alpha / tests, again):
            row = volume.candidate(seasonal, level, low, groups, pick, tests)
            if row["p_value"] <= alpha and volume.departs(row, evidence):
                moved.append(row)
    moved = [
        row
        for row in volume.one_per_cause(seasonal, moved, alpha, evidence)
        if row["kind"] in wanted
    ]
    spikes, bursts = [row for row in moved if row["kind"] == "volume_spike"], []
    if spikes:  # a burst sent at once, or like its usual ones, is no spike (a query)
        kept = {id(row) for row in volume.triggered(seasonal, spikes, occasions, alpha / tests)}
        moved = [row for row in moved if row["kind"] != "volume_spike" or id(row) in kept]
        bursts = [row for row in spikes if id(row) not in kept]
    moved = volume.at_the_same_time(seasonal, moved)
    # a spike's load: the spike's row; a burst's that is no spike: none, set aside
    rows = volume.loaded_by_spikes(seasonal, rows, moved + bursts)
    aside = [(row, f"the load of a burst of {group_of(burst)}, read as no spike (sent as its "
                   "bursts or batches are)")
             for burst in bursts for row in burst.get("slowed", []) + burst.get("limited", [])]  # fmt: skip
    if isinstance(seasonal, season.Season):  # a workflow's own burst queues its sends
        kept = volume.queued_by_own_burst(seasonal, rows, alpha)
        aside += [(row, f"the queue of workflow {row['mostly']}'s own burst through the provider "
                   "(most of its slow sends)") for row in _left_out(rows, kept)]  # fmt: skip
        rows = volume.loaded_by_busy_hours(kept, alpha)  # and the service's busy hours
        aside += [(row, f"the load of the service's busy hours (over {volume.LARGER:g} times their "
                   "hour's usual jobs): it does not hold without them")
                  for row in _left_out(kept, rows)]  # fmt: skip
    rows = _one_per_provider(found, rows)
    if moved:
        volume.impact(seasonal, moved, engine_counts.group_counts(
            source, **window, groups=volume.counted_groups(moved)))  # fmt: skip
    if isinstance(seasonal, season.Season):  # a public holiday: a day like the off days
        moved, off = offdays.off_day_drops(seasonal, moved, alpha, min_jobs)
        aside += off
    if "volume_spike" in wanted:  # a loop re-sending to a few people, its count hidden or not
        learnt = (sends, history[1]) if history and sends is not None else None
        found_loops = loops.find(source, window, before, learnt, alpha, tests, min_jobs)
        moved = loops.with_loops(moved, found_loops)
    rows += moved
    aside = set_aside(aside, found.jobs) if aside else []
    if not rows:
        return empty("no period of any group departs from its baseline", checked, aside)
    return rows_frame(rows, found.jobs, found.failure_payloads, checked, aside)


def _left_out(rows: list[dict], kept: list[dict]) -> list[dict]:
    """The ``rows`` not in ``kept``."""
    ids = {id(row) for row in kept}
    return [row for row in rows if id(row) not in ids]


# -- parameters and the window ---------------------------------------------------------------


def _steady_own(thresholds: pd.DataFrame, hourly: pd.DataFrame | None,
                span: pd.Timedelta) -> pd.DataFrame:  # fmt: skip
    """A window's slow thresholds (`toolkit.counts.slow_thresholds`) with each workflow's own
    only where it sent through the provider on at least `STEADY_DAYS` of the window's days (and
    two; ``hourly``: the window's jobs per hour and `season.CELL`): its 90th percentile is then
    its usual sends', a slowdown of hours a small part of them. A campaign's, a weekly batch's
    few runs set their own, a slowdown among them at the slowdown's level, so they keep their
    provider's (their usual slow share there weighed, `toolkit.incidents.mix`)."""
    own = thresholds["workflow"].notna().to_numpy()
    if hourly is None or not own.any():
        return thresholds[~own].reset_index(drop=True)
    day = pd.to_datetime(hourly["bucket"], utc=True).dt.floor("D")
    sent = hourly[hourly["jobs"].to_numpy() > 0].assign(day=day)
    days = sent.groupby(list(season.CELL), observed=True, dropna=False)["day"].nunique()
    least = max(2.0, STEADY_DAYS * span / pd.Timedelta(days=1))
    keys = pd.MultiIndex.from_frame(thresholds[list(season.CELL)])
    steady = days.reindex(keys).fillna(0).to_numpy() >= least
    return thresholds[~own | steady].reset_index(drop=True)


def _unjudged(shares: list[Scan], grid: tables.Grid) -> str | None:
    """Why the volume ``shares`` scans cannot take the rest of the window as their baseline
    (None: they can): shares that follow the hour of the day (each night would be a drop), or
    a window too short to tell (`rates.follow_the_day`)."""
    daily = {rates.follow_the_day(scan.events, scan.trials[scan.parent], grid.start, grid.step)
             for scan in shares}  # fmt: skip
    if daily <= {False}:
        return None
    if True in daily:
        return ("the channels' shares of the notifications follow the hour of the day, so the "
                "rest of the window is no baseline")  # fmt: skip
    return ("the window spans less than two days: too short to tell the hour of the day's "
            "rhythm from an incident")  # fmt: skip


def _check(kinds, alpha, min_jobs, min_failed, min_ratio, outage_rate) -> None:
    if kinds is not None and (
        isinstance(kinds, str) or not len(kinds) or not set(kinds) <= set(KINDS)
    ):
        raise ParameterError("kinds", kinds, f"None (all) or a list of {list(KINDS)}")
    if not _number(alpha) or not 0 < alpha < 1:
        raise ParameterError("alpha", alpha, "a probability between 0 and 1, e.g. 0.01")
    for name, value in (("min_jobs", min_jobs), ("min_failed", min_failed)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
            raise ParameterError(name, value, "an integer >= 1")
    if not _number(min_ratio) or min_ratio < 1:
        raise ParameterError("min_ratio", min_ratio, "a number >= 1 (rate / baseline rate)")
    if not _number(outage_rate) or not 0 < outage_rate <= 1:
        raise ParameterError("outage_rate", outage_rate, "a failure rate in (0, 1]")


def _number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float | np.number)


def _is_store(source: Any) -> bool:
    """A store, or a store's selection (``Store.selection``): counted by its engine."""
    from toolkit.store.reader import Store, _Selection

    return isinstance(source, Store | _Selection)


def _check_source(source: Any) -> None:
    if not _is_store(source):
        metrics.check_activity(source)


def _window(source: Any, after: Any, before: Any, reference: pd.DataFrame):
    """The window asked (a store's bounds, an Activity's window or its read's provenance, else
    the jobs' extent), widened to the jobs' starts."""
    if reference.empty or reference["first_at"].isna().all():
        return None, None
    first, last = reference["first_at"].min(), reference["last_at"].max()
    start = end = None
    if hasattr(source, "_bounds"):
        start, end = source._bounds(after, before)
    elif after is not None or before is not None:
        start, end = engine_counts._activity_window(source, after, before)
    if start is None and end is None:
        attrs = getattr(source, "attrs", None) or {}
        start, end = attrs.get("after"), attrs.get("before")
    bounds = []
    for value, edge in ((start, first), (end, last)):
        value = edge if value is None else pd.Timestamp(value)
        bounds.append(value.tz_localize("UTC") if value.tzinfo is None else value)
    return min(bounds[0], first), max(bounds[1], last)


def _baseline(baseline: Any, after: pd.Timestamp) -> tuple[Any, pd.DataFrame | None, tuple, Any]:
    """An Activity baseline (the failure scans' baseline; None for others) and its
    `toolkit.counts.slow_thresholds`, the volume's history:
    ``(counts, (after, before))``
    (`toolkit.delivery_counts` by `season.CELL`, hourly), or ``()`` when there is none, and
    what its send occasions are counted from (a store, the Activity; None: counts only). A store
    gives the `HISTORY` before the window that it holds, with the days it never synced."""
    from toolkit.store import Store, layout

    if baseline is None:
        return None, None, (), None
    if isinstance(baseline, Store):  # what it holds of the weeks before (none: a fallback)
        first, watermark = baseline.window
        if first is None or first >= after:
            return (
                None,
                None,
                (pd.DataFrame(columns=["bucket", *season.CELL, "jobs"]), (after, after)),
                None,
            )
        start, end = max(first, (after - HISTORY).floor(season.HOUR)), min(after, watermark)
        counts = delivery_counts(baseline, after=start, before=end, by=season.CELL)
        gaps = season.missing_days(layout.days_held(baseline.path), start, end)
        return None, None, (counts, (start, end), gaps), baseline
    if isinstance(baseline, pd.DataFrame):
        if (
            not {"bucket", "jobs", *season.CELL} <= set(baseline.columns)
            or baseline.attrs.get("freq", season.HOUR) != season.HOUR
        ):
            raise ParameterError("baseline", f"a frame with columns {list(baseline.columns)[:8]}",
                                 "an Activity, a Store, or toolkit.delivery_counts(..., "
                                 f"freq='1h', by={list(season.CELL)})")  # fmt: skip
        span = _span(baseline.attrs, pd.DatetimeIndex(baseline["bucket"]))
        return None, None, (baseline, span), None
    try:
        metrics.check_activity(baseline)
    except ParameterError as error:
        raise ParameterError("baseline", error.value, error.allowed) from None
    given = engine_counts.Given(baseline)
    reference, _, hist = engine_counts.scan_window(given)  # one pass: its span and thresholds
    at = pd.DatetimeIndex([reference["first_trigger"].min(), reference["last_trigger"].max()])
    counts = delivery_counts(given, by=season.CELL)
    thresholds = engine_counts.slow_thresholds(given, quantile=tables.SLOW_QUANTILE, hist=hist)
    return given, thresholds, (counts, _span(baseline.attrs, at.dropna())), given


def _occasions(groups: dict, source, window, span, sends, history) -> dict:
    """Per level of ``groups`` (level: its groups' keys), the season of the groups' send
    occasions (`volume.occasion_season`; a sentence when a history of counts has none), the
    window's (``span``: its start, end and the days its source does not hold)
    `toolkit.counts.occasion_counts` and the season of their repeats: the window's counted
    from ``source`` (the groups only, when the season is the window's own weeks), its
    history's from ``sends`` (a store, an Activity) over the span of ``history`` (the groups
    and the window's), each in one query."""
    levels = list(groups)
    by = [season.LEVELS[level] for level in levels]
    own = None if history else [groups[level] for level in levels]
    counted = occasion_counts(source, **window, by=by, groups=own)
    after, before, missing = span
    build = partial(season.build, after=after, before=before, missing=missing)
    if history and sends is None:
        return {level: ("a baseline of counts has no send occasions", frame, None)
                for level, frame in zip(levels, counted, strict=True)}  # fmt: skip
    held = [None] * len(levels)
    if history:
        kept = [groups[level] + volume.groups_of(frame, level) for level, frame in zip(levels, counted, strict=True)]  # fmt: skip
        held = occasion_counts(sends, after=history[1][0], before=history[1][1], by=by, groups=kept)
    out = {}
    for level, frame, old in zip(levels, counted, held, strict=True):
        before = None if old is None else (old, *history[1:])
        seasons = [volume.occasion_season(level, build, frame, before, column)
                   for column in ("occasions", "repeats")]  # fmt: skip
        out[level] = (seasons[0], frame, seasons[1])
    return out


def _unheld(source: Any, after: pd.Timestamp, before: pd.Timestamp) -> list[tuple]:
    """The days of the window a store (or a store's selection) never synced: no count there is
    a quiet hour (an Activity holds its whole window)."""
    from toolkit.store import Store, layout

    store = getattr(source, "store", source)
    if after is None or not isinstance(store, Store):
        return []
    return season.missing_days(layout.days_held(store.path), after, before)


def _span(attrs: dict, at: pd.DatetimeIndex) -> tuple[pd.Timestamp, pd.Timestamp]:
    """The span a baseline covers: its read's provenance, else its own extent."""
    bounds = []
    for name, edge in (("after", at.min()), ("before", at.max() + pd.Timedelta("1h"))):
        value = attrs.get(name)
        value = edge if value is None else pd.Timestamp(value)
        if pd.isna(value):
            raise ParameterError("baseline", "no jobs", "a baseline with delivery jobs")
        bounds.append(value.tz_localize("UTC") if value.tzinfo is None else value)
    return bounds[0], bounds[1]


def _freq(freq: str | None, span: pd.Timedelta) -> pd.Timedelta:
    if freq is not None:
        try:
            step = pd.Timedelta(freq)
        except (TypeError, ValueError):
            step = pd.Timedelta(0)
        if pd.isna(step) or step <= pd.Timedelta(0) or span / step > FREQ_LIMIT:
            raise ParameterError(
                "freq", freq, f"None (automatic) or a duration giving at most {FREQ_LIMIT} "
                f"buckets over the window ({span}), such as '15min'",
            )  # fmt: skip
        return step
    for name in FREQS:
        if span / pd.Timedelta(name) <= MAX_BUCKETS:
            return pd.Timedelta(name)
    return span / MAX_BUCKETS


# -- scans and their periods -----------------------------------------------------------------


def _ordered(keys) -> list[tuple]:
    return sorted(keys, key=lambda key: tuple((value is not None, value or "") for value in key))


def _matrix(frame: pd.DataFrame, keys: tuple[str, ...], column: str, width: int):
    """``column`` summed per combination of ``keys`` (the sorted key tuples) and bucket."""
    frame = frame[frame[column].to_numpy() > 0]
    if keys:  # each row's group number, and the groups' keys
        number, tuples = tables._codes(frame, keys, np.ones(len(frame), dtype=bool))
    else:
        number, tuples = np.zeros(len(frame), dtype="int64"), [()] * bool(len(frame))
    found = _ordered(tuples)
    rank = {key: n for n, key in enumerate(found)}
    out = np.zeros((len(found), width), dtype="int64")
    if len(frame):
        at = np.array([rank[key] for key in tuples], dtype="int64")[number]
        np.add.at(out, (at, frame["bucket"].to_numpy("int64")), frame[column].to_numpy("int64"))
    return found, out


class _Found:
    """The scans' count matrices of one call (computed by the source's engine), and the rows
    fetched for their significant periods, from which the candidate rows are made."""

    def __init__(self, source, window, grid, slow_above, baseline, names, span=None, busy=None):
        self.source, self.window, self.grid = source, window, grid
        self.busy = np.zeros(0, "int64") if busy is None else busy  # `volume.busy_hours`
        shape = (grid.start, grid.step, grid.count)
        jobs_scans = [name for name in names if tables.SPECS[name].unit == "jobs"]
        note_scans = [name for name in names if tables.SPECS[name].unit == "notifications"]
        # the thresholds: a baseline's, or the window's own (`toolkit.counts.slow_thresholds`)
        counted, self.slow_above = engine_counts.scan_counts(
            source, **window, grid=shape, slow_above=slow_above
        )
        self.counted = {
            "jobs": counted if jobs_scans else None,
            "notifications": engine_counts.sent_counts(source, **window, grid=shape)
            if note_scans else None,
        }  # fmt: skip
        self.base, self.hourly = None, None
        if baseline is not None:  # the baseline's jobs by hour (its failure rates by hour)
            first = span[0].floor(season.HOUR)
            hours = (grid.start, grid.step, 1)
            if jobs_scans:
                hours = (first, season.HOUR, max(1, int(np.ceil((span[1] - first) / season.HOUR))))
            self.hourly = hours
            self.base = {
                "jobs": engine_counts.scan_counts(baseline, grid=hours, slow_above=self.slow_above)[0]
                if jobs_scans else None,
                "notifications": engine_counts.sent_counts(baseline, grid=(grid.start, grid.step, 1))
                if note_scans else None,
            }  # fmt: skip
        self.mix, self.sent = None, (None, None)
        if "latency" in names:  # what each workflow's sends usually take (`mix`), by bucket
            self.sent = tuple(
                None if among is None else engine_counts.slow_counts(
                    among, **({} if among is baseline else window), grid=buckets,
                    slow_above=self.slow_above)
                for among, buckets in ((source, shape), (baseline, self.hourly))
            )  # fmt: skip
            self.mix = Mix.learn(self.sent[0], (grid.start, grid.step), self.sent[1])
        self.rates: dict[str, rates.Rates] = {}
        self.scans: dict[str, Scan] = {}
        self.keys: dict[str, tuple[list[tuple], list[tuple]]] = {}
        self.jobs: pd.DataFrame = None  # the fetched rows (`fetch`)
        self.notes, self.notifications = None, None
        self.groups: dict[str, tables.Groups] = {}
        self.index: dict[str, tuple[dict, dict]] = {}

    def table(self, name: str) -> pd.DataFrame:
        return self.notes if tables.SPECS[name].unit == "notifications" else self.jobs

    def scan(self, name: str, rule: Evidence) -> Scan:
        spec, width = tables.SPECS[name], self.grid.count
        trials_of, events_of = _counted(name)
        frame = self.counted[spec.unit]
        tried, met = _population(frame, name)
        trial_keys, trials = _matrix(frame[tried], spec.keys, trials_of, width)
        event_keys, events = _matrix(frame[met], spec.keys + spec.split, events_of, width)
        number = {key: n for n, key in enumerate(trial_keys)}
        parent = np.array([number[key[: len(spec.keys)]] for key in event_keys], dtype=int)
        self.keys[name] = (event_keys, trial_keys)
        # latency: sends weighed by their workflows' usual slow share (`mix`), then the hours
        mixed = self.mix.weight(event_keys, self.sent[0], width) if name == "latency" else 1.0
        reference, own = None, (events, trials[parent] * mixed, self.grid.start, self.grid.step)
        # how many buckets of the history a bucket of the window spans (`Scan.bucket_spread`)
        spans = 1.0 if self.base is None else self.grid.step / self.hourly[1]
        # failure rates (by hour where they vary) and their dispersion: `rates`
        learnt = None
        spread = name in SPREAD_SCANS
        if self.base is None and not spec.low:
            # the service's load (all its groups' sends) where it slows them (`LOAD_SCANS`)
            load = (trials.sum(0), trials.sum(0)) if name in LOAD_SCANS else None
            learnt = rates.learn(*own, self._buckets, "the window", spread, load)
        if self.base is not None:
            base, count = self.base[spec.unit], 1 if spec.low else self.hourly[2]
            tried, met = _population(base, name)
            k_of = dict(
                zip(*_matrix(base[met], spec.keys + spec.split, events_of, count), strict=True)
            )
            n_of = dict(zip(*_matrix(base[tried], spec.keys, trials_of, count), strict=True))
            none = np.zeros(count)
            k = np.array([k_of.get(key, none) for key in event_keys], "float64").reshape(-1, count)
            n = np.array([n_of.get(key[: len(spec.keys)], none) for key in event_keys],
                         "float64").reshape(-1, count)  # fmt: skip
            if name == "latency":
                n *= self.mix.weight(event_keys, self.sent[1], count, history=True)
            # a group the baseline hardly has (a provider taking over): its own window instead
            new = n.sum(1) < rule.min_trials
            reference = (k.sum(1), n.sum(1))
            reference[0][new], reference[1][new] = events[new].sum(1), own[1][new].sum(1)
            if not spec.low:  # their rates from the baseline, the others' from the window
                load = (sum(n_of.values(), none), trials.sum(0)) if name in LOAD_SCANS else None
                learnt = rates.learn(k, n, *self.hourly[:2], self._buckets, "the baseline",
                                     spread, load)  # fmt: skip
                if new.any():
                    mine = rates.learn(events[new], own[1][new], *own[2:],
                                       self._buckets, "the window", spread)  # fmt: skip
                    learnt.dispersion[new], learnt.spread[new] = mine.dispersion, mine.spread
                    learnt.bucket_spread[new] = mine.bucket_spread * spans  # per history bucket
                    learnt.varies[new] = False
                    for weights in (learnt.weight, learnt.load):
                        if weights is not None:
                            weights[new] = 1.0
        if learnt is None:
            learnt = rates.Rates(None, np.ones(len(events)), np.zeros(len(events), bool))
        if name == "latency":  # slower than its workflows and its hours usually are
            learnt.weight = mixed if learnt.weight is None else learnt.weight * mixed
        if name in ("code", "domain"):  # a provider's bad hours are its codes' and domains'
            learnt.bucket_spread = self._providers_spread(event_keys)
        self.rates[name] = learnt
        here = None  # the groups whose dispersion the window's own buckets gave, at one rate
        if not spec.low:
            here = ~learnt.varies & (True if self.base is None else new)
        self.scans[name] = Scan(events, trials, parent, rule, reference, learnt.weight,
                                learnt.dispersion, here, learnt.spread,
                                self.grid.step / rates.DAY, learnt.bucket_spread, spans)  # fmt: skip
        return self.scans[name]

    def _providers_spread(self, keys: list[tuple]) -> np.ndarray:
        """The `rates.Rates.bucket_spread` of each key's (channel, provider), from the
        provider scan (0 for a provider it does not have)."""
        spread, number = self.rates["provider"].bucket_spread, self.index_of("provider")
        return np.array([spread[number[key[:2]]] if key[:2] in number else 0.0 for key in keys])

    def index_of(self, name: str) -> dict[tuple, int]:
        """Each event key of scan ``name``: its row in the scan."""
        return {key: n for n, key in enumerate(self.keys[name][0])}

    @property
    def _buckets(self) -> tuple[pd.Timestamp, pd.Timedelta, int]:
        return self.grid.start, self.grid.step, self.grid.count

    def _range(self, pick: Pick) -> tuple[pd.Timestamp | None, pd.Timestamp | None]:
        """The times of buckets ``pick.first - 1`` to ``pick.stop``: what `refine` reads."""
        grid = self.grid
        low = None if pick.first - 1 <= 0 else grid.start + (pick.first - 1) * grid.step
        high = None if pick.stop >= grid.count - 1 else grid.start + (pick.stop + 1) * grid.step
        return low, high

    def _rows(self, where: list[dict], **only) -> pd.DataFrame:
        rows = engine_counts.scanned_job_rows(
            self.source, **self.window, slow_above=self.slow_above, where=where, **only
        )
        return _job_frame(rows)

    def fetch(self, picked: list[tuple[str, Pick]]) -> None:
        """Fetch the rows the picks' periods are refined on: each (channel, provider)'s jobs in
        its period (and the bucket either side), and for volume, the period's notifications
        and their jobs; then the scans' groups over those rows."""
        where, created = [], []
        for name, pick in picked:
            low, high = self._range(pick)
            if tables.SPECS[name].unit == "notifications":
                where.append({"at": (low, high), "column": "triggered_at"})
                created.append((low, high))
            else:
                event_keys, trial_keys = self.keys[name]
                channel, provider = event_keys[pick.group][:2]
                where.append({"channel": channel, "provider_id": provider, "at": (low, high)})
        self.jobs = tables.job_table(self._rows(where), self.grid)
        if created:
            chosen = " OR ".join(
                "(" + " AND ".join([f"unix_micros(created_at) >= {engine_counts._micros(low, 0)}"] * (low is not None)
                                   + [f"unix_micros(created_at) < {engine_counts._micros(high, 0)}"] * (high is not None) or ["true"]) + ")"
                for low, high in created
            )  # fmt: skip
            notifications = engine_counts.window_rows(
                self.source, "notifications", ["notification_id", "created_at", "workflow_identifier"],
                **self.window, where=f"({chosen})",
            ).to_pandas()  # fmt: skip
            notifications["created_at"] = pd.to_datetime(notifications["created_at"], utc=True)
            notifications["workflow_identifier"] = notifications["workflow_identifier"].astype("string")  # fmt: skip
            self.notifications = notifications
            self.notes = tables.notification_table(notifications, self.grid)
            self.jobs["note"] = tables.sent_rows(notifications, self.notes, self.jobs)
        for name in self.scans:
            if tables.SPECS[name].unit == "notifications" and self.notes is None:
                continue
            groups = tables.groups(self.table(name), tables.SPECS[name], self.jobs)
            self.groups[name] = groups
            self.index[name] = (
                {tuple(key.values()): n for n, key in enumerate(groups.keys)},
                {key: n for n, key in enumerate(groups.trial_keys)},
            )

    def include(self, where: list[dict]) -> tuple[pd.DataFrame, np.ndarray]:
        """The rows matching ``where`` (of `toolkit.counts.scanned_job_rows`), those not
        fetched yet added at the end of the job table, and their positions in it."""
        rows = tables.job_table(self._rows(where), self.grid)
        at = pd.Index(self.jobs["job_id"]).get_indexer(rows["job_id"])
        new = at < 0
        at[new] = len(self.jobs) + np.arange(int(new.sum()))
        if new.any():
            self.jobs = pd.concat([self.jobs, rows[new]], ignore_index=True)
        return rows, at

    def later(self, row: dict, last: int, *, events: bool = False) -> int:
        """How many trials (``events``: events) of the row's group come after row ``last`` of
        the table: the fetched rows of its bucket, then the counts of the buckets after it."""
        name = row["scan"]
        groups, scan = self.groups[name], self.scans[name]
        bucket = self.table(name)["bucket"].to_numpy()
        same = np.flatnonzero(bucket[last + 1 :] == bucket[last]) + last + 1
        same = same[groups.trial[same] == row["parent"]]
        rest = slice(int(bucket[last]) + 1, None)
        if events:
            return int(groups.hits(row["group"], same).sum()) + int(scan.events[row["scan_group"], rest].sum())  # fmt: skip
        return len(same) + int(scan.trials[scan.parent[row["scan_group"]], rest].sum())

    def refine(self, name, scan: Scan, pick: Pick, tests: int, rule: Evidence) -> dict | None:
        """The pick's period on the rows' timestamps, its counts, p-value and extent."""
        spec, groups, table = tables.SPECS[name], self.groups.get(name), self.table(name)
        event_keys, trial_keys = self.keys[name]
        key = event_keys[pick.group]
        if groups is None or key not in self.index[name][0]:
            return None
        group = self.index[name][0][key]
        parent = self.index[name][1][key[: len(spec.keys)]]
        bucket, trial = table["bucket"].to_numpy(), groups.trial
        rows = np.flatnonzero(
            (trial == parent) & (bucket >= pick.first - 1) & (bucket <= pick.stop)
        )
        hits = groups.hits(group, rows)
        rate, base_rate = pick.events / pick.trials, pick.base_rate
        if spec.low:
            hits, rate, base_rate = ~hits, 1 - rate, 1 - base_rate
        span = segment(hits, rate, base_rate)
        span = _widened(table["at"].array.asi8[rows], span, rule.min_trials)
        inside, in_hits = rows[span], hits[span]
        if not in_hits.any():
            return None
        trials = len(inside)
        events = trials - int(in_hits.sum()) if spec.low else int(in_hits.sum())
        # the trials weighed by their own hours' expected rate (`rates`): as many when it is
        # flat; and by those an hour off (the clocks changed): a rate usual there is no incident
        at, hour = table["at"].array.asi8[inside], season.HOUR
        mixed = self.mix.of(table.iloc[inside]) if name == "latency" else None  # and `mix`
        weighed, *off = (self.rates[name].weigh(pick.group, at, shift, mixed)
                         for shift in (pd.Timedelta(0), -hour, hour))  # fmt: skip
        if scan.base is None:
            out_events = scan.events[pick.group].sum() - events
            out_trials = scan.weighed(pick.group).sum() - weighed
        else:
            out_events, out_trials = scan.base[0][pick.group], scan.base[1][pick.group]
        base_rate = (out_events + PSEUDO_EVENTS) / (out_trials + PSEUDO_TRIALS) * weighed / trials
        rate = events / trials
        if spec.low:
            evident = trials * base_rate >= rule.min_events and rate * rule.min_ratio <= base_rate
        else:  # slow: above the baseline's SLOW_QUANTILE, so a tenth of sends at least usually
            usual = max(base_rate, 1 - tables.SLOW_QUANTILE) if name == "latency" else base_rate
            evident = events >= rule.min_events and rate >= rule.min_ratio * usual
        if not evident or trials < rule.min_trials:
            return None
        first, last = inside[in_hits][[0, -1]]
        # its days' level (the hours around it) and the dispersion it is tested with
        out_rate = (out_events + PSEUDO_EVENTS) / (out_trials + PSEUDO_TRIALS)
        level, phi = scan.period_law(
            pick.group, pick.first, pick.stop, base_rate * trials, out_rate
        )
        tested = [weight * level for weight in [weighed, *off]]
        p = max(p_value(events / phi, weight, out_events / phi, out_trials, low=spec.low)
                for weight in tested)  # fmt: skip
        if not spec.low and spec.unit == "jobs":  # mostly one person's: it holds without them
            mine, again = _most_hit(table["subscriber_id"], inside, in_hits)
            if again >= MOST * events:
                p = max(p, *(p_value((events - again) / phi, weight * (trials - mine.sum()) / trials,
                                     out_events / phi, out_trials) for weight in tested))  # fmt: skip
        unloaded = None  # a failure row's p-value without the service's busy hours' sends
        busy = np.isin(at - at % hour.value, self.busy) if name in ("provider", "code") else []
        if np.any(busy):
            left = [self.rates[name].weigh(pick.group, at[~busy], shift) * level
                    for shift in (pd.Timedelta(0), -hour, hour)]  # fmt: skip
            unloaded = min(1.0, tests * max(p_value((events - int(in_hits[busy].sum())) / phi,
                                                    weight, out_events / phi, out_trials)
                                            for weight in left))  # fmt: skip
        mostly = without = since = None  # the workflow most slow sends are: from, p without it
        if name == "latency":

            def others(hits: np.ndarray) -> tuple[Any, Any, float | None]:
                """The workflow most (`MOST`) of ``hits`` are, its first send in the period, and
                the period's p-value without its sends (None: the others sent fewer than
                ``min_jobs``)."""
                mine, again = _most_hit(table["workflow"], inside, hits)
                if again < MOST * events:
                    return None, None, None
                first = inside[mine][0]
                workflow, since = table["workflow"].iloc[first], table["at"].iloc[first]
                if (~mine).sum() < rule.min_trials:
                    return workflow, since, None
                rest = [self.rates[name].weigh(pick.group, at[~mine], shift, mixed[~mine]) * level
                        for shift in (pd.Timedelta(0), -hour, hour)]  # fmt: skip
                return workflow, since, max(p_value((events - again) / phi, weight,
                                                    out_events / phi, out_trials) for weight in rest)  # fmt: skip

            # mostly a workflow with no usual share of its own: the others'
            alone = others(in_hits & ~self.mix.known(table.iloc[inside]))[2]
            p = p if alone is None else max(p, alone)
            mostly, since, without = others(in_hits)  # its own burst, or not (`volume`)
        row = {"scan": name, "group": group, "parent": parent, "scan_group": pick.group}
        if spec.low:
            ongoing = not self.later(row, last, events=True)
        else:
            ongoing = (1 - rate) ** self.later(row, last) > STILL_GOING
        if scan.base is None and not ongoing and _never_began(scan, pick, weighed):
            return None
        return {
            **row,
            "start": table["at"].iloc[first],
            "end": max(tables.event_end(table, last), table["at"].iloc[first]),
            "keys": groups.keys[group],
            "first": int(first),
            "last": int(last),
            "jobs": trials,
            "events": events,
            "rate": rate,
            "base_rate": base_rate,
            "p_value": min(1.0, tests * p),
            "hourly": bool(self.rates[name].varies[pick.group]),
            # its workflows' usual slow share moved its expected by more than a tenth (`mix`)
            "mixed": mixed is not None and abs(mixed.mean() - 1) > 0.1,
            "ongoing": bool(ongoing),
            "expected": trials * base_rate,
            "mostly": mostly,
            "mostly_since": since,
            "without": None if without is None else min(1.0, tests * without),
            "unloaded": unloaded,
        }

    def affected(self, row: dict) -> np.ndarray:
        """Positions in the job table of the jobs the incident hit: those that met a failure,
        or, for a latency degradation, every send in the period (none for a volume drop)."""
        if tables.SPECS[row["scan"]].unit == "notifications":
            return np.zeros(0, dtype=int)
        groups = self.groups[row["scan"]]
        if row["scan"] == "latency":
            return (
                np.flatnonzero(groups.trial[row["first"] : row["last"] + 1] == row["parent"])
                + row["first"]
            )
        own = groups.members[row["group"]]
        return own[(own >= row["first"]) & (own <= row["last"])]

    def sent_again(self, rows: list[dict]) -> None:
        """Fetch, for each failure row, the window's jobs of its (channel, provider) to the
        subscribers it hit (`AGAIN`): from its start on (``row["again"]``: whether they succeed
        again) and in the `STANDING` before it (``row["before"]``: whether they already failed
        so). One query: each pair's jobs from `STANDING` before its rows' earliest start, to
        any subscriber its rows hit."""
        rows = [row for row in rows if row["scan"] == "code"]
        hit = [self.jobs["subscriber_id"].iloc[row["affected"]].dropna().unique() for row in rows]
        pairs: dict[tuple, pd.Timestamp] = {}  # each pair's rows' earliest start
        for row in rows:
            pair = (row["keys"]["channel"], row["keys"]["provider_id"])
            pairs[pair] = min(pairs.get(pair, row["start"]), row["start"])
        if not pairs:
            return
        people = sorted(set().union(*hit))
        fetched = self._rows([{"channel": channel, "provider_id": provider,
                               "at": (start - STANDING, None)}
                              for (channel, provider), start in sorted(pairs.items())],
                             among=("subscriber_id", people), columns=AGAIN)  # fmt: skip
        for row, people in zip(rows, hit, strict=True):
            mine = _pair_is(fetched, row["keys"]) & fetched["subscriber_id"].isin(people).to_numpy()
            later = fetched["at"].ge(row["start"]).to_numpy()
            near = fetched["at"].ge(row["start"] - STANDING).to_numpy()
            row["again"], row["before"] = fetched[mine & later], fetched[mine & near & ~later]

    def failure_payloads(self, job_ids: list[str]) -> dict[str, str]:
        """The provider's own payload of each job's last Failed attempt."""
        return engine_counts.failure_payloads(self.source, **self.window, job_ids=job_ids)


def _most_hit(of: pd.Series, inside: np.ndarray, hits: np.ndarray) -> tuple[np.ndarray, int]:
    """The jobs (a mask of those at ``inside``) and the hits among them (``hits`` of those jobs)
    of the value of ``of`` hit most: a subscriber (one person's dead device token, retried or
    re-triggered, is no incident of a provider; a row mostly theirs holds without them), a
    workflow."""
    who = of.to_numpy(dtype=object, na_value=None)[inside]  # a missing value is no one's
    hit = pd.Series(who[hits]).value_counts()
    if hit.empty:
        return np.zeros(len(who), bool), 0
    return who == hit.index[0], int(hit.iloc[0])


def _never_began(scan: Scan, pick: Pick, weighed: float) -> bool:
    """Whether a period compared with the rest of the window holds more of its (weighed)
    trials than the rest, most of which is after it: the window saw the rate fall at its end,
    not rise (a steady background error that another failure took over at the end)."""
    trials = scan.weighed(pick.group)
    before, after = trials[: pick.first].sum(), trials[pick.stop :].sum()
    return weighed > before + after and before < after


def _counted(name: str) -> tuple[str, str]:
    """The columns of `toolkit.counts.scan_counts` (`sent_counts`) a scan counts as trials and
    events (see `tables.SPECS`)."""
    if name in ("volume", "channel_volume"):
        return "notifications", "notifications"
    if name == "latency":
        return "sent", "slow"
    return "tried", "met_failure"


def _population(frame: pd.DataFrame, name: str) -> tuple[np.ndarray, np.ndarray]:
    """The rows of a counts frame a scan counts as trials, and as events: error codes and
    domains those that have one; volume the notifications, and those sent on its groups."""
    every = np.ones(len(frame), dtype=bool)
    if name == "code":
        return every, frame["error_code"].notna().to_numpy()
    if name == "domain":
        return (known := frame["domain"].notna().to_numpy()), known
    if name in ("volume", "channel_volume"):
        level = frame["level"].to_numpy()
        return level == "all", level == ("provider" if name == "volume" else "channel")
    return every, every


def _job_frame(rows) -> pd.DataFrame:
    """Fetched `toolkit.counts.SCANNED_JOBS` rows (all their columns or some) as a frame with
    the delivery jobs' dtypes."""
    frame = rows.to_pandas()
    dtypes = {name: dtype for name, dtype in metrics._JOB_COLUMNS.items() if name in frame}
    frame = frame.astype(dtypes)
    frame["at"] = pd.to_datetime(frame.pop("scan_at"), utc=True).astype("datetime64[ns, UTC]")
    for name in ("met_failure", "tried", "retried", "attempted", "slow"):
        if name in frame:
            frame[name] = frame[name].astype(bool)
    return frame


def _widened(at: np.ndarray, span: slice, least: int) -> slice:
    """``span`` of jobs at times ``at`` (sorted), widened to the ``least`` jobs a period needs
    by the jobs nearest in time to either end (a run of fewer events alone, each a failure)."""
    first, stop = span.start, span.stop
    while stop - first < least and (first > 0 or stop < len(at)):
        before = at[first] - at[first - 1] if first > 0 else np.inf
        after = at[stop] - at[stop - 1] if stop < len(at) else np.inf
        first, stop = (first - 1, stop) if before <= after else (first, stop + 1)
    return slice(first, stop)


def _significant(scan: Scan, threshold: float, later: Callable | None = None) -> list[Pick]:
    """Each group's significant periods, in up to `ROUNDS` disjoint rounds. ``later(picks)``,
    when given, re-tests the picks of each round after the first before they are judged (as
    `toolkit.incidents.volume.on_occasions` does the first round's)."""
    found, picks = [], scan.first_round()
    for round_ in range(ROUNDS):
        if round_ and later is not None:
            later(picks)
        picks = [pick for pick in picks if pick.p_value <= threshold]
        if not picks:
            break
        found += picks
        for pick in picks:
            scan.mark(pick)
        picks = scan.next_round([pick.group for pick in picks])
    return found


# -- one row per incident --------------------------------------------------------------------


def _one_per_incident(found: _Found, candidates, wanted, outage_rate, min_failed) -> list[dict]:
    """Each candidate's kind; a candidate whose affected jobs are mostly a kept row's is the
    same incident, and the kind first in `PRECEDENCE` wins. Jobs of one subscriber are not
    independent: a candidate needs ``min_failed`` distinct subscribers among its events."""
    subscribers = found.jobs["subscriber_id"]
    for row in candidates:
        row["affected"] = found.affected(row)
        _to_its_cause(found, row)
    found.sent_again(candidates)
    for row in candidates:
        row["kind"] = _kind(found, row, outage_rate)
        events = (
            row["affected"]
            if row["scan"] != "latency"
            else found.groups["latency"].members[row["group"]]
        )
        events = events[(events >= row["first"]) & (events <= row["last"])]
        row["events_at"] = events
        if (
            row["scan"] not in ("volume", "channel_volume")
            and subscribers.iloc[events].nunique() < min_failed
        ):
            row["kind"] = None
    order = {kind: n for n, kind in enumerate(PRECEDENCE)}
    ranked = sorted(
        (row for row in candidates if row["kind"] is not None),
        key=lambda row: (order[row["kind"]], -len(row["affected"]), row["p_value"]),
    )
    kept, claimed = [], np.zeros(len(found.jobs), dtype=bool)
    for row in _one_volume_row(ranked):
        affected = row["affected"]
        if len(affected) and claimed[affected].sum() >= MOST * len(affected):
            continue
        slow = row["events_at"] if row["scan"] == "latency" else affected
        if len(slow) and claimed[slow].sum() >= MOST * len(slow):
            continue  # slow because a kept row's failures were retried: that row's cause
        claimed[affected] = True
        if row["kind"] == "standing":
            continue  # its provider's or domain's row of the same failures is none either
        row["kind"] = row["kind"].split(":")[0]
        kept.append(row)
    # the kinds asked select rows once they are one per cause: they do not change them
    return [row for row in _one_per_domain(kept, found.jobs) if row["kind"] in wanted]


def _one_per_domain(rows: list[dict], jobs: pd.DataFrame) -> list[dict]:
    """A recipient domain rejecting mail through several providers at once is one row: the
    providers' rows that overlap in time are joined (their providers, jobs and impact; a
    provider named, and its sends counted, once), and so is a provider's error row whose
    failures are mostly one domain's (at least `MOST` of them, while the provider's sends to
    other domains then failed at most `MOST` times as often as the domain's: `_failed_to`). A
    domain's row whose failures are mostly those of a larger row of its provider (an error
    hitting every domain) is that row's."""
    out: list[dict] = []
    for row in rows:
        if row["kind"] in ("error_spike", "provider_outage") and len(row["affected"]):
            top = jobs["domain"].iloc[row["affected"]].value_counts(normalize=True)
            mine, rest = _failed_to(jobs, row, top.index[0]) if len(top) else ([], [])
            if len(rest) and top.iloc[0] >= MOST and rest.mean() <= MOST * mine.mean():
                row = {**row, "kind": "domain_bounces",
                       "keys": {**row["keys"], "domain": top.index[0]}}  # fmt: skip
        if row["kind"] == "domain_bounces" and any(
            other["kind"] != "domain_bounces"
            and len(other["affected"]) > len(row["affected"])
            and np.isin(row["affected"], other["affected"]).mean() >= MOST
            for other in rows
        ):
            continue
        same = next((kept for kept in out if kept["kind"] == "domain_bounces"
                     and row["kind"] == "domain_bounces"
                     and kept["keys"]["domain"] == row["keys"]["domain"]
                     and row["start"] <= kept["end"] and row["end"] >= kept["start"]), None)  # fmt: skip
        if same is None:
            out.append(row)
            continue
        named = same.setdefault("providers", [same["keys"]["provider_id"]])
        new = row["keys"]["provider_id"] not in named  # else its sends are counted already
        named += [row["keys"]["provider_id"]] * new
        same["affected"] = np.union1d(same["affected"], row["affected"])
        trials, events = same["jobs"] + row["jobs"] * new, same["events"] + row["events"]
        base = same["base_rate"] * same["jobs"] + row["base_rate"] * row["jobs"] * new
        same.update(jobs=trials, events=events, rate=events / trials, base_rate=base / trials,
                    start=min(same["start"], row["start"]), end=max(same["end"], row["end"]),
                    ongoing=same["ongoing"] or row["ongoing"],
                    p_value=min(same["p_value"], row["p_value"]))  # fmt: skip
    return out


def _one_per_provider(found: _Found, rows: list[dict]) -> list[dict]:
    """A provider failing with several error codes at once (overloaded: a rate limit and a 5xx
    together) is one row: error spikes of one provider's channel whose periods mostly (`MOST`
    of the shorter) overlap are joined, their failures and impact summed over the period of
    them all, each code named with its failures (``codes``)."""
    out: list[dict] = []
    for row in rows:
        same = next((kept for kept in out if _same_trouble(kept, row)), None)
        if same is None:
            out.append(row)
            continue
        codes = same.setdefault("codes", [(row_code(same), same["events"])])
        codes.append((row_code(row), row["events"]))
        first, last = min(same["first"], row["first"]), max(same["last"], row["last"])
        trials = int((found.groups[same["scan"]].trial[first : last + 1] == same["parent"]).sum())
        expected = (same["base_rate"] + row["base_rate"]) * trials  # each code's rate per send
        _impact(found, same, np.union1d(same["affected"], row["affected"]), trials, expected)
        same.update(first=first, last=last, p_value=min(same["p_value"], row["p_value"]),
                    ongoing=same["ongoing"] or row["ongoing"], hourly=same["hourly"] or row["hourly"],
                    throttled=same["throttled"] or row["throttled"],
                    server_error=same["server_error"] or row["server_error"])  # fmt: skip
    return out


def _same_trouble(row: dict, other: dict) -> bool:
    """Whether two rows are error spikes of one provider's channel (its provider or code scan:
    the same sends) at mostly the same time."""
    pair = ("channel", "provider_id")
    return (row["kind"] == other["kind"] == "error_spike"
            and {row["scan"], other["scan"]} <= {"provider", "code"}
            and all(row["keys"].get(key) == other["keys"].get(key) for key in pair)
            and max(volume.within(row, other), volume.within(other, row)) >= MOST)  # fmt: skip


def _to_its_cause(found: _Found, row: dict) -> None:
    """A failure row's cause and its rows, decided here for every kind: an error code's row is
    that code's; a provider's or a recipient domain's row is the error code most (`MOST`) of
    its failures have (``row["cause"]``; None: many codes at once, each failure is the row's).
    Its rows are its failures of that cause, from which its period and impact follow
    (`_impact`): it ends at the last failure of its cause, not at an unrelated failure of the
    provider or domain after it."""
    row["cause"] = row["keys"].get("error_code")
    affected = row["affected"]
    if row["scan"] not in ("provider", "domain") or not len(affected):
        return
    codes = found.jobs["error_code"].iloc[affected]
    main = codes.value_counts()
    if not len(main) or main.iloc[0] < MOST * len(affected):
        return
    row["cause"] = main.index[0]
    own = affected[codes.eq(row["cause"]).fillna(False).to_numpy()]
    if len(own) == len(affected):
        return
    first, last = int(own[0]), int(own[-1])
    trials = int((found.groups[row["scan"]].trial[first : last + 1] == row["parent"]).sum())
    _impact(found, row, own, trials, row["base_rate"] * trials)
    later = found.later(row, last)
    row.update(first=first, last=last, ongoing=bool((1 - row["rate"]) ** later > STILL_GOING))


def _impact(found: _Found, row: dict, rows: np.ndarray, trials: int, expected: float) -> None:
    """A row's rows (``affected``, positions in the job table) and what follows from them: its
    period, from the first one's start to the last one's end; its ``trials`` jobs, its rows as
    failures, their rate, and the baseline's rate (``expected`` failures)."""
    start = found.jobs["at"].iloc[rows].min()
    row.update(affected=rows, start=start, end=max(tables.event_end(found.jobs, rows), start),
               jobs=trials, events=len(rows), rate=len(rows) / max(trials, 1),
               base_rate=expected / max(trials, 1))  # fmt: skip


def _whole_domain(found: _Found, rows: list[dict], scan: Scan | None, alpha, min_ratio) -> None:
    """A domain's bounces significant on one provider take in its failures of the same cause
    (`_to_its_cause`) on the channel's other providers in the row's period (one query for the
    rows' channel, domain and period). Another provider is named, and its sends and failures
    added, when its failures there depart from its own rate for the domain (the exact test,
    at ``alpha`` over the providers examined, and ``min_ratio`` times that rate): a share too
    small for a period of its own, not an unrelated bounce. The row's period and impact follow
    from all its rows (`_impact`)."""
    bounces = [row for row in rows if row["kind"] == "domain_bounces"]
    if not bounces or scan is None:
        return
    tick = pd.Timedelta(microseconds=1)  # the period's end included
    fetched, at = found.include([
        {"channel": row["keys"]["channel"], "domain": row["keys"]["domain"],
         "at": (row["start"], row["end"] + tick)} for row in bounces
    ])  # fmt: skip
    number = found.index_of("domain")
    provider = fetched["provider_id"].astype("string").to_numpy()
    for row in bounces:
        mine = (
            fetched["channel"].astype("string").eq(row["keys"]["channel"])
            & fetched["domain"].astype("string").eq(row["keys"]["domain"])
            & fetched["at"].between(row["start"], row["end"])
        ).fillna(False).to_numpy()  # fmt: skip
        failed = mine & fetched["met_failure"].to_numpy()
        if row.get("cause") is not None:
            failed &= fetched["error_code"].astype("string").eq(row["cause"]).fillna(False).to_numpy()  # fmt: skip
        tried = mine & fetched["tried"].to_numpy()
        named = row.get("providers") or [row["keys"]["provider_id"]]
        others = sorted({str(name) for name in provider[failed]} - set(named))
        period = slice(*(found.grid.of(pd.Series([row["start"], row["end"]])) + [0, 1]))
        affected, trials = row["affected"], row["jobs"]
        base = row["base_rate"] * row["jobs"]
        for other in others:
            g = number.get((row["keys"]["channel"], other, row["keys"]["domain"]))
            if g is None:
                continue
            if scan.base is None:  # the rest of the window
                k_out = scan.events[g].sum() - scan.events[g, period].sum()
                n_out = scan.trials[scan.parent[g]].sum() - scan.trials[scan.parent[g], period].sum()  # fmt: skip
            else:
                k_out, n_out = scan.base[0][g], scan.base[1][g]
            hit = failed & (provider == other)
            k, n = int(hit.sum()), int((tried & (provider == other)).sum())
            rate = (k_out + PSEUDO_EVENTS) / (n_out + PSEUDO_TRIALS)
            if k < min_ratio * rate * n or p_value(k, n, k_out, n_out) > alpha / len(others):
                continue
            named.append(other)
            affected = np.union1d(affected, at[hit])
            trials, base = trials + n, base + rate * n
        row["providers"] = named
        _impact(found, row, affected, trials, base)


def _one_volume_row(rows: list[dict]) -> list[dict]:
    """A channel gone silent is one row: the row of its one provider when exactly one provider's
    row overlaps it, else the channel's row (the providers' rows are dropped)."""
    channel_rows = [row for row in rows if row["scan"] == "channel_volume"]
    dropped = set()
    for whole in channel_rows:
        parts = [
            row for row in rows
            if row["scan"] == "volume" and row["keys"]["channel"] == whole["keys"]["channel"]
            and row["start"] <= whole["end"] and row["end"] >= whole["start"]
        ]  # fmt: skip
        dropped |= {id(whole)} if len(parts) == 1 else {id(row) for row in parts}
    return [row for row in rows if id(row) not in dropped]


def _kind(found: _Found, row: dict, outage_rate: float) -> str | None:
    scan, jobs = row["scan"], found.jobs
    if scan in ("volume", "channel_volume"):
        sent = found.groups[scan].members[row["group"]]
        workflows = found.notifications["workflow_identifier"].iloc[found.notes["row"].iloc[sent]]
        row["workflows"] = workflows.astype("string").value_counts().index.tolist()
        return "volume_drop"
    if scan == "latency":
        _slowness(found, row)
        return "latency_degradation" if row["slower"] >= tables.SLOWER else None
    hit = jobs[["retried", "at", "subscriber_id", "error_text"]].iloc[row["affected"]]
    if _standing(row, hit):
        return "standing"
    code = row_code(row)
    throttled = row["throttled"] = _says(RATE_LIMITED, code, hit)
    row["server_error"] = _says(SERVER_ERROR, code, hit)
    if scan == "provider":
        retried = hit["retried"].mean() >= MOST if len(hit) else False
        if throttled:
            return "error_spike"
        down = row["rate"] >= outage_rate and retried
        return "provider_outage" if down else "provider_outage:partial"
    if scan == "domain":
        rest = _failed_to(jobs, row, row["keys"]["domain"])[1]
        concentrated = len(rest) and rest.mean() <= MOST * row["rate"]
        return "domain_bounces" if concentrated else None
    if (
        scan == "code"
        and row["rate"] >= outage_rate
        and hit["retried"].mean() >= MOST
        and not throttled
    ):
        # one code failing most of the provider's sends, retried: the provider is down
        row["base_rate"] = _provider_rate(found, row)
        return "provider_outage"
    return "stale_credentials" if _stale(row, hit) else "error_spike"


def _slowness(found: _Found, row: dict) -> None:
    """A latency row's sends: their ``p95`` time to send, the p95 of each one's time over its
    slow threshold (``slower``: its workflow's, else its pair's; ``others_slower``: of the
    sends but those of the workflow most slow sends are, ``mostly``, 0 without any), the pair's
    threshold (``slow_above``) and whether some sends had their workflow's (``own``)."""
    jobs = found.jobs
    sent = jobs[["time_to_send_s", "slow_above", "workflow"]].iloc[row["affected"]]
    row["p95"] = float(sent["time_to_send_s"].quantile(0.95))
    over = sent["time_to_send_s"] / sent["slow_above"]
    row["slower"] = float(over.quantile(0.95))
    others = over[sent["workflow"].ne(row["mostly"]).fillna(True)] if row.get("mostly") else over
    row["others_slower"] = float(others.quantile(0.95)) if len(others) else 0.0
    usual = found.slow_above
    pair = (usual["channel"].eq(row["keys"]["channel"]) & usual["provider_id"].eq(row["keys"]["provider_id"])
            & usual["workflow"].isna())  # fmt: skip
    row["slow_above"] = float(usual.loc[pair.fillna(False).to_numpy(), "slow_above"].iloc[0])
    row["own"] = bool(sent["slow_above"].ne(row["slow_above"]).any())


def _standing(row: dict, hit: pd.DataFrame) -> bool:
    """Whether most of the subscribers a failure row hit had already failed with its cause (an
    error code) on its provider in the `STANDING` before it began (in the window): their
    standing state (a mailbox that does not exist, an app uninstalled), no incident."""
    before, code = row.get("before"), row["cause"]
    people = hit["subscriber_id"].dropna().unique()
    if before is None or not len(people):
        return False
    failed = before.loc[before["met_failure"] & before["error_code"].eq(code), "subscriber_id"]
    return bool(np.isin(people, failed.unique()).mean() >= MOST)


def _provider_rate(found: _Found, row: dict) -> float:
    """The usual failure rate of the provider of an error code's row: its provider scan's
    baseline, the row's own failures left out (the code's own usual rate when not scanned)."""
    scan, keys = found.scans.get("provider"), found.keys.get("provider")
    key = (row["keys"]["channel"], row["keys"]["provider_id"])
    if scan is None or key not in keys[0]:
        return row["base_rate"]
    group = keys[0].index(key)
    if scan.base is not None:
        failed, tried = scan.base[0][group], scan.base[1][group]
    else:
        failed = scan.events[group].sum() - row["events"]
        tried = scan.weighed(group).sum() - row["jobs"]
    return float(failed / tried) if tried > 0 else row["base_rate"]


def _says(words: re.Pattern, code: str | None, hit: pd.DataFrame) -> bool:
    """Whether the error ``code``, or most of the ``hit`` jobs' error texts, say ``words``
    (`toolkit.error_codes`: `RATE_LIMITED`, throttled: it is up, so this is an error spike at
    any rate, never an outage; `SERVER_ERROR`: its servers failed the sends)."""
    if code is not None and words.search(str(code)):
        return True
    texts = hit["error_text"].dropna()
    return bool(len(texts)) and texts.str.contains(words).mean() >= MOST


def _stale(row: dict, hit: pd.DataFrame) -> bool:
    """A lasting token/credential error, refused for good (not retried): the subscribers it hit
    do not succeed again on that provider (at most a fifth of those sent to again); when fewer
    than 3 were sent to again,
    its code or message says token, credential, registration, 401/403/410... and none of them
    succeeded again (or it lasts to the end of the window)."""
    if hit["retried"].mean() >= MOST:
        return False  # the service retries it: a provider failing, not a credential refused
    later = row["again"]
    first_hit = pd.Series(hit["at"].array.asi8).groupby(hit["subscriber_id"].to_numpy()).min()
    after = later[later["at"].array.asi8 > later["subscriber_id"].map(first_hit).to_numpy()]
    people = after["subscriber_id"].nunique()
    recovered = after.loc[~after["met_failure"], "subscriber_id"].nunique()
    if people >= 3:  # enough of them were sent to again: do they succeed?
        return recovered <= 0.2 * people
    text = [row["keys"].get("error_code"), *hit["error_text"].dropna().unique()[:5]]
    says_so = bool(CREDENTIAL_WORDS.search(" ".join(map(str, text))))
    return says_so and (row["ongoing"] or not recovered)


def _failed_to(jobs: pd.DataFrame, row: dict, domain: str) -> tuple[np.ndarray, np.ndarray]:
    """Whether each send of ``row``'s (channel, provider) in its period met a failure: those
    to ``domain``, and those to other domains."""
    period = jobs.iloc[row["first"] : row["last"] + 1]
    tried = _pair_is(period, row["keys"]) & period["tried"].to_numpy()
    met = period["met_failure"].to_numpy()
    to = period["domain"]
    return (met[tried & to.eq(domain).fillna(False).to_numpy()],
            met[tried & to.ne(domain).fillna(False).to_numpy()])  # fmt: skip


def _pair_is(jobs: pd.DataFrame, keys: dict) -> np.ndarray:
    """Which of ``jobs`` are of the (channel, provider) in ``keys``."""
    channel = jobs["channel"].eq(keys["channel"])  # a category or a string: missing, not equal
    provider = jobs["provider_id"].eq(keys["provider_id"])
    return (channel & provider).fillna(False).to_numpy()
