"""Runaway loops: a workflow re-sending to the same few people.

A loop (an integration's webhook re-triggering a workflow, a retry without end) sends a few
subscribers far more notifications in an hour than anyone usually gets from that workflow. Its
count may hide in the workflow's busy hours, but its recipients do not: the most notifications
one subscriber got from a workflow in an hour (`toolkit.counts.recipient_peaks`) has a tail that
falls off about exponentially (a thread of comments, a few login codes), so an hour whose peak
lies far beyond it is a loop. The tail is learnt from the workflow's hours with sends: in the
history when there is one (a store, an Activity), else in the window itself, whose few hours of
a loop do not move the percentiles the tail is read from (`tail_p`). A workflow with fewer than
`LEAST_HOURS` such hours is not tested.

A loop's row (``volume_spike``) names its workflow and its people: those who got more than the
workflow's hours usually peak at (their 99th percentile) over the hours it flagged and the
hour either side; its notifications are all they got in those hours, and in the hours either
side they got more than one in.
A loop is the spike row of its workflow at the time (`with_loops`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from toolkit.counts import recipient_counts, recipient_peaks

#: The percentiles of a workflow's hourly peaks its tail is read from (``u`` and ``v``, one
#: notification apart at least).
TAIL = (0.90, 0.99)
#: The most a tail falls by with each notification more: hours that all peak at one
#: notification (a password reset) do not make a second one a loop.
FALL = 10.0
#: The hours with sends a workflow needs for its tail to be read (about a week of them).
LEAST_HOURS = 100
HOUR = pd.Timedelta("1h")


def tail_p(peaks: np.ndarray, most: np.ndarray) -> np.ndarray:
    """The chance of an hour peaking at ``most`` or more, by the exponential tail of the hourly
    ``peaks``: through their shares at or above their `TAIL` percentiles ``u`` and ``v``
    (``(k + 1) / (n + 1)`` of ``n`` hours, ``k`` of them there: never 0), falling by at most
    `FALL` with each notification more."""
    low = np.quantile(peaks, TAIL[0], method="higher")
    high = max(np.quantile(peaks, TAIL[1], method="higher"), low + 1)
    share = lambda at: ((peaks >= at).sum() + 1) / (len(peaks) + 1)  # noqa: E731
    fall = min(FALL, (share(low) / share(high)) ** (1 / (high - low)))
    return np.minimum(1.0, share(high) * fall ** -(most - high))


def find(source, window: dict, before: pd.Timestamp, history, alpha: float, tests: float,
         least: int) -> list[dict]:  # fmt: skip
    """The loops of ``source``'s window (``window``: its ``after`` and ``before`` as asked,
    ``before`` its end: a loop in its last hour is ongoing), each a row:
    the hours of a workflow whose peak has a `tail_p` (of the history's peaks, ``history``:
    ``(sends, (start, end))``, or the window's) under ``alpha`` over the ``tests`` of the other
    scans and its own (each hour of each workflow tested), with at least ``least``
    notifications."""
    peaks = recipient_peaks(source, **window)
    learnt = peaks
    if history is not None:
        sends, (start, end) = history
        learnt = recipient_peaks(sends, after=start, before=end)
    tested = []
    for flow, mine in peaks.groupby("workflow", observed=True, sort=True):
        usual = learnt.loc[learnt["workflow"] == flow, "most"].to_numpy("float64")
        if len(usual) >= LEAST_HOURS:
            tested.append((str(flow), mine, usual, tail_p(usual, mine["most"].to_numpy("float64"))))
    tests += sum(len(mine) for _, mine, _, _ in tested)
    rows = []
    for flow, mine, usual, p in tested:
        hours = mine.loc[p * tests <= alpha, "bucket"].sort_values()
        above = int(np.quantile(usual, TAIL[1], method="higher"))
        for run in _runs(hours):
            row = _row(source, flow, run, above, float(p[mine["bucket"].isin(run)].min() * tests))
            if row is not None and row["notifications"] >= least:
                row["ongoing"] = bool(row["end"] >= before - HOUR)
                rows.append(row)
    return rows


def _runs(hours: pd.Series) -> list[list[pd.Timestamp]]:
    """Flagged hours in runs: hours at most one apart are one loop's."""
    runs: list[list[pd.Timestamp]] = []
    for hour in hours:
        if runs and hour - runs[-1][-1] <= 2 * HOUR:
            runs[-1].append(hour)
        else:
            runs.append([hour])
    return runs


def _row(source, flow: str, hours: list[pd.Timestamp], above: int, p: float) -> dict | None:
    """The row of a loop of workflow ``flow`` flagged at ``hours``: its people got more than
    ``above`` from the hour before them to the hour after (a loop's hour is cut by the clock's);
    its notifications, all they got in those hours and in the hours either side they got more
    than one in (a person's usual from one workflow is a few a day)."""
    first, last = hours[0] - HOUR, hours[-1] + 2 * HOUR
    got = recipient_counts(source, after=first, before=last, groups=[{"workflow": flow}], least=1)
    total = got.groupby("subscriber_id", observed=True)["notifications"].sum()
    people = total.index[total > above]
    theirs = got[got["subscriber_id"].isin(people)]
    # the loop's: the flagged hours, and the hours either side they got repeats in (their own
    # few notifications of the hour before are not)
    theirs = theirs[theirs["bucket"].isin(hours) | (theirs["notifications"] > 1)]
    if theirs.empty:
        return None
    start, end = theirs["first_at"].min(), theirs["last_at"].max()
    jobs = int(theirs["jobs"].sum())
    return {
        "scan": "loop",
        "kind": "volume_spike",
        "loop": {"people": len(people), "most": int(theirs["notifications"].max()), "usual": above},
        "keys": {"workflow": flow},
        "start": start,
        "end": end,
        "jobs": jobs,
        "events": jobs,
        "expected": 0.0,  # of them, next to nothing: one workflow sends a person a few a day
        "rate": np.inf,
        "base_rate": 1.0,
        "p_value": p,
        "ongoing": False,
        "affected": np.zeros(0, dtype=int),
        "notifications": int(theirs["notifications"].sum()),
        "workflows": [flow],
    }


def with_loops(moved: list[dict], loops: list[dict]) -> list[dict]:
    """The volume rows ``moved`` with the ``loops``: a loop is the spike row of its workflow
    that overlaps it in time (it names the cause, and counts what the loop sent, not the
    workflow's departure from its season), and is part of a group of spikes naming it."""

    def overlaps(row: dict, loop: dict) -> bool:
        return row["kind"] == "volume_spike" and row["start"] < loop["end"] and loop["start"] < row["end"]  # fmt: skip

    replaced, added = set(), []
    for loop in loops:
        flow = loop["keys"]["workflow"]
        mine = [row for row in moved if overlaps(row, loop) and row["keys"].get("workflow") == flow]
        grouped = any(overlaps(row, loop) and flow in (part["keys"].get("workflow") for part in row["parts"])
                      for row in moved if "parts" in row)  # fmt: skip
        replaced |= {id(row) for row in mine}
        for row in mine:  # sends its load slowed, or had rate limited (`volume.loaded_by_spikes`)
            for key in ("slowed", "limited"):
                loop[key] = loop.get(key, []) + row.get(key, [])
        added += [] if grouped else [loop]
    return [row for row in moved if id(row) not in replaced] + added
