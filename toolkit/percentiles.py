"""Percentiles of a timing, exact, in memory bounded by groups x bins rather than by rows.

The definition is SQL's ``percentile_cont``: the ``q`` percentile of ``n`` values is read at rank
``h = q (n - 1)`` of the sorted values, interpolated linearly between ranks ``floor(h)`` and
``ceil(h)``. The engine computes it in two passes over the delivery jobs:

1. a histogram: how many values of each group fall in each bin (``ln`` of the value in steps of
   `STEP`, 0.5%), from which the bin holding each wanted rank, and the rank's place in it, follow;
2. the values of those bins only (a few percent of the rows), sorted to read the ranks.

An engine's exact ``percentile_cont`` keeps every value of every group in memory at once
(1.1 GB for 15,000,000 delivery jobs); this keeps the histogram and the chosen bins. Either pass
may be part of a caller's own (`ranks` and `read` are the steps between them): the incident
finder counts the histogram with its other figures and the chosen bins' values in its scan
(`toolkit.counts.scan_window`, `toolkit.counts.scan_counts`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa

__all__ = ["STEP", "bin_of", "percentiles", "ranks", "read"]

#: A bin's width, as a ratio of its values: each holds values within 0.5% of each other.
STEP = 1.005
_BELOW = -(2**31)  # the bin of values at or below zero


def bin_of(measure: str) -> str:
    """The SQL of a value's bin (``measure`` not null)."""
    return (
        f"CASE WHEN {measure} > 0 THEN CAST(floor(ln({measure}) * {1 / math.log(STEP)!r}) AS BIGINT)"
        f" ELSE {_BELOW} END"
    )


def percentiles(
    run: Callable[[str], pa.Table],
    keys: Sequence[str],
    sets: Sequence[Sequence[str]],
    measure: str,
    quantiles: dict[str, float],
    literal: Callable[[object], str],
    hist: pd.DataFrame | None = None,
) -> list[pd.DataFrame]:
    """The ``quantiles`` (by column name) of ``measure`` per group of each of ``sets`` (lists
    of ``keys``), with ``run(sql)`` running SQL over ``delivery_jobs`` and ``literal(value)``
    writing a text value as SQL; ``hist``: the histogram (``keys``, ``bin`` (`bin_of`), ``c``)
    if the engine counted it already. One frame per set: its keys, then one column per quantile
    (groups without a timed job are left out)."""
    keys = list(keys)
    timed = f"SELECT *, {bin_of(measure)} AS bin FROM delivery_jobs WHERE {measure} IS NOT NULL"
    grouped = ", ".join([*keys, "bin"])
    if hist is None:
        hist = run(
            f"SELECT {grouped}, CAST(count(*) AS BIGINT) AS c FROM ({timed}) timed GROUP BY {grouped}"
        ).to_pandas()
    wanted, fractions = ranks(hist, keys, sets, quantiles)
    values = _values(run, timed, measure, keys, hist, sets, wanted, literal)
    return read(sets, quantiles, wanted, fractions, values)


def ranks(
    hist: pd.DataFrame,
    keys: Sequence[str],
    sets: Sequence[Sequence[str]],
    quantiles: dict[str, float],
) -> tuple[list[tuple], dict[tuple, float]]:
    """Where each quantile of each group lies in the histogram ``hist`` (``keys``, ``bin``,
    ``c``; its key columns made plain): ``wanted``, tuples ``(set, group values, quantile, rank's
    place in its bin, bin, "low" or "high")``, and ``fractions``, how far each quantile lies
    between its low and high rank."""
    _plain(hist, list(keys))
    wanted = []
    fractions = {}
    for number, grouping in enumerate(sets):
        for group, rows in _groups(hist, list(grouping)):
            bins, at_bin = np.unique(rows["bin"].to_numpy(), return_inverse=True)
            counts = np.zeros(len(bins), dtype="int64")  # each bin's count, by bin
            np.add.at(counts, at_bin, rows["c"].to_numpy("int64"))
            if not len(counts):  # nothing timed at all
                continue
            before = counts.cumsum() - counts
            for name, q in quantiles.items():
                h = q * (int(counts.sum()) - 1)
                fractions[(number, group, name)] = h - math.floor(h)
                for end, rank in (("low", math.floor(h)), ("high", math.ceil(h))):
                    at = int(np.searchsorted(before, rank, side="right")) - 1
                    wanted.append((number, group, name, rank - int(before[at]), int(bins[at]), end))  # fmt: skip
    return wanted, fractions


