"""Alerts on traffic shaped like a real product's, as a Monitor with a store raises them.

For each seed and clock, the shaped traffic (`toolkit.sandbox.seed.shaped`: daily and weekly
rhythm, two time zones, a nightly batch, a morning digest, a weekly newsletter, a campaign, an
SMS failover and planted incidents of every kind) and its quiet variant are written into a
store. The last ``--days`` before the clock are then polled every ``--every`` minutes as a
`toolkit.Monitor` that has run for a day polls them: `find_incidents` on the last 24 hours
(the Monitor's ``keep``), the store's weeks before them as the baseline, and `toolkit.alerts`
firing on the incidents still going on. It prints every alert of the quiet sets (target: none),
every firing alert that is no planted incident (a failover may fire once, as a
``traffic_shift``; a spike and a drop of it are two alerts too many), and for each planted
incident the polls from its start to its first alert; then the totals per kind. ``--holiday
DAYS``: a public holiday that many days before each clock (a weekday at weekend level, the
office hours closed); the drops overlapping it are its alerts, printed apart (target: one per
set). ``--sale DAYS``: a sale day instead (people three times as active); its alerts are the
spikes overlapping it.

    python benchmarks/accuracy_alerts.py [--seeds 1 2 3] [--clocks ...] [--days 7] [--every 30]
                                         [--vary] [--holiday DAYS | --sale DAYS]
"""

from __future__ import annotations

import argparse
import tempfile
import time

import pandas as pd
from accuracy_incidents import (
    CLOCKS,
    MARKED,
    MIN_HITS,
    add_marked_day,
    marked_day,
    of_day,
    shaped_matches,
)

from toolkit.alerts import Alerts
from toolkit.incidents import find_incidents
from toolkit.sandbox.seed.shaped import shaped_traffic

#: The window a Monitor that has run a day holds (its ``keep``).
KEEP = pd.Timedelta(hours=24)


def poll(traffic, store, start: pd.Timestamp, end: pd.Timestamp, every: pd.Timedelta):
    """Poll ``[start, end]`` as the Monitor does; yield each poll's time, its incidents (the
    window's planted incidents too) and the alerts it raised."""
    alerts, at = Alerts(), start
    while at <= end:
        activity, planted = traffic.window(at - KEEP, at)
        rows = find_incidents(activity, baseline=store)
        yield at, rows, planted, alerts.evaluate(rows, at.to_pydatetime())
        at += every


def alerted(traffic, start: pd.Timestamp, end: pd.Timestamp, every: pd.Timedelta):
    """The first alert of each planted incident (by kind and start) and the firing alerts of
    none (time, summary, row), polling ``[start, end]`` with the rest of the traffic in a
    store."""
    first: dict[tuple, pd.Timestamp] = {}
    others = []
    with tempfile.TemporaryDirectory() as root:
        store = traffic.write_store(root, traffic.notifications["created_at"].min().floor("D"), end)
        for at, rows, planted, raised in poll(traffic, store, start, end, every):
            for alert in raised:
                if alert["state"] != "firing":
                    continue
                row = rows[rows["summary"] == alert["summary"]].iloc[0]
                hits = [(p["kind"], p["start"]) for p in planted if shaped_matches(row, p)]
                for hit in hits:
                    first.setdefault(hit, at)
                if not hits:
                    others.append((at, alert["summary"], row))
    return first, others


def where(incident: dict) -> str:
    return (
        incident["provider_id"] or incident["domain"] or incident["workflow"] or incident["channel"]
    )


def sweep(seeds, clocks, days: int, every: pd.Timedelta, vary: bool,
          marked: tuple[str, float] | None = None) -> None:  # fmt: skip
    fired_after: dict[str, list] = {}  # kind -> polls from the start to the first alert, or None
    other_alerts = {True: 0, False: 0}  # planted sets, quiet sets
    day_alerts = []  # per set
    began = time.perf_counter()
    for seed in seeds:
        for now in clocks:
            end = pd.Timestamp(now)
            start = end - pd.Timedelta(days=days)
            for incidents in (False, True):
                day = None if marked is None else (end - pd.Timedelta(days=marked[1])).normalize()
                on = {} if day is None else {MARKED[marked[0]][1]: [day]}
                traffic = shaped_traffic(seed, end, incidents=incidents, vary=vary, **on)
                label = f"seed {seed} now {now} {'planted' if incidents else 'quiet  '}"
                first, others = alerted(traffic, start, end, every)
                if day is not None:
                    off = [(at, summary) for at, summary, row in others
                           if of_day(row, day, marked[0])]  # fmt: skip
                    others = [other for other in others if other[:2] not in off]
                    day_alerts.append(len(off))
                    print(f"{label}: {len(off)} alerts of the {marked[0]}")
                    for at, summary in off:
                        print(f"    {marked[0]} {at:%a %b %d %H:%M}: {summary}")
                other_alerts[incidents] += len(others)
                print(f"{label}: {len(others)} alerts of no planted incident", flush=True)
                for at, summary, _ in others:
                    print(f"    alert {at:%a %b %d %H:%M}: {summary}")
                for incident in traffic.planted:
                    if incident["optional"] or (incident["hits"] >= start).sum() < MIN_HITS:
                        continue
                    key = (incident["kind"], incident["start"])
                    after = (
                        (first[key] - max(incident["start"], start)) / every
                        if key in first
                        else None
                    )
                    fired_after.setdefault(incident["kind"], []).append(after)
                    said = "no alert" if after is None else f"first alert after {after:.1f} polls"
                    print(f"    {incident['kind']} {where(incident)} "
                          f"{incident['start']:%b %d %H:%M}..{incident['end']:%b %d %H:%M}: {said}")  # fmt: skip
    print()
    print(f"{'planted kind':22} alerted  not alerted  median polls to the first alert  within two")
    for kind, afters in sorted(fired_after.items()):
        seen = [a for a in afters if a is not None]
        median = f"{pd.Series(seen).median():.1f}" if seen else "-"
        print(f"{kind:22} {len(seen):7}  {len(afters) - len(seen):11}  {median:>31}  "
              f"{sum(a <= 2 for a in seen):10}")  # fmt: skip
    print(f"quiet sets: {other_alerts[False]} alerts; planted sets: {other_alerts[True]} alerts of "
          f"no planted incident; {time.perf_counter() - began:.0f} s")  # fmt: skip
    if marked is not None:
        print(f"{marked[0]}, alerts per set: {day_alerts}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--clocks", nargs="+", default=list(CLOCKS))
    parser.add_argument("--days", type=int, default=7, help="days polled before each clock")
    parser.add_argument("--every", type=float, default=30, help="minutes between polls")
    parser.add_argument("--vary", action="store_true", help="draw the traffic's shape too")
    add_marked_day(parser)
    args = parser.parse_args()
    sweep(args.seeds, args.clocks, args.days, pd.Timedelta(minutes=args.every), args.vary,
          marked_day(args))  # fmt: skip


if __name__ == "__main__":
    main()
