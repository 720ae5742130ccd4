"""Traffic of "Wrenfield", a fictional food-delivery marketplace app, to measure
`toolkit.incidents.find_incidents` on traffic nobody tuned it on.

It was written blind: apart from the detector and from both other generators
(`toolkit.sandbox.seed.shaped`, `larkspur`), matching only the frame format of `toolkit.frames`
(and `Traffic`, which it returns), so none of its shapes was chosen with the detector in view.
``make(seed, now)`` draws the eight weeks before ``now`` (``days``) of:

- customers in four markets, each on its own local clock with the real DST rules: London
  (Europe/London, BST), Kolkata (Asia/Kolkata, +05:30, no DST), São Paulo (America/Sao_Paulo, no
  DST since 2019) and Sydney (Australia/Sydney, southern-hemisphere DST, October to April); each
  seed weights the markets differently (a Dirichlet draw); daily volume by seed (1: ~1,500,
  2: ~6,000, others log-uniform between 1,000 and 20,000); heavy and light customers
  (log-normal order frequency); each market's email domains (global and local ISPs); device
  platform by market (Kolkata and São Paulo mostly Android, Sydney and London about half iOS);
  restaurant partners apart from customers;
- the order lifecycle, one order giving a chain of notifications minutes apart:
  ``order-confirmed`` (in_app, push), ``courier-assigned`` (push, 3-15 min later),
  ``out-for-delivery`` (push, sms), ``delivered`` (push, in_app) and ``rate-your-order``
  (in_app, email) an hour after delivery for 85% of orders; 3% of orders are cancelled
  (``order-cancelled``: push, email) and stop there. Orders follow meal peaks per market (lunch
  around 12:30-13:30, dinner from 18:30 in Sydney to 21:00 in Kolkata), near zero from 02:00 to
  06:00 local, a much heavier Friday and Saturday dinner (x1.6) and late night, a Sunday brunch;
  orders cluster in bursts (a group ordering, a promo shared);
- ``partner-order-chat`` (chat) to the restaurant partner for a third of the orders, only while
  restaurants are open (10:00-23:00 local);
- ``login-otp`` (sms, a flat-ish daytime rhythm) and ``password-reset`` (email);
- marketing: ``promo-newsletter`` email campaigns on Tuesdays and Thursdays at 10:00 local to
  opted-in customers, throttled in 20 chunks two minutes apart (~40 min); ``promo-push`` at
  17:00 local on 3 or 4 random days a week (drawn per market and week), sent over ~8 min;
  rain days: one random local day per fortnight per market when orders (and their chats) are
  x1.6;
- ``week-in-food``, a weekly digest email on Sundays at 09:00 local, sent over ~25 min;
- providers: sms by market (Kolkata through plivo, the others through twilio), email split by
  customer between sendgrid and ses (a share per seed), push through fcm or apns by the
  customer's device, in_app through the service's own ``svc``, chat through whatsapp-business;
- background failures per provider as each provider reports them (the ``raw`` text is the
  provider's own error body or webhook event): dead mailboxes bouncing (5.1.1), full mailboxes
  (5.2.2), policy blocks (5.7.1), invalid phone numbers (twilio 21211 at the API, plivo
  "invalid destination number"), SMS undelivered by the carrier (twilio 30003/30005/30006, plivo
  delivery reports), more often at local night, dead push tokens (fcm
  messaging/registration-token-not-registered, apns Unregistered / BadDeviceToken), WhatsApp's
  131026; transient 5xx and rate-limit errors retried after 30 s, 2 min and 7 min; each
  provider's background failure rate varying day to day;
- send latency per provider (log-normal), slower under load (times ``1 + load_latency * load``,
  load 1 at the 98th percentile of the provider's hourly volume); delivery and bounce webhooks
  seconds to minutes after the send, in-app messages read minutes to hours later;
- each workflow family's popularity as a daily AR(1) walk, hourly overdispersion (a gamma
  multiplier) and slow growth (0.1-0.4% a day).

With ``incidents=True`` eight incidents are planted in the last days before ``now``, at places
and times drawn per seed (the busiest stretch of their day):

- ``volume_drop``: a workflow stops for 5 h (3.5 to 4.5 days before ``now``; ``usual``: its
  expected count when it is one drawn from an hourly rate: order-confirmed, login-otp);
- ``volume_spike``: a runaway loop re-triggers another workflow for 1 h for a few dozen stuck
  recipients, at ``loop_mult`` times the workflow's volume in that hour (2.5 to 3.5 days before);
- ``provider_outage``: a provider answers every send with its 5xx error for 2 h (1.5 to 2.5 days
  before; retries inside the outage fail too);
- ``stale_credentials``: one push platform's credentials go stale for the share of customers
  whose app build uses them (50-90%), from 18-40 h before ``now`` on (ongoing): apns answers
  403 InvalidProviderToken, fcm messaging/mismatched-credential;
- ``domain_bounces``: one regional ISP's domain rejects mail (550 5.7.1 bounce webhooks) for 6 h
  (its busiest 6 h 5 to 7 days before), on both email providers (the planted ``provider_id`` is
  the one with more hits);
- ``error_spike``: a provider rate-limits 85% of sends and retries for 50 min (4.5 to 5.5 days
  before): twilio 20429, ses Throttling, sendgrid's 429 body ("too many requests", no code),
  fcm messaging/message-rate-exceeded, apns TooManyRequests;
- ``latency_degradation``: a provider's send latency is 6-10 times its usual for 4 h (0.6 to
  1.4 days before);
- ``degradation``: a provider's failure rate climbs linearly from its usual to +25% over the
  last 4.5 days (ongoing): carrier filtering (twilio 30007), IP-reputation blocks (5.7.1 on
  email), fcm messaging/internal-error, apns InternalServerError.

The four provider incidents (outage, error spike, latency, degradation) fall on four different
providers among twilio, sendgrid, ses and the push platform not made stale. An incident's
``hits`` are the notifications it removed (the stop), added (the loop), sent through it in its
time (outage, latency, domain), that met its rate limit (error spike: retried or not, as
`find_incidents` counts a failure pattern's impact) or made fail (stale credentials,
degradation: those whose send finally failed from it).

The quiet draw has all the rhythm, campaigns, digests and rain days and no incident; the planted
draw is the same traffic plus the incidents (incidents draw from their own generator, and each
background draw of the delivery from its own, so the loop's added sends leave the others alone;
only the load-dependent latency near the loop and the stop changes). The same seed gives the
same data.

    draw = make(seed, now, incidents=True)
    activity, planted = draw.window(after, before)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from toolkit import schemas
from toolkit.error_codes import error_code
from toolkit.sandbox.seed.shaped import Traffic

MARKETS = ("london", "kolkata", "saopaulo", "sydney")
ZONES = ("Europe/London", "Asia/Kolkata", "America/Sao_Paulo", "Australia/Sydney")
#: Mean market weights (each seed draws its own around them).
MARKET_SHARES = (0.35, 0.3, 0.2, 0.15)
#: Daily notifications of the named seeds (others: log-uniform 1,000-20,000).
DAILY = {1: 1500, 2: 6000}
#: Lunch and dinner peaks (local hours) per market.
MEALS = ((12.5, 19.0), (13.5, 21.0), (12.75, 20.5), (12.5, 18.5))
IOS_SHARE = (0.5, 0.12, 0.2, 0.55)
PHONE = ("+447", "+919", "+55119", "+614")
DOMAINS = (
    (("gmail.com", 0.42), ("outlook.com", 0.12), ("btinternet.com", 0.12), ("yahoo.co.uk", 0.1),
     ("sky.com", 0.08), ("icloud.com", 0.1), ("virginmedia.com", 0.06)),
    (("gmail.com", 0.62), ("yahoo.co.in", 0.12), ("rediffmail.com", 0.1), ("outlook.com", 0.08),
     ("hotmail.com", 0.08)),
    (("gmail.com", 0.5), ("hotmail.com", 0.14), ("uol.com.br", 0.12), ("bol.com.br", 0.1),
     ("terra.com.br", 0.06), ("outlook.com", 0.08)),
    (("gmail.com", 0.4), ("bigpond.com", 0.16), ("outlook.com", 0.12), ("icloud.com", 0.14),
     ("optusnet.com.au", 0.1), ("yahoo.com.au", 0.08)),
)  # fmt: skip
FIRST = ("Amelia", "Oliver", "Priya", "Arjun", "Ana", "Lucas", "Chloe", "Jack", "Isla", "Rohan",
         "Beatriz", "Mateus", "Ella", "Noah", "Aisha", "Kavya")  # fmt: skip
LAST = ("Smith", "Patel", "Silva", "Jones", "Sharma", "Santos", "Brown", "Nguyen", "Williams",
        "Iyer", "Oliveira", "Taylor", "Das", "Costa")  # fmt: skip

#: Workflows: identifier, display name, channels (steps, in order), tags.
WORKFLOWS = (
    ("order-confirmed", "Order confirmed", ("in_app", "push"), ("orders",)),
    ("courier-assigned", "Courier assigned", ("push",), ("orders",)),
    ("out-for-delivery", "Out for delivery", ("push", "sms"), ("orders",)),
    ("delivered", "Order delivered", ("push", "in_app"), ("orders",)),
    ("rate-your-order", "Rate your order", ("in_app", "email"), ("orders", "feedback")),
    ("order-cancelled", "Order cancelled", ("push", "email"), ("orders",)),
    ("partner-order-chat", "New order (restaurant chat)", ("chat",), ("partners",)),
    ("login-otp", "Login code", ("sms",), ("security",)),
    ("password-reset", "Password reset", ("email",), ("security",)),
    ("promo-newsletter", "Newsletter", ("email",), ("marketing",)),
    ("promo-push", "Tonight's offers", ("push",), ("marketing",)),
    ("week-in-food", "Your week in food", ("email",), ("digest",)),
)
W = {name: code for code, (name, *_rest) in enumerate(WORKFLOWS)}
PROVIDERS = ("svc", "fcm", "apns", "twilio", "plivo", "sendgrid", "ses", "whatsapp-business")
P = {name: code for code, name in enumerate(PROVIDERS)}
#: Channel codes of the jobs, in this order.
MY_CHANNELS = ("in_app", "push", "sms", "email", "chat")
CHANNEL_OF = ("in_app", "push", "push", "sms", "sms", "email", "email", "chat")
#: Median send latency (s) per provider.
LATENCY = (0.05, 0.25, 0.3, 0.9, 1.4, 0.6, 0.35, 1.1)
#: Seconds after the first attempt at which a failed send is retried.
BACKOFF = np.array([0, 30, 120, 420], dtype=np.int64)
SEC = 1_000_000_000
HOUR = 3600 * SEC

# Errors as the providers report them: (detail, raw, source). ``raw`` is the provider's body.
_E = {
    "twilio/invalid": ("Unexpected provider error", '{"code": 21211, "message": "Invalid \'To\' Phone Number", "more_info": "https://www.twilio.com/docs/errors/21211", "status": 400}', "Internal"),
    "twilio/transient": ("Unexpected provider error", '{"code": 20500, "message": "Internal Server Error", "more_info": "https://www.twilio.com/docs/errors/20500", "status": 500}', "Internal"),
    "twilio/outage": ("Unexpected provider error", '{"code": 20503, "message": "Service Unavailable", "more_info": "https://www.twilio.com/docs/errors/20503", "status": 503}', "Internal"),
    "twilio/ratelimit": ("Unexpected provider error", '{"code": 20429, "message": "Too Many Requests", "more_info": "https://www.twilio.com/docs/errors/20429", "status": 429}', "Internal"),
    "twilio/30003": ("Message undelivered", '{"MessageStatus": "undelivered", "ErrorCode": "30003", "ErrorMessage": "Unreachable destination handset"}', "Webhook"),
    "twilio/30005": ("Message undelivered", '{"MessageStatus": "undelivered", "ErrorCode": "30005", "ErrorMessage": "Unknown destination handset"}', "Webhook"),
    "twilio/30006": ("Message undelivered", '{"MessageStatus": "undelivered", "ErrorCode": "30006", "ErrorMessage": "Landline or unreachable carrier"}', "Webhook"),
    "twilio/degraded": ("Message undelivered", '{"MessageStatus": "undelivered", "ErrorCode": "30007", "ErrorMessage": "Message filtered"}', "Webhook"),
    "plivo/invalid": ("Unexpected provider error", '{"error": "invalid destination number"}', "Internal"),
    "plivo/transient": ("Unexpected provider error", '{"error": "internal server error"}', "Internal"),
    "plivo/outage": ("Unexpected provider error", '{"error": "service unavailable"}', "Internal"),
    "plivo/ratelimit": ("Unexpected provider error", '{"error": "too many requests"}', "Internal"),
    "plivo/undelivered": ("Message undelivered", '{"Status": "undelivered", "ErrorCode": "80", "ErrorMessage": "Destination temporarily unavailable"}', "Webhook"),
    "plivo/degraded": ("Message undelivered", '{"Status": "undelivered", "ErrorCode": "30", "ErrorMessage": "Spam detected"}', "Webhook"),
    "sendgrid/transient": ("Unexpected provider error", '{"errors": [{"message": "Internal Server Error", "field": null, "help": null}]}', "Internal"),
    "sendgrid/outage": ("Unexpected provider error", '{"errors": [{"message": "Service Unavailable", "field": null, "help": null}]}', "Internal"),
    "sendgrid/ratelimit": ("Unexpected provider error", '{"errors": [{"field": null, "message": "too many requests"}]}', "Internal"),
    "sendgrid/dead": ("Email bounced", '{"event": "bounce", "type": "bounce", "status": "5.1.1", "reason": "550 5.1.1 The email account that you tried to reach does not exist."}', "Webhook"),
    "sendgrid/full": ("Email bounced", '{"event": "bounce", "type": "bounce", "status": "5.2.2", "reason": "552 5.2.2 The email account that you tried to reach is over quota."}', "Webhook"),
    "sendgrid/policy": ("Email bounced", '{"event": "bounce", "type": "blocked", "status": "5.7.1", "reason": "550 5.7.1 Message rejected due to local policy"}', "Webhook"),
    "sendgrid/domain": ("Email bounced", '{"event": "bounce", "type": "blocked", "status": "5.7.1", "reason": "550 5.7.1 Our system has detected an unusual rate of unsolicited mail originating from your IP address. Mail from your IP address has been blocked."}', "Webhook"),
    "sendgrid/degraded": ("Email bounced", '{"event": "bounce", "type": "blocked", "status": "5.7.1", "reason": "554 5.7.1 Service unavailable; Client host blocked using a reputation list"}', "Webhook"),
    "ses/transient": ("Unexpected provider error", '{"Error": {"Type": "Receiver", "Code": "InternalFailure", "Message": "The request processing has failed because of an unknown error."}}', "Internal"),
    "ses/outage": ("Unexpected provider error", '{"Error": {"Type": "Receiver", "Code": "ServiceUnavailable", "Message": "Service is unable to handle request."}}', "Internal"),
    "ses/ratelimit": ("Unexpected provider error", '{"Error": {"Type": "Sender", "Code": "Throttling", "Message": "Maximum sending rate exceeded."}}', "Internal"),
    "ses/dead": ("Email bounced", '{"eventType": "Bounce", "bounce": {"bounceType": "Permanent", "bounceSubType": "General", "bouncedRecipients": [{"action": "failed", "status": "5.1.1", "diagnosticCode": "smtp; 550 5.1.1 user unknown"}]}}', "Webhook"),
    "ses/full": ("Email bounced", '{"eventType": "Bounce", "bounce": {"bounceType": "Transient", "bounceSubType": "MailboxFull", "bouncedRecipients": [{"action": "failed", "status": "5.2.2", "diagnosticCode": "smtp; 552 5.2.2 mailbox full"}]}}', "Webhook"),
    "ses/policy": ("Email bounced", '{"eventType": "Bounce", "bounce": {"bounceType": "Permanent", "bounceSubType": "Suppressed", "bouncedRecipients": [{"action": "failed", "status": "5.7.1", "diagnosticCode": "smtp; 550 5.7.1 rejected by policy"}]}}', "Webhook"),
    "ses/domain": ("Email bounced", '{"eventType": "Bounce", "bounce": {"bounceType": "Transient", "bounceSubType": "General", "bouncedRecipients": [{"action": "failed", "status": "5.7.1", "diagnosticCode": "smtp; 550 5.7.1 Our system has detected an unusual rate of unsolicited mail originating from your IP address."}]}}', "Webhook"),
    "ses/degraded": ("Email bounced", '{"eventType": "Bounce", "bounce": {"bounceType": "Permanent", "bounceSubType": "General", "bouncedRecipients": [{"action": "failed", "status": "5.7.1", "diagnosticCode": "smtp; 554 5.7.1 Client host blocked using a reputation list"}]}}', "Webhook"),
    "fcm/dead": ("Unexpected provider error", '{"code": "messaging/registration-token-not-registered", "message": "Requested entity was not found."}', "Internal"),
    "fcm/invalid": ("Unexpected provider error", '{"code": "messaging/invalid-registration-token", "message": "Invalid registration token provided."}', "Internal"),
    "fcm/transient": ("Unexpected provider error", '{"code": "messaging/internal-error", "message": "Internal error encountered."}', "Internal"),
    "fcm/outage": ("Unexpected provider error", '{"code": "messaging/server-unavailable", "message": "The server could not process the request in time."}', "Internal"),
    "fcm/ratelimit": ("Unexpected provider error", '{"code": "messaging/message-rate-exceeded", "message": "Sending limit exceeded for the message target."}', "Internal"),
    "fcm/stale": ("Unexpected provider error", '{"code": "messaging/mismatched-credential", "message": "SenderId mismatch"}', "Internal"),
    "fcm/degraded": ("Unexpected provider error", '{"code": "messaging/internal-error", "message": "Internal error encountered."}', "Internal"),
    "apns/dead": ("Unexpected provider error", '{"reason": "Unregistered", "status": 410}', "Internal"),
    "apns/invalid": ("Unexpected provider error", '{"reason": "BadDeviceToken", "status": 400}', "Internal"),
    "apns/transient": ("Unexpected provider error", '{"reason": "InternalServerError", "status": 500}', "Internal"),
    "apns/outage": ("Unexpected provider error", '{"reason": "ServiceUnavailable", "status": 503}', "Internal"),
    "apns/ratelimit": ("Unexpected provider error", '{"reason": "TooManyRequests", "status": 429}', "Internal"),
    "apns/stale": ("Unexpected provider error", '{"reason": "InvalidProviderToken", "status": 403}', "Internal"),
    "apns/degraded": ("Unexpected provider error", '{"reason": "InternalServerError", "status": 500}', "Internal"),
    "whatsapp-business/invalid": ("Unexpected provider error", '{"error": {"message": "Message undeliverable", "type": "OAuthException", "code": 131026}}', "Internal"),
    "whatsapp-business/transient": ("Unexpected provider error", '{"error": {"message": "Something went wrong", "type": "OAuthException", "code": 131000}}', "Internal"),
    "whatsapp-business/ratelimit": ("Unexpected provider error", '{"error": {"message": "(#130429) Rate limit hit", "type": "OAuthException", "code": 130429}}', "Internal"),
}  # fmt: skip
ERRORS = list(_E)
EI = {name: i for i, name in enumerate(ERRORS)}


@dataclass
class Draw(Traffic):
    """`Traffic` with what was drawn (``info``: volume, market shares, providers)."""

    info: dict[str, Any] = field(default_factory=dict)


def make(
    seed: int,
    now,
    days: int = 56,
    *,
    incidents: bool = False,
    load_latency: float = 0.4,
    loop_mult: float = 5.0,
) -> Draw:
    """``days`` of Wrenfield before ``now`` (see the module docstring); ``load_latency``: how much
    slower a send is in the busiest hours; ``loop_mult``: the planted loop's volume, in times the
    workflow's volume in that hour."""
    rng = np.random.default_rng([seed, 2718])
    now = pd.Timestamp(now)
    now = now.tz_localize("UTC") if now.tzinfo is None else now.tz_convert("UTC")
    start = now - pd.Timedelta(days=days)
    daily = DAILY.get(seed, int(np.exp(rng.uniform(np.log(1000), np.log(20000)))))
    shares = rng.dirichlet(np.array(MARKET_SHARES) * 12)
    email_ses = float(rng.uniform(0.3, 0.5))
    people = _people(rng, daily, shares, email_ses)
    grid = pd.date_range(start.floor("h"), now.ceil("h"), freq="h").as_unit("ns")
    t0, t1 = start.value, now.value
    days_n = len(grid) // 24 + 2
    growth = float(rng.uniform(0.001, 0.004))
    trend = np.exp(growth * (np.arange(len(grid)) / 24 - days))
    level = {f: np.exp(_ar1(rng, days_n, 0.8, 0.08)) for f in ("orders", "otp", "reset")}
    day_of = np.arange(len(grid)) // 24
    usual: dict[tuple[int, int], np.ndarray] = {}  # (workflow, market): expected per grid hour

    times, who, flows = [], [], []

    def add(t, s, w):
        keep = (t >= t0) & (t < t1)
        times.append(t[keep])
        who.append(np.asarray(s)[keep])
        flows.append(np.broadcast_to(np.asarray(w, np.int16), t.shape)[keep])

    orders_daily = 0.15 * daily
    for m, zone in enumerate(ZONES):
        local = grid.tz_convert(zone)
        hour = local.hour + local.minute / 60 + 0.5
        dow = local.dayofweek.to_numpy()
        customers = np.flatnonzero(people["market"] == m)
        weight = people["activity"][customers] / people["activity"][customers].sum()
        partners = np.flatnonzero((people["market"] == m) & people["partner"])
        # rain days: one random local day per fortnight
        local_day = (local.tz_localize(None).normalize() - pd.Timestamp("2000-01-03")).days
        fortnight = local_day.to_numpy() // 14
        rain_day = {f: rng.integers(14) for f in np.unique(fortnight)}
        rainy = np.array([rain_day[f] for f in fortnight]) == local_day.to_numpy() % 14
        # orders
        profile = _order_profile(m)
        lam = (orders_daily * shares[m] / 24 * profile[dow, np.floor(hour).astype(int) % 24]
               * level["orders"][day_of] * trend * np.where(rainy, 1.6, 1.0))  # fmt: skip
        order_t = _hourly(rng, grid.asi8, lam, burst=0.2)
        order_who = customers[rng.choice(len(customers), order_t.size, p=weight)]
        _orders(rng, add, order_t, order_who, partners, zone)
        usual[(W["order-confirmed"], m)] = lam
        # login OTP (sms) and password resets (email): a flat-ish day
        h = np.floor(hour).astype(int) % 24
        day = _flat_profile()[h]
        light = np.sqrt(people["activity"][customers])
        light /= light.sum()
        for name, rate, fam in (("login-otp", 0.09, "otp"), ("password-reset", 0.008, "reset")):
            lam = daily * rate * shares[m] / 24 * day * level[fam][day_of] * trend
            t = _hourly(rng, grid.asi8, lam, burst=0.05)
            add(t, customers[rng.choice(len(customers), t.size, p=light)], W[name])
            usual[(W[name], m)] = lam
        # marketing, digests
        _campaigns(rng, add, people, m, zone, start, now, customers)

    times = np.concatenate(times)
    order = np.argsort(times, kind="stable")
    times, who, flows = times[order], np.concatenate(who)[order], np.concatenate(flows)[order]

    # The planted draw is the quiet one plus the incidents: incidents draw from their own
    # generator, the loop's notifications are appended after the quiet ones and the stopped ones
    # removed after delivery, and every background draw of the delivery has its own generator.
    irng = np.random.default_rng([seed, 2718, 1])
    planted: list[dict[str, Any]] = []
    roles = _roles(irng, seed)
    alive = np.ones(times.size, bool)
    if incidents:
        extra, dropped, planted = _plant_volume(irng, now, times, who, flows, grid, usual,
                                                loop_mult)  # fmt: skip
        times, who, flows = (np.concatenate([a, b]) for a, b in zip((times, who, flows), extra,
                                                                     strict=True))  # fmt: skip
        alive = np.concatenate([~dropped, np.ones(extra[0].size, bool)])
    jobs, hits, order = _deliver(seed, irng, people, times, who, flows, alive, now, load_latency,
                                 roles if incidents else None, planted)  # fmt: skip
    times, who, flows = times[order], who[order], flows[order]
    if incidents:
        for incident in planted:
            if incident["kind"] in hits:
                incident["hits"] = hits[incident["kind"]]
            incident["hits"] = pd.to_datetime(np.sort(np.asarray(incident["hits"], np.int64)),
                                              utc=True)  # fmt: skip
    notes, jobs_frame, execution = _frames(seed, people, times, who, flows, jobs)
    info = dict(daily=daily, markets=dict(zip(MARKETS, np.round(shares, 3), strict=True)),
                customers=int((~people["partner"]).sum()), email_ses_share=round(email_ses, 2),
                growth=growth, roles=roles)  # fmt: skip
    return Draw(notes, jobs_frame, execution, planted, info)


