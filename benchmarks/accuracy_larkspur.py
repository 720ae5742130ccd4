"""Accuracy of `toolkit.find_incidents` on Larkspur's traffic (`larkspur`), written apart from
the detector's own generator: rhythms nobody tuned it on.

For each seed and clock it draws eight weeks of quiet traffic and the same traffic with four
planted incidents (a workflow stopping for 6 h, a runaway loop for 1 h, a 2 h provider outage,
stale APNs credentials). Each window of 1, 7 and 28 days ending at the clock is read with
``baseline=`` the 28 days before it; ``28nb`` is the 28-day window read without one. A planted
incident with notifications in the window is found by the first row of its kind at its place
(its workflow for a volume row; else its channel and provider, among the row's ``providers``)
whose time overlaps it, give or take `SLACK`; its impact error is the row's notifications against
the planted count. Other rows at the same place and time are related, not extra; every other
row is extra. The quiet traffic should give no row at all.

It prints each quiet row, each planted incident missed or found with its impact more than 20%
off, each extra row, each significant period set aside as a load (``attrs["set_aside"]``),
then the totals per planted kind and per window, the extra and related rows by kind, and the
time `find_incidents` took. A window `find_incidents` raises on is printed
and counted, its planted incidents left out of the totals.

    python benchmarks/accuracy_larkspur.py [--seeds 1 2 3 4] [--clocks weekday night weekend]
                                           [--windows 1 7 28 28nb] [--load-latency 0.4]
                                           [--loop-mult 5]

Seeds 1 to 4 send about 1,200, 5,000, 14,000 and 30,000 notifications a day.
"""

from __future__ import annotations

import argparse
import time
import traceback
from typing import Any

import pandas as pd
from accuracy_incidents import ROW_KIND
from larkspur import make

from toolkit.incidents import find_incidents

#: Clocks the sweep runs at (the end of every window).
CLOCKS = {
    "weekday": pd.Timestamp("2026-11-04T13:00Z"),  # a Wednesday midday, after both DST ends
    "night": pd.Timestamp("2026-06-18T03:00Z"),  # a Thursday, 03:00 UTC (Berlin's night)
    "weekend": pd.Timestamp("2026-03-15T10:00Z"),  # a Sunday: US DST began Mar 8, EU's not yet
}
#: Windows read: their length in days; ``28nb``: 28 days without baseline.
WINDOWS = {"1": 1, "7": 7, "28": 28, "28nb": 28}
#: Days drawn before each clock (the longest window and its baseline).
DAYS = 56
HISTORY = pd.Timedelta(days=28)
#: How far a row's time may lie from a planted incident's and still overlap it.
SLACK = pd.Timedelta(minutes=45)
#: Impact errors beyond this are printed.
IMPACT_TOLERANCE = 0.2


def workflows(row: pd.Series) -> list[str]:
    """The workflows a row names."""
    names = row.get("workflows")
    if names is None or (not isinstance(names, (list, tuple)) and pd.isna(names)):
        return []
    return [str(name) for name in names]


def at_place(row: pd.Series, planted: dict[str, Any]) -> bool:
    """Whether a row is about the planted incident's place and overlaps its time: a workflow's
    volume row naming its workflow, else a row of its channel naming its provider."""
    started, ended = row["started_at"], row["ended_at"]
    if pd.isna(started) or pd.isna(ended):
        return False
    if not (started <= planted["end"] + SLACK and ended >= planted["start"] - SLACK):
        return False
    if planted["workflow"]:
        return planted["workflow"] in workflows(row) and str(row["kind"]).startswith(
            ("volume", "traffic")
        )
    others = row.get("providers")
    providers = [row["provider_id"], *(others if isinstance(others, (list, tuple)) else [])]
    return str(row["channel"]) == planted["channel"] and planted["provider_id"] in [
        str(provider) for provider in providers
    ]


