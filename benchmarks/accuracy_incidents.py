"""Accuracy of `toolkit.find_incidents` on traffic shaped like a real product's, and on the
sandbox's planted incidents.

Shaped traffic (`toolkit.sandbox.seed.shaped`): for each seed and clock, six weeks of activity
with a daily and weekly rhythm, two time zones, a nightly batch, a morning digest, a weekly
newsletter, a one-off campaign, an SMS failover and planted incidents of every kind, and its
quiet variant (rhythm, batches and bursts only). Each window of 1, 7 and 28 days ending at the
clock is read with ``baseline=`` the four weeks before it (the 28-day window: none, its own
weeks; ``--alone``: every window without one, as a user with only that window reads it). A planted incident (at least `MIN_HITS` notifications in the window) is found when a row
has its kind, its provider (or workflow, channel, domain) and a window overlapping it; its impact
error is the row's notifications against the planted count. The campaign (a ``volume_spike``
row) and the failover (a ``traffic_shift`` row naming the provider it left) are tolerated, not
required. Every other row is extra. The quiet sets must give no row at all. It prints each miss,
extra row, impact more than 20% off and period set aside (``attrs["set_aside"]``), then the
totals per planted kind and per window length.
``--vary``: each seed also draws the traffic's shape (`toolkit.sandbox.seed.shaped.Shape`: night
and weekend levels, when mornings start, the zones' shares, how much days and hours vary,
fan-outs, the digest's and the newsletter's hours), rhythms the detector was never tuned on.
``--growth``: people's use grows (shrinks) by that share each week, so the weeks before a
window send less (more) than it. ``--holiday DAYS``: a public holiday that many days before each
clock (people use the product as on a weekend, the office hours are closed); a drop of no
channel overlapping it is its row, not an extra one, and each window that holds it should have
one such row, naming the workflows it quietened (one cause, one row), or none (set aside as a
day like the week's off days). ``--sale DAYS``:
a sale day instead (people use the product three times as much): a spike of no channel
overlapping it, and no planted incident (the campaign), is its row.

    python benchmarks/accuracy_incidents.py [--seeds 1 2 3] [--windows 1 7 28] [--alone] [--scale 1]
                                            [--clocks-back DAYS] [--vary] [--growth SHARE]
                                            [--holiday DAYS | --sale DAYS] [--sandbox]

Sandbox (``--sandbox``): for each seed and clock, the seed code plants every kind of incident (at different times, on
providers that change with the seed) and a quiet data set with none; the activity is built by
`toolkit.frames` from the seeded documents (what the service serves, without HTTP). A planted
incident is found when one row has its kind and provider, a window overlapping the planted one,
and notifications within 10% of the planted count; every other row is a false alarm. (A planted
volume_drop's count is the triggers the sandbox suppressed, redraws included, which overstates
the notifications missing; the last line also counts the incidents found in the right place
whatever their count.)

"""

from __future__ import annotations

import argparse
import time
from typing import Any

import pandas as pd
from common import seeded_documents

from toolkit.frames import activity_frames
from toolkit.incidents import find_incidents
from toolkit.sandbox.seed.shaped import shaped_traffic

#: Fewer notifications of a planted incident in a window than this: tolerated, not required.
MIN_HITS = 10
#: Lengths of the windows read, in days, and of the baseline before them.
WINDOWS = (1, 7, 28)
HISTORY = pd.Timedelta(days=28)
#: The kind of row each planted incident should be.
ROW_KIND = {"degradation": "error_spike", "campaign": "volume_spike", "failover": "traffic_shift"}

#: Clocks the sweep runs at: weekdays and weekends, day and night.
CLOCKS = ("2026-11-01T12:00:00Z", "2026-03-18T03:30:00Z", "2026-07-04T18:45:00Z")
#: Providers each kind is planted on, one per seed (any provider of the seeded integrations).
PROVIDERS = {
    "provider_outage": ("twilio", "sendgrid", "ses", "apns", "slack", "sns", "expo"),
    "error_spike": ("sendgrid", "twilio", "apns", "fcm", "expo", "ses", "chat-webhook"),
    "stale_credentials": ("apns", "slack", "expo", "fcm", "chat-webhook", "apns", "fcm"),
    "latency_degradation": ("apns", "sendgrid", "twilio", "slack", "fcm", "ses", "expo"),
    "volume_drop": ("sms", "in_app", "push", "email", "sms", "push", "in_app"),
}
DOMAINS = ("northwind.example", "gmail.com", "outlook.com", "initech.example", "yahoo.com")


