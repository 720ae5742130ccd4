"""What the scans refine on: the rows fetched for significant periods (jobs or notifications) by
time, with their flags (`toolkit.counts.SCANNED_JOBS`), and each scan's groups over them.
The scans themselves read counts (`toolkit.counts.scan_counts`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from toolkit import metrics

#: Quantile of the baseline's time to send above which a job counts as slow (a tenth of the
#: jobs are slow normally; a degradation makes most of them slow).
SLOW_QUANTILE = 0.9
#: A slowdown's sends take at least this many times the usual slow threshold at their 95th
#: percentile: more sends above it, at a p95 under that, is a busy evening's load (measured on
#: Wrenfield's quiet rain days and Saturday peaks: 1.6 to 1.9 times; planted slowdowns: 7.8
#: times and more).
SLOWER = 2.0


@dataclass(frozen=True)
class Spec:
    """One scan: trials grouped by ``keys``, events split further by ``split``; ``low`` scans
    for too few events. ``unit`` is the table counted: ``"jobs"`` or ``"notifications"``."""

    name: str
    keys: tuple[str, ...]
    split: tuple[str, ...] = ()
    low: bool = False
    unit: str = "jobs"


SPECS = {
    "provider": Spec("provider", ("channel", "provider_id")),
    "code": Spec("code", ("channel", "provider_id"), ("error_code",)),
    "domain": Spec("domain", ("channel", "provider_id", "domain")),
    "latency": Spec("latency", ("channel", "provider_id")),
    "volume": Spec("volume", (), ("channel", "provider_id"), low=True, unit="notifications"),
    "channel_volume": Spec("channel_volume", (), ("channel",), low=True, unit="notifications"),
}


@dataclass
class Grid:
    """The time buckets: ``count`` buckets of ``step`` from ``start``."""

    start: pd.Timestamp
    step: pd.Timedelta
    count: int

    def of(self, at: pd.Series) -> np.ndarray:
        index = ((at - self.start) // self.step).to_numpy("float64", na_value=0.0)
        return np.clip(index, 0, self.count - 1).astype("int32")


def job_table(rows: pd.DataFrame, grid: Grid) -> pd.DataFrame:
    """Fetched `toolkit.counts.SCANNED_JOBS` rows sorted by ``at`` (their first execution
    detail, else their trigger), with their ``bucket``."""
    kept = ["job_id", "notification_id", "subscriber_id", "workflow", "channel", "provider_id",
            "ended_at", "error_code", "error_text", "domain", "at", "met_failure", "tried",
            "retried", "attempted", "time_to_send_s", "slow_above", "slow"]  # fmt: skip
    table = rows[kept].assign(bucket=grid.of(rows["at"]))
    return _in_time_order(table)


def event_end(table: pd.DataFrame, rows: int | np.ndarray) -> pd.Timestamp:
    """When the last of ``rows`` (positions) of a job table ended as an event: a row's last
    execution detail if it met a failure, else when it was sent, else its start (a
    notification: its trigger). Only the columns read are taken, not the rows' whole width."""
    some = np.atleast_1d(rows)
    if "met_failure" not in table:
        return table["at"].iloc[some].max()
    at, ended = table["at"].array.asi8[some], table["ended_at"].array.asi8[some]
    took = pd.to_timedelta(table["time_to_send_s"].to_numpy("float64")[some], unit="s").asi8
    missing = np.iinfo("int64").min  # NaT
    sent_at = np.where((took != missing) & (at != missing), at + took, at)
    end = np.where(table["met_failure"].to_numpy(bool)[some] & (ended != missing), ended, sent_at)
    end = end[end != missing]
    return pd.Timestamp(end.max(), tz="UTC") if len(end) else pd.NaT


def notification_table(notifications: pd.DataFrame, grid: Grid) -> pd.DataFrame:
    """Notifications sorted by ``at`` (their trigger), with ``bucket`` and their ``row`` in
    ``notifications`` (each id once); which (channel, provider) each was sent on comes from
    `groups`."""
    created = notifications["created_at"].astype("datetime64[ns, UTC]")
    first = ~notifications["notification_id"].duplicated().to_numpy()
    rows = np.flatnonzero(first & created.notna().to_numpy()).astype("int32")
    at = created.array[rows]
    table = pd.DataFrame({"row": rows, "at": at, "bucket": grid.of(pd.Series(at))})
    return _in_time_order(table)


def sent_rows(notifications: pd.DataFrame, table: pd.DataFrame, jobs: pd.DataFrame) -> np.ndarray:
    """The row of ``table`` (`notification_table` of ``notifications``) of the notification of
    each of ``jobs`` (-1: none)."""
    at = metrics.positions(notifications["notification_id"], jobs["notification_id"])
    of_row = np.full(len(notifications) + 1, -1, dtype="int32")  # the last: a job's -1
    of_row[table["row"].to_numpy()] = np.arange(len(table), dtype="int32")
    return of_row[at]


