"""Volume rows from a seasonal baseline: drops, spikes and shifts, one row per cause.

Each level's groups (`season.LEVELS`) are scanned for periods with too few jobs
(``volume_drop``) or too many (``volume_spike``) against the season's expected counts. Rows of
one direction that overlap in time are one cause when most of one's missing (extra) jobs are in
the other's cells; the group that departs the most (the largest share of its expected jobs
missing, of its jobs extra) is kept: a workflow that stopped rather than each channel it sends
on, a silent channel rather than each of its providers. A spike of one provider of a channel
while another provider of it sends at least half as much less than expected is one
``traffic_shift`` row (a failover), never a drop and a spike. A spike is kept only when it departs
more than its group did in each week of the season's history (`_beyond_history`). A row's
expected jobs are at its day's level (`_level`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from toolkit.incidents.scan import Evidence, _runs, count_scans
from toolkit.incidents.season import HOUR, LEVELS, WEEK, Season, center

#: Tie order of the levels when two groups depart as much (a workflow broken upstream first).
ORDER = {"workflow": 0, "channel": 1, "provider": 2}
#: Hours between two periods of one group and direction that are still one departure.
GAP = 12
#: A spike is a shift when another provider of its channel misses at least this share of it.
SHIFT_SHARE = 0.5
#: Hours either side of a period whose jobs say how busy its day is (`_level`).
AROUND = 24


def scans(season: Season, rule: Evidence) -> dict[tuple[str, bool], tuple]:
    """The count scans of each level and direction: ``(level, low) -> (scan, groups)``."""
    out = {}
    for level in LEVELS:
        keys, observed, expected, variance, cells = season.groups(level)
        lows = (True, False)
        rules = [
            Evidence(rule.min_trials, rule.min_events, rule.min_ratio, low=low) for low in lows
        ]
        for low, scan in zip(lows, count_scans(observed, expected, variance, rules), strict=True):
            out[level, low] = (scan, (keys, cells, variance))
    return out


def candidate(season: Season, level: str, low: bool, groups, pick, tests: int) -> dict:
    """A row of a pick of a count scan (the fields `find_incidents` rows have)."""
    keys, cells, (variance, spread) = groups
    mine, spread = cells[pick.group], (variance[pick.group], spread[pick.group])
    observed = season.observed[mine].sum(0)
    expected = season.expected[mine].sum(0) * _level(season, mine, pick.first, pick.stop, spread)
    # how far it departs: the share of its expected jobs missing, of its jobs extra (the
    # scan's own period, before the edges below)
    core = (pick.expected - pick.events) / pick.expected if low else 1 - pick.expected / pick.events
    if not low:  # a spike starts and ends on hours with jobs
        sent = np.flatnonzero(observed[pick.first : pick.stop])
        pick.first, pick.stop = pick.first + sent[0], pick.first + sent[-1] + 1
    else:  # a drop that began or ended within an hour: that hour's missing jobs are its too
        if pick.first > 0 and observed[pick.first - 1] < expected[pick.first - 1]:
            pick.first -= 1
        if pick.stop < len(observed) and observed[pick.stop] < expected[pick.stop]:
            pick.stop += 1
    start = max(season.hours[pick.first], season.start)
    end = min(season.hours[pick.stop - 1] + HOUR, season.end)
    period = slice(pick.first, pick.stop)
    observed, expected = int(observed[period].sum()), float(expected[period].sum())
    return {
        "scan": f"count:{level}",
        "kind": "volume_drop" if low else "volume_spike",
        "level": level,
        "keys": keys[pick.group],
        "cells": mine,
        "spread": spread,
        "first": pick.first,
        "stop": pick.stop,
        "start": start,
        "end": end,
        "jobs": observed,
        "events": observed,
        "expected": expected,
        "rate": observed / expected if expected else np.inf,
        "base_rate": 1.0,
        "p_value": min(1.0, pick.p_value * tests),
        "ongoing": pick.stop == len(season.hours),
        "affected": np.zeros(0, dtype=int),
        "share": core,
    }


def _level(season: Season, cells: np.ndarray, first: int, stop: int, spread: tuple) -> float:
    """How busy the group is on the day of hours ``[first, stop)``, relative to the season's
    usual day: its jobs over its expected jobs in the `AROUND` hours either side, weighed
    against 1 by how much days vary (the group's ``spread``: its hourly variance and
    `toolkit.incidents.season.day_spread`) and how uncertain those hours' ratio is (their
    variance over their expected count squared): ``1 + w * (ratio - 1)``, ``w = s / (s + u)``."""
    observed, expected = season.observed[cells].sum(0), season.expected[cells].sum(0)
    around = np.r_[max(0, first - AROUND) : first, stop : min(len(observed), stop + AROUND)]
    usual = expected[around].sum()
    if not usual or not spread[1]:
        return 1.0
    uncertain = spread[0][around].sum() / usual**2
    weight = spread[1] / (spread[1] + uncertain)
    return float(1 + weight * (observed[around].sum() / usual - 1))


def one_per_cause(season: Season, rows: list[dict]) -> list[dict]:
    """The volume rows left when each cause is one row (see the module docstring)."""
    rows, kept = _joined(season, rows), []
    for row in sorted(rows, key=lambda r: (-round(r["share"], 1), ORDER[r["level"]], r["p_value"])):
        if not any(_same_cause(season, row, other) for other in kept):
            kept.append(row)
    shifted = _shifts(season, kept)  # a provider taking over is a shift, whatever its history
    return [row for row in shifted if row["kind"] != "volume_spike" or _beyond_history(season, row)]


def _joined(season: Season, rows: list[dict]) -> list[dict]:
    """Periods of one group and direction at most `GAP` hours apart (the scan's rounds over a
    long departure) joined into one."""
    out: list[dict] = []
    for row in sorted(rows, key=lambda r: (r["scan"], str(r["keys"]), r["kind"], r["first"])):
        last = out[-1] if out else None
        if (last is not None and (last["scan"], last["keys"], last["kind"])
                == (row["scan"], row["keys"], row["kind"]) and row["first"] <= last["stop"] + GAP):  # fmt: skip
            period = slice(last["first"], row["stop"])
            cells = last["cells"]
            observed = int(season.observed[cells, period].sum())
            level = _level(season, cells, last["first"], row["stop"], last["spread"])
            expected = float(season.expected[cells, period].sum()) * level
            low = row["kind"] == "volume_drop"
            last.update(stop=row["stop"], end=row["end"], events=observed, jobs=observed,
                        expected=expected, ongoing=row["ongoing"],
                        p_value=min(last["p_value"], row["p_value"]),
                        share=(expected - observed) / expected if low
                        else (observed - expected) / observed)  # fmt: skip
        else:
            out.append(row)
    return out


def _score(observed, expected):
    """The Poisson log-likelihood ratio of ``observed`` against ``expected`` counts."""
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(observed > 0, observed / np.maximum(expected, 1e-9), 1.0)
        return observed * np.log(ratio) - (observed - expected)


def _beyond_history(season: Season, row: dict) -> bool:
    """Whether a spike ``row`` departs more (its score) than its group's largest spike in each
    week of the reference against the others (the row's own week left out): bursts (fan-outs)
    make a quasi-Poisson tail too light, and a group's usual bursts are in its history too, a
    runaway is not."""
    weekly = season.reference[row["cells"]].sum(0)  # weeks x 168
    own = None if season.own is None else (row["first"] - season.own) // WEEK
    largest = 0.0
    for week in range(weekly.shape[0]):
        if week == own:
            continue
        expected = _runs(center(np.delete(weekly[None], week, axis=1))[0])[0]
        observed, inside = _runs(weekly[week])
        score = np.where((observed > expected) & inside, _score(observed, expected), 0.0)
        largest = max(largest, float(score.max()))
    return float(_score(np.float64(row["events"]), np.float64(row["expected"]))) > largest


def _departure(season: Season, row: dict, cells: np.ndarray, period: slice) -> float:
    """The jobs missing (drop) or extra (spike) in ``cells`` over ``period``."""
    gap = season.expected[cells, period].sum() - season.observed[cells, period].sum()
    return gap if row["kind"] == "volume_drop" else -gap


def _same_cause(season: Season, row: dict, kept: dict) -> bool:
    """Whether most of ``row``'s missing (extra) jobs are in ``kept``'s cells and period."""
    if row["kind"] != kept["kind"] or row["start"] >= kept["end"] or row["end"] <= kept["start"]:
        return False
    shared = np.intersect1d(row["cells"], kept["cells"])
    both = slice(max(row["first"], kept["first"]), min(row["stop"], kept["stop"]))
    whole = _departure(season, row, row["cells"], slice(row["first"], row["stop"]))
    return bool(len(shared)) and _departure(season, row, shared, both) >= 0.5 * whole


def _shifts(season: Season, rows: list[dict]) -> list[dict]:
    """A provider's spike while another provider of the same channel sends about as much less
    (its own drop row, if any, is dropped) is one ``traffic_shift`` row from that provider."""
    out, used = [], set()
    for spike in rows:
        if spike["kind"] != "volume_spike" or spike["level"] != "provider":
            continue
        channel, provider = spike["keys"]["channel"], spike["keys"]["provider_id"]
        period = slice(spike["first"], spike["stop"])
        extra = spike["events"] - spike["expected"]
        others = {key[1] for key in season.keys if key[0] == channel and key[1] != provider}
        best, missing = None, 0.0
        for other in others:
            cells = [n for n, key in enumerate(season.keys) if key[:2] == (channel, other)]
            gap = season.expected[cells, period].sum() - season.observed[cells, period].sum()
            if gap > missing:
                best, missing, seen = other, gap, season.observed[cells, period].sum()
        if best is None or missing < SHIFT_SHARE * extra:
            continue
        used.add(id(spike))
        used |= {id(row) for row in rows if row["kind"] == "volume_drop"
                 and row["keys"] == {"channel": channel, "provider_id": best}}  # fmt: skip
        keys = {"channel": channel, "provider_id": best}
        out.append({**spike, "kind": "traffic_shift", "keys": keys, "to": spike,
                    "events": int(seen), "jobs": int(seen), "expected": seen + missing})  # fmt: skip
    return out + [row for row in rows if id(row) not in used]


def impact(rows: list[dict], counted: pd.DataFrame) -> None:
    """Each row's notifications (missing or extra jobs over the jobs a notification of the
    group has) and workflows (most jobs first), from `toolkit.counts.group_counts` of the
    rows' groups and periods."""
    for n, row in enumerate(rows):
        jobs, notes = counted[f"jobs_{n}"].sum(), counted[f"notifications_{n}"].sum()
        per_note = jobs / notes if notes else 1.0
        gap = abs(row["expected"] - row["events"])
        row["notifications"] = round(gap / per_note)
        named = counted[counted["workflow"].notna()]
        row["workflows"] = _most(named, f"period_{n}") or _most(named, f"jobs_{n}")
        if row["kind"] == "volume_spike" and counted[f"period_{n}"].sum():  # the jobs' own times
            row["start"], row["end"] = counted[f"first_{n}"].min(), counted[f"last_{n}"].max()


def _most(counted: pd.DataFrame, column: str) -> list[str]:
    """The workflows with jobs in ``column``, most first."""
    ranked = counted[counted[column] > 0].sort_values([column, "workflow"], ascending=[False, True])
    return ranked["workflow"].astype(str).tolist()
