"""Failure rates against their baseline: how a group's rate varies with the hour of the day (and
of the week), and how much its failures vary beyond a binomial law.

The history is the baseline's counts per hour (``baseline=`` an Activity) or the window's own
buckets; each group's events (failed, failed with a code, slow jobs) and trials per bucket.

*Profile.* With `season.MIN_WEEKS` whole weeks of history, each group's buckets are split into
slots of the day (its hours, or the window's buckets) and a group's rate *varies by hour* when
its slots' rates depart from its mean rate beyond its buckets' own spread around them (a
quasi-likelihood F test, at `PROFILE_ALPHA` over the groups tested). The history's incidents are
left out first: buckets in a tail of their law beyond `TAIL`, judged to start with against each
slot's rate without its highest bucket. A slot's expected rate is then the pooled rate of its
kept buckets, with one pseudo-failure at the group's mean rate; the `Rates.weight` of a window's
bucket is its slots' rate over the mean (1 on average over the history's trials). Otherwise (a
shorter history, a flat rate) the weight is 1 and the rate flat.

*Hours of the week.* A slot of the week whose rate departs from the same slot of the other
days in every week, its highest bucket aside (at `PROFILE_ALPHA` over the groups and the slots:
sends slower every Monday morning under a weekly batch's load; a one-off incident is one
bucket, aside), has its own rate, pooled as the day's slots are (`_by_week`).

*Load.* A provider queues (throttles) more when the service sends more than its hours
usually do (a weekly report, a campaign), whoever sent it: a group's rate is ``ratio**g`` times
its hours', ``ratio`` a bucket's load (the service's trials, all groups') over the median of its
hour of the day in the history, ``g`` the quasi-Poisson fit on the history (with a level of its
own, its incidents left out), believed above 0 at `PROFILE_ALPHA` over the groups
(`load_law`). The profiles are then learnt on the trials weighed by it; the window's buckets are
weighed by it at their own load.

*A job's own slot.* A period's jobs are weighed by the rate of their own slot (`Rates.weigh`),
not their bucket's mean (a window's buckets may be three hours), and by those an hour earlier
and an hour later: a period whose rate is its hours' usual rate an hour off (the clocks changed
for summer time, and a batch at 07:00 local moved an hour in UTC) is no incident
(`toolkit.incidents.detect`).

*Dispersion.* Failures bunch (retries, a subscriber failing repeatedly, fan-outs), so a group's
count in a period varies more than a binomial law says: its ``dispersion`` ``phi`` is the
history's variance of the bucket counts around their expected counts over those expected counts
(``sum((k - e)**2) / sum(e)``, its buckets departing more than `toolkit.incidents.scan.CUT`
times their expected count, the history's own incidents, left out; at least 1: the cut
understates a very heavy tail, never below a binomial law; `toolkit.incidents.scan.dispersion`).
A period's count is tested as a quasi-binomial one: the exact conditional test on the counts
divided by ``phi`` (`toolkit.incidents.scan.p_value`); measured on the window itself, around the
rest of the window's rate when that is smaller (`toolkit.incidents.scan.Scan.period_dispersion`).

*Days.* A provider's failure rate also wanders from day to day as a whole (a carrier's bad day,
a day of many new numbers): each group's ``spread`` is the relative variance of its days' counts
around their expected counts beyond the variance of their hours (`day_spread`, measured as
`toolkit.incidents.season.day_spread` measures it for volume, the history's incident days left
out). A period of ``d`` days (at least 1) and ``e`` expected events then has the variance of its
buckets plus ``spread * e**2 / d``: a day at twice the usual rate of a group whose days vary
that much is no incident.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.special import betainc, gammainc, gammaincc
from scipy.stats import norm

from toolkit.incidents.scan import flat_dispersion
from toolkit.incidents.season import MIN_WEEKS, relative_spread, variance_line

#: Family-wise level at which a rate that varies by hour is believed (over the groups tested).
PROFILE_ALPHA = 0.01
#: A bucket's count less likely than this (either tail) under the profile is an incident of the
#: history, left out of the profile and its test.
TAIL = 1e-4
#: The fewest expected events a day of history needs to tell how days vary (`day_spread`), and
#: the fewest such days: two weeks, so that an incident of a day or two (its days left out with
#: the `DAY_TRIM` departing most) does not pass for how days vary when the history is the
#: window itself.
DAY_EVENTS, SPREAD_DAYS = 5.0, 14
#: The fewest expected events a bucket of history needs to tell how buckets vary (`bucket_spread`).
BUCKET_EVENTS = 2.0
#: Share of the days of largest departure left out of `day_spread`: the history's incidents,
#: among them the first days of a failure rate climbing for days.
DAY_TRIM = 0.2
#: The largest power of the load a rate may follow (`load_law`).
MAX_LOAD_POWER = 3.0
DAY, HOUR = pd.Timedelta(days=1), pd.Timedelta(hours=1)


@dataclass
class Rates:
    """Per event group: ``weight`` (groups x the window's buckets: the expected rate there over
    the group's mean; None when every group is flat), ``dispersion`` (groups), ``varies``
    (groups whose rate varies by hour); the whole ``weeks`` of history they were learnt from,
    ``what`` it was, how many groups have hours of the week of their own (``by_week``), the
    ``profiles`` (groups x slots of the week of ``width``: the rate there over the mean;
    None when every group is flat), and how much whole days vary (``spread``, groups)."""

    weight: np.ndarray | None
    dispersion: np.ndarray
    varies: np.ndarray
    weeks: int = 0
    what: str = "the window"
    by_week: int = 0
    profiles: np.ndarray | None = None
    width: pd.Timedelta = HOUR
    spread: np.ndarray | None = None
    bucket_spread: np.ndarray | None = None
    load: np.ndarray | None = None
    buckets: tuple[pd.Timestamp, pd.Timedelta] | None = None
    by_load: int = 0

    def __post_init__(self) -> None:
        if self.spread is None:
            self.spread = np.zeros(len(self.dispersion))
        if self.bucket_spread is None:
            self.bucket_spread = np.zeros(len(self.dispersion))

    def weigh(
        self, group: int, at: np.ndarray, shift: pd.Timedelta, scale: np.ndarray | None = None
    ) -> float:
        """Jobs at instants ``at`` (ns) of event ``group``, each weighed by the rate of its own
        slot of the week ``shift`` later (as many as they are where the rate is flat), times
        its ``scale`` (default 1)."""
        scale = np.ones(len(at)) if scale is None else scale
        if self.load is not None:  # and by its bucket's load (`load_law`), not shifted
            start, step = self.buckets
            bucket = np.clip((at - start.value) // step.value, 0, self.load.shape[1] - 1)
            scale = scale * self.load[group, bucket]
        if self.profiles is None or not self.varies[group]:
            return float(scale.sum())
        slot = ((at + shift.value) // self.width.value) % self.profiles.shape[1]
        return float((self.profiles[group, slot] * scale).sum())


def describe(learnt: list[Rates]) -> str:
    """What failure rates were compared with, in words (``attrs["baseline"]``)."""
    weeks, what = max(one.weeks for one in learnt), learnt[0].what
    by_load = sum(one.by_load for one in learnt)
    load = (f"; {by_load} groups' rates follow the service's load beyond their hours' usual"
            if by_load else "")  # fmt: skip
    if weeks < MIN_WEEKS:
        return (f"flat failure rates ({what} spans fewer than {MIN_WEEKS} weeks with jobs: too short for "
                f"rates by hour of the day){load}")  # fmt: skip
    varies = sum(int(one.varies.sum()) for one in learnt)
    groups = sum(len(one.varies) for one in learnt)
    by_week = sum(one.by_week for one in learnt)
    week = f" ({by_week} of them by hour of the week too)" if by_week else ""
    return (
        f"failure rates by hour of the day from the {weeks} weeks of {what} for the "
        f"{varies} of {groups} groups whose rate varies by hour{week}, the others flat{load}"
    )


def learn(
    events: np.ndarray,
    trials: np.ndarray,
    start: pd.Timestamp,
    step: pd.Timedelta,
    window: tuple[pd.Timestamp, pd.Timedelta, int],
    what: str,
    buckets: bool = False,
    load: tuple[np.ndarray, np.ndarray] | None = None,
) -> Rates:
    """The `Rates` of event groups from their history: ``events`` and ``trials`` (groups x
    buckets of ``step`` from ``start``), for the window's buckets ``(start, step, count)``;
    ``what`` names the history ("the baseline", "the window"); with ``buckets``, how much
    its buckets vary (`bucket_spread`; else 0); with ``load`` (the service's trials in each
    bucket of the history and of the window), how much each group's rate follows it
    (`load_law`)."""
    dispersion = np.ones(len(events))
    varies = np.zeros(len(events), dtype=bool)
    slots = DAY // step if step <= DAY and DAY % step == pd.Timedelta(0) else 0
    weeks = events.shape[1] // (7 * slots) if slots else 0
    if weeks:  # weeks without a trial (before a service's history begins) are no history
        weekly = trials[:, : weeks * 7 * slots].sum(0).reshape(weeks, 7 * slots)
        weeks = int((weekly.sum(1) > 0).sum())
    factor = None  # each group's rate at the window's load over its hours' usual (`load_law`)
    if slots and load is not None:  # the profiles are then of the rates beyond the load
        factor, history = _load_factors(events, trials, load, (start, step), window, slots)
        trials = trials * history
    by_load = 0 if factor is None else int((factor != 1).any(1).sum())
    profiles = np.ones((len(events), max(7 * slots, 1)))  # by slot of the week
    by_week = 0
    for group in range(len(events)):
        dispersion[group] = flat_dispersion(events[group], trials[group])
    week = _slot_of(start, step, events.shape[1], step, 7 * slots) if slots else None
    if weeks >= MIN_WEEKS:
        day = _slot_of(start, step, events.shape[1], step, slots)
        for group in range(len(events)):
            k, n, level = events[group], trials[group], PROFILE_ALPHA / len(events)
            profile, p, phi = _profile(k, n, day, slots)
            if p <= level:
                profiles[group], varies[group], dispersion[group] = np.tile(profile, 7), True, phi
            weekly = _by_week(k, n, week, profiles[group], dispersion[group], level)
            if weekly is not None:
                profiles[group], varies[group], by_week = weekly, True, by_week + 1
    spread, bucket = np.zeros(len(events)), np.zeros(len(events))
    if slots:  # each bucket's day from the first; a flat group's profile is all ones
        since = np.arange(events.shape[1], dtype="int64") * step.value
        dates = (start.value + since) // DAY.value
        for group in range(len(events)):
            weighed = trials[group] * profiles[group][week]
            if buckets:
                bucket[group] = bucket_spread(events[group], weighed)
            spread[group] = day_spread(events[group], weighed, dates - dates[0],
                                       dispersion[group], bucket[group])  # fmt: skip
    if not varies.any() and not by_load:
        return Rates(None, dispersion, varies, weeks, what, spread=spread, bucket_spread=bucket)
    weight = np.ones((len(events), window[2]))
    if varies.any():
        weight[varies] = profiles[varies][:, _slots_covered(*window, step, 7 * slots)].mean(2)
    if by_load:
        weight *= factor
    return Rates(weight, dispersion, varies, weeks, what, by_week, profiles, step, spread, bucket,
                 factor if by_load else None, window[:2], by_load)  # fmt: skip


def load_law(events: np.ndarray, expected: np.ndarray, ratio: np.ndarray, phi: float,
             level: float) -> float:  # fmt: skip
    """How much a group's rate follows the service's load: the ``g`` of a rate ``ratio**g``
    times its slot's (``expected`` events in buckets whose load is ``ratio`` times their slots'
    usual, fitted with a level of its own: the quasi-Poisson maximum likelihood on all buckets,
    then on those not in a tail of its law beyond `TAIL`), 0 unless above 0 at ``level``
    (one-sided, dispersion ``phi``). A provider queues its sends more when the service sends
    more than its hour's usual (a weekly report, a campaign), whoever sent it: its slow sends
    rise with the load (the scans that use it: `toolkit.incidents.detect.LOAD_SCANS`)."""
    x = np.log(ratio)
    sent = expected > 0
    if (expected[sent] >= BUCKET_EVENTS).sum() < SPREAD_DAYS or not x[sent].any():
        return 0.0
    k, e, x = events[sent], expected[sent], x[sent]
    kept, fit = np.ones(len(k), dtype=bool), np.zeros(2)
    for _ in range(5):  # then the history's incidents (beyond `TAIL` of the fitted law) left out
        design = np.stack([np.ones(kept.sum()), x[kept]], 1)  # a level and the power g
        for _ in range(20):  # Newton's steps on the Poisson log-likelihood
            fitted = e[kept] * np.exp(design @ fit)
            curve = design.T @ (design * fitted[:, None])
            if np.linalg.det(curve) <= 0:
                return 0.0
            step = np.linalg.solve(curve, design.T @ (k[kept] - fitted))
            fit = np.clip(fit + step, -MAX_LOAD_POWER, MAX_LOAD_POWER)
            if np.abs(step).max() < 1e-6:
                break
        now = _likely(k, e * np.exp(fit[0] + fit[1] * x), phi)
        if (now == kept).all():
            break
        kept = now
    g = float(fit[1])
    return g if g > 0 and g / np.sqrt(phi * np.linalg.inv(curve)[1, 1]) >= norm.isf(level) else 0.0


def _load_factors(events, trials, load, history, window, slots):
    """Each group's `load_law` factor ``ratio**g`` in the window's buckets and in the
    history's (groups x buckets each; 1 where a group's rate does not follow the load):
    ``ratio`` a bucket's load over its slot of the day's usual load (the median of the
    history's buckets there: its ordinary hours, not its bursts; a window's bucket finer than
    the history's at the pace of the history's bucket it is in: a batch's minute is not its
    hour's load), its flat rate's expected."""
    (before, now), (start, step) = load, history
    day = _slot_of(start, step, len(before), step, slots)
    sent = before > 0
    usual = np.array([np.median(before[sent & (day == slot)]) if (sent & (day == slot)).any()
                      else 0.0 for slot in range(slots)])  # fmt: skip
    then = np.where(sent & (usual[day] > 0), before / np.maximum(usual[day], 1e-12), 1.0)
    scale = window[1] / step
    if scale < 1:  # buckets finer than the history's: each at its whole bucket's of history
        begin = window[0].value + np.arange(window[2], dtype="int64") * window[1].value
        whole, count = np.unique(begin // step.value, return_inverse=True, return_counts=True)[1:]
        now = np.bincount(whole, now)[whole] / count[whole]  # (a part at its part's pace)
    expected = usual[_slots_covered(*window, step, slots)].mean(1) * scale
    ratio = np.where((now > 0) & (expected > 0), now / np.maximum(expected, 1e-12), 1.0)
    out, into = np.ones(trials.shape), np.ones((len(events), window[2]))
    for group in range(len(events)):
        k, n = events[group], trials[group]
        mean = k.sum() / n.sum() if n.sum() else 0.0
        g = load_law(k, n * mean, then, flat_dispersion(k, n), PROFILE_ALPHA / len(events))
        if g:  # its mean over the history's trials 1
            mean_factor = (n * then**g).sum() / n.sum()
            out[group], into[group] = then**g / mean_factor, ratio**g / mean_factor
    return into, out


def bucket_spread(events: np.ndarray, weighed: np.ndarray) -> float:
    """How much a group's buckets vary as a whole (``events`` out of ``weighed`` trials, each
    weighed by its slot's rate over the mean): the ``b`` of their variance ``a * e + b * e**2``
    at ``e`` expected events, the least-squares line of their squared Pearson residuals
    (`toolkit.incidents.season.variance_line`), the buckets in a tail of its law beyond
    `TAIL` (the history's incidents; to start with, of a Poisson law) left out; 0 with fewer
    than `SPREAD_DAYS` buckets of at least `BUCKET_EVENTS` expected. A provider has bad hours
    (its load, its own trouble) in which its codes fail more together: its busiest hours (a
    batch's) vary by far more than its quiet hours' dispersion says; its queue slows a bucket's
    sends together."""
    mean = events.sum() / weighed.sum() if weighed.sum() else 0.0
    expected = weighed * mean
    if mean <= 0 or (expected >= BUCKET_EVENTS).sum() < SPREAD_DAYS:
        return 0.0
    sent = expected > 0
    k, e = events[sent], expected[sent]
    pearson, kept, b = (k - e) ** 2 / e, _likely(k, e, 1.0), 0.0
    for _ in range(5):  # the history's incidents (beyond `TAIL` of the line's law) left out
        if kept.sum() < SPREAD_DAYS:
            return 0.0
        a, b = variance_line(pearson[kept], e[kept], 0.0)
        now = _likely(k, e, a + b * e)
        if (now == kept).all():
            break
        kept = now
    return b


def day_spread(events: np.ndarray, weighed: np.ndarray, day: np.ndarray, phi: float,
               buckets: float = 0.0) -> float:  # fmt: skip
    """How much a group's whole days vary beyond their buckets (``events`` out of ``weighed``
    trials, each weighed by its slot's rate over the mean, in days ``day``; the buckets'
    dispersion ``phi``, their relative variance ``buckets``, `bucket_spread`):
    `toolkit.incidents.season.relative_spread` of its days of at least
    `DAY_EVENTS` expected events, 0 with fewer than `SPREAD_DAYS` of them. A day's expected
    count is at the rate of the days but the `DAY_TRIM` of highest rate (an incident of days
    would raise it, and every other day would look low)."""
    k, n = np.bincount(day, events), np.bincount(day, weighed)
    sent = np.flatnonzero(n > 0)
    usual = sent[np.argsort(k[sent] / n[sent])][: max(1, round(len(sent) * (1 - DAY_TRIM)))]
    mean = k[usual].sum() / n[usual].sum() if len(sent) else 0.0
    expected = n * mean
    enough = expected >= DAY_EVENTS
    if mean <= 0 or enough.sum() < SPREAD_DAYS:
        return 0.0
    square = (k - expected)[enough] ** 2
    within = phi * expected + buckets * np.bincount(day, (weighed * mean) ** 2)
    return relative_spread(square, within[enough], expected[enough] ** 2, DAY_TRIM)


def follow_the_day(events: np.ndarray, trials: np.ndarray, start, step) -> bool | None:
    """Whether any group's rate (``events`` over ``trials``, groups x buckets of ``step`` from
    ``start``) varies by slot of the day beyond chance (`_profile`, at `PROFILE_ALPHA` over the
    groups); None when that cannot be seen: buckets covering less than two days, or not
    dividing a day."""
    slots = DAY // step if step <= DAY and DAY % step == pd.Timedelta(0) else 0
    if not slots or events.shape[1] < 2 * slots:
        return None
    slot = _slot_of(start, step, events.shape[1], step, slots)
    return any(_profile(k, n, slot, slots)[1] <= PROFILE_ALPHA / len(events)
               for k, n in zip(events, trials, strict=True))  # fmt: skip


def _profile(events, trials, slot, slots) -> tuple[np.ndarray, float, float]:
    """A group's rate at each slot of the day over its mean rate, the p-value that its rate
    varies by slot (the quasi-likelihood F test: the slots' departures from the mean rate
    against the buckets' dispersion around the slots' rates), and that dispersion. Buckets
    whose count is in a tail of its law beyond `TAIL` (an incident) are left out of both (to
    start with, against each slot's rate without its bucket of the highest rate)."""
    if events.sum() < slots:  # fewer failures than slots: no profile to see
        return np.ones(slots), 1.0, 1.0
    sent = trials > 0  # to start: each slot's rate without its bucket of the highest rate
    rest = _without_highest(events, trials, slot)
    mean = events.sum() / trials.sum()
    start = (np.bincount(slot[rest], events[rest], slots) + 1) / (
        np.bincount(slot[rest], trials[rest], slots) + 1 / mean
    )
    kept = sent & _likely(events, trials * start[slot], 1.0)
    phi = 1.0
    for _ in range(10):
        k = np.bincount(slot[kept], events[kept], slots)
        n = np.bincount(slot[kept], trials[kept], slots)
        mean = k.sum() / n.sum() if n.sum() else 0.0
        if mean <= 0:
            return np.ones(slots), 1.0, 1.0
        rate = (k + 1) / (n + 1 / mean)  # one pseudo-failure at the mean rate
        expected = trials * rate[slot]
        square = (events - expected) ** 2
        with np.errstate(invalid="ignore", divide="ignore"):
            leverage = np.where(n[slot] > 0, trials / n[slot], 0.0)
        spread = float((expected * (1 - leverage))[kept].sum())  # 0: one bucket per slot
        new = max(1.0, float(square[kept].sum()) / spread) if spread > 0 else 1.0
        kept = sent & _likely(events, expected, new)
        if abs(new - phi) < 1e-3:
            break
        phi = new
    sent = n > 0
    between = float(((k - n * mean)[sent] ** 2 / (n * mean)[sent]).sum())
    d1, d2 = int(sent.sum()) - 1, int(kept.sum()) - int(sent.sum())
    if d1 < 1 or d2 < 1:
        return np.ones(slots), 1.0, phi
    f = between / d1 / phi
    total = (n * rate).sum() / n.sum()
    return rate / total, float(betainc(d2 / 2, d1 / 2, d2 / (d2 + d1 * f))), phi


def _by_week(events, trials, week, daily, phi, level) -> np.ndarray | None:
    """A group's rate at each slot of the week over its mean rate: its hour of the day's
    (``daily``, by slot of the week), but for the slots whose count departs from the same hour
    of the other days (two-sided, dispersion ``phi``, at ``level`` over the slots) in their
    weeks without their highest bucket: a weekly batch's hour, not a one-off incident (the
    other days, not the hour's pooled rate, which a busy Monday's own sends dominate). None
    when no slot departs."""
    slots = len(daily)
    rest = _without_highest(events, trials, week)
    k = np.bincount(week[rest], events[rest], slots)
    n = np.bincount(week[rest], trials[rest], slots)
    mean = events.sum() / trials.sum() if trials.sum() else 0.0
    if mean <= 0:
        return None
    hour = np.arange(slots) % (slots // 7)  # each slot's slot of the day
    others = [np.bincount(hour, count, slots // 7)[hour] - count for count in (k, n)]
    usual = (others[0] + 1) / (others[1] + 1 / mean)  # one pseudo-failure at the mean rate
    departs = (n > 0) & (2 * _tail(k, n * usual, phi) <= level / slots)
    if not departs.any():
        return None
    own = (k + 1) / (n + 1 / usual) / mean  # one pseudo-failure at the other days' rate
    return np.where(departs, own, daily)


def _without_highest(events: np.ndarray, trials: np.ndarray, slot: np.ndarray) -> np.ndarray:
    """The buckets with trials but the one of the highest rate in each slot."""
    sent = trials > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(sent, events / trials, -1.0)
    order = np.lexsort((rate, slot))  # by slot, then rate: each slot's last is its highest
    top = np.zeros(len(events), dtype=bool)
    top[order[np.r_[slot[order][1:] != slot[order][:-1], True]]] = True
    return sent & ~top


def _likely(events: np.ndarray, expected: np.ndarray, phi: float) -> np.ndarray:
    """Which counts are not in a tail of the negative binomial law of their expected count and
    dispersion ``phi`` (a Poisson law at 1) beyond `TAIL`: the others are incidents."""
    return _tail(events, expected, phi) >= TAIL


def _tail(events: np.ndarray, expected: np.ndarray, phi: float) -> np.ndarray:
    """The chance of counts as low or as high as ``events`` (the smaller) under the negative
    binomial law of their expected count and dispersion ``phi`` (one, or one per count; a
    Poisson law at 1)."""
    mean = np.maximum(expected, 1e-9)
    low, high = gammaincc(events + 1, mean), gammainc(np.maximum(events, 1e-9), mean)
    over = np.broadcast_to(np.asarray(phi) > 1 + 1e-9, np.shape(mean))
    if over.any():  # a dispersion per count, or one for all
        phi = np.broadcast_to(phi, np.shape(mean))[over]
        size, success = mean[over] / (phi - 1), 1 / phi
        low, high = np.array(low, dtype=float), np.array(high, dtype=float)
        low[over] = betainc(size, events[over] + 1, success)
        high[over] = betainc(np.maximum(events[over], 1e-9), size, 1 - success)
    high = np.where(events > 0, high, 1.0)
    return np.minimum(low, high)


def _slot_of(start, step, count, width, slots) -> np.ndarray:
    """The slot (of ``width``; ``slots`` a day's or a week's) each of ``count`` buckets of
    ``step`` from ``start`` begins in, counted from the epoch (a midnight, so that a slot of
    the week is its slot of the day ``slots // 7`` times over)."""
    since = start.value + np.arange(count, dtype="int64") * step.value
    return (since // width.value) % slots


def _slots_covered(start, step, count, width, slots) -> np.ndarray:
    """The slots (of ``width``) each bucket covers (buckets x slots covered)."""
    first = _slot_of(start, step, count, width, slots)
    many = max(1, int(round(step / width)))
    return (first[:, None] + np.arange(many)[None, :]) % slots
