"""What the scans count: the jobs (or notifications) by time with their flags, and the groups of
each scan as count matrices (groups x time buckets)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from toolkit import metrics

#: Quantile of the baseline's time to send above which a job counts as slow (a tenth of the
#: jobs are slow normally; a degradation makes most of them slow).
SLOW_QUANTILE = 0.9


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
        return np.clip(index, 0, self.count - 1).astype("int64")


def start_time(jobs: pd.DataFrame) -> pd.Series:
    """When each delivery job starts for the scans: its first execution detail, else its
    trigger. Jobs already in this order (stable) are scanned without a copy of them."""
    return jobs["started_at"].fillna(jobs["triggered_at"])


def job_table(jobs: pd.DataFrame, grid: Grid, reference: pd.DataFrame | None) -> pd.DataFrame:
    """Delivery jobs sorted by ``at`` (first execution detail, else trigger), with ``t`` (ns),
    ``bucket`` and the flags the scans count. ``reference`` (the baseline's jobs, default
    ``jobs``) sets each (channel, provider)'s slow threshold."""
    at = start_time(jobs)
    met_failure = jobs["failed_attempts"].to_numpy() > 0
    send = metrics.time_to_send(jobs)
    reference = jobs if reference is None else reference
    slow_above = metrics.time_to_send(reference).groupby(_pair(reference)).quantile(SLOW_QUANTILE)
    limit = _pair(jobs).map(slow_above).to_numpy("float64", na_value=np.nan)
    in_flight = metrics.has_outcome(jobs, "in_flight")
    unused = ["triggered_at", "final_status", "outcome", "time_to_deliver_s", "job_duration_s",
              "failed_attempts"]  # fmt: skip
    table = jobs.drop(columns=unused).assign(  # the sort below copies what is kept
        at=at,
        t=at.array.asi8,
        bucket=grid.of(at),
        met_failure=met_failure,
        tried=metrics.has_outcome(jobs, "finished", "failed") | met_failure,
        retried=(jobs["failed_attempts"].to_numpy() >= 2) | (met_failure & in_flight),
        attempted=metrics.has_outcome(jobs, "finished", "failed", "in_flight"),
        time_to_send_s=send.to_numpy(),
        slow=send.to_numpy() > limit,
        slow_above=limit,
    )
    sent_at = table["at"] + pd.to_timedelta(table["time_to_send_s"], unit="s")
    failure_end = table["ended_at"].where(met_failure)
    table["event_end"] = failure_end.fillna(sent_at).fillna(table["at"])
    return table.sort_values("t", kind="stable").reset_index(drop=True)


def notification_table(activity: Any, grid: Grid) -> pd.DataFrame:
    """Notifications sorted by ``at`` (their trigger), with ``t`` (ns) and ``bucket``; which
    (channel, provider) each was sent on comes from `groups`."""
    notes = activity.notifications[["notification_id", "workflow_identifier", "created_at"]]
    notes = notes.drop_duplicates("notification_id")
    at = notes["created_at"].astype("datetime64[ns, UTC]")
    table = pd.DataFrame(
        {
            "notification_id": notes["notification_id"].astype("string").array,
            "workflow": notes["workflow_identifier"].astype("string").array,
            "at": at.array,
        }
    ).dropna(subset=["at"])
    table["t"] = table["at"].array.asi8
    table["bucket"] = grid.of(table["at"])
    return table.sort_values("t", kind="stable").reset_index(drop=True)


def _pair(jobs: pd.DataFrame) -> pd.Series:
    return jobs["channel"].astype("string") + "/" + jobs["provider_id"].astype("string")


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

    def matrices(self, bucket: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
        """Events (groups x buckets) and trials (trial groups x buckets)."""
        events = np.zeros((len(self.members), width), dtype="int64")
        for group, rows in enumerate(self.members):
            events[group] = np.bincount(bucket[rows], minlength=width)
        inside = self.trial >= 0
        count = int(self.trial.max(initial=-1)) + 1
        flat = np.bincount(self.trial[inside] * width + bucket[inside], minlength=count * width)
        return events, flat.reshape(count, width)


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
    """The groups of ``spec`` over ``table`` (for notifications: ``jobs``, the job table)."""
    if spec.unit == "notifications":
        return _sent_on(table, jobs, spec)
    trials, events = population(table, spec.name)
    trial, trial_keys = _codes(table, spec.keys, trials)
    event, keys = _codes(table, spec.keys + spec.split, events & trials)
    return _assemble(spec, trial, trial_keys, event, keys)


def _sent_on(notes: pd.DataFrame, jobs: pd.DataFrame, spec: Spec) -> Groups:
    """Volume: every notification is a trial; it is an event of each (channel, provider) it
    was sent on (a job neither skipped nor canceled)."""
    sent = jobs.loc[jobs["attempted"].to_numpy(), ["notification_id", *spec.split]]
    position = metrics.positions(notes["notification_id"], sent["notification_id"])
    sent = sent[position >= 0].assign(row=position[position >= 0])
    sent = sent.drop_duplicates(["row", *spec.split])
    event, keys = _codes(sent, spec.split, np.ones(len(sent), dtype=bool))
    trial = np.zeros(len(notes), dtype="int64")
    return _assemble(spec, trial, [()], event, keys, sent["row"].to_numpy())


def _assemble(spec, trial, trial_keys, event, keys, rows=None) -> Groups:
    """Groups from each row's trial and event group numbers (``rows``: the table positions of
    the event rows, when they are not the table's own)."""
    rows = np.arange(len(event)) if rows is None else rows
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
        return np.where(mask, 0, -1), [()]
    combined = np.zeros(int(mask.sum()), dtype="int64")
    uniques = []
    for key in keys:
        codes, values = pd.factorize(frame[key], use_na_sentinel=False)
        combined = combined * (len(values) + 1) + codes[mask]
        uniques.append([None if pd.isna(value) else str(value) for value in values])
    found, inverse = np.unique(combined, return_inverse=True)
    tuples = []
    for number in found:
        parts = []
        for values in reversed(uniques):
            number, code = divmod(int(number), len(values) + 1)
            parts.append(values[code])
        tuples.append(tuple(reversed(parts)))
    full = np.full(len(frame), -1)
    full[mask] = inverse
    return full, tuples


def base_counts(base: pd.DataFrame, spec: Spec, found: Groups, base_jobs=None) -> tuple:
    """Events and trials of each of ``found``'s groups in the separate baseline (0 if absent)."""
    theirs = groups(base, spec, base_jobs)
    k_of = {
        tuple(key.values()): len(rows)
        for key, rows in zip(theirs.keys, theirs.members, strict=True)
    }
    counts = np.bincount(theirs.trial[theirs.trial >= 0], minlength=len(theirs.trial_keys))
    n_of = dict(zip(theirs.trial_keys, counts, strict=True))
    keys = [tuple(key.values()) for key in found.keys]
    k = np.array([k_of.get(key, 0) for key in keys], dtype="float64")
    n = np.array([n_of.get(key[: len(spec.keys)], 0) for key in keys], dtype="float64")
    return k, n
