"""Tidewater: eight weeks of a consumer banking app's notifications, drawn as the activity frames
the toolkit's client returns (`toolkit.schemas`), with or without planted delivery incidents.

Written blind: without reading the incident detector or the toolkit's other generators, so that
the detector is measured on rhythms nobody tuned it on.

The traffic
-----------
Tidewater's customers live in three regions, each on its own clock and summer time: the US east
coast (America/New_York, half of them), the UK (Europe/London, a third) and Australia
(Australia/Sydney, whose summer time runs October to April). The customer base grows about 3%
a week; long-standing customers are the most active.

Real-time workflows follow the customers' local hours and their paydays (US: the 1st and 15th,
moved to the Friday before a weekend, and every other Friday; UK: the last working day of the
month; Australia: every other Thursday):

- ``card-transaction`` (push and in-app): shopping hours (lunch and early evening peaks, later
  on weekends), more on and after paydays; a shopping trip sends several alerts minutes apart.
- ``card-declined`` (push, in-app): the days before payday, often retried at once by the buyer.
- ``login-otp`` (SMS only, critical): mornings and evenings; one in nine asks for a second code.
- ``new-device`` (email, push): a few per thousand customers a day.
- ``transfer-sent`` (in-app, email): daytime, Friday evenings, rent around the 1st.
- ``money-in`` (push, in-app): person-to-person money through the day, and on paydays a wave of
  salary deposits between 03:00 and 07:00 local, in bursts as the payroll files post.
- ``low-balance`` (push, email): a morning check at 07:00 local, and through the day; far more
  in the days before payday.

Batches: ``bill-due`` reminders each morning at 08:00 local (heavier before the 1st and the
15th); ``monthly-statement`` emails on the second working day of the month, throttled in
10-minute chunks over six hours; ``weekly-budget`` on Sunday evenings at 18:00 local, in
2-minute chunks; ``marketing-broadcast`` campaigns most weeks, on a Tuesday to Thursday to one
region's opted-in customers, throttled over one to two and a half hours.

Providers: push by the customer's phone (``apns`` or ``fcm``); transactional email through
``sendgrid`` (``ses`` for UK customers), bulk email (statements, budgets, campaigns) through
``ses``; SMS through ``twilio`` (US, Australia) or ``vonage`` (UK); in-app through ``svc``. Each
provider's background failure rates vary from day to day and hour to hour, and its rate limits
bite in the busiest hours (retried after 30 s and 2 min). Some customers' phones have dead push
tokens for a few days; some addresses bounce (more at some domains, all at typo domains); some
numbers are invalid. Email and SMS get delivery receipts, in-app messages are read later, push
gets none; customers who do not allow push get its step as an email. Sends slow down with load
(``load_latency``: how much slower the busiest hours are).

The planted incidents (``incidents=True``: the same quiet traffic, plus one of each)
-------------------------------------------------------------------------------------
Drawn from their own random generator, at busy hours of what they hit:

- ``volume_drop``: ``transfer-sent`` or ``login-otp`` stops sending for 4-7 h, two to three
  days before ``now`` (hits: the notifications it would have sent).
- ``volume_spike``: a card processor's webhook loop re-triggers ``card-transaction`` for 3-6
  customers for about an hour, a day and a half to three days before ``now``, adding
  ``loop_mult - 1`` times the workflow's usual volume in those hours (hits: the added ones).
- ``provider_outage``: ``twilio``, ``vonage`` or ``sendgrid`` times out on 92% of attempts for
  about 2 h, three to five days before (hits: the notifications whose send failed for good).
- ``stale_credentials``: ``apns`` (or ``fcm``) credentials are revoked 6-14 h before ``now``;
  every send through it fails with its auth error until ``now`` (hits: sends that failed).
- ``domain_bounces``: ``gmail.com``, ``outlook.com`` or ``icloud.com`` rejects 85% of mail
  (5.7.1) through both email providers for 4-8 h, five to six and a half days before (hits:
  newly bounced mail; ``provider_id``: the email provider that carried most of it).
- ``error_spike``: a provider rate-limits (429) over half of its sends for 1-1.75 h, 16-30 h
  before ``now``; retried, most get through late (hits: notifications with a 429).
- ``latency_degradation``: one provider becomes 4-7 times slower for 4 h, four to six days
  before (hits: every notification it carried then).
- ``degradation``: ``twilio``, ``vonage`` or ``fcm`` fails a share of sends climbing from 0 to
  about 12% over 4-6 days, starting 20-24 days before ``now``, then fixed (hits: sends it failed).

Seed 1 sends about 2,000 notifications a day, seed 2 about 8,000 (seed n: 4 ** (n - 1) times
seed 1's customers).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd

from toolkit import schemas
from toolkit.error_codes import error_code
from toolkit.sandbox.seed.shaped import Traffic

__all__ = ["make"]

SECOND = 10**9
MINUTE = 60 * SECOND
HOUR = 3600 * SECOND
DAY = 24 * HOUR

#: Customers at ``now`` for seed 1 (seed n has 4 ** (n - 1) times as many).
CUSTOMERS = 4100
#: Growth of the customer base per day.
GROWTH = 0.0045

# -- regions -----------------------------------------------------------------------------------

#: key: (zone, share of customers, SMS provider, share on iPhone, phone prefix, email domains
#: with their share and the share of their addresses that bounce).
REGIONS = {
    "us": ("America/New_York", 0.5, "twilio", 0.57, "+1", {
        "gmail.com": (0.44, 0.004), "yahoo.com": (0.12, 0.012), "icloud.com": (0.12, 0.004),
        "outlook.com": (0.1, 0.006), "hotmail.com": (0.08, 0.008), "comcast.net": (0.05, 0.01),
        "aol.com": (0.085, 0.02), "gmial.com": (0.005, 1.0)}),
    "uk": ("Europe/London", 0.32, "vonage", 0.5, "+447", {
        "gmail.com": (0.38, 0.004), "hotmail.co.uk": (0.14, 0.008), "outlook.com": (0.12, 0.006),
        "icloud.com": (0.12, 0.004), "btinternet.com": (0.09, 0.015), "yahoo.co.uk": (0.08, 0.012),
        "sky.com": (0.065, 0.01), "hotmial.co.uk": (0.005, 1.0)}),
    "au": ("Australia/Sydney", 0.18, "twilio", 0.55, "+614", {
        "gmail.com": (0.42, 0.004), "bigpond.com": (0.15, 0.02), "outlook.com": (0.12, 0.006),
        "icloud.com": (0.14, 0.004), "hotmail.com": (0.08, 0.008), "optusnet.com.au": (0.085, 0.012),
        "gmial.com": (0.005, 1.0)}),
}  # fmt: skip

# -- providers ---------------------------------------------------------------------------------

PROVIDERS = ("apns", "fcm", "sendgrid", "ses", "twilio", "vonage", "svc")
#: provider: (channel, median send latency s, transient failure rate, permanent failure rate,
#: share of sends with a delivery receipt, share undelivered by the receipt).
PROVIDER = {
    "apns": ("push", 0.25, 0.0015, 0.0004, 0.0, 0.0),
    "fcm": ("push", 0.2, 0.002, 0.0008, 0.0, 0.0),
    "sendgrid": ("email", 0.7, 0.001, 0.0006, 0.9, 0.0),
    "ses": ("email", 0.5, 0.0012, 0.0004, 0.8, 0.0),
    "twilio": ("sms", 0.9, 0.002, 0.001, 0.88, 0.012),
    "vonage": ("sms", 1.2, 0.003, 0.0015, 0.75, 0.02),
    "svc": ("in_app", 0.03, 0.0, 0.0, 0.0, 0.0),
}
P = {name: i for i, name in enumerate(PROVIDERS)}
CHANNELS = ("in_app", "email", "sms", "push")
C = {name: i for i, name in enumerate(CHANNELS)}

#: What an execution detail says: (status, source, detail, raw body or None).
EVENTS: list[tuple[str, str, str, str | None]] = []
EV: dict[Any, int] = {}


def _event(key: Any, status: str, source: str, detail: str, raw: dict | None = None) -> None:
    EV[key] = len(EVENTS)
    EVENTS.append((status, source, detail, None if raw is None else json.dumps(raw)))


_event("queued", "Pending", "Internal", "Step queued")
_event("sent", "Success", "Internal", "Message sent")
_event("read", "ReadConfirmation", "Internal", "Message read by subscriber")
#: What each kind of failure says, and its source (else Internal; a receipt's is the Webhook).
_SAYS = {
    "rate": "Provider rate limited the send", "server": "Provider error",
    "permanent": "Message rejected by provider", "dead": "Device token is not registered",
    "auth": "Invalid provider credentials", "outage": "Could not reach provider",
    "degraded": "Provider error", "hook_bounce": "Message bounced", "hook_soft": "Message bounced",
    "hook_block": "Message bounced", "hook_undelivered": "Message undelivered",
    "hook_degraded": "Message undelivered",
}  # fmt: skip
_SOURCE = {"auth": "Credentials", "permanent": "Payload"}
_TIMEOUT = {"code": "ETIMEDOUT", "message": "connect ETIMEDOUT"}


def _ses(status: str, kind: str = "Permanent") -> dict:
    recipient = {"status": status, "diagnosticCode": f"smtp; 550 {status}"}
    return {"notificationType": "Bounce", "bounce": {"bounceType": kind, "bouncedRecipients": [recipient]}}  # fmt: skip


#: provider: {kind: the provider's raw answer}; ``delivered`` is a receipt, the rest failures.
_RAW = {
    "apns": {
        "rate": {"reason": "TooManyRequests"}, "server": {"reason": "ServiceUnavailable"},
        "permanent": {"reason": "PayloadTooLarge"}, "dead": {"reason": "Unregistered"},
        "auth": {"reason": "InvalidProviderToken"}, "outage": _TIMEOUT,
        "degraded": {"reason": "InternalServerError"},
    },
    "fcm": {
        "rate": {"error": {"code": "messaging/message-rate-exceeded"}},
        "server": {"error": {"code": "messaging/server-unavailable"}},
        "permanent": {"error": {"code": "messaging/invalid-argument"}},
        "dead": {"error": {"code": "messaging/registration-token-not-registered"}},
        "auth": {"error": {"code": "app/invalid-credential", "message": "Failed to obtain a Google OAuth2 access token"}},
        "outage": _TIMEOUT, "degraded": {"error": {"code": "messaging/unknown-error"}},
    },
    "sendgrid": {
        "rate": {"statusCode": 429, "errors": [{"message": "too many requests"}]},
        "server": {"statusCode": 503, "message": "Service Unavailable"},
        "permanent": {"statusCode": 400, "errors": [{"message": "Does not contain a valid address."}]},
        "auth": {"statusCode": 401, "errors": [{"message": "The provided authorization grant is invalid"}]},
        "outage": _TIMEOUT, "delivered": {"event": "delivered", "response": "250 2.0.0 OK"},
        "hook_bounce": {"event": "bounce", "status": "5.1.1", "reason": "550 5.1.1 The email account does not exist"},
        "hook_soft": {"event": "bounce", "status": "5.2.2", "reason": "552 5.2.2 Mailbox full"},
        "hook_block": {"event": "bounce", "type": "blocked", "status": "5.7.1", "reason": "550 5.7.1 Rejected by policy"},
    },
    "ses": {
        "rate": {"Error": {"Code": "Throttling", "Message": "Maximum sending rate exceeded."}},
        "server": {"Error": {"Code": "ServiceUnavailable"}},
        "permanent": {"Error": {"Code": "InvalidParameterValue"}},
        "auth": {"Error": {"Code": "SignatureDoesNotMatch"}}, "outage": _TIMEOUT,
        "delivered": {"notificationType": "Delivery", "delivery": {"smtpResponse": "250 ok"}},
        "hook_bounce": _ses("5.1.1"), "hook_soft": _ses("5.2.2", "Transient"), "hook_block": _ses("5.7.1"),
    },
    "twilio": {
        "rate": {"code": 20429, "message": "Too Many Requests", "status": 429},
        "server": {"code": 20500, "message": "Internal Server Error", "status": 500},
        "permanent": {"code": 21211, "message": "The 'To' number is not a valid phone number."},
        "auth": {"code": 20003, "message": "Authenticate", "status": 401},
        "outage": {"code": 20503, "message": "Service Unavailable", "status": 503},
        "delivered": {"MessageStatus": "delivered"},
        "hook_undelivered": {"MessageStatus": "undelivered", "ErrorCode": "30003"},
        "hook_degraded": {"MessageStatus": "undelivered", "ErrorCode": "30008"},
    },
    "vonage": {
        "rate": {"status": "1", "error-text": "Throughput Rate Exceeded - please wait and retry"},
        "server": {"status": "5", "error-text": "Internal Error"},
        "permanent": {"status": "6", "error-text": "Invalid Message"},
        "auth": {"status": "4", "error-text": "Bad Credentials"},
        "outage": {"code": "ECONNRESET", "message": "socket hang up"},
        "delivered": {"status": "delivered", "err-code": "0"},
        "hook_undelivered": {"status": "failed", "err-code": "1"},
        "hook_degraded": {"status": "expired", "err-code": "5"},
    },
}  # fmt: skip
for _provider, _kinds in _RAW.items():
    for _kind, _raw in _kinds.items():
        if _kind == "delivered":
            _event((_provider, _kind), "Success", "Webhook", "Message delivered", _raw)
        else:
            _source = "Webhook" if _kind.startswith("hook") else _SOURCE.get(_kind, "Internal")
            _event((_provider, _kind), "Failed", _source, _SAYS[_kind], _raw)
EV_STATUS = np.array([event[0] for event in EVENTS], dtype=object)
EV_FAILED = EV_STATUS == "Failed"
EV_SUCCESS = EV_STATUS == "Success"
EV_SOURCE = np.array([event[1] for event in EVENTS], dtype=object)
EV_RAW = np.array([event[3] for event in EVENTS], dtype=object)
#: A detail's text and error code by event (the last, -1: none).
EV_TEXT = np.array([event[2] for event in EVENTS] + [None], dtype=object)
EV_CODE = np.array([error_code(e[3]) if e[0] == "Failed" else None for e in EVENTS] + [None])


def _ev(provider: np.ndarray, kind: str) -> np.ndarray:
    """The event ``kind`` of each provider (-1 where it has none)."""
    table = np.array([EV.get((name, kind), -1) for name in PROVIDERS])
    return table[provider]


# -- workflows ---------------------------------------------------------------------------------

#: Local-hour shapes (weekday, weekend), each 24 values: relative volume by local hour.
SHAPES = {
    "shopping": (
        [.15, .08, .05, .04, .05, .1, .3, .6, .9, 1, 1.1, 1.3, 1.8, 1.5, 1.2, 1.1, 1.2, 1.5, 1.7, 1.6, 1.3, 1, .6, .3],
        [.25, .15, .08, .05, .04, .06, .15, .3, .6, 1, 1.4, 1.6, 1.7, 1.7, 1.6, 1.5, 1.4, 1.4, 1.3, 1.2, 1, .8, .6, .4],
    ),
    "login": (
        [.15, .08, .05, .04, .08, .3, .9, 1.7, 1.8, 1.4, 1.1, 1, 1.2, 1.1, 1, 1, 1.1, 1.2, 1.3, 1.4, 1.5, 1.3, .9, .4],
        [.2, .12, .06, .04, .05, .1, .3, .7, 1.1, 1.4, 1.4, 1.3, 1.3, 1.2, 1.1, 1.1, 1.1, 1.2, 1.3, 1.4, 1.4, 1.2, .8, .4],
    ),
    "transfer": (
        [.1, .05, .03, .03, .04, .1, .3, .7, 1.1, 1.3, 1.3, 1.3, 1.5, 1.3, 1.2, 1.2, 1.3, 1.5, 1.6, 1.6, 1.4, 1.1, .6, .25],
        [.15, .08, .05, .03, .03, .05, .15, .4, .8, 1.2, 1.4, 1.5, 1.5, 1.4, 1.3, 1.3, 1.3, 1.4, 1.5, 1.6, 1.4, 1.1, .7, .35],
    ),
    "alert": (
        [.2, .1, .05, .05, .05, .1, .3, 4, 1.2, 1, 1, 1, 1.2, 1.1, 1, 1, 1.1, 1.3, 1.4, 1.3, 1.1, .8, .5, .3],
        [.25, .15, .08, .05, .05, .06, .2, 3, 1, 1, 1.1, 1.2, 1.3, 1.3, 1.2, 1.1, 1.1, 1.2, 1.2, 1.1, 1, .8, .5, .35],
    ),
}  # fmt: skip

#: identifier: (name, channels, per customer per day, shape, weekend factor, mean extra sends
#: in a burst, seconds between them, severity, critical, email stream, in-app read share)
WORKFLOWS = {
    "card-transaction": ("Card transaction", ("push", "in_app"), 0.16, "shopping", 1.1, 0.6, 240, "medium", False, "transactional", 0.35),
    "card-declined": ("Card declined", ("push", "in_app"), 0.008, "shopping", 1.1, 0.5, 40, "high", False, "transactional", 0.6),
    "login-otp": ("Login code", ("sms",), 0.09, "login", 0.85, 0.12, 70, "high", True, "transactional", 0.0),
    "new-device": ("New device sign-in", ("email", "push"), 0.004, "login", 1.0, 0.0, 0, "high", True, "transactional", 0.0),
    "transfer-sent": ("Transfer sent", ("in_app", "email"), 0.035, "transfer", 0.8, 0.25, 300, "low", False, "transactional", 0.5),
    "money-in": ("Money in", ("push", "in_app"), 0.02, "transfer", 0.9, 0.0, 0, "low", False, "transactional", 0.55),
    "low-balance": ("Low balance", ("push", "email"), 0.01, "alert", 1.0, 0.0, 0, "medium", False, "transactional", 0.0),
    "bill-due": ("Upcoming payment", ("email", "in_app"), 0.0, "", 0.0, 0.0, 0, "low", False, "transactional", 0.3),
    "monthly-statement": ("Your statement is ready", ("email", "in_app"), 0.0, "", 0.0, 0.0, 0, "low", False, "bulk", 0.25),
    "weekly-budget": ("Your week in spending", ("email",), 0.0, "", 0.0, 0.0, 0, "none", False, "bulk", 0.0),
    "marketing-broadcast": ("Tidewater news", ("email", "in_app"), 0.0, "", 0.0, 0.0, 0, "none", False, "bulk", 0.15),
}  # fmt: skip
WF = list(WORKFLOWS)
W = {name: i for i, name in enumerate(WF)}
REAL_TIME = [name for name in WF if WORKFLOWS[name][2] > 0]


# -- customers ---------------------------------------------------------------------------------

FIRST = ("James", "Mary", "Olivia", "Noah", "Liam", "Emma", "Ava", "Jack", "Mia", "Lucas", "Chloe",
         "Ethan", "Grace", "Harry", "Isla", "Leo", "Zoe", "Aiden", "Priya", "Wei", "Sofia", "Omar")  # fmt: skip
LAST = ("Smith", "Johnson", "Brown", "Taylor", "Wilson", "Nguyen", "Patel", "Jones", "Williams",
        "Garcia", "Martin", "Lee", "Walker", "Hall", "Young", "King", "Wright", "Scott", "Green")  # fmt: skip


class _Customers:
    """Every customer at ``now``, in each region oldest first (the first ``active(t)`` of a
    region had joined by ``t``)."""

    def __init__(self, rng: np.random.Generator, total: int, start: int, now: int):
        sizes = [round(total * spec[1]) for spec in REGIONS.values()]
        self.offset = np.concatenate([[0], np.cumsum(sizes)])
        self.size, n = np.array(sizes), sum(sizes)
        self.region = np.repeat(np.arange(len(REGIONS)), sizes)
        self.now = now
        push, domain, bounces, phone = [], [], [], []
        for (_, _, _, ios, prefix, domains), size in zip(REGIONS.values(), sizes, strict=True):
            push.append(np.where(rng.random(size) < ios, P["apns"], P["fcm"]))
            names, shares = list(domains), np.array([share for share, _ in domains.values()])
            pick = rng.choice(len(names), size, p=shares / shares.sum())
            domain.append(np.array(names, dtype=object)[pick])
            bounces.append(
                rng.random(size) < np.array([rate for _, rate in domains.values()])[pick]
            )
            width = 12 - len(prefix)  # E.164: +1 and ten digits, +447 and nine, +614 and eight
            digits = rng.integers(2 * 10 ** (width - 1), 10**width, size)
            phone.extend(f"{prefix}{d}" for d in digits.tolist())
        self.push = np.concatenate(push)
        self.domain = np.concatenate(domain)
        self.hard_bounce = np.concatenate(bounces)
        self.phone = np.array(phone, dtype=object)
        self.bad_phone = rng.random(n) < 0.004
        self.statement = rng.random(n) < 0.72
        self.budget = rng.random(n) < 0.25
        self.marketing = rng.random(n) < 0.45
        # push allowed on the phone (iPhones ask, Android allows by default); otherwise email
        self.push_ok = rng.random(n) < np.where(self.push == P["apns"], 0.62, 0.85)
        # a dead push token for days (app deleted, phone replaced) until the app registers again
        dead = rng.random(n) < 0.2
        self.dead_from = np.where(
            dead, start + (rng.uniform(-20, 56, n) * DAY).astype(np.int64), now
        )
        self.dead_to = self.dead_from + (rng.lognormal(np.log(4), 1.0, n) * DAY).astype(np.int64)
        first = np.array(FIRST, dtype=object)[rng.integers(0, len(FIRST), n)]
        last = np.array(LAST, dtype=object)[rng.integers(0, len(LAST), n)]
        self.first, self.last = first, last
        number = rng.integers(1, 999, n)
        self.email = np.array(
            [
                f"{a}.{b}{k}@{d}".lower()
                for a, b, k, d in zip(first, last, number, self.domain, strict=True)
            ],
            dtype=object,
        )
        ids = rng.integers(0, 2**62, n)
        self.subscriber_id = np.array([f"cust_{i:016x}" for i in ids.tolist()], dtype=object)
        self.internal_id = np.array([f"65{i:022x}" for i in ids.tolist()], dtype=object)

    def active(self, region: int, t: Any) -> Any:
        """How many of the region's customers had joined by ``t`` (ns)."""
        return self.size[region] * np.exp(-GROWTH * (self.now - np.asarray(t)) / DAY)

    def pick(self, region: int, t: np.ndarray, u: np.ndarray) -> np.ndarray:
        """Customers of the region active at ``t``, older ones more often (``u`` uniform)."""
        count = self.active(region, t)
        return self.offset[region] + np.minimum(
            (u**1.4 * count).astype(np.int64), count.astype(np.int64) - 1
        )


