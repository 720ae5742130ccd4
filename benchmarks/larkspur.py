"""Traffic of "Larkspur", a fictional project-management SaaS, to measure
`toolkit.incidents.find_incidents` on rhythms nobody tuned it on.

It was written apart from the detector's own generator (`toolkit.sandbox.seed.shaped`), matching
only the frame format of `toolkit.frames`, so its shapes were not chosen with the detector in
view. ``make(seed, now)`` draws the eight weeks before ``now`` (``days``) of:

- subscribers in four time zones (New York, Los Angeles, Berlin, Tokyo), their local hours
  following the real DST changes, each seed weighting the zones differently; heavy and light
  users; email domains: global ones plus each region's ISPs and companies;
- a daily and weekly rhythm per workflow: consumer use (an evening peak, a later and flatter
  weekend), business use (a lunch dip, weekends at 15%), a weekday-only business workflow held to
  9-17 local office hours (approvals, also with a lunch dip) and a flat one (security alerts);
- an hourly cron burst on the hour (chat digests), a twice-daily batch at 08:00 and 20:00 UTC
  (billing reminders) and a weekly report on Mondays at 07:00 local to opted-in subscribers;
- each workflow's popularity as a daily random walk (mean-reverting, AR(1)) over a slow
  growth, hourly overdispersion, and sends clustered in bursts (a comment thread);
- each channel's providers split 70/30 by subscriber, background failures by provider (transient
  errors retried after 30, 90 and 300 s, Slack rate-limiting the cron burst, dead and full
  mailboxes, invalid phone numbers, SMS undelivered more often at local night, dead push tokens,
  removed chat channels), and send latency by provider, slower under load.

With ``incidents=True`` four incidents are planted in the last days: a workflow that stops for
6 h (``volume_drop``), a runaway loop re-triggering another for 1 h (``volume_spike``,
``loop_mult`` times its usual volume), a 2 h provider outage (``provider_outage``: sms/twilio on
odd seeds, email/ses on even ones) and stale APNs credentials for 55% of the subscribers from
18 to 40 hours before ``now`` on (``stale_credentials``). The same seed gives the same data.

    draw = make(seed, now, incidents=True)
    activity, planted = draw.window(after, before)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from toolkit.sandbox.seed.shaped import Traffic

NS = 1_000_000_000
HOUR = 3600 * NS

ZONES = ("America/New_York", "America/Los_Angeles", "Europe/Berlin", "Asia/Tokyo")
#: Mean share of the subscribers in each zone (a seed draws its own around it).
ZONE_SHARES = (0.35, 0.15, 0.35, 0.15)
#: Notifications a day, by seed (any other seed: drawn between 1,000 and 30,000).
DAILY = {1: 1200, 2: 5000, 3: 14000, 4: 30000}

#: Email domains and their weights: everyone's, then each zone's own.
GLOBAL_DOMAINS = [
    ("gmail.com", 30), ("outlook.com", 10), ("yahoo.com", 6), ("hotmail.com", 4),
    ("icloud.com", 5), ("proton.me", 1.5), ("aol.com", 1), ("fastmail.com", 0.6),
    ("hey.com", 0.3), ("zoho.com", 0.5),
]  # fmt: skip
ZONE_DOMAINS = {
    "America/New_York": [("comcast.net", 2), ("att.net", 1.5), ("verizon.net", 1),
                         ("acme-corp.example", 4), ("globex.example", 3), ("hooli.example", 2)],
    "America/Los_Angeles": [("sbcglobal.net", 1), ("cox.net", 1), ("initrode.example", 3),
                            ("piedpiper.example", 2), ("vandelay.example", 1.5)],
    "Europe/Berlin": [("gmx.de", 4), ("web.de", 4), ("t-online.de", 3), ("orange.fr", 2),
                      ("free.fr", 1.5), ("libero.it", 1), ("btinternet.com", 1),
                      ("wonka.example", 3), ("stark.example", 2)],
    "Asia/Tokyo": [("yahoo.co.jp", 5), ("docomo.ne.jp", 3), ("ezweb.ne.jp", 1.5),
                   ("naver.com", 2), ("qq.com", 1.5), ("tyrell.example", 3),
                   ("umbrella.example", 2)],
}  # fmt: skip

#: Each channel's providers (in_app: the service itself); a subscriber keeps one.
PROVIDERS = {
    "email": ("sendgrid", "ses"),
    "sms": ("twilio", "plivo"),
    "push": ("fcm", "apns"),
    "chat": ("slack", "msteams"),
    "in_app": ("svc",),
}
#: Share of the subscribers on a channel's second provider.
SECOND_PROVIDER = 0.30
#: Median seconds a provider takes to send (at no load).
LATENCY = {"sendgrid": 0.9, "ses": 1.4, "twilio": 1.8, "plivo": 2.6, "fcm": 0.35, "apns": 0.5,
           "slack": 0.6, "msteams": 1.1, "svc": 0.05}  # fmt: skip
#: Chance a send meets a transient failure (retried), by provider.
TRANSIENT = {"sendgrid": 0.003, "ses": 0.006, "twilio": 0.004, "plivo": 0.008, "fcm": 0.008,
             "apns": 0.003, "slack": 0.002, "msteams": 0.005, "svc": 0.0005}  # fmt: skip
#: The same for Slack sends of the hourly cron burst (rate-limited: code 429).
SLACK_BURST_TRANSIENT = 0.012
#: Each channel's transient failure: code and text.
TRANSIENT_ERROR = {
    "email": ("421", "Service temporarily unavailable, try again later"),
    "sms": ("30008", "Unknown error"),
    "push": ("InternalServerError", "The push service encountered an error"),
    "chat": ("502", "Bad gateway"),
    "in_app": ("500", "Internal error"),
}
#: Chance a retry after a transient failure fails again.
RETRY_FAILS_AGAIN = 0.25
#: Seconds before each retry.
BACKOFF = (30.0, 90.0, 300.0)
#: Chance an SMS is reported undelivered after the send, by provider; times
#: `SMS_NIGHT_FACTOR` from midnight to 06:00 local.
SMS_UNDELIVERED = {"twilio": 0.012, "plivo": 0.025}
SMS_NIGHT_FACTOR = 2.5

#: Local-hour profiles (index: the local hour).
CONSUMER = np.array([0.25, 0.15, 0.10, 0.08, 0.08, 0.12, 0.30, 0.60, 0.85, 0.90, 0.95, 1.00,
                     0.72, 0.85, 0.95, 0.95, 1.00, 1.05, 1.15, 1.30, 1.40, 1.30, 1.00, 0.55])  # fmt: skip
CONSUMER_WEEKEND = np.array([0.35, 0.22, 0.14, 0.10, 0.08, 0.09, 0.15, 0.30, 0.55, 0.80, 1.00,
                             1.10, 0.90, 1.00, 1.10, 1.10, 1.10, 1.15, 1.20, 1.30, 1.35, 1.25,
                             1.05, 0.65])  # fmt: skip
BUSINESS = np.array([0.03, 0.02, 0.02, 0.02, 0.03, 0.05, 0.12, 0.40, 0.90, 1.20, 1.30, 1.25,
                     0.65, 0.85, 1.20, 1.20, 1.05, 0.80, 0.45, 0.30, 0.22, 0.15, 0.08, 0.05])  # fmt: skip
OFFICE = np.zeros(24)
OFFICE[9:17] = [0.9, 1.2, 1.3, 0.6, 0.9, 1.2, 1.1, 0.8]  # 9-17 local, a lunch dip

#: Workflows: channels, share of the daily volume, rhythm and (people-driven ones) the chance a
#: send ends its cluster (1: no clusters; the mean cluster size is its inverse). Rhythms:
#: "consumer", "business" (weekends at 15%), "office" (weekdays 9-17 only), "flat", "hourly"
#: (a cron burst on the hour), "batch" (`BATCH_HOURS` UTC) and "weekly" (`WEEKLY_REPORT`).
WORKFLOWS = {
    "task-assigned": (("in_app", "email", "push"), 0.22, "business", 1.0),
    "comment-mention": (("in_app", "push"), 0.25, "consumer", 0.6),
    "login-code": (("sms",), 0.12, "consumer", 1.0),
    "approval-request": (("email", "chat"), 0.08, "office", 0.8),
    "security-alert": (("email", "push", "sms"), 0.01, "flat", 1.0),
    "sync-digest-hourly": (("chat", "in_app"), 0.14, "hourly", None),
    "billing-reminder": (("email", "sms"), 0.10, "batch", None),
    "weekly-report": (("email",), None, "weekly", None),
}
BATCH_HOURS = (8, 20)
#: The weekly report: Mondays at this local time, to the opted-in subscribers, over 25 minutes.
WEEKLY_REPORT = pd.Timedelta(hours=7)
#: The people-driven rhythms, by the mean of their weekday profile (the rates divide by it).
RHYTHM_MEAN = {"consumer": CONSUMER.mean(), "business": BUSINESS.mean(), "office": OFFICE.mean(),
               "flat": 1.0}  # fmt: skip


@dataclass
class Draw(Traffic):
    """Larkspur's traffic as `toolkit.frames` frames and the planted incidents (``kind``,
    ``channel``, ``provider_id``, ``workflow``, ``start``, ``end`` and ``hits``, the creation
    times of the notifications each one hit); ``window`` cuts a read out of it as the
    detector's own generator does (only that plumbing is shared); ``info``: the seed's daily
    volume, zone shares, subscribers and growth."""

    info: dict[str, Any] = field(default_factory=dict)


@dataclass
class Subscribers:
    """Who the subscribers are, one array entry each."""

    zone: np.ndarray  # index into ZONES
    domain: np.ndarray
    provider: dict[str, np.ndarray]  # index into PROVIDERS[channel]
    reachable: dict[str, np.ndarray]  # has the channel
    dead_mailbox: np.ndarray
    bad_number: np.ndarray
    stale_device: np.ndarray
    chat_gone: np.ndarray
    activity: np.ndarray  # how much each one uses the product
    weekly_opt_in: np.ndarray
    ids: np.ndarray
    emails: np.ndarray

    def __len__(self) -> int:
        return len(self.zone)


@dataclass
class Hours:
    """The hour grid the rates are drawn on, in UTC and each zone's local time."""

    start: pd.DatetimeIndex
    day: np.ndarray  # days since the first hour
    local_hour: list[np.ndarray]  # per zone, fractional
    weekend: list[np.ndarray]  # per zone


