"""Seeded, realistic sandbox data: tenancy, subscribers, topics, integrations, workflows, activity.

Everything is a pure function of ``(seed, now, sizes)``: each part draws from its own
``random.Random`` seeded with a string derived from the seed, and no wall clock is read. Stored
documents are exactly what the API serves.

One :class:`NotificationFactory` builds the notifications of both :func:`populate` and live
traffic (``traffic.py``). It builds each notification's whole story (every job and execution
detail, with their times) up front; :meth:`Story.render` shows the story as it stands at a cutoff
instant, so nothing is ever dated after the service's "now" and recent notifications are still in
flight.

Planted incidents (in the default environment, relative to ``now``): an SMS provider outage, an
email bounce spike for one domain, and a batch of push tokens gone invalid. Outside them a low
background failure rate with varied provider errors.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import random
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from toolkit.sandbox.clock import iso, parse_instant
from toolkit.sandbox.ids import IdFactory
from toolkit.sandbox.store import CHANNEL_BITS, Store

#: Days of activity that end at ``now``.
ACTIVITY_DAYS = 14
#: The small environments get this share of the requested sizes.
SMALL_SHARE = 0.05
#: Rows per ``executemany`` batch.
CHUNK = 2_000

TENANCY = [  # organization, plan, environment names; the first environment is the default
    ("Acme", "business", ["Development", "Production"]),
    ("Globex", "free", ["Development"]),
]

CHANNELS = ("in_app", "email", "sms", "chat", "push")

# --------------------------------------------------------------------------------------------
# Vocabularies
# --------------------------------------------------------------------------------------------

FIRST_NAMES = """Olivia Liam Emma Noah Ava Oliver Sophia Elijah Isabella James Mia William Amelia
Benjamin Harper Lucas Evelyn Henry Abigail Alexander Emily Daniel Ella Matthew Elizabeth Jackson
Sofia Sebastian Avery Mateo Scarlett Jack Grace Owen Chloe Theodore Camila Aiden Penelope Samuel
Riley Joseph Layla John Lillian David Nora Wyatt Zoey Leo Hannah Hiroshi Yuki Priya Arjun Lena
Jonas Chloé Louis Lucía Javier Ana João Mariana Aarav Saanvi Mohammed Fatima Wei Mei""".split()

LAST_NAMES = """Smith Johnson Williams Brown Jones Garcia Miller Davis Rodriguez Martinez Hernandez
Lopez Gonzalez Wilson Anderson Thomas Taylor Moore Jackson Martin Lee Perez Thompson White Harris
Sanchez Clark Ramirez Lewis Robinson Walker Young Allen King Wright Scott Torres Nguyen Hill Flores
Green Adams Nelson Baker Hall Rivera Campbell Mitchell Carter Roberts Müller Schmidt Schneider
Fischer Dubois Moreau Laurent Fernández Silva Santos Oliveira Tanaka Suzuki Sato Patel Sharma
Khan Chen Wang O'Brien Kowalski""".split()

#: (locale, time zones, phone prefix, digits after the prefix, weight)
LOCALES = [
    ("en_US", ["America/New_York", "America/Chicago", "America/Denver", "America/Los_Angeles"],
     "+1", 10, 40),
    ("en_GB", ["Europe/London"], "+447", 9, 12),
    ("de_DE", ["Europe/Berlin"], "+4915", 9, 10),
    ("fr_FR", ["Europe/Paris"], "+336", 8, 8),
    ("es_ES", ["Europe/Madrid"], "+346", 8, 6),
    ("pt_BR", ["America/Sao_Paulo"], "+55119", 8, 7),
    ("ja_JP", ["Asia/Tokyo"], "+8190", 8, 5),
    ("en_IN", ["Asia/Kolkata"], "+919", 9, 7),
    ("en_AU", ["Australia/Sydney"], "+614", 8, 5),
]  # fmt: skip

#: The company domain whose mailboxes bounce during the planted bounce spike.
BOUNCE_DOMAIN = "northwind.example"

#: (domain, weight, is a company domain)
EMAIL_DOMAINS = [
    ("gmail.com", 30, False),
    ("outlook.com", 12, False),
    ("yahoo.com", 8, False),
    ("icloud.com", 6, False),
    ("hotmail.com", 4, False),
    ("proton.me", 2, False),
    ("initech.example", 8, True),
    (BOUNCE_DOMAIN, 8, True),
    ("contoso.example", 6, True),
    ("umbrella.example", 4, True),
]

TOPIC_KEYS = """product-updates billing-alerts security release-notes maintenance-windows
incident-status weekly-newsletter marketing-promotions feature-announcements account-activity
team-mentions project-updates deploy-notifications on-call-rotation compliance api-deprecations
usage-reports beta-program webinars community-events support-tickets order-updates
shipping-updates price-changes inventory-alerts partner-news developer-newsletter status-page
login-alerts data-exports""".split()

HEX = "0123456789abcdef"
ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def _chars(rng: random.Random, n: int, alphabet: str = ALNUM) -> str:
    return "".join(rng.choices(alphabet, k=n))


