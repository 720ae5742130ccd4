"""Slow sends against the workflows that sent them.

A provider's slow threshold is one for all its sends (`toolkit.incidents.tables.SLOW_QUANTILE`
of its time to send), but its workflows do not all take as long: a batch's thousands of sends
(a monthly statement, a payday's deposit notices) queue by design, and take a minute where a
card alert takes a second. A period in which a batch sends is then mostly slow sends with
nothing wrong with the provider. A provider's slowdown slows every workflow's sends.

So a period's expected share of slow sends is that of its mix of workflows: each sent job is
weighed by its workflow's usual slow share through the provider over the provider's
(`Mix.relative`, from the history: the baseline, else the window; a workflow the baseline did
not send through the provider, the window's), shrunk towards the
provider's with `SHRINK` sends at its share (a workflow seldom sent is the provider's). The
latency scan weighs a bucket's sends by the larger of this and its hour's usual rate
(`toolkit.incidents.rates`): a slowdown is slower than both its hours and its workflows
usually are. A batch's queue is then no incident, and a provider slower for every workflow
still is, even where a batch is sending.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

#: Sends at the provider's slow share a workflow's own share is shrunk towards it with.
SHRINK = 50.0

_WORKFLOW = ["channel", "provider_id", "workflow"]


@dataclass
class Mix:
    """``relative``: (channel, provider_id, workflow) -> the workflow's usual slow share through
    the pair over the pair's (1 for a workflow the history did not send through it)."""

    relative: dict[tuple, float]

    @classmethod
    def learn(cls, window: pd.DataFrame, history: pd.DataFrame | None = None) -> Mix:
        """From `toolkit.counts.slow_counts` rows (any buckets) of the ``history`` (a
        baseline), a workflow it did not send through a pair from the ``window``'s."""
        relative = _relative(window)
        return cls(relative if history is None else {**relative, **_relative(history)})

    def of(self, keys: pd.DataFrame) -> np.ndarray:
        """Each row's relative share (``keys``: channel, provider_id, workflow)."""
        keyed = _keyed(keys)
        return np.array([self.relative.get(key, 1.0) for key in
                         zip(*(keyed[name] for name in _WORKFLOW), strict=True)], "float64")  # fmt: skip

    def weight(self, pairs: list[tuple], counts: pd.DataFrame, width: int) -> np.ndarray:
        """Each pair of ``pairs`` (channel, provider_id) by bucket (``width`` of them): its sent
        jobs' mean relative share (1 where none was sent); ``counts``: `toolkit.counts.
        slow_counts` rows of those buckets."""
        counts = _keyed(counts)
        at = {pair: n for n, pair in enumerate(pairs)}
        row = np.array([at.get(pair, -1) for pair in
                        zip(counts["channel"], counts["provider_id"], strict=True)], int)  # fmt: skip
        known = row >= 0
        sent = counts["sent"].to_numpy("float64")[known]
        bucket = counts["bucket"].to_numpy("int64")[known]
        weighed, total = np.zeros((len(pairs), width)), np.zeros((len(pairs), width))
        np.add.at(weighed, (row[known], bucket), sent * self.of(counts[known]))
        np.add.at(total, (row[known], bucket), sent)
        return np.divide(weighed, total, out=np.ones_like(total), where=total > 0)


def _relative(counts: pd.DataFrame) -> dict[tuple, float]:
    """`Mix.relative` from `toolkit.counts.slow_counts` rows."""
    sums = _keyed(counts).groupby(_WORKFLOW, sort=False)[["sent", "slow"]].sum()
    pair = sums.groupby(level=[0, 1], sort=False).transform("sum")
    share = pair["slow"] / pair["sent"].clip(lower=1)
    own = (sums["slow"] + SHRINK * share) / (sums["sent"] + SHRINK)
    relative = (own / share).where(share > 0, 1.0)
    return dict(zip(relative.index, relative.to_numpy("float64"), strict=True))


def _keyed(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with its key columns as plain strings ("" for a missing one)."""
    return frame.assign(**{name: frame[name].astype("string").fillna("").astype(object)
                           for name in _WORKFLOW})  # fmt: skip
