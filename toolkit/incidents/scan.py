"""The statistics of incident detection: a scan for the periods where a count departs from its
baseline, and the exact edges of such a period from the jobs' own timestamps.

Jobs are counted per group and time bucket: ``trials`` (the jobs that could show the problem)
and ``events`` (those that did: failed, failed with one code, slow, or, for a volume drop, the
group's share of all jobs). Every contiguous run of buckets of every group is a candidate period;
the candidate with the largest likelihood ratio (Kulldorff's Bernoulli scan statistic) is each
group's best, and its p-value is the exact binomial probability of a count this extreme given the
baseline rate: the rest of the window's, or a separate baseline's.

A rate scan's expected events come from `toolkit.incidents.rates`: its trials weighed by the
rate of their hour of the day where a group's rate varies by hour, and its counts divided by the
group's measured dispersion (a quasi-binomial test).

The p-values are corrected for the number of periods examined (Bonferroni). A count scan's
periods (volume against its season, `CountScan`) count as `effective_tests`: periods that overlap
are nearly the same test, so a period of ``l`` buckets counts ``1 / l``. A rate scan's (`Scan`)
count one each: counted as effective tests, even with the measured dispersion, the looser
threshold gave rows on quiet data in the accuracy sweep (a failure and a volume row).
"""

from __future__ import annotations

from dataclasses import InitVar, dataclass, field

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from scipy.special import betainc, gammainc, gammaincc

#: Added to the baseline's events and trials: a rate never seen outside the period is small, not 0.
PSEUDO_EVENTS, PSEUDO_TRIALS = 0.5, 1.0
#: Cells of the all-periods arrays computed at once (groups x periods: bounds their memory).
CHUNK_CELLS = 250_000
#: Greatest chance, under the incident's own rate, of what its group sent after it (failures:
#: no event in the jobs after its last); above it the incident may still be going on
#: (``ongoing``).
STILL_GOING = 0.01
#: The longest run of buckets a count scan examines at once (a longer departure is found as
#: adjacent runs, joined).
LONGEST = 72
#: The fewest jobs a run of a spike scan is expected to send: a group's history can leave an
#: hour at nothing (the median of weeks it sent there now and then), and no count is
#: infinitely unlikely against it.
LEAST = 0.5
#: A bucket departing more than this many times its expected count (its squared Pearson
#: residual) is an incident, left out of a dispersion (about 1 in 10**6 of a normal law).
CUT = 25.0


def dispersion(events: np.ndarray, expected: np.ndarray) -> float:
    """How much counts (per bucket) vary around their ``expected`` counts beyond a Poisson
    law: ``sum((k - e)**2) / sum(e)`` over the buckets expected some, their squared Pearson
    residual at most `CUT` (a fixed cut, so that incidents do not widen it for one another);
    at least 1, and 1 with fewer than 10 buckets expected some."""
    seen = expected > 0
    if seen.sum() < 10:
        return 1.0
    k, e = events[seen], expected[seen]
    square = (k - e) ** 2
    kept = square <= CUT * e
    return max(1.0, float(square[kept].sum() / e[kept].sum()))


def flat_dispersion(events: np.ndarray, trials: np.ndarray) -> float:
    """The `dispersion` of ``events`` out of ``trials`` (per bucket) around their mean rate."""
    rate = events.sum() / trials.sum() if trials.sum() else 0.0
    return dispersion(events, trials * rate)


@dataclass(frozen=True)
class Evidence:
    """The minimum evidence a period needs to be tested at all.

    ``low`` scans for too few events (a volume drop): then ``min_events`` applies to the events
    expected at the baseline rate, and the rate must fall to ``1 / min_ratio`` of the baseline.
    """

    min_trials: int
    min_events: int
    min_ratio: float
    low: bool = False