def _digits(rng: random.Random, n: int) -> str:
    return "".join(rng.choices("0123456789", k=n))


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _rng(seed: int, *parts: object) -> random.Random:
    """An independent generator for one part of the data (string seeds hash deterministically)."""
    return random.Random(":".join(map(str, (seed, *parts))))


# --------------------------------------------------------------------------------------------
# Tenancy
# --------------------------------------------------------------------------------------------


def _tenancy(rng: random.Random, ids: IdFactory, now: datetime) -> list[dict[str, Any]]:
    """The organizations' environments, each with its API key; the first is the default."""
    environments = []
    for org_index, (organization, plan, names) in enumerate(TENANCY):
        org_created = now - timedelta(days=700 - 100 * org_index)
        organization_id = ids.new(org_created)
        for env_index, name in enumerate(names):
            environments.append(
                {
                    "id": ids.new(org_created + timedelta(minutes=5 + env_index)),
                    "organization_id": organization_id,
                    "organization": organization,
                    "name": name,
                    "plan": plan,
                    "api_key": f"{rng.getrandbits(128):032x}",
                }
            )
    return environments


def _insert_tenancy(db: Any, environments: list[dict[str, Any]]) -> None:
    organizations = {e["organization_id"]: (e["organization"], e["plan"]) for e in environments}
    db.executemany(
        "INSERT INTO organizations (id, name, plan) VALUES (?, ?, ?)",
        [(oid, name, plan) for oid, (name, plan) in organizations.items()],
    )
    db.executemany(
        "INSERT INTO environments (id, organization_id, name, api_key) VALUES (?, ?, ?, ?)",
        [(e["id"], e["organization_id"], e["name"], e["api_key"]) for e in environments],
    )


# --------------------------------------------------------------------------------------------
# Integrations
# --------------------------------------------------------------------------------------------

#: (channel, providerId, display name, active), in creation order.
INTEGRATIONS = [
    ("in_app", "svc", "In-App", True),
    ("email", "sendgrid", "SendGrid", True),
    ("email", "ses", "Amazon SES", True),
    ("email", "postmark", "Postmark", True),
    ("sms", "twilio", "Twilio", True),
    ("sms", "sns", "Amazon SNS", True),
    ("chat", "slack", "Slack", True),
    ("chat", "chat-webhook", "Chat Webhook", True),
    ("chat", "msteams", "MS Teams", False),
    ("push", "fcm", "Firebase Cloud Messaging", True),
    ("push", "apns", "Apple Push Notification Service", True),
    ("push", "expo", "Expo Push", True),
]


def _private_key(rng: random.Random) -> str:
    body = _chars(rng, 64, ALNUM + "+/")
    return f"-----BEGIN PRIVATE KEY-----\n{body}\n-----END PRIVATE KEY-----\n"


def _credentials(provider: str, rng: random.Random, slug: str) -> dict[str, Any]:
    """Realistic-looking fake credentials of one provider for the organization ``slug``."""
    sender = {"from": f"notifications@{slug}.example", "senderName": slug.title()}
    aws = {"apiKey": "AKIA" + _chars(rng, 16, UPPER), "secretKey": _chars(rng, 40)}
    if provider == "svc":
        return {"hmac": False}
    if provider == "sendgrid":
        return {"apiKey": f"SG.{_chars(rng, 22)}.{_chars(rng, 43)}", **sender}
    if provider == "ses":
        return {**aws, "region": "eu-west-1", **sender}
    if provider == "postmark":
        return {"apiKey": str(uuid.UUID(int=rng.getrandbits(128), version=4)), **sender}
    if provider == "twilio":
        return {
            "accountSid": "AC" + _chars(rng, 32, HEX),
            "token": _chars(rng, 32, HEX),
            "from": "+1415555" + _digits(rng, 4),
        }
    if provider == "sns":
        return {**aws, "region": "us-east-1", "senderId": slug.upper()[:11]}
    if provider == "slack":
        return {
            "applicationId": "A0" + _chars(rng, 9, UPPER),
            "clientId": f"{_digits(rng, 12)}.{_digits(rng, 13)}",
            "secretKey": _chars(rng, 32, HEX),
            "redirectUrl": f"https://app.{slug}.example/integrations/slack/callback",
        }
    if provider == "fcm":
        account = {
            "type": "service_account",
            "project_id": f"{slug}-mobile",
            "private_key_id": _chars(rng, 40, HEX),
            "private_key": _private_key(rng),
            "client_email": f"firebase-adminsdk@{slug}-mobile.iam.gserviceaccount.com",
        }
        return {"serviceAccount": json.dumps(account)}
    if provider == "apns":
        return {
            "secretKey": _private_key(rng),
            "apiKey": _chars(rng, 10, UPPER),
            "projectName": _chars(rng, 10, UPPER),
            "applicationId": f"com.{slug}.app",
            "secure": True,
        }
    if provider == "expo":
        return {"apiKey": _chars(rng, 40)}
    return {}  # chat-webhook, msteams: the subscriber's webhook URL is the credential