def make(
    seed: int,
    now,
    days: int = 56,
    incidents: bool = False,
    load_latency: float = 0.4,
    loop_mult: float = 5.0,
) -> Draw:
    """``days`` of Larkspur before ``now`` (see the module docstring); ``load_latency``: how much
    slower a send is in the busiest hours (latency times ``1 + load_latency * load``, load 1
    at the 98th percentile of hourly volume); ``loop_mult``: the planted loop's volume, in times
    the workflow's usual volume in that hour of the week."""
    rng = np.random.default_rng([seed, 9173])
    now = pd.Timestamp(now)
    start = now - pd.Timedelta(days=days)
    daily = DAILY.get(seed, int(rng.uniform(1000, 30000)))
    zone_shares = rng.dirichlet(np.array(ZONE_SHARES) * 40)
    subscribers = _subscribers(rng, seed, int(max(500, daily * 0.6)), zone_shares)

    grid = pd.date_range(start.floor("h") - pd.Timedelta(hours=1), now.ceil("h"), freq="h")
    grid = grid.as_unit("ns")
    local = [grid.tz_convert(zone) for zone in ZONES]
    hours = Hours(
        start=grid,
        day=((grid - grid[0]).total_seconds() // 86400).astype(int).to_numpy(),
        local_hour=[np.asarray(t.hour + t.minute / 60, float) for t in local],
        weekend=[np.asarray(t.day_of_week >= 5) for t in local],
    )
    n_days = hours.day.max() + 1
    growth = rng.uniform(0.0, 0.004)
    overall = np.exp(growth * np.arange(n_days) + _ar1(rng, n_days, 0.85, 0.03))
    level = {workflow: overall * np.exp(_ar1(rng, n_days, 0.9, 0.045)) for workflow in WORKFLOWS}
    times, who, flows = _sends(rng, daily, zone_shares, subscribers, hours, level, start, now)

    planted = []
    if incidents:
        plant_rng = np.random.default_rng([seed, 555])
        times, who, flows, planted = _plant_volume(
            plant_rng, seed, now, len(subscribers), loop_mult, times, who, flows
        )
    order = np.argsort(times, kind="stable")
    times, who, flows = times[order], who[order], flows[order]
    keep = (times >= start.value) & (times < now.value)
    times, who, flows = times[keep], who[keep], flows[keep]

    outage = stale = None
    if incidents:
        channel, provider = ("sms", "twilio") if seed % 2 else ("email", "ses")
        began = (
            now.floor("D")
            - pd.Timedelta(days=int(plant_rng.integers(2, 5)))
            + pd.Timedelta(minutes=int(plant_rng.integers(13 * 60, 18 * 60)))
        )
        outage = dict(kind="provider_outage", channel=channel, provider_id=provider,
                      workflow=None, start=began, end=began + pd.Timedelta(hours=2))  # fmt: skip
        began = (now - pd.Timedelta(hours=float(plant_rng.uniform(18, 40)))).floor("min")
        stale = dict(kind="stale_credentials", channel="push", provider_id="apns",
                     workflow=None, start=began, end=now)  # fmt: skip
        stale["subscribers"] = rng.random(len(subscribers)) < 0.55

    hour_of = ((times - grid[0].value) // HOUR).astype(int)
    load = np.bincount(hour_of, minlength=len(grid)).astype(float)
    load = load / np.quantile(load, 0.98)

    job_rng = np.random.default_rng([seed, 77])
    jobs, details, hits = [], [], {"provider_outage": [], "stale_credentials": []}
    for channel in ("in_app", "email", "push", "sms", "chat"):
        channel_jobs, channel_details = _channel_jobs(
            job_rng, channel, subscribers, hours, times, who, flows, hour_of,
            load * load_latency, outage, stale, hits,
        )  # fmt: skip
        channel_details["job"] += sum(len(j) for j in jobs)
        jobs.append(channel_jobs)
        details.append(channel_details)
    notes, jobs_frame, execution = _frames(
        seed, now, start, subscribers, times, who, flows, jobs, details
    )
    if incidents:
        del stale["subscribers"]
        for incident in (outage, stale):
            found = hits[incident["kind"]]
            incident["hits"] = np.sort(np.concatenate(found)) if found else np.zeros(0)
        planted += [outage, stale]
        for incident in planted:
            incident["hits"] = pd.to_datetime(np.asarray(incident["hits"], np.int64), utc=True)
    info = dict(daily=daily, regions=dict(zip(ZONES, np.round(zone_shares, 3), strict=True)),
                subscribers=len(subscribers), growth=growth)  # fmt: skip
    return Draw(notes, jobs_frame, execution, planted, info)


def _subscribers(rng, seed: int, count: int, zone_shares: np.ndarray) -> Subscribers:
    """``count`` subscribers: zone, email domain, providers, channels, what fails for them."""
    zone = rng.choice(len(ZONES), count, p=zone_shares)
    domain = np.empty(count, dtype=object)
    for z, name in enumerate(ZONES):
        domains = GLOBAL_DOMAINS + ZONE_DOMAINS[name]
        weights = np.array([d[1] for d in domains], float)
        members = np.flatnonzero(zone == z)
        picked = rng.choice(len(domains), len(members), p=weights / weights.sum())
        domain[members] = np.array([d[0] for d in domains], dtype=object)[picked]
    draw = rng.random((count, 4))
    provider = {
        channel: (draw[:, i] < SECOND_PROVIDER).astype(int)
        for i, channel in enumerate(("email", "sms", "push", "chat"))
    }
    provider["in_app"] = np.zeros(count, int)
    reachable = {"email": np.ones(count, bool), "in_app": np.ones(count, bool)}
    reachable["push"] = rng.random(count) < 0.65
    reachable["sms"] = rng.random(count) < 0.8
    reachable["chat"] = rng.random(count) < 0.35
    company = np.char.endswith(domain.astype(str), ".example")
    numbers = np.arange(count).astype(str)
    return Subscribers(
        zone=zone,
        domain=domain,
        provider=provider,
        reachable=reachable,
        dead_mailbox=rng.random(count) < np.where(company, 0.002, 0.006),
        bad_number=rng.random(count) < 0.004,
        stale_device=rng.random(count) < 0.02,
        chat_gone=rng.random(count) < 0.01,
        activity=rng.lognormal(0, 1.0, count),
        weekly_opt_in=rng.random(count) < 0.5,
        ids=np.char.add(f"u{seed}-", np.char.zfill(numbers, 6)),
        emails=np.char.add(np.char.add(np.char.add("user", numbers), "@"), domain.astype(str)),
    )


def _sends(rng, daily, zone_shares, subscribers, hours, level, start, now):
    """Every notification's creation time (ns), subscriber index and workflow, unsorted."""
    parts = []
    grid_ns = hours.start.asi8
    n_hours = len(grid_ns)
    in_zone = [np.flatnonzero(subscribers.zone == z) for z in range(len(ZONES))]
    weight_in_zone = [subscribers.activity[i] / subscribers.activity[i].sum() for i in in_zone]
    rate_of_day = {workflow: daily_level[hours.day] for workflow, daily_level in level.items()}

    for workflow, (_, share, rhythm, cluster_end) in WORKFLOWS.items():
        if rhythm not in RHYTHM_MEAN:
            continue
        for z in range(len(ZONES)):
            local_hour, weekend = hours.local_hour[z], hours.weekend[z]
            if rhythm == "consumer":
                shape = np.where(weekend, _profile(CONSUMER_WEEKEND, local_hour) * 1.1,
                                 _profile(CONSUMER, local_hour))  # fmt: skip
            elif rhythm == "business":
                shape = _profile(BUSINESS, local_hour) * np.where(weekend, 0.15, 1.0)
            elif rhythm == "office":
                shape = OFFICE[np.floor(local_hour).astype(int) % 24] * ~weekend
            else:
                shape = np.ones(n_hours)
            rate = (
                daily * share * zone_shares[z] / 24 * shape / RHYTHM_MEAN[rhythm]
                * rate_of_day[workflow]
            )  # fmt: skip
            rate = rate * rng.lognormal(-0.5 * 0.12**2, 0.12, n_hours)  # hourly overdispersion
            mean_size = 1 / cluster_end
            clusters = rng.poisson(rate / mean_size)
            n_clusters = clusters.sum()
            if n_clusters == 0:
                continue
            size = rng.geometric(cluster_end, n_clusters)
            begins = np.repeat(grid_ns, clusters) + (rng.random(n_clusters) * HOUR).astype(np.int64)
            t = np.repeat(begins, size) + (rng.exponential(90, size.sum()) * NS).astype(np.int64)
            who = in_zone[z][rng.choice(len(in_zone[z]), size.sum(), p=weight_in_zone[z])]
            parts.append((t, who, np.full(len(t), workflow, dtype=object)))

    # the hourly cron burst, to chat users, over the first minutes of each hour
    workflow = "sync-digest-hourly"
    chat_users = np.flatnonzero(subscribers.reachable["chat"])
    size = rng.poisson(daily * WORKFLOWS[workflow][1] / 24 * rate_of_day[workflow]
                       * rng.lognormal(0, 0.05, n_hours))  # fmt: skip
    delay = np.minimum(rng.exponential(25, size.sum()), 240)
    t = np.repeat(grid_ns, size) + (delay * NS).astype(np.int64)
    who = chat_users[rng.integers(0, len(chat_users), size.sum())]
    parts.append((t, who, np.full(len(t), workflow, dtype=object)))

    # the twice-daily batch, to anyone, over 6 minutes
    workflow = "billing-reminder"
    batch = np.isin(hours.start.hour, BATCH_HOURS)
    per_batch = WORKFLOWS[workflow][1] / len(BATCH_HOURS)
    size = rng.poisson(daily * per_batch * level[workflow][hours.day[batch]])
    t = np.repeat(grid_ns[batch], size) + (rng.random(size.sum()) * 360 * NS).astype(np.int64)
    parts.append((t, rng.integers(0, len(subscribers), size.sum()),
                  np.full(len(t), workflow, dtype=object)))  # fmt: skip

    # the weekly report, Monday morning local time in each zone, to 97% of the opted-in
    workflow = "weekly-report"
    for z, zone in enumerate(ZONES):
        days = pd.date_range((start - pd.Timedelta(days=8)).tz_convert(zone).normalize(),
                             now.tz_convert(zone), freq="D")  # fmt: skip
        mondays = days[days.day_of_week == 0] + WEEKLY_REPORT
        members = np.flatnonzero((subscribers.zone == z) & subscribers.weekly_opt_in)
        for monday in mondays:
            chosen = members[rng.random(len(members)) < 0.97]
            t = monday.value + (rng.random(len(chosen)) * 1500 * NS).astype(np.int64)
            parts.append((t, chosen, np.full(len(t), workflow, dtype=object)))

    return tuple(np.concatenate([part[i] for part in parts]) for i in range(3))


def _plant_volume(rng, seed, now, n_subscribers, loop_mult, times, who, flows):
    """The planted stop (6 h of a workflow removed) and loop (1 h of a workflow re-triggered
    for 30 subscribers): the sends with them, and the two incidents."""
    stopped, looped = (
        ("task-assigned", "comment-mention") if seed % 2 else ("comment-mention", "task-assigned")
    )
    began = (
        now.floor("D")
        - pd.Timedelta(days=int(rng.integers(1, 4)))
        + pd.Timedelta(hours=12)
        + pd.Timedelta(minutes=int(rng.integers(0, 120)))
    )
    ended = began + pd.Timedelta(hours=6)
    gone = (flows == stopped) & (times >= began.value) & (times < ended.value)
    drop = dict(kind="volume_drop", channel=None, provider_id=None, workflow=stopped,
                start=began, end=ended, hits=times[gone])  # fmt: skip
    times, who, flows = times[~gone], who[~gone], flows[~gone]

    began = (
        now.floor("D")
        - pd.Timedelta(days=int(rng.integers(1, 3)))
        + pd.Timedelta(minutes=int(rng.integers(9 * 60, 19 * 60)))
    )
    ended = began + pd.Timedelta(hours=1)
    usual = np.mean([
        ((flows == looped) & (times >= (began - pd.Timedelta(days=7 * k)).value)
         & (times < (ended - pd.Timedelta(days=7 * k)).value)).sum()
        for k in range(1, 5)
    ])  # fmt: skip  # the same hour of the week, the four weeks before
    extra = max(40, int(round(loop_mult * usual)))
    loop_subscribers = rng.choice(n_subscribers, 30, replace=False)
    t = began.value + (rng.random(extra) * HOUR).astype(np.int64)
    spike = dict(kind="volume_spike", channel=None, provider_id=None, workflow=looped,
                 start=began, end=ended, hits=np.sort(t))  # fmt: skip
    times = np.concatenate([times, t])
    who = np.concatenate([who, loop_subscribers[rng.integers(0, 30, extra)]])
    flows = np.concatenate([flows, np.full(extra, looped, dtype=object)])
    return times, who, flows, [drop, spike]


def _channel_jobs(rng, channel, subscribers, hours, times, who, flows, hour_of, slowdown,
                  outage, stale, hits):  # fmt: skip
    """One channel's jobs (``row``: the notification's index) and their execution details
    (``job``: the job's index in the channel); adds the notifications the planted outage and
    stale credentials hit to ``hits``."""
    workflows = [w for w, (channels, *_) in WORKFLOWS.items() if channel in channels]
    rows = np.flatnonzero(np.isin(flows, workflows) & subscribers.reachable[channel][who])
    if channel == "email":  # login codes go by email to those without a phone
        no_phone = (flows == "login-code") & ~subscribers.reachable["sms"][who]
        rows = np.union1d(rows, np.flatnonzero(no_phone))
    m = len(rows)
    sub = who[rows]
    provider = np.array(PROVIDERS[channel], dtype=object)[subscribers.provider[channel][sub]]
    created = times[rows]
    begin = created + (rng.uniform(0.05, 0.6, m) * NS).astype(np.int64)
    median = np.array([LATENCY[p] for p in provider])
    latency = rng.lognormal(np.log(median), 0.55) * (1 + slowdown[hour_of[rows]])
    first_try = begin + (latency * NS).astype(np.int64)

    # background transient failures: a run of failing attempts, then (mostly) a success
    chance = np.array([TRANSIENT[p] for p in provider])
    if channel == "chat":
        burst = (flows[rows] == "sync-digest-hourly") & (provider == "slack")
        chance = np.where(burst, SLACK_BURST_TRANSIENT, chance)
    failing = np.where(rng.random(m) < chance, rng.geometric(1 - RETRY_FAILS_AGAIN, m), 0)
    transient_code = np.full(m, TRANSIENT_ERROR[channel][0], dtype=object)
    transient_text = np.full(m, TRANSIENT_ERROR[channel][1], dtype=object)
    if channel == "chat":
        limited = burst & (failing > 0)
        transient_code[limited], transient_text[limited] = "429", "ratelimited"

    # permanent failures before the send (not retried), and after it (bounces, receipts)
    refused = np.zeros(m, bool)
    refused_code = np.full(m, None, dtype=object)
    refused_text = np.full(m, None, dtype=object)
    bounced = np.zeros(m, bool)
    bounced_code = np.full(m, None, dtype=object)
    bounced_text = np.full(m, None, dtype=object)
    if channel == "email":
        dead = subscribers.dead_mailbox[sub]
        bounced[dead], bounced_code[dead] = True, "5.1.1"
        bounced_text[dead] = "550 5.1.1 The email account that you tried to reach does not exist"
        full = ~dead & (rng.random(m) < 0.002)
        bounced[full], bounced_code[full] = True, "4.2.2"
        bounced_text[full] = "452 4.2.2 Mailbox full"
    elif channel == "sms":
        bad = subscribers.bad_number[sub]
        refused[bad], refused_code[bad] = True, "21211"
        refused_text[bad] = "Invalid 'To' Phone Number"
        zone = subscribers.zone[sub]
        local_hour = np.zeros(m)
        for z in range(len(ZONES)):
            mine = zone == z
            local_hour[mine] = hours.local_hour[z][hour_of[rows[mine]]]
        night = (local_hour >= 0) & (local_hour < 6)
        chance = np.array([SMS_UNDELIVERED[p] for p in provider])
        chance = chance * np.where(night, SMS_NIGHT_FACTOR, 1.0)
        undelivered = ~bad & (rng.random(m) < chance)
        bounced[undelivered], bounced_code[undelivered] = True, "30003"
        bounced_text[undelivered] = "Unreachable destination handset"
    elif channel == "push":
        dead = subscribers.stale_device[sub]
        refused[dead], refused_code[dead] = True, "Unregistered"
        refused_text[dead] = "The device token is inactive for the specified topic"
    elif channel == "chat":
        gone = subscribers.chat_gone[sub]
        refused[gone], refused_code[gone] = True, "channel_not_found"
        refused_text[gone] = "Value passed for channel was invalid"

    tries = len(BACKOFF) + 1
    attempt_at = np.zeros((m, tries), np.int64)
    attempt_at[:, 0] = first_try
    for k, backoff in enumerate(BACKOFF):
        wait = backoff * rng.uniform(0.95, 1.15, m) * NS
        attempt_at[:, k + 1] = attempt_at[:, k] + wait.astype(np.int64)
    fails = np.arange(tries)[None, :] < failing[:, None]

    # the planted outage (every attempt inside it fails, retried) and stale credentials
    in_outage = np.zeros_like(fails)
    if outage and outage["channel"] == channel:
        on = provider == outage["provider_id"]
        in_outage = (
            on[:, None] & (attempt_at >= outage["start"].value) & (attempt_at < outage["end"].value)
        )
        fails = fails | in_outage
    if stale and stale["channel"] == channel:
        hit = (
            (provider == stale["provider_id"])
            & stale["subscribers"][sub]
            & (begin >= stale["start"].value)
        )
        refused[hit], refused_code[hit] = True, "403"
        refused_text[hit] = "InvalidProviderToken: the provider authentication token is invalid"
        bounced[hit] = False
        hits["stale_credentials"].append(created[hit])
    fails[refused] = False

    first_ok = np.where(fails.all(1), tries, fails.argmin(1))
    reached = np.arange(tries)[None, :] <= np.minimum(first_ok, tries - 1)[:, None]
    shown_failures = fails & reached & ~refused[:, None]
    outage_hit = (in_outage & reached).any(1) & ~refused
    if outage and outage["channel"] == channel:
        hits["provider_outage"].append(created[outage_hit])
    code = np.where(outage_hit, "503", transient_code)
    text = np.where(outage_hit, "Service Unavailable", transient_text)
    ok = (first_ok < tries) & ~refused
    success_at = attempt_at[np.arange(m), np.minimum(first_ok, tries - 1)]
    bounce = ok & bounced
    bounce_at = success_at + (rng.uniform(5, 120, m) * NS).astype(np.int64)

    job = np.arange(m)
    failed_job, failed_try = np.nonzero(shown_failures)
    events = [
        (job, begin, "Pending", np.full(m, None, dtype=object)),
        (failed_job, attempt_at[failed_job, failed_try], "Failed", code[failed_job]),
        (job[refused], first_try[refused], "Failed", refused_code[refused]),
        (job[ok], success_at[ok], "Success", np.full(ok.sum(), None, dtype=object)),
        (job[bounce], bounce_at[bounce], "Failed", bounced_code[bounce]),
    ]
    retried = shown_failures.any(1)
    error_code = np.where(
        refused, refused_code, np.where(bounce, bounced_code, np.where(retried, code, None))
    )
    error_text = np.where(
        refused, refused_text, np.where(bounce, bounced_text, np.where(retried, text, None))
    )
    failed = refused | ~ok | bounce
    last = np.where(
        refused,
        first_try,
        np.where(bounce, bounce_at, np.where(ok, success_at, attempt_at[:, -1])),
    )
    final = np.where(failed, "failed", "delivered" if channel in ("email", "sms") else "sent")
    jobs = pd.DataFrame({
        "row": rows, "type": channel, "final_status": final.astype(object),
        "provider_id": provider, "error_code": error_code, "error_text": error_text,
        "first_at": begin, "last_at": last,
    })  # fmt: skip
    details = pd.DataFrame({
        "job": np.concatenate([e[0] for e in events]),
        "created_at": np.concatenate([e[1] for e in events]),
        "status": np.concatenate([np.full(len(e[0]), e[2], dtype=object) for e in events]),
        "code": np.concatenate([e[3] for e in events]),
    })  # fmt: skip
    return jobs, details


def _frames(seed, now, start, subscribers, times, who, flows, jobs, details):
    """The notifications, jobs and execution details frames, as `toolkit.frames` gives them:
    what happens at or after ``now`` is not there yet (its jobs ``queued``)."""
    ids = np.char.add(f"n{seed}-", np.arange(len(times)).astype(str))
    jobs = pd.concat(jobs, ignore_index=True)
    job_ids = np.char.add(f"j{seed}-", np.arange(len(jobs)).astype(str))
    details = pd.concat(details, ignore_index=True)
    details = details[details["created_at"] < now.value]
    job_of = details["job"].to_numpy()
    raw = ('{"code": "' + details["code"].astype("string") + '"}').to_numpy()
    execution = pd.DataFrame({
        "job_id": pd.array(job_ids[job_of], dtype="string"),
        "notification_id": pd.array(ids[jobs["row"].to_numpy()[job_of]], dtype="string"),
        "status": pd.array(details["status"].to_numpy(), dtype="string"),
        "created_at": pd.to_datetime(details["created_at"].to_numpy(), utc=True),
        "raw": pd.array(raw, dtype="string"),
    }).sort_values("created_at", kind="stable").reset_index(drop=True)  # fmt: skip
    last = jobs["last_at"].to_numpy()
    final = jobs["final_status"].to_numpy(dtype=object).copy()
    final[last >= now.value] = "queued"
    last = np.minimum(last, now.value - 1)
    first = jobs["first_at"].to_numpy()
    jobs_frame = pd.DataFrame({
        "notification_id": pd.array(ids[jobs["row"].to_numpy()], dtype="string"),
        "type": pd.array(jobs["type"].to_numpy(), dtype="string"),
        "final_status": pd.array(final, dtype="string"),
        "provider_id": pd.array(jobs["provider_id"].to_numpy(), dtype="string"),
        "error_code": pd.array(jobs["error_code"].to_numpy(), dtype="string"),
        "error_text": pd.array(jobs["error_text"].to_numpy(), dtype="string"),
        "job_id": pd.array(job_ids, dtype="string"),
        "first_execution_at": pd.to_datetime(first, utc=True),
        "last_execution_at": pd.to_datetime(last, utc=True),
        "duration_s": (last - first) / 1e9,
    })  # fmt: skip
    notes = pd.DataFrame({
        "notification_id": pd.array(ids, dtype="string"),
        "created_at": pd.to_datetime(times, utc=True),
        "subscriber_id": pd.array(subscribers.ids[who], dtype="string"),
        "subscriber_email": pd.array(subscribers.emails[who], dtype="string"),
        "workflow_identifier": pd.array(flows.astype(str), dtype="string"),
    })  # fmt: skip
    notes.attrs = {"after": start.isoformat(), "before": now.isoformat()}
    return notes, jobs_frame, execution


def _profile(profile: np.ndarray, local_hour: np.ndarray) -> np.ndarray:
    """A 24-point hourly profile at fractional local hours, linearly interpolated (each point
    at the middle of its hour)."""
    x = (local_hour - 0.5) % 24
    i = np.floor(x).astype(int)
    f = x - i
    return profile[i] * (1 - f) + profile[(i + 1) % 24] * f


def _ar1(rng, n: int, phi: float, sd: float) -> np.ndarray:
    """A stationary AR(1) series of length ``n``."""
    x = np.zeros(n)
    x[0] = rng.normal(0, sd / np.sqrt(1 - phi**2))
    for i in range(1, n):
        x[i] = phi * x[i - 1] + rng.normal(0, sd)
    return x