@dataclass
class Pick:
    """A group's best period: buckets ``[first, stop)``, its counts, baseline rate and p-value."""

    group: int
    first: int
    stop: int
    events: int
    trials: int
    base_rate: float
    p_value: float
    expected: float = 0.0
    #: A count scan's drop: the group's run with no job at all and the most expected jobs
    #: (``first, stop, expected``; tested on send occasions, `toolkit.incidents.volume`).
    silent: tuple[int, int, float] | None = None


@dataclass
class Scan:
    """All-periods scan of ``events`` (groups x buckets) against ``trials`` (trial groups x
    buckets; ``parent[g]`` is event group g's trial group).

    ``base`` (events, trials per group) replaces the rest of the window as the baseline;
    ``weight`` (event groups x buckets) weighs the trials by the expected rate of their bucket
    over the group's mean, ``dispersion`` (event groups) divides the counts tested
    (`toolkit.incidents.rates`). A group marked in ``own`` had its dispersion measured on
    these buckets at their mean rate (`flat_dispersion`); an incident holding much of a
    short window raises that rate, and the buckets around it look too low: a period of such
    a group is tested with the dispersion around the rest's rate (`period_law`).
    ``spread`` (event groups) is how much whole days vary (`toolkit.incidents.rates`), for
    buckets of ``bucket_days`` days; ``bucket_spread`` (event groups) how much a bucket of the
    history varies as a whole, a bucket of the scan spanning ``history_buckets`` of them.
    `first_round` gives each group's best period, `next_round` the next best apart from those
    `mark`-ed; `tests` is how many periods the first round examined (those with enough
    evidence), for the multiple-testing correction.
    """

    events: np.ndarray
    trials: np.ndarray
    parent: np.ndarray
    evidence: Evidence
    base: tuple[np.ndarray, np.ndarray] | None = None
    weight: np.ndarray | None = None
    dispersion: np.ndarray | None = None
    own: np.ndarray | None = None
    spread: np.ndarray | None = None
    bucket_days: float = 0.0
    bucket_spread: np.ndarray | None = None
    history_buckets: float = 1.0
    tests: float = 0.0
    used: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.used = np.zeros(self.events.shape, dtype=bool)
        if self.dispersion is None:
            self.dispersion = np.ones(len(self.events))
        self._first = self._round(np.arange(len(self.events)))
        self.tests = self._first[1]

    def weighed(self, group: int, buckets: np.ndarray | slice = slice(None)) -> np.ndarray:
        """The trials of event ``group`` at ``buckets`` weighed by their expected rate."""
        trials = self.trials[self.parent[group], buckets].astype("float64")
        return trials if self.weight is None else trials * self.weight[group, buckets]

    def first_round(self) -> list[Pick]:
        return self._first[0]

    def next_round(self, groups: list[int]) -> list[Pick]:
        """The best periods of ``groups`` apart from the periods already picked."""
        return self._round(np.asarray(groups, dtype=int))[0] if groups else []

    def mark(self, pick: Pick) -> None:
        self.used[pick.group, pick.first : pick.stop] = True

    def _round(self, groups: np.ndarray) -> tuple[list[Pick], float]:
        picks, tests = [], 0.0
        size = max(1, CHUNK_CELLS // (self.events.shape[1] + 1) ** 2)
        for start in range(0, len(groups), size):
            chunk = groups[start : start + size]
            found, counted = self._best(chunk)
            picks += found
            tests += counted
        return picks, tests

    def _best(self, groups: np.ndarray) -> tuple[list[Pick], float]:
        rule = self.evidence
        used = self.used[groups]
        events = np.where(used, 0, self.events[groups]).astype("float64")
        raw = np.where(used, 0, self.trials[self.parent[groups]]).astype("float64")
        trials = raw if self.weight is None else raw * self.weight[groups]
        k, n = _all_periods(events), _all_periods(trials)
        jobs = n if self.weight is None else _all_periods(raw)
        # the periods with the jobs (and events) a valid one needs, none crossing a marked
        # bucket: the rest of the tests reads those only
        kept = jobs >= rule.min_trials
        if not rule.low:
            kept &= k >= rule.min_events
        if used.any():
            kept &= _all_periods(used.astype("float64")) <= 0
        at = np.flatnonzero(kept)
        row = at // k[0].size
        k, n, jobs = k.ravel()[at], n.ravel()[at], jobs.ravel()[at]
        if self.base is None:
            k_out = events.sum(1)[row] - k
            n_out = trials.sum(1)[row] - n
        else:
            k_out, n_out = self.base[0][groups][row], self.base[1][groups][row]
        enough_base = n_out >= rule.min_trials
        with np.errstate(invalid="ignore", divide="ignore"):
            base_rate = (k_out + PSEUDO_EVENTS) / (n_out + PSEUDO_TRIALS)
            rate = k / n
            if rule.low:
                evident = (n * base_rate >= rule.min_events) & (rate * rule.min_ratio <= base_rate)
            else:
                evident = rate >= rule.min_ratio * base_rate
        valid = np.flatnonzero(evident & enough_base)
        tests = float(len(valid))
        if not tests:
            return [], 0.0
        score = _llr(k[valid], n[valid], k_out[valid], n_out[valid], self.base is not None)
        picks, side = [], events.shape[1] + 1
        for one in np.unique(row[valid]):  # each group's first best valid period
            mine = np.flatnonzero(row[valid] == one)
            top = mine[score[mine].argmax()]
            if not np.isfinite(score[top]):
                continue
            best = valid[top]
            first, stop = divmod(int(at[best]) % side**2, side)
            level, phi = self.period_law(int(groups[one]), first, stop, base_rate[best] * n[best], base_rate[best])  # fmt: skip
            p = p_value(k[best] / phi, n[best] * level, k_out[best] / phi, n_out[best], low=rule.low)  # fmt: skip
            picks.append(
                Pick(
                    int(groups[one]),
                    first,
                    stop,
                    int(k[best]),
                    int(jobs[best]),
                    float(base_rate[best] * n[best] / jobs[best]),
                    p,
                )  # fmt: skip
            )
        return picks, tests

    def period_law(
        self, group: int, first: int, stop: int, expected: float, rate: float
    ) -> tuple[float, float]:
        """The level of a period's days (``[first, stop)``, ``expected`` events at the
        baseline's ``rate`` per weighed trial), by which its expected count is multiplied, and
        the dispersion its count is tested with: its buckets' (for a group in ``own``, their
        `dispersion` around the rate of the rest of the window, the baseline the period is
        tested against, when that is smaller, the periods marked left out), its days' and its
        history buckets' (``bucket_spread * expected`` over as many as it spans, at least 1).
        A period of a day or more varies with its days by ``spread * expected`` over them; one
        shorter has its day's level as the rest of the day around it shows it (`_around`): whole
        days vary together by ``spread``, a gamma law of mean 1, whose posterior given the
        events and expected events there (quasi-Poisson) is the level's mean and variance. A
        bad day raises the hours around too; a period failing more than the hours around it
        is not the day's."""
        phi = self._bucket_dispersion(group, first, stop)
        spread = 0.0 if self.spread is None else float(self.spread[group])
        days, level, over = (stop - first) * self.bucket_days, 1.0, 0.0
        if spread > 0 and days >= 1:
            over = spread * expected / days
        elif spread > 0:
            near = self._around(group, first, stop)
            shape = 1 / spread + float(self.events[group, near].sum()) / phi
            scale = 1 / spread + rate * float(self.weighed(group, near).sum()) / phi
            level = shape / scale
            over = shape / scale**2 * expected / level
        buckets = 0.0
        if self.bucket_spread is not None:
            spans = max(1.0, (stop - first) * self.history_buckets)
            buckets = self.bucket_spread[group] * expected * level / spans
        return level, phi + over + buckets

    def _around(self, group: int, first: int, stop: int) -> np.ndarray:
        """The rest of the day centred on ``[first, stop)`` (as long either side), not marked."""
        days = (stop - first) * self.bucket_days
        reach = max(1, round((1 - days) / 2 / self.bucket_days)) if self.bucket_days else 0
        near = np.zeros(self.events.shape[1], dtype=bool)
        near[max(0, first - reach) : first] = True
        near[stop : stop + reach] = True
        return near & ~self.used[group]

    def _bucket_dispersion(self, group: int, first: int, stop: int) -> float:
        phi = float(self.dispersion[group])
        if self.own is None or not self.own[group]:
            return phi
        k, n = self.events[group], self.trials[self.parent[group]]
        kept = ~self.used[group]
        rest = kept.copy()
        rest[first:stop] = False
        rate = k[rest].sum() / max(n[rest].sum(), 1)
        return min(phi, dispersion(k[kept], n[kept] * rate))


@dataclass
class CountScan:
    """All-periods scan of ``observed`` against ``expected`` counts (groups x buckets) with
    ``variance`` (groups x buckets, and per group a spread ``s`` adding ``s * expected**2`` to a
    period's; its dispersion is its variance over its expected count, at least 1; tested as
    negative binomial, `count_p_value`): too few (``low``) or too many, over runs of up to
    `LONGEST` buckets. The same rounds as `Scan`; `tests` as `effective_tests`. A
    period needs ``min_trials`` expected and a ratio ``1 / min_ratio`` (too few), or a ratio
    ``min_ratio`` and, above the expected (at least `LEAST`), ``min_trials`` times its
    dispersion and two of the group's busiest expected hours (too many).
    `count_scans` makes the scans of several rules of the same counts at once. The busiest
    expected hour is the group's in all the buckets, or the run's own with ``own_hours``, or
    ``busiest`` (per group) when given."""

    observed: np.ndarray
    expected: np.ndarray
    variance: tuple[np.ndarray, np.ndarray]
    evidence: Evidence
    tests: float = 0.0
    busiest: np.ndarray | None = None
    own_hours: bool = False
    used: np.ndarray = field(init=False)
    first: InitVar[bool] = True  # its first round now (else `count_scans` sets it)

    def __post_init__(self, first: bool) -> None:
        self.used = np.zeros(self.observed.shape, dtype=bool)
        if first:
            self._first = self._best(np.arange(len(self.observed)))
            self.tests = self._first[1]

    first_round, next_round, mark = Scan.first_round, Scan.next_round, Scan.mark

    def _round(self, groups: np.ndarray) -> tuple[list[Pick], float]:
        return self._best(groups)

    def _best(self, groups: np.ndarray) -> tuple[list[Pick], float]:
        picks, tests = [], 0.0
        for group in groups:  # one group at a time: starts x lengths cells
            pick, counted = self._pick(group, *self._runs(group))
            picks += [pick] if pick is not None else []
            tests += counted
        return picks, tests

    def _runs(self, group: int) -> tuple[np.ndarray, ...]:
        """The group's observed and expected counts, dispersion and crossing of a marked
        bucket, of each run (starts x lengths)."""
        used = self.used[group]
        k, inside = _runs(np.where(used, 0, self.observed[group]))
        e = _runs(np.where(used, 0, self.expected[group]))[0]
        crossed = ~inside if not used.any() else (_runs(used.astype("float64"))[0] > 0) | ~inside
        v = _runs(np.where(used, 0, self.variance[0][group]))[0]
        v = v + self.variance[1][group] * e**2
        with np.errstate(invalid="ignore", divide="ignore"):
            phi = np.maximum(1.0, np.where(e > 0, v / e, 1.0))
        return k, e, phi, crossed

    def _pick(self, group: int, k, e, phi, crossed) -> tuple[Pick | None, float]:
        """The group's best run of `_runs` and the tests its valid runs count."""
        rule = self.evidence
        if rule.low:
            evident = (e >= rule.min_trials) & (k * rule.min_ratio <= e)
            evident &= e - k >= rule.min_events
        else:  # more than two of its busiest expected hours, and than its bursts
            top = (float(self.busiest[group]) if self.busiest is not None
                   else _run_top(self.expected[group], k.shape[1]) if self.own_hours
                   else float(self.expected[group].max()))  # fmt: skip
            e = np.maximum(e, LEAST)
            more = np.maximum(2 * top, rule.min_trials * phi)
            evident = (k >= rule.min_ratio * e) & (k - e >= more)
        valid = evident & ~crossed
        if not valid.any():
            return None, 0.0
        tests = effective_tests(valid, np.arange(1, valid.shape[1] + 1)[None, :])
        score, k_in, e_in = np.full(valid.shape, -np.inf), k[valid], e[valid]  # valid only
        with np.errstate(invalid="ignore", divide="ignore"):
            score[valid] = (_xlogy(k_in, k_in / np.maximum(e_in, 1e-9)) - (k_in - e_in)) / phi[valid]  # fmt: skip
        first, length = np.unravel_index(int(score.argmax()), score.shape)
        at = (first, length)
        p = count_p_value(k[at], e[at], phi[at], low=rule.low)
        silent, none = None, valid & (k <= 0)
        if rule.low and none.any():
            start, span = np.unravel_index(int(np.where(none, e, -1.0).argmax()), e.shape)
            silent = (int(start), int(start + span + 1), float(e[start, span]))
        return Pick(int(group), int(first), int(first + length + 1), int(round(k[at])), 0, 0.0,
                    p, float(e[at]), silent), tests  # fmt: skip


def count_scans(
    observed, expected, variance, rules: list[Evidence], busiest=None, own_hours=False
) -> list[CountScan]:
    """A `CountScan` of the same counts under each of ``rules`` (too few, too many): their
    first rounds (nothing marked yet) read each group's runs once."""
    scans = [CountScan(observed, expected, variance, rule, busiest=busiest, own_hours=own_hours,
                       first=False) for rule in rules]  # fmt: skip
    found = [([], 0.0) for _ in rules]
    for group in range(len(observed)):
        runs = scans[0]._runs(group)
        for n, scan in enumerate(scans):
            pick, tests = scan._pick(group, *runs)
            found[n] = (found[n][0] + ([pick] if pick is not None else []), found[n][1] + tests)
    for scan, first in zip(scans, found, strict=True):
        scan._first, scan.tests = first, first[1]
    return scans


def _runs(values: np.ndarray, longest: int = LONGEST) -> tuple[np.ndarray, np.ndarray]:
    """``[i, l]`` = sum of ``values[i : i + l + 1]`` for runs of up to ``longest`` buckets, and
    which runs end inside ``values``."""
    cumulative = np.concatenate([[0.0], np.cumsum(values, dtype="float64")])
    starts = np.arange(len(values))[:, None]
    ends = starts + np.arange(1, min(longest, len(values)) + 1)[None, :]
    inside = ends <= len(values)
    return cumulative[np.minimum(ends, len(values))] - cumulative[starts], inside


def _run_top(expected: np.ndarray, width: int) -> np.ndarray:
    """``[i, l]``: the busiest expected hour of run ``[i, i + l]``."""
    padded = np.concatenate([expected, np.zeros(width)])
    return np.maximum.accumulate(sliding_window_view(padded, width)[: len(expected)], axis=1)


def effective_tests(valid: np.ndarray, length: np.ndarray) -> float:
    """How many tests the ``valid`` periods (any shape) of ``length`` buckets (broadcast to it)
    are: each counts ``1 / length``, since a period overlapping another by all but one of its
    ``l`` buckets is nearly the same test (the disjoint periods of each length that fit)."""
    return float((valid / np.maximum(length, 1)).sum())


def count_p_value(observed: float, expected: float, dispersion: float, *, low: bool) -> float:
    """The negative binomial tail: the law of mean ``expected`` and variance ``dispersion``
    times it (a Poisson law when ``dispersion`` is 1), at ``observed``, as few (``low``) or as
    many: a gamma-mixed Poisson, whose tail is as heavy as measured bursts and busy days make
    it."""
    mean, k = max(expected, 1e-9), observed
    if dispersion <= 1 + 1e-9:
        if low:
            return float(gammaincc(k + 1, mean))  # P(X <= k)
        return 1.0 if k <= 0 else float(gammainc(k, mean))  # P(X >= k)
    size, success = mean / (dispersion - 1), 1 / dispersion  # nbinom(size, success)
    # nbinom.cdf(k) and nbinom.sf(k - 1) as scipy.stats computes them (the regularized
    # incomplete beta), without importing scipy.stats (~0.6 s)
    if low:
        return float(betainc(size, k + 1, success))  # P(X <= k)
    return 1.0 if k <= 0 else float(betainc(k, size, 1 - success))  # P(X >= k)


def p_value(events, trials, base_events, base_trials, *, low: bool = False) -> float:
    """The exact conditional test of two rates: given all the events of the period and the
    baseline, the probability that the period holds as many (as few, when ``low``) of them as
    it does, were both rates the same (the baseline's own uncertainty is accounted for)."""
    total = events + base_events
    share = trials / (trials + base_trials)
    # binom.cdf(events, total, share) and binom.sf(events - 1, total, share) as scipy.stats
    # computes them (the same regularized incomplete beta), without importing scipy.stats (~0.6 s)
    if low:
        return 1.0 if events >= total else float(betainc(total - events, events + 1, 1 - share))
    return 1.0 if events <= 0 else float(betainc(events, total - events + 1, share))


def segment(hits: np.ndarray, rate: float, base_rate: float) -> slice:
    """The run of jobs (sorted by time) where ``hits`` are bunched: the maximum-scoring
    contiguous segment of the per-job log-likelihood ratio of ``rate`` against ``base_rate``.

    It starts and ends on a hit (a miss between two periods lowers the score), which puts an
    incident's edges on the jobs' timestamps instead of bucket edges.
    """
    rate = min(max(rate, 1e-6), 1 - 1e-6)
    base_rate = min(max(base_rate, 1e-9), 1 - 1e-9)
    hit, miss = np.log(rate / base_rate), np.log((1 - rate) / (1 - base_rate))
    score = np.concatenate([[0.0], np.cumsum(np.where(hits, hit, miss))])
    gain = score - np.minimum.accumulate(score)
    stop = int(gain.argmax())
    return slice(int(_last_argmin(score)[stop]), stop)


def _last_argmin(values: np.ndarray) -> np.ndarray:
    """For each position, the index of the last minimum of ``values`` up to it."""
    lowest = np.minimum.accumulate(values)
    at_min = np.where(values <= lowest, np.arange(len(values)), 0)
    return np.maximum.accumulate(at_min)


def _all_periods(counts: np.ndarray) -> np.ndarray:
    """``[g, i, j]`` = sum of ``counts[g, i:j]`` where ``i < j``; where ``j <= i`` (no period)
    at most 0 for counts at least 0 (a period needs jobs: never valid)."""
    cumulative = np.concatenate([np.zeros((len(counts), 1)), np.cumsum(counts, 1)], axis=1)
    return cumulative[:, None, :] - cumulative[:, :, None]


def _xlogy(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(x > 0, x * np.log(np.where(y > 0, y, 1.0)), 0.0)


def _llr(k, n, k_out, n_out, fixed_base: bool) -> np.ndarray:
    """Log-likelihood ratio of a period's own rate against one rate for the whole window (or
    the fixed baseline's rate)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        inside = _xlogy(k, k / n) + _xlogy(n - k, 1 - k / n)
        if fixed_base:
            p0 = (k_out + PSEUDO_EVENTS) / (n_out + PSEUDO_TRIALS)
            return inside - _xlogy(k, p0) - _xlogy(n - k, 1 - p0)
        outside = _xlogy(k_out, k_out / n_out) + _xlogy(n_out - k_out, 1 - k_out / n_out)
        total_k, total_n = k + k_out, n + n_out
        whole = _xlogy(total_k, total_k / total_n) + _xlogy(
            total_n - total_k, 1 - total_k / total_n
        )
        return inside + outside - whole