def _integration_rows(
    rng: random.Random, ids: IdFactory, env: dict[str, Any], now: datetime
) -> list[dict[str, Any]]:
    """One integration per :data:`INTEGRATIONS` entry; ``is_primary`` per the reference rules."""
    slug = env["organization"].lower()
    rows, has_primary = [], set()
    for index, (channel, provider, name, active) in enumerate(INTEGRATIONS):
        created = now - timedelta(days=400 - 7 * index, minutes=rng.randrange(600))
        primary = active and channel in ("email", "sms") and channel not in has_primary
        if primary:
            has_primary.add(channel)
        configurations = None
        if provider == "sendgrid":
            configurations = {
                "inboundWebhookEnabled": True,
                "inboundWebhookSigningKey": _chars(rng, 32, HEX),
            }
        rows.append(
            {
                "id": ids.new(created),
                "environment_id": env["id"],
                "organization_id": env["organization_id"],
                "name": name,
                "identifier": f"{provider}-{_chars(rng, 6, HEX)}",
                "provider_id": provider,
                "channel": channel,
                "credentials": _json(_credentials(provider, rng, slug)),
                "configurations": None if configurations is None else _json(configurations),
                "conditions": None,
                "active": int(active),
                "is_primary": int(primary),
                "deleted": 0,
                "deleted_at": None,
                "deleted_by": None,
                "created_at": iso(created),
                "updated_at": iso(created + timedelta(days=rng.randrange(30))),
            }
        )
    return rows


def channel_providers(integrations: Iterable[dict[str, Any]]) -> dict[str, str]:
    """The provider that delivers each channel: the primary integration, else the first active one.

    ``integrations`` are rows of the ``integrations`` table (oldest first); deleted and inactive
    ones are ignored. In-app always has ``svc``.
    """
    providers: dict[str, str] = {"in_app": "svc"}
    for row in sorted(integrations, key=lambda r: (not r["is_primary"], r["created_at"])):
        if row["active"] and not row["deleted"]:
            providers.setdefault(row["channel"], row["provider_id"])
    return providers


# --------------------------------------------------------------------------------------------
# Subscribers, topics and subscriptions
# --------------------------------------------------------------------------------------------

CHAT_PROVIDERS = ("slack", "chat-webhook")
PUSH_PROVIDERS = ("fcm", "apns", "expo")
PLANS = ("free", "free", "starter", "pro", "pro", "team", "enterprise")
SIGNUP_SOURCES = ("web", "web", "ios", "android", "referral", "sales", "partner")


def _email(rng: random.Random, first: str, last: str, taken: set[str]) -> str:
    domains = [d for d, _, _ in EMAIL_DOMAINS]
    weights = [w for _, w, _ in EMAIL_DOMAINS]
    domain = rng.choices(domains, weights)[0]
    company = dict((d, c) for d, _, c in EMAIL_DOMAINS)[domain]
    first_, last_ = (_ascii(first), _ascii(last))
    if company:
        local = f"{first_}.{last_}"
    else:
        local = rng.choice(
            [f"{first_}.{last_}", f"{first_[0]}{last_}", f"{first_}_{last_}{rng.randrange(100)}"]
        )
    email, n = f"{local}@{domain}", 1
    while email in taken:
        n += 1
        email = f"{local}{n}@{domain}"
    taken.add(email)
    return email


def _ascii(name: str) -> str:
    table = str.maketrans("éüöäçãáíóú", "euoacaaiou", "' ")
    return name.lower().translate(table)


