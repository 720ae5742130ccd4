"""Quillbrook: a B2B project-management SaaS's notification traffic, written blind (by someone
who did not read the incident detector), as the business would send it.

The business
------------
Companies (a few to a few hundred seats) split into teams of about 3 to 12 people work in
Quillbrook's projects: tasks are assigned, commented on, mentioned in and completed. Each company
sits in one of five regions, with its own time zone and summer-time rules (computed with
``zoneinfo`` through pandas): US West (Los Angeles), US East (New York), UK (London), Germany
(Berlin) and India (Kolkata, +5:30, no summer time). A company chooses its chat tool: Slack
(``slack``), MS Teams (``msteams``) or none. The user base grows about 3% a week (new users are
invited during office hours, each invitation an email).

Quiet traffic (``incidents=False``), per workflow (identifier: channels, providers):

* ``task-assigned``: in_app (``svc``) + push + chat, office hours, about 0.9 a user a workday.
* ``comment-added``: in_app; ``comment-mention``: in_app + email (``sendgrid``, unless the user
  opted out) + chat + push. Most of both come from collaborative sessions (a meeting of 2-7
  people of a team commenting within 8-35 minutes, every comment notifying the others, a
  quarter of them as mentions), the rest one at a time.
* ``task-completed``: in_app + chat; ``task-due-soon``: in_app + push, a 15:00 local batch on
  workdays for a fifth of the users.
* ``daily-tasks``: the "your tasks today" email (``mailgun``) at 08:00 local on weekdays for the
  third of users who opted in; ``weekly-planning``: the Monday 09:00 local digest email
  (``mailgun``) to every member of every team.
* ``login-code``: the 2FA SMS, for the quarter of users with 2FA, mostly as the office opens
  (``twilio``; ``plivo`` for India).
* ``password-reset``, ``user-invited``: transactional email (``sendgrid``), rare.
* ``invoice-issued``: a company's invoice email (``sendgrid``) on the 1st of the month, a batch
  at 00:00 UTC spreading over an hour; ``trial-ending``: a nightly 02:00 UTC batch to trial
  companies 3 days and 1 day before their trial ends.
* ``release-announcement``: an in_app + email (``mailgun``) blast to every user on one or two
  irregular weekdays at 16:00 UTC, over half an hour.

Work follows each region's office hours (German offices open earliest, Indian ones latest),
lunch (a dip to under half), a slower Friday afternoon, a busier Monday morning, weekends at a
twentieth and public holidays at a fifteenth (US: MLK, Presidents, Memorial Day, Juneteenth,
Independence Day, Labor Day, Thanksgiving and the day after; UK bank holidays with Easter; German
holidays with Easter, Ascension, Whit Monday, German Unity, Corpus Christi at half; India:
Republic Day, Holi, Independence Day, Gandhi Jayanti, Dussehra, Diwali; Christmas and New Year
everywhere), and the last week of a quarter 15% busier. Push goes to ``apns`` (iOS) or ``fcm``
(Android) for the three quarters of users with the app.

Delivery: every delivery job has a ``Step queued`` detail, then its attempts (``Message sent``
with the provider's response in ``raw``, or ``Unexpected provider error`` with the provider's
error body; retryable errors retried up to 3 times after about 15 s, 60 s and 240 s), then for
email and SMS the provider's webhook (delivered, bounced, undelivered). In-app messages are
created at once and about 45% read later (``ReadConfirmation``). Failures of the quiet traffic:
hard bounces of a few stale mailboxes, blocks by recipient domains (outlook.com most, gmail.com
and company domains less), undeliverable SMS (more in India), invalid phone numbers, expired
push tokens of users who uninstalled the app (``Unregistered`` / ``UNREGISTERED``), chat
rate limits (HTTP 429) when a company's webhook gets several messages in a minute (meetings),
rare provider 5xx. Latency per provider is lognormal and rises with the hour's load:
``load_latency`` is how much slower the busiest hours are (0.4: 40%).

Planted incidents (``incidents=True``: the same quiet traffic, incidents drawn from a separate
generator), one of each, within the last 25 days before ``now``, not overlapping in time except
the lasting failover (see below). ``hits`` is the sorted creation times of:

* ``degradation`` (``mailgun``, about 24 to 18 days before ``now``): a shared IP pool's
  reputation sinking, recipient servers rejecting a share of its mail climbing from 0 to 35%
  over six days (webhook ``failed``, ``reason: generic``, a blocklist message), then fixed.
  Hits: the notifications it failed that would otherwise have been delivered.
* ``volume_drop`` (``task-assigned``, about 16 days before): the trigger broken by a deploy for
  6 h of a workday. Hits: the notifications removed.
* ``provider_outage`` (email ``sendgrid``, about 13 days before): 2 h failing 97% of attempts
  with 503, retried in vain. Hits: notifications with a failed sendgrid attempt in the period.
* ``domain_bounces`` (the company domain of one of the three largest customers outside India,
  about 11 days before, from 10:00 its local time): 5 h of that domain rejecting 85% of mail
  through both providers (5.7.606, banned sending IP). ``provider_id``: the email provider that
  carried most of its mail then. Hits: the newly bounced notifications.
* ``error_spike`` (chat ``slack``, about 9 days before): 1.5 h of 429 on 60% of attempts,
  retried. Hits: slack notifications with a 429 in the period.
* ``volume_spike`` (``comment-added``, about 7 days before): an integration's webhook loop
  re-triggering comments for three users of one team for an hour, ``loop_mult`` times the
  workflow's notifications of that hour. Hits: the added notifications.
* ``latency_degradation`` (push ``fcm``, about 5 days before): 4 h with sends 6 times slower.
  Hits: every notification fcm carried then.
* ``traffic_shift`` (sms, about 3 days before, ``optional``): a failover moving the SMS of all
  regions but India from ``twilio`` to ``sns`` at once, kept until ``now`` (so it overlaps the
  stale credentials, on another channel). ``provider_id``: ``sns``. Hits: the moved notifications.
* ``stale_credentials`` (push ``apns``, 6 to 9 hours before ``now`` until ``now``): the APNs
  key revoked, every send failing with 403 ``InvalidProviderToken`` (source ``Credentials``),
  not retried. Hits: the notifications that failed.

Size: seed ``n`` has about ``1,000 * 4 ** (n - 1)`` users at the end of the span (seed 1: about
2,500 notifications a day on average, over 3,500 on workdays, 4,000 to 5,500 on Mondays; seed
2: about 10,000 a day); jobs are about 2 per notification, execution details about 3 per job.
A detail or job that would come after ``now`` is not there yet (the job in flight).
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from toolkit import schemas
from toolkit.error_codes import error_code
from toolkit.sandbox.seed.shaped import Traffic

__all__ = ["make"]

NS = 1_000_000_000
MINUTE = 60 * NS
BIN = 15 * MINUTE
ENVIRONMENT_ID = "6650f3a1c2b4d5e6f7a8b9c0"
ORGANIZATION_ID = "6650f3a1c2b4d5e6f7a8b9c1"

#: name, time zone, share of companies, office opens, lunch starts and ends, office closes (h).
REGIONS = (
    ("us-west", "America/Los_Angeles", 0.20, 8.5, 12.0, 13.0, 17.5),
    ("us-east", "America/New_York", 0.30, 8.5, 12.0, 13.0, 17.5),
    ("uk", "Europe/London", 0.18, 9.0, 12.5, 13.5, 17.5),
    ("de", "Europe/Berlin", 0.16, 8.0, 12.0, 13.0, 17.0),
    ("in", "Asia/Kolkata", 0.16, 9.5, 13.0, 14.0, 18.5),
)
INDIA = 4
TLDS = (".com", ".com", ".co.uk", ".de", ".in")
FIRST = (
    ("Maya", "Ethan", "Olivia", "Noah", "Ava", "Liam", "Sofia", "Lucas", "Chloe", "Mateo"),
    ("Emma", "James", "Harper", "Benjamin", "Grace", "Henry", "Zoe", "Daniel", "Ella", "Owen"),
    ("Amelia", "Oliver", "Isla", "George", "Poppy", "Harry", "Freya", "Jack", "Ivy", "Alfie"),
    ("Lena", "Jonas", "Mia", "Felix", "Hannah", "Paul", "Lea", "Finn", "Emilia", "Leon"),
    ("Aarav", "Priya", "Vivaan", "Ananya", "Arjun", "Diya", "Rohan", "Isha", "Kabir", "Meera"),
)
LAST = (
    ("Garcia", "Nguyen", "Kim", "Lopez", "Chen", "Patel", "Rivera", "Park", "Wong", "Silva"),
    ("Smith", "Johnson", "Brown", "Miller", "Davis", "Wilson", "Moore", "Clark", "Hall", "Young"),
    ("Taylor", "Evans", "Thomas", "Roberts", "Walker", "Wright", "Hughes", "Green", "Hill", "Ward"),
    ("Müller", "Schmidt", "Schneider", "Fischer", "Weber", "Wagner", "Becker", "Hoffmann",
     "Koch", "Richter"),
    ("Sharma", "Verma", "Iyer", "Reddy", "Nair", "Gupta", "Mehta", "Rao", "Bose", "Kapoor"),
)  # fmt: skip
WORDS = ("north", "bright", "cedar", "atlas", "harbor", "lumen", "pixel", "vertex", "orbit",
         "maple", "iron", "blue", "summit", "delta", "nova", "fern", "quartz", "river")  # fmt: skip

CHANNELS = schemas.CHANNELS  # in_app, email, sms, chat, push
IN_APP, EMAIL, SMS, CHAT, PUSH = range(5)

#: identifier, name, steps (in order), email provider, severity, critical, tags.
WORKFLOWS = (
    ("task-assigned", "Task assigned", (IN_APP, PUSH, EMAIL, CHAT), "sendgrid", "medium", False,
     ("tasks",)),
    ("comment-added", "New comment", (IN_APP,), None, "low", False, ("comments",)),
    ("comment-mention", "You were mentioned", (IN_APP, PUSH, EMAIL, CHAT), "sendgrid", "medium",
     False, ("comments", "mentions")),
    ("task-completed", "Task completed", (IN_APP, CHAT), None, "low", False, ("tasks",)),
    ("task-due-soon", "Task due tomorrow", (IN_APP, PUSH), None, "medium", False, ("tasks",)),
    ("daily-tasks", "Your tasks today", (EMAIL,), "mailgun", "low", False, ("digest",)),
    ("weekly-planning", "Weekly planning", (EMAIL,), "mailgun", "low", False, ("digest",)),
    ("login-code", "Login code", (SMS,), None, "high", True, ("security",)),
    ("password-reset", "Reset your password", (EMAIL,), "sendgrid", "high", True, ("security",)),
    ("user-invited", "You're invited to Quillbrook", (EMAIL,), "sendgrid", "medium", False,
     ("onboarding",)),
    ("invoice-issued", "Your invoice", (EMAIL,), "sendgrid", "medium", False, ("billing",)),
    ("trial-ending", "Your trial is ending", (EMAIL,), "sendgrid", "medium", False, ("billing",)),
    ("release-announcement", "What's new in Quillbrook", (IN_APP, EMAIL), "mailgun", "none",
     False, ("product",)),
)  # fmt: skip
WF = {workflow[0]: i for i, workflow in enumerate(WORKFLOWS)}

PROVIDERS = ("svc", "sendgrid", "mailgun", "twilio", "plivo", "sns", "fcm", "apns", "slack",
             "msteams")  # fmt: skip
P = {name: i for i, name in enumerate(PROVIDERS)}
#: median seconds from the step queued to the provider's answer
LATENCY = np.array([0.08, 0.45, 0.7, 0.55, 0.9, 0.35, 0.18, 0.14, 0.3, 0.8])
#: retryable server errors per attempt
SERVER_ERRORS = np.array([0, 4e-4, 5e-4, 3e-4, 8e-4, 3e-4, 3e-4, 2e-4, 5e-4, 8e-4])

# -- execution-detail kinds: status, source, detail, raw before the message id, raw after it -----
# (raw None: no raw; after None: no message id in it)
KINDS = {
    "queued": ("Pending", "Internal", "Step queued", None, None),
    "created": ("Success", "Internal", "In-App message created", None, None),
    "read": ("ReadConfirmation", "Internal", "Message read", None, None),
    "ok:sendgrid": ("Success", "Internal", "Message sent",
                    '{"statusCode":202,"headers":{"x-message-id":"', '"}}'),
    "ok:mailgun": ("Success", "Internal", "Message sent",
                   '{"id":"<', '@mg.quillbrook.io>","message":"Queued. Thank you.","status":200}'),
    "ok:twilio": ("Success", "Internal", "Message sent", '{"sid":"SM', '","status":"queued"}'),
    "ok:plivo": ("Success", "Internal", "Message sent",
                 '{"api_id":"', '","message":"message(s) queued"}'),
    "ok:sns": ("Success", "Internal", "Message sent", '{"MessageId":"', '"}'),
    "ok:fcm": ("Success", "Internal", "Message sent",
               '{"name":"projects/quillbrook-prod/messages/0:', '"}'),
    "ok:apns": ("Success", "Internal", "Message sent", '{"apns-id":"', '","status":"200"}'),
    "ok:slack": ("Success", "Internal", "Message sent", '{"statusCode":200,"body":"ok"}', None),
    "ok:msteams": ("Success", "Internal", "Message sent", '{"statusCode":200,"body":"1"}', None),
    # server errors (retryable)
    "5xx:sendgrid": ("Failed", "Internal", "Unexpected provider error",
                     '{"code":503,"message":"Service Unavailable","response":{"body":{"errors":'
                     '[{"message":"Service Unavailable","field":null}]}}}', None),
    "5xx:mailgun": ("Failed", "Internal", "Unexpected provider error",
                    '{"status":502,"details":"Bad Gateway","message":"Bad Gateway"}', None),
    "5xx:twilio": ("Failed", "Internal", "Unexpected provider error",
                   '{"code":20500,"message":"An internal server error has occurred","status":500}',
                   None),
    "5xx:plivo": ("Failed", "Internal", "Unexpected provider error",
                  '{"statusCode":500,"error":"internal server error"}', None),
    "5xx:sns": ("Failed", "Internal", "Unexpected provider error",
                '{"code":"InternalFailure","message":"The request processing has failed because '
                'of an unknown error.","statusCode":500}', None),
    "5xx:fcm": ("Failed", "Internal", "Unexpected provider error",
                '{"error":{"code":503,"message":"The service is currently unavailable.",'
                '"status":"UNAVAILABLE"}}', None),
    "5xx:apns": ("Failed", "Internal", "Unexpected provider error",
                 '{"status":"503","reason":"ServiceUnavailable"}', None),
    "5xx:slack": ("Failed", "Internal", "Unexpected provider error",
                  '{"statusCode":503,"body":"service_unavailable"}', None),
    "5xx:msteams": ("Failed", "Internal", "Unexpected provider error",
                    '{"statusCode":502,"body":"Bad Gateway"}', None),
    # rate limits (retryable)
    "429:slack": ("Failed", "Internal", "Unexpected provider error",
                  '{"statusCode":429,"body":"rate_limited","headers":{"retry-after":"30"}}', None),
    "429:msteams": ("Failed", "Internal", "Unexpected provider error",
                    '{"statusCode":429,"body":"Microsoft Teams endpoint returned HTTP error 429"}',
                    None),
    # permanent send errors
    "invalid:twilio": ("Failed", "Internal", "Unexpected provider error",
                       '{"code":21211,"message":"The \'To\' number is not a valid phone number.",'
                       '"status":400}', None),
    "invalid:plivo": ("Failed", "Internal", "Unexpected provider error",
                      '{"statusCode":400,"error":"invalid_destination_number"}', None),
    "invalid:sns": ("Failed", "Internal", "Unexpected provider error",
                    '{"code":"InvalidParameter","message":"Invalid parameter: PhoneNumber",'
                    '"statusCode":400}', None),
    "unreg:fcm": ("Failed", "Internal", "Unexpected provider error",
                  '{"error":{"code":404,"message":"Requested entity was not found.","status":'
                  '"NOT_FOUND","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.'
                  'FcmError","errorCode":"UNREGISTERED"}]}}', None),
    "unreg:apns": ("Failed", "Internal", "Unexpected provider error",
                   '{"status":"410","reason":"Unregistered"}', None),
    "gone:slack": ("Failed", "Internal", "Unexpected provider error",
                   '{"statusCode":404,"body":"channel_not_found"}', None),
    "gone:msteams": ("Failed", "Internal", "Unexpected provider error",
                     '{"statusCode":410,"body":"Connector configuration not found"}', None),
    "auth:apns": ("Failed", "Credentials", "Failed to send: the provider rejected the credentials",
                  '{"status":"403","reason":"InvalidProviderToken"}', None),
    # webhooks
    "delivered:sendgrid": ("Success", "Webhook", "Email delivered",
                           '{"event":"delivered","response":"250 2.0.0 OK","sg_message_id":"',
                           '"}'),
    "delivered:mailgun": ("Success", "Webhook", "Email delivered",
                          '{"event":"delivered","delivery-status":{"code":250,"message":"OK"},'
                          '"id":"', '"}'),
    "delivered:twilio": ("Success", "Webhook", "SMS delivered",
                         '{"MessageStatus":"delivered","MessageSid":"SM', '"}'),
    "delivered:plivo": ("Success", "Webhook", "SMS delivered",
                        '{"Status":"delivered","ErrorCode":"000","MessageUUID":"', '"}'),
    "delivered:sns": ("Success", "Webhook", "SMS delivered",
                      '{"status":"SUCCESS","delivery":{"providerResponse":"Message has been '
                      'accepted by phone carrier"},"notification":{"messageId":"', '"}}'),
    "bounce:sendgrid": ("Failed", "Webhook", "Email bounced",
                        '{"event":"bounce","type":"bounce","status":"5.1.1","reason":"550 5.1.1 '
                        'The email account that you tried to reach does not exist.",'
                        '"sg_message_id":"', '"}'),
    "bounce:mailgun": ("Failed", "Webhook", "Email bounced",
                       '{"event":"failed","severity":"permanent","reason":"bounce",'
                       '"delivery-status":{"code":550,"message":"5.1.1 The email account that you '
                       'tried to reach does not exist."},"id":"', '"}'),
    "block:sendgrid": ("Failed", "Webhook", "Email bounced",
                       '{"event":"bounce","type":"blocked","status":"5.7.1","reason":"550 5.7.1 '
                       'Message rejected by the recipient server (policy).","sg_message_id":"',
                       '"}'),
    "block:mailgun": ("Failed", "Webhook", "Email bounced",
                      '{"event":"failed","severity":"permanent","reason":"bounce",'
                      '"delivery-status":{"code":550,"message":"5.7.1 Message rejected by the '
                      'recipient server (policy)."},"id":"', '"}'),
    "banned:sendgrid": ("Failed", "Webhook", "Email bounced",
                        '{"event":"bounce","type":"blocked","status":"5.7.606","reason":"550 '
                        '5.7.606 Access denied, banned sending IP","sg_message_id":"', '"}'),
    "banned:mailgun": ("Failed", "Webhook", "Email bounced",
                       '{"event":"failed","severity":"permanent","reason":"bounce",'
                       '"delivery-status":{"code":550,"message":"5.7.606 Access denied, banned '
                       'sending IP"},"id":"', '"}'),
    "listed:mailgun": ("Failed", "Webhook", "Email bounced",
                       '{"event":"failed","severity":"permanent","reason":"generic",'
                       '"delivery-status":{"code":554,"message":"5.7.1 Service unavailable; '
                       'Client host blocked using zen.spamhaus.org"},"id":"', '"}'),
    "undelivered:twilio": ("Failed", "Webhook", "SMS undelivered",
                           '{"MessageStatus":"undelivered","ErrorCode":"30003","MessageSid":"SM',
                           '"}'),
    "unknown:twilio": ("Failed", "Webhook", "SMS undelivered",
                       '{"MessageStatus":"undelivered","ErrorCode":"30005","MessageSid":"SM', '"}'),
    "undelivered:plivo": ("Failed", "Webhook", "SMS undelivered",
                          '{"Status":"undelivered","ErrorCode":"80","MessageUUID":"', '"}'),
    "undelivered:sns": ("Failed", "Webhook", "SMS undelivered",
                        '{"status":"FAILURE","delivery":{"providerResponse":"Phone is currently '
                        'unreachable/unavailable"},"notification":{"messageId":"', '"}}'),
}  # fmt: skip
KIND_NAMES = tuple(KINDS)
K = {name: i for i, name in enumerate(KIND_NAMES)}


def _kind_table(prefix: str) -> np.ndarray:
    """Per provider, the kind ``prefix:provider`` (-1 where there is none)."""
    return np.array([K.get(f"{prefix}:{name}", -1) for name in PROVIDERS])


OK, SERVER, RATE, INVALID, UNREG, GONE = (
    _kind_table(p) for p in ("ok", "5xx", "429", "invalid", "unreg", "gone")
)
DELIVERED, BOUNCE, BLOCK, UNDELIVERED = (
    _kind_table(p) for p in ("delivered", "bounce", "block", "undelivered")
)
RETRYABLE = np.zeros(len(KINDS), bool)
RETRYABLE[[K[n] for n in KIND_NAMES if n.startswith(("5xx:", "429:"))]] = True
BACKOFF = (15.0, 60.0, 240.0)
ATTEMPTS = 4


# -- helpers -----------------------------------------------------------------------------------


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64 of ``x`` (uint64): deterministic ids without a random stream."""
    x = x.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def _text(blob: bytes, n: int, width: int) -> pa.Array:
    """``n`` strings of ``width`` characters laid end to end in ``blob``."""
    offsets = np.arange(0, (n + 1) * width, width, dtype=np.int64)
    return pa.Array.from_buffers(
        pa.large_string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(blob)]
    )