def read(sets, quantiles, wanted, fractions, values: dict[tuple, np.ndarray]) -> list[pd.DataFrame]:
    """The frames of `percentiles` from `ranks` and the sorted ``values`` of each (set, group,
    bin) of ``wanted``: ``percentile_cont``'s linear interpolation between the two ranks."""
    ends: dict[tuple, dict[str, float]] = {}
    for number, group, name, offset, bin_, end in wanted:
        ends.setdefault((number, group, name), {})[end] = values[(number, group, bin_)][offset]
    results = [{} for _ in sets]
    for (number, group, name), at in ends.items():
        fraction = fractions[(number, group, name)]
        results[number].setdefault(group, {})[name] = at["low"] + fraction * (at["high"] - at["low"])  # fmt: skip
    frames = []
    for grouping, found in zip(sets, results, strict=True):
        rows = [
            {**dict(zip(grouping, group, strict=True)), **named} for group, named in found.items()
        ]
        frames.append(pd.DataFrame(rows, columns=[*grouping, *quantiles]))
    return frames


def _plain(frame: pd.DataFrame, keys: list[str]) -> None:
    """Key columns as plain objects, missing values as None (which compare equal)."""
    for key in keys:
        values = frame[key].to_numpy(dtype=object, na_value=None)
        frame[key] = pd.Series(values, index=frame.index, dtype=object)


def _groups(hist: pd.DataFrame, grouping: list[str]):
    """``(group values, its histogram rows)`` of each group of ``grouping`` (missing: None)."""
    if not grouping:
        yield (), hist
        return
    for group, rows in hist.groupby(grouping, dropna=False, sort=False):
        group = group if isinstance(group, tuple) else (group,)
        yield tuple(None if pd.isna(value) else value for value in group), rows


def _values(run, timed, measure, keys, hist, sets, wanted, literal) -> dict[tuple, np.ndarray]:
    """The sorted values of each (set, group, bin) of ``wanted``, read in one query of the
    chosen bins of the finest groups (those of all ``keys``)."""
    finest = [tuple(row) for row in hist[keys].drop_duplicates().itertuples(index=False)]
    members: dict[tuple, list[tuple]] = {}  # (set, group, bin) -> its finest groups
    for number, group, _, _, bin_, _ in wanted:
        where = [keys.index(key) for key in sets[number]]
        members[(number, group, bin_)] = [
            one for one in finest if all(one[i] == value for i, value in zip(where, group, strict=True))
        ]  # fmt: skip
    needed: dict[tuple, set[int]] = {}
    for (_, _, bin_), groups in members.items():
        for one in groups:
            needed.setdefault(one, set()).add(bin_)
    conditions = []
    for group, bins in needed.items():
        matches = [f"{key} IS NULL" if value is None else f"{key} = {literal(value)}" for key, value in zip(keys, group, strict=True)]  # fmt: skip
        conditions.append(" AND ".join([*matches, f"bin IN ({', '.join(map(str, sorted(bins)))})"]))  # fmt: skip
    where = " OR ".join(f"({condition})" for condition in conditions) or "false"
    columns = ", ".join([*keys, "bin", f"CAST({measure} AS DOUBLE) AS v"])
    fetched = run(f"SELECT {columns} FROM ({timed}) timed WHERE {where}").to_pandas()
    _plain(fetched, keys)
    by_finest = {
        tuple(None if pd.isna(v) else v for v in (name if isinstance(name, tuple) else (name,))): rows["v"].to_numpy()
        for name, rows in fetched.groupby([*keys, "bin"], dropna=False, sort=False)
    }  # fmt: skip
    empty = np.array([], dtype="float64")
    return {
        target: np.sort(np.concatenate([by_finest.get((*one, target[2]), empty) for one in groups] or [empty]))
        for target, groups in members.items()
    }  # fmt: skip