def _channel_setting(
    provider: str, credentials: dict[str, Any], integrations: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    integration = integrations[provider]
    return {
        "providerId": provider,
        "integrationIdentifier": integration["identifier"],
        "credentials": credentials,
        "_integrationId": integration["id"],
    }


def _subscriber_channels(
    rng: random.Random, integrations: dict[str, dict[str, Any]], slug: str
) -> list[dict[str, Any]]:
    """ChannelSettings: a chat webhook for about a quarter, push tokens for about half."""
    channels = []
    if rng.random() < 0.25:
        provider = rng.choices(CHAT_PROVIDERS, [3, 1])[0]
        if provider == "slack":
            url = (
                f"https://hooks.slack.com/services/T{_chars(rng, 8, UPPER)}/"
                f"B{_chars(rng, 10, UPPER)}/{_chars(rng, 24)}"
            )
        else:
            url = f"https://hooks.{slug}-ops.example/notify/{_chars(rng, 16, HEX)}"
        channels.append(_channel_setting(provider, {"webhookUrl": url}, integrations))
    if rng.random() < 0.5:
        provider = rng.choices(PUSH_PROVIDERS, [5, 3, 2])[0]
        tokens = [_push_token(rng, provider) for _ in range(rng.choices([1, 2], [4, 1])[0])]
        channels.append(_channel_setting(provider, {"deviceTokens": tokens}, integrations))
    return channels


def _push_token(rng: random.Random, provider: str) -> str:
    if provider == "fcm":
        return f"{_chars(rng, 22)}:APA91b{_chars(rng, 134, ALNUM + '-_')}"
    if provider == "apns":
        return _chars(rng, 64, HEX)
    return f"ExponentPushToken[{_chars(rng, 22)}]"


def _subscriber_rows(
    rng: random.Random,
    ids: IdFactory,
    env: dict[str, Any],
    now: datetime,
    count: int,
    integrations: list[dict[str, Any]],
) -> list[dict[str, Any]]:
    """``count`` subscribers, oldest first, created before the activity window."""
    by_provider = {row["provider_id"]: row for row in integrations}
    slug = env["organization"].lower()
    first_created = now - timedelta(days=720)
    span = (timedelta(days=720 - ACTIVITY_DAYS - 1)).total_seconds()
    created = sorted(first_created + timedelta(seconds=rng.random() * span) for _ in range(count))
    taken: set[str] = set()
    rows = []
    for index, when in enumerate(created, start=1):
        locale, zones, prefix, digits, _ = rng.choices(LOCALES, [x[4] for x in LOCALES])[0]
        first, last = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)
        email = _email(rng, first, last, taken) if rng.random() < 0.97 else None
        phone = prefix + _digits(rng, digits) if rng.random() < 0.75 else None
        if phone and prefix == "+1":
            phone = f"+1{rng.randrange(201, 990)}{_digits(rng, 7)}"
        avatar = None
        if email and rng.random() < 0.7:
            avatar = f"https://www.gravatar.com/avatar/{hashlib.md5(email.encode()).hexdigest()}?d=identicon"
        last_online = now - timedelta(minutes=rng.expovariate(1 / 3000))
        online = now - last_online < timedelta(minutes=15)
        updated = when + (now - when) * rng.random()
        rows.append(
            {
                "id": ids.new(when),
                "environment_id": env["id"],
                "organization_id": env["organization_id"],
                "subscriber_id": f"user-{index:06d}",
                "first_name": first,
                "last_name": last,
                "email": email,
                "phone": phone,
                "avatar": avatar,
                "locale": locale,
                "timezone": rng.choice(zones),
                "data": _json(
                    {
                        "plan": rng.choice(PLANS),
                        "signupSource": rng.choice(SIGNUP_SOURCES),
                        "accountId": f"acct_{_chars(rng, 12, HEX)}",
                        "marketingOptIn": rng.random() < 0.4,
                    }
                ),
                "channels": _json(_subscriber_channels(rng, by_provider, slug)),
                "is_online": int(online),
                "last_online_at": iso(last_online),
                "version": rng.randrange(4),
                "deleted": 0,
                "created_at": iso(when),
                "updated_at": iso(max(updated, last_online if online else when)),
            }
        )
    return rows


def _topic_rows(
    rng: random.Random, ids: IdFactory, env: dict[str, Any], now: datetime
) -> list[dict[str, Any]]:
    rows = []
    for index, key in enumerate(TOPIC_KEYS):
        created = now - timedelta(days=500 - 10 * index, minutes=rng.randrange(1440))
        rows.append(
            {
                "id": ids.new(created),
                "environment_id": env["id"],
                "organization_id": env["organization_id"],
                "key": key,
                "name": key.replace("-", " ").capitalize(),
                "created_at": iso(created),
                "updated_at": iso(created + timedelta(days=rng.randrange(60))),
            }
        )
    return rows


def _subscription_rows(
    rng: random.Random,
    ids: IdFactory,
    subscribers: list[dict[str, Any]],
    topics: list[dict[str, Any]],
    now: datetime,
) -> list[dict[str, Any]]:
    """Each subscriber in 0..8 topics (about a fifth in none), popular topics more often."""
    popularity = [1 / (rank + 1) ** 0.8 for rank in range(len(topics))]
    ranked = rng.sample(topics, len(topics))
    latest = now - timedelta(days=ACTIVITY_DAYS)
    rows = []
    for subscriber in subscribers:
        n = rng.choices(range(9), [20, 22, 18, 13, 9, 7, 5, 3, 3])[0]
        chosen: dict[str, dict[str, Any]] = {}
        while len(chosen) < n:
            topic = rng.choices(ranked, popularity)[0]
            chosen[topic["id"]] = topic
        for topic in chosen.values():
            start = max(parse_instant(topic["created_at"]), parse_instant(subscriber["created_at"]))
            when = start + (latest - start) * rng.random() if start < latest else start
            rows.append(
                {
                    "id": ids.new(when),
                    "environment_id": subscriber["environment_id"],
                    "topic_id": topic["id"],
                    "subscriber_id": subscriber["id"],
                    "created_at": iso(when),
                }
            )
    rows.sort(key=lambda r: r["id"])
    return rows


# --------------------------------------------------------------------------------------------
# Workflows
# --------------------------------------------------------------------------------------------

Payload = Callable[[random.Random, dict[str, Any], datetime], dict[str, Any]]


@dataclass(frozen=True)
class WorkflowSpec:
    """A seeded workflow: its steps and how its notifications look.

    ``steps`` are ``(type, name, metadata)``; ``topics`` makes it topic-triggered (fan-out to a
    topic's subscribers); ``audience`` restricts recipients to subscribers with credentials on
    that channel; ``weight`` is its share of the triggers.
    """

    identifier: str
    name: str
    steps: tuple[tuple[str, str, dict[str, Any] | None], ...]
    payload: Payload
    weight: float
    severity: str | None = None
    critical: bool = False
    tags: tuple[str, ...] = ()
    topics: tuple[str, ...] = ()
    audience: str | None = None
    origin: str = "svc-cloud"