def _in_time_order(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` sorted by ``at`` (stable, missing first), itself when it already is."""
    order = np.argsort(table["at"].array.asi8, kind="stable")
    if (order == np.arange(len(order))).all():
        return table.reset_index(drop=True)
    return table.take(order).reset_index(drop=True)


@dataclass
class Groups:
    """One scan's groups over a table: each row's trial group (-1: none), the row positions of
    each event group (sorted), the event groups' key values and their trial group."""

    trial: np.ndarray
    members: list[np.ndarray]
    keys: list[dict[str, Any]]
    parent: np.ndarray
    trial_keys: list[tuple]

    def hits(self, group: int, rows: np.ndarray) -> np.ndarray:
        """Which of ``rows`` (sorted) are events of ``group``."""
        own = self.members[group]
        at = np.minimum(np.searchsorted(own, rows), max(len(own) - 1, 0))
        return own[at] == rows if len(own) else np.zeros(len(rows), dtype=bool)


def population(table: pd.DataFrame, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Which rows of a job table are trials of the scan, and which of those are events."""
    tried, met = table["tried"].to_numpy(), table["met_failure"].to_numpy()
    if name == "provider":
        return tried, met
    if name == "code":
        return tried, met & table["error_code"].notna().to_numpy()
    if name == "domain":
        return tried & table["domain"].notna().to_numpy(), met
    return table["time_to_send_s"].notna().to_numpy(), table["slow"].to_numpy()


def groups(table: pd.DataFrame, spec: Spec, jobs: pd.DataFrame | None = None) -> Groups:
    """The groups of ``spec`` over ``table`` (for notifications: ``jobs``, the job table, with
    the ``note`` each was sent for, `sent_rows`)."""
    if spec.unit == "notifications":
        return _sent_on(table, jobs, spec)
    trials, events = population(table, spec.name)
    trial, trial_keys = _codes(table, spec.keys, trials)
    event, keys = _codes(table, spec.keys + spec.split, events & trials)
    return _assemble(spec, trial, trial_keys, event, keys)


def _sent_on(notes: pd.DataFrame, jobs: pd.DataFrame, spec: Spec) -> Groups:
    """Volume: every notification is a trial; it is an event of each (channel, provider) it
    was sent on (a job neither skipped nor canceled)."""
    note = jobs["note"].to_numpy()
    sent = jobs["attempted"].to_numpy() & (note >= 0)
    event, keys = _codes(jobs.loc[sent, list(spec.split)], spec.split, np.ones(sent.sum(), bool))
    width = max(len(keys), 1)
    pairs = np.unique(note[sent].astype("int64") * width + event)  # once per notification
    rows, event = np.divmod(pairs, width)
    trial = np.zeros(len(notes), dtype="int32")
    return _assemble(spec, trial, [()], event, keys, rows.astype("int32"))


def _assemble(spec, trial, trial_keys, event, keys, rows=None) -> Groups:
    """Groups from each row's trial and event group numbers (``rows``: the table positions of
    the event rows, when they are not the table's own)."""
    rows = np.arange(len(event), dtype="int32") if rows is None else rows
    parent_of = {key: n for n, key in enumerate(trial_keys)}
    parent = np.array([parent_of[key[: len(spec.keys)]] for key in keys], dtype=int)
    order = np.argsort(event, kind="stable")
    bounds = np.searchsorted(event[order], np.arange(len(keys) + 1))
    members = [np.sort(rows[order[a:b]]) for a, b in zip(bounds, bounds[1:], strict=False)]
    names = spec.keys + spec.split
    named = [dict(zip(names, key, strict=True)) for key in keys]
    return Groups(trial, members, named, parent, list(trial_keys))


def _codes(frame: pd.DataFrame, keys: tuple[str, ...], mask: np.ndarray) -> tuple[np.ndarray, list]:
    """A group number per row (-1 outside ``mask``) and the groups' key tuples (None: missing)."""
    if not keys:
        return np.where(mask, 0, -1).astype("int32"), [()]
    combined = np.zeros(int(mask.sum()), dtype="int64")
    uniques = []
    for key in keys:
        codes, values = pd.factorize(frame[key], use_na_sentinel=False)
        combined = combined * (len(values) + 1) + codes[mask]
        uniques.append([None if pd.isna(value) else str(value) for value in values])
    inverse, numbers = pd.factorize(combined)  # hashed: np.unique's sort takes more memory
    order = np.argsort(numbers)  # the groups in the order of their codes
    found, rank = numbers[order], np.empty(len(order), dtype="int32")
    rank[order] = np.arange(len(order), dtype="int32")
    tuples = []
    for number in found:
        parts = []
        for values in reversed(uniques):
            number, code = divmod(int(number), len(values) + 1)
            parts.append(values[code])
        tuples.append(tuple(reversed(parts)))
    full = np.full(len(frame), -1, dtype="int32")
    full[mask] = rank[inverse]
    return full, tuples
