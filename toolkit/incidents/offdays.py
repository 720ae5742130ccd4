"""Drops that are a day like the week's off days: a public holiday, not an incident.

On a holiday the people of a region use the product as on a weekend: each workflow they
trigger falls toward what it sends on the week's off days by the same share ``f`` (the share of
its senders on holiday), while schedules (a digest, a reminder batch) and the workflows that send
as much every day go out as usual. A stopped workflow, a channel or provider down, or an app
down that triggers several, falls to nothing, whatever the off days send. So a drop over hours
``[first, stop)`` is an off day (`share_off`) when, over those hours, each workflow ``w`` of the
season sent either its expected jobs ``E_w`` or ``E_w - f (E_w - F_w)``, ``F_w`` what its off
days send then (`off_day_jobs`), ``f`` fitted on the workflows that fell (their missing jobs over
their off-day difference, weighed by what each tells of it, at most 1), and so did each channel
(its cells' shares of their workflows'), departing in no group (negative binomial, its own
variance, corrected over the groups). A channel's providers are not tested alone: each may
carry a region of its own (SMS routed by country), whose holiday falls on it alone, and a
failover moves traffic between them; a provider part of the drop sent no less than its own
off days would (`_above_off_days`: a provider down sends nothing). The workflows that fell are
more than one, none holding most of what tells ``f`` (one workflow's own rhythm is its own
business), those but the drop's own most missing one fell significantly too (a holiday lowers
many: a stop is not corroborated by the noise of the others; each weighed by what it tells of
``f``, so a digest that varies much from week to week does not hide them), and still sent jobs
(a stop sends none); and ``f`` makes at least `EXPLAINED` of what each part of the drop misses, a provider
part's out of its channel's (what is left is a drop of its own). A partial outage of several
workflows people trigger, during a region's day, cannot be told from a holiday of the same
share.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import norm

from toolkit.incidents.scan import count_p_value
from toolkit.incidents.season import CELL, WEEK, Season, pooled

DAY = 24
#: The week's off days: at each hour of the day, the days of the week expecting the fewest
#: jobs then (a weekend's two).
OFF_DAYS = 2
#: The most of what tells ``f`` one workflow may hold for a drop to be an off day.
ONE_WORKFLOW = 0.8
#: The least share of what each part of a drop misses that its off day must make.
EXPLAINED = 0.5
#: Rounds of fitting ``f`` and the workflows that fell by it (`_fit`).
ROUNDS = 3


def slots(season: Season) -> np.ndarray:
    """The hour of the reference's week that each hour of the window is."""
    at = np.arange(len(season.hours))
    start = -int(season.own[0]) if season.own is not None else season.phase
    return (at + start) % WEEK


