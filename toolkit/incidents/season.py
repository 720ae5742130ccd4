"""Volume against a seasonal baseline: what each group normally sends at each hour of the week,
and how much it varies.

Counts come as `toolkit.delivery_counts` frames (one row per hour ``bucket`` and (channel,
provider_id, workflow), with ``jobs``). Each such cell's normal count at an hour is the median of
the same hour of the week in the other weeks of the history (scaled to the cell's usual weekly
total, see `center`; drawn toward the same of that hour and its neighbours as far as it is
uncertain, see `pooled`) (the window itself when it spans `MIN_WEEKS` weeks, else ``baseline=``;
a week of it touching a gap, hours a store does not hold, left out): a daily and weekly rhythm,
nightly batches and weekly newsletters are in it, a one-off burst in one week is not. Groups
(channel, provider, workflow) sum their cells. How much a cell's hourly counts vary around that
normal count is measured on the history's own weeks (each against the normal count of the
others; the largest 0.5% left out, they are the history's own incidents): its
variance at an hour of expected count ``e`` is ``a * e + b * e**2`` (`dispersion`: ``a`` at
least 1, a Poisson count's; bursts raise ``a``, an hour busier or quieter than usual as a whole
raises ``b``, so a quiet night varies less than a busy afternoon), and whole days vary together
by a relative variance `day_spread`. A group's period of expected count ``e`` then has the
variance of its hours plus ``day_spread * e**2``, and its count is tested as negative binomial
with that mean and variance (`toolkit.incidents.scan.count_p_value`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.special import gammainc, gammaincinv

from toolkit.errors import ParameterError
from toolkit.incidents import tables

#: The dimensions of a cell, and the groups volume is tested on (each a tuple of dimensions).
CELL = ("channel", "provider_id", "workflow")
LEVELS = {
    "workflow": ("workflow",),
    "channel": ("channel",),
    "provider": ("channel", "provider_id"),
}
HOUR = pd.Timedelta("1h")
WEEK = 168
#: Weeks of history a season needs (the same hour in at least this many weeks).
MIN_WEEKS = 3
#: Whole weeks of a window read alone that still make a season: each week the other's only
#: history, so each departure must also hold against the window's other days (`Season.confirm`).
PAIRED_WEEKS = 2
#: The median of a chi-square variable with one degree of freedom (a squared standard normal).
CHI2_MEDIAN = 0.4549
#: Share of the largest squared residuals left out of a dispersion (the history's own incidents).
TRIM = 0.005
#: The same of two weeks (`PAIRED_WEEKS`): each incident's hours are then one week's departure
#: and the other's expected count, a one-off burst is not smoothed away by a median.
PAIRED_TRIM = 0.04
#: Share of the largest day departures left out of `day_spread` (the history's incident days,
#: a provider moved).
DAY_TRIM = 0.1
#: The relative variances `day_spread` chooses from (0, then 1e-5 to 10, 2% apart).
SPREADS = np.concatenate([[0.0], np.geomspace(1e-5, 10, 700)])
#: The rates of empty hours `empty_rate` chooses from (1e-3 to 10 per expected job, 2% apart).
RATES = np.geomspace(1e-3, 10, 466)


@dataclass
class Season:
    """Observed and expected hourly counts of each cell over the window's hours.

    ``hours`` are the window's hour buckets; ``inside`` which of them lie wholly inside the
    window (an hour only partly inside has no observed nor expected count: its jobs may all
    fall in the part outside, a batch in its first minutes);
    ``keys`` the cells' values; ``reference`` the weeks the season was learnt from; ``confirm``
    whether a departure must also hold against the window's other days (a window of
    `PAIRED_WEEKS` weeks read alone: an incident in one week is an opposite departure of the
    other, `toolkit.incidents.volume.confirmed`).
    """

    keys: list[tuple]
    hours: pd.DatetimeIndex
    inside: np.ndarray
    observed: np.ndarray
    expected: np.ndarray
    reference: np.ndarray  # cells x weeks x 168: the history the season was learnt from
    source: str
    weeks: int
    start: pd.Timestamp
    end: pd.Timestamp
    own: np.ndarray | None = None  # the window's hours where ``reference``'s weeks begin, when
    # they are its own
    confirm: bool = False  # two weeks, each the other's history: rows need the other days too
    earlier: np.ndarray | None = None  # cells x weeks x 168: a baseline's weeks before the
    # window, in step with ``reference``'s, when that is the window's own (a group's bursts)
    phase: int = 0  # the hour of ``reference``'s weeks the window's first hour is
    _grouped: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def with_history(self, cells: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
        """The hourly jobs of ``cells`` (summed) in the history's weeks, then in the window, as
        one series in step with the hours of the week (the history's weeks in their order, the
        hours between them and the window's first hour empty), which of its hours are wholly
        known, and where the window's hours begin in it; the window's alone when the history
        is its own."""
        counts = self.observed[cells].sum(0)
        if self.own is not None or self.confirm:
            return counts, self.inside, 0
        weeks = self.reference[cells].sum(0).ravel()
        at = len(weeks) + self.phase
        inside = np.r_[np.ones(len(weeks), bool), np.zeros(self.phase, bool), self.inside]
        return np.r_[weeks, np.zeros(self.phase), counts], inside, at

    @property
    def seen(self) -> int:
        """The hours up to the last one wholly inside the window: a departure that runs to it
        is still going on as far as the counts can tell (a partial last hour has no count)."""
        inside = np.flatnonzero(self.inside)
        return int(inside[-1]) + 1 if inside.size else 0

    def groups(self, level: str) -> tuple[list[dict], np.ndarray, np.ndarray, tuple, list]:
        """The groups of ``level``: their keys, observed and expected counts (groups x hours),
        their variance (groups x hours, and the `day_spread` of each), and their cells (worked
        out once per level: a season is not changed once built).

        A group's hourly variance is the sum of its workflows' parts' (each part's cells
        summed, then measured: `dispersion`), or its own when larger; its spread the parts'
        spreads weighted by their squared expected counts, or its own when larger."""
        if level not in self._grouped:
            self._grouped[level] = self._group(level)
        return self._grouped[level]

    def _group(self, level: str) -> tuple[list[dict], np.ndarray, np.ndarray, tuple, list]:
        """`groups`, worked out."""
        names = LEVELS[level]
        at = [CELL.index(name) for name in names]
        group_keys = sorted({tuple(key[i] for i in at) for key in self.keys}, key=str)
        number = {key: n for n, key in enumerate(group_keys)}
        member = np.array([number[tuple(key[i] for i in at)] for key in self.keys])
        summed = np.zeros((len(group_keys), len(self.keys)))
        summed[member, np.arange(len(self.keys))] = 1
        observed, expected = summed @ self.observed, summed @ self.expected
        # a workflow's sends on its channels and providers move together (the same
        # notifications), different workflows' apart: a group varies as the sum of its
        # workflows' parts, each measured whole, or as it does itself when that is more
        flows = CELL.index("workflow")
        part_keys = sorted(
            {(m, key[flows]) for m, key in zip(member, self.keys, strict=True)}, key=str
        )
        parts = np.zeros((len(part_keys), len(self.keys)))
        index = {key: n for n, key in enumerate(part_keys)}
        for c, (m, key) in enumerate(zip(member, self.keys, strict=True)):
            parts[index[m, key[flows]], c] = 1
        of_group = np.zeros((len(group_keys), len(part_keys)))
        of_group[[m for m, _ in part_keys], np.arange(len(part_keys))] = 1
        weekly, part_weekly = (np.einsum("gc,cwh->gwh", m, self.reference) for m in (summed, parts))
        own, part_model = dispersion(weekly), dispersion(part_weekly)
        part_expected = parts @ self.expected
        variance = np.maximum(of_group @ hourly_variance(part_model, part_expected),
                              hourly_variance(own, expected))  # fmt: skip
        weight = part_expected.sum(1) ** 2
        with np.errstate(invalid="ignore", divide="ignore"):
            spread = (of_group @ (day_spread(part_weekly, part_model) * weight)) / (
                of_group @ weight
            )
        spread = np.maximum(np.nan_to_num(spread), day_spread(weekly, own))
        cells = [np.flatnonzero(member == n) for n in range(len(group_keys))]
        named = [dict(zip(names, key, strict=True)) for key in group_keys]
        return named, observed, expected, (variance, spread), cells


def build(
    window: Callable[[], pd.DataFrame],
    after: pd.Timestamp,
    before: pd.Timestamp,
    history: pd.DataFrame | None = None,
    history_span: tuple[pd.Timestamp, pd.Timestamp] | None = None,
    gaps: list[tuple[pd.Timestamp, pd.Timestamp]] = (),
    *,
    missing: list[tuple[pd.Timestamp, pd.Timestamp]] = (),
) -> Season | str:
    """The season of the window ``[after, before)`` (``window()`` gives its counts, asked only
    when a season can be learnt), from the window itself when it spans `MIN_WEEKS` weeks (or
    `PAIRED_WEEKS` and no ``history`` is given: ``confirm``), else from ``history`` (counts
    over ``history_span``; its weeks touching ``gaps``, spans it does not hold, left out: a gap
    is not a quiet week; an hour it begins within counts from there: a 28-day baseline ending at
    half past holds four weeks). The window's hours in ``missing`` (spans its source does not hold)
    have no observed nor expected count. Returns why not (a sentence) when neither has enough
    weeks."""
    hours = pd.date_range(after.floor(HOUR), before.ceil(HOUR), freq=HOUR, inclusive="left")
    hours = hours.as_unit("ns")
    if len(hours) == 0:
        return "the window is shorter than an hour"
    held = _held(hours, missing)
    inside = (hours.asi8 >= after.value) & (hours.asi8 + HOUR.value <= before.value) & held
    first = len(hours) % WEEK  # the hour the window's whole weeks begin
    whole = held[first:].reshape(-1, WEEK).all(1)  # its weeks touching no span it does not hold
    unheld = _unheld_text(missing, after, before)
    own_weeks = min((before - after) // pd.Timedelta(days=7), int(whole.sum()))
    if own_weeks >= MIN_WEEKS or history is None:
        if own_weeks < PAIRED_WEEKS:
            return (f"the window ({before - after}{unheld}) spans fewer than {PAIRED_WEEKS} "
                    "whole weeks and no baseline= was given")  # fmt: skip
        window = window()
        keys = _keys(window)
        observed = _matrix(window, keys, hours)
        weekly = _weeks(observed, hours)[0][:, whole]
        starts = first + WEEK * np.flatnonzero(whole)
        profile = pooled(weekly)  # an hour outside the weeks: the center of all weeks
        expected = np.tile(profile, len(hours) // WEEK + 2)[:, WEEK - first :][:, : len(hours)]
        for week, start in enumerate(starts):  # each week against the others
            expected[:, start : start + WEEK] = pooled(np.delete(weekly, week, axis=1))
        paired = weekly.shape[1] < MIN_WEEKS
        source = ("the same hour of the week in the window's other week, each departure "
                  "confirmed by the same hours of its other days" if paired else
                  f"the same hour of the week in the window's other {weekly.shape[1] - 1} weeks")  # fmt: skip
        source += unheld
        earlier = None if history is None else _earlier(history, keys, history_span, gaps,
                                                       hours[first])  # fmt: skip
        return Season(keys, hours, inside, observed * inside, expected * inside, weekly, source,
                      weekly.shape[1], after, before, starts, paired, earlier=earlier)  # fmt: skip
    h_after, h_before = history_span
    h_hours = pd.date_range(h_after.floor(HOUR), h_before.floor(HOUR), freq=HOUR, inclusive="left")
    h_hours = h_hours.as_unit("ns")
    if len(h_hours) < MIN_WEEKS * WEEK:
        return (f"the baseline ({h_before - h_after}) spans fewer than {MIN_WEEKS} weeks: "
                "too short for a weekly season")  # fmt: skip
    window = window()
    if history.empty or not set(_keys(window)) & set(_keys(history)):
        raise ParameterError(
            "baseline", f"{len(history)} counts of other groups",
            "the history of the same service: some of its (channel, provider, workflow) as "
            "in the activity (not another environment's)",
        )  # fmt: skip
    keys = _keys(window, history)
    observed = _matrix(window, keys, hours)
    weekly, first = _weeks(_matrix(history, keys, h_hours), h_hours)
    whole = _held(h_hours, gaps)[first:].reshape(-1, WEEK).all(1)
    weekly, left_out = weekly[:, whole], int((~whole).sum())
    if left_out:
        left_out = f" ({left_out} with hours the baseline does not hold left out)"
        if weekly.shape[1] < MIN_WEEKS:
            return (f"the baseline has {weekly.shape[1]} whole weeks without a gap{left_out}, "
                    f"fewer than {MIN_WEEKS}: too few for a weekly season")  # fmt: skip
    profile = pooled(weekly)  # cells x 168, from the hour of week of h_hours[first]
    slot = ((hours - h_hours[first]) // HOUR).to_numpy() % WEEK
    source = (
        f"the same hour of the week in the {weekly.shape[1]} weeks of baseline={left_out or ''}"
        f"{unheld}"
    )
    return Season(keys, hours, inside, observed * inside, profile[:, slot] * inside, weekly, source,
                  weekly.shape[1], after, before, phase=int(slot[0]))  # fmt: skip


def _earlier(history: pd.DataFrame, keys: list[tuple], span: tuple, gaps, start: pd.Timestamp):
    """The whole weeks of ``history`` (counts over ``span``) of the cells ``keys``, in step with
    weeks beginning at ``start`` (the last may lack the partial hour ``span`` ends in), those
    touching ``gaps`` left out."""
    week = WEEK * HOUR
    back = max(0, math.ceil((start - span[1].ceil(HOUR)) / week))  # weeks back to the span's end
    end = start - back * week
    weeks = max(0, (end - span[0].floor(HOUR)) // week)
    if not weeks:
        return None
    hours = pd.date_range(end - weeks * week, periods=weeks * WEEK, freq=HOUR).as_unit("ns")
    whole = _held(hours, gaps).reshape(weeks, WEEK).all(1)
    return _matrix(history, keys, hours).reshape(len(keys), weeks, WEEK)[:, whole]


def _unheld_text(missing, after: pd.Timestamp, before: pd.Timestamp) -> str:
    """How much of ``[after, before)`` the spans ``missing`` leave out, in words ('' if none)."""
    left = sum((min(high, before) - max(low, after) for low, high in missing), pd.Timedelta(0))
    if left <= pd.Timedelta(0):
        return ""
    days = left / pd.Timedelta(days=1)
    size = f"{days:.0f} day{'s' * (round(days) != 1)}" if days >= 1 else f"{left.ceil('min')}"
    return f"; {size} its source does not hold left out"


def no_history(counts: pd.DataFrame, after: pd.Timestamp, before: pd.Timestamp) -> list[tuple]:
    """The span of ``[after, before)`` before a service's history begins (``counts``: its
    `toolkit.delivery_counts` over it, hourly), as a span its source does not hold: the hours
    before its first job and that hour itself, when they are at least a day and longer than
    any silence of the whole service after it (a night, a weekend is a silence of the service;
    weeks of nothing before its first job are a service that did not send yet, or whose
    activity is not kept that far back); else none."""
    if counts.empty:
        return []
    sent = pd.DatetimeIndex(counts.loc[counts["jobs"] > 0, "bucket"]).unique().sort_values()
    if sent.empty:
        return []
    begins = sent[0].floor(HOUR)
    silences = (sent[1:] - sent[:-1]).max() - HOUR if len(sent) > 1 else pd.Timedelta(0)
    lead = begins - after.floor(HOUR)
    if lead < pd.Timedelta(days=1) or lead <= silences:
        return []
    return [(after, min(begins + HOUR, before))]


def _held(hours: pd.DatetimeIndex, spans) -> np.ndarray:
    """Which of ``hours`` touch none of ``spans`` (``(start, end)`` a source does not hold)."""
    held = np.ones(len(hours), dtype=bool)
    for low, high in spans:
        held &= ~((hours >= low.floor(HOUR)) & (hours < high))
    return held


def same_environment(activity, baseline) -> None:
    """Raise `ParameterError` when ``baseline`` (an Activity) holds notifications of other
    environments than ``activity``'s and none of its (both known)."""
    ids = [set(frame["environment_id"].dropna().astype(str)) if "environment_id" in frame else set()
           for frame in (getattr(x, "notifications", pd.DataFrame()) for x in (activity, baseline))]  # fmt: skip
    if ids[0] and ids[1] and not ids[0] & ids[1]:
        raise ParameterError(
            "baseline", f"an activity of environment(s) {sorted(ids[1])}",
            f"the history of the activity's environment(s) {sorted(ids[0])}",
        )  # fmt: skip


