"""Volume rows from a seasonal baseline: drops, spikes and shifts, one row per cause.

Each level's groups (`season.LEVELS`) are scanned for periods with too few jobs (``volume_drop``)
or too many (``volume_spike``) against the season's expected counts. Rows of one direction that
overlap in time are one cause when most of one's missing (extra) jobs are in the other's cells; the
group that departs the most (the largest share of its expected jobs missing, of its jobs extra) is
kept: a workflow that stopped rather than each channel it sends on, a silent channel rather than
each of its providers; a channel's or provider's row that is part of a workflow row's cause, and
not the other way round, is the workflow's (a provider that sent less because a workflow it carries
stopped). Drops (spikes, once `triggered`) that overlap in time are then one row of them all, its
impact theirs summed (`at_the_same_time`, `together`: a public holiday, the app that triggers the
workflows down, a sale day), a channel or provider that shares cells with them and departs no
further theirs too. A spike of one provider of a channel while another provider of it sends at
least half as much less than expected (over the hours after the one the traffic moved in) is one
``traffic_shift`` row (a failover), never a drop and a spike. A spike is kept only when it departs
more than its group did over as many hours in each week of the season's history (`_beyond_history`)
and adds more than its group's usual bursts did (a campaign most weeks on whichever day, however
many hours it was throttled over), as a spike of send occasions too or a fan-out larger than any
its group made (`triggered`); a spike of
repeats that are a good share of what it added (a loop: `_mostly_repeats`) is kept whatever its
size; a workflow's spike short of two of the window's busiest
hours, only a spike of repeats (a loop). A row of its group's usual traffic an hour off (summer
time's end) is none (`an_hour_off`). A latency degradation mostly at the time of a spike of a group
sending through its provider, at most a few times slower, is the spike's (`loaded_by_spikes`: its
load slowed the sends), and so is a rate limit on a few of its sends, or none when the spike is a
burst that is none. A row's expected jobs are
at its day's level (`_level`) and, for a channel or provider whose workflows keep triggering,
weighed with what their other channels sent at the time (`expected_jobs`); a row that then no
longer misses (has extra) the fewest jobs a row needs is none (`departs`). A season of two weeks
read alone keeps only the rows of the week that departs, and a spike its hours of the week expect
next to nothing of must depart from the same hours of the window's other days too (`confirmed`: a
promotion sent on days that change from week to week is expected none on a day no other week sent
it). A drop is ongoing while the hours after it cannot show that it stopped (`still_going`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np
import pandas as pd

from toolkit.incidents.scan import (
    LEAST,
    STILL_GOING,
    CountScan,
    Evidence,
    _runs,
    count_p_value,
    count_scans,
)
from toolkit.incidents.season import (
    CELL,
    CHI2_MEDIAN,
    HOUR,
    LEVELS,
    WEEK,
    Season,
    center,
    empty_rate,
)

#: Standard deviations either side of a drop's estimate in its likely range (95%).
LIKELY = 1.96
#: Tie order of the levels when two groups depart as much (a workflow broken upstream first).
ORDER = {"workflow": 0, "channel": 1, "provider": 2}
#: Hours between two periods of one group and direction that are still one departure.
GAP = 12
#: A spike is a shift when another provider of its channel misses at least this share of it.
SHIFT_SHARE = 0.5
#: The most a schedule moved by an hour misses (sends too many), in its busiest expected hours:
#: one hour's, with room for that hour's own noise (`an_hour_off`).
MOVED = 1.5
#: Hours either side of a period whose jobs say how busy its day is (`_level`).
AROUND = 24
#: Hours either side of a row whose jobs set its level against the other days (`confirmed`).
BESIDE = 12
#: Fewest other days a row is confirmed against, and hours of it compared (`confirmed`).
MIN_DAYS = 5
DAY = 24
#: Share of a latency degradation's period within a spike's that makes it the spike's load.
LOADED = 0.5
#: The most times its providers' usual slow threshold (p95 over the usual p90) a spike's load
#: makes their sends: a queue's wait; a provider slower still has a cause of its own
#: (`loaded_by_spikes`).
LOAD_SLOWS = 3.0
#: The largest share of a provider's sends a spike's load makes it rate limit: a busy hour's
#: few; a provider limiting more has a cause of its own (`loaded_by_spikes`).
LOAD_LIMITS = 0.2
#: How many times the most its group ever sent (at its busiest hour, `_larger_than_any`) or
#: added (over as many hours, `_usual_burst`) a spike must send or add: a group's bursts
#: differ in size (a campaign to one region or another, a customer base that grows).
LARGER = 2.0


def scans(season: Season, rule: Evidence) -> dict[tuple[str, bool], tuple]:
    """The count scans of each level and direction: ``(level, low) -> (scan, groups)``."""
    out = {}
    for level in LEVELS:
        keys, observed, expected, variance, cells = season.groups(level)
        lows = (True, False)
        rules = [
            Evidence(rule.min_trials, rule.min_events, rule.min_ratio, low=low) for low in lows
        ]
        # a spike adds two of its busiest expected hours: a workflow's own run's (a loop on a
        # quiet Saturday), a channel's or provider's the window's busiest (traffic that moves
        # between providers with the load is no spike of theirs); two weeks: each week's
        # expected counts are the other's, bursts included, its busiest what both weeks sent
        busiest = np.minimum(observed, expected).max(1) if season.confirm else None
        made = count_scans(observed, expected, variance, rules, busiest, own_hours(season, level))
        for low, scan in zip(lows, made, strict=True):
            out[level, low] = (scan, (keys, cells, variance))
    return out


def own_hours(season: Season, level: str) -> bool:
    """Whether a spike of ``level``'s groups need add only two of its own busiest expected
    hours (`scans`): a workflow's, but of two weeks read alone."""
    return level == "workflow" and not season.confirm


def on_occasions(counted: dict, occasions: Callable[[dict], dict], threshold: float,
                 scan: tuple | None = None, picked: list | None = None) -> None:  # fmt: skip
    """Each scan's first-round picks (or only ``picked``, a later round's picks of the scan
    ``scan``, a key of ``counted``) tested again on their group's send occasions (minutes with
    a send: ``occasions({level: groups})``, per level the groups' occasions as a season whose
    cells are the groups, `occasion_season`, and their `toolkit.counts.occasion_counts`).

    A drop's pick is tested as a silence (`_silence`): a best-scoring run without a job takes
    the p-value of its silence; a group whose best-scoring run is not significant (p-value
    above ``threshold``) takes its run without a job and the most expected jobs instead when
    that silence is less likely. A spike's pick that is not significant takes the p-value of
    its occasions (`_occasion_p`), or of its repeats, when that is smaller: fan-outs make a
    group's counts vary widely, so that hundreds of sends more than usual may be a few fan-outs
    more, but as many more occasions are as many more triggers, and as many more repeats as
    many more re-triggers for the same people (a runaway loop). No occasions (a history of
    counts only): the count's law."""
    tested = {}
    for (level, low), (one, (keys, _, _)) in counted.items():
        if scan is not None and (level, low) != scan:
            continue
        picks = [pick for pick in (one.first_round() if picked is None else picked)
                 if (pick.silent is not None or not low)
                 and (pick.events == 0 or pick.p_value > threshold)]  # fmt: skip
        if picks:
            tested[level, low] = [(pick, keys[pick.group]) for pick in picks]
    if not tested:
        return
    asked: dict[str, list] = {}
    for (level, _), picks in tested.items():
        asked.setdefault(level, []).extend(keys for _, keys in picks)
    seasons = occasions(asked)
    for (level, low), picks in tested.items():
        sent, frame, repeats = seasons[level]
        if not isinstance(sent, Season):
            continue
        named, observed, expected, variance, cells = sent.groups(level)
        number = {tuple(key.values()): n for n, key in enumerate(named)}
        for pick, keys in picks:
            group = number.get(tuple(keys.values()))
            if group is None:
                continue
            counts = observed[group], expected[group], variance[0][group], variance[1][group]
            if not low:  # as many more triggers (or repeats: a loop where every minute sends)
                pick.p_value = min(pick.p_value, *(
                    _occasion_p(*_group_counts(one, level, keys), pick.first, pick.stop)
                    for one in (sent, repeats)))  # fmt: skip
                continue
            first, stop, jobs = (
                (pick.first, pick.stop, pick.expected) if pick.events == 0 else pick.silent
            )
            empty = history_empty_rate(sent, cells[group], first, stop)
            p = _silence(*counts, first, stop, _edges(sent, frame, keys, first, stop), empty)
            if pick.events == 0 or p < pick.p_value:
                pick.first, pick.stop, pick.events, pick.expected, pick.p_value = (
                    first, stop, 0, jobs, p)  # fmt: skip


