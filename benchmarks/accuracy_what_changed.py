"""Accuracy and speed of `toolkit.what_changed` on semi-synthetic counts (Squeeze's B0 design).

Each case draws leaf counts over five dimensions of 4-12 values with Zipf-skewed volumes and
failure rates that vary by value (a realistic mix, ~2% overall), a baseline day and a period day
with Poisson volume noise and binomial failures (plus, with ``--noise``, a per-leaf lognormal
jitter of volume and rate: real traffic is overdispersed). One to three root causes are injected
into the period, each a combination of one to three dimensions holding at least 1% of the jobs,
none an ancestor or descendant of another: a share of the jobs that would have succeeded fail
(failure rate), or the jobs drop or spike (volume). *With ripple* every leaf of a cause changes
by the same share (its ancestors change in proportion); *without*, each leaf by its own draw.
Quiet cases inject nothing: any row there is a false alarm.

Scored as the literature scores it: a case's answer is the set of combinations it names; true
positives are exact matches with the injected set; F1 is pooled over all cases. The plain rule
next to it names the one attribute value with the most excess (failures, or |jobs| for volume).

    python benchmarks/accuracy_what_changed.py [--cases 100] [--noise 0.1] [--seed 1]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from toolkit.changes import what_changed

CARDINALITIES = {"a": 12, "b": 10, "c": 8, "d": 6, "e": 4}
DAY = pd.Timestamp("2026-11-01", tz="UTC")
PERIOD = (DAY + pd.Timedelta("1D"), DAY + pd.Timedelta("2D"))


def population(rng: np.random.Generator, jobs: float, cardinalities: dict[str, int]):
    """Leaves present (a random 40% of all combinations), their expected jobs and rates."""
    names = list(cardinalities)
    grids = np.meshgrid(*[np.arange(k) for k in cardinalities.values()], indexing="ij")
    codes = np.stack([g.ravel() for g in grids], axis=1)
    codes = codes[rng.random(len(codes)) < 0.4]
    weight = np.ones(len(codes))
    rate = np.full(len(codes), 0.02)
    for i, k in enumerate(cardinalities.values()):
        zipf = 1.0 / np.arange(1, k + 1) ** 1.1
        weight *= rng.permutation(zipf)[codes[:, i]]
        rate *= rng.lognormal(0, 0.5, k)[codes[:, i]]
    volume = jobs * weight / weight.sum()
    return names, codes, volume, np.clip(rate, 0.001, 0.5)


def draw(rng, volume, rate, noise):
    jitter = rng.lognormal(0, noise, (2, len(volume))) if noise else np.ones((2, len(volume)))
    jobs = rng.poisson(volume * jitter[0])
    return jobs, rng.binomial(jobs, np.clip(rate * jitter[1], 0, 1))


def causes(rng, names, codes, volume, count):
    """``count`` combinations of 1-3 dimensions, each with >= 1% of the jobs, unrelated."""
    chosen: list[dict[str, int]] = []
    covered = np.zeros(len(codes), dtype=bool)
    for _ in range(500):
        if len(chosen) == count:
            break
        dims = sorted(rng.choice(len(names), rng.integers(1, 4), replace=False))
        leaf = codes[rng.choice(len(codes), p=volume / volume.sum())]
        cause = {names[d]: int(leaf[d]) for d in dims}
        inside = np.all([codes[:, d] == leaf[d] for d in dims], axis=0)
        share = volume[inside].sum() / volume.sum()
        if not 0.01 <= share <= 0.3 or (inside & covered).any():
            continue
        chosen.append(cause)
        covered |= inside
    return chosen


def case(rng, measure: str, count: int, ripple: bool, noise: float):
    """A counts frame (baseline day, period day) and the injected causes."""
    names, codes, volume, rate = population(rng, rng.uniform(2e5, 1e6), CARDINALITIES)
    truth = causes(rng, names, codes, volume, count)
    base_jobs, base_failed = draw(rng, volume, rate, noise)
    now_volume, now_rate = volume.copy(), rate.copy()
    for cause in truth:
        inside = np.all([codes[:, names.index(d)] == v for d, v in cause.items()], axis=0)
        size = rng.uniform(0.2, 0.9)
        each = size if ripple else rng.uniform(0.1, 1.0, inside.sum()) * size
        if measure == "failure_rate":
            now_rate[inside] += (1 - now_rate[inside]) * each
        elif rng.random() < 0.5:
            now_volume[inside] *= 1 - each
        else:
            now_volume[inside] *= 1 + 3 * each
    jobs, failed = draw(rng, now_volume, now_rate, noise)
    frame = pd.concat(
        [
            pd.DataFrame({"bucket": DAY, **{n: codes[:, i] for i, n in enumerate(names)},
                          "jobs": base_jobs, "failed": base_failed}),
            pd.DataFrame({"bucket": PERIOD[0], **{n: codes[:, i] for i, n in enumerate(names)},
                          "jobs": jobs, "failed": failed}),
        ],
        ignore_index=True,
    )  # fmt: skip
    for name in names:
        frame[name] = (name + frame[name].astype(str)).astype("string")
    truth = [frozenset((d, f"{d}{v}") for d, v in cause.items()) for cause in truth]
    return frame[(frame["jobs"] > 0)], truth


def plain_rule(frame: pd.DataFrame, measure: str) -> list[frozenset]:
    """The one attribute value with the most excess failures (volume: change of jobs)."""
    now = frame["bucket"].eq(PERIOD[0])
    best, answer = -np.inf, []
    for name in CARDINALITIES:
        g = frame.groupby([name, now])[["jobs", "failed"]].sum().unstack(fill_value=0)
        if measure == "failure_rate":
            rate = g[("failed", False)] / g[("jobs", False)].where(g[("jobs", False)] > 0)
            excess = g[("failed", True)] - g[("jobs", True)] * rate.fillna(0)
        else:
            excess = (g[("jobs", True)] - g[("jobs", False)]).abs()
        if excess.max() > best:
            best, answer = excess.max(), [frozenset({(name, excess.idxmax())})]
    return answer


def found(frame: pd.DataFrame, measure: str) -> list[frozenset]:
    result = what_changed(frame, period=PERIOD, measure=measure)
    return [frozenset(c.items()) for c in result["cause"]]


def score(pairs) -> tuple[float, int, int, int]:
    tp = sum(len(set(p) & set(t)) for p, t in pairs)
    fp = sum(len(set(p) - set(t)) for p, t in pairs)
    fn = sum(len(set(t) - set(p)) for p, t in pairs)
    return 2 * tp / max(1, 2 * tp + fp + fn), tp, fp, fn


def timing(rng: np.random.Generator) -> None:
    """A counts frame of 100,000 rows over 6 dimensions: what_changed against a groupby."""
    cards = {"a": 20, "b": 15, "c": 12, "d": 10, "e": 6, "f": 5}
    names, codes, volume, rate = population(rng, 5e6, cards)
    keep = np.argsort(-volume)[:50_000]
    codes, volume, rate = codes[keep], volume[keep], rate[keep]
    parts = []
    for day in (DAY, PERIOD[0]):
        jobs, failed = draw(rng, volume, rate, 0.1)
        parts.append(pd.DataFrame({"bucket": day, **{n: codes[:, i] for i, n in enumerate(names)},
                                   "jobs": jobs, "failed": failed}))  # fmt: skip
    frame = pd.concat(parts, ignore_index=True)
    for name in names:
        frame[name] = (name + frame[name].astype(str)).astype("string")
    runs = {"what_changed": [], "groupby": []}
    for _ in range(3):
        t0 = time.perf_counter()
        what_changed(frame, period=PERIOD)
        t1 = time.perf_counter()
        frame.groupby(["bucket", *names], dropna=False)[["jobs", "failed"]].sum()
        t2 = time.perf_counter()
        runs["what_changed"].append(t1 - t0)
        runs["groupby"].append(t2 - t1)
    ours, base = min(runs["what_changed"]), min(runs["groupby"])
    print(f"\ntime, {len(frame):,} rows x {len(names)} dimensions (best of 3): what_changed "
          f"{ours:.3f} s (target < 1 s); one pandas groupby-sum of the frame {base:.3f} s; "
          f"ratio {ours / base:.1f}x")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=100, help="cases per setting")
    parser.add_argument("--noise", type=float, default=0.1, help="lognormal per-leaf jitter")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-timing", action="store_true")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    print(f"{args.cases} cases per setting, noise {args.noise}; F1 of exact root-cause sets, "
          "pooled (tp/fp/fn)")  # fmt: skip
    print(f"{'measure':<13}{'ripple':<8}{'what_changed':>30}{'plain rule':>30}")
    pooled: dict[str, list] = {"ours": [], "rule": []}
    for measure in ("failure_rate", "volume"):
        for ripple in (True, False):
            ours, rule = [], []
            for i in range(args.cases):
                frame, truth = case(rng, measure, 1 + i % 3, ripple, args.noise)
                ours.append((found(frame, measure), truth))
                rule.append((plain_rule(frame, measure), truth))
            pooled["ours"] += ours
            pooled["rule"] += rule
            f1, tp, fp, fn = score(ours)
            g1, gtp, gfp, gfn = score(rule)
            print(f"{measure:<13}{'yes' if ripple else 'no':<8}"
                  f"{f'{f1:.3f} ({tp}/{fp}/{fn})':>30}{f'{g1:.3f} ({gtp}/{gfp}/{gfn})':>30}")  # fmt: skip
    f1, tp, fp, fn = score(pooled["ours"])
    g1, *_ = score(pooled["rule"])
    print(f"{'all':<21}{f'{f1:.3f} ({tp}/{fp}/{fn})':>30}{f'{g1:.3f}':>30}   (target 0.95)")
    alarms = 0
    for i in range(args.cases):
        measure = ("failure_rate", "volume")[i % 2]
        frame, _ = case(rng, measure, 0, True, args.noise)
        alarms += len(found(frame, measure))
    print(f"quiet cases: {alarms} rows named in {args.cases} cases with no change")
    if not args.no_timing:
        timing(rng)


if __name__ == "__main__":
    main()