def off_day_jobs(season: Season, cells: list[np.ndarray] | None = None) -> np.ndarray:
    """What each set of ``cells`` (by default each workflow's, as `Season.groups`) is expected
    to send at each hour of the window on the week's off days (sets x hours): its expected
    count times the mean of the `OFF_DAYS` smallest of its usual counts at that hour of the day
    over the week's seven days, over its usual count at that hour of the week (each from the
    reference's weeks, `pooled`)."""
    if cells is None:
        cells = season.groups("workflow")[4]
    expected = np.stack([season.expected[mine].sum(0) for mine in cells])
    profile = pooled(np.stack([season.reference[mine].sum(0) for mine in cells]))  # x 168
    days = np.stack([np.roll(profile, -DAY * k, axis=1) for k in range(WEEK // DAY)])
    off = np.sort(days, axis=0)[:OFF_DAYS].mean(0)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(profile > 0, np.minimum(off / profile, 1.0), 1.0)
    return expected * ratio[:, slots(season)]


def _fit(sent, usual, gap, told) -> tuple[float, np.ndarray]:
    """``f`` and the workflows that fell by it (missing more than half of ``f`` times their
    off-day difference ``gap``), each weighed by ``told``, what it tells of ``f``: from all
    that fell toward their off days, then from those that fell by ``f`` (a few rounds)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(gap > 0, (usual - sent) / gap, 0.0)
    fell, share = gap > 0, 0.0
    for _ in range(ROUNDS):
        weight = np.where(fell, told, 0.0)
        if weight.sum() <= 0:
            return 0.0, np.zeros_like(fell)
        share = float(np.clip((weight * ratio).sum() / weight.sum(), 0.0, 1.0))
        fell = (gap > 0) & (ratio > share / 2)
    return share, fell


def share_off(season: Season, row: dict, alpha: float, least: int, off: np.ndarray) -> float | None:
    """The share ``f`` of the senders a drop ``row`` took to a day like the week's off days
    (see the module docstring; ``off``: `off_day_jobs`; ``least``: the fewest jobs the
    workflows that fell still send), or None when it is not such a day."""
    keys, observed, expected, (variance, spread), cells = season.groups("workflow")
    period = slice(row["first"], row["stop"])
    sent, usual = observed[:, period].sum(1), expected[:, period].sum(1)
    gap = usual - off[:, period].sum(1)
    varies = np.maximum(variance[:, period].sum(1) + spread * usual**2, 1e-9)
    told = gap**2 / varies
    share, fell = _fit(sent, usual, gap, told)
    if share <= 0 or fell.sum() < 2 or sent[fell].sum() < least:
        return None
    if told[fell].max() > ONE_WORKFLOW * told[fell].sum():
        return None
    # the others that fell, without the row's own most missing one, fell toward their off
    # days too (a holiday lowers many): the score test of a share above 0 over them, each
    # weighed by its off-day difference over its variance (a schedule that varies much tells
    # little)
    names = [key["workflow"] for key in keys]
    own = row["workflows"][0] if row.get("workflows") else None
    rest = fell & np.array([str(name) != own for name in names])
    if not rest.any():
        return None
    score = (gap * (usual - sent) / varies)[rest].sum() / np.sqrt(told[rest].sum())
    if norm.sf(score) > alpha:
        return None
    # each cell's part of its workflow's fall: its share of the workflow's expected jobs
    cell_usual = season.expected[:, period].sum(1)
    falls = np.zeros(len(season.keys))
    for w in np.flatnonzero(fell):
        falls[cells[w]] = share * gap[w] * cell_usual[cells[w]] / usual[w]
    parts = row.get("parts", [row])
    missing = [
        cell_usual[p["cells"]].sum() - season.observed[p["cells"], period].sum() for p in parts
    ]
    reach = [_reach(season, p) for p in parts]
    if any(falls[r].sum() < EXPLAINED * m for r, m in zip(reach, missing, strict=True)):
        return None
    if not _above_off_days(season, parts, period, alpha):
        return None
    tails = []
    for level in ("workflow", "channel"):  # a channel's providers may each carry a region's
        _, observed, expected, (variance, spread), members = season.groups(level)
        for g, mine in enumerate(members):
            e = expected[g, period].sum()
            if e <= 0:
                continue
            mean = max(e - falls[mine].sum(), 1e-9)
            phi = max(1.0, variance[g, period].sum() / e + spread[g] * mean)
            o = observed[g, period].sum()
            tails.append(count_p_value(float(o), float(mean), float(phi), low=o < mean))
    return None if min(tails) * 2 * len(tails) <= alpha else share


def _reach(season: Season, part: dict) -> np.ndarray:
    """The cells whose fall may make a drop's ``part``: its own, or a provider's channel's
    (SMS is routed by country: a region's holiday falls on its providers)."""
    if part["level"] != "provider":
        return part["cells"]
    at = CELL.index("channel")
    channels = {season.keys[cell][at] for cell in part["cells"]}
    return np.array([n for n, key in enumerate(season.keys) if key[at] in channels])


def _above_off_days(season: Season, parts: list[dict], period: slice, alpha: float) -> bool:
    """Whether no provider part of a drop sent significantly less than its off days do (a
    provider down sends nothing, whatever its region's off days send)."""
    providers = [p for p in parts if p["level"] == "provider"]
    if not providers:
        return True
    keys, _, expected, (variance, spread), _ = season.groups("provider")
    off = off_day_jobs(season, [p["cells"] for p in providers])[:, period].sum(1)
    for p, least in zip(providers, off, strict=True):
        g = keys.index(p["keys"])
        e = max(expected[g, period].sum(), 1e-9)
        phi = max(1.0, variance[g, period].sum() / e + spread[g] * least)
        sent = season.observed[p["cells"], period].sum()
        if count_p_value(float(sent), float(least), float(phi), low=True) <= alpha:
            return False
    return True


def off_day_drops(season: Season, rows: list[dict], alpha: float, least: int) -> tuple[list, list]:
    """``rows`` without their drops that are a day like the week's off days (`share_off`),
    and those drops, each with why (the set-aside sentence's end)."""
    if not any(row["kind"] == "volume_drop" for row in rows):
        return rows, []
    off = off_day_jobs(season)
    kept, aside = [], []
    for row in rows:
        share = share_off(season, row, alpha, least, off) if row["kind"] == "volume_drop" else None
        if share is None:
            kept.append(row)
            continue
        aside.append((row, f"a day like the week's off days for about {share:.0%} of its "
                           "senders (a public holiday?)"))  # fmt: skip
    return kept, aside