CITIES = ("Berlin", "Lisbon", "São Paulo", "Austin", "Singapore", "Toronto", "Lagos", "Warsaw")
PROJECTS = ("Apollo", "Orion", "Website redesign", "Q3 planning", "Mobile app", "Data platform")
SERVICES = ("checkout-api", "search", "payments", "auth", "notifications", "web-frontend")
FEATURES = ("Dark mode", "SAML single sign-on", "Audit log export", "Bulk actions", "New editor")


def _person(rng: random.Random) -> str:
    return f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}"


def _ip(rng: random.Random) -> str:
    return ".".join(str(rng.randrange(1, 255)) for _ in range(4))


WORKFLOWS = [
    WorkflowSpec(
        "welcome-onboarding",
        "Welcome",
        (("in_app", "Welcome inbox message", None), ("email", "Welcome email", None)),
        lambda rng, s, t: {
            "firstName": s.get("firstName") or "there",
            "ctaUrl": "https://app.example.com/onboarding",
            "trialDays": rng.choice([14, 30]),
        },
        weight=3,
        severity="low",
        tags=("onboarding",),
    ),
    WorkflowSpec(
        "password-reset",
        "Password reset",
        (("email", "Reset link email", None),),
        lambda rng, s, t: {
            "resetUrl": f"https://app.example.com/reset?token={_chars(rng, 24, HEX)}",
            "expiresInMinutes": 30,
            "ipAddress": _ip(rng),
        },
        weight=5,
        severity="high",
        critical=True,
        tags=("security", "transactional"),
    ),
    WorkflowSpec(
        "verification-code",
        "Verification code",
        (("sms", "Send code", None),),
        lambda rng, s, t: {"code": _digits(rng, 6), "expiresInMinutes": 10},
        weight=12,
        severity="medium",
        tags=("security", "transactional"),
        origin="external",
    ),
    WorkflowSpec(
        "order-shipped",
        "Order shipped",
        (
            ("email", "Shipping confirmation", None),
            ("sms", "Shipping SMS", None),
            ("push", "Shipping push", None),
        ),
        lambda rng, s, t: {
            "orderId": f"ORD-{rng.randrange(100000, 999999)}",
            "carrier": rng.choice(["UPS", "DHL", "FedEx", "USPS"]),
            "trackingNumber": _chars(rng, 18, UPPER),
            "eta": (t + timedelta(days=rng.randrange(1, 6))).date().isoformat(),
            "items": rng.randrange(1, 6),
        },
        weight=13,
        severity="medium",
        tags=("orders", "transactional"),
    ),
    WorkflowSpec(
        "weekly-digest",
        "Weekly digest",
        (
            (
                "digest",
                "Collect the week",
                {"type": "timed", "amount": 1, "unit": "weeks",
                 "timed": {"atTime": "09:00", "weekDays": ["monday"]}},
            ),
            ("email", "Weekly summary email", None),
        ),
        lambda rng, s, t: {
            "event": rng.choice(["post_published", "comment_added", "file_shared"]),
            "actor": _person(rng),
            "project": rng.choice(PROJECTS),
        },
        weight=9,
        severity="none",
        tags=("digest",),
        origin="svc-cloud-v1",
    ),  # fmt: skip
    WorkflowSpec(
        "payment-failed",
        "Payment failed",
        (
            ("in_app", "Billing banner", None),
            ("email", "Payment failed email", None),
            ("sms", "Payment failed SMS", None),
        ),
        lambda rng, s, t: {
            "invoiceId": f"in_{_chars(rng, 14)}",
            "amount": round(rng.uniform(9, 499), 2),
            "currency": rng.choice(["USD", "EUR", "GBP"]),
            "reason": rng.choice(["card_declined", "insufficient_funds", "expired_card"]),
            "retryAt": iso(t + timedelta(days=3)),
        },
        weight=3,
        severity="high",
        tags=("billing",),
    ),
    WorkflowSpec(
        "security-alert",
        "Security alert",
        (
            ("email", "Security alert email", None),
            ("push", "Security alert push", None),
            ("chat", "Security alert chat", None),
        ),
        lambda rng, s, t: {
            "event": rng.choice(["new_login", "password_changed", "mfa_disabled", "api_key_created"]),
            "ipAddress": _ip(rng),
            "location": rng.choice(CITIES),
            "device": rng.choice(["Chrome on macOS", "Safari on iOS", "Firefox on Windows"]),
        },
        weight=3,
        severity="high",
        critical=True,
        tags=("security",),
    ),
    WorkflowSpec(
        "comment-mention",
        "Comment mention",
        (
            ("in_app", "Mention in inbox", None),
            ("delay", "Wait before email", {"type": "regular", "amount": 15, "unit": "minutes"}),
            ("email", "Mention email", None),
        ),
        lambda rng, s, t: {
            "author": _person(rng),
            "project": rng.choice(PROJECTS),
            "commentId": f"cmt_{_chars(rng, 10, HEX)}",
            "excerpt": rng.choice(["Can you take a look?", "Looks good to me", "See the draft"]),
        },
        weight=16,
        severity="low",
        tags=("collaboration",),
    ),
    WorkflowSpec(
        "activity-digest",
        "Activity digest",
        (
            ("digest", "Batch activity", {"type": "regular", "amount": 30, "unit": "minutes"}),
            ("in_app", "Activity summary", None),
            ("push", "Activity push", None),
        ),
        lambda rng, s, t: {
            "actor": _person(rng),
            "action": rng.choice(["liked your post", "followed you", "shared a file"]),
            "objectId": f"obj_{_chars(rng, 10, HEX)}",
        },
        weight=12,
        tags=("social",),
    ),
    WorkflowSpec(
        "on-call-page",
        "On-call page",
        (
            ("chat", "Page the channel", None),
            ("sms", "Page by SMS", None),
            ("push", "Page by push", None),
        ),
        lambda rng, s, t: {
            "service": rng.choice(SERVICES),
            "alertName": rng.choice(["HighErrorRate", "LatencySLOBurn", "DiskFull", "PodCrashLoop"]),
            "incidentId": f"INC-{rng.randrange(1000, 99999)}",
            "runbookUrl": "https://runbooks.example.com/" + rng.choice(SERVICES),
        },
        weight=2,
        severity="high",
        critical=True,
        tags=("ops", "on-call"),
        audience="chat",
    ),
    WorkflowSpec(
        "product-announcement",
        "Product announcement",
        (("in_app", "Announcement card", None), ("email", "Announcement email", None)),
        lambda rng, s, t: {
            "feature": rng.choice(FEATURES),
            "version": f"v3.{rng.randrange(20)}.{rng.randrange(10)}",
            "url": "https://example.com/changelog",
        },
        weight=0.6,
        tags=("marketing",),
        topics=("product-updates", "feature-announcements", "release-notes"),
    ),
    WorkflowSpec(
        "maintenance-notice",
        "Maintenance notice",
        (("in_app", "Maintenance banner", None), ("email", "Maintenance email", None)),
        lambda rng, s, t: {
            "windowStart": iso(t + timedelta(days=2)),
            "durationMinutes": rng.choice([30, 60, 120]),
            "services": rng.sample(SERVICES, 2),
        },
        weight=0.4,
        severity="medium",
        tags=("ops",),
        topics=("maintenance-windows", "status-page"),
    ),
]

