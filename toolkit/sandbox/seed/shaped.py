"""Traffic shaped like a real product's, as activity frames, with planted incidents.

`shaped_traffic(seed, now)` draws weeks of delivery activity ending at ``now``: a daily and
weekly rhythm (nights at about a tenth of the peak, weekends at a third) for users in two time
zones, chat sent only in office hours, a nightly batch, a morning digest in each zone, a weekly
newsletter, short bursts (topic fan-outs) that make counts vary more than a Poisson law says,
background failures and retries. ``incidents=True`` adds a one-off campaign (ten times the usual
email for two hours), a failover of SMS from one provider to another, and planted incidents of
every kind (``PLANTED``); ``incidents=False`` is the quiet variant (rhythm, batches and bursts
only); ``holidays=`` and ``sales=`` add public holidays and sale days. Provider, workflow and
domain names and every time are drawn from the seed, so that a detector cannot be tuned to them.

Everything is a pure function of the arguments; the frames hold the columns
`toolkit.metrics.REQUIRED_COLUMNS` names (what a store keeps), with the provenance of a read of
the whole span in ``attrs``. `Traffic.window` cuts the read of a shorter window.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

#: Provider names each channel's providers are drawn from (two email, two SMS, two push).
PROVIDER_POOL = {
    "email": ("sendgrid", "ses", "postmark", "mailgun", "sparkpost", "mailjet"),
    "sms": ("twilio", "sns", "plivo", "vonage", "messagebird", "sinch"),
    "push": ("fcm", "apns", "expo", "one-signal", "pushpad"),
    "chat": ("slack", "msteams", "chat-webhook", "discord"),
    "in_app": ("svc",),
}
WORKFLOW_POOL = (
    "order-update", "login-code", "account-activity", "ops-alert", "password-reset",
    "nightly-report", "morning-digest", "weekly-newsletter", "promo-campaign", "comment-reply",
    "invoice-ready", "security-notice", "team-mention", "shipment-status", "usage-summary",
)  # fmt: skip
DOMAIN_POOL = (
    ("gmail.com", 30), ("outlook.com", 12), ("yahoo.com", 8), ("icloud.com", 6),
    ("hotmail.com", 4), ("proton.me", 2), ("initech.example", 8), ("northwind.example", 8),
    ("contoso.example", 6), ("umbrella.example", 4),
)  # fmt: skip
#: How many times as much people use the product on a sale day.
SALE = 3.0
#: UTC offsets (hours) the two time zones are drawn from.
ZONES = (-8, -7, -6, -5, -4, -3, 0, 1, 2, 3, 5.5, 8, 9, 10)
#: Chance that one send meets a background failure, by channel.
BACKGROUND = {"email": 0.02, "sms": 0.03, "push": 0.025, "chat": 0.015, "in_app": 0.0}
#: Background failure codes by channel: (code, text, transient, after_send, share).
CODES = {
    "email": (("5.1.1", "Email bounced: mailbox does not exist", False, True, 0.5),
              ("4.2.2", "Email bounced: mailbox full", False, True, 0.3),
              ("429", "Too many requests", True, False, 0.2)),
    "sms": (("30003", "Unreachable destination handset", False, True, 0.5),
            ("21211", "The 'To' number is not a valid phone number", False, False, 0.3),
            ("20429", "Too many requests", True, False, 0.2)),
    "push": (("InternalError", "Internal error encountered", True, False, 0.6),
             ("InvalidPayload", "Payload too large", False, False, 0.4)),
    "chat": (("502", "Bad gateway", True, False, 0.7), ("400", "Bad request", False, False, 0.3)),
    "in_app": (("500", "Internal error", True, False, 1.0),),
}  # fmt: skip
#: Seconds to send (log-normal median) by channel, and the backoff before each retry.
LATENCY = {"email": 1.2, "sms": 1.5, "push": 0.5, "chat": 0.8, "in_app": 0.08}
BACKOFF = (60.0, 120.0, 240.0)
#: Kinds planted with ``incidents=True``; ``campaign`` and ``failover`` are tolerated, not
#: required: a one-off campaign may be one ``volume_spike`` row, a failover one
#: ``traffic_shift`` row.
PLANTED = ("provider_outage", "error_spike", "domain_bounces", "stale_credentials",
           "volume_drop", "latency_degradation", "volume_spike", "degradation")  # fmt: skip


@dataclass(frozen=True)
class Shape:
    """The constants of the traffic's shape: the defaults, or drawn (`shaped_traffic(vary=True)`)
    so that a detector is measured on rhythms it was never tuned on."""

    night: float = 0.1  # activity at night, relative to the peak
    morning: float = 6.5  # local hour the day's activity starts rising
    weekend: float = 1 / 3  # weekend activity relative to a weekday's
    first_zone: float = 0.4  # share of people in the first time zone
    day_shape: float = 50.0  # a whole day's activity is a gamma factor of this shape (sd 14%)
    hour_shape: float = 25.0  # and an hour's (sd 20%)
    bursts: float = 0.01  # share of notifications that fan out
    burst_most: int = 12  # most notifications a fan-out adds (at least 3)
    digest_hour: int = 7  # local hour of the morning digest
    newsletter_hour: int = 10  # local hour of the weekly newsletter

    @classmethod
    def drawn(cls, rng: np.random.Generator) -> Shape:
        return cls(
            night=float(rng.uniform(0.03, 0.3)),
            morning=float(rng.uniform(4.5, 8.5)),
            weekend=float(rng.uniform(0.15, 0.9)),
            first_zone=float(rng.uniform(0.2, 0.8)),
            day_shape=float(rng.uniform(0.04, 0.2)) ** -2,
            hour_shape=float(rng.uniform(0.08, 0.35)) ** -2,
            bursts=float(rng.uniform(0.002, 0.03)),
            burst_most=int(rng.integers(5, 31)),
            digest_hour=int(rng.integers(5, 10)),
            newsletter_hour=int(rng.integers(8, 15)),
        )


@dataclass
class Traffic:
    """What `shaped_traffic` drew: the frames of the whole span and the planted incidents.

    ``planted`` holds dicts: ``kind, name, channel, provider_id, workflow, domain, start, end``
    (UTC Timestamps), ``optional`` (a tolerated row, not a required one), ``hits`` (the
    creation times of the notifications the incident hit, added or removed: its impact) and,
    for a workflow that stopped, ``usual`` (the notifications its season expected over the
    stop, without the day's and the hour's own variation: an estimate knowing it exactly).
    """

    notifications: pd.DataFrame
    jobs: pd.DataFrame
    execution_details: pd.DataFrame
    planted: list[dict[str, Any]] = field(default_factory=list)

    def window(self, after: Any, before: Any):
        """The activity a read of ``[after, before)`` returns, as `toolkit.frames.Activity`,
        with the planted incidents that overlap it (``notifications``: their hits in it)."""
        from toolkit.frames import Activity

        after, before = pd.Timestamp(after), pd.Timestamp(before)
        created = self.notifications["created_at"]
        notes = self.notifications[(created >= after) & (created < before)].copy()
        jobs = self.jobs[self.jobs["notification_id"].isin(notes["notification_id"])]
        details = self.execution_details
        details = details[details["job_id"].isin(jobs["job_id"]) & (details["created_at"] < before)]
        notes.attrs = {"after": after.isoformat(), "before": before.isoformat()}
        activity = Activity(notes.reset_index(drop=True), jobs.reset_index(drop=True),
                            details.reset_index(drop=True))  # fmt: skip
        planted = []
        for incident in self.planted:
            hits = incident["hits"]
            inside = int(((hits >= after) & (hits < before)).sum())
            if incident["start"] < before and incident["end"] > after and inside:
                planted.append({**incident, "notifications": inside})
        return activity, planted

    def write_store(self, root: Any, after: Any, before: Any, *, skip: Any = ()):
        """The activity of ``[after, before)`` written at ``root`` as `toolkit.sync` writes a
        store (a file per table and day, then its state), except the days (``YYYY-MM-DD``) in
        ``skip``: a store's history without a service. Returns it open (`toolkit.open_store`)."""
        from toolkit.store import layout, open_store
        from toolkit.store.state import State

        root, after, before = Path(root), pd.Timestamp(after), pd.Timestamp(before)
        activity, _ = self.window(after, before)
        notes = activity.notifications.set_index("notification_id")
        frames = dict(zip(layout.TABLES, activity, strict=True))
        # a job's workflow and subscriber are its notification's
        of = frames["jobs"]["notification_id"]
        frames["jobs"] = frames["jobs"].assign(workflow=of.map(notes["workflow_identifier"]),
                                               subscriber_id=of.map(notes["subscriber_id"]))  # fmt: skip
        sent = {"notifications": frames["notifications"]["created_at"],
                "jobs": of.map(notes["created_at"]),
                "execution_details": frames["execution_details"]["created_at"]}  # fmt: skip
        for day in pd.date_range(after.floor("D"), before, freq="D"):
            if day.strftime("%Y-%m-%d") in skip:
                continue
            tables = []
            for table, frame in frames.items():
                mine = frame[(sent[table] >= day) & (sent[table] < day + pd.Timedelta(days=1))]
                columns = [f.name for f in layout.arrow_schema(table)]
                mine = mine.reindex(columns=columns).astype(
                    {c: object for c in columns if c not in frame.columns}
                )
                for column in set(columns) - set(frame.columns):
                    mine[column] = None
                for column in mine.select_dtypes("datetimetz"):  # the service's milliseconds
                    mine[column] = mine[column].dt.floor("ms")
                tables.append(layout.table_from_frame(mine, table))
            layout.write_day(root, day.strftime("%Y-%m-%d"), tables)
        State(base_url="https://api.example", environment=None, filters={},
              after=after.isoformat(), watermark=before.isoformat()).save(root)  # fmt: skip
        return open_store(root)