def history_empty_rate(season: Season, cells: np.ndarray, first: int, stop: int) -> float:
    """How often the history's hours of ``cells`` were empty (`empty_rate`), for a silence of
    the window's hours ``[first, stop)``: the weeks it lies in are not its history when the
    season is the window's own (its own empty hours would make it look usual)."""
    history = season.reference[cells].sum(0)
    own = {_own_week(season, hour) for hour in (first, stop - 1)} - {None}
    return empty_rate(np.delete(history, sorted(own), axis=0))


def period_variance(spread: tuple, first: int, stop: int, expected: float) -> float:
    """The variance of a group's count over hours ``[first, stop)`` of ``expected`` in all: its
    hours' variance plus its day's (``spread`` = (hourly variance, day spread ``s``): ``s``
    times the expected count squared)."""
    return float(spread[0][first:stop].sum()) + spread[1] * expected**2


def _occasion_p(observed, expected, hourly, spread, first: int, stop: int) -> float:
    """The chance of as many send occasions in hours ``[first, stop)`` as seen: negative
    binomial, the variance of the hours plus the day's (``spread`` times the expected count
    squared)."""
    e = float(expected[first:stop].sum())
    v = period_variance((hourly, spread), first, stop, e)
    phi = max(1.0, v / e) if e > 0 else 1.0
    return count_p_value(float(observed[first:stop].sum()), max(e, LEAST), phi, low=False)


def _edges(sent: Season, frame: pd.DataFrame, keys: dict, first: int, stop: int) -> tuple:
    """The shares of the hours either side of hours ``[first, stop)`` without a job that are
    silent too: after the group's last trigger in the hour before, before its first in the
    hour after (0 at the window's ends)."""
    mine = _of(frame, keys)
    shares = []
    for hour, end in ((first - 1, "last_at"), (stop, "first_at")):
        at = frame.loc[mine & (frame["bucket"] == sent.hours[hour]).to_numpy(), end] if 0 <= hour < len(sent.hours) else []  # fmt: skip
        if len(at) == 0:
            shares.append(0.0)
            continue
        into = (at.iloc[0] - sent.hours[hour]) / HOUR
        shares.append(1 - into if end == "last_at" else into)
    return tuple(shares)


def _of(frame: pd.DataFrame, keys: dict) -> np.ndarray:
    """Which rows of ``frame`` are of the group of ``keys`` (its dimensions' values)."""
    mine = np.ones(len(frame), dtype=bool)
    for name, value in keys.items():
        column = frame[name]
        mine &= column.isna().to_numpy() if value is None else (column == value).to_numpy(bool, na_value=False)  # fmt: skip
    return mine


def _silence(observed, expected, hourly, spread, first, stop, edges, empty=np.inf) -> float:
    """The chance that a silence covering hours ``[first, stop)`` is as long (in expected
    occasions) as the one seen: from the last occasion before them to the first after (the
    ``edges``: shares of the hours either side).

    Sends come in clumps (bursts, fan-outs, batches): a count with a clumped law has the
    measured variance, but its chance of being 0 is the chance of no clump at all. So a
    silence is tested on the group's occasions, whose hours vary by their own ``hourly``
    variance (`toolkit.incidents.season.dispersion`: independent hours, each a negative
    binomial count with no occasion at ``phi ** (-e / (phi - 1))``: ``exp(-c * e)``, ``c =
    log(phi) / (phi - 1)``), at the level of their day: a gamma law of relative variance
    ``spread`` learnt from the `AROUND` hours either side (their occasions over their expected,
    quasi-Poisson), so that no occasion has the chance ``(1 + Q / b) ** -a`` at ``Q = sum(c *
    e)``. Its edges are where the group's last and first occasions happen to be: a silence
    covering the hours is at least ``x`` longer than them with the chance ``(1 + x)
    exp(-x)`` of the sum of two exponential waits (of a Poisson process), so the chance is
    multiplied by ``1 + x``, ``x`` the edges' ``Q``. An edge hour is expected at no more than
    the busier of its neighbours: one busier than both is a batch's, which sends in its first
    minutes, not in the part of it inside the silence."""
    hours = np.arange(max(0, first - 1), min(len(expected), stop + 1))
    share = np.ones(len(hours))
    share[hours == first - 1], share[hours == stop] = edges
    edge = (hours < first) | (hours >= stop)
    padded = np.r_[0.0, expected, 0.0]  # each hour's neighbours, none outside the window
    busier = np.maximum(padded[hours], padded[hours + 2])
    e = np.where(edge, np.minimum(expected[hours], busier), expected[hours]) * share
    with np.errstate(invalid="ignore", divide="ignore"):
        phi = np.where(expected[hours] > 0, hourly[hours] / expected[hours], 1.0)
    phi = np.maximum(phi, 1.0)
    c = np.where(phi > 1 + 1e-9, np.log(phi) / np.maximum(phi - 1, 1e-12), 1.0)
    c = np.minimum(c, empty)  # empty hours as often as the history's (`season.empty_rate`)
    q = float((c * e).sum())
    x = float((c * e)[edge].sum())
    around = np.r_[max(0, first - 1 - AROUND) : max(0, first - 1),
                   min(len(expected), stop + 1) : min(len(expected), stop + 1 + AROUND)]  # fmt: skip
    usual = float(expected[around].sum())
    if spread > 0 and usual > 0:
        phi_around = max(1.0, float(hourly[around].sum()) / usual)
        shape = 1 / spread + float(observed[around].sum()) / phi_around
        rate = 1 / spread + usual / phi_around
        chance = float(np.exp(-shape * np.log1p(q / rate)))
    else:
        chance = float(np.exp(-q))
    return min(1.0, chance * (1 + x))


