"""What changed: the slices that explain a change of the failure rate or of the volume.

>>> toolkit.what_changed(activity, period=("2026-11-01", "2026-11-02"))

How the causes are decided
--------------------------
The period and its baseline are reduced to counts (`toolkit.delivery_counts` for an Activity or a
Store) and summed over the finest slices, the *leaves*: every combination of the dimensions'
values, a missing value its own value. The method is that of the multi-dimensional root-cause
localization literature (HotSpot's ripple effect and potential score, Squeeze's and RiskLoc's
deviation per leaf, iDice's significance pruning):

1. **Expected per leaf.** Failure rate: the leaf's period jobs times its baseline rate, shrunk
   toward what its values predict (a log-linear model of each value's effect on the rate, fitted
   to the baseline by iterative proportional fitting, each effect shrunk by `PRIOR_FAILURES`)
   with the weight of `PRIOR_JOBS` baseline jobs: a leaf with little baseline takes the rate its
   values predict. Volume: the leaf's baseline jobs times the period's length over the
   baseline's, times the change every slice shares (the hour of day, growth: the ratio of the
   totals of the leaves whose own ratio is within three median absolute deviations of the
   median), so a slice stands out against the rest, not against the clock.
2. **Candidates.** Every value of every combination of one to three dimensions (a missing value
   is not a cause). Assuming a candidate is a root cause spreads its change over its leaves as a
   real change spreads (the *ripple effect*): for a failure rate that rose, the same share of
   the jobs that would have succeeded fail in each leaf; otherwise every leaf is scaled alike.
   Its *gain* is how much closer that brings the leaves to what was observed (the L1 deviation
   removed). A candidate too general predicts a change in leaves that did not change (it gains
   little or loses); one too specific leaves part of the change unexplained. The most general
   candidate that is consistent wins; of two covering the same leaves, the one with fewer
   dimensions, then the one naming the finer dimension.
3. **Guard.** A candidate counts only when its observed total departs from its expected one by a
   z-score above the two-sided Bonferroni threshold for ``alpha`` over all candidates, by at
   least `MIN_EXCESS` and by a factor of `MIN_RATIO` (a failure rate: the way the whole rate
   went; volume: either way). The variance is the binomial or Poisson noise of both windows
   pooled (the null of no change) plus an overdispersion ``(k * expected)**2`` measured on the
   `BUSIEST` leaves expecting at least `MIN_BUSY` (real counts vary more than by chance).
4. **Greedy.** The best candidate is named, its leaves count as explained, and the search
   repeats on what is left (up to `MAX_CAUSES`, each at least `MIN_SHARE` of the largest). A cause's ancestors and descendants are not named again. When the
   whole population, assumed to have changed alike, explains it best, no slice stands out: no
   row, and the reason says so.

For ``measure="failure_rate"`` a slice's ``jobs`` are its finished plus failed jobs (the failure
rate's denominator, `toolkit.metrics.DEFINITIONS`) when the counts have a ``finished`` column,
else its ``jobs``. A dimension whose values are only on jobs that met a failure (an error code:
rows with a value have ``met_failure`` equal to ``jobs``, or ``failed`` equal to ``jobs`` when
there is no ``met_failure``) says how the jobs failed, not which jobs: it is left out of the
search (for both measures) and its most common value among a cause's failures is named in the
sentence.

``excess`` is a cause's failures (volume: jobs) above what its baseline predicts (negative
below), and ``share_of_change`` its part of the change its way: its excess over the excess of the
causes that went the same way plus the rest's net change if that went the same way too (slices
that moved the other way, such as a provider that recovered, do not dilute it).
"""

from __future__ import annotations

from toolkit.changes.api import COLUMNS, MEASURES, what_changed
from toolkit.changes.localize import (
    BUSIEST,
    MAX_CAUSES,
    MIN_EXCESS,
    MIN_RATIO,
    MIN_SHARE,
    PRIOR_FAILURES,
    PRIOR_JOBS,
)

__all__ = [
    "BUSIEST",
    "COLUMNS",
    "MAX_CAUSES",
    "MEASURES",
    "MIN_EXCESS",
    "MIN_RATIO",
    "MIN_SHARE",
    "PRIOR_FAILURES",
    "PRIOR_JOBS",
    "what_changed",
]