# -- the calendar ------------------------------------------------------------------------------


def _pay_share(key: str, dates: pd.DatetimeIndex) -> np.ndarray:
    """The share of a region's customers paid on each local date."""
    share = np.zeros(len(dates))
    weekday = np.asarray(dates.dayofweek)
    working = weekday < 5
    since = (dates - pd.Timestamp("2026-01-01")).days.to_numpy()
    if key == "us":
        for day in (1, 15):  # semi-monthly, the Friday before when it falls on a weekend
            target = dates[dates.day == day]
            moved = target - pd.to_timedelta(np.maximum(np.asarray(target.dayofweek) - 4, 0), "D")
            share[dates.isin(moved)] += 0.3
        share[(since - 1) % 14 == 0] += 0.3  # every other Friday from Jan 2
    elif key == "uk":
        month = dates.to_period("M")
        last_working = pd.Series(dates[working]).groupby(month[working]).transform("max")
        share[dates.isin(last_working)] += 0.62
        share[weekday == 4] += 0.06  # weekly wages
    else:
        share[(since - 7) % 14 == 0] += 0.5  # every other Thursday from Jan 8
        share[dates.day == 15] += 0.1
    return share


class _Calendar:
    """Each hour of the span as each region sees it: local hour, weekend, date and payday."""

    def __init__(self, start: int, hours: int):
        utc = pd.DatetimeIndex(start + np.arange(hours) * HOUR, tz="UTC")
        names = (
            "hour",
            "weekday",
            "weekend",
            "dom",
            "day",
            "pay",
            "to_pay",
            "since_pay",
            "dates",
            "zones",
        )
        for name in names:
            setattr(self, name, [])
        for key, (zone, *_) in REGIONS.items():
            local = utc.tz_convert(zone)
            margin = pd.Timedelta(days=40)
            dates = pd.date_range(local[0].date() - margin, local[-1].date() + margin)
            share = _pay_share(key, dates)
            paydays = np.flatnonzero(share >= 0.25)
            position = np.arange(len(dates))
            after = paydays[np.minimum(np.searchsorted(paydays, position), len(paydays) - 1)]
            before = paydays[np.maximum(np.searchsorted(paydays, position, "right") - 1, 0)]
            day = (local.tz_localize(None).normalize() - dates[0]).days.to_numpy()
            weekday = np.asarray(local.dayofweek)
            values = (np.asarray(local.hour), weekday, weekday >= 5, np.asarray(local.day), day,
                      share[day], (after - position)[day], (position - before)[day], dates, zone)  # fmt: skip
            for name, value in zip(names, values, strict=True):
                getattr(self, name).append(value)