def match(rows: pd.DataFrame, planted: dict[str, Any]) -> tuple[Any, list[Any]]:
    """The index of the row reporting the planted incident (its kind, at its place and time),
    else None, and those of the other rows at its place and time (related)."""
    found, related = None, []
    for i, row in rows.iterrows():
        if not at_place(row, planted):
            continue
        if row["kind"] == ROW_KIND.get(planted["kind"], planted["kind"]) and found is None:
            found = i
        else:
            related.append(i)
    return found, related


def line(row: pd.Series) -> str:
    """A row in one line: kind, channel, provider, workflows, notifications and summary."""
    names = ",".join(workflows(row)) or "-"
    return (
        f"{row['kind']:<20} ch={row['channel']!s:<6} prov={row['provider_id']!s:<9} "
        f"wf={names:<22} n={row['notifications']:>6} | {row['summary']}"
    )


def where(planted: dict[str, Any]) -> str:
    """The planted incident's place and time."""
    place = planted["workflow"] or f"{planted['channel']}/{planted['provider_id']}"
    return f"{planted['kind']} {place} {planted['start']:%b %d %H:%M}..{planted['end']:%b %d %H:%M}"


def window_name(window: str) -> str:
    """``1d``, ``7d``, ``28d`` or ``28nb`` (28 days, no baseline)."""
    return f"{window}d" if window.isdigit() else window


def sweep(make, clocks, seeds, windows, load_latency: float = 0.4, loop_mult: float = 5.0) -> None:
    """The sweep (see the module docstring), printing rows as it goes, then the totals: each
    seed's draws by ``make`` (`larkspur.make`'s signature) at each clock of ``clocks`` (name:
    Timestamp)."""
    impacts: dict[str, list] = {}  # planted kind: impact error of each, None when missed
    by_window: dict[str, list] = {window: [] for window in windows}
    extra: dict[str, int] = {}
    extra_by_window = dict.fromkeys(windows, 0)
    related: dict[str, int] = {}
    quiet = dict.fromkeys(windows, 0)
    aside = dict.fromkeys(windows, 0)  # significant periods read as a load (``set_aside``)
    took = []
    failed = []  # labels of the windows find_incidents raised on
    for seed in seeds:
        for clock, end in clocks.items():
            for incidents in (False, True):
                began = time.perf_counter()
                draw = make(seed, end, DAYS, incidents=incidents, load_latency=load_latency,
                            loop_mult=loop_mult)  # fmt: skip
                mode = "planted" if incidents else "quiet"
                print(f"seed {seed} {clock} ({end:%a %Y-%m-%d %H:%M} UTC) {mode}: "
                      f"{len(draw.notifications):,} notifications in {DAYS} days, drawn in "
                      f"{time.perf_counter() - began:.0f} s", flush=True)  # fmt: skip
                for window in windows:
                    after = end - pd.Timedelta(days=WINDOWS[window])
                    activity, planted = draw.window(after, end)
                    baseline = None if window == "28nb" else draw.window(after - HISTORY, after)[0]
                    label = f"seed {seed} {clock:7} {window_name(window):>4} {mode:7}"
                    began = time.perf_counter()
                    try:
                        rows = find_incidents(activity, baseline=baseline)
                    except Exception as error:  # a failure is a result too
                        at = traceback.extract_tb(error.__traceback__)[-1]
                        failed.append(label)
                        print(f"{label}: find_incidents FAILED {type(error).__name__}: {error} "
                              f"({at.filename.rsplit('/', 1)[-1]}:{at.lineno}); "
                              f"{len(planted)} planted not scored", flush=True)  # fmt: skip
                        continue
                    took.append(time.perf_counter() - began)
                    for sentence in rows.attrs.get("set_aside", []):  # read as a load
                        aside[window] += 1
                        print(f"{label}: set aside {sentence}")
                    if not incidents:
                        quiet[window] += len(rows)
                        print(f"{label}: {len(rows)} rows", flush=True)
                        for summary in rows["summary"]:
                            print(f"    quiet row {summary}")
                        continue
                    used: set[Any] = set()
                    for incident in planted:
                        found, near = match(rows, incident)
                        used.update(near)
                        impact = None
                        if found is not None:
                            used.add(found)
                            impact = rows.loc[found, "notifications"] / incident["notifications"]
                            impact -= 1
                            if abs(impact) > IMPACT_TOLERANCE:
                                print(f"{label}: impact {impact:+.0%} {where(incident)} "
                                      f"({incident['notifications']} planted): "
                                      f"{rows.loc[found, 'summary']}")  # fmt: skip
                        else:
                            print(f"{label}: missed {where(incident)} "
                                  f"({incident['notifications']} notifications)")  # fmt: skip
                        for i in near:
                            kind = rows.loc[i, "kind"]
                            related[kind] = related.get(kind, 0) + 1
                            print(f"    related {line(rows.loc[i])}")
                        impacts.setdefault(incident["kind"], []).append(impact)
                        by_window[window].append(impact)
                    for i in rows.index.difference(list(used)):
                        kind = rows.loc[i, "kind"]
                        extra[kind] = extra.get(kind, 0) + 1
                        extra_by_window[window] += 1
                        print(f"{label}: extra {line(rows.loc[i])}")
                    print(f"{label}: {len(planted)} planted, {len(rows)} rows", flush=True)
    print()
    print(f"{'planted kind':20} found  missed  impact within 20%  median |impact error|")
    for kind, errors in sorted(impacts.items()):
        print(f"{kind:20} {_totals(errors)}")
    print()
    print(
        f"{'window':8} found  missed  impact within 20%  median |impact error|  extra  quiet rows"
    )
    for window, errors in by_window.items():
        print(
            f"{window_name(window):8} {_totals(errors)}  {extra_by_window[window]:5}  {quiet[window]:10}"
        )
    print()
    print(f"extra rows by kind: {dict(sorted(extra.items())) or 'none'} (total {sum(extra.values())})")  # fmt: skip
    print(f"related rows by kind (another kind at a planted incident's place and time): "
          f"{dict(sorted(related.items())) or 'none'} (total {sum(related.values())})")  # fmt: skip
    print("quiet rows by window: " + ", ".join(f"{window_name(w)}: {n}" for w, n in quiet.items()))
    print("set aside as a load by window: "
          + ", ".join(f"{window_name(w)}: {n}" for w, n in aside.items()))  # fmt: skip
    if failed:
        print(f"find_incidents FAILED on {len(failed)} windows: " + "; ".join(failed))
    if took:
        print(f"find_incidents took {sum(took):.1f} s over {len(took)} windows "
              f"(at most {max(took):.2f} s)")  # fmt: skip