def occasion_season(level: str, build: Callable[..., Season | str], window, history=None,
                    column: str = "occasions"):  # fmt: skip
    """The season of the occasions (``column``: or their ``repeats``) of ``level``'s groups
    (`toolkit.counts.occasion_counts` of the window and, when given, ``history`` ``(counts,
    span, gaps)``) by ``build`` (a `toolkit.incidents.season.build` of the window's span): its
    cells are the groups, the other dimensions of `toolkit.incidents.season.CELL` missing."""
    names = list(LEVELS[level])

    def as_cells(frame: pd.DataFrame) -> pd.DataFrame:
        frame = frame[["bucket", *names, column]].rename(columns={column: "jobs"})
        for name in CELL:
            if name not in names:
                frame[name] = pd.array([None] * len(frame), dtype="string")
        return frame

    if history is None:
        return build(lambda: as_cells(window))
    counts, span, *gaps = history
    return build(lambda: as_cells(window), history=as_cells(counts), history_span=span,
                 gaps=gaps[0] if gaps else ())  # fmt: skip


def groups_of(frame: pd.DataFrame, level: str) -> list[dict]:
    """The groups of ``level`` that ``frame`` holds (each its dimensions' values, None:
    missing)."""
    names = list(LEVELS[level])
    return [dict(zip(names, [None if pd.isna(value) else value for value in values], strict=True))
            for values in frame[names].drop_duplicates().itertuples(index=False)]  # fmt: skip


#: The least share of a spike's added notifications that are repeats (beyond one per person in
#: an hour) for it to be a loop: a loop re-sends to the same people (a third to nine tenths of
#: its notifications in the generators' loops), a crowd reaches new ones (a payday's deposit
#: wave: one in twenty).
LOOP_SHARE = 0.25
#: How many standard deviations of its hour the hour either side of a spike sends beyond its
#: expected count to be the spike's too (a loop from 18:47 to 19:47 is the 18:00 hour's too).
EDGE = 2.0


def candidate(season: Season, level: str, low: bool, groups, pick, tests: int) -> dict:
    """A row of a pick of a count scan (the fields `find_incidents` rows have)."""
    keys, cells, (variance, spread) = groups
    mine, spread = cells[pick.group], (variance[pick.group], spread[pick.group])
    observed = season.observed[mine].sum(0)
    # a spike short of two of the window's busiest hours is a loop, or none (`triggered`)
    small = (
        not low
        and own_hours(season, level)
        and (pick.events - pick.expected < 2 * season.expected[mine].sum(0).max())
    )
    expected = expected_jobs(season, mine, pick.first, pick.stop, spread)
    # how far it departs: the share of its expected jobs missing, of its jobs extra (the
    # scan's own period, before the edges below)
    core = (pick.expected - pick.events) / pick.expected if low else 1 - pick.expected / pick.events
    if not low:  # a spike starts and ends on hours with jobs, and sends too many in them
        sent = np.flatnonzero(observed[pick.first : pick.stop])
        pick.first, pick.stop = pick.first + sent[0], pick.first + sent[-1] + 1
        beyond = observed - expected - EDGE * np.sqrt(variance[pick.group])
        if pick.first > 0 and beyond[pick.first - 1] > 0:
            pick.first -= 1
        if pick.stop < len(observed) and beyond[pick.stop] > 0:
            pick.stop += 1
    else:  # a drop that began or ended within an hour: that hour's missing jobs are its too
        if pick.first > 0 and observed[pick.first - 1] < expected[pick.first - 1]:
            pick.first -= 1
        if pick.stop < len(observed) and observed[pick.stop] < expected[pick.stop]:
            pick.stop += 1
    start = max(season.hours[pick.first], season.start)
    end = min(season.hours[pick.stop - 1] + HOUR, season.end)
    period = slice(pick.first, pick.stop)
    ongoing = pick.stop >= season.seen
    if low:  # at the share of its expected jobs the scan found sent
        rate = pick.events / pick.expected if pick.expected else 0.0
        ongoing = still_going(observed, expected, spread, rate, pick.stop, season.seen)
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
        "ongoing": ongoing,
        "affected": np.zeros(0, dtype=int),
        "share": core,
        "small": small,
    }


def still_going(observed, expected, spread: tuple, rate: float, stop: int, seen: int) -> bool:
    """Whether a drop ending at hour ``stop`` may still be going on: what its group sent in the
    hours after it, to the last with a count (``seen``), had a chance above `STILL_GOING` at
    ``rate``, the share of the expected jobs its scan found sent (negative binomial, the
    group's ``spread``). Hours when little is expected (a night, an office closed) cannot show
    that it stopped."""
    after = expected[stop:seen].sum()
    if after <= 0:
        return True
    mean = max(rate * after, 1e-9)
    phi = max(1.0, spread[0][stop:seen].sum() / after + spread[1] * mean)  # as its hours vary
    return count_p_value(float(observed[stop:seen].sum()), mean, phi, low=False) > STILL_GOING


def departs(row: dict, rule: Evidence) -> bool:
    """Whether a `candidate` row still misses (or has extra) ``rule.min_events`` jobs once they
    are counted as its day and its workflows' other channels say (`expected_jobs`): a channel
    whose workflow stopped sent what that workflow's other channels say, and is no row of its
    own (the workflow's is)."""
    gap = row["expected"] - row["events"]
    return (gap if row["kind"] == "volume_drop" else -gap) >= rule.min_events


def confirmed(season: Season, row: dict, alpha: float) -> bool:
    """Whether ``row`` is its own week's departure, when its season asks (`Season.confirm`: two
    weeks, each the other's only history, so that an incident in one week is an opposite
    departure of the other): its first `DAY` hours depart from the same hours of the window's
    other days (`_against_days`; negative binomial, at ``alpha``), and more than the other
    week's same hours depart the other way (the two weeks share the hour of the week: what the
    other days cannot know of it, a Sunday night's, is in both). Any other season's spike whose
    hours of the week expect next to nothing (under a job an hour), too, against the other days
    of the window and of a baseline's weeks (`Season.with_history`), when there are enough: a
    group sending bursts at those hours on days that change from week to week (a promotion) is
    expected none on a day no other week sent them."""
    spike = row["kind"] == "volume_spike"
    if not season.confirm and not (spike and row["expected"] < row["stop"] - row["first"]):
        return True  # a spike expected at least a job an hour: its hours of the week say
    counts, inside, at = season.with_history(row["cells"])
    first, stop = at + row["first"], at + min(row["stop"], row["first"] + DAY)
    own = _against_days(inside, counts, first, stop, not spike)  # a shift: its provider's drop
    if own is None:
        return not season.confirm
    if count_p_value(own[0], own[1], own[2], low=not spike) > alpha:
        return False
    if not season.confirm:
        return True
    other = first + WEEK if stop + WEEK <= len(counts) else first - WEEK
    mirror = (
        _against_days(inside, counts, other, other + stop - first, not spike)
        if other >= 0
        else None
    )
    if mirror is None:
        return True
    ratio = (own[0] + 1) / (own[1] + 1) * (mirror[0] + 1) / (mirror[1] + 1)
    return bool(ratio >= 1 if spike else ratio <= 1)