SPECS = {spec.identifier: spec for spec in WORKFLOWS}


def _workflow_rows(
    rng: random.Random, ids: IdFactory, env: dict[str, Any], now: datetime
) -> list[dict[str, Any]]:
    """The workflow rows: ``template`` (ActivityTemplate) and ``steps`` (ActivityStep list) JSON."""
    rows = []
    for index, spec in enumerate(WORKFLOWS):
        created = now - timedelta(days=300 - 9 * index, minutes=rng.randrange(1440))
        template_id = ids.new(created)
        variables = sorted(spec.payload(random.Random(0), {}, now))
        template = {
            "_id": template_id,
            "name": spec.name,
            "origin": spec.origin,
            "triggers": [
                {
                    "type": "event",
                    "identifier": spec.identifier,
                    "variables": [{"name": name} for name in variables],
                }
            ],
        }
        steps = []
        for _, name, metadata in spec.steps:
            step = {
                "_id": ids.new(created),
                "active": True,
                "filters": [],
                "_templateId": ids.new(created),
                "name": name,
            }
            if metadata is not None:
                step["metadata"] = metadata
            steps.append(step)
        rows.append(
            {
                "id": template_id,
                "environment_id": env["id"],
                "name": spec.name,
                "identifier": spec.identifier,
                "template": _json(template),
                "steps": _json(steps),
                "created_at": iso(created),
            }
        )
    return rows


# --------------------------------------------------------------------------------------------
# The catalog a factory draws from (built from table rows, by populate and by live traffic)
# --------------------------------------------------------------------------------------------

PUSH_PROVIDER_IDS = {"fcm", "apns", "expo", "one-signal", "pushpad", "pusher-beams", "push-webhook"}


@dataclass(frozen=True)
class Workflow:
    """A workflow as notifications show it: the spec, its ActivityTemplate and typed steps."""

    spec: WorkflowSpec
    template: dict[str, Any]
    steps: list[tuple[str, dict[str, Any]]]

    @property
    def channels(self) -> list[str]:
        return list(dict.fromkeys(step_type for step_type, _ in self.steps))

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Workflow | None:
        """The workflow of a ``workflows`` row; None when it is not a seeded workflow."""
        spec = SPECS.get(row["identifier"])
        steps = json.loads(row["steps"])
        if spec is None or len(steps) != len(spec.steps):
            return None
        types = [step_type for step_type, _, _ in spec.steps]
        return cls(spec, json.loads(row["template"]), list(zip(types, steps)))