def _day_factor(name: str, cal: _Calendar, r: int) -> np.ndarray:
    """A workflow's volume on each hour's local date, from the payday cycle and the month."""
    pay, to_pay, since = cal.pay[r] >= 0.25, cal.to_pay[r], cal.since_pay[r]
    dom, friday = cal.dom[r], cal.weekday[r] == 4
    one = np.ones(len(pay))
    if name == "card-transaction":
        return one + 0.35 * pay + 0.2 * (since == 1) - 0.12 * (to_pay <= 2) * ~pay
    if name == "card-declined":
        return np.where(to_pay <= 3, 1.8, 1.0) * np.where(since <= 1, 0.6, 1.0)
    if name == "login-otp":
        return one + 0.25 * pay
    if name == "transfer-sent":
        return one + 0.5 * pay + 0.5 * ((dom == 1) | (dom == 2)) + 0.2 * friday
    if name == "low-balance":
        return np.where(to_pay <= 3, 2.0, 1.0) * np.where(since <= 2, 0.4, 1.0)
    return one


# -- drawing the notifications -----------------------------------------------------------------


def _local(cal: _Calendar, r: int, date: pd.Timestamp, hour: float) -> int:
    """A local date and hour of region ``r`` as UTC nanoseconds."""
    at = (date + pd.Timedelta(hours=hour)).tz_localize(
        cal.zones[r], ambiguous=True, nonexistent="shift_forward"
    )
    return int(at.tz_convert("UTC").value)


