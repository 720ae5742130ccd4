"""Slow sends against the workflows that sent them.

A provider's workflows do not all take as long: a batch's thousands of sends (a monthly
statement, a payday's deposit notices) queue by design, and take a minute where a card alert
takes a second. A workflow of `toolkit.counts.WORKFLOW_SENDS` sends through the provider in a
baseline is slow against its own sends there (its `toolkit.incidents.tables.SLOW_QUANTILE` of
time to send; a window read alone, in the window), the others against the provider's, so that a period in which such a batch sends is no slowdown, and the
provider slowed is: a slowdown slows every workflow past its own threshold. What the thresholds
leave (a workflow's slow share apart from a tenth: a rare batch on the provider's threshold, a
window whose hours differ from its baseline's) is weighed here.

So a period's expected share of slow sends is that of its mix of workflows: each sent job is
weighed by its workflow's usual slow share through the provider over the provider's (`Mix.of`:
the baseline's; a workflow the baseline did not send through the provider, and a window read
alone, the window's other days', when it sends on `OTHER_DAYS`; otherwise the provider's),
shrunk towards the provider's with `SHRINK` sends at its share. The latency scan's trials, the
window's and the baseline's, are weighed so before its rates by hour are learnt
(`toolkit.incidents.rates`): a slowdown is slower than its workflows and its hours usually are.
A slowdown mostly one workflow's whose share is the provider's (`Mix.known`: a statement the
window sees once) must also hold without it when the others sent enough to tell
(`toolkit.incidents.detect`). A batch's queue is then no incident, and a provider slower for
every workflow still is, even where a batch is sending.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

#: Sends at the provider's slow share a workflow's own share is shrunk towards it with.
SHRINK = 50.0
#: Days a workflow must send on for a share of its own from the window: each day's is that of
#: its other days (a slowdown's day would raise it); on fewer, the provider's.
OTHER_DAYS = 3

_WORKFLOW = ["channel", "provider_id", "workflow"]
_DAY = pd.Timedelta(days=1)


@dataclass
class Mix:
    """Each workflow's usual slow share through its (channel, provider_id) over the pair's:
    ``history``, key -> share (a baseline's), else the ``window``'s, by key and day: each day's
    from its other days (NaN: fewer than `OTHER_DAYS`); buckets of ``grid`` ``(start, step)``.
    1 for a workflow with none."""

    history: dict[tuple, float]
    window: pd.Series
    grid: tuple[pd.Timestamp, pd.Timedelta]

    @classmethod
    def learn(cls, window: pd.DataFrame, grid: tuple, history: pd.DataFrame | None = None) -> Mix:
        """From `toolkit.counts.slow_counts` rows of the ``window`` (buckets of ``grid``) and of
        the ``history`` (a baseline; any buckets)."""
        known = {}
        if history is not None:
            sums = _keyed(history).groupby(_WORKFLOW, sort=False)[["sent", "slow"]].sum()
            share = _relative(sums, sums.groupby(level=[0, 1], sort=False).transform("sum"))
            known = dict(zip(share.index, share.to_numpy("float64"), strict=True))
        mix = cls(known, pd.Series(dtype="float64"), grid)
        days = _keyed(window).assign(day=mix._day(window["bucket"]))
        by_day = days.groupby([*_WORKFLOW, "day"], sort=False)[["sent", "slow"]].sum()
        if len(by_day):
            sums = by_day.groupby(level=[0, 1, 2], sort=False).transform("sum")
            days = by_day["sent"].gt(0).groupby(level=[0, 1, 2], sort=False).transform("sum")
            pair = by_day.groupby(level=[0, 1], sort=False).transform("sum")
            mix.window = _relative(sums - by_day, pair).where(days >= OTHER_DAYS)
        return mix

    def of(self, rows: pd.DataFrame, *, history: bool = False) -> np.ndarray:
        """Each row's relative share (``rows``: channel, provider_id, workflow, bucket; rows of
        the ``history``: its share, else 1)."""
        own, known = self._lookup(rows, history)
        return np.where(np.isnan(known), np.nan_to_num(own, nan=1.0), known)

    def known(self, rows: pd.DataFrame) -> np.ndarray:
        """Whether each row's workflow has a share of its own (`of`: not the provider's)."""
        own, known = self._lookup(rows)
        return ~np.isnan(own) | ~np.isnan(known)

    def _lookup(self, rows: pd.DataFrame, history: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Each row's share from the window's other days and from the baseline (NaN: none)."""
        keyed = _keyed(rows)
        known = np.array([self.history.get(key, np.nan) for key in
                          zip(*(keyed[name] for name in _WORKFLOW), strict=True)], "float64")  # fmt: skip
        if history or not len(self.window):
            return np.full(len(rows), np.nan), known
        at = pd.MultiIndex.from_frame(keyed[_WORKFLOW].assign(day=self._day(rows["bucket"])))
        return self.window.reindex(at).to_numpy("float64"), known

    def weight(
        self, pairs: list[tuple], counts: pd.DataFrame, width: int, *, history: bool = False
    ) -> np.ndarray:
        """Each pair of ``pairs`` (channel, provider_id) by bucket (``width`` of them): its sent
        jobs' mean relative share (1 where none was sent); ``counts``: `toolkit.counts.
        slow_counts` rows of those buckets (of the ``history``: `of`)."""
        counts = _keyed(counts)
        at = {pair: n for n, pair in enumerate(pairs)}
        row = np.array([at.get(pair, -1) for pair in
                        zip(counts["channel"], counts["provider_id"], strict=True)], int)  # fmt: skip
        known = row >= 0
        sent = counts["sent"].to_numpy("float64")[known]
        bucket = counts["bucket"].to_numpy("int64")[known]
        weighed, total = np.zeros((len(pairs), width)), np.zeros((len(pairs), width))
        np.add.at(weighed, (row[known], bucket), sent * self.of(counts[known], history=history))
        np.add.at(total, (row[known], bucket), sent)
        return np.divide(weighed, total, out=np.ones_like(total), where=total > 0)

    def _day(self, bucket: pd.Series) -> np.ndarray:
        start, step = self.grid
        at = start.value + bucket.to_numpy("int64") * step.value
        return at // _DAY.value


def _relative(own: pd.DataFrame, pair: pd.DataFrame) -> pd.Series:
    """A workflow's slow share (``own``: sent, slow) over its pair's (``pair``), shrunk."""
    share = pair["slow"].to_numpy("float64") / np.maximum(pair["sent"].to_numpy("float64"), 1)
    mine = (own["slow"] + SHRINK * share) / (own["sent"] + SHRINK)
    return (mine / share).where(share > 0, 1.0)


def _keyed(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with its key columns as plain strings ("" for a missing one)."""
    return frame.assign(**{name: frame[name].astype("string").fillna("").astype(object)
                           for name in _WORKFLOW})  # fmt: skip