def subscriber_profile(row: dict[str, Any]) -> dict[str, Any]:
    """What a notification needs of a ``subscribers`` row: ids, addresses, chat/push providers."""
    chat = push = None
    for setting in json.loads(row["channels"]):
        credentials = setting.get("credentials") or {}
        if setting["providerId"] in PUSH_PROVIDER_IDS:
            push = push or (setting["providerId"] if credentials.get("deviceTokens") else None)
        else:
            chat = chat or (setting["providerId"] if credentials.get("webhookUrl") else None)
    summary = {"_id": row["id"], "subscriberId": row["subscriber_id"]}
    for key, column in (("firstName", "first_name"), ("lastName", "last_name"),
                        ("email", "email"), ("phone", "phone")):  # fmt: skip
        if row[column] is not None:
            summary[key] = row[column]
    email = row["email"]
    return {
        "id": row["id"],
        "subscriberId": row["subscriber_id"],
        "email": email,
        "domain": email.rsplit("@", 1)[-1] if email else None,
        "phone": row["phone"],
        "chat": chat,
        "push": push,
        "summary": summary,
    }


@dataclass(frozen=True)
class Catalog:
    """One environment's subscribers, workflows, topics (key -> id and members) and providers."""

    environment_id: str
    organization_id: str
    subscribers: list[dict[str, Any]]
    workflows: list[Workflow]
    topics: dict[str, tuple[str, list[int]]]
    providers: dict[str, str]

    @classmethod
    def from_rows(
        cls,
        environment: dict[str, Any],
        subscribers: list[dict[str, Any]],
        workflows: list[dict[str, Any]],
        topics: list[dict[str, Any]],
        subscriptions: list[dict[str, Any]],
        integrations: list[dict[str, Any]],
    ) -> Catalog:
        """Build from table rows (dicts keyed by column name); deleted subscribers are left out."""
        profiles = [subscriber_profile(row) for row in subscribers if not row["deleted"]]
        position = {profile["id"]: i for i, profile in enumerate(profiles)}
        key_of = {topic["id"]: topic["key"] for topic in topics}
        members: dict[str, tuple[str, list[int]]] = {t["key"]: (t["id"], []) for t in topics}
        for row in subscriptions:
            if row["subscriber_id"] in position and row["topic_id"] in key_of:
                members[key_of[row["topic_id"]]][1].append(position[row["subscriber_id"]])
        flows = [flow for flow in map(Workflow.from_row, workflows) if flow is not None]
        return cls(
            environment["id"],
            environment["organization_id"],
            profiles,
            flows,
            members,
            channel_providers(integrations),
        )


# --------------------------------------------------------------------------------------------
# Failures and incidents
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Failure:
    """One way a delivery fails: the detail text, the provider's error payload and its code.

    ``transient`` failures are retried; ``after_send`` ones are reported by the provider's
    webhook after a successful send (bounces, undelivered SMS).
    """

    detail: str
    raw: str
    code: str
    transient: bool = False
    after_send: bool = False
    source: str = "Credentials"


def _twilio(code: int, message: str, status: int) -> str:
    return json.dumps(
        {"code": code, "message": message, "more_info": f"https://www.twilio.com/docs/errors/{code}",
         "status": status}
    )  # fmt: skip


def _bounce(kind: str, status: str, reason: str) -> str:
    return json.dumps({"event": "bounce", "type": kind, "status": status, "reason": reason})


def _fcm(code: str, message: str) -> str:
    return json.dumps({"error": {"code": f"messaging/{code}", "message": message}})


DELIVERY_FAILED = "Message delivery failed"
PROVIDER_ERROR = "Unexpected provider error"

TWILIO_OUTAGE = Failure(
    PROVIDER_ERROR, _twilio(20503, "Service temporarily unavailable", 503), "20503", transient=True
)
HARD_BOUNCE = Failure(
    "Email bounced",
    _bounce("hard", "5.1.1", "550 5.1.1 The email account does not exist"),
    "5.1.1",
    after_send=True,
    source="Webhook",
)
TOKEN_NOT_REGISTERED = Failure(
    DELIVERY_FAILED,
    _fcm("registration-token-not-registered", "Requested entity was not found."),
    "messaging/registration-token-not-registered",
)