# -- people ------------------------------------------------------------------------------------


def _people(rng, daily: int, shares: np.ndarray, email_ses: float) -> dict[str, np.ndarray]:
    """Customers (and restaurant partners after them) with their attributes."""
    n_cust = max(600, int(daily * 0.35))
    n_part = max(40, n_cust // 25)
    n = n_cust + n_part
    market = np.concatenate([rng.choice(4, n_cust, p=shares), rng.choice(4, n_part, p=shares)])
    partner = np.arange(n) >= n_cust
    ios = rng.random(n) < np.array(IOS_SHARE)[market]
    domain = np.empty(n, dtype=object)
    for m, options in enumerate(DOMAINS):
        names, weights = zip(*options, strict=True)
        mine = market == m
        domain[mine] = rng.choice(names, mine.sum(), p=np.array(weights) / sum(weights))
    ids = np.where(
        partner, [f"rest-{i:05d}" for i in range(n)], [f"cust-{i:06d}" for i in range(n)]
    )
    first = rng.choice(FIRST, n)
    last = rng.choice(LAST, n)
    email = [f"{f.lower()}.{s.lower()}{i}@{d}" for i, (f, s, d) in enumerate(zip(first, last, domain, strict=True))]  # fmt: skip
    digits = rng.integers(10**7, 10**8, n)
    phone = [f"{PHONE[m]}{d}" for m, d in zip(market, digits, strict=True)]
    return {
        "market": market,
        "partner": partner,
        "activity": rng.lognormal(0, 1.0, n),
        "push": np.where(ios, P["apns"], P["fcm"]),
        "sms": np.where(market == 1, P["plivo"], P["twilio"]),
        "email": np.where(rng.random(n) < email_ses, P["ses"], P["sendgrid"]),
        "domain": domain,
        "dead_mailbox": rng.random(n) < 0.012,
        "bad_phone": rng.random(n) < 0.008,
        "dead_token": rng.random(n) < 0.025,
        "newsletter": rng.random(n) < 0.45,
        "promos": rng.random(n) < 0.55,
        "digest": rng.random(n) < 0.5,
        "id": np.array(ids, dtype=object),
        "internal": np.array([f"{0x5F00A1B2C3D4E5 + i:024x}" for i in range(n)], dtype=object),
        "first": first.astype(object),
        "last": last.astype(object),
        "email_address": np.array(email, dtype=object),
        "phone": np.array(phone, dtype=object),
    }


# -- rhythm ------------------------------------------------------------------------------------


def _bump(hours: np.ndarray, at: float, width: float) -> np.ndarray:
    distance = np.abs((hours - at + 12) % 24 - 12)
    return np.exp(-0.5 * (distance / width) ** 2)


def _order_profile(m: int) -> np.ndarray:
    """Orders per local (weekday, hour), mean 1 over the week."""
    lunch, dinner = MEALS[m]
    h = np.arange(24) + 0.5
    night = np.where((h > 2) & (h < 6), 0.02, 1.0)
    base = (0.03 + 0.12 * _bump(h, 8.5, 1.0) + 1.0 * _bump(h, lunch, 1.1)
            + 0.25 * _bump(h, 16, 1.5) + 1.4 * _bump(h, dinner, 1.4)
            + 0.3 * _bump(h, dinner + 3.5, 1.2))  # fmt: skip
    week = np.tile(base, (7, 1))
    heavy = 0.6 * _bump(h, dinner + 0.5, 1.6) + 0.3 * _bump(h, dinner + 4, 1.2)
    week[4] += 1.4 * heavy  # Friday
    week[5] += 1.6 * heavy + 0.4 * _bump(h, 11, 1.3)  # Saturday
    week[6] += 0.9 * _bump(h, 11, 1.3) - 0.3 * _bump(h, lunch, 1.1)  # Sunday brunch
    week = np.clip(week, 0.01, None) * night
    return week / week.mean()


def _flat_profile() -> np.ndarray:
    h = np.arange(24) + 0.5
    day = np.where((h > 7) & (h < 23.5), 1.0, 0.12) + 0.3 * _bump(h, 20, 2)
    return day / day.mean()


def _ar1(rng, n: int, phi: float, sd: float) -> np.ndarray:
    noise = rng.normal(0, sd, n)
    out = np.empty(n)
    out[0] = noise[0] / np.sqrt(1 - phi**2)
    for i in range(1, n):
        out[i] = phi * out[i - 1] + noise[i]
    return out


def _hourly(rng, hour_ns: np.ndarray, lam: np.ndarray, burst: float) -> np.ndarray:
    """Send times: Poisson counts per hour with a gamma overdispersion, a share in bursts."""
    counts = rng.poisson(lam * rng.gamma(12, 1 / 12, lam.size))
    t = np.repeat(hour_ns, counts) + (rng.random(counts.sum()) * HOUR).astype(np.int64)
    t.sort()
    if t.size > 1:
        pick = np.flatnonzero(rng.random(t.size) < burst)
        pick = pick[pick > 0]
        t[pick] = t[pick - 1] + (rng.exponential(45, pick.size) * SEC).astype(np.int64)
        t.sort()
    return t


def _minutes(rng, size, low, high) -> np.ndarray:
    return (rng.uniform(low, high, size) * 60 * SEC).astype(np.int64)


def _orders(rng, add, t, who, partners, zone) -> None:
    """Each order's chain of notifications."""
    n = t.size
    add(t, who, W["order-confirmed"])
    cancelled = rng.random(n) < 0.03
    add(t[cancelled] + _minutes(rng, cancelled.sum(), 2, 15), who[cancelled], W["order-cancelled"])
    t, who = t[~cancelled], who[~cancelled]
    n = t.size
    assigned = t + (rng.gamma(3, 2.5, n) * 60 * SEC).astype(np.int64) + 2 * 60 * SEC
    add(assigned, who, W["courier-assigned"])
    out = assigned + (rng.gamma(4, 4, n) * 60 * SEC).astype(np.int64)
    add(out, who, W["out-for-delivery"])
    delivered = out + _minutes(rng, n, 8, 30)
    add(delivered, who, W["delivered"])
    rate = rng.random(n) < 0.85
    add(delivered[rate] + 60 * 60 * SEC + _minutes(rng, rate.sum(), 0, 2), who[rate],
        W["rate-your-order"])  # fmt: skip
    # restaurant chat, only while restaurants are open (10:00-23:00 local)
    local_hour = pd.to_datetime(t, utc=True).tz_convert(zone).hour
    chat = (rng.random(n) < 0.33) & (local_hour >= 10) & (local_hour < 23)
    if partners.size:
        at = t[chat] + _minutes(rng, chat.sum(), 0.2, 1.5)
        add(at, partners[rng.integers(partners.size, size=chat.sum())], W["partner-order-chat"])


def _campaigns(rng, add, people, m, zone, start, now, customers) -> None:
    """Newsletters (Tue, Thu 10:00), push promos (17:00, 3-4 days a week), digests (Sun 09:00)."""
    first = start.tz_convert(zone).normalize().tz_localize(None)
    last = now.tz_convert(zone).normalize().tz_localize(None)
    dates = pd.date_range(first, last, freq="D")
    weeks = {}
    for date in dates:
        week = (date - pd.Timestamp("2000-01-03")).days // 7
        if week not in weeks:
            weeks[week] = set(rng.choice(7, int(rng.integers(3, 5)), replace=False).tolist())
        sends = []
        if date.dayofweek in (1, 3):
            sends.append(("promo-newsletter", 10, people["newsletter"], 20, 2.0, 0.7))
        if date.dayofweek in weeks[week]:
            sends.append(("promo-push", 17, people["promos"], 8, 1.0, 0.6))
        if date.dayofweek == 6:
            sends.append(("week-in-food", 9, people["digest"], 25, 1.0, 0.8))
        for name, hour, opted, chunks, every, reach in sends:
            at = pd.Timestamp(date + pd.Timedelta(hours=hour)).tz_localize(zone).value
            to = customers[opted[customers] & (rng.random(customers.size) < rng.uniform(reach, 1))]
            chunk = rng.integers(chunks, size=to.size)
            t = at + (chunk * every * 60 + rng.uniform(0, 50, to.size)) * SEC
            add(t.astype(np.int64), to, W[name])


# -- incidents ---------------------------------------------------------------------------------


def _roles(rng, seed: int) -> dict[str, str]:
    """Which provider each provider incident hits (and the stale push platform)."""
    stale = "apns" if rng.random() < 0.5 else "fcm"
    other = "fcm" if stale == "apns" else "apns"
    pool = ["twilio", "sendgrid", "ses", other]
    rng.shuffle(pool)
    return dict(stale_credentials=stale, provider_outage=pool[0], error_spike=pool[1],
                latency_degradation=pool[2], degradation=pool[3])  # fmt: skip


def _busiest(t: np.ndarray, lo: int, hi: int, span: int, step: int = 15 * 60 * SEC) -> int:
    """The start in [lo, hi) of the ``span`` with the most of the times ``t``."""
    starts = np.arange(lo, hi, step)
    counts = np.searchsorted(t, starts + span) - np.searchsorted(t, starts)
    return int(starts[np.argmax(counts)])


def _plant_volume(rng, now, times, who, flows, grid, usual, loop_mult):
    """The stopped workflow (removed) and the runaway loop (added)."""
    t_now = now.value
    day = 24 * HOUR
    drop_w, loop_w = rng.choice(
        [W["courier-assigned"], W["delivered"], W["login-otp"], W["order-confirmed"],
         W["out-for-delivery"], W["partner-order-chat"]], 2, replace=False)  # fmt: skip
    mine = np.sort(times[flows == drop_w])
    s = _busiest(mine, t_now - int(4.5 * day), t_now - int(3.5 * day), 5 * HOUR)
    e = s + 5 * HOUR
    stopped = (flows == drop_w) & (times >= s) & (times < e)
    expected = None
    for (w, _m), lam in usual.items():  # the season's expectation (orders, otp: exact)
        if w == drop_w:
            inside = (grid.asi8 >= s) & (grid.asi8 < e)
            expected = (expected or 0) + float(lam[inside].sum())
    drop = dict(kind="volume_drop", name=f"{WORKFLOWS[drop_w][0]} stopped for 5 h",
                channel=None, provider_id=None, workflow=WORKFLOWS[drop_w][0], domain=None,
                start=pd.Timestamp(s, tz="UTC"), end=pd.Timestamp(e, tz="UTC"), optional=False,
                hits=times[stopped])  # fmt: skip
    if expected is not None:
        drop["usual"] = expected

    mine = np.sort(times[(flows == loop_w) & ~stopped])
    s = _busiest(mine, t_now - int(3.5 * day), t_now - int(2.5 * day), HOUR)
    s += int(rng.integers(0, 20)) * 60 * SEC
    e = s + HOUR
    in_hour = (flows == loop_w) & (times >= s) & (times < e) & ~stopped
    extra = int(round((loop_mult - 1) * in_hour.sum()))
    before = np.flatnonzero((flows == loop_w) & (times >= s - HOUR) & (times < s) & ~stopped)
    stuck = who[rng.choice(before, min(len(before), int(rng.integers(20, 60))), replace=False)]
    if not stuck.size:
        extra = 0
    added_t = np.sort(s + (rng.random(extra) * HOUR).astype(np.int64))
    added = (added_t, stuck[rng.integers(max(1, stuck.size), size=extra)] if extra else who[:0],
             np.full(extra, loop_w, np.int16))  # fmt: skip
    loop = dict(kind="volume_spike", name=f"{WORKFLOWS[loop_w][0]} re-triggered in a loop",
                channel=None, provider_id=None, workflow=WORKFLOWS[loop_w][0], domain=None,
                start=pd.Timestamp(s, tz="UTC"), end=pd.Timestamp(e, tz="UTC"), optional=False,
                hits=added_t)  # fmt: skip
    return added, stopped, [drop, loop]


# -- delivery ----------------------------------------------------------------------------------


def _deliver(seed, irng, people, times, who, flows, alive, now, load_latency, roles, planted):
    """Jobs and execution details of the ``alive`` notifications, the provider incidents' hits
    and the order of the alive notifications by time."""
    keys = iter(range(10_000))

    def fresh():  # a generator per background draw (appended sends leave the others' alone)
        return np.random.default_rng([seed, 2718, 7, next(keys)])

    steps = [len(WORKFLOWS[w][2]) for w in range(len(WORKFLOWS))]
    per = np.array(steps)[flows]
    note = np.repeat(np.arange(times.size), per)
    step = np.arange(note.size) - np.repeat(np.cumsum(per) - per, per)
    chan_names = [[c for c in WORKFLOWS[w][2]] for w in range(len(WORKFLOWS))]
    chan_code = {"in_app": 0, "push": 1, "sms": 2, "email": 3, "chat": 4}
    table = np.full((len(WORKFLOWS), 2), -1)
    for w, names in enumerate(chan_names):
        for i, c in enumerate(names):
            table[w, i] = chan_code[c]
    channel = table[flows[note], step]
    s = who[note]
    provider = np.select(
        [channel == 0, channel == 1, channel == 2, channel == 3],
        [P["svc"], people["push"][s], people["sms"][s], people["email"][s]],
        P["whatsapp-business"],
    )
    tj = times[note] + step * (fresh().uniform(0.2, 1.5, note.size) * SEC).astype(np.int64)
    n = note.size
    hour = (tj - tj.min()) // HOUR
    day = (tj - tj.min()) // (24 * HOUR)
    # latency, slower under load
    load = np.zeros(n)
    sent = alive[note]
    for p in range(len(PROVIDERS)):
        mine = provider == p
        if mine.any():
            counts = np.bincount(hour[mine & sent], minlength=hour.max() + 1)
            load[mine] = counts[hour[mine]] / max(1.0, np.percentile(counts[counts > 0], 98))
    latency = np.array(LATENCY)[provider] * fresh().lognormal(0, 0.5, n) * (1 + load_latency * load)
    # background failures: rate per provider and day
    day_mult = fresh().lognormal(0, 0.35, (len(PROVIDERS), day.max() + 1))[provider, day]
    u = fresh().random(n)
    fail_at = np.full(n, -1)  # error of the failed attempts
    fails = np.zeros(n, np.int64)  # attempts failed (4: the job failed)
    hook = np.full(n, -1)  # error of a failing webhook after a successful send
    local_hour = np.zeros(n, np.int64)
    for m, zone in enumerate(ZONES):
        mine = people["market"][s] == m
        local_hour[mine] = pd.to_datetime(tj[mine], utc=True).tz_convert(zone).hour
    night = (local_hour < 7) | (local_hour >= 23)

    def pick(mask, names, weights=None):
        draw = fresh().choice(len(names), mask.sum(), p=weights)
        return np.array([EI[x] for x in names])[draw]

    # permanent errors at the send
    for p, flag, code in (("twilio", "bad_phone", "twilio/invalid"),
                          ("plivo", "bad_phone", "plivo/invalid")):  # fmt: skip
        mask = (provider == P[p]) & people[flag][s]
        fail_at[mask], fails[mask] = EI[code], 4
    for p in ("fcm", "apns"):
        mask = (provider == P[p]) & people["dead_token"][s]
        fail_at[mask], fails[mask] = EI[f"{p}/dead"], 4
        mask = (provider == P[p]) & (fails == 0) & (u < 0.003 * day_mult)
        fail_at[mask], fails[mask] = EI[f"{p}/invalid"], 4
    mask = (provider == P["whatsapp-business"]) & (u < 0.01 * day_mult)
    fail_at[mask], fails[mask] = EI["whatsapp-business/invalid"], 4
    # transient errors, retried (each retry fails again with probability 0.15)
    v = fresh().random(n)
    for p in ("twilio", "plivo", "sendgrid", "ses", "fcm", "apns", "whatsapp-business"):
        mask = (provider == P[p]) & (fails == 0) & (v < 0.003 * day_mult)
        if p == "whatsapp-business":
            names = ["whatsapp-business/transient", "whatsapp-business/ratelimit"]
        else:
            names = [f"{p}/transient"]
        fail_at[mask] = pick(mask, names)
        fails[mask] = 1 + fresh().geometric(0.85, mask.sum()) - 1
    fails = np.minimum(fails, 4)
    # webhook failures after a successful send
    ok = fails < 4
    w_ = fresh().random(n)
    # what the details need: delivery reports, reads and their delays
    chance = np.stack([fresh().random(n), fresh().random(n)])
    delays = np.stack([fresh().gamma(2, 8, n), fresh().gamma(1.5, 20, n),
                       fresh().exponential(90, n)])  # fmt: skip
    for p in ("sendgrid", "ses"):
        mine = (provider == P[p]) & ok
        mask = mine & people["dead_mailbox"][s]
        hook[mask] = EI[f"{p}/dead"]
        mask = mine & ~people["dead_mailbox"][s] & (w_ < 0.004 * day_mult)
        hook[mask] = pick(mask, [f"{p}/full", f"{p}/policy"], [0.7, 0.3])
    mask = (provider == P["twilio"]) & ok & (w_ < 0.02 * day_mult * np.where(night, 2.0, 1.0))
    hook[mask] = pick(mask, ["twilio/30003", "twilio/30005", "twilio/30006"], [0.6, 0.25, 0.15])
    mask = (provider == P["plivo"]) & ok & (w_ < 0.03 * day_mult * np.where(night, 2.0, 1.0))
    hook[mask] = EI["plivo/undelivered"]

    hits: dict[str, np.ndarray] = {}
    slow = np.ones(n)
    if roles is not None:
        t_now = now.value
        day_ns = 24 * HOUR

        def plant(kind, channel, p, start, end, name, hit_jobs, domain=None):
            planted.append(dict(kind=kind, name=name, channel=channel, provider_id=p,
                                workflow=None, domain=domain, start=pd.Timestamp(start, tz="UTC"),
                                end=pd.Timestamp(end, tz="UTC"), optional=False))  # fmt: skip
            hits[kind] = np.unique(times[note[hit_jobs & alive[note]]])

        def sorted_times(p):
            return np.sort(tj[(provider == P[p]) & alive[note]])

        # provider outage: every attempt inside it fails
        p = roles["provider_outage"]
        start = _busiest(sorted_times(p), t_now - int(2.5 * day_ns), t_now - int(1.5 * day_ns),
                         2 * HOUR)  # fmt: skip
        end = start + 2 * HOUR
        mine = (provider == P[p]) & (tj >= start) & (tj < end)
        inside = (tj[:, None] + BACKOFF[None, :] * SEC) < end
        fails[mine] = inside[mine].sum(axis=1)
        fail_at[mine] = EI[f"{p}/outage"]
        hook[mine & (fails >= 4)] = -1
        plant("provider_outage", CHANNEL_OF[P[p]], p, start, end, f"{p} outage", mine)
        # error spike: rate limits, retries inside it mostly fail too
        p = roles["error_spike"]
        start = _busiest(sorted_times(p), t_now - int(5.5 * day_ns), t_now - int(4.5 * day_ns),
                         50 * 60 * SEC)  # fmt: skip
        end = start + 50 * 60 * SEC
        mine = (provider == P[p]) & (tj >= start) & (tj < end) & (fails < 4)
        attempt = (tj[:, None] + BACKOFF[None, :] * SEC) < end
        limited = attempt & (irng.random((n, 4)) < 0.85)
        first_ok = np.where(limited.all(axis=1), 4, np.argmin(limited, axis=1))
        spiked = mine & (first_ok > 0)
        fails[spiked] = first_ok[spiked]
        fail_at[spiked] = EI[f"{p}/ratelimit"]
        hook[spiked & (fails >= 4)] = -1
        # its impact: every send that met a rate limit, retried or not (find_incidents' own)
        plant("error_spike", CHANNEL_OF[P[p]], p, start, end, f"{p} rate limiting", spiked)
        # latency degradation
        p = roles["latency_degradation"]
        start = _busiest(sorted_times(p), t_now - int(1.4 * day_ns), t_now - int(0.6 * day_ns),
                         4 * HOUR)  # fmt: skip
        end = start + 4 * HOUR
        mine = (provider == P[p]) & (tj >= start) & (tj < end)
        slow[mine] = irng.uniform(6, 10)
        plant("latency_degradation", CHANNEL_OF[P[p]], p, start, end, f"{p} slow", mine)
        # degradation: failures climbing to +25% over 4.5 days
        p = roles["degradation"]
        start = t_now - int(4.5 * day_ns)
        mine = (provider == P[p]) & (tj >= start) & (fails < 4) & (hook < 0)
        extra = 0.25 * (tj - start) / (t_now - start)
        mine &= irng.random(n) < extra
        if p in ("twilio", "sendgrid", "ses"):
            hook[mine] = EI[f"{p}/degraded"]
        else:
            fails[mine], fail_at[mine] = 4, EI[f"{p}/degraded"]
        plant("degradation", CHANNEL_OF[P[p]], p, start, t_now, f"{p} failing more", mine)
        # stale push credentials for part of a platform's devices, ongoing
        p = roles["stale_credentials"]
        start = t_now - int(irng.uniform(18, 40) * HOUR)
        share = irng.uniform(0.5, 0.9)
        old_build = irng.random(len(people["market"])) < share
        mine = (provider == P[p]) & (tj >= start) & old_build[s] & ~people["dead_token"][s]
        fails[mine], fail_at[mine], hook[mine] = 4, EI[f"{p}/stale"], -1
        plant("stale_credentials", "push", p, start, t_now, f"{p} credentials stale", mine)
        # a recipient domain rejecting mail, on both email providers
        # the regional ISP with the most mail in its busiest 6 h, 5 to 7 days before now
        emails = np.flatnonzero(channel == 3)
        domains = people["domain"][s[emails]]
        best = (-1, None, 0)
        for d in (
            "btinternet.com",
            "sky.com",
            "virginmedia.com",
            "rediffmail.com",
            "yahoo.co.in",
            "uol.com.br",
            "bol.com.br",
            "terra.com.br",
            "bigpond.com",
            "optusnet.com.au",
        ):
            at = np.sort(tj[emails[domains == d]])
            if at.size:
                lo, hi = t_now - 7 * day_ns, t_now - 5 * day_ns
                begin = _busiest(at, lo, hi, 6 * HOUR)
                count = np.searchsorted(at, begin + 6 * HOUR) - np.searchsorted(at, begin)
                if count > best[0]:
                    best = (count, d, begin)
        _, domain, start = best
        email_to = np.zeros(n, bool)
        email_to[emails[domains == domain]] = True
        end = start + 6 * HOUR
        mine = email_to & (tj >= start) & (tj < end) & (fails < 4)
        for p in ("sendgrid", "ses"):
            hook[mine & (provider == P[p])] = EI[f"{p}/domain"]
        major = "sendgrid" if (mine & (provider == P["sendgrid"])).sum() >= (
            mine & (provider == P["ses"])).sum() else "ses"  # fmt: skip
        plant("domain_bounces", "email", major, start, end, f"{domain} rejecting mail", mine,
              domain)  # fmt: skip
    fails = np.minimum(fails, 4)
    latency = latency * slow
    # the alive notifications by time, their jobs in that order
    kept = np.flatnonzero(alive)
    order = kept[np.argsort(times[kept], kind="stable")]
    rank = np.full(times.size, -1)
    rank[order] = np.arange(order.size)
    jobs = np.flatnonzero(alive[note])
    jobs = jobs[np.argsort(rank[note[jobs]], kind="stable")]
    details = _details(rank[note[jobs]], channel[jobs], provider[jobs], tj[jobs], fails[jobs],
                       fail_at[jobs], hook[jobs], latency[jobs], chance[:, jobs],
                       delays[:, jobs])  # fmt: skip
    return details, hits, order


def _details(note, channel, provider, tj, fails, fail_at, hook, latency, chance, delays):
    """Per job: attempts (a queued detail and its result), then a webhook or read detail."""
    n = note.size
    ok = fails < 4
    attempts = np.where(ok, fails + 1, 4)
    attempts = np.where(fails == 4, 4, attempts)
    # permanent errors (invalid numbers, dead tokens, stale credentials) are not retried
    transient = np.isin(fail_at, [EI[k] for k in ERRORS if k.split("/")[1] in
                                  ("transient", "outage", "ratelimit")])  # fmt: skip
    attempts = np.where((fails == 4) & ~transient, 1, attempts)
    job = np.repeat(np.arange(n), attempts)
    k = np.arange(job.size) - np.repeat(np.cumsum(attempts) - attempts, attempts)
    at = tj[job] + BACKOFF[k] * SEC
    failed_attempt = (k < fails[job]) | ((fails[job] == 4) & (k == attempts[job] - 1))
    result_at = at + (latency[job] * SEC).astype(np.int64) + SEC // 50
    # webhook / read details
    delivered = ok & (hook < 0) & np.isin(channel, [2, 3]) & (chance[0] < 0.9)
    bounced = ok & (hook >= 0)
    read = ok & (channel == 0) & (chance[1] < 0.4)
    last_send = tj + BACKOFF[attempts - 1] * SEC + (latency * SEC).astype(np.int64)
    delay = np.where(channel == 2, delays[0], delays[1])
    hook_at = last_send + (delay * SEC).astype(np.int64)
    read_at = last_send + (delays[2] * 60 * SEC).astype(np.int64)
    extra = delivered | bounced | read
    e_job = np.flatnonzero(extra)
    return dict(
        n=n, note=note, channel=channel, provider=provider, tj=tj, fails=fails, fail_at=fail_at,
        hook=hook, ok=ok, attempts=attempts, a_job=job, a_k=k, a_at=at, a_res=result_at,
        a_failed=failed_attempt, e_job=e_job, e_at=np.where(read, read_at, hook_at)[e_job],
        e_kind=np.where(bounced, 1, np.where(read, 2, 0))[e_job],
    )  # fmt: skip


# -- frames ------------------------------------------------------------------------------------


def _cat(codes: np.ndarray, values: tuple, known: tuple) -> pd.Categorical:
    """Codes into ``values`` as a categorical of the known values (then unknown ones)."""
    cats = list(known) + sorted(set(v for v in values if v is not None) - set(known))
    index = np.array([cats.index(v) if v is not None else -1 for v in values] + [-1])
    return pd.Categorical.from_codes(index[np.asarray(codes)], categories=cats)


def _objects(values: list) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    for i, value in enumerate(values):
        out[i] = value
    return out


def _strings(values) -> pd.arrays.ArrowStringArray:
    return pd.array(np.asarray(values, dtype=object), dtype="string")


def _ids(prefix: int, n: int) -> pd.api.extensions.ExtensionArray:
    hexes = np.char.add(f"{prefix:08x}", np.char.zfill(np.char.mod("%x", np.arange(n)), 16))
    return _strings(hexes)


def _frames(seed, people, times, who, flows, jobs):
    """The three frames (`toolkit.frames`' columns and dtypes) of the drawn sends."""
    d = jobs
    n_notes, n = times.size, d["n"]
    note, provider, channel = d["note"], d["provider"], d["channel"]
    # details: queued + result per attempt, then the webhook/read one; ordered per job by time
    det_job = np.concatenate([d["a_job"], d["a_job"], d["e_job"]])
    det_at = np.concatenate([d["a_at"], d["a_res"], d["e_at"]])
    # kinds: 0 queued, 1 queued retry, 2 sent, 3 send failed, 4 delivered, 5 bounced, 6 read
    kind = np.concatenate([
        np.where(d["a_k"] > 0, 1, 0), np.where(d["a_failed"], 3, 2), 4 + d["e_kind"],
    ])  # fmt: skip
    order = np.lexsort((kind, det_at, det_job))
    det_job, det_at, kind = det_job[order], det_at[order], kind[order]
    error = np.full(det_job.size, -1)
    error[kind == 3] = d["fail_at"][det_job[kind == 3]]
    error[kind == 5] = d["hook"][det_job[kind == 5]]
    text = np.array(["Step queued", "Step queued", "Message sent", None, "Message delivered",
                     None, "Message read"], dtype=object)[kind]  # fmt: skip
    is_error = error >= 0
    text[is_error] = np.array([_E[x][0] for x in ERRORS], dtype=object)[error[is_error]]
    raw = np.full(det_job.size, None, dtype=object)
    raw[is_error] = np.array([_E[x][1] for x in ERRORS], dtype=object)[error[is_error]]
    status = np.array([4, 4, 0, 2, 0, 2, 5])[kind]  # index into DETAIL_STATUSES
    source_names = np.array([1, 1, 1, 1, 3, 3, 1])[kind]  # Internal / Webhook
    src_of_error = np.array([schemas.DETAIL_SOURCES.index(_E[x][2]) for x in ERRORS])
    source_names[is_error] = src_of_error[error[is_error]]
    codes = np.array([error_code(_E[x][1]) for x in ERRORS], dtype=object)
    err_code = np.full(det_job.size, None, dtype=object)
    err_code[is_error] = codes[error[is_error]]
    err_text = np.where(status == 2, text, None)
    det_ids = _ids(0xE0000000 + seed, det_job.size)
    job_ids = _ids(0xB0000000 + seed, n)
    note_ids = _ids(0xA0000000 + seed, n_notes)
    at = pd.to_datetime(det_at, utc=True)
    is_retry = kind == 1
    execution = pd.DataFrame({
        "execution_detail_id": det_ids,
        "job_id": job_ids.take(det_job),
        "notification_id": note_ids.take(note[det_job]),
        "created_at": at,
        "status": pd.Categorical.from_codes(status, categories=schemas.DETAIL_STATUSES),
        "source": pd.Categorical.from_codes(source_names, categories=schemas.DETAIL_SOURCES),
        "detail": _strings(text),
        "provider_id": _strings(np.array(PROVIDERS, dtype=object)[provider[det_job]]),
        "is_retry": pd.array(is_retry, dtype="boolean"),
        "is_test": pd.array(np.zeros(det_job.size, bool), dtype="boolean"),
        "raw": _strings(raw),
        "error_text": _strings(err_text),
        "error_code": _strings(err_code),
        "channel": _cat(channel[det_job], MY_CHANNELS, schemas.STEP_TYPES),
    })  # fmt: skip
    # per job aggregates (details are sorted by job, then time)
    counts = np.bincount(det_job, minlength=n)
    ends = np.cumsum(counts)
    firsts = ends - counts
    first_at, last_at = det_at[firsts], det_at[ends - 1]
    last_status = status[ends - 1]
    failed_count = np.bincount(det_job, weights=status == 2, minlength=n).astype(np.int64)
    retry_count = np.bincount(det_job, weights=is_retry, minlength=n).astype(np.int64)
    # the last failed detail's error, per job
    fail_pos = np.flatnonzero(status == 2)
    last_fail = np.full(n, -1)
    last_fail[det_job[fail_pos]] = fail_pos  # later positions overwrite earlier ones
    job_error = np.where(last_fail >= 0, error[np.maximum(last_fail, 0)], -1)
    job_status = np.where(d["ok"], 3, 4)  # completed / failed (JOB_STATUSES)
    # final status by the last detail: failed, read, delivered (a webhook's Success) or sent
    fcode = np.select([last_status == 2, last_status == 5, source_names[ends - 1] == 3],
                      [0, 1, 2], 3)  # fmt: skip
    final_code = np.array([schemas.FINAL_STATUSES.index(f)
                           for f in ("failed", "read", "delivered", "sent")])  # fmt: skip
    err_texts = np.array([_E[x][0] for x in ERRORS] + [None], dtype=object)
    steps = np.array([len(WORKFLOWS[w][2]) for w in range(len(WORKFLOWS))])[flows]
    step_idx = np.arange(n) - np.repeat(np.cumsum(steps) - steps, steps)
    step_names = np.array([f"{WORKFLOWS[w][0]}-{c.replace('_', '-')}" for w in range(len(WORKFLOWS))
                           for c in (*WORKFLOWS[w][2], "x")[:2]], dtype=object)  # fmt: skip
    step_key = flows[note] * 2 + step_idx
    sub = who[note]
    jobs_frame = pd.DataFrame({
        "job_id": job_ids,
        "notification_id": note_ids.take(note),
        "type": _cat(channel, MY_CHANNELS, schemas.STEP_TYPES),
        "status": pd.Categorical.from_codes(job_status, categories=schemas.JOB_STATUSES),
        "final_status": pd.Categorical.from_codes(final_code[fcode],
                                                  categories=schemas.FINAL_STATUSES),
        "step_id": _strings(np.char.add("step", np.char.mod("%03d", step_key))),
        "step_name": _strings(step_names[step_key]),
        "provider_id": _strings(np.array(PROVIDERS, dtype=object)[provider]),
        "digest_type": pd.Categorical.from_codes(np.full(n, -1), categories=schemas.DIGEST_TYPES),
        "updated_at": pd.to_datetime(last_at, utc=True),
        "first_execution_at": pd.to_datetime(first_at, utc=True),
        "last_execution_at": pd.to_datetime(last_at, utc=True),
        "duration_s": (last_at - first_at) / SEC,
        "execution_count": pd.array(counts, dtype="Int64"),
        "failed_count": pd.array(failed_count, dtype="Int64"),
        "retry_count": pd.array(retry_count, dtype="Int64"),
        "error_text": _strings(err_texts[job_error]),
        "error_code": _strings(np.append(codes, None)[job_error]),
        "subscriber_id": _strings(people["id"][sub]),
        "workflow": _strings(np.array([w[0] for w in WORKFLOWS], dtype=object)[flows[note]]),
    })  # fmt: skip
    # notifications: failed if any job failed, else the best outcome reached
    rank = fcode
    per_note = np.bincount(note, minlength=n_notes)
    note_first = np.cumsum(per_note) - per_note
    best = np.minimum.reduceat(rank, note_first)
    failed_jobs = np.bincount(note, weights=fcode == 0, minlength=n_notes).astype(np.int64)
    names = ("failed", "read", "delivered", "sent")
    note_status = np.array([schemas.NOTIFICATION_STATUSES.index(x) for x in names])[best]
    s = who
    wf = np.array([w[0] for w in WORKFLOWS], dtype=object)
    chan_lists = [list(w[2]) for w in WORKFLOWS]
    tag_lists = [list(w[3]) for w in WORKFLOWS]
    created = pd.to_datetime(times, utc=True)
    notes = pd.DataFrame({
        "notification_id": note_ids,
        "created_at": created,
        "updated_at": pd.to_datetime(np.maximum.reduceat(last_at, note_first), utc=True),
        "transaction_id": _ids(0xC0000000 + seed, n_notes),
        "template_id": _strings(np.char.add("tmpl-", np.char.mod("%02d", flows))),
        "workflow_name": _strings(np.array([w[1] for w in WORKFLOWS], dtype=object)[flows]),
        "workflow_identifier": _strings(wf[flows]),
        "template_origin": pd.Categorical.from_codes(np.zeros(n_notes, int),
                                                     categories=schemas.TEMPLATE_ORIGINS),
        "subscriber_internal_id": _strings(people["internal"][s]),
        "subscriber_id": _strings(people["id"][s]),
        "subscriber_email": _strings(people["email_address"][s]),
        "subscriber_first_name": _strings(people["first"][s]),
        "subscriber_last_name": _strings(people["last"][s]),
        "subscriber_phone": _strings(people["phone"][s]),
        "channels": _objects(chan_lists)[flows],
        "topic_keys": _objects([[] for _ in WORKFLOWS])[flows],
        "tags": _objects(tag_lists)[flows],
        "severity": pd.Categorical.from_codes(np.full(n_notes, -1), categories=schemas.SEVERITIES),
        "critical": pd.array(np.zeros(n_notes, bool), dtype="boolean"),
        "digested_notification_id": _strings(np.full(n_notes, None, dtype=object)),
        "payload": np.full(n_notes, None, dtype=object),
        "job_count": pd.array(per_note, dtype="Int64"),
        "failed_job_count": pd.array(failed_jobs, dtype="Int64"),
        "status": pd.Categorical.from_codes(note_status,
                                            categories=schemas.NOTIFICATION_STATUSES),
        "environment_id": _strings(np.full(n_notes, "env-wrenfield-prod", dtype=object)),
        "organization_id": _strings(np.full(n_notes, "org-wrenfield", dtype=object)),
    })  # fmt: skip
    return notes, jobs_frame, execution