def missing_days(held: set[str], start: pd.Timestamp, end: pd.Timestamp) -> list[tuple]:
    """The days of ``[start, end)`` not in ``held`` (a store's days with files,
    `toolkit.store.layout.days_held`): ``(day start, next day start)`` spans it never synced."""
    days = pd.date_range(start.floor("D"), end, freq="D", inclusive="left")
    one = pd.Timedelta(days=1)
    return [(day, day + one) for day in days if day.strftime("%Y-%m-%d") not in held]


def center(weekly: np.ndarray) -> np.ndarray:
    """The normal count of each cell at each hour of the week (cells x weeks x 168 in, cells x
    168 out): the median of the weeks, scaled so that a week sums to the median week's total
    (at least 1, at most 3 times): a one-off week moves neither, and bursty small counts,
    whose median is below their mean, are not expected too low."""
    median = np.median(weekly, 1)
    total, usual = median.sum(1), np.median(weekly.sum(2), 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        scale = np.clip(np.where(total > 0, usual / total, 1.0), 1.0, 3.0)
    return median * scale[:, None]


def pooled(weekly: np.ndarray) -> np.ndarray:
    """`center`, each hour drawn toward the `center` of the mean of it and the hours either
    side by as much as its own median is uncertain (empirical Bayes: its own center weighs
    ``t / (t + v)``, ``v`` the variance of its median, pi/2 that of its weeks' mean, their
    variance at least a Poisson count's of their mean, or of one job where the pooled center
    is that busy: three weeks of nothing at an hour of a small cell are chance, not certainty;
    ``t`` how far the cell's hours truly depart from the pooled center: ``r * pool**2``, ``r``
    measured on all its hours). A batch hour departs far and stays; a quiet hour's few small
    counts gain its neighbours'."""
    weeks = weekly.shape[1]
    own = center(weekly)
    pool = center((np.roll(weekly, 1, 2) + weekly + np.roll(weekly, -1, 2)) / 3)
    if weeks > 1:  # at least a Poisson count's: of its weeks' mean, or of one job near others
        least = np.maximum(weekly.mean(1), np.minimum(pool, 1.0))
        noise = np.maximum(weekly.var(1, ddof=1), least) / weeks * (np.pi / 2)
    else:
        noise = np.zeros_like(own)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.maximum(0, ((own - pool) ** 2 - noise).sum(1)) / (pool**2).sum(1)
        true = np.nan_to_num(ratio)[:, None] * pool**2
        weight = np.where(true + noise > 0, true / (true + noise), 1.0)
    return pool + weight * (own - pool)


def dispersion(weekly: np.ndarray) -> np.ndarray:
    """Each cell's hourly variance ``a * e + b * e**2`` at an expected count ``e``, from its
    weeks (cells x weeks x 168 in, cells x 2 ``(a, b)`` out): the squared departure of each
    week's hours from the other weeks' expected count (`pooled`) over it (the Pearson
    residual, at least 0.5 expected; hours where nothing was expected nor sent left out; the
    largest `TRIM` left out, `PAIRED_TRIM` of two weeks, the mean of what is left scaled to a
    chi-square's) is, on average, ``a + b * e``: the least-squares line of the
    residuals on the expected counts (``b`` 0, one mean ``a``, when the busier quarter of the
    hours is not twice as busy as the quieter quarter). ``a`` is at least 1 (a Poisson count),
    ``b`` at least 0."""
    trim = TRIM if weekly.shape[1] > PAIRED_WEEKS else PAIRED_TRIM
    kept_mean = _trimmed_chi2(trim)[0] if trim == PAIRED_TRIM else 1.0
    out = np.tile([1.0, 0.0], (len(weekly), 1))
    pearson, at = [], []
    for week in range(weekly.shape[1]):
        expected = pooled(np.delete(weekly, week, axis=1))
        seen = weekly[:, week]
        counted = (expected >= 1) | (seen > 0)  # a burst where little is expected counts
        expected = np.maximum(expected, 0.5)
        pearson.append(np.where(counted, (seen - expected) ** 2 / expected, np.nan))
        at.append(expected)
    pearson, at = np.concatenate(pearson, axis=1), np.concatenate(at, axis=1)
    for cell, (values, expected) in enumerate(zip(pearson, at, strict=True)):
        kept = ~np.isnan(values)
        values, expected = values[kept], expected[kept]
        if len(values) < 10:
            continue
        out[cell] = variance_line(values, expected, trim, kept_mean)
    return out


def variance_line(pearson: np.ndarray, expected: np.ndarray, trim: float = TRIM,
                  kept_mean: float = 1.0) -> tuple[float, float]:  # fmt: skip
    """``(a, b)`` of a variance ``a * e + b * e**2`` at expected counts ``e``: the
    least-squares line of the squared Pearson residuals ``pearson`` on ``expected``, their
    largest ``trim`` left out and the rest over ``kept_mean`` (their mean where the line is
    flat); ``b`` 0, one mean ``a``, when the busier quarter of the counts is not twice the
    quieter quarter. ``a`` is at least 1 (a Poisson count), ``b`` at least 0."""
    order = np.argsort(pearson)[: max(1, int(len(pearson) * (1 - trim)))]
    values, expected = pearson[order] / kept_mean, expected[order]
    a, b = float(values.mean()), 0.0
    quarter, three = np.percentile(expected, [25, 75])
    if three >= 2 * quarter:  # counts of different sizes: the least-squares line
        b = max(0.0, float(np.cov(expected, values)[0, 1] / expected.var(ddof=1)))
        a = a - b * float(expected.mean())
    return max(1.0, a), b


def _trimmed_chi2(trim: float) -> tuple[float, float]:
    """The mean and standard deviation of a chi-square variable of one degree of freedom
    without its largest ``trim`` (``E[X; X <= q] = P(chi2_3 <= q)``, ``E[X**2; X <= q] = 3
    P(chi2_5 <= q)``)."""
    q = 2 * gammaincinv(0.5, 1 - trim)
    mean = float(gammainc(1.5, q / 2) / (1 - trim))
    return mean, float(np.sqrt(3 * gammainc(2.5, q / 2) / (1 - trim) - mean**2))


def hourly_variance(model: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """The variance of hourly counts of ``expected`` (rows x hours) under `dispersion`'s
    ``(a, b)`` of each row."""
    return model[:, :1] * expected + model[:, 1:] * expected**2


def day_spread(weekly: np.ndarray, model: np.ndarray) -> np.ndarray:
    """How much each group's whole days vary together (groups x weeks x 168 in, with its
    `dispersion`): the relative variance ``s`` at which each day's departure from its expected
    count ``u`` (each week against the others, `pooled`; days of at least 20 expected),
    squared, over its variance (its hours' plus ``s * u**2``), has the mean of a chi-square
    law of one degree of freedom, the largest `DAY_TRIM` of both left out (the history's
    incident days), less one standard error (`relative_spread`; 0 when days vary no more than
    their hours do). A period of expected count ``e`` then has its hours' variance plus
    ``s * e**2``."""
    days = weekly.shape[2] // 24
    square, hours, usual = [], [], []
    for week in range(weekly.shape[1]):  # each week against the others
        day = pooled(np.delete(weekly, week, axis=1)).reshape(len(weekly), days, 24)
        total = day.sum(2)
        square.append((weekly[:, week].reshape(len(weekly), days, 24).sum(2) - total) ** 2)
        hours.append((model[:, :1, None] * day + model[:, 1:, None] * day**2).sum(2))
        usual.append(total)
    square, hours, usual = (np.concatenate(x, axis=1) for x in (square, hours, usual))
    out = np.zeros(len(weekly))
    for group in range(len(weekly)):
        ok = usual[group] >= 20
        if ok.sum() >= 5:
            out[group] = relative_spread(square[group, ok], hours[group, ok], usual[group, ok] ** 2)
    return out


def empty_rate(weekly: np.ndarray) -> float:
    """How often an hour of a group's weeks (weeks x 168 in) sent nothing, per job (occasion)
    the other weeks led it to expect (`pooled`): the ``c`` at which an hour of expected count
    ``e`` is empty with the chance ``exp(-c * e)``, fitted by maximum likelihood (inf when no
    hour that expected something was empty). Sends that come in chains (an order's four
    notifications minutes apart) are empty far more often than their hourly variance says: a
    silence is as likely as the history shows it to be."""
    if weekly.shape[0] < 2:
        return float("inf")
    empty, full = [], []
    for week in range(weekly.shape[0]):
        expected = pooled(np.delete(weekly, week, axis=0)[None])[0]
        seen = weekly[week]
        empty.append(expected[(seen == 0) & (expected > 0)])
        full.append(expected[(seen > 0) & (expected > 0)])
    empty, full = np.concatenate(empty), np.concatenate(full)
    if not empty.size:
        return float("inf")
    with np.errstate(over="ignore"):  # the log-likelihood's derivative in c, falling
        slope = (full / np.expm1(RATES[:, None] * full)).sum(1) - empty.sum()
    return float(RATES[np.flatnonzero(slope > 0)[-1]]) if (slope > 0).any() else 0.0


def relative_spread(
    square: np.ndarray, hours: np.ndarray, usual: np.ndarray, trim: float = DAY_TRIM
) -> float:
    """The smallest of `SPREADS` at which the mean of ``square / (hours + s * usual)``, its
    largest ``trim`` left out, is at most a chi-square's so trimmed, less one standard error
    of that mean (it falls as ``s`` grows). A month has about 28 days: their median of
    squares can be half their spread, and even their mean can make days look steadier than
    they are, which makes a quiet day a drop."""
    ratio = np.sort(square[None, :] / (hours[None, :] + SPREADS[:, None] * usual[None, :]), 1)
    kept = max(1, round(ratio.shape[1] * (1 - trim)))
    mean, sd = _trimmed_chi2(trim)
    below = ratio[:, :kept].mean(1) <= mean - sd / np.sqrt(kept)
    return float(SPREADS[int(np.argmax(below))] if below.any() else SPREADS[-1])


def _keys(*frames: pd.DataFrame) -> list[tuple]:
    return sorted(set().union(*(_cells(frame)[1] for frame in frames)), key=str)


def _cells(counts: pd.DataFrame) -> tuple[np.ndarray, list[tuple]]:
    """Each row's cell (a number) and the cells' values (None: missing)."""
    return tables._codes(counts, CELL, np.ones(len(counts), dtype=bool))


def _matrix(counts: pd.DataFrame, keys: list[tuple], hours: pd.DatetimeIndex) -> np.ndarray:
    """``counts`` as cells x hours (0 where absent; cells not of ``keys`` left out)."""
    out = np.zeros((len(keys), len(hours)))
    if counts.empty:
        return out
    number = {key: n for n, key in enumerate(keys)}
    of_row, cells = _cells(counts)
    cell = np.array([number.get(key, -1) for key in cells], dtype="int64")[of_row]
    bucket = pd.DatetimeIndex(counts["bucket"]).as_unit("ns").asi8
    hour = (bucket - hours.as_unit("ns").asi8[0]) // HOUR.value
    inside = (hour >= 0) & (hour < len(hours)) & (cell >= 0)
    np.add.at(out, (cell[inside], hour[inside]), counts["jobs"].to_numpy("float64")[inside])
    return out


def _weeks(matrix: np.ndarray, hours: pd.DatetimeIndex) -> tuple[np.ndarray, int]:
    """The whole weeks at the end of ``matrix`` (cells x weeks x 168), and the hour they start."""
    weeks = matrix.shape[1] // WEEK
    first = matrix.shape[1] - weeks * WEEK
    return matrix[:, first:].reshape(len(matrix), weeks, WEEK), first