def _totals(errors: list) -> str:
    """Found, missed, impact within 20% and median absolute impact error, as table cells."""
    hit = [abs(error) for error in errors if error is not None]
    within = sum(error <= IMPACT_TOLERANCE for error in hit)
    median = f"{pd.Series(hit).median():.0%}" if hit else "-"
    return f"{len(hit):5}  {len(errors) - len(hit):6}  {within:5}/{len(hit):<11}  {median:>20}"


def cli(make, clocks: dict, seeds: list[int], description: str) -> None:
    """The sweep's command line (see the module docstring) over ``make``'s traffic at
    ``clocks`` (name: Timestamp), ``seeds`` by default."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--seeds", type=int, nargs="+", default=seeds)
    parser.add_argument("--clocks", nargs="+", choices=list(clocks), default=list(clocks))
    parser.add_argument("--windows", nargs="+", choices=list(WINDOWS), default=list(WINDOWS))
    parser.add_argument(
        "--load-latency",
        type=float,
        default=0.4,
        help="how much slower sends are in the busiest hours (0: latency independent of load)",
    )
    parser.add_argument(
        "--loop-mult",
        type=float,
        default=5.0,
        help="the planted loop's volume, in times the workflow's usual volume in that hour",
    )
    args = parser.parse_args()
    chosen = {name: clocks[name] for name in args.clocks}
    sweep(make, chosen, args.seeds, args.windows, args.load_latency, args.loop_mult)


def main() -> None:
    cli(make, CLOCKS, [1, 2, 3, 4], __doc__.splitlines()[0])


if __name__ == "__main__":
    main()