def shaped_traffic(
    seed: int,
    now: Any,
    *,
    days: int = 42,
    scale: float = 1.0,
    incidents: bool = True,
    clocks_back: Any = None,
    vary: bool = False,
    growth: float = 0.0,
    holidays: Any = (),
    sales: Any = (),
) -> Traffic:
    """``days`` of activity ending at ``now`` (about ``2,000 * scale`` notifications a day).

    Parameters
    ----------
    seed : int
        Same arguments, same frames.
    now : str or Timestamp
        The end of the activity (the clock of the read).
    days : int
        Its length (at least 29: the planted incidents sit in the last four weeks).
    scale : float
        Multiplies every rate.
    incidents : bool
        Plant the campaign, the failover and the incidents (True), or draw the quiet variant.
    clocks_back : str or Timestamp, optional
        Summer time ends: the first zone's clocks go back an hour at this instant, the
        second's a week later (as Europe's and America's do), so that everything sent at a
        local hour (people's rhythm, the digest, the newsletter, office hours) moves an hour
        later in UTC. None: no change of the clocks.
    vary : bool
        Draw the shape's constants (`Shape`: night and weekend levels, when mornings start,
        the zones' shares, how much days and hours vary, fan-outs, the digest's and the
        newsletter's hours) from the seed too, instead of the defaults.
    growth : float
        People's use of the product grows by this share each week (negative: shrinks): 0.1 is
        a tenth more each week, the usual rates reached at ``now``.
    holidays : sequence of str or date
        Public holidays (dates, each zone's own): people use the product as on a weekend and
        the office hours are closed; batches, digests and newsletters go out as usual.
    sales : sequence of str or date
        Sale days (dates, each zone's own): people use the product `SALE` times as much as on
        any such day; the rest goes out as usual.
    """
    if days < 29:
        raise ValueError(f"days must be at least 29, got {days!r}")
    return _Draw(
        seed, pd.Timestamp(now), days, scale, incidents, clocks_back, vary, growth, holidays, sales
    ).traffic()