def specs(seed: int) -> list[dict[str, Any]]:
    """Every kind once, at times and on providers that depend on the seed."""
    pick = {kind: options[seed % len(options)] for kind, options in PROVIDERS.items()}
    return [
        {"kind": "provider_outage", "provider_id": pick["provider_outage"], "start": "200h",
         "duration": "3h"},
        {"kind": "error_spike", "provider_id": pick["error_spike"], "start": "150h",
         "duration": "1h"},
        {"kind": "domain_bounces", "domain": DOMAINS[seed % len(DOMAINS)], "start": "100h",
         "duration": "6h"},
        {"kind": "volume_drop", "channel": pick["volume_drop"], "start": "60h", "duration": "6h"},
        {"kind": "latency_degradation", "provider_id": pick["latency_degradation"],
         "start": "290h", "duration": "4h"},
        {"kind": "stale_credentials", "provider_id": pick["stale_credentials"], "start": "30h"},
    ]  # fmt: skip


def seeded_activity(seed: int, now: str, notifications: int, incidents: Any = "default"):
    """The default environment's activity, as `read_activity` would return it, and what was
    planted in it."""
    records, planted = seeded_documents(
        seed, now, notifications, max(200, notifications // 10), incidents
    )
    before = pd.Timestamp(now)
    provenance = {"after": before - pd.Timedelta("14D"), "before": before}
    return activity_frames(records, provenance=provenance), planted


def matches(row: pd.Series, planted: dict, *, count: bool = True) -> bool:
    """Whether a found row is the planted incident (see the module docstring); ``count=False``
    leaves the notifications out of the comparison."""
    start, end = pd.Timestamp(planted["start"]), pd.Timestamp(planted["end"])
    where = (
        row["channel"] == planted["channel"]
        if planted["provider_id"] is None
        else row["provider_id"] == planted["provider_id"]
    )
    return (
        row["kind"] == planted["kind"]
        and where
        and row["started_at"] <= end
        and row["ended_at"] >= start
        and (
            not count
            or abs(row["notifications"] - planted["notifications"])
            <= 0.1 * planted["notifications"]
        )
    )


def score(
    found: pd.DataFrame, planted: list[dict], *, count: bool = True
) -> tuple[list[dict], list[int]]:
    """The planted incidents not found, and the rows matching no planted incident."""
    used: set[int] = set()
    missed = []
    for incident in planted:
        hits = [
            i
            for i, row in found.iterrows()
            if i not in used and matches(row, incident, count=count)
        ]
        if hits:
            used.add(hits[0])
        else:
            missed.append(incident)
    return missed, [i for i in found.index if i not in used]


def shaped_matches(row: pd.Series, planted: dict) -> bool:
    """Whether a found row is a planted incident of the shaped traffic: its kind, its place
    (provider, else domain, workflow or channel), overlapping windows."""
    kind = ROW_KIND.get(planted["kind"], planted["kind"])
    providers = set(row.get("providers") or []) | {row["provider_id"]}
    if pd.isna(row["channel"]):
        row = row.copy()
        row["channel"] = None
    if planted["provider_id"] is not None:
        where = planted["provider_id"] in providers
    elif planted["domain"] is not None:
        where = row["domain"] == planted["domain"]
    elif planted["workflow"] is not None:
        where = list(row["workflows"])[:1] == [planted["workflow"]]
    else:
        where = row["channel"] == planted["channel"] and pd.isna(row["provider_id"])
    return (
        row["kind"] == kind
        and where
        and row["started_at"] <= planted["end"]
        and row["ended_at"] >= planted["start"]
    )


#: The days ``--holiday`` and ``--sale`` put before each clock: the kind of their rows, and
#: the argument of `shaped_traffic` that makes them.
MARKED = {"holiday": ("volume_drop", "holidays"), "sale": ("volume_spike", "sales")}


def add_marked_day(parser: argparse.ArgumentParser) -> None:
    """``--holiday DAYS`` or ``--sale DAYS``: that day before each clock (`marked_day`)."""
    day = parser.add_mutually_exclusive_group()
    day.add_argument("--holiday", type=float, default=None, metavar="DAYS",
                     help="a public holiday DAYS days before each clock (a weekday at weekend level)")  # fmt: skip
    day.add_argument("--sale", type=float, default=None, metavar="DAYS",
                     help="a sale day DAYS days before each clock (people three times as active)")  # fmt: skip


def marked_day(args: argparse.Namespace) -> tuple[str, float] | None:
    """``("holiday", days)``, ``("sale", days)`` or None, from `add_marked_day`'s options."""
    return next(((what, getattr(args, what)) for what in MARKED if getattr(args, what) is not None), None)  # fmt: skip


def of_day(row: pd.Series, day: pd.Timestamp, what: str) -> bool:
    """Whether ``row`` is a drop (``what`` "holiday") or a spike ("sale") of no channel
    overlapping ``day`` (midnight UTC of its date), in any zone's local time (UTC-14 to
    UTC+14)."""
    return bool(
        row["kind"] == MARKED[what][0]
        and pd.isna(row["channel"])
        and row["started_at"] < day + pd.Timedelta(hours=38)
        and row["ended_at"] > day - pd.Timedelta(hours=14)
    )


def shaped_sweep(seeds, clocks, windows, alone: bool = False, scale: float = 1.0,
                 clocks_back: float | None = None, vary: bool = False,
                 growth: float = 0.0, marked: tuple[str, float] | None = None) -> None:  # fmt: skip
    """The shaped-traffic sweep (see the module docstring): per kind, found / missed / impact
    error, the extra rows by kind, and the quiet sets' rows by window length. ``scale``
    multiplies every rate (1: about 2,000 notifications a day); ``clocks_back``: summer time
    ends that many days before each clock (the second zone's a week later); ``vary``: each
    seed draws the traffic's shape too (`toolkit.sandbox.seed.shaped.Shape`); ``marked``: a
    public holiday (``("holiday", days)``) or a sale day (``("sale", days)``) that many days
    before each clock."""
    found_of: dict[str, list] = {}
    by_days: dict[int, list] = {days: [] for days in windows}  # (kind, impact error or None)
    extra_of: dict[str, int] = {}
    extra_days: dict[int, int] = dict.fromkeys(windows, 0)
    quiet_rows: dict[int, int] = dict.fromkeys(windows, 0)
    day_rows: dict[int, list[int]] = {days: [] for days in windows}  # per window holding it
    ranged: list[bool] = []  # whether a found drop's planted count is in its likely range
    stops: list[tuple] = []  # a whole workflow stop's impact errors: found, knowing its season
    took = []
    for seed in seeds:
        for now in clocks:
            end = pd.Timestamp(now)
            for incidents in (True, False):
                back = None if clocks_back is None else end - pd.Timedelta(days=clocks_back)
                day = None if marked is None else (end - pd.Timedelta(days=marked[1])).normalize()
                on = {} if day is None else {MARKED[marked[0]][1]: [day]}
                traffic = shaped_traffic(seed, end, scale=scale, incidents=incidents,
                                         clocks_back=back, vary=vary, growth=growth, **on)  # fmt: skip
                for days in windows:
                    after = end - pd.Timedelta(days=days)
                    activity, planted = traffic.window(after, end)
                    own = alone or days >= 28  # read alone: as a user with only the window
                    baseline = None if own else traffic.window(after - HISTORY, after)[0]
                    began = time.perf_counter()
                    rows = find_incidents(activity, baseline=baseline)
                    took.append(time.perf_counter() - began)
                    off = set()  # the marked day's rows
                    if day is not None and after < day + pd.Timedelta(days=1):
                        off = {i for i, row in rows.iterrows() if of_day(row, day, marked[0])
                               and not any(shaped_matches(row, p) for p in planted)}  # fmt: skip
                        day_rows[days].append(len(off))
                    label = (
                        f"seed {seed} now {now} {days:2}d {'planted' if incidents else 'quiet  '}"
                    )
                    for i in off:
                        print(f"{label}: {marked[0]} {rows.loc[i, 'summary']}")
                    for sentence in rows.attrs.get("set_aside", []):
                        print(f"{label}: set aside {sentence}")
                    if not incidents:
                        quiet_rows[days] += len(rows) - len(off)
                        print(f"{label}: {len(rows) - len(off)} rows")
                        for sentence in rows.drop(index=list(off))["summary"]:
                            print(f"    quiet row {sentence}")
                        continue
                    used: set[int] = set()
                    for incident in planted:
                        required = (
                            not incident["optional"] and incident["notifications"] >= MIN_HITS
                        )
                        hits = [i for i, row in rows.iterrows()
                                if i not in used and shaped_matches(row, incident)]  # fmt: skip
                        if hits:
                            used.add(hits[0])
                        if not required:
                            continue
                        impact = None
                        if hits:
                            impact = (
                                rows.loc[hits[0], "notifications"] / incident["notifications"] - 1
                            )
                            low, high = rows.loc[
                                hits[0], ["notifications_low", "notifications_high"]
                            ]
                            if not pd.isna(low):
                                ranged.append(low <= incident["notifications"] <= high)
                            usual = incident.get("usual")  # a workflow stop, wholly inside
                            if usual and incident["notifications"] == len(incident["hits"]):
                                stops.append((impact, usual / incident["notifications"] - 1))
                        found_of.setdefault(incident["kind"], []).append(impact)
                        by_days[days].append((incident["kind"], impact))
                        if impact is not None and abs(impact) > 0.2:
                            print(f"{label}: impact {impact:+.0%} {incident['kind']} "
                                  f"{rows.loc[hits[0], 'summary']}")  # fmt: skip
                        if not hits:
                            print(f"{label}: missed {incident['kind']} "
                                  f"{incident['provider_id'] or incident['domain'] or incident['workflow'] or incident['channel']} "
                                  f"{incident['start']:%b %d %H:%M}..{incident['end']:%b %d %H:%M} "
                                  f"({incident['notifications']} notifications)")  # fmt: skip
                    for i in rows.index.difference(list(used | off)):
                        extra_of[rows.loc[i, "kind"]] = extra_of.get(rows.loc[i, "kind"], 0) + 1
                        extra_days[days] += 1
                        print(f"{label}: extra  {rows.loc[i, 'summary']}")
    print()
    print(f"{'planted kind':22} found  missed  impact within 20%  median |impact error|")
    for kind, impacts in sorted(found_of.items()):
        hit = [abs(i) for i in impacts if i is not None]
        within = sum(i <= 0.2 for i in hit)
        median = f"{pd.Series(hit).median():.0%}" if hit else "-"
        print(
            f"{kind:22} {len(hit):5}  {len(impacts) - len(hit):6}  {within:5}/{len(hit):<11}  {median}"
        )
    print()
    print(
        f"{'window':8} found  missed  impact within 20%  extra  quiet rows  (volume_drop: found/missed/within 20%)"
    )
    for days, impacts in by_days.items():
        hit = [abs(i) for _, i in impacts if i is not None]
        drops = [i for kind, i in impacts if kind == "volume_drop"]
        drop_hit = [abs(i) for i in drops if i is not None]
        print(
            f"{days:>4} d   {len(hit):5}  {len(impacts) - len(hit):6}  "
            f"{sum(i <= 0.2 for i in hit):5}/{len(hit):<11}  {extra_days[days]:5}  {quiet_rows[days]:10}  "
            f"({len(drop_hit)}/{len(drops) - len(drop_hit)}/{sum(i <= 0.2 for i in drop_hit)})"
        )
    print(
        f"volume drops whose planted count is in their likely range: {sum(ranged)} of {len(ranged)}"
    )
    if stops:
        found, known = (pd.Series(errors).abs() for errors in zip(*stops, strict=True))
        print(f"workflow stops wholly in a window: {len(stops)}, impact within 20% (median "
              f"error): found {(found <= 0.2).sum()} ({found.median():.0%}), knowing each "
              f"workflow's season exactly {(known <= 0.2).sum()} ({known.median():.0%})")  # fmt: skip
    print(
        f"extra rows by kind: {dict(sorted(extra_of.items())) or 'none'} "
        f"(total {sum(extra_of.values())})"
    )
    print(
        "quiet sets, rows by window length: "
        + ", ".join(f"{d} d: {n}" for d, n in quiet_rows.items())
    )
    if marked is not None:
        print(f"{marked[0]}, windows holding it by its rows (0, 1, more): " + ", ".join(
            f"{d} d: {n.count(0)}/{n.count(1)}/{sum(k > 1 for k in n)}"
            for d, n in day_rows.items() if n))  # fmt: skip
    print(
        f"find_incidents took {sum(took):.1f} s over {len(took)} windows "
        f"(at most {max(took):.2f} s)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--clocks", nargs="+", default=list(CLOCKS))
    parser.add_argument("--windows", type=int, nargs="+", default=list(WINDOWS))
    parser.add_argument(
        "--sandbox", action="store_true", help="also run the sweep on the sandbox's seeded data"
    )
    parser.add_argument("--notifications", type=int, default=20_000)
    parser.add_argument(
        "--alone", action="store_true", help="read every window without baseline= (its own weeks)"
    )
    parser.add_argument(
        "--scale",
        type=float,
        default=1.0,
        help="multiply the shaped traffic's rates (1: about 2,000 notifications a day)",
    )
    parser.add_argument(
        "--clocks-back",
        type=float,
        default=None,
        metavar="DAYS",
        help="summer time ends DAYS before each clock (the second zone's a week later)",
    )
    parser.add_argument(
        "--vary",
        action="store_true",
        help="draw the traffic's shape from each seed too (night and weekend levels, zones, noise)",
    )
    parser.add_argument(
        "--growth",
        type=float,
        default=0.0,
        help="people's use grows by this share each week (negative: shrinks)",
    )
    add_marked_day(parser)
    args = parser.parse_args()
    shaped_sweep(args.seeds, args.clocks, args.windows, args.alone, args.scale, args.clocks_back,
                 args.vary, args.growth, marked_day(args))  # fmt: skip
    if args.sandbox:
        sandbox_sweep(args.seeds, args.clocks, args.notifications)


def sandbox_sweep(seeds, clocks, notifications) -> None:
    """The sandbox's seeded data: every kind planted, the default incidents, none."""
    planted_total = found_total = false_total = placed_total = 0
    for seed in seeds:
        for now in clocks:
            for plan in ("every kind", "default", "none"):
                incidents = specs(seed) if plan == "every kind" else plan
                activity, planted = seeded_activity(seed, now, notifications, incidents)
                began = time.perf_counter()
                found = find_incidents(activity)
                took = time.perf_counter() - began
                missed, false = score(found, planted)
                placed_total += len(planted) - len(score(found, planted, count=False)[0])
                planted_total += len(planted)
                found_total += len(planted) - len(missed)
                false_total += len(false)
                print(f"seed {seed} now {now} {plan:10}: {len(planted) - len(missed)}/"
                      f"{len(planted)} found, {len(false)} false ({took:.2f} s)")  # fmt: skip
                for incident in missed:
                    print(f"    missed {incident['kind']} {incident['provider_id']} "
                          f"{incident['start']}..{incident['end']} "
                          f"({incident['notifications']} notifications)")  # fmt: skip
                for index in false:
                    print(f"    row    {found.loc[index, 'summary']}")
    print(f"found {found_total}/{planted_total} planted incidents, {false_total} other rows "
          f"(target: all found, none other); {placed_total}/{planted_total} with the right kind, "
          "place and window whatever their count")  # fmt: skip


if __name__ == "__main__":
    main()