def _object_ids(times_ns: np.ndarray, counter: np.ndarray, machine: int) -> pa.Array:
    """24-hex ObjectId-like ids: creation second, a machine word, a counter."""
    n = len(counter)
    raw = np.empty((n, 12), np.uint8)
    raw[:, :4] = (times_ns // NS).astype(">u4").view(np.uint8).reshape(n, 4)
    raw[:, 4:8] = np.frombuffer(np.uint32(machine).astype(">u4").tobytes(), np.uint8)
    raw[:, 8:] = (counter % 2**32).astype(">u4").view(np.uint8).reshape(n, 4)
    return _text(raw.tobytes().hex().encode(), n, 24)


def _hex16(values: np.ndarray) -> pa.Array:
    return _text(_mix(values).astype(">u8").tobytes().hex().encode(), len(values), 16)


def _uuids(values: np.ndarray) -> pa.Array:
    n = len(values)
    a = _mix(values).astype(">u8").view(np.uint8).reshape(n, 8)
    b = _mix(values ^ np.uint64(0xA5A5A5A5)).astype(">u8").view(np.uint8).reshape(n, 8)
    hexed = np.frombuffer(np.hstack([a, b]).tobytes().hex().encode(), np.uint8).reshape(n, 32)
    hexed = hexed.copy()
    hexed[:, 12] = ord("4")
    out = np.full((n, 36), ord("-"), np.uint8)
    for lo, hi, at in ((0, 8, 0), (8, 12, 9), (12, 16, 14), (16, 20, 19), (20, 32, 24)):
        out[:, at : at + hi - lo] = hexed[:, lo:hi]
    return _text(out.tobytes(), n, 36)


def _easter(year: int) -> date:
    a, b, c = year % 19, year // 100, year % 100
    d, e = divmod(b, 4)
    f = (b + 8) // 25
    g = (b - f + 1) // 3
    h = (19 * a + b - d - g + 15) % 30
    i, k = divmod(c, 4)
    ell = (32 + 2 * e + 2 * i - h - k) % 7
    m = (a + 11 * h + 22 * ell) // 451
    month, day = divmod(h + ell - 7 * m + 114, 31)
    return date(year, month, day + 1)


def _nth(year: int, month: int, weekday: int, n: int) -> date:
    """The ``n``-th ``weekday`` (Monday 0) of a month; ``n = -1``: the last."""
    if n > 0:
        first = date(year, month, 1)
        return first + timedelta(days=(weekday - first.weekday()) % 7 + 7 * (n - 1))
    last = date(year + month // 12, month % 12 + 1, 1) - timedelta(days=1)
    return last - timedelta(days=(last.weekday() - weekday) % 7)


def _observed(day: date) -> date:
    return day + timedelta(days={5: -1, 6: 1}.get(day.weekday(), 0))


HOLI = {2025: date(2025, 3, 14), 2026: date(2026, 3, 4), 2027: date(2027, 3, 22)}
DUSSEHRA = {2025: date(2025, 10, 2), 2026: date(2026, 10, 20), 2027: date(2027, 10, 9)}
DIWALI = {2025: date(2025, 10, 20), 2026: date(2026, 11, 8), 2027: date(2027, 10, 29)}


def _holidays(region: int, year: int) -> dict[date, float]:
    """The region's public holidays of ``year``: date → the work left (a fifteenth, or half)."""
    off, half = 1 / 15, 0.5
    easter = _easter(year)
    days: dict[date, float] = {date(year, 1, 1): off, date(year, 12, 25): off}
    if region in (0, 1):
        for day in (_nth(year, 1, 0, 3), _nth(year, 2, 0, 3), _nth(year, 5, 0, -1),
                    _observed(date(year, 6, 19)), _observed(date(year, 7, 4)),
                    _nth(year, 9, 0, 1), _nth(year, 11, 3, 4)):  # fmt: skip
            days[day] = off
        days[_nth(year, 11, 3, 4) + timedelta(days=1)] = 0.3
        days[date(year, 12, 24)] = half
    elif region == 2:
        for day in (easter - timedelta(days=2), easter + timedelta(days=1), _nth(year, 5, 0, 1),
                    _nth(year, 5, 0, -1), _nth(year, 8, 0, -1), date(year, 12, 26)):  # fmt: skip
            days[day] = off
    elif region == 3:
        for day in (easter - timedelta(days=2), easter + timedelta(days=1), date(year, 5, 1),
                    easter + timedelta(days=39), easter + timedelta(days=50), date(year, 10, 3),
                    date(year, 12, 26)):  # fmt: skip
            days[day] = off
        days[easter + timedelta(days=60)] = half  # Corpus Christi: some states
        days[date(year, 12, 24)] = half
    else:
        for day in (date(year, 1, 26), date(year, 8, 15), date(year, 10, 2)):
            days[day] = off
        for table in (HOLI, DUSSEHRA, DIWALI):
            if year in table:
                days[table[year]] = off
        if year in DIWALI:
            days[DIWALI[year] + timedelta(days=1)] = half
    return days


def _shape(hour: np.ndarray, region: int) -> np.ndarray:
    """Work in an office by local hour: opening, lunch dip, closing, a little evening."""
    _, _, _, s, l0, l1, e = REGIONS[region]
    knots = [0, s - 1.5, s, s + 1, l0, l0 + 0.25, l1 - 0.25, l1, e - 0.5, e, e + 1.5, 21, 24]
    level = [0.01, 0.02, 0.5, 1.0, 1.0, 0.42, 0.42, 0.95, 0.85, 0.5, 0.14, 0.06, 0.01]
    return np.interp(hour, knots, level)


class _Pool:
    """A region's users by join time, to pick active ones weighted by how much they work."""

    def __init__(self, users: np.ndarray, joined: np.ndarray, weight: np.ndarray):
        order = np.argsort(joined[users], kind="stable")
        self.users = users[order]
        self.joined = joined[self.users]
        self.cum = np.cumsum(weight[self.users])

    def active(self, t: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.joined, t, side="right")

    def pick(self, rng: np.random.Generator, t: np.ndarray) -> np.ndarray:
        k = np.maximum(self.active(t), 1)
        u = rng.random(len(t)) * self.cum[k - 1]
        return self.users[np.minimum(np.searchsorted(self.cum, u, side="right"), k - 1)]


# -- the world ---------------------------------------------------------------------------------


class _World:
    """Companies, teams, users and the calendar of the span."""

    def __init__(self, rng: np.random.Generator, seed: int, start: pd.Timestamp, now: pd.Timestamp):
        self.start, self.now = start.value, now.value
        weeks = (now - start) / pd.Timedelta(days=7)
        n_end = int(round(1080 * 4 ** (seed - 1)))
        # companies until the seats are covered
        sizes = np.clip(np.round(rng.lognormal(2.6, 1.0, n_end)), 3, 400).astype(int)
        sizes = sizes[: np.searchsorted(np.cumsum(sizes), n_end) + 1]
        sizes[-1] -= max(sizes.sum() - n_end, 0)
        sizes = sizes[sizes > 0]
        nc = len(sizes)
        self.company_region = rng.choice(5, nc, p=[r[2] for r in REGIONS])
        self.company_region[: min(nc, 5)] = rng.permutation(5)[: min(nc, 5)]  # every region
        chat = np.array([P["slack"], P["msteams"], -1])
        chat_p = np.where(self.company_region[:, None] == 3, [[0.3, 0.45, 0.25]],
                          [[0.5, 0.2, 0.3]])  # fmt: skip
        self.company_chat = chat[(rng.random(nc)[:, None] > np.cumsum(chat_p, 1)).sum(1)]
        self.company_trial = (sizes < 15) & (rng.random(nc) < 0.3)
        self.trial_end = start.value + rng.random(nc) * (now - start + pd.Timedelta(days=10)).value
        consumer = (sizes < 10) & (rng.random(nc) < 0.6)
        self.company_domain = [
            f"{WORDS[rng.integers(len(WORDS))]}{WORDS[rng.integers(len(WORDS))]}{c}"
            f"{TLDS[self.company_region[c]]}"
            for c in range(nc)
        ]
        # users
        n = int(sizes.sum())
        self.n = n
        self.company = np.repeat(np.arange(nc), sizes)
        self.region = self.company_region[self.company]
        teams_per = np.maximum(1, np.round(sizes / rng.uniform(4, 9, nc))).astype(int)
        team_first = np.concatenate([[0], np.cumsum(teams_per)[:-1]])
        self.team = team_first[self.company] + (rng.random(n) * teams_per[self.company]).astype(int)
        self.n_teams = int(teams_per.sum())
        self.admin = np.concatenate([[0], np.cumsum(sizes)[:-1]])  # a company's first user
        self.weight = rng.lognormal(0.0, 0.6, n)
        self.platform = rng.choice(3, n, p=[0.4, 0.35, 0.25])  # 0 iOS (apns), 1 Android, 2 none
        self.uninstalled = np.where(
            (self.platform < 2) & (rng.random(n) < 0.07),
            start.value + ((rng.random(n) * 1.6 - 0.6) * (now - start).value).astype(np.int64),
            np.iinfo(np.int64).max,
        )
        self.two_factor = rng.random(n) < 0.25
        self.bad_phone = rng.random(n) < 0.006
        self.has_phone = self.two_factor | (rng.random(n) < 0.3)
        self.bad_mailbox = rng.random(n) < 0.004
        self.daily_digest = rng.random(n) < 0.35
        self.mention_email = rng.random(n) > 0.2
        self.assign_email = rng.random(n) < 0.5
        fi = rng.integers(0, 10, n)
        li = rng.integers(0, 10, n)
        self.first = [FIRST[r][i] for r, i in zip(self.region, fi, strict=True)]
        self.last = [LAST[r][i] for r, i in zip(self.region, li, strict=True)]
        uses_consumer = consumer[self.company]
        consumer_domain = np.array(["gmail.com", "outlook.com", "yahoo.com", "hotmail.com"])[
            rng.choice(4, n, p=[0.55, 0.25, 0.1, 0.1])
        ]
        self.email = [
            f"{f.lower()}.{ln.lower()}{i % 97}@" + (cd if uc else self.company_domain[c])
            for i, (f, ln, c, uc, cd) in enumerate(
                zip(
                    self.first, self.last, self.company, uses_consumer, consumer_domain, strict=True
                )  # fmt: skip
            )
        ]
        self.domain = np.array([e.rsplit("@", 1)[1] for e in self.email])
        digits = rng.integers(2_000_000, 9_999_999, n)
        prefix = np.array(["+1415", "+1646", "+447700", "+49151", "+9198"])[self.region]
        self.phone = [f"{p}{d}" if h else None
                      for p, d, h in zip(prefix, digits, self.has_phone, strict=True)]  # fmt: skip
        self.subscriber_id = [f"usr_{100000 + i}" for i in range(n)]
        # growth: the newest users join during the span, invited in office hours
        n0 = int(round(n / 1.03**weeks))
        joiners = rng.permutation(np.arange(n))
        joiners = joiners[~np.isin(joiners, self.admin)][: n - n0]
        self.joined = np.full(n, start.value - 400 * 86_400 * NS, np.int64)
        self.joiners = joiners
        # the calendar: 15-minute bins, each region's local hour and work factor
        self.bins = np.arange(start.floor("D").value, now.value, BIN, dtype=np.int64)
        utc = pd.DatetimeIndex(self.bins.astype("datetime64[ns]")).tz_localize("UTC")
        self.local_hour, self.work = [], []
        for r, region in enumerate(REGIONS):
            local = utc.tz_convert(region[1])
            hour = local.hour + local.minute / 60
            weekday = local.day_of_week.to_numpy()
            dates = local.date
            holidays: dict[date, float] = {}
            for year in {d.year for d in dates[::96]} | {dates[-1].year}:
                holidays.update(_holidays(r, year))
            factor = np.where(weekday >= 5, np.where(weekday == 5, 0.055, 0.04), 1.0)
            holiday = np.array([holidays.get(d, 1.0) for d in dates])
            factor = factor * holiday
            day = local.day.to_numpy()
            month = local.month.to_numpy()
            quarter_end = np.isin(month, (3, 6, 9, 12)) & (day > local.days_in_month - 7)
            factor = factor * np.where(quarter_end & (weekday < 5), 1.15, 1.0)
            factor = factor * np.where((weekday == 0) & (hour < 12), 1.1, 1.0)
            factor = factor * np.where((weekday == 4) & (hour >= 14), 0.8, 1.0)
            self.local_hour.append(np.asarray(hour))
            self.work.append(_shape(np.asarray(hour), r) * factor)
        self.day_norm = np.array(
            [_shape(np.arange(96) / 4, r).sum() for r in range(5)]
        )  # one ordinary workday's bins

    def region_users(self, r: int) -> np.ndarray:
        return np.flatnonzero(self.region == r)


def _local_times(world: _World, r: int, hour: float, weekdays: tuple[int, ...]) -> np.ndarray:
    """The UTC times (ns) of ``hour`` local on the given weekdays of region ``r`` in the span."""
    tz = REGIONS[r][1]
    first = pd.Timestamp(world.start, tz="UTC").tz_convert(tz).normalize().tz_localize(None)
    span = (world.now - world.start) // (86_400 * NS)
    days = pd.date_range(first - pd.Timedelta(days=1), periods=span + 3, freq="D")
    days = days[np.isin(days.day_of_week, weekdays)]
    at = (days + pd.Timedelta(hours=hour)).tz_localize(tz).tz_convert("UTC").as_unit("ns")
    at = at.asi8
    return at[(at >= world.start) & (at < world.now)]


# -- quiet events ------------------------------------------------------------------------------


class _Events:
    """Notifications to send: time (ns), user, workflow, team topic (-1: none)."""

    def __init__(self):
        self.parts: list[tuple[np.ndarray, np.ndarray, int | np.ndarray, np.ndarray | None]] = []

    def add(self, t, users, workflow, team=None):
        self.parts.append((np.asarray(t, np.int64), np.asarray(users, np.int64), workflow, team))

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        t = np.concatenate([p[0] for p in self.parts])
        u = np.concatenate([p[1] for p in self.parts])
        w = np.concatenate([np.broadcast_to(np.asarray(p[2]), len(p[0])) for p in self.parts])
        team = np.concatenate(
            [p[3] if p[3] is not None else np.full(len(p[0]), -1) for p in self.parts]
        )
        order = np.argsort(t, kind="stable")
        return t[order], u[order], w[order].astype(np.int64), team[order].astype(np.int64)


def _poisson_times(rng, world: _World, r: int, expected: np.ndarray) -> np.ndarray:
    counts = rng.poisson(expected)
    return np.repeat(world.bins, counts) + (rng.random(counts.sum()) * BIN).astype(np.int64)


def _quiet_events(rng: np.random.Generator, world: _World) -> _Events:
    events = _Events()
    n_bins = len(world.bins)
    # the new users' invitations, in office hours, more as the base grows
    growth = np.exp(np.log(1.03) * (world.bins - world.start) / (7 * 86_400 * NS))
    for r in range(5):
        mine = world.joiners[world.region[world.joiners] == r]
        if not len(mine):
            continue
        p = world.work[r] * growth
        bins = rng.choice(n_bins, len(mine), p=p / p.sum())
        t = np.sort(world.bins[bins] + (rng.random(len(mine)) * BIN).astype(np.int64))
        world.joined[mine] = np.maximum(t, world.start)
        events.add(world.joined[mine], mine, WF["user-invited"])
    pools = [_Pool(world.region_users(r), world.joined, world.weight) for r in range(5)]
    flat = [_Pool(world.region_users(r), world.joined, np.ones(world.n)) for r in range(5)]
    members = np.full((world.n_teams, 1 + np.bincount(world.team).max()), -1)
    order = np.argsort(world.team, kind="stable")
    slot = np.arange(world.n) - np.searchsorted(world.team[order], world.team[order])
    members[world.team[order], slot] = order
    # interactive work: per user a workday's rate
    rates = {"task-assigned": 0.9, "comment-added": 0.35, "comment-mention": 0.12,
             "task-completed": 0.4, "password-reset": 0.004, "login-code": 0.8}  # fmt: skip
    for r in range(5):
        active = pools[r].active(world.bins + BIN // 2)
        base = active * world.work[r] / world.day_norm[r]
        for name, rate in rates.items():
            expected = base * rate
            if name == "login-code":
                hour = world.local_hour[r]
                boost = 1 + 2.0 * np.exp(-((hour - REGIONS[r][3] - 0.4) ** 2) / 0.6)
                expected = expected * boost / 1.6
            t = _poisson_times(rng, world, r, expected)
            users = pools[r].pick(rng, t)
            if name == "login-code":
                keep = world.two_factor[users]
                t, users = t[keep], users[keep]
            events.add(t, users, WF[name])
        # meetings: a team commenting together
        sessions = base * 0.3 / 6.0
        t = _poisson_times(rng, world, r, sessions)
        team = world.team[flat[r].pick(rng, t)]
        cand = members[team]
        ok = cand >= 0
        ok[ok] = world.joined[cand[ok]] <= np.repeat(t, ok.sum(1))
        keys = np.where(ok, rng.random(cand.shape), 2.0)
        picked = np.take_along_axis(cand, np.argsort(keys, 1), 1)[:, :7]
        k = np.minimum(ok.sum(1), 2 + rng.poisson(1.8, len(t)))
        k = np.minimum(k, picked.shape[1])
        keep = k >= 2
        t, team, picked, k = t[keep], team[keep], picked[keep], k[keep]
        duration = rng.uniform(8, 35, len(t)) * MINUTE
        m = 3 + rng.poisson(5, len(t))
        s = np.repeat(np.arange(len(t)), m)
        ct = t[s] + (rng.random(len(s)) * duration[s]).astype(np.int64)
        author = (rng.random(len(s)) * k[s]).astype(int)
        pairs = np.repeat(np.arange(len(s)), k[s] - 1)
        j = np.arange(len(pairs)) - np.repeat(np.cumsum(k[s] - 1) - (k[s] - 1), k[s] - 1)
        ps = s[pairs]
        recipient = picked[ps, (author[pairs] + 1 + j) % k[ps]]
        at = ct[pairs] + rng.integers(200_000_000, 2 * NS, len(pairs))
        mention = rng.random(len(pairs)) < 0.25
        workflow = np.where(mention, WF["comment-mention"], WF["comment-added"])
        events.add(at, recipient, workflow, team[ps])
        # batches in local time
        users = world.region_users(r)
        for t0 in _local_times(world, r, 9.0, (0,)):
            who = members[np.unique(world.team[users])].ravel()
            who = who[(who >= 0)]
            who = who[world.joined[who] <= t0]
            spread = (rng.random(len(who)) * 12 * MINUTE).astype(np.int64)
            events.add(t0 + spread, who, WF["weekly-planning"], world.team[who])
        for t0 in _local_times(world, r, 8.0, (0, 1, 2, 3, 4)):
            who = users[world.daily_digest[users] & (world.joined[users] <= t0)]
            events.add(t0 + (rng.random(len(who)) * 8 * MINUTE).astype(np.int64), who,
                       WF["daily-tasks"])  # fmt: skip
        for t0 in _local_times(world, r, 15.0, (0, 1, 2, 3, 4)):
            who = users[(world.joined[users] <= t0) & (rng.random(len(users)) < 0.2)]
            events.add(t0 + (rng.random(len(who)) * 5 * MINUTE).astype(np.int64), who,
                       WF["task-due-soon"])  # fmt: skip
    # batches in UTC: invoices on the 1st, trial reminders nightly, release announcements
    days = pd.date_range(pd.Timestamp(world.start, tz="UTC").floor("D"),
                         pd.Timestamp(world.now, tz="UTC"), freq="D").asi8  # fmt: skip
    admins = world.admin
    for day in days:
        if pd.Timestamp(day, tz="UTC").day == 1:
            who = admins[~world.company_trial]
            spread = np.minimum(rng.exponential(18, len(who)), 59.9) * MINUTE
            events.add(day + spread.astype(np.int64), who, WF["invoice-issued"])
        left = (world.trial_end - day) / (86_400 * NS)
        due = world.company_trial & (((left > 3) & (left <= 4)) | ((left > 1) & (left <= 2)))
        who = admins[due]
        at = day + 2 * 3600 * NS + (rng.random(len(who)) * 10 * MINUTE).astype(np.int64)
        events.add(at, who, WF["trial-ending"])
    weekdays = [d for d in days[7:] if pd.Timestamp(d, tz="UTC").weekday() in (1, 2, 3)]
    blasts = min(len(weekdays), 1 + int(rng.random() < 0.5))
    for day in rng.choice(np.array(weekdays, np.int64), blasts, replace=False):
        t0 = day + 16 * 3600 * NS
        who = np.flatnonzero(world.joined <= t0)
        events.add(t0 + (rng.random(len(who)) * 30 * MINUTE).astype(np.int64), who,
                   WF["release-announcement"])  # fmt: skip
    return events


# -- the planted incidents ---------------------------------------------------------------------


def _workday(now: pd.Timestamp, days_before: float, hour: float) -> pd.Timestamp:
    day = (now - pd.Timedelta(days=days_before)).floor("D")
    day += pd.Timedelta(days={5: -1, 6: 1}.get(day.weekday(), 0))
    return day + pd.Timedelta(hours=hour)


def _plan(irng: np.random.Generator, now: pd.Timestamp, world: _World) -> dict[str, dict[str, Any]]:
    def jitter(hours: float) -> float:
        return float(irng.uniform(-hours, hours))

    def one(kind, name, channel, provider, workflow, domain, start, hours, optional=False):
        return {"kind": kind, "name": name, "channel": channel, "provider_id": provider,
                "workflow": workflow, "domain": domain, "start": start,
                "end": start + pd.Timedelta(hours=hours), "optional": optional}  # fmt: skip

    degradation = _workday(now, 23 + jitter(0.5), 6.0)
    # a big customer's mail gateway (in the Americas or Europe) turning on our mail at 10:00
    sizes = np.bincount(world.company, minlength=len(world.company_region))
    sizes[world.company_region == INDIA] = 0
    company = int(irng.choice(np.argsort(sizes)[::-1][:3]))
    domain = world.company_domain[company]
    tz = REGIONS[world.company_region[company]][1]
    local = _workday(now.tz_convert(tz).tz_localize(None), 11 + jitter(0.4), 10.0 + jitter(0.5))
    bounced = local.tz_localize(tz).tz_convert("UTC")
    stale = now - pd.Timedelta(hours=float(irng.uniform(6, 9)))
    shift = _workday(now, 3 + jitter(0.3), 16.0 + jitter(1))
    plan = [
        one("degradation", "mailgun's IP pool blocklisted, rejections climbing", "email",
            "mailgun", None, None, degradation, 6 * 24),
        one("volume_drop", "task-assigned trigger broken by a deploy", None, None,
            "task-assigned", None, _workday(now, 16 + jitter(0.4), 13.0 + jitter(1)), 6),
        one("provider_outage", "SendGrid outage", "email", "sendgrid", None, None,
            _workday(now, 13 + jitter(0.4), 15.0 + jitter(1)), 2),
        one("domain_bounces", f"{domain} rejecting our mail", "email", "sendgrid", None,
            domain, bounced, 5),
        one("error_spike", "Slack rate limiting", "chat", "slack", None, None,
            _workday(now, 9 + jitter(0.4), 14.5 + jitter(1)), 1.5),
        one("volume_spike", "comment webhook loop", None, None, "comment-added", None,
            _workday(now, 7 + jitter(0.4), 15.0 + jitter(1)), 1),
        one("latency_degradation", "FCM slow", "push", "fcm", None, None,
            _workday(now, 5 + jitter(0.4), 12.0 + jitter(1)), 4),
        one("traffic_shift", "SMS failover from Twilio to SNS", "sms", "sns", None, None, shift,
            (now - shift) / pd.Timedelta(hours=1), True),
        one("stale_credentials", "APNs key revoked", "push", "apns", None, None, stale,
            (now - stale) / pd.Timedelta(hours=1)),
    ]  # fmt: skip
    for incident in plan:  # seconds, as the service's times are
        incident["start"] = incident["start"].floor("s")
        incident["end"] = min(incident["end"].floor("s"), now)
    return {incident["kind"]: incident for incident in plan}


def _inside(t: np.ndarray, incident: dict[str, Any]) -> np.ndarray:
    return (t >= incident["start"].value) & (t < incident["end"].value)


# -- jobs and execution details ----------------------------------------------------------------


def _jobs(world: _World, users: np.ndarray, workflow: np.ndarray):
    """The delivery jobs of the notifications: notification index, channel."""
    note, channel = [], []
    for position in range(4):
        for w, spec in enumerate(WORKFLOWS):
            if position >= len(spec[2]):
                continue
            ch = spec[2][position]
            mine = np.flatnonzero(workflow == w)
            u = users[mine]
            if ch == PUSH:
                mine = mine[world.platform[u] < 2]
            elif ch == CHAT:
                mine = mine[world.company_chat[world.company[u]] >= 0]
            elif ch == EMAIL and spec[0] == "comment-mention":
                mine = mine[world.mention_email[u]]
            elif ch == EMAIL and spec[0] == "task-assigned":
                mine = mine[world.assign_email[u]]
            elif ch == SMS:
                mine = mine[world.has_phone[u]]
            note.append(mine)
            channel.append(np.full(len(mine), ch))
            note[-1] = note[-1] * 8 + position  # sort key
    key = np.concatenate(note)
    channel = np.concatenate(channel)
    order = np.argsort(key, kind="stable")
    return key[order] // 8, channel[order]


def _providers(world, users, workflow, channel, t, shift):
    provider = np.full(len(channel), P["svc"])
    email = channel == EMAIL
    email_provider = np.array([P[w[3]] if w[3] else -1 for w in WORKFLOWS])
    provider[email] = email_provider[workflow[email]]
    sms = channel == SMS
    india = world.region[users] == INDIA
    provider[sms] = np.where(india[sms], P["plivo"], P["twilio"])
    if shift is not None:
        provider[sms & ~india & _inside(t, shift)] = P["sns"]
    push = channel == PUSH
    provider[push] = np.where(world.platform[users[push]] == 0, P["apns"], P["fcm"])
    chat = channel == CHAT
    provider[chat] = world.company_chat[world.company[users[chat]]]
    return provider


class _Draws:
    """The uniforms of each job's outcome (quiet) or of the incidents' effect on it."""

    def __init__(self, rng: np.random.Generator, n: int):
        self.error = rng.random((n, ATTEMPTS))
        self.latency = rng.standard_normal((n, ATTEMPTS))
        self.backoff = rng.uniform(0.8, 1.25, (n, ATTEMPTS))
        self.queue = rng.uniform(0.02, 0.6, n)
        self.bounce = rng.random(n)
        self.webhook = rng.lognormal(np.log(6.0), 0.8, n)
        self.read = rng.random(n)
        self.read_after = rng.lognormal(np.log(35 * 60), 1.3, n)

    @staticmethod
    def stack(a: _Draws, b: _Draws) -> _Draws:
        out = object.__new__(_Draws)
        for name in vars(a):
            setattr(out, name, np.concatenate([getattr(a, name), getattr(b, name)]))
        return out


def _deliver(world, t_note, users, provider, channel, draws, chance, load, load_latency, plan):
    """Attempts, webhooks and reads of each job: the detail rows (job, time ns, kind)."""
    n = len(provider)
    t0 = t_note + (draws.queue * NS).astype(np.int64)
    rows_job, rows_t, rows_kind = [np.arange(n)], [t0], [np.full(n, K["queued"])]
    external = channel != IN_APP
    # load: the hour's notifications against the busy hours'
    hour_of = np.clip((t_note - world.start) // (3600 * NS), 0, len(load) - 1)
    slow = 1 + load_latency * load[hour_of]
    # chat rate limits: a company's webhook with several messages in a minute
    burst = np.zeros(n)
    chat = np.flatnonzero(channel == CHAT)
    if len(chat):
        key = world.company[users[chat]] * 10_000_000 + (t_note[chat] // MINUTE) % 10_000_000
        _, inverse, counts = np.unique(key, return_inverse=True, return_counts=True)
        burst[chat] = np.clip(0.12 * (counts[inverse] - 2), 0, 0.6)
    # the permanent failures of the recipient: no token, no number, a removed chat app
    dead = np.full(n, -1)
    push = channel == PUSH
    gone = push & (t_note >= world.uninstalled[users])
    dead[gone] = UNREG[provider[gone]]
    bad = (channel == SMS) & world.bad_phone[users]
    dead[bad] = INVALID[provider[bad]]
    at = t0.astype(np.float64)
    live = external.copy()
    attempts = np.zeros(n, int)
    last_kind = np.full(n, -1)
    sent_at = np.zeros(n, np.int64)
    for a in range(ATTEMPTS):
        idx = np.flatnonzero(live)
        if not len(idx):
            break
        p = provider[idx]
        latency = LATENCY[p] * np.exp(0.45 * draws.latency[idx, a]) * slow[idx]
        if a:
            at[idx] += BACKOFF[a - 1] * draws.backoff[idx, a] * NS
        u = draws.error[idx, a]
        kind = OK[p].copy()
        server = u < SERVER_ERRORS[p]
        kind[server] = SERVER[p[server]]
        limited = (u > 1 - burst[idx] * (0.5 if a else 1.0)) & (RATE[p] >= 0)
        kind[limited] = RATE[p[limited]]
        forgotten = (channel[idx] == CHAT) & (u > 0.3) & (u < 0.3015)
        kind[forgotten] = GONE[p[forgotten]]
        kind = np.where(dead[idx] >= 0, dead[idx], kind)
        t_attempt = at[idx].astype(np.int64)
        if "attempts" in chance:
            kind, latency = chance["attempts"](idx, a, p, t_attempt, kind, latency)
        at[idx] += latency * NS
        t_attempt = at[idx].astype(np.int64)
        rows_job.append(idx)
        rows_t.append(t_attempt)
        rows_kind.append(kind)
        attempts[idx] += 1
        last_kind[idx] = kind
        sent_at[idx] = t_attempt
        live[idx] = RETRYABLE[kind] & (a + 1 < ATTEMPTS)
    ok = external & np.isin(last_kind, OK[OK >= 0])
    # webhooks for email and sms
    hooked = np.flatnonzero(ok & ((channel == EMAIL) | (channel == SMS)))
    p = provider[hooked]
    u = draws.bounce[hooked]
    kind = DELIVERED[p].copy()
    email = channel[hooked] == EMAIL
    domain = world.domain[users[hooked]]
    block = np.select([domain == "outlook.com", domain == "hotmail.com",
                       np.isin(domain, ("gmail.com", "yahoo.com"))], [0.012, 0.008, 0.003],
                      0.002)  # fmt: skip
    kind = np.where(email & (u < block), BLOCK[p], kind)
    kind = np.where(email & world.bad_mailbox[users[hooked]], BOUNCE[p], kind)
    sms_fail = np.where(p == P["plivo"], 0.035, 0.018)
    undelivered = ~email & (u < sms_fail)
    kind = np.where(undelivered, UNDELIVERED[p], kind)
    unknown = undelivered & (p == P["twilio"]) & (u < 0.006)
    kind = np.where(unknown, K["unknown:twilio"], kind)
    t_hook = sent_at[hooked] + (draws.webhook[hooked] * np.where(email, 1.0, 1.6) * NS).astype(
        np.int64
    )
    quiet_hook = kind.copy()
    for effect in chance.get("webhook", ()):
        kind = effect(hooked, p, t_hook, kind)
    rows_job.append(hooked)
    rows_t.append(t_hook)
    rows_kind.append(kind)
    # in-app: created at once, read later by some
    inapp = np.flatnonzero(~external)
    created = t0[inapp] + (LATENCY[0] * np.exp(0.4 * draws.latency[inapp, 0]) * NS).astype(np.int64)
    rows_job.append(inapp)
    rows_t.append(created)
    rows_kind.append(np.full(len(inapp), K["created"]))
    readers = draws.read[inapp] < 0.45
    rows_job.append(inapp[readers])
    rows_t.append(created[readers] + (draws.read_after[inapp[readers]] * NS).astype(np.int64))
    rows_kind.append(np.full(readers.sum(), K["read"]))
    hooks = (hooked, quiet_hook, kind)
    return (np.concatenate(rows_job), np.concatenate(rows_t), np.concatenate(rows_kind),
            attempts, last_kind, hooks)  # fmt: skip


def _category(values: np.ndarray, spec: schemas.Column) -> pd.Categorical:
    return pd.Categorical.from_codes(values, categories=list(spec.categories))


def _spec(table: tuple[schemas.Column, ...], name: str) -> schemas.Column:
    return next(column for column in table if column.name == name)


def _frame(table: tuple[schemas.Column, ...], columns: dict[str, Any]) -> pd.DataFrame:
    out = {}
    for column in table:
        value = columns[column.name]
        if column.dtype == schemas.CATEGORY:
            out[column.name] = value
        elif column.dtype == schemas.STRING:
            out[column.name] = pd.array(value, dtype="string")
        elif column.dtype == schemas.DATETIME:
            out[column.name] = pd.to_datetime(np.asarray(value, np.int64), utc=True).as_unit("ns")
        elif column.dtype == schemas.OBJECT:
            out[column.name] = pd.Series(value, dtype=object)
        else:
            out[column.name] = pd.array(value, dtype=column.dtype)
    return pd.DataFrame(out)


# -- make --------------------------------------------------------------------------------------


def make(
    seed: int,
    now: Any,
    days: int = 56,
    *,
    incidents: bool = False,
    load_latency: float = 0.4,
    loop_mult: float = 5.0,
) -> Traffic:
    """Quillbrook's traffic of the ``days`` before ``now`` (see the module docstring)."""
    now = pd.Timestamp(now)
    now = (now.tz_localize("UTC") if now.tz is None else now.tz_convert("UTC")).floor("s")
    start = now - pd.Timedelta(days=days)
    rng = np.random.default_rng([seed, 2026])
    world = _World(rng, seed, start, now)
    t, users, workflow, team = _quiet_events(rng, world).arrays()
    keep = (t >= start.value) & (t < now.value)
    t, users, workflow, team = t[keep], users[keep], workflow[keep], team[keep]
    n_quiet = len(t)
    counter = np.arange(n_quiet, dtype=np.int64)
    # the hour's load, of the quiet traffic
    hours = np.bincount((t - world.start) // (3600 * NS), minlength=days * 24 + 1)
    load = np.minimum(1.0, hours / max(np.quantile(hours, 0.99), 1))
    plan: dict[str, dict[str, Any]] = {}
    chance: dict[str, Any] = {}
    removed = np.zeros(n_quiet, bool)
    if incidents:
        irng = np.random.default_rng([seed, 2026, 1])
        plan = _plan(irng, now, world)
        drop = plan["volume_drop"]
        removed = (workflow == WF[drop["workflow"]]) & _inside(t, drop)
        drop["hits"] = t[removed]
        loop = plan["volume_spike"]
        usual = int(((workflow == WF[loop["workflow"]]) & _inside(t, loop)).sum())
        busy = world.team[world.region == 1]
        looped_team = irng.choice(busy)
        looped = np.flatnonzero(world.team == looped_team)[:3]
        n_loop = int(round(loop_mult * usual))
        added_t = np.sort(loop["start"].value + (irng.random(n_loop) * 3600 * NS).astype(np.int64))
        loop["hits"] = added_t
        t = np.concatenate([t, added_t])
        users = np.concatenate([users, irng.choice(looped, n_loop)])
        workflow = np.concatenate([workflow, np.full(n_loop, WF[loop["workflow"]])])
        team = np.concatenate([team, np.full(n_loop, -1)])
        counter = np.concatenate([counter, n_quiet + np.arange(n_loop)])
    note, channel = _jobs(world, users, workflow)
    ju = users[note]
    jt = t[note]
    jw = workflow[note]
    provider = _providers(world, ju, jw, channel, jt, plan.get("traffic_shift"))
    n_quiet_jobs = int((note < n_quiet).sum())
    draws = _Draws(rng, n_quiet_jobs)
    if incidents:
        draws = _Draws.stack(draws, _Draws(irng, len(note) - n_quiet_jobs))
        effect = _Draws(irng, len(note))
        chance = _effects(plan, effect, world, ju)
    details_job, details_t, details_kind, attempts, last_kind, hooks = _deliver(
        world, jt, ju, provider, channel, draws, chance, load, load_latency, plan
    )
    if incidents:
        _hits(plan, t, note, provider, details_job, details_t, details_kind, hooks, last_kind,
              world, ju)  # fmt: skip
    # the notifications kept, in time order
    gone_jobs = removed[np.minimum(note, n_quiet - 1)] & (note < n_quiet)
    keep_notes = ~np.concatenate([removed, np.zeros(len(t) - n_quiet, bool)])
    return _assemble(world, now, t, users, workflow, team, counter, keep_notes, note, channel,
                     provider, ~gone_jobs, details_job, details_t, details_kind, plan)  # fmt: skip


def _effects(plan, draws: _Draws, world: _World, users: np.ndarray) -> dict[str, Any]:
    """The planted incidents' effects on the attempts (kind, latency) and webhooks (kind)."""
    outage, spike = plan["provider_outage"], plan["error_spike"]
    slow, stale = plan["latency_degradation"], plan["stale_credentials"]
    bounces, degradation = plan["domain_bounces"], plan["degradation"]

    def attempts(idx, a, p, t, kind, latency):
        u = draws.error[idx, a]
        hit = (p == P["sendgrid"]) & _inside(t, outage) & (u < 0.97)
        kind = np.where(hit, K["5xx:sendgrid"], kind)
        hit = (p == P["slack"]) & _inside(t, spike) & (u < 0.6) & np.isin(kind, OK)
        kind = np.where(hit, K["429:slack"], kind)
        latency = np.where((p == P["fcm"]) & _inside(t, slow), latency * 6.0, latency)
        hit = (p == P["apns"]) & _inside(t, stale)
        kind = np.where(hit, K["auth:apns"], kind)
        return kind, latency

    def webhooks(idx, p, t, kind):
        ok = np.isin(kind, DELIVERED)
        domain = world.domain[users[idx]] == bounces["domain"]
        hit = ok & domain & _inside(t, bounces) & (draws.bounce[idx] < 0.85)
        kind = np.where(hit & (p == P["sendgrid"]), K["banned:sendgrid"], kind)
        kind = np.where(hit & (p == P["mailgun"]), K["banned:mailgun"], kind)
        share = 0.35 * np.clip(
            (t - degradation["start"].value) / (degradation["end"] - degradation["start"]).value,
            0,
            1,
        )
        hit = np.isin(kind, DELIVERED) & (p == P["mailgun"]) & _inside(t, degradation)
        hit &= draws.read[idx] < share
        return np.where(hit, K["listed:mailgun"], kind)

    return {"attempts": attempts, "webhook": (webhooks,)}


def _hits(plan, t, note, provider, job, at, kind, hooks, last_kind, world, users) -> None:
    """Each incident's ``hits``: the creation times of the notifications it hit."""

    def times(jobs: np.ndarray) -> np.ndarray:
        return t[np.unique(note[jobs])]

    def failed_in(provider_name, kinds, incident):
        rows = (provider[job] == P[provider_name]) & np.isin(kind, kinds) & _inside(at, incident)
        return times(job[rows])

    plan["provider_outage"]["hits"] = failed_in("sendgrid", [K["5xx:sendgrid"]],
                                                plan["provider_outage"])  # fmt: skip
    plan["error_spike"]["hits"] = failed_in("slack", [K["429:slack"]], plan["error_spike"])
    stale = plan["stale_credentials"]
    plan["stale_credentials"]["hits"] = failed_in("apns", [K["auth:apns"]], stale)
    hooked, quiet, planted = hooks
    new = (planted != quiet) & np.isin(planted, [K["banned:sendgrid"], K["banned:mailgun"]])
    plan["domain_bounces"]["hits"] = times(hooked[new])
    bounces = plan["domain_bounces"]  # the provider that carried most of the domain's mail then
    email = np.isin(provider, [P["sendgrid"], P["mailgun"]])
    carried = (world.domain[users] == bounces["domain"]) & _inside(t[note], bounces) & email
    carried = np.flatnonzero(carried)
    carried = np.bincount(provider[carried], minlength=len(PROVIDERS))
    bounces["provider_id"] = PROVIDERS[int(np.argmax(carried))] if carried.any() else "sendgrid"
    new = (planted != quiet) & (planted == K["listed:mailgun"])
    plan["degradation"]["hits"] = times(hooked[new])
    slow = plan["latency_degradation"]
    rows = (provider[job] == P["fcm"]) & (kind != K["queued"]) & _inside(at, slow)
    plan["latency_degradation"]["hits"] = times(job[rows])
    shift = plan["traffic_shift"]
    moved = (provider == P["sns"]) & _inside(t[note], shift)
    plan["traffic_shift"]["hits"] = times(np.flatnonzero(moved))


def _assemble(world, now, t, users, workflow, team, counter, keep_notes, note, channel, provider,
              keep_jobs, d_job, d_t, d_kind, plan) -> Traffic:  # fmt: skip
    # details not yet there at now are dropped; the removed notifications' jobs too
    alive = (d_t < now.value) & keep_jobs[d_job]
    d_job, d_t, d_kind = d_job[alive], d_t[alive], d_kind[alive]
    order = np.lexsort((d_t, d_job))
    d_job, d_t, d_kind = d_job[order], d_t[order], d_kind[order]
    n_jobs = len(note)
    status_of_kind = np.array([schemas.DETAIL_STATUSES.index(KINDS[k][0]) for k in KIND_NAMES])
    source_of_kind = np.array([schemas.DETAIL_SOURCES.index(KINDS[k][1]) for k in KIND_NAMES])
    failed_kind = status_of_kind == schemas.DETAIL_STATUSES.index("Failed")
    d_failed = failed_kind[d_kind]
    count = np.bincount(d_job, minlength=n_jobs)
    first_row = np.searchsorted(d_job, np.arange(n_jobs))
    last_row = first_row + count - 1
    has = count > 0
    first_t = np.where(has, d_t[np.minimum(first_row, len(d_t) - 1)], t[note])
    last_t = np.where(has, d_t[np.maximum(last_row, 0)], t[note])
    last_k = np.where(has, d_kind[np.maximum(last_row, 0)], -1)
    # attempts and their retries
    attempt = ~np.isin(d_kind, [K["queued"], K["created"], K["read"]]) & (
        source_of_kind[d_kind] != schemas.DETAIL_SOURCES.index("Webhook")
    )
    n_attempts = np.bincount(d_job[attempt], minlength=n_jobs)
    is_retry = np.zeros(len(d_job), bool)
    rank = np.cumsum(attempt) - np.concatenate([[0], np.cumsum(attempt)])[first_row[d_job]]
    is_retry[attempt] = rank[attempt] > 1
    retries = np.bincount(d_job[is_retry], minlength=n_jobs)
    failed_count = np.bincount(d_job[d_failed], minlength=n_jobs)
    last_attempt_k = np.full(n_jobs, -1)
    last_attempt_k[d_job[attempt]] = d_kind[attempt]  # the last one wins (sorted)
    last_fail = np.full(n_jobs, -1)
    last_fail[d_job[d_failed]] = np.flatnonzero(d_failed)
    # the job's status: settled when its last attempt is not to be retried (in-app: created)
    created = np.zeros(n_jobs, bool)
    created[d_job[d_kind == K["created"]]] = True
    retry_pending = RETRYABLE[np.maximum(last_attempt_k, 0)] & (n_attempts < ATTEMPTS)
    ok_attempt = np.isin(last_attempt_k, OK[OK >= 0])
    external = channel != IN_APP
    settled = np.where(external, (n_attempts > 0) & ~retry_pending, created)
    job_status = np.where(
        settled,
        np.where(external & ~ok_attempt, "failed", "completed"),
        np.where(n_attempts > 0, "running", "queued"),
    )
    names = np.array([*schemas.DETAIL_STATUSES, ""])
    last_name = names[np.where(last_k >= 0, status_of_kind[np.maximum(last_k, 0)], -1)]
    webhook_last = source_of_kind[np.maximum(last_k, 0)] == schemas.DETAIL_SOURCES.index("Webhook")
    in_flight = np.isin(job_status, schemas.IN_FLIGHT_STATUSES)
    final = np.select(
        [~has | in_flight, last_name == "Failed", job_status != "completed",
         last_name == "ReadConfirmation", (last_name == "Success") & webhook_last,
         last_name == "Success", last_name == "Warning"],
        [job_status, "failed", job_status, "read", "delivered", "sent", "warning"],
        "completed",
    )  # fmt: skip
    # keep only the jobs of kept notifications
    jobs_kept = np.flatnonzero(keep_jobs)
    # notification order: by time, then counter
    note_order = np.lexsort((counter, t))
    note_order = note_order[keep_notes[note_order]]
    position = np.full(len(t), -1)
    position[note_order] = np.arange(len(note_order))
    j_pos = position[note[jobs_kept]]
    j_order = jobs_kept[np.lexsort((np.arange(len(jobs_kept)), j_pos))]
    job_position = np.full(n_jobs, -1)
    job_position[j_order] = np.arange(len(j_order))
    d_order = np.lexsort((np.arange(len(d_job)), job_position[d_job]))
    # ids
    note_ids = _object_ids(t, counter, 0x51AB0001)
    job_counter = counter[note] * 8 + np.arange(n_jobs) - np.searchsorted(note, note)
    job_ids = _object_ids(t[note], job_counter, 0x51AB0002)
    d_ids = _object_ids(d_t, job_counter[d_job] * 8 + _rank(d_job), 0x51AB0003)
    message_ids = _hex16(job_counter.astype(np.uint64) ^ np.uint64(world.n))
    # notifications
    per_note_jobs = np.bincount(note[jobs_kept], minlength=len(t))
    fail_jobs = np.bincount(note[jobs_kept], weights=final[jobs_kept] == "failed", minlength=len(t))
    rank_of = {"failed": 0, "pending": 1, "queued": 1, "running": 1, "delayed": 1, "read": 2,
               "delivered": 3, "sent": 4, "warning": 5, "completed": 9}  # fmt: skip
    job_rank = _codes(final, tuple(rank_of), np.array(list(rank_of.values())))
    best = np.full(len(t), 99)
    np.minimum.at(best, note[jobs_kept], job_rank[jobs_kept])
    status_names = {0: "failed", 1: "pending", 2: "read", 3: "delivered", 4: "sent",
                    5: "warning", 9: "completed", 99: "pending"}  # fmt: skip
    status_code = np.zeros(100, np.int64)
    for b, name in status_names.items():
        status_code[b] = schemas.NOTIFICATION_STATUSES.index(name)
    note_status = status_code[best]
    updated = np.full(len(t), 0, np.int64)
    np.maximum.at(updated, note[jobs_kept], last_t[jobs_kept])
    updated = np.maximum(updated, t)
    masks = np.zeros(len(t), np.int64)
    np.bitwise_or.at(masks, note[jobs_kept], 1 << channel[jobs_kept])
    lists = {m: [CHANNELS[c] for c in range(5) if m >> c & 1] for m in np.unique(masks)}
    o = note_order
    uo, wo = users[o], workflow[o]
    wf_ids = np.array([w[0] for w in WORKFLOWS])
    template_ids = np.array([f"66{i:02d}a0b1c2d3e4f5a6b7c8d9" for i in range(len(WORKFLOWS))])
    teams = team[o]
    payload = [
        _payload(w, c, tm) for w, c, tm in zip(wo.tolist(), counter[o].tolist(), teams.tolist(),
                                               strict=True)
    ]  # fmt: skip
    user_ids = pa.array(world.subscriber_id)
    internal = _object_ids(np.full(world.n, world.start), np.arange(world.n), 0x51AB0004)
    take = pa.array(uo)
    severity = _spec(schemas.NOTIFICATIONS, "severity")
    notifications = _frame(schemas.NOTIFICATIONS, {
        "notification_id": note_ids.take(pa.array(o)),
        "created_at": t[o],
        "updated_at": updated[o],
        "transaction_id": _uuids(counter[o].astype(np.uint64) + np.uint64(world.n << 32)),
        "template_id": template_ids[wo],
        "workflow_name": np.array([w[1] for w in WORKFLOWS])[wo],
        "workflow_identifier": wf_ids[wo],
        "template_origin": _category(np.zeros(len(o), int),
                                     _spec(schemas.NOTIFICATIONS, "template_origin")),
        "subscriber_internal_id": internal.take(take),
        "subscriber_id": user_ids.take(take),
        "subscriber_email": pa.array(world.email).take(take),
        "subscriber_first_name": pa.array(world.first).take(take),
        "subscriber_last_name": pa.array(world.last).take(take),
        "subscriber_phone": pa.array(world.phone, pa.string()).take(take),
        "channels": [list(lists[m]) for m in masks[o].tolist()],
        "topic_keys": [[f"team-{tm}"] if tm >= 0 else [] for tm in teams.tolist()],
        "tags": [list(WORKFLOWS[w][6]) for w in wo.tolist()],
        "severity": _category(np.array([severity.categories.index(w[4]) for w in WORKFLOWS])[wo],
                              severity),
        "critical": np.array([w[5] for w in WORKFLOWS])[wo],
        "digested_notification_id": pa.nulls(len(o), pa.string()),
        "payload": payload,
        "job_count": per_note_jobs[o],
        "failed_job_count": fail_jobs[o].astype(np.int64),
        "status": _category(note_status[o], _spec(schemas.NOTIFICATIONS, "status")),
        "environment_id": np.full(len(o), ENVIRONMENT_ID),
        "organization_id": np.full(len(o), ORGANIZATION_ID),
    })  # fmt: skip
    # jobs
    jo = j_order
    step_names = np.array(["in-app", "email", "sms", "chat", "push"])
    jw = workflow[note[jo]]
    error_text, error_code_ = _failure_text(d_kind, last_fail[jo])
    job_spec = {c.name: c for c in schemas.JOBS}
    jobs = _frame(schemas.JOBS, {
        "job_id": job_ids.take(pa.array(jo)),
        "notification_id": note_ids.take(pa.array(note[jo])),
        "type": _category(channel[jo], job_spec["type"]),
        "status": _category(_codes(job_status[jo], schemas.JOB_STATUSES), job_spec["status"]),
        "final_status": _category(_codes(final[jo], schemas.FINAL_STATUSES),
                                  job_spec["final_status"]),
        "step_id": np.char.add(template_ids[jw], np.char.mod("%d", channel[jo])),
        "step_name": step_names[channel[jo]],
        "provider_id": np.array(PROVIDERS)[provider[jo]],
        "digest_type": _category(np.full(len(jo), -1), job_spec["digest_type"]),
        "updated_at": last_t[jo],
        "first_execution_at": first_t[jo],
        "last_execution_at": last_t[jo],
        "duration_s": (last_t[jo] - first_t[jo]) / NS,
        "execution_count": count[jo],
        "failed_count": failed_count[jo],
        "retry_count": retries[jo],
        "error_text": error_text,
        "error_code": error_code_,
        "subscriber_id": user_ids.take(pa.array(users[note[jo]])),
        "workflow": wf_ids[jw],
    })  # fmt: skip
    for name in ("first_execution_at", "last_execution_at", "duration_s"):
        jobs[name] = jobs[name].where(has[jo])
    # execution details
    do = d_order
    dk = d_kind[do]
    dj = d_job[do]
    detail_spec = {c.name: c for c in schemas.EXECUTION_DETAILS}
    texts = pa.array([KINDS[k][2] for k in KIND_NAMES])
    failed = failed_kind[dk]
    detail_text = texts.take(pa.array(dk))
    codes = pa.array([_code_of(k) for k in KIND_NAMES], pa.string())
    details = _frame(schemas.EXECUTION_DETAILS, {
        "execution_detail_id": d_ids.take(pa.array(do)),
        "job_id": job_ids.take(pa.array(dj)),
        "notification_id": note_ids.take(pa.array(note[dj])),
        "created_at": d_t[do],
        "status": _category(status_of_kind[dk], detail_spec["status"]),
        "source": _category(source_of_kind[dk], detail_spec["source"]),
        "detail": detail_text,
        "provider_id": np.array(PROVIDERS)[provider[dj]],
        "is_retry": is_retry[do],
        "is_test": np.zeros(len(do), bool),
        "raw": _raws(dk, message_ids.take(pa.array(dj))),
        "error_text": pc.if_else(pa.array(failed), detail_text, pa.scalar(None, pa.string())),
        "error_code": pc.if_else(pa.array(failed), codes.take(pa.array(dk)),
                                 pa.scalar(None, pa.string())),
        "channel": _category(channel[dj], detail_spec["channel"]),
    })  # fmt: skip
    planted = []
    for incident in plan.values():
        hits = pd.DatetimeIndex(np.sort(np.asarray(incident["hits"], np.int64))).tz_localize("UTC")
        planted.append({**incident, "hits": hits.as_unit("ns")})
    return Traffic(notifications, jobs, details, planted)


def _codes(values: np.ndarray, vocabulary: tuple[str, ...], to: Any = None) -> np.ndarray:
    """Each value's position in ``vocabulary`` (or ``to`` at it)."""
    unique, inverse = np.unique(values, return_inverse=True)
    at = np.array([vocabulary.index(u) for u in unique.tolist()], np.int64)
    return (at if to is None else np.asarray(to)[at])[inverse]


def _rank(group: np.ndarray) -> np.ndarray:
    """The position of each row within its run of equal, sorted ``group`` values."""
    starts = np.searchsorted(group, group)
    return np.arange(len(group)) - starts


def _code_of(kind: str) -> str | None:
    _, _, _, before, after = KINDS[kind]
    if before is None:
        return None
    return error_code(before + ("0123456789abcdef" + after if after is not None else ""))


def _raws(kinds: np.ndarray, message_ids: pa.Array) -> pa.Array:
    """Each detail's raw: the provider's JSON with its message id, or null."""
    order = np.argsort(kinds, kind="stable")
    parts = []
    bounds = np.searchsorted(kinds[order], np.arange(len(KIND_NAMES) + 1))
    for k, name in enumerate(KIND_NAMES):
        rows = order[bounds[k] : bounds[k + 1]]
        if not len(rows):
            continue
        before, after = KINDS[name][3], KINDS[name][4]
        if before is None:
            parts.append(pa.nulls(len(rows), pa.large_string()))
        elif after is None:
            parts.append(pa.array(np.full(len(rows), before), pa.large_string()))
        else:
            ids = message_ids.take(pa.array(rows)).cast(pa.large_string())
            big = pa.large_string()
            parts.append(pc.binary_join_element_wise(pa.scalar(before, big), ids,
                                                     pa.scalar(after, big), pa.scalar("", big)))  # fmt: skip
    joined = pa.concat_arrays(parts)
    inverse = np.empty(len(order), np.int64)
    inverse[order] = np.arange(len(order))
    return joined.take(pa.array(inverse))


def _failure_text(kinds: np.ndarray, rows: np.ndarray) -> tuple[pa.Array, pa.Array]:
    """A job's error text and code: its last Failed detail's (null without one)."""
    texts = np.array([KINDS[k][2] for k in KIND_NAMES] + [None], dtype=object)
    codes = np.array([_code_of(k) for k in KIND_NAMES] + [None], dtype=object)
    kind = np.where(rows >= 0, kinds[np.maximum(rows, 0)], len(KIND_NAMES))
    return pa.array(texts[kind], pa.string()), pa.array(codes[kind], pa.string())


def _payload(workflow: int, counter: int, team: int) -> dict[str, Any]:
    name = WORKFLOWS[workflow][0]
    if name.startswith(("task", "comment")):
        out: dict[str, Any] = {"taskId": f"QB-{1000 + counter % 9000}"}
        if name.startswith("comment"):
            out["commentId"] = f"c{counter}"
        return out
    if name == "login-code":
        return {"expiresInMinutes": 10}
    if name == "weekly-planning":
        return {"teamId": f"team-{team}", "week": "current"}
    if name == "invoice-issued":
        return {"invoiceId": f"INV-{counter:07d}"}
    return {}