def _dates(days: Any) -> pd.DatetimeIndex:
    """Each of ``days`` as its date: a time or a zone on one says nothing more (each zone's own
    date is its day)."""
    return pd.DatetimeIndex([pd.Timestamp(pd.Timestamp(day).date()) for day in days])


def _rng(seed: int, name: str) -> np.random.Generator:
    digest = hashlib.sha256(f"shaped:{seed}:{name}".encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))


def _diurnal(local_hour: np.ndarray, shape: Shape) -> np.ndarray:
    """Relative activity by local hour: ``shape.night`` of the peak at night, the peak mid-day."""
    day = np.clip(np.sin(np.pi * (local_hour - shape.morning) / 16.5), 0, None) ** 1.3
    return shape.night + (1 - shape.night) * day


class _Draw:
    """One draw of `shaped_traffic` (the attributes are its plan; `traffic` draws it)."""

    def __init__(self, seed: int, now: pd.Timestamp, days: int, scale: float, incidents: bool,
                 clocks_back: Any = None, vary: bool = False, growth: float = 0.0,
                 holidays: Any = (), sales: Any = ()):  # fmt: skip
        self.seed, self.scale, self.incidents, self.growth = seed, scale, incidents, growth
        self.holidays, self.sales = _dates(holidays), _dates(sales)
        self.shape = Shape.drawn(_rng(seed, "shape")) if vary else Shape()
        back = None if clocks_back is None else pd.Timestamp(clocks_back)
        self.clocks_back = back if back is None or back.tzinfo else back.tz_localize("UTC")
        self.now = now.tz_localize("UTC") if now.tzinfo is None else now.tz_convert("UTC")
        self.start = (self.now - pd.Timedelta(days=days)).floor("h")
        self.hours = pd.date_range(
            self.start, self.now.ceil("h"), freq="h", inclusive="left"
        ).as_unit("ns")
        plan = _rng(seed, "plan")
        pick = {c: list(plan.permutation(p)) for c, p in PROVIDER_POOL.items()}
        self.providers = {c: names[:2] for c, names in pick.items()}
        names = list(plan.permutation(WORKFLOW_POOL))
        self.workflow = dict(zip(("tx", "login", "activity", "alerts", "reset", "batch",
                                  "digest", "newsletter", "campaign"), names, strict=False))  # fmt: skip
        self.zones = plan.choice(ZONES, 2, replace=False)
        self.batch_hour = int(plan.integers(0, 5))  # UTC hour of the nightly batch
        self.newsletter_day = int(plan.integers(0, 5))
        domains = [d for d, _ in DOMAIN_POOL]
        self.domains = list(plan.permutation(domains))
        self._subscribers(_rng(seed, "subscribers"))
        self.failover = self.now - pd.Timedelta(hours=float(plan.uniform(100, 140)))
        self.plans = self._plans(plan) if incidents else []
        self.usual: dict[str, np.ndarray] = {}  # each workflow's mean per hour, set by `_users`

    # -- who and what -----------------------------------------------------------------------

    def _subscribers(self, rng: np.random.Generator) -> None:
        count = max(200, int(3000 * self.scale))
        weights = np.array([w for _, w in DOMAIN_POOL], dtype=float)
        domain = rng.choice(len(DOMAIN_POOL), count, p=weights / weights.sum())
        self.sub_ids = np.array([f"user-{self.seed}-{n:05d}" for n in range(count)])
        self.sub_domain = np.array([DOMAIN_POOL[d][0] for d in domain])
        self.sub_email = np.char.add(np.char.add(self.sub_ids, "@"), self.sub_domain)
        self.sub_zone = (rng.random(count) < 0.6).astype(int)
        self.sub_weight = np.minimum(rng.pareto(1.5, count) + 1, 30)
        self.sub_push = (rng.random(count) < 0.4).astype(int)  # which push provider
        self.sub_email_route = (rng.random(count) < 0.3).astype(int)  # secondary email provider
        self.digest_members = rng.random(count) < 0.25
        self.newsletter_members = rng.random(count) < 0.5

    def _plans(self, rng: np.random.Generator) -> list[dict[str, Any]]:
        """Where and when each planted incident happens (hours before now, drawn)."""

        def at(low: float, high: float, hours: float) -> tuple[pd.Timestamp, pd.Timestamp]:
            start = (self.now - pd.Timedelta(hours=float(rng.uniform(low, high)))).floor("min")
            return start, start + pd.Timedelta(hours=hours)

        email, sms, push = self.providers["email"], self.providers["sms"], self.providers["push"]
        day = (self.now - pd.Timedelta(hours=float(rng.uniform(125, 150)))).floor("D")
        batch = day + pd.Timedelta(hours=self.batch_hour)  # rate limited under the batch's load
        under_load = (batch, batch + pd.Timedelta(hours=1))
        outage_channel = ("email", "sms")[int(rng.integers(2))]
        outage_provider = email[0] if outage_channel == "email" else sms[1]
        wf = self.workflow
        plans = [
            ("provider_outage", outage_channel, outage_provider, None, None, at(4, 18, 3)),
            ("volume_drop", None, None, wf[("tx", "login", "activity")[int(rng.integers(3))]],
             None, at(30, 60, 6)),
            ("stale_credentials", "push", push[int(rng.integers(2))], None, None,
             (at(40, 48, 0)[0], self.now)),
            ("domain_bounces", "email", None, None, self.domains[int(rng.integers(3))],
             at(75, 110, 6)),
            ("error_spike", "push", push[int(rng.integers(2))], None, None, under_load),
            ("latency_degradation", "email", email[int(rng.integers(2))], None, None,
             at(155, 165, 4)),
            ("volume_spike", None, None, wf["reset"], None, at(200, 320, 1.5)),
            ("volume_drop", "push", None, None, None, at(340, 460, 5)),
            ("degradation", "email", email[1], None, None, at(560, 600, 72)),
            ("campaign", "email", None, wf["campaign"], None, at(90, 160, 2)),
        ]  # fmt: skip
        out = []
        for kind, channel, provider, workflow, domain, (start, end) in plans:
            out.append({"kind": kind, "channel": channel, "provider_id": provider,
                        "workflow": workflow, "domain": domain, "start": start, "end": end,
                        "optional": kind == "campaign"})  # fmt: skip
        out.append({"kind": "failover", "channel": "sms", "provider_id": sms[0],
                    "workflow": None, "domain": None, "start": self.failover,
                    "end": self.now, "optional": True, "to": sms[1]})  # fmt: skip
        return out

    def _plan(self, kind: str) -> list[dict[str, Any]]:
        return [p for p in self.plans if p["kind"] == kind]

    # -- notifications ----------------------------------------------------------------------

    def traffic(self) -> Traffic:
        rng = _rng(self.seed, "traffic")
        parts = [self._users(rng), self._office(rng), self._batch(rng), self._digest(rng),
                 self._newsletter(rng)]  # fmt: skip
        if self.incidents:
            parts += [self._campaign(rng), self._runaway(rng)]
        times = np.concatenate([p[0] for p in parts])
        who = np.concatenate([p[1] for p in parts])
        flows = np.concatenate([p[2] for p in parts])
        keep = (times >= self.start.value) & (times < self.now.value)
        times, who, flows = times[keep], who[keep], flows[keep]
        for plan in self._plan("volume_drop"):
            if plan["workflow"] is not None:
                gone = self._in(plan, times) & (flows == plan["workflow"])
                plan["hits"] = times[gone]
                plan["usual"] = self._usual(plan)
                times, who, flows = times[~gone], who[~gone], flows[~gone]
        order = np.argsort(times, kind="stable")
        times, who, flows = times[order], who[order], flows[order]
        ids = np.char.add(f"n{self.seed}-", np.arange(len(times)).astype(str))
        notes = pd.DataFrame({
            "notification_id": pd.array(ids, dtype="string"),
            "created_at": pd.to_datetime(times, utc=True),
            "subscriber_id": pd.array(self.sub_ids[who], dtype="string"),
            "subscriber_email": pd.array(self.sub_email[who], dtype="string"),
            "workflow_identifier": pd.array(flows, dtype="string"),
        })  # fmt: skip
        notes.attrs = {"after": self.start.isoformat(), "before": self.now.isoformat()}
        jobs, details = _Jobs(self, _rng(self.seed, "jobs")).build(times, who, flows)
        for frame in (jobs, details):  # positions of the notifications -> their ids
            frame["notification_id"] = notes["notification_id"].array.take(frame["notification_id"])
        for plan in self.plans:
            plan.setdefault("hits", np.zeros(0, dtype="int64"))
            plan["hits"] = pd.to_datetime(np.sort(plan["hits"]), utc=True)
        return Traffic(notes, jobs, details, self.plans)

    def _usual(self, plan: dict) -> float:
        """The notifications a stopped workflow's season expected over ``plan``'s time, without
        a day's or an hour's own variation: what knowing its traffic exactly would estimate."""
        hour = pd.Timedelta(hours=1).value
        starts = self.hours.asi8
        ends = np.minimum(starts + hour, plan["end"].value)
        overlap = np.clip(ends - np.maximum(starts, plan["start"].value), 0, None) / hour
        return float((self.usual[plan["workflow"]] * overlap).sum())

    def _in(self, plan: dict, times: np.ndarray) -> np.ndarray:
        return (times >= plan["start"].value) & (times < plan["end"].value)

    def _hourly(self, rng: np.random.Generator, rate: np.ndarray) -> np.ndarray:
        """Times of notifications at ``rate`` per hour (one per hour of `hours`), with a day's
        and an hour's own variation and short bursts (more spread than Poisson)."""
        days = (np.arange(len(rate)) // 24).astype(int)
        rate = self._grown(rate)
        day_noise = rng.gamma(self.shape.day_shape, 1 / self.shape.day_shape, days.max() + 1)[days]
        hour_noise = rng.gamma(self.shape.hour_shape, 1 / self.shape.hour_shape, len(rate))
        counts = rng.poisson(rate * day_noise * hour_noise)
        times = np.repeat(self.hours.asi8, counts) + (rng.random(counts.sum()) * 3.6e12).astype(
            "int64"
        )
        bursts = rng.random(len(times)) < self.shape.bursts  # a fan-out: 3 or more at once
        extra = rng.integers(3, self.shape.burst_most + 1, bursts.sum())
        more = np.repeat(times[bursts], extra) + rng.integers(0, 60e9, extra.sum())
        return np.concatenate([times, more])

    def _grown(self, rate: np.ndarray) -> np.ndarray:
        weeks = np.asarray((self.hours - self.now) / pd.Timedelta(weeks=1))
        return rate * (1 + self.growth) ** weeks

    def _local(self, zone: int) -> pd.DatetimeIndex:
        local = self.hours + pd.Timedelta(hours=float(self.zones[zone]))
        if self.clocks_back is None:
            return local
        summer = self.hours < self.clocks_back + pd.Timedelta(weeks=zone)
        return local + pd.to_timedelta(summer.astype(int), unit="h")

    def _off(self, local: pd.DatetimeIndex) -> np.ndarray:
        """Whether each local hour is on a weekend or a holiday."""
        return (local.day_of_week >= 5) | local.normalize().tz_localize(None).isin(self.holidays)

    def _sale(self, local: pd.DatetimeIndex) -> np.ndarray:
        """How much more people use the product at each local hour: `SALE` on a sale day."""
        return np.where(local.normalize().tz_localize(None).isin(self.sales), SALE, 1.0)

    def _audience(self, rng, count: int, mask: np.ndarray) -> np.ndarray:
        members = np.flatnonzero(mask)
        weights = self.sub_weight[members]
        return members[rng.choice(len(members), count, p=weights / weights.sum())]

    def _users(self, rng: np.random.Generator) -> tuple:
        """Workflows people trigger by using the product: the daily and weekly rhythm."""
        out = []
        first = self.shape.first_zone
        fan_out = self.shape.bursts * (3 + self.shape.burst_most) / 2  # extra per notification
        for zone, share in ((0, first), (1, 1 - first)):
            local = self._local(zone)
            weekly = np.where(self._off(local), self.shape.weekend, 1.0) * self._sale(local)
            shape = _diurnal(local.hour + 0.5, self.shape) * weekly
            for name, peak in (("tx", 60), ("login", 25), ("activity", 60), ("reset", 8)):
                rate = np.asarray(shape * peak * share * self.scale)
                times = self._hourly(rng, rate)
                usual = self.usual.get(self.workflow[name], 0.0)
                self.usual[self.workflow[name]] = usual + self._grown(rate) * (1 + fan_out)
                who = self._audience(rng, len(times), self.sub_zone == zone)
                out.append((times, who, np.full(len(times), self.workflow[name])))
        return _joined(out)

    def _office(self, rng: np.random.Generator) -> tuple:
        """Chat alerts: only in the office hours of the first zone, on working days."""
        local = self._local(0)
        office = (local.hour >= 9) & (local.hour < 18) & ~self._off(local)
        times = self._hourly(rng, np.where(office, 25.0, 0.0) * self.scale)
        who = self._audience(rng, len(times), self.sub_zone == 0)
        return times, who, np.full(len(times), self.workflow["alerts"])

    def _scheduled(self, rng, starts: np.ndarray, members: np.ndarray, spread_s: float,
                   share: float = 0.95) -> tuple:  # fmt: skip
        """Each of ``members`` (a share of them) once at each of ``starts``, over ``spread_s``."""
        times, who = [], []
        for start in starts:
            chosen = members[rng.random(len(members)) < share]
            times.append(start + (rng.random(len(chosen)) * spread_s * 1e9).astype("int64"))
            who.append(chosen)
        return np.concatenate(times), np.concatenate(who)

    def _batch(self, rng: np.random.Generator) -> tuple:
        """The nightly batch: a tenth of the subscribers every night at the same UTC hour."""
        starts = self.hours[self.hours.hour == self.batch_hour].asi8
        starts = starts + rng.integers(0, 600e9, len(starts))
        members = np.flatnonzero(rng.random(len(self.sub_ids)) < 0.1 * min(1, self.scale) + 0.02)
        times, who = self._scheduled(rng, starts, members, 1800)
        return times, who, np.full(len(times), self.workflow["batch"])

    def _digest(self, rng: np.random.Generator) -> tuple:
        """The morning digest at 07:00 local time in each zone, every day."""
        out = []
        for zone in (0, 1):
            local = self._local(zone)
            starts = self.hours[local.hour == self.shape.digest_hour].asi8
            members = np.flatnonzero(self.digest_members & (self.sub_zone == zone))
            out.append(self._scheduled(rng, starts, members, 900, 0.9))
        times = np.concatenate([t for t, _ in out])
        return times, np.concatenate([w for _, w in out]), np.full(len(times), self.workflow["digest"])  # fmt: skip

    def _newsletter(self, rng: np.random.Generator) -> tuple:
        """The weekly newsletter at 10:00 local time on one weekday, in each zone."""
        out = []
        for zone in (0, 1):
            local = self._local(zone)
            starts = self.hours[
                (local.hour == self.shape.newsletter_hour)
                & (local.day_of_week == self.newsletter_day)
            ].asi8
            members = np.flatnonzero(self.newsletter_members & (self.sub_zone == zone))
            out.append(self._scheduled(rng, starts, members, 3600, 0.97))
        times = np.concatenate([t for t, _ in out])
        return times, np.concatenate([w for _, w in out]), np.full(len(times), self.workflow["newsletter"])  # fmt: skip

    def _campaign(self, rng: np.random.Generator) -> tuple:
        """The one-off campaign: about ten times the hour's usual email, for two hours."""
        plan = self._plan("campaign")[0]
        count = int(600 * self.scale)
        times = plan["start"].value + (rng.random(count) * 7.2e12).astype("int64")
        plan["hits"] = times
        who = self._audience(rng, count, np.ones(len(self.sub_ids), bool))
        return times, who, np.full(count, plan["workflow"])

    def _runaway(self, rng: np.random.Generator) -> tuple:
        """A loop triggering one workflow again and again for a few subscribers."""
        plan = self._plan("volume_spike")[0]
        count = int(300 * self.scale)
        span = (plan["end"] - plan["start"]).value
        times = plan["start"].value + (rng.random(count) * span).astype("int64")
        plan["hits"] = times
        who = rng.choice(len(self.sub_ids), 8)[rng.integers(0, 8, count)]
        return times, who, np.full(count, plan["workflow"])


def _joined(parts: list[tuple]) -> tuple:
    return tuple(np.concatenate([p[i] for p in parts]) for i in range(3))


#: The channels of each workflow role.
CHANNELS_OF = {
    "tx": ("email", "in_app"), "login": ("sms",), "activity": ("push", "in_app"),
    "alerts": ("chat",), "reset": ("email",), "batch": ("email", "push"),
    "digest": ("email",), "newsletter": ("email",), "campaign": ("email",),
}  # fmt: skip


class _Jobs:
    """The delivery jobs and execution details of the notifications, with the planted failures."""

    def __init__(self, draw: _Draw, rng: np.random.Generator):
        self.draw, self.rng = draw, rng

    def build(self, times, who, flows) -> tuple[pd.DataFrame, pd.DataFrame]:
        draw = self.draw
        role = {name: role for role, name in draw.workflow.items()}
        parts = []
        for channel in ("email", "sms", "push", "chat", "in_app"):
            has = np.array([channel in CHANNELS_OF[role[f]] for f in draw.workflow.values()])
            flows_with = np.array(list(draw.workflow.values()))[has]
            rows = np.flatnonzero(np.isin(flows, flows_with))
            parts.append((channel, rows))
        jobs, details, count = [], [], 0
        for channel, rows in parts:
            rows = self._silenced(channel, rows, times)
            if len(rows):
                frame, detail = self._channel(channel, rows, times, who)
                jobs.append(frame)
                details.append(detail.assign(job=detail["job"] + count))
                count += len(frame)
        jobs = pd.concat(jobs, ignore_index=True)
        jobs["job_id"] = pd.array(np.char.add(f"j{draw.seed}-", np.arange(len(jobs)).astype(str)),
                                  dtype="string")  # fmt: skip
        details = pd.concat(details, ignore_index=True)
        details = details[details["created_at"] < draw.now.value]
        details = pd.DataFrame({
            "job_id": jobs["job_id"].array.take(details["job"].to_numpy()),
            "notification_id": jobs["notification_id"].to_numpy().take(details["job"].to_numpy()),
            "status": pd.array(details["status"].to_numpy(), dtype="string"),
            "created_at": pd.to_datetime(details["created_at"].to_numpy(), utc=True),
            "raw": pd.array(details["raw"].to_numpy(), dtype="string"),
        }).sort_values("created_at", kind="stable").reset_index(drop=True)  # fmt: skip
        last = jobs.pop("last_at").to_numpy()
        cut = last >= draw.now.value
        final = jobs["final_status"].to_numpy(dtype=object)
        final[cut] = "queued"
        jobs["final_status"] = pd.array(final, dtype="string")
        last = np.minimum(last, draw.now.value - 1)
        first = jobs["first_at"].to_numpy()
        jobs = jobs.drop(columns="first_at").assign(
            first_execution_at=pd.to_datetime(first, utc=True),
            last_execution_at=pd.to_datetime(last, utc=True),
            duration_s=(last - first) / 1e9,
        )
        return jobs, details

    def _silenced(self, channel, rows, times) -> np.ndarray:
        for plan in self.draw._plan("volume_drop"):
            if plan["channel"] == channel:
                gone = self.draw._in(plan, times[rows])
                plan["hits"] = times[rows[gone]]
                rows = rows[~gone]
        return rows

    def _provider(self, channel, rows, times, who) -> np.ndarray:
        names = self.draw.providers[channel]
        if channel == "email":
            return np.asarray(names)[self.draw.sub_email_route[who[rows]]]
        if channel == "sms":
            moved = self.draw.incidents & (times[rows] >= self.draw.failover.value)
            for plan in self.draw._plan("failover"):
                plan["hits"] = times[rows[moved]]
            return np.where(moved, names[1], names[0])
        if channel == "push":
            return np.asarray(names)[self.draw.sub_push[who[rows]]]
        return np.full(len(rows), names[0])

    def _channel(self, channel, rows, times, who) -> tuple[pd.DataFrame, pd.DataFrame]:
        draw, rng = self.draw, self.rng
        n = len(rows)
        provider = self._provider(channel, rows, times, who)
        start = times[rows] + rng.integers(50e6, 500e6, n)
        latency = rng.lognormal(np.log(LATENCY[channel]), 0.5, n)
        codes = CODES[channel]
        pick = rng.choice(len(codes), n, p=[c[4] for c in codes])
        fails = rng.random(n) < BACKGROUND[channel]
        code = np.where(fails, np.array([c[0] for c in codes])[pick], None).astype(object)
        text = np.where(fails, np.array([c[1] for c in codes])[pick], None).astype(object)
        transient = fails & np.array([c[2] for c in codes])[pick]
        after_send = fails & np.array([c[3] for c in codes])[pick]
        # transient background failures: each retry fails again with a chance of 0.3
        retries_failing = np.where(transient, rng.geometric(0.7, n), 0)
        window_fail = np.zeros((n, len(BACKOFF) + 1), bool)  # attempts failing in an incident
        window_code = np.full(n, None, dtype=object)
        window_text = np.full(n, None, dtype=object)
        after = np.zeros(n, bool)
        rejected = np.zeros(n, bool)
        domain = draw.sub_domain[who[rows]]
        subscribers = who[rows]
        for plan in draw.plans:
            if plan["channel"] != channel:
                continue
            kind = plan["kind"]
            mine = provider == plan["provider_id"] if plan["provider_id"] else np.ones(n, bool)
            if kind == "latency_degradation":
                slow = mine & draw._in(plan, start)
                latency = np.where(slow, latency * 10 + 20, latency)
                plan["hits"] = times[rows[slow]]
            elif kind == "provider_outage":
                # every attempt inside the window fails (retried); attempts after it succeed.
                # A job is hit when it makes an attempt inside: its earlier ones all failed
                at = start + (latency * 1e9).astype("int64")
                hit, made = np.zeros(n, bool), np.ones(n, bool)
                for attempt in range(len(BACKOFF) + 1):
                    inside = mine & (at >= plan["start"].value) & (at < plan["end"].value)
                    window_fail[:, attempt] |= inside
                    hit |= made & inside
                    made &= inside | (transient & (attempt < retries_failing))
                    if attempt < len(BACKOFF):
                        at = at + int(BACKOFF[attempt] * 1e9)
                window_code[hit], window_text[hit] = "503", "Service unavailable"
                plan["hits"] = times[rows[hit]]
            elif kind == "error_spike":  # rate limited: retried, then sent (and slower)
                hit = mine & draw._in(plan, start) & (rng.random(n) < 0.35)
                window_fail[hit, 0] = True
                window_code[hit], window_text[hit] = "RateLimited", "Sending rate exceeded"
                plan["hits"] = times[rows[hit]]
            elif kind == "domain_bounces":
                hit = (domain == plan["domain"]) & draw._in(plan, start)
                after |= hit
                window_code[hit], window_text[hit] = "5.1.1", "Email bounced: mailbox does not exist"  # fmt: skip
                plan["hits"] = times[rows[hit]]
            elif kind == "stale_credentials":
                own = np.unique(subscribers[mine])
                broken = rng.choice(own, max(1, len(own) * 3 // 10), replace=False)
                hit = mine & np.isin(subscribers, broken) & (start >= plan["start"].value)
                rejected |= hit
                window_code[hit], window_text[hit] = "Unregistered", "Device token is not registered"  # fmt: skip
                plan["hits"] = times[rows[hit]]
            elif kind == "degradation":  # a rejection rate climbing from 0 to 30% over days
                span = (plan["end"] - plan["start"]).value
                share = np.clip((start - plan["start"].value) / span, 0, 1) * 0.3
                hit = mine & draw._in(plan, start) & (rng.random(n) < share)
                rejected |= hit
                window_code[hit], window_text[hit] = "MessageRejected", "Message rejected"
                plan["hits"] = times[rows[hit]]
        return self._story(channel, rows, provider, start, latency, code, text, transient,
                           after_send, retries_failing, window_fail, window_code, window_text,
                           after, rejected)  # fmt: skip

    def _story(self, channel, rows, provider, start, latency, code, text, transient, after_send,
               retries_failing, window_fail, window_code, window_text, after, rejected):  # fmt: skip
        """Execution details: Pending, a Failed detail per failed attempt (retried after
        `BACKOFF`), Success when sent, and a Failed bounce after the send."""
        rng, n = self.rng, len(rows)
        tries = len(BACKOFF) + 1
        failing = np.zeros((n, tries), bool)
        for attempt in range(tries):
            failing[:, attempt] = transient & (attempt < retries_failing)
        failing |= window_fail
        planted = window_fail.any(1) | after | rejected
        code = np.where(planted, window_code, code)
        text = np.where(planted, window_text, text)
        rejected = rejected | (~planted & code.astype(bool) & ~transient & ~after_send)
        after = after | (~planted & after_send)
        first_ok = np.where(failing.all(1), tries, failing.argmin(1))
        first_ok = np.where(rejected, 0, first_ok)
        offsets = np.concatenate([[0.0], np.cumsum(BACKOFF)])
        sent_at = start + (latency * 1e9).astype("int64")
        attempt_at = sent_at[:, None] + (offsets * 1e9 * rng.uniform(0.9, 1.2, (n, 1))).astype(
            "int64"
        )
        job = np.arange(n)
        events = [(job, start, "Pending", None)]
        shown_fail = (np.arange(tries)[None, :] < first_ok[:, None]) & ~rejected[:, None]
        r, a = np.nonzero(shown_fail)
        events.append((r, attempt_at[r, a], "Failed", code[r]))
        events.append((job[rejected], sent_at[rejected], "Failed", code[rejected]))
        ok = (first_ok < tries) & ~rejected
        success_at = attempt_at[job, np.minimum(first_ok, tries - 1)]
        events.append((job[ok], success_at[ok], "Success", None))
        bounce = ok & after
        bounce_at = success_at + rng.integers(2e9, 90e9, n)
        events.append((job[bounce], bounce_at[bounce], "Failed", code[bounce]))
        failed = ~ok | bounce
        met = failed | shown_fail.any(1)  # its last Failed detail's code, even if sent later
        last = np.where(bounce, bounce_at, np.where(ok, success_at, attempt_at[job, tries - 1]))
        last = np.where(rejected, sent_at, last)
        detail = pd.DataFrame({
            "job": np.concatenate([e[0] for e in events]),
            "created_at": np.concatenate([e[1] for e in events]),
            "status": np.concatenate([np.full(len(e[0]), e[2]) for e in events]),
            "raw": np.concatenate([np.asarray(
                [None if c is None else f'{{"code": "{c}"}}' for c in e[3]]
                if e[3] is not None else [None] * len(e[0]), dtype=object) for e in events]),
        })  # fmt: skip
        final = np.where(failed, "failed", "delivered" if channel in ("email", "sms") else "sent")
        jobs = pd.DataFrame({
            "notification_id": rows,  # replaced by the id below
            "type": pd.array(np.full(n, channel), dtype="string"),
            "final_status": final,
            "provider_id": pd.array(provider, dtype="string"),
            "error_code": pd.array(np.where(met, code, None), dtype="string"),
            "error_text": pd.array(np.where(met, text, None), dtype="string"),
            "first_at": start,
            "last_at": last,
        })  # fmt: skip
        return jobs, detail