def _against_days(inside: np.ndarray, counts: np.ndarray, first: int, stop: int, low: bool):
    """The jobs of ``counts`` in hours ``[first, stop)``, the jobs the other days say
    (`_predict`, of a drop when ``low``: the same hours and their `BESIDE` hours either side on
    each other day where they lie wholly ``inside`` and apart from these) and the dispersion
    those days show, each predicted from the rest (None: fewer than `MIN_DAYS`)."""
    hours = len(counts)
    period = np.arange(first, stop)
    beside = np.r_[first - BESIDE : first, stop : stop + BESIDE]
    beside = beside[(beside >= 0) & (beside < hours)]
    beside = beside[inside[beside]]
    span, reach = np.r_[period, beside], stop - first + BESIDE
    shifts = [s for s in range(-(hours // DAY) * DAY, hours, DAY) if abs(s) >= reach
              and (span + s).min() >= 0 and (span + s).max() < hours
              and inside[span + s].all()]  # fmt: skip
    days = np.array([(counts[period + s].sum(), counts[beside + s].sum()) for s in shifts])
    if len(days) < MIN_DAYS:
        return None
    expected = _predict((counts[period].sum(), counts[beside].sum()), days, low)
    fitted = [
        (day[0], _predict(day, np.delete(days, n, axis=0), low)) for n, day in enumerate(days)
    ]
    fitted = np.array([pair for pair in fitted if pair[1] is not None])
    if expected is None or len(fitted) < MIN_DAYS - 1:
        return None
    pearson = (fitted[:, 0] - fitted[:, 1]) ** 2 / np.maximum(fitted[:, 1], 0.5)
    return counts[period].sum(), expected, max(1.0, float(np.median(pearson)) / CHI2_MEDIAN)


def _predict(own: tuple, days: np.ndarray, low: bool) -> float | None:
    """The jobs of a period on a day with ``own[1]`` jobs beside it, from ``days`` (each
    ``(period, beside)``): those beside times the median ratio of the days with jobs beside
    (at least `MIN_DAYS` - 1 of them: else None, the days are another regime, a provider before
    a failover); with none beside, the median of the days' periods (a batch) or, to confirm a
    drop (``low``), none (a group silent all around, a provider before it took over)."""
    ok = days[:, 1] > 0
    if not own[1]:
        return 0.0 if low else float(np.median(days[:, 0]))
    if ok.sum() < MIN_DAYS - 1:
        return None
    return float(own[1] * np.median(days[ok, 0] / days[ok, 1]))


def _level(season: Season, cells: np.ndarray, first: int, stop: int, spread: tuple) -> tuple:
    """How busy the group is on the day of hours ``[first, stop)``, relative to the season's
    usual day: its jobs over its expected jobs in the `AROUND` hours either side, weighed
    against 1 by how much days vary (the group's ``spread``: its hourly variance and
    `toolkit.incidents.season.day_spread` ``s``) and how uncertain those hours' ratio is
    (their variance over their expected count squared, ``u``): ``1 + w * (ratio - 1)``,
    ``w = s / (s + u)``; and the relative variance of the day's level left, ``s * u / (s +
    u)``."""
    observed, expected = season.observed[cells].sum(0), season.expected[cells].sum(0)
    around = np.r_[max(0, first - AROUND) : first, stop : min(len(observed), stop + AROUND)]
    usual = expected[around].sum()
    if not usual or not spread[1]:
        return 1.0, float(spread[1])
    uncertain = spread[0][around].sum() / usual**2
    weight = spread[1] / (spread[1] + uncertain)
    return float(1 + weight * (observed[around].sum() / usual - 1)), weight * uncertain


def expected_jobs(season: Season, cells: np.ndarray, first: int, stop: int, spread: tuple):
    """The jobs the group of ``cells`` was expected to send at each hour of the window, for a
    row of hours ``[first, stop)``: the season's at the level of its day (`_level`), and, for
    each of its workflows that also sends on other channels, what those channels' concurrent
    jobs ``o`` say (a channel or provider failing while its workflows keep triggering): ``k *
    o``, ``k`` the workflow's jobs here per job there in the history (`_follows`). The two are
    weighed by their variances: the season's, the hours' plus the day's level left (``v * e /
    E + r * e**2``); the concurrent one's, ``t * e * (1 + k)``, ``t`` measured on the history
    too. A workflow that stopped has no jobs on its other channels either: a workflow's own
    row is measured on the season alone. A season of two weeks (`Season.confirm`) also weighs
    what the window's other days say of the row's hours (`_with_other_days`)."""
    level, left = _level(season, cells, first, stop, spread)
    usual = season.expected[cells].sum(0)
    out, total = usual * level, np.maximum(usual, 1e-12)
    flow, channel = CELL.index("workflow"), CELL.index("channel")
    channels = {season.keys[cell][channel] for cell in cells}
    weeks = np.arange(season.reference.shape[1])
    own = _own_week(season, first)
    if own is not None:  # its own week is not its history
        weeks = weeks[weeks != own]
    for name in {season.keys[cell][flow] for cell in cells} - {None}:
        here = [cell for cell in cells if season.keys[cell][flow] == name]
        there = [n for n, key in enumerate(season.keys) if key[flow] == name and key[channel] not in channels]  # fmt: skip
        if not there:
            continue
        history = (season.reference[part][:, weeks].sum(0) for part in (here, there))
        k, tie = _follows(*history)
        e = season.expected[here].sum(0)
        with np.errstate(invalid="ignore", divide="ignore"):
            own = spread[0] * e / total + left * e**2
            weight = own / (own + tie * e * (1 + k))
        concurrent = season.observed[there].sum(0) * k
        usable = (e > 0) & np.isfinite(weight) & (k > 0)
        out += np.where(usable, weight * (concurrent - e * level), 0.0)
    return _with_other_days(season, cells, first, stop, out, spread) if season.confirm else out


def _with_other_days(season: Season, cells, first: int, stop: int, out: np.ndarray, spread):
    """``out`` (a group's expected jobs at each hour) with its hours ``[first, stop)`` weighed
    with what the window's other days say of them (`_against_days`), by their variances: the
    other week's count is one draw (its period's variance and day spread, as tested), the other
    days' has the dispersion they show."""
    days = _against_days(season.inside, season.observed[cells].sum(0), first, stop, low=False)
    week = float(out[first:stop].sum())
    if days is None or week <= 0:
        return out
    weekly = period_variance(spread, first, stop, week)
    daily = days[2] * max(days[1], 1.0)
    total = (week * daily + days[1] * weekly) / (weekly + daily)
    out = out.copy()
    out[first:stop] *= total / week
    return out


def _follows(here: np.ndarray, there: np.ndarray) -> tuple[float, float]:
    """How a workflow's jobs ``here`` follow its jobs ``there`` (weeks x 168 each): ``k``, its
    jobs here per job there, and ``t``, their departure from ``k`` times there, squared, over
    what it would be if each of its notifications sent here independently of there (``k *
    there * (1 + k)``): 1 then, 0 when each sends on both (the median over the hours with jobs
    there, as a chi-square variable's, `CHI2_MEDIAN`: the history's own incidents are few)."""
    if not there.sum():
        return 0.0, np.inf
    k = float(here.sum() / there.sum())
    fit = k * there
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = (here - fit) ** 2 / (fit * (1 + k))
    ratio = ratio[fit > 0]
    return k, float(np.median(ratio)) / CHI2_MEDIAN if ratio.size else np.inf


def one_per_cause(season: Season, rows: list[dict], alpha: float, rule: Evidence) -> list[dict]:
    """The volume rows left when each cause is one row (see the module docstring), a cause
    kept when it is its own week's (`confirmed`, at ``alpha``) and not its group's usual
    traffic an hour off (`an_hour_off`, under ``rule``)."""
    # a provider taking over is a shift, whatever its history: first, so that the drop of the
    # provider it replaced claims no other group's drop in its cells
    rows, kept = _shifts(season, _joined(season, rows)), []
    for row in sorted(rows, key=lambda r: (-round(r["share"], 1), ORDER[r["level"]], r["p_value"])):
        if any(_same_cause(season, row, other) and not _whole_of(season, row, other)
               for other in kept):  # fmt: skip
            continue
        # a silent channel rather than each of its providers
        kept = [other for other in kept
                if not (_same_cause(season, other, row) and _whole_of(season, row, other))]  # fmt: skip
        kept.append(row)
    kept = [row for row in kept if not _carried(season, row, kept)]
    kept = [row for row in kept if confirmed(season, row, alpha) and (
        row["kind"] == "traffic_shift" or not an_hour_off(season, row, alpha, rule))]  # fmt: skip
    return [row for row in kept if row["kind"] != "volume_spike" or _beyond_history(season, row)]


def at_the_same_time(season: Season, rows: list[dict]) -> list[dict]:
    """``rows`` (`one_per_cause`'s, spikes of send occasions: `triggered`) with drops (spikes)
    at the same time one row (`together`), and each channel or provider that is part of them
    gone (`_carried`)."""
    rows = together(rows)
    return [row for row in rows if not _carried(season, row, rows)]


def loaded_by_spikes(season: Season, rows: list[dict], moved: list[dict]) -> list[dict]:
    """``rows`` without each latency degradation, or error spike of a rate limit (``throttled``)
    or of a server error (``server_error``: a 5xx, unavailable), mostly at the time of a spike
    (of ``moved``: at least `LOADED` of its period) of a group that sends through its provider:
    the spike's load slowed (rate limited, overloaded) the provider's sends (a runaway loop, a
    campaign, a busy evening queues them all), one cause, so it is the spike's row's
    (``slowed``, ``limited``: named in its summary), not a row of its own; a burst's that is no
    spike (`triggered`: sent at once, like its group's usual ones), none. A slowdown (rate
    limit, server error) that began well before the spike, or more than `LOAD_SLOWS` times the
    usual slow threshold (on more than `LOAD_LIMITS` of the sends), is not its load; the sends
    of the workflow most of its slow sends are (a batch queues its own) aside."""
    spikes = [row for row in moved if row["kind"] == "volume_spike"]
    kept = []
    for row in rows:
        pair = (row["keys"].get("channel"), row["keys"].get("provider_id"))
        spike = next((spike for spike in spikes if _loaded(row) and within(row, spike) >= LOADED
                      and any(season.keys[cell][:2] == pair for cell in spike["cells"])), None)  # fmt: skip
        if spike is None:
            kept.append(row)
        else:
            slowed = row["kind"] == "latency_degradation"
            spike.setdefault("slowed" if slowed else "limited", []).append(row)
    return kept


def busy_hours(season: Season) -> np.ndarray:
    """The window's hours (their starts, ns) in which the service (all its cells) sent more than
    `LARGER` times the median of that hour of the day over its history and the window: a
    campaign's, a weekly batch's, a payday's; a provider's rate limits and server errors there
    are their load's unless they hold without them (`loaded_by_busy_hours`)."""
    counts, known, at = season.with_history(np.arange(len(season.keys)))
    day = (season.hours[0].hour + np.arange(len(counts)) - at) % DAY
    usual = np.array([np.median(counts[known & (day == hour)]) if (known & (day == hour)).any()
                      else 0.0 for hour in range(DAY)])  # fmt: skip
    now = slice(at, at + len(season.hours))
    busy = season.inside & (counts[now] > 0) & (counts[now] > LARGER * usual[day[now]])
    return season.hours[busy].asi8


def loaded_by_busy_hours(rows: list[dict], alpha: float) -> list[dict]:
    """``rows`` without each error spike of a rate limit or a server error on no more than
    `LOAD_LIMITS` of its sends (`_loaded`) that does not hold without the sends of the
    service's busy hours (`busy_hours`; ``unloaded``: its p-value without them, at ``alpha``):
    a weekly batch's or a campaign's hour overloaded the provider, as a spike's load does
    (`loaded_by_spikes`), with no spike to name it in."""
    return [row for row in rows if not (row["kind"] == "error_spike" and _loaded(row)
                                        and row.get("unloaded") is not None
                                        and row["unloaded"] > alpha)]  # fmt: skip


def queued_by_own_burst(season: Season, rows: list[dict], alpha: float) -> list[dict]:
    """``rows`` without each latency degradation whose slow sends are mostly one workflow's
    (``mostly``) that sent through the provider more than `LARGER` times its expected jobs in
    at least `LOADED` of the row's hours: its own burst (a payday's deposit wave larger than its
    history held) queued its sends, as a batch's do. A slowdown that holds without that
    workflow's sends (``without``: their p-value, at ``alpha``), or began well before them
    (they are in less than `LOADED` of its period, from ``mostly_since``), is the provider's."""
    return [row for row in rows if not (row["kind"] == "latency_degradation"
                                        and row.get("mostly") is not None
                                        and (row["without"] is None or row["without"] > alpha)
                                        and within(row, {"start": row["mostly_since"], "end": row["end"]}) >= LOADED
                                        and _own_burst(season, row))]  # fmt: skip


def _own_burst(season: Season, row: dict) -> bool:
    """Whether the cell of ``row``'s provider and its ``mostly`` workflow sent more than
    `LARGER` times its expected jobs in at least `LOADED` of the hours that ``row`` overlaps
    wholly inside the window."""
    cell = (row["keys"]["channel"], row["keys"]["provider_id"], row["mostly"])
    if cell not in season.keys:
        return False
    at = season.keys.index(cell)
    first = season.hours.searchsorted(row["start"].floor(HOUR))
    period = slice(first, season.hours.searchsorted(row["end"], side="right"))
    inside = season.inside[period]
    observed, expected = season.observed[at, period][inside], season.expected[at, period][inside]
    return bool(inside.any() and (observed > LARGER * expected).mean() >= LOADED)


def _loaded(row: dict) -> bool:
    """Whether ``row`` is of a kind a load makes, no more than a load makes it."""
    if row["kind"] == "latency_degradation":  # the others' sends: a batch queues its own
        return row["others_slower"] <= LOAD_SLOWS
    overloaded = row.get("throttled") or row.get("server_error")  # a rate limit, a 5xx
    return row["kind"] == "error_spike" and overloaded and row["rate"] <= LOAD_LIMITS


def within(row: dict, other: dict) -> float:
    """The share of ``row``'s period that lies within ``other``'s."""
    inside = min(row["end"], other["end"]) - max(row["start"], other["start"])
    return max(inside, pd.Timedelta(0)) / max(row["end"] - row["start"], pd.Timedelta(1))


def _carried(season: Season, row: dict, rows: list[dict]) -> bool:
    """Whether ``row``, a channel or provider, sent less (more) because a workflow it carries
    stopped (ran away): part of a workflow row's cause, not the other way round; it is then
    the workflow's row, whichever came first. Or it dropped (rose) while other groups did
    (`together`) and could not join them (it shares cells with them), overlapping them in time
    and departing no further from its expected jobs than they did: what lowered (raised) them
    all lowered (raised) it."""
    return row["level"] != "workflow" and "parts" not in row and any(
        other["level"] == "workflow" and _same_cause(season, row, other)
        and not _same_cause(season, other, row)
        or "parts" in other and _overlaps(row, other) and _no_further(row, other)
        for other in rows)  # fmt: skip


def _no_further(row: dict, other: dict) -> bool:
    """Whether ``row`` sent no smaller (a spike: no larger) a share of its expected jobs than
    ``other``."""
    here, there = row["events"] * other["expected"], other["events"] * row["expected"]
    return here >= there if row["kind"] == "volume_drop" else here <= there


def together(rows: list[dict]) -> list[dict]:
    """Drops (spikes) at the same time are one row: a cause upstream of them all (a public
    holiday, the app that triggers them down; a sale day), not a row per workflow, channel or
    provider it lowered (raised). Drops (spikes) each overlapping another in time become one row
    of all their cells and periods, its ``parts`` theirs (`impact` sums them): the workflows'
    first, then each channel or provider that shares no cell with them (a channel that does is
    part of them or its own row: `_carried`)."""
    order = {id(row): n for n, row in enumerate(rows)}
    groups: list[list[dict]] = []
    for row in sorted(rows, key=lambda row: row["level"] != "workflow"):
        near = [group for group in groups if any(_overlaps(row, other) for other in group)]
        joined = [row, *(other for group in near for other in group)]
        cells = [part["cells"] for part in joined]
        if not near or len(np.unique(np.concatenate(cells))) < sum(map(len, cells)):
            groups.append([row])
            continue
        groups = [group for group in groups if all(group is not one for one in near)]
        groups.append(joined)
    groups.sort(key=lambda group: min(order[id(row)] for row in group))
    return [group[0] if len(group) == 1 else _one_row(group) for group in groups]


def _overlaps(row: dict, other: dict) -> bool:
    """Whether ``row`` and ``other`` are drops (spikes) overlapping in time."""
    return (row["kind"] == other["kind"] in ("volume_drop", "volume_spike")
            and max(row["first"], other["first"]) < min(row["stop"], other["stop"]))  # fmt: skip


def _one_row(parts: list[dict]) -> dict:
    """The one row of drops (spikes) at the same time (`together`), its parts most missing
    (extra) first."""
    sign = 1 if parts[0]["kind"] == "volume_drop" else -1
    parts = sorted(parts, key=lambda part: sign * (part["events"] - part["expected"]))
    first, stop = min(part["first"] for part in parts), max(part["stop"] for part in parts)
    events, expected = (
        sum(part["events"] for part in parts),
        sum(part["expected"] for part in parts),
    )
    return {**parts[0], "level": "traffic", "keys": {}, "parts": parts, "first": first,
            "stop": stop, "cells": np.unique(np.concatenate([part["cells"] for part in parts])),
            "start": min(part["start"] for part in parts), "end": max(part["end"] for part in parts),
            "jobs": events, "events": events, "expected": expected,
            "rate": events / expected if expected else np.inf,
            "p_value": min(part["p_value"] for part in parts),
            "ongoing": any(part["ongoing"] for part in parts),
            "providers": [part["keys"]["provider_id"] for part in parts
                          if "provider_id" in part["keys"]]}  # fmt: skip


def an_hour_off(season: Season, row: dict, alpha: float, rule: Evidence) -> bool:
    """Whether ``row`` is its group's usual traffic an hour later or earlier (the clocks
    changed for summer time: a digest at 07:00 local moves an hour in UTC; a schedule moved):
    at least half of what it misses (sends too many) is too many (missing) in the hours either
    side, and no more than an hour's shift can move (`MOVED` times its busiest expected hour,
    those beside included: a backlog sent after a long stop is no schedule moved), or,
    against the expected counts an hour off, its hours and one either side with a count there
    (up to `Season.seen`) depart in no run (a count scan of them, ``rule`` both ways, at
    ``alpha`` over its own tests: all its sends moved, people's rhythm too). A group that
    stopped or ran away departs from its traffic at any hour."""
    observed = season.observed[row["cells"]].sum(0)
    expected = season.expected[row["cells"]].sum(0)
    hourly, spread = row["spread"]
    sign = 1 if row["kind"] == "volume_drop" else -1  # missing jobs are positive
    gap = sign * (expected - observed)
    beside = [hour for hour in (row["first"] - 1, row["stop"]) if 0 <= hour < len(gap)]
    missing = gap[row["first"] : row["stop"]].sum()
    most = expected[max(row["first"] - 1, 0) : row["stop"] + 1].max()  # beside included
    if np.maximum(-gap[beside], 0).sum() >= 0.5 * missing and missing <= MOVED * most:
        return True
    for late in (1, -1):  # the usual traffic an hour later, an hour earlier
        # the hours with a count whose hour off has one too: the last of a row still going on
        # is compared with the hour before it (an hour later), not dropped
        first = max(row["first"] - 1, max(late, 0))
        stop = min(row["stop"] + 1, season.seen + min(late, 0))
        hours = slice(first - late, stop - late)
        counts = observed[None, first:stop], expected[None, hours]
        variance = (hourly[None, hours], np.array([spread]))
        departs = False
        for low in (True, False):
            scan = CountScan(*counts, variance, replace(rule, low=low))
            departs |= any(pick.p_value * scan.tests <= alpha for pick in scan.first_round())
        if not departs:
            return True
    return False


def _joined(season: Season, rows: list[dict]) -> list[dict]:
    """Periods of one group and direction at most `GAP` hours apart (the scan's rounds over a
    long departure) joined into one; how far it departs (``share``, of the scan's own periods)
    is theirs, weighed by their expected jobs."""
    out: list[dict] = []
    for row in sorted(rows, key=lambda r: (r["scan"], str(r["keys"]), r["kind"], r["first"])):
        last = out[-1] if out else None
        if (last is not None and (last["scan"], last["keys"], last["kind"])
                == (row["scan"], row["keys"], row["kind"]) and row["first"] <= last["stop"] + GAP):  # fmt: skip
            stop = max(last["stop"], row["stop"])
            period, cells = slice(last["first"], stop), last["cells"]
            observed = int(season.observed[cells, period].sum())
            expected = float(expected_jobs(season, cells, last["first"], stop, last["spread"])[period].sum())  # fmt: skip
            weights = np.array([last["expected"], row["expected"]])
            share = float(np.average([last["share"], row["share"]], weights=weights)) if weights.sum() else max(last["share"], row["share"])  # fmt: skip
            last.update(stop=stop, end=max(last["end"], row["end"]), events=observed,
                        jobs=observed, expected=expected,
                        ongoing=(row if row["stop"] >= last["stop"] else last)["ongoing"],
                        p_value=min(last["p_value"], row["p_value"]), share=share,
                        small=last["small"] and row["small"])  # fmt: skip
        else:
            out.append(row)
    return out


def _score(observed, expected):
    """The Poisson log-likelihood ratio of ``observed`` against ``expected`` counts (at least
    `toolkit.incidents.scan.LEAST`, as a spike is scanned)."""
    expected = np.maximum(expected, LEAST)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(observed > 0, observed / expected, 1.0)
        return observed * np.log(ratio) - (observed - expected)


def _beyond_history(season: Season, row: dict) -> bool:
    """Whether a spike ``row`` departs more (its score) than its group's largest spike as long
    as it (or shorter) in each week of the reference against the others (the row's own week
    left out): bursts (fan-outs) make a quasi-Poisson tail too light, and a group's usual
    bursts are in its history too, a runaway is not. A busy week's days score more than an
    hour's loop can: they are not what an hour's spike is weighed against."""
    score = float(_score(np.float64(row["events"]), np.float64(row["expected"])))
    return score > _history_spikes(season, row)[0]


def _usual_burst(season: Season, row: dict) -> bool:
    """Whether a spike ``row`` adds no more than `LARGER` times the most jobs its group added
    over as many hours in a week of its history (as `_beyond_history` scores them): a campaign
    most weeks, whatever day and hour it is sent at."""
    return row["events"] - row["expected"] <= LARGER * _history_spikes(season, row)[1]


def _history_spikes(season: Season, row: dict) -> tuple[float, float]:
    """The largest score, and the most jobs added, of a spike of ``row``'s group as long as
    it (or shorter) in each week of its history (`_history_weeks`) against the others."""
    weekly = _history_weeks(season, row)
    hours = row["stop"] - row["first"]
    largest, most = 0.0, 0.0
    for week in range(weekly.shape[0]):
        expected = _runs(center(np.delete(weekly[None], week, axis=1))[0], hours)[0]
        observed, inside = _runs(weekly[week], hours)
        more = (observed > expected) & inside
        largest = max(largest, float(np.where(more, _score(observed, expected), 0.0).max()))
        most = max(most, float(np.where(more, observed - expected, 0.0).max()))
    return largest, most


def triggered(season: Season, spikes: list[dict], occasions: Callable[[dict], dict],
              alpha: float) -> list[dict]:  # fmt: skip
    """The ``spikes`` that are spikes of send occasions too (distinct minutes with a trigger,
    ``occasions`` as `on_occasions` takes them, `_occasion_p` at ``alpha``) or of repeats
    (notifications beyond one per subscriber: a loop re-triggering for a few subscribers, seen
    where the group already triggers in most minutes), or whose busiest hour sent more than
    `LARGER` times the group's busiest hour in its history (its own week left out): a loop or
    a crowd triggering one by one, or a fan-out larger than any the group made. A fan-out or a
    burst sent at once is one occasion, once per subscriber: its jobs make a tail heavier than
    their variance says (a small workflow's bursts of ten at an hour that usually sends one).
    A spike that adds no more than its group's usual bursts do (`_usual_burst`: a campaign most
    weeks, on whichever day, however many hours it was throttled over) is none either; a spike
    of repeats (a loop: they are at least `LOOP_SHARE` of what it added, `_mostly_repeats`) is
    kept whatever its size, and is the only spike of a group its history never saw send
    (`_sent_before`). With a history of counts only (no occasions), every spike but a small one
    or a usual burst stays. A ``small`` spike (fewer than two of the window's busiest hours) is kept only as a
    spike of repeats: a loop; a small workflow's burst at a quiet hour is neither larger than
    it is nor many more triggers."""
    levels: dict[str, list[dict]] = {}
    for row in spikes:
        levels.setdefault(row["level"], []).append(row["keys"])
    seasons = occasions(levels)
    kept = []
    for row in spikes:
        sent, frame, repeats = seasons[row["level"]]
        if not isinstance(sent, Season):
            if not row["small"] and not _usual_burst(season, row):
                kept.append(row)
            continue
        loop = _spike_of(repeats, row, alpha) and _mostly_repeats(repeats, frame, row)
        unusual = not row["small"] and _sent_before(season, row) and not _usual_burst(season, row)
        larger = unusual and _larger_than_any(season, row)
        more = unusual and _spike_of(sent, row, alpha)
        if loop or larger or more:
            kept.append(row)
    return kept


def _sent_before(season: Season, row: dict) -> bool:
    """Whether a spike ``row``'s group sent anything in its history (`_history_weeks`): one
    that never did (a monthly statement the history is too short to hold, a new workflow's
    first broadcast) has no usual size to be larger than, and is a spike only as a loop."""
    return bool(_history_weeks(season, row).sum() > 0)


def _mostly_repeats(repeats: Season, frame: pd.DataFrame, row: dict) -> bool:
    """Whether repeats make at least `LOOP_SHARE` of the notifications a spike ``row`` added
    (``frame``: the window's `toolkit.counts.occasion_counts`, ``repeats`` their season): a
    loop sends to the same people again; a crowd (a payday's deposits) to new people, a few
    of whom happen to get two in an hour."""
    observed, expected, *_ = _group_counts(repeats, row["level"], row["keys"])
    first, stop = row["first"], row["stop"]
    added = observed[first:stop].sum() - expected[first:stop].sum()
    bucket = frame["bucket"]
    hours = (
        (bucket >= repeats.hours[first]) & (bucket < repeats.hours[stop - 1] + HOUR)
    ).to_numpy()
    notes = frame.loc[_of(frame, row["keys"]) & hours, "notifications"].sum()
    extra = 1 - row["expected"] / row["events"] if row["events"] else 0.0  # of the jobs: added
    return bool(added >= LOOP_SHARE * notes * extra)


def _spike_of(sent: Season, row: dict, alpha: float) -> bool:
    """Whether ``row``'s group sent significantly many (``alpha``, `_occasion_p`) of ``sent``'s
    counts (occasions or repeats) in ``row``'s hours."""
    return _occasion_p(*_group_counts(sent, row["level"], row["keys"]), row["first"],
                       row["stop"]) <= alpha  # fmt: skip


def _group_counts(sent: Season, level: str, keys: dict) -> tuple:
    """The observed and expected counts, hourly variance and day spread of the group of
    ``keys`` in the season of ``level``'s occasions (or repeats) ``sent``."""
    named, observed, expected, (hourly, spread), _ = sent.groups(level)
    group = [tuple(key.values()) for key in named].index(tuple(keys.values()))
    return observed[group], expected[group], hourly[group], spread[group]


def _larger_than_any(season: Season, row: dict) -> bool:
    """Whether the busiest hour of a spike ``row`` sent more than `LARGER` times its group's
    busiest hour in the reference (the row's own week left out)."""
    weekly = _history_weeks(season, row)
    busiest = season.observed[row["cells"], row["first"] : row["stop"]].sum(0).max()
    return bool(weekly.size) and busiest > LARGER * weekly.max()


def _history_weeks(season: Season, row: dict) -> np.ndarray:
    """The reference of ``row``'s group (weeks x 168), its own week left out, after a
    baseline's weeks when the reference is the window's own (`Season.earlier`)."""
    weekly = season.reference[row["cells"]].sum(0)
    own = _own_week(season, row["first"])
    weekly = weekly if own is None else np.delete(weekly, own, axis=0)
    if season.earlier is None or not season.earlier.shape[1]:
        return weekly
    return np.concatenate([season.earlier[row["cells"]].sum(0), weekly])


def _own_week(season: Season, hour: int) -> int | None:
    """The week of the reference that the window's ``hour`` lies in, when the reference is the
    window's own weeks (None: a history before it, or an hour before its first whole week)."""
    if season.own is None:
        return None
    week = np.flatnonzero((season.own <= hour) & (hour < season.own + WEEK))
    return int(week[0]) if week.size else None


def _departure(season: Season, row: dict, cells: np.ndarray, period: slice) -> float:
    """The jobs missing (drop) or extra (spike) in ``cells`` over ``period``."""
    gap = _missing(season, cells, period)
    return gap if row["kind"] == "volume_drop" else -gap


def _missing(season: Season, cells, period: slice) -> float:
    """The jobs ``cells`` sent short of the season's over ``period`` (negative: beyond it)."""
    return float(season.expected[cells, period].sum() - season.observed[cells, period].sum())


def _same_cause(season: Season, row: dict, kept: dict) -> bool:
    """Whether most of ``row``'s missing (extra) jobs, as it counts them, are in ``kept``'s
    cells and period."""
    if row["kind"] != kept["kind"] or row["start"] >= kept["end"] or row["end"] <= kept["start"]:
        return False
    shared = np.intersect1d(row["cells"], kept["cells"])
    both = slice(max(row["first"], kept["first"]), min(row["stop"], kept["stop"]))
    whole = abs(row["expected"] - row["events"])
    return bool(len(shared)) and _departure(season, row, shared, both) >= 0.5 * whole


def _whole_of(season: Season, row: dict, part: dict) -> bool:
    """Whether ``row`` is the cause of ``part``, a row of some of its cells: over ``part``'s
    hours, its other cells' jobs are likelier (Poisson, `_score`) at ``part``'s own ratio of
    jobs to expected jobs than at their expected jobs (every provider of a channel stopped,
    not one). A row whose other cells expect no jobs there is not ``part``'s cause."""
    rest = np.setdiff1d(row["cells"], part["cells"])
    if not len(rest) or not np.isin(part["cells"], row["cells"]).all():
        return False
    period = slice(part["first"], part["stop"])
    expected = season.expected[rest, period].sum()
    usual = season.expected[part["cells"], period].sum()
    if expected <= 0 or usual <= 0:
        return False
    observed = np.float64(season.observed[rest, period].sum())
    ratio = season.observed[part["cells"], period].sum() / usual
    return bool(
        _score(observed, np.float64(expected * ratio)) < _score(observed, np.float64(expected))
    )


def _shifts(season: Season, rows: list[dict]) -> list[dict]:
    """A provider's spike while another provider of the same channel sends about as much less
    (its own drop row, if any, is dropped) is one ``traffic_shift`` row from that provider.
    The hour the traffic moved in holds both providers' jobs, so a spike of more than one hour
    is compared over the hours after its first (a Monitor then sees a failover as a shift from
    its first whole hour on, not as a spike)."""
    out, used = [], set()
    for spike in rows:
        if spike["kind"] != "volume_spike" or spike["level"] != "provider":
            continue
        channel, provider = spike["keys"]["channel"], spike["keys"]["provider_id"]
        period = slice(spike["first"], spike["stop"])
        moved = slice(spike["first"] + (spike["stop"] - spike["first"] > 1), spike["stop"])
        extra = _departure(season, spike, spike["cells"], moved)
        others = {key[1] for key in season.keys if key[0] == channel and key[1] != provider}
        best, missing = None, 0.0
        for other in others:
            cells = [n for n, key in enumerate(season.keys) if key[:2] == (channel, other)]
            gap = _missing(season, cells, moved)
            if gap > missing:
                best, missing, left = other, gap, cells
        if best is None or missing < SHIFT_SHARE * extra:
            continue
        seen = season.observed[left, period].sum()
        missing = max(missing, _missing(season, left, period))  # the hours before the move too
        used.add(id(spike))
        used |= {id(row) for row in rows if row["kind"] == "volume_drop"
                 and row["keys"] == {"channel": channel, "provider_id": best}}  # fmt: skip
        keys = {"channel": channel, "provider_id": best}
        out.append({**spike, "kind": "traffic_shift", "keys": keys, "to": spike,
                    "cells": np.array(left), "events": int(seen), "jobs": int(seen),
                    "expected": seen + missing})  # fmt: skip
    return out + [row for row in rows if id(row) not in used]


def counted_groups(rows: list[dict]) -> list[tuple]:
    """The groups and periods whose `toolkit.counts.group_counts` `impact` reads: each row's,
    each of its ``parts``' for drops (spikes) at the same time (`together`); a traffic shift's,
    the provider the traffic moved to (its workflows are those that moved)."""
    return [(part.get("to", part)["keys"], part["start"], part["end"])
            for row in rows for part in row.get("parts", [row])]  # fmt: skip


def impact(season: Season, rows: list[dict], counted: pd.DataFrame) -> None:
    """Each row's notifications (missing or extra jobs over the jobs a notification of the
    group has) and workflows (most jobs first; a drop's, most missing first: `_most_missing`),
    from `toolkit.counts.group_counts` of `counted_groups`; a drop's likely range of them too
    (`likely`). Drops (spikes) at the same time (``parts``, `together`) add theirs up, the
    likely range too (a day's level is all of theirs), their workflows named part by part, most
    missing (extra) first; spikes span their parts' jobs."""
    parts = [part for row in rows for part in row.get("parts", [row])]
    _impact(season, parts, counted)
    for row in rows:
        if "parts" in row:
            row["notifications"] = sum(part["notifications"] for part in row["parts"])
            if row["kind"] == "volume_drop":
                row["likely"] = tuple(
                    sum(part["likely"][end] for part in row["parts"]) for end in (0, 1)
                )
            else:
                row["start"] = min(part["start"] for part in row["parts"])
                row["end"] = max(part["end"] for part in row["parts"])
            row["workflows"] = list(
                dict.fromkeys(flow for part in row["parts"] for flow in part["workflows"])
            )


def _impact(season: Season, rows: list[dict], counted: pd.DataFrame) -> None:
    """`impact` of rows without parts, the ``n``-th from ``counted``'s columns ending ``_n``."""
    for n, row in enumerate(rows):
        jobs, notes = counted[f"jobs_{n}"].sum(), counted[f"notifications_{n}"].sum()
        per_note = jobs / notes if notes else 1.0
        # a shift's: what the provider it moved to sent beyond its expected (what moved; the
        # other's shortfall holds the traffic's own departure, and what was not sent at all)
        moved = row.get("to", row)
        gap = abs(moved["expected"] - moved["events"])
        row["notifications"] = round(gap / per_note)
        if row["kind"] == "volume_drop":
            row["likely"] = tuple(max(0, round(end / per_note)) for end in likely(row, gap))
        named = counted[counted["workflow"].notna()]
        ranked = _most_missing(season, row) if row["kind"] == "volume_drop" else []
        row["workflows"] = ranked or _most(named, f"period_{n}") or _most(named, f"jobs_{n}")
        if row["kind"] == "volume_spike" and counted[f"period_{n}"].sum():  # the jobs' own times
            row["start"], row["end"] = counted[f"first_{n}"].min(), counted[f"last_{n}"].max()


def _most_missing(season: Season, row: dict) -> list[str]:
    """The workflows of a drop's cells that sent less than expected over its hours, most
    missing first: a channel that dropped because one of its workflows stopped names it first,
    not the workflows that kept sending."""
    flow, period = CELL.index("workflow"), slice(row["first"], row["stop"])
    missing: dict[str, float] = {}
    for cell in row["cells"]:
        name = season.keys[cell][flow]
        if name is not None:
            gap = season.expected[cell, period].sum() - season.observed[cell, period].sum()
            missing[name] = missing.get(name, 0.0) + float(gap)
    ranked = sorted(missing.items(), key=lambda item: (-item[1], str(item[0])))
    return [str(name) for name, gap in ranked if gap > 0]


def likely(row: dict, gap: float) -> tuple[float, float]:
    """The range a drop's missing jobs ``gap`` likely (`LIKELY`) lies in: what its expected
    jobs would have been varies as the season says its period's count does (its hours'
    variance plus its group's day ``spread`` times the expected jobs squared, the day's
    level not counted as known: measured, the hours around a row tell its own hours' level
    less well than the level's variance says)."""
    variance = period_variance(row["spread"], row["first"], row["stop"], row["expected"])
    half = LIKELY * float(np.sqrt(variance))
    return gap - half, gap + half


def _most(counted: pd.DataFrame, column: str) -> list[str]:
    """The workflows with jobs in ``column``, most first."""
    ranked = counted[counted[column] > 0].sort_values([column, "workflow"], ascending=[False, True])
    return ranked["workflow"].astype(str).tolist()