def _chunked(
    rng: np.random.Generator, at: int, n: int, chunks: int, every: int, spread: int
) -> np.ndarray:
    """``n`` sends in ``chunks`` chunks ``every`` ns apart from ``at``, each spread over ``spread``."""
    chunk = np.arange(n) * chunks // max(n, 1)
    return at + chunk * every + rng.integers(0, spread, n)


def _background(rng: np.random.Generator, people: _Customers, cal: _Calendar, start: int, now: int):
    """The quiet traffic's notifications: (times, workflows, customers, batch flags), unsorted."""
    hours = len(cal.hour[0])
    hour_start = start + np.arange(hours) * HOUR
    times, flows, subs, batch = [], [], [], []

    def add(t: np.ndarray, name: str, who: np.ndarray, bulk: bool) -> None:
        times.append(t), flows.append(np.full(len(t), W[name])), subs.append(who)
        batch.append(np.full(len(t), bulk))

    for r in range(len(REGIONS)):
        active = people.active(r, hour_start + HOUR // 2)
        for name in REAL_TIME:
            _, _, rate, shape, weekend, burst, gap, *_ = WORKFLOWS[name]
            weekday_shape, weekend_shape = (np.array(s) / np.mean(s) for s in SHAPES[shape])
            h = cal.hour[r]
            level = np.where(cal.weekend[r], weekend * weekend_shape[h], weekday_shape[h])
            mean = rate * active / 24 * level * _day_factor(name, cal, r)
            day_noise = rng.gamma(20, 1 / 20, cal.day[r].max() + 1)[cal.day[r]]
            noisy = mean * day_noise * rng.gamma(30, 1 / 30, hours)
            count = rng.poisson(noisy)
            t = np.repeat(hour_start, count) + rng.integers(0, HOUR, count.sum())
            who = people.pick(r, t, rng.random(len(t)))
            if burst:  # the same customer again, minutes apart
                extra = rng.geometric(1 / (1 + burst), len(t)) - 1
                first = np.repeat(np.arange(len(t)), extra)
                step = np.arange(len(first)) - np.repeat(np.cumsum(extra) - extra, extra) + 1
                gaps = (rng.exponential(gap, len(first)) * step * SECOND).astype(np.int64)
                t, who = np.concatenate([t, t[first] + gaps]), np.concatenate([who, who[first]])
            add(t, name, who, False)
        # salary deposits on paydays, in bursts as payroll files post (03:00-07:00 local)
        dates = cal.dates[r]
        span = dates[(dates >= dates[cal.day[r][0]]) & (dates <= dates[cal.day[r][-1]])]
        share = _pay_share(list(REGIONS)[r], span)
        for date, paid in zip(span, share, strict=True):
            midnight = _local(cal, r, date, 0)
            n_active = people.active(r, midnight)
            if paid > 0:
                n = rng.poisson(paid * n_active * 0.75)
                wave = rng.choice(8, n, p=np.array([1, 2, 4, 5, 4, 3, 2, 1]) / 22)
                t = midnight + 3 * HOUR + wave * 30 * MINUTE
                t += (rng.exponential(150, n) * SECOND).astype(np.int64)
                add(t, "money-in", people.pick(r, t, rng.random(n)), True)
            # bill reminders at 08:00 local
            mult = 2.2 if date.day >= 26 or date.day == 1 else 1.5 if 12 <= date.day <= 14 else 0.7
            n = rng.poisson(0.018 * n_active * mult * (0.6 if date.dayofweek >= 5 else 1.0))
            t = _local(cal, r, date, 8) + rng.integers(0, 15 * MINUTE, n)
            add(t, "bill-due", people.pick(r, t, rng.random(n)), True)
            # weekly budget on Sunday evening, to those who asked for it
            if date.dayofweek == 6:
                who = _audience(rng, people, r, midnight, people.budget, 1.0)
                add(_chunked(rng, _local(cal, r, date, 18), len(who), 20, 2 * MINUTE, 2 * MINUTE),
                    "weekly-budget", who, True)  # fmt: skip
            # statements on the second working day of the month, six hours of 10-minute chunks
            month = span[(span.month == date.month) & (span.year == date.year)]
            month_days = pd.date_range(date.replace(day=1), periods=date.days_in_month)
            working = month_days[month_days.dayofweek < 5]
            if len(month) and date == working[1]:
                who = _audience(rng, people, r, midnight, people.statement, 1.0)
                add(_chunked(rng, _local(cal, r, date, 5.5), len(who), 36, 10 * MINUTE, 90 * SECOND),
                    "monthly-statement", who, True)  # fmt: skip
    # marketing campaigns: most weeks, one region's opted-in customers, throttled
    shares = np.array([spec[1] for spec in REGIONS.values()])
    for week in pd.date_range(pd.Timestamp(start, tz="UTC").normalize() - pd.Timedelta(days=7),
                              pd.Timestamp(now, tz="UTC"), freq="W-MON"):  # fmt: skip
        if rng.random() > 0.7:
            continue
        r = int(rng.choice(len(REGIONS), p=shares))
        date = week.tz_localize(None) + pd.Timedelta(days=int(rng.integers(1, 4)))
        at = _local(cal, r, date, float(rng.choice([10, 11, 14, 15])))
        who = _audience(rng, people, r, at, people.marketing, rng.uniform(0.4, 1.0))
        chunks = int(rng.integers(12, 31))
        sends = _chunked(rng, at, len(who), chunks, 5 * MINUTE, 4 * MINUTE)
        add(sends, "marketing-broadcast", who, True)
    t = np.concatenate(times)
    keep = (t >= start) & (t < now)
    columns = (t, np.concatenate(flows), np.concatenate(subs), np.concatenate(batch))
    return tuple(column[keep] for column in columns)


def _audience(
    rng, people: _Customers, r: int, at: int, wanted: np.ndarray, share: float
) -> np.ndarray:
    """The region's customers active at ``at`` who opted in, a ``share`` of them, shuffled."""
    first = people.offset[r]
    who = first + np.flatnonzero(wanted[first : first + int(people.active(r, at))])
    return rng.permutation(who[rng.random(len(who)) < share])


# -- jobs and their outcomes -------------------------------------------------------------------


def _jobs(notes: dict[str, np.ndarray], people: _Customers) -> dict[str, np.ndarray]:
    """One job per channel of each notification's workflow, with its provider."""
    note, step, channel = [], [], []
    for name, (_, channels, *_) in WORKFLOWS.items():
        mine = np.flatnonzero(notes["wf"] == W[name])
        for i, ch in enumerate(channels):
            note.append(mine), step.append(np.full(len(mine), i))
            channel.append(np.full(len(mine), C[ch]))
    jobs = {"note": np.concatenate(note), "step": np.concatenate(step)}
    jobs["channel"] = np.concatenate(channel)
    sub, wf = notes["sub"][jobs["note"]], notes["wf"][jobs["note"]]
    # no push allowed: the push step becomes an email, or goes if the workflow emails anyway
    no_push = (jobs["channel"] == C["push"]) & ~people.push_ok[sub]
    emails = np.array(["email" in WORKFLOWS[name][1] for name in WF])[wf]
    jobs["channel"][no_push] = C["email"]
    keep = ~(no_push & emails)
    jobs = {key: value[keep] for key, value in jobs.items()}
    sub, wf = sub[keep], wf[keep]
    region_sms = np.array([P[spec[2]] for spec in REGIONS.values()])
    bulk = np.array([WORKFLOWS[name][9] == "bulk" for name in WF])[wf]
    email = np.where(bulk | (people.region[sub] == 1), P["ses"], P["sendgrid"])
    jobs["provider"] = np.select(
        [jobs["channel"] == C["push"], jobs["channel"] == C["email"], jobs["channel"] == C["sms"]],
        [people.push[sub], email, region_sms[people.region[sub]]],
        P["svc"],
    )
    jobs["t"] = notes["t"][jobs["note"]]
    return jobs


class _Conditions:
    """Each provider's failure and latency factors by UTC day and hour, and the load by hour."""

    def __init__(self, rng, start: int, hours: int, load: np.ndarray, load_latency: float):
        days = hours // 24 + 2
        self.start, self.load, self.load_latency = start, load, load_latency
        self.fail_day = rng.lognormal(0, 0.4, (len(PROVIDERS), days))
        self.fail_hour = rng.lognormal(0, 0.3, (len(PROVIDERS), hours))
        self.slow_day = rng.lognormal(0, 0.12, (len(PROVIDERS), days))


def _outcomes(
    rng: np.random.Generator, jobs: dict, notes: dict, people: _Customers, cond: _Conditions
) -> None:
    """Each job's sends (``attempts``, the ``retry`` event of the failed ones, the ``final``
    event), its ``hook`` (a receipt, bounce or read; -1 none), ``latency``, ``wait`` and
    ``lag`` (seconds): the quiet traffic's outcomes, drawn with ``rng``, in ``jobs``."""
    n, p, ch = len(jobs["t"]), jobs["provider"], jobs["channel"]
    sub, wf = notes["sub"][jobs["note"]], notes["wf"][jobs["note"]]
    hour = np.clip((jobs["t"] - cond.start) // HOUR, 0, len(cond.load) - 1)
    day = hour // 24
    load = cond.load[hour]
    factor = cond.fail_day[p, day] * cond.fail_hour[p, hour]
    transient_rate = (
        np.array([PROVIDER[name][2] for name in PROVIDERS])[p] * factor * (1 + 3 * load**2)
    )
    permanent_rate = np.array([PROVIDER[name][3] for name in PROVIDERS])[p] * factor
    u = rng.random((6, n))
    failed = u[0] < transient_rate
    kind = np.where(u[1] < 0.55, _ev(p, "rate"), _ev(p, "server"))
    fails = failed.astype(int) + (failed & (u[2] < 0.35)) + (failed & (u[2] < 0.35) & (u[3] < 0.35))
    retry = np.where(failed, kind, -1)
    final = np.where(fails == 3, kind, EV["sent"])
    final = np.where((fails < 3) & (u[4] < permanent_rate), _ev(p, "permanent"), final)
    # what is wrong with the customer: a dead token, an invalid number (no retry)
    dead = (
        (ch == C["push"]) & (jobs["t"] >= people.dead_from[sub]) & (jobs["t"] < people.dead_to[sub])
    )
    invalid = (ch == C["sms"]) & people.bad_phone[sub]
    final = np.where(dead, _ev(p, "dead"), np.where(invalid, _ev(p, "permanent"), final))
    retry[dead | invalid], fails[dead | invalid] = -1, 0
    # receipts: delivered, bounced, undelivered, read
    sent = final == EV["sent"]
    delivered = np.array([PROVIDER[name][4] for name in PROVIDERS])[p]
    undelivered = np.array([PROVIDER[name][5] for name in PROVIDERS])[p]
    read = np.array([WORKFLOWS[name][10] for name in WF])[wf]
    email, sms = sent & (ch == C["email"]), sent & (ch == C["sms"])
    hook = np.full(n, -1)
    hook = np.where(sent & (u[5] < delivered), _ev(p, "delivered"), hook)
    hook = np.where(email & (u[5] >= 0.998), _ev(p, "hook_soft"), hook)
    hook = np.where(email & people.hard_bounce[sub], _ev(p, "hook_bounce"), hook)
    hook = np.where(sms & (u[5] >= 1 - undelivered), _ev(p, "hook_undelivered"), hook)
    hook = np.where((ch == C["in_app"]) & (u[5] < read), EV["read"], hook)
    jobs["attempts"] = np.minimum(fails + 1, 3)
    jobs["retry"], jobs["final"], jobs["hook"] = retry, final, hook
    slow = np.array([PROVIDER[name][1] for name in PROVIDERS])[p] * cond.slow_day[p, day]
    busy = 1 + cond.load_latency * load
    jobs["latency"] = slow * rng.lognormal(0, 0.45, n) * busy
    batch = notes["batch"][jobs["note"]]
    queue = rng.exponential(0.4, n) + batch * rng.exponential(12, n)  # a batch queues up
    jobs["wait"] = 0.15 + jobs["step"] * 0.3 + queue * busy
    read_lag, receipt_lag = rng.lognormal(np.log(1800), 1.3, n), rng.lognormal(np.log(6), 1.0, n)
    lag = np.where(hook == EV["read"], read_lag, receipt_lag)
    jobs["lag"] = np.where(EV_FAILED[np.maximum(hook, 0)] & (hook >= 0), lag * 4, lag)


# -- planted incidents -------------------------------------------------------------------------


def _busy(rng: np.random.Generator, t: np.ndarray, lo: int, hi: int) -> int:
    """A start between ``lo`` and ``hi``, in an hour chosen by how many of ``t`` it holds
    (squared: trouble comes with load)."""
    edges = np.arange(lo - lo % HOUR, hi, HOUR)
    counts = np.histogram(t, bins=np.append(edges, edges[-1] + HOUR))[0] ** 2 + 0.01
    return int(
        edges[rng.choice(len(edges), p=counts / counts.sum())] + rng.integers(0, 4) * 15 * MINUTE
    )


def _incident(kind: str, name: str, start: int, end: int, hits: np.ndarray, *, channel=None,
              provider=None, workflow=None, domain=None) -> dict[str, Any]:  # fmt: skip
    return {
        "kind": kind, "name": name, "channel": channel, "provider_id": provider, "workflow": workflow,
        "domain": domain, "start": pd.Timestamp(start, tz="UTC"), "end": pd.Timestamp(end, tz="UTC"),
        "optional": False, "hits": pd.to_datetime(np.sort(hits), utc=True),
    }  # fmt: skip


def _plant(rng, notes: dict, jobs: dict, people: _Customers, cond: _Conditions, now: int,
           loop_mult: float) -> tuple[dict, dict, list[dict]]:  # fmt: skip
    """One incident of each kind, drawn with ``rng``, on the quiet traffic: the notifications
    and jobs with those added by the loop, ``keep`` cleared on those not sent, the outcomes of
    the rest changed; and the planted incidents."""
    planted = []
    # volume_spike: a card processor's webhook loop re-sends card alerts for a few customers
    name = "card-transaction"
    mine = notes["t"][notes["wf"] == W[name]]
    start = _busy(rng, mine, now - 3 * DAY, now - 36 * HOUR)
    end = start + int(rng.uniform(50, 70) * MINUTE)
    usual = np.mean(
        [((mine >= start - k * 7 * DAY) & (mine < end - k * 7 * DAY)).sum() for k in (1, 2, 3, 4)]
    )
    added = round((loop_mult - 1) * usual)
    region = int(rng.choice(len(REGIONS), p=[spec[1] for spec in REGIONS.values()]))
    few = int(rng.integers(3, 7))
    looped = people.pick(region, np.full(few, start), rng.random(few))
    who = looped[np.arange(added) % len(looped)]
    t = start + (np.sort(rng.random(added)) * (end - start)).astype(np.int64)
    extra = {"t": t, "wf": np.full(added, W[name]), "sub": who, "batch": np.zeros(added, bool),
             "id": (1 << 40) + np.arange(added), "keep": np.ones(added, bool)}  # fmt: skip
    extra_jobs = _jobs(extra, people)
    _outcomes(rng, extra_jobs, extra, people, cond)
    extra_jobs["id"] = (1 << 40) + np.arange(len(extra_jobs["t"]))
    extra_jobs["note"] = extra_jobs["note"] + len(notes["t"])
    notes = {key: np.concatenate([notes[key], extra[key]]) for key in notes}
    jobs = {key: np.concatenate([jobs[key], extra_jobs[key]]) for key in jobs}
    label = f"{name} loop ({len(looped)} customers)"
    planted.append(_incident("volume_spike", label, start, end, t, workflow=name))
    # volume_drop: a workflow stops sending (a deploy broke its trigger)
    name = str(rng.choice(["transfer-sent", "login-otp"]))
    of = notes["wf"] == W[name]
    start = _busy(rng, notes["t"][of], now - 3 * DAY, now - 2 * DAY)
    end = start + int(rng.uniform(4, 7) * HOUR)
    stopped = of & (notes["t"] >= start) & (notes["t"] < end)
    notes["keep"] &= ~stopped
    hits = notes["t"][stopped]
    planted.append(_incident("volume_drop", f"{name} stopped", start, end, hits, workflow=name))

    p, t, sent = jobs["provider"], jobs["t"], jobs["final"] == EV["sent"]
    live = notes["keep"][jobs["note"]]
    bounced = EV_FAILED[np.maximum(jobs["hook"], 0)] & (jobs["hook"] >= 0)
    was_failed = EV_FAILED[jobs["final"]] | bounced

    def during(provider: str, start: int, end: int) -> np.ndarray:
        return live & (p == P[provider]) & (t >= start) & (t < end)

    def hit(kind, label, start, end, which, provider, **where):
        hits = notes["t"][np.unique(jobs["note"][which])]
        channel = PROVIDER[provider][0]
        planted.append(_incident(kind, label, start, end, hits, channel=channel, provider=provider, **where))  # fmt: skip

    # provider_outage: attempts time out for about two hours (retried, mostly in vain)
    name = str(rng.choice(["twilio", "vonage", "sendgrid"]))
    start = _busy(rng, t[p == P[name]], now - 5 * DAY, now - 3 * DAY)
    end = start + int(rng.uniform(1.75, 2.5) * HOUR)
    inside = np.flatnonzero(during(name, start, end))
    fails = _leading_failures(rng, len(inside), (0.92, 0.92, 0.92))
    _fail_sends(jobs, inside, fails, EV[(name, "outage")])
    newly = inside[(fails == 3) & ~was_failed[inside]]
    hit("provider_outage", f"{name} outage", start, end, newly, name)
    # stale_credentials: a push key revoked; every send fails with the auth error from then on
    name = "apns" if rng.random() < 0.7 else "fcm"
    start = now - int(rng.uniform(6, 14) * HOUR)
    inside = np.flatnonzero(during(name, start, now))
    jobs["final"][inside], jobs["attempts"][inside] = EV[(name, "auth")], 1
    jobs["retry"][inside] = jobs["hook"][inside] = -1
    newly = inside[~was_failed[inside]]
    hit("stale_credentials", f"{name} credentials revoked", start, now, newly, name)
    # domain_bounces: one mailbox provider rejects mail from both email providers for hours
    domain = str(rng.choice(["gmail.com", "outlook.com", "icloud.com"], p=[0.5, 0.25, 0.25]))
    to = (jobs["channel"] == C["email"]) & (people.domain[notes["sub"][jobs["note"]]] == domain)
    start = _busy(rng, t[to], now - int(6.5 * DAY), now - 5 * DAY)
    end = start + int(rng.uniform(4, 8) * HOUR)
    inside = np.flatnonzero(live & to & sent & ~was_failed & (t >= start) & (t < end))
    inside = inside[rng.random(len(inside)) < 0.85]
    jobs["hook"][inside] = _ev(p[inside], "hook_block")
    jobs["lag"][inside] = rng.lognormal(np.log(20), 0.8, len(inside))
    most = PROVIDERS[np.bincount(p[inside], minlength=len(PROVIDERS)).argmax()]
    hit("domain_bounces", f"{domain} rejects mail", start, end, inside, most, domain=domain)
    # error_spike: rate limited (429) on over half the sends for an hour or two; retried
    name = str(rng.choice(["sendgrid", "fcm", "twilio"]))
    start = _busy(rng, t[p == P[name]], now - 30 * HOUR, now - 16 * HOUR)
    end = start + int(rng.uniform(1, 1.75) * HOUR)
    inside = np.flatnonzero(during(name, start, end) & ~was_failed)
    fails = _leading_failures(rng, len(inside), (0.55, 0.3, 0.15))
    _fail_sends(jobs, inside, fails, EV[(name, "rate")])
    hit("error_spike", f"{name} rate limiting", start, end, inside[fails > 0], name)
    # latency_degradation: one provider several times slower for about four hours
    name = str(rng.choice(["apns", "fcm", "sendgrid", "ses", "twilio"]))
    start = _busy(rng, t[p == P[name]], now - 6 * DAY, now - 4 * DAY)
    end = start + int(rng.uniform(3.5, 4.5) * HOUR)
    inside = np.flatnonzero(during(name, start, end))
    times = rng.uniform(4, 7)
    jobs["latency"][inside] *= times
    hit("latency_degradation", f"{name} {times:.0f}x slower", start, end, inside, name)
    # degradation: a provider's failures climb for days until it is fixed
    name = str(rng.choice(["twilio", "vonage", "fcm"]))
    start = now - int(rng.uniform(20, 24) * DAY)
    end = start + int(rng.uniform(4, 6) * DAY)
    inside = np.flatnonzero(during(name, start, end) & sent & ~was_failed)
    share = rng.uniform(0.1, 0.14) * (t[inside] - start) / (end - start)
    inside = inside[rng.random(len(inside)) < share]
    if name == "fcm":
        jobs["final"][inside], jobs["hook"][inside] = EV[(name, "degraded")], -1
    else:
        jobs["hook"][inside] = EV[(name, "hook_degraded")]
    hit("degradation", f"{name} failures climbing", start, end, inside, name)
    return notes, jobs, planted


def _leading_failures(
    rng: np.random.Generator, n: int, rates: tuple[float, float, float]
) -> np.ndarray:
    """How many sends fail in a row, of three, each failing with its rate once the last did."""
    u = rng.random((3, n))
    first = u[0] < rates[0]
    second = first & (u[1] < rates[1])
    return first.astype(int) + second + (second & (u[2] < rates[2]))


def _fail_sends(jobs: dict, which: np.ndarray, fails: np.ndarray, event: int) -> None:
    """The first ``fails`` sends of the jobs ``which`` fail with ``event`` (then retried)."""
    which, fails = which[fails > 0], fails[fails > 0]
    jobs["retry"][which] = event
    jobs["attempts"][which] = np.minimum(fails + 1, 3)
    jobs["final"][which] = np.where(fails == 3, event, jobs["final"][which])
    jobs["hook"][which] = np.where(fails == 3, -1, jobs["hook"][which])


# -- frames ------------------------------------------------------------------------------------

ORGANIZATION, ENVIRONMENT = "64f1c0a2b3d4e5f600000001", "64f1c0a2b3d4e5f600000002"
#: A notification's status from its jobs' final statuses, best first after failed and pending.
_RANK = ("failed", "pending", "read", "delivered", "sent", "warning", "completed")
_IN_FLIGHT = ("queued", "running")
_MIX = 0x9E3779B97F4A7C15F39CC0605CEDC835  # spreads a counter over 128 bits


def _ids(t: np.ndarray, counter: np.ndarray) -> np.ndarray:
    """Object ids: the creation second in hex, then a counter."""
    seconds = (t // SECOND).tolist()
    return np.array(
        [f"{s:08x}{c:016x}" for s, c in zip(seconds, counter.tolist(), strict=True)], dtype=object
    )


def _column(column: schemas.Column, values: Any) -> Any:
    """``values`` (an array; a category as (labels, codes)) as the column's dtype."""
    if column.dtype == schemas.CATEGORY:
        labels, codes = values
        lookup = np.array(
            [-1 if label is None else column.categories.index(label) for label in labels]
        )
        return pd.Categorical.from_codes(lookup[codes], categories=list(column.categories))
    if column.dtype == schemas.DATETIME:
        return pd.to_datetime(np.asarray(values, dtype=np.int64).view("M8[ns]"), utc=True).array
    if column.dtype == schemas.OBJECT:
        return values
    if column.dtype == schemas.STRING:
        return pd.array(values, dtype="string")
    return pd.array(values, dtype=column.dtype)


def _frame(spec: tuple[schemas.Column, ...], data: dict[str, Any]) -> pd.DataFrame:
    return pd.DataFrame({column.name: _column(column, data[column.name]) for column in spec})


def _render(notes: dict, jobs: dict, people: _Customers, now: int) -> tuple[pd.DataFrame, ...]:
    """The three frames of the notifications kept, their jobs and their execution details as
    far as they happened by ``now``."""
    kept = np.flatnonzero(notes["keep"])
    kept = kept[np.argsort(notes["t"][kept], kind="stable")]
    position = np.full(len(notes["t"]), -1)
    position[kept] = np.arange(len(kept))
    notes = {key: value[kept] for key, value in notes.items()}
    jobs["note"] = position[jobs["note"]]
    order = np.flatnonzero(jobs["note"] >= 0)
    order = order[np.lexsort((jobs["step"][order], jobs["note"][order]))]
    jobs = {key: value[order] for key, value in jobs.items()}
    n_jobs = len(order)
    # execution details: queued, each send, then a receipt, bounce or read
    count = 1 + jobs["attempts"] + (jobs["hook"] >= 0)
    job = np.repeat(np.arange(n_jobs), count)
    k = np.arange(len(job)) - np.repeat(np.cumsum(count) - count, count)
    latency, attempts = jobs["latency"], jobs["attempts"]
    sends = np.cumsum([jobs["wait"] + latency, 30 + latency, 120 + latency], axis=0)
    last_send = sends[attempts - 1, np.arange(n_jobs)]
    offset = np.select(
        [k == 0, k <= attempts[job]],
        [0.05 + 0.3 * jobs["step"][job], sends[np.clip(k - 1, 0, 2), job]],
        last_send[job] + jobs["lag"][job],
    )
    event = np.select(
        [k == 0, k < attempts[job], k == attempts[job]],
        [EV["queued"], jobs["retry"][job], jobs["final"][job]],
        jobs["hook"][job],
    )
    created = jobs["t"][job] + (offset * SECOND).astype(np.int64)
    happened = created < now
    job, k, event, created = job[happened], k[happened], event[happened], created[happened]
    # jobs: what their details say so far
    done = np.bincount(job, minlength=n_jobs)
    first_at = np.full(n_jobs, np.iinfo(np.int64).min)
    last_at = first_at.copy()
    starts = np.cumsum(done) - done
    some = done > 0
    first_at[some], last_at[some] = created[starts[some]], created[starts[some] + done[some] - 1]
    last_event = np.where(some, event[np.maximum(starts + done - 1, 0)], -1)
    sends_done = np.clip(done - 1, 0, attempts)
    final_failed = EV_FAILED[jobs["final"]]
    status = np.where(sends_done == attempts, np.where(final_failed, "failed", "completed"),
                      np.where(sends_done == 0, "queued", "running"))  # fmt: skip
    source = EV_SOURCE
    final_status = np.select(
        [~some | np.isin(status, _IN_FLIGHT), EV_FAILED[last_event], status != "completed",
         EV_STATUS[last_event] == "ReadConfirmation", EV_SUCCESS[last_event] & (source[last_event] == "Webhook")],
        [status, "failed", status, "read", "delivered"],
        "sent",
    )  # fmt: skip
    failed = EV_FAILED[event]
    retry = (k >= 2) & (k <= attempts[job])
    failed_at = np.flatnonzero(failed)
    last_failed = np.full(n_jobs, -1)
    last_failed[job[failed_at]] = event[failed_at]  # the later detail is written last
    texts, codes, raws = EV_TEXT, EV_CODE, EV_RAW
    # notifications
    n_notes = len(notes["t"])
    job_sub, wf = notes["sub"][jobs["note"]], notes["wf"][jobs["note"]]
    rank = np.array([_RANK.index("pending" if s in _IN_FLIGHT else s) for s in final_status])
    note_rank = np.full(n_notes, len(_RANK) - 1)
    np.minimum.at(note_rank, jobs["note"], rank)
    updated = notes["t"].copy()
    np.maximum.at(updated, jobs["note"], np.where(some, last_at, 0))
    note_ids = _ids(notes["t"], notes["id"])
    job_ids = _ids(jobs["t"], jobs["id"])
    detail_ids = _ids(created, jobs["id"][job] * 8 + k)
    wf_names = np.array(WF, dtype=object)
    region = people.region[notes["sub"]]
    currency = ("USD", "GBP", "AUD")
    payloads = np.array(
        [[{"currency": c, "workflow": name} for c in currency] for name in WF] + [[None] * 3]
    )
    step_ids = {(w, s): f"65a{w:03x}{s:018x}" for w in range(len(WF)) for s in range(3)}
    step_id = np.array(
        [step_ids[w, s] for w, s in zip(wf.tolist(), jobs["step"].tolist(), strict=True)],
        dtype=object,
    )
    step_name = np.array([f"{c}-step" for c in CHANNELS], dtype=object)[jobs["channel"]]
    spec_of = {name: WORKFLOWS[name] for name in WF}
    channel_lists = []
    for name in WF:  # as the customer allows push, then not
        steps = spec_of[name][1]
        emailed = [c.replace("push", "email") for c in steps]
        channel_lists += [
            list(steps),
            [c for c in steps if c != "push"] if "email" in steps else emailed,
        ]
    notifications = _frame(schemas.NOTIFICATIONS, {
        "notification_id": note_ids, "created_at": notes["t"], "updated_at": updated,
        "transaction_id": np.array([f"{x * _MIX % 2**128:032x}" for x in notes["id"].tolist()], dtype=object),
        "template_id": np.array([f"64b{w:021x}" for w in range(len(WF))], dtype=object)[notes["wf"]],
        "workflow_name": np.array([spec_of[n][0] for n in WF], dtype=object)[notes["wf"]],
        "workflow_identifier": wf_names[notes["wf"]],
        "template_origin": (["svc-cloud"], np.zeros(n_notes, int)),
        "subscriber_internal_id": people.internal_id[notes["sub"]],
        "subscriber_id": people.subscriber_id[notes["sub"]],
        "subscriber_email": people.email[notes["sub"]],
        "subscriber_first_name": people.first[notes["sub"]],
        "subscriber_last_name": people.last[notes["sub"]],
        "subscriber_phone": people.phone[notes["sub"]],
        "channels": _shared(channel_lists, notes["wf"] * 2 + ~people.push_ok[notes["sub"]]),
        "topic_keys": _shared([["offers"] if n == "marketing-broadcast" else [] for n in WF], notes["wf"]),
        "tags": _shared([[spec_of[n][9], n.split("-")[0]] for n in WF], notes["wf"]),
        "severity": ([spec_of[n][7] for n in WF], notes["wf"]),
        "critical": np.array([spec_of[n][8] for n in WF])[notes["wf"]],
        "digested_notification_id": np.full(n_notes, None, dtype=object),
        "payload": payloads[notes["wf"], region],
        "job_count": np.bincount(jobs["note"], minlength=n_notes),
        "failed_job_count": np.bincount(jobs["note"], weights=final_status == "failed", minlength=n_notes).astype(int),
        "status": (list(_RANK), note_rank),
        "environment_id": np.full(n_notes, ENVIRONMENT, dtype=object),
        "organization_id": np.full(n_notes, ORGANIZATION, dtype=object),
    })  # fmt: skip
    statuses = list(schemas.JOB_STATUSES)
    finals = list(schemas.FINAL_STATUSES)
    job_frame = _frame(schemas.JOBS, {
        "job_id": job_ids, "notification_id": note_ids[jobs["note"]],
        "type": (list(CHANNELS), jobs["channel"]),
        "status": (statuses, np.array([statuses.index(s) for s in status.tolist()])),
        "final_status": (finals, np.array([finals.index(s) for s in final_status.tolist()])),
        "step_id": step_id, "step_name": step_name,
        "provider_id": np.array(PROVIDERS, dtype=object)[jobs["provider"]],
        "digest_type": ([None], np.zeros(n_jobs, int)),
        "updated_at": np.where(some, last_at, jobs["t"]),
        "first_execution_at": first_at, "last_execution_at": last_at,
        "duration_s": np.where(some, (last_at - first_at) / SECOND, np.nan),
        "execution_count": done,
        "failed_count": np.bincount(job, weights=failed, minlength=n_jobs).astype(int),
        "retry_count": np.bincount(job, weights=retry, minlength=n_jobs).astype(int),
        "error_text": texts[last_failed], "error_code": codes[last_failed],
        "subscriber_id": people.subscriber_id[job_sub], "workflow": wf_names[wf],
    })  # fmt: skip
    details = _frame(schemas.EXECUTION_DETAILS, {
        "execution_detail_id": detail_ids, "job_id": job_ids[job],
        "notification_id": note_ids[jobs["note"][job]], "created_at": created,
        "status": (list(EV_STATUS), event),
        "source": ([e[1] for e in EVENTS], event),
        "detail": texts[event],
        "provider_id": np.array(PROVIDERS, dtype=object)[jobs["provider"][job]],
        "is_retry": retry, "is_test": np.zeros(len(job), bool),
        "raw": raws[event],
        "error_text": np.where(failed, texts[event], None),
        "error_code": np.where(failed, codes[event], None),
        "channel": ([*CHANNELS], jobs["channel"][job]),
    })  # fmt: skip
    return notifications, job_frame, details


def _shared(lists: list[list[str]], which: np.ndarray) -> np.ndarray:
    """A list per row, each row of a kind sharing one list."""
    table = np.empty(len(lists), dtype=object)
    table[:] = lists
    return table[which]


# -- the draw ----------------------------------------------------------------------------------


def make(seed: int, now: Any, days: int = 56, *, incidents: bool = False, load_latency: float = 0.4,
         loop_mult: float = 5.0) -> Traffic:  # fmt: skip
    """``days`` of Tidewater's traffic up to ``now`` (see the module docstring), with the planted
    incidents if ``incidents`` (the same quiet traffic: they are drawn apart)."""
    now_ts = pd.Timestamp(now)
    now_ts = now_ts.tz_localize("UTC") if now_ts.tzinfo is None else now_ts.tz_convert("UTC")
    end = int(now_ts.value)
    start = end - days * DAY
    start -= start % HOUR
    hours = -(-(end - start) // HOUR)
    rng = np.random.default_rng(seed)
    people = _Customers(rng, CUSTOMERS * 4 ** (seed - 1), start, end)
    calendar = _Calendar(start, hours)
    t, wf, sub, batch = _background(rng, people, calendar, start, end)
    notes = {"t": t, "wf": wf, "sub": sub, "batch": batch, "id": rng.permutation(len(t)) + 1,
             "keep": np.ones(len(t), bool)}  # fmt: skip
    per_hour = np.bincount((t - start) // HOUR, minlength=hours).astype(float)
    load = per_hour / max(np.percentile(per_hour, 98), 1.0)
    conditions = _Conditions(rng, start, hours, load, load_latency)
    jobs = _jobs(notes, people)
    _outcomes(rng, jobs, notes, people, conditions)
    jobs["id"] = np.arange(len(jobs["t"])) + 1
    planted: list[dict[str, Any]] = []
    if incidents:
        notes, jobs, planted = _plant(np.random.default_rng([seed, 2024]), notes, jobs, people, conditions,
                                      end, loop_mult)  # fmt: skip
    notifications, job_frame, details = _render(notes, jobs, people, end)
    return Traffic(notifications, job_frame, details, planted)