#: Background failures by provider (outside incidents).
FAILURES: dict[str, list[Failure]] = {
    "sendgrid": [
        HARD_BOUNCE,
        Failure("Email bounced", _bounce("soft", "4.2.2", "452 4.2.2 Mailbox full"), "4.2.2",
                after_send=True, source="Webhook"),
        Failure(DELIVERY_FAILED, json.dumps({"event": "dropped", "reason": "Spam Reporting Address"}),
                "dropped", after_send=True, source="Webhook"),
        Failure(PROVIDER_ERROR, json.dumps({"errors": [{"message": "Too many requests"}],
                                            "statusCode": 429}), "429", transient=True),
    ],
    "ses": [
        Failure(PROVIDER_ERROR, json.dumps({"Error": {"Code": "Throttling",
                                                      "Message": "Maximum sending rate exceeded."}}),
                "Throttling", transient=True),
        Failure(DELIVERY_FAILED, json.dumps({"Error": {"Code": "MessageRejected",
                                                       "Message": "Email address is not verified."}}),
                "MessageRejected"),
    ],
    "twilio": [
        Failure(DELIVERY_FAILED, json.dumps({"code": 30008, "message": "Unknown error", "status": 400}),
                "30008", after_send=True, source="Webhook"),
        Failure(DELIVERY_FAILED, _twilio(21211, "The 'To' number is not a valid phone number.", 400),
                "21211"),
        Failure(DELIVERY_FAILED, _twilio(30003, "Unreachable destination handset", 400), "30003",
                after_send=True, source="Webhook"),
        Failure(PROVIDER_ERROR, _twilio(20429, "Too Many Requests", 429), "20429", transient=True),
    ],
    "sns": [
        Failure(PROVIDER_ERROR, json.dumps({"Error": {"Code": "Throttling", "Message": "Rate exceeded"}}),
                "Throttling", transient=True),
    ],
    "fcm": [
        TOKEN_NOT_REGISTERED,
        Failure(PROVIDER_ERROR, _fcm("internal-error", "Internal error encountered."),
                "messaging/internal-error", transient=True),
        Failure(PROVIDER_ERROR, _fcm("message-rate-exceeded", "Sending rate exceeded."),
                "messaging/message-rate-exceeded", transient=True),
    ],
    "apns": [
        Failure(DELIVERY_FAILED, json.dumps({"reason": "BadDeviceToken", "status": 400}),
                "BadDeviceToken"),
        Failure(DELIVERY_FAILED, json.dumps({"reason": "Unregistered", "status": 410}), "Unregistered"),
        Failure(PROVIDER_ERROR, json.dumps({"reason": "ServiceUnavailable", "status": 503}),
                "ServiceUnavailable", transient=True),
    ],
    "expo": [
        Failure(DELIVERY_FAILED, json.dumps({"status": "error", "message": "Not a registered token",
                                             "details": {"error": "DeviceNotRegistered"}}),
                "DeviceNotRegistered"),
        Failure(PROVIDER_ERROR, json.dumps({"status": "error", "message": "Rate exceeded",
                                            "details": {"error": "MessageRateExceeded"}}),
                "MessageRateExceeded", transient=True),
    ],
    "slack": [
        Failure(DELIVERY_FAILED, json.dumps({"status": 404, "body": "no_service"}), "no_service"),
        Failure(PROVIDER_ERROR, json.dumps({"status": 500, "body": "rollup_error"}), "rollup_error",
                transient=True),
    ],
    "chat-webhook": [
        Failure(PROVIDER_ERROR, json.dumps({"status": 502, "message": "Bad Gateway"}), "502",
                transient=True),
        Failure(DELIVERY_FAILED, json.dumps({"status": 410, "message": "Gone"}), "410"),
    ],
}  # fmt: skip

#: Chance that one delivery attempt meets a background failure, by channel.
FAILURE_RATE = {"email": 0.02, "sms": 0.03, "push": 0.025, "chat": 0.015}


@dataclass(frozen=True)
class IncidentPlan:
    """A planted incident: every delivery of ``provider_id`` inside ``[start, end)`` fails,
    optionally only for subscribers of one email ``domain`` or a set of subscriber ids."""

    name: str
    summary: str
    channel: str
    provider_id: str
    start: datetime
    end: datetime
    failure: Failure
    domain: str | None = None
    subscribers: frozenset[str] = frozenset()

    def applies(self, provider: str, at: datetime, subscriber: dict[str, Any]) -> bool:
        return (
            provider == self.provider_id
            and self.start <= at < self.end
            and (self.domain is None or subscriber["domain"] == self.domain)
            and (not self.subscribers or subscriber["id"] in self.subscribers)
        )


def plan_incidents(rng: random.Random, catalog: Catalog, now: datetime) -> list[IncidentPlan]:
    """The three planted incidents, placed relative to ``now``."""
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    outage = midnight - timedelta(days=4) + timedelta(hours=13, minutes=rng.randrange(0, 60, 5))
    bounce = midnight - timedelta(days=2) + timedelta(hours=8, minutes=rng.randrange(0, 60, 5))
    tokens = now.replace(second=0, microsecond=0) - timedelta(hours=24 - rng.randrange(2))
    fcm = sorted(s["id"] for s in catalog.subscribers if s["push"] == "fcm")
    broken = frozenset(rng.sample(fcm, max(1, len(fcm) * 3 // 10))) if fcm else frozenset()
    return [
        IncidentPlan(
            "sms-provider-outage",
            "Twilio outage: SMS sends fail with 20503 (retries fail too)",
            "sms",
            "twilio",
            outage,
            outage + timedelta(hours=3, minutes=30),
            TWILIO_OUTAGE,
        ),
        IncidentPlan(
            "email-bounce-spike",
            f"Hard bounces from SendGrid for every {BOUNCE_DOMAIN} mailbox",
            "email",
            "sendgrid",
            bounce,
            bounce + timedelta(hours=6),
            HARD_BOUNCE,
            domain=BOUNCE_DOMAIN,
        ),
        IncidentPlan(
            "push-tokens-invalid",
            "FCM device tokens of a batch of subscribers are no longer registered",
            "push",
            "fcm",
            tokens,
            now,
            TOKEN_NOT_REGISTERED,
            subscribers=broken,
        ),
    ]
