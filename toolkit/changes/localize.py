"""The search: leaves, their expected values, and the combinations that explain the deviation.

Pure numpy over integer codes; no pandas in the loop. See the package docstring for the method.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pandas as pd

#: Baseline jobs a leaf's own failure rate weighs against its parent's (empirical Bayes prior).
PRIOR_JOBS = 20.0
#: Baseline failures a value's own effect on the rate weighs against none (see `_shrunk_rates`).
PRIOR_FAILURES = 5.0
#: A cause's rate must be at least this multiple of what its baseline predicts (volume: its jobs
#: must differ from the expected by at least ``MIN_RATIO - 1`` of it).
MIN_RATIO = 1.1
#: A cause must account for at least this many failures (volume: jobs) above the prediction.
MIN_EXCESS = 5.0
#: ... and at least this share of the largest cause's.
MIN_SHARE = 0.01
#: At most this many causes, and combinations of at most this many dimensions.
MAX_CAUSES = 5
#: The overdispersion is measured on this many leaves, the busiest.
BUSIEST = 200
#: ... among those expecting at least this many (fewer show chance, not overdispersion).
MIN_BUSY = 20.0
QUARTILE = 0.1015  # the first quartile of a chi-square with one degree of freedom
MAX_DIMENSIONS = 3


@dataclass
class Leaves:
    """The finest slices: integer codes per dimension (-1 for a missing value), and per leaf the
    period's ``jobs``/``failed`` and the baseline's ``baseline_jobs``/``baseline_failed``."""

    codes: dict[str, np.ndarray]
    values: dict[str, np.ndarray]  # dimension -> its values, indexed by code
    jobs: np.ndarray
    failed: np.ndarray
    baseline_jobs: np.ndarray
    baseline_failed: np.ndarray


@dataclass
class Cause:
    """One combination found: ``{dimension: value}`` and its totals."""

    cause: dict[str, str]
    jobs: float
    failed: float
    baseline_jobs: float
    baseline_failed: float
    excess: float
    share: float


def leaves(period: pd.DataFrame, baseline: pd.DataFrame, dimensions: list[str]) -> Leaves:
    """Sum two counts frames (``jobs``, ``failed``) over the combinations of ``dimensions``."""
    both = pd.concat([period[dimensions], baseline[dimensions]], ignore_index=True)
    codes, values = {}, {}
    key = np.zeros(len(both), dtype="int64")
    for name in dimensions:
        code, uniques = pd.factorize(both[name], use_na_sentinel=True)
        codes[name], values[name] = code, np.asarray(uniques, dtype=object)
        key = _combine(key, code + 1, len(uniques) + 1)
    leaf, first = _compact(key)
    size = len(first)
    cut = len(period)

    def total(frame: pd.DataFrame, column: str, part: slice) -> np.ndarray:
        counts = frame[column].to_numpy(dtype="float64")
        return np.bincount(leaf[part], weights=counts, minlength=size)

    return Leaves(
        codes={name: code[first] for name, code in codes.items()},
        values=values,
        jobs=total(period, "jobs", slice(0, cut)),
        failed=total(period, "failed", slice(0, cut)),
        baseline_jobs=total(baseline, "jobs", slice(cut, None)),
        baseline_failed=total(baseline, "failed", slice(cut, None)),
    )


def explain(data: Leaves, measure: str, scale: float, alpha: float) -> tuple[list[Cause], str]:
    """The causes of the change of ``measure`` and, when there are none, why.

    ``scale`` is the period's length over the baseline's (volume's expectation per leaf).
    """
    if not data.jobs.sum():
        return [], "no delivery jobs in the period"
    observed = data.failed if measure == "failure_rate" else data.jobs
    expected, variance = _expected(data, measure, scale)
    total_change = observed.sum() - expected.sum()
    groups = _groups(data)
    tests = 1 + sum(int(g.max()) + 1 for _, g, _ in groups if len(g) and g.max() >= 0)
    threshold = _z_threshold(alpha / (2 * tests))  # two-sided
    forecast = expected.copy()
    found: list[tuple[tuple[str, ...], np.ndarray]] = []
    causes: list[Cause] = []
    # a failure rate is explained by the slices that moved it the way it went; volume both ways
    sign = 0.0 if measure == "volume" else (1.0 if total_change >= 0 else -1.0)
    largest = 0.0
    while len(causes) < MAX_CAUSES:
        best = _best(data, measure, observed, forecast, variance, groups, found, sign, threshold)
        if best is None:
            break
        dims, members, key = best
        if not dims:  # the whole population changed alike: no slice stands out
            if not causes:
                word = "failure rate" if measure == "failure_rate" else "volume"
                return [], f"the {word} changed alike in every slice: no slice stands out"
            break
        excess = float(observed[members].sum() - expected[members].sum())
        if abs(excess) < MIN_EXCESS or (causes and abs(excess) < MIN_SHARE * largest):
            break
        largest = max(largest, abs(excess))
        forecast[members] = observed[members]  # explained: no other cause may claim it
        found.append((dims, members))
        causes.append(
            Cause(
                cause={d: str(data.values[d][c]) for d, c in zip(dims, key, strict=True)},
                jobs=float(data.jobs[members].sum()),
                failed=float(data.failed[members].sum()),
                baseline_jobs=float(data.baseline_jobs[members].sum()),
                baseline_failed=float(data.baseline_failed[members].sum()),
                excess=excess,
                share=np.nan,  # below, once every cause is known
            )
        )
    if causes:
        rest = total_change - sum(c.excess for c in causes)
        for c in causes:  # of the change their way: the causes' and the rest's if it went so too
            same = sum(abs(o.excess) for o in causes if np.sign(o.excess) == np.sign(c.excess))
            c.share = abs(c.excess) / (same + max(0.0, np.sign(c.excess) * rest))
        return sorted(causes, key=lambda c: -abs(c.excess)), ""
    return [], (
        f"no slice departs from its baseline beyond noise ({tests:,} combinations of "
        f"{', '.join(data.codes)} checked at alpha={alpha:g})"
    )


def _expected(data: Leaves, measure: str, scale: float) -> tuple[np.ndarray, np.ndarray]:
    """Each leaf's expected value (from the baseline) and the variance of observed minus
    expected if nothing changed (both windows pooled: the score test's null), overdispersed."""
    if measure == "volume":
        scale *= _common_factor(data.jobs, data.baseline_jobs * scale)
        null = (data.jobs + data.baseline_jobs) * scale / (1 + scale)
        return data.baseline_jobs * scale, _overdispersed(
            data.jobs, data.baseline_jobs * scale, null * (1 + scale) + 0.5, null
        )
    prior = _shrunk_rates(data)
    rate = (data.baseline_failed + PRIOR_JOBS * prior) / (data.baseline_jobs + PRIOR_JOBS)
    both = data.baseline_jobs + data.jobs + PRIOR_JOBS
    pooled = (data.baseline_failed + data.failed + PRIOR_JOBS * prior) / both
    binomial = pooled * (1 - pooled)
    variance = data.jobs * binomial * (1 + data.jobs / (data.baseline_jobs + PRIOR_JOBS))
    expected = data.jobs * rate
    return expected, _overdispersed(data.failed, expected, variance, data.jobs * pooled)


def _common_factor(observed: np.ndarray, expected: np.ndarray) -> float:
    """The change every slice shares (traffic's hour of day, growth): the ratio of the totals
    of the leaves whose own ratio is within three median absolute deviations of the median ratio
    (both weighted by the expected), which leaves that changed on their own do not move."""
    ok = expected > 0
    if not ok.any():
        return 1.0
    ratio = np.log((observed[ok] + 0.5) / (expected[ok] + 0.5))
    weight = expected[ok]
    middle = _weighted_median(ratio, weight)
    spread = 1.4826 * _weighted_median(np.abs(ratio - middle), weight)
    kept = np.abs(ratio - middle) <= max(3 * spread, 1e-6)
    return float(max(observed[ok][kept].sum() / weight[kept].sum(), 1e-9))


def _weighted_median(values: np.ndarray, weights: np.ndarray) -> float:
    order = np.argsort(values)
    cumulative = np.cumsum(weights[order])
    return float(values[order][np.searchsorted(cumulative, cumulative[-1] / 2)])


def _shrunk_rates(data: Leaves, rounds: int = 10) -> np.ndarray:
    """Each leaf's baseline failure rate, shrunk toward what its values predict: a log-linear
    model of the values' main effects fitted to the baseline's failures per value by iterative
    proportional fitting (so dimensions that imply one another are not counted twice), each
    value's factor shrunk toward 1 by `PRIOR_FAILURES`, weighed
    ``PRIOR_JOBS`` weighs it against the leaf's own rate (see `_expected`)."""
    jobs, failed = data.baseline_jobs, data.baseline_failed
    rate = np.full(len(jobs), _ratio(failed.sum(), jobs.sum()))
    codes = [(data.codes[d] + 1, len(data.values[d]) + 1) for d in data.codes]
    for _ in range(rounds):
        for code, size in codes:
            fitted = np.bincount(code, weights=jobs * rate, minlength=size)
            actual = np.bincount(code, weights=failed, minlength=size)
            factor = (actual + PRIOR_FAILURES) / (fitted + PRIOR_FAILURES)
            rate = np.clip(rate * factor[code], 0.0, 1.0)
    return rate


def _overdispersed(observed, expected, variance, null) -> np.ndarray:
    """``variance`` plus ``(k * null) ** 2``, with ``k`` such that the leaves' median squared
    z-score's first quartile is a standard normal's (0.1015) among the `BUSIEST` leaves (where
    the extra variation shows): real counts vary more than by chance, and the quartile keeps the
    leaves of causes (up to three quarters of them) from inflating it."""
    busy = expected >= max(MIN_BUSY, np.sort(expected)[-min(len(expected), BUSIEST)])
    if busy.sum() < 10:
        return variance
    e2, v, f2 = (observed - expected)[busy] ** 2, variance[busy], null[busy] ** 2
    if np.quantile(e2 / v, 0.25) <= QUARTILE:
        return variance
    low, high = 0.0, 1.0
    while np.quantile(e2 / (v + high**2 * f2), 0.25) > QUARTILE and high < 1e3:
        high *= 2
    for _ in range(30):
        k = (low + high) / 2
        low, high = (k, high) if np.quantile(e2 / (v + k**2 * f2), 0.25) > QUARTILE else (low, k)
    return variance + high**2 * null**2


def _groups(data: Leaves) -> list[tuple[tuple[str, ...], np.ndarray, np.ndarray]]:
    """Per combination of 1-3 dimensions: the group of each leaf (-1 when one of its values is
    missing) and each group's codes. The finer dimensions first, so that of two combinations
    covering the same leaves the one naming the finer dimension is kept."""
    names = sorted(data.codes, key=lambda d: -len(data.values[d]))
    out = []
    for size in range(1, min(MAX_DIMENSIONS, len(names)) + 1):
        for dims in combinations(names, size):
            key = np.zeros(len(data.jobs), dtype="int64")
            missing = np.zeros(len(data.jobs), dtype=bool)
            for name in dims:
                key = _combine(key, data.codes[name] + 1, len(data.values[name]) + 1)
                missing |= data.codes[name] < 0
            key[missing] = -1
            group, first = _compact(key, keep_negative=True)
            codes = np.stack([data.codes[name][first] for name in dims], axis=1)
            out.append((dims, group, codes))
    return out


def _best(data, measure, observed, forecast, variance, groups, found, sign, threshold):
    """The combination whose assumed change best explains the deviation of ``observed`` from
    ``forecast``, significant, in the direction ``sign`` (0: either); None when there is none."""
    gap = np.abs(observed - forecast)
    everyone = np.zeros(len(observed), dtype="int64")
    candidates = [((), everyone, np.zeros((1, 0), dtype="int64")), *groups]
    best, best_gain = None, 0.0
    for dims, group, codes in candidates:
        inside = group >= 0
        g = group[inside]
        size = len(codes)
        total = np.bincount(g, weights=observed[inside], minlength=size)
        predicted = np.bincount(g, weights=forecast[inside], minlength=size)
        jobs = np.bincount(g, weights=data.jobs[inside], minlength=size)
        spread = np.bincount(g, weights=variance[inside], minlength=size)
        leaf_predicted = _assume(measure, observed, forecast, data.jobs, inside, g, total,
                                 predicted, jobs)  # fmt: skip
        gain = np.bincount(
            g, weights=gap[inside] - np.abs(observed[inside] - leaf_predicted), minlength=size
        )
        change = sign * (total - predicted) if sign else np.abs(total - predicted)
        z = change / np.sqrt(np.maximum(spread, 1e-9))
        ratio = np.maximum(_ratio(total, predicted), _ratio(predicted, total))
        ok = (z >= threshold) & (change >= MIN_EXCESS) & (ratio >= MIN_RATIO) & (gain > 0)
        for f_dims, f_members in found:
            ok[_related(dims, group, f_dims, f_members)] = False
        if not ok.any():
            continue
        index = int(np.argmax(np.where(ok, gain, -np.inf)))
        if gain[index] > best_gain * (1 + 1e-9):
            members = inside.copy()
            members[inside] = g == index
            best_gain = gain[index]
            best = (dims, members, tuple(codes[index]))
    return best


def _assume(measure, observed, forecast, jobs, inside, g, total, predicted, group_jobs):
    """Each leaf's value if its group were a root cause: the group's change spread over its
    leaves as the mechanism of a change spreads (failure rate up: the same share of the jobs
    that would have succeeded fail; down or volume: every leaf scaled alike)."""
    f = forecast[inside]
    if measure == "failure_rate":
        room = group_jobs - predicted
        share = np.clip(_ratio(total - predicted, room), 0.0, 1.0)
        up = total >= predicted
        scaled = f * np.where(predicted > 0, _ratio(total, predicted), 1.0)[g]
        return np.where(up[g], f + share[g] * (jobs[inside] - f), scaled)
    smoothed = f + 0.5
    weights = np.bincount(g, weights=smoothed, minlength=len(total))
    return smoothed * _ratio(total, weights)[g]


def _related(dims, group, found_dims, found_members) -> np.ndarray:
    """The groups of the combinations of ``dims`` that are a found cause, its ancestor or its
    descendant (the cause's leaves fall in them and one set of dimensions holds the other)."""
    if dims and (set(dims) <= set(found_dims) or set(found_dims) <= set(dims)):
        hit = group[found_members]
        return np.unique(hit[hit >= 0])
    return np.zeros(0, dtype="int64")


def _ratio(numerator, denominator):
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.divide(numerator, denominator)
    return np.where(np.asarray(denominator) > 0, out, np.inf if np.ndim(out) else np.nan)


def _z_threshold(p: float) -> float:
    from statistics import NormalDist  # not scipy: its import costs a command 0.5 s

    return NormalDist().inv_cdf(1 - p) if p > 1e-15 else 8.0


def _combine(key: np.ndarray, code: np.ndarray, radix: int) -> np.ndarray:
    """``key`` and ``code`` as one key, kept dense so that it never overflows."""
    return _compact(key * radix + code)[0]


def _compact(key: np.ndarray, keep_negative: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Dense ids 0..k-1 for ``key`` (negative keys stay -1 when ``keep_negative``) and the first
    row of each id."""
    valid = key >= 0 if keep_negative else np.ones(len(key), dtype=bool)
    codes = np.full(len(key), -1, dtype="int64")
    codes[valid] = pd.factorize(key[valid])[0]
    rows = np.flatnonzero(valid)
    first = np.zeros(int(codes.max()) + 1 if len(rows) else 0, dtype="int64")
    first[codes[rows][::-1]] = rows[::-1]
    return codes, first
