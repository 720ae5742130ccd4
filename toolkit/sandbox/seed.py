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
from toolkit.sandbox.store import CHANNEL_BITS, RETENTION_DAYS, Store

#: Days of activity that end at ``now`` (at most three retention periods of the plan).
ACTIVITY_DAYS = 14
#: The small environments get this share of the requested sizes.
SMALL_SHARE = 0.05
#: Rows per ``executemany`` batch.
CHUNK = 2_000

TENANCY = [  # organization, plan, environment names; the first environment is the default
    ("Acme", "business", ["Development", "Production"]),
    ("Globex", "free", ["Development"]),
]

# --------------------------------------------------------------------------------------------
# Vocabularies
# --------------------------------------------------------------------------------------------

# fmt: off
FIRST_NAMES = (
    "Olivia", "Liam", "Emma", "Noah", "Ava", "Oliver", "Sophia", "Elijah", "Isabella", "James",
    "Mia", "William", "Amelia", "Benjamin", "Harper", "Lucas", "Evelyn", "Henry", "Abigail",
    "Alexander", "Emily", "Daniel", "Ella", "Matthew", "Elizabeth", "Jackson", "Sofia",
    "Sebastian", "Avery", "Mateo", "Scarlett", "Jack", "Grace", "Owen", "Chloe", "Theodore",
    "Camila", "Aiden", "Penelope", "Samuel", "Riley", "Joseph", "Layla", "John", "Lillian",
    "David", "Nora", "Wyatt", "Zoey", "Leo", "Hannah", "Hiroshi", "Yuki", "Priya", "Arjun",
    "Lena", "Jonas", "Chloé", "Louis", "Lucía", "Javier", "Ana", "João", "Mariana", "Aarav",
    "Saanvi", "Mohammed", "Fatima", "Wei", "Mei"
)
# fmt: on

# fmt: off
LAST_NAMES = (
    "Smith", "Johnson", "Williams", "Brown", "Jones", "Garcia", "Miller", "Davis", "Rodriguez",
    "Martinez", "Hernandez", "Lopez", "Gonzalez", "Wilson", "Anderson", "Thomas", "Taylor",
    "Moore", "Jackson", "Martin", "Lee", "Perez", "Thompson", "White", "Harris", "Sanchez",
    "Clark", "Ramirez", "Lewis", "Robinson", "Walker", "Young", "Allen", "King", "Wright",
    "Scott", "Torres", "Nguyen", "Hill", "Flores", "Green", "Adams", "Nelson", "Baker", "Hall",
    "Rivera", "Campbell", "Mitchell", "Carter", "Roberts", "Müller", "Schmidt", "Schneider",
    "Fischer", "Dubois", "Moreau", "Laurent", "Fernández", "Silva", "Santos", "Oliveira",
    "Tanaka", "Suzuki", "Sato", "Patel", "Sharma", "Khan", "Chen", "Wang", "O'Brien",
    "Kowalski"
)
# fmt: on

#: (locale, time zones, phone prefix, digits after the prefix, weight)
LOCALES = [
    ("en-US", ["America/New_York", "America/Chicago", "America/Denver", "America/Los_Angeles"],
     "+1", 10, 40),
    ("en-GB", ["Europe/London"], "+447", 9, 12),
    ("de-DE", ["Europe/Berlin"], "+4915", 9, 10),
    ("fr-FR", ["Europe/Paris"], "+336", 8, 8),
    ("es-ES", ["Europe/Madrid"], "+346", 8, 6),
    ("pt-BR", ["America/Sao_Paulo"], "+55119", 8, 7),
    ("ja-JP", ["Asia/Tokyo"], "+8190", 8, 5),
    ("en-IN", ["Asia/Kolkata"], "+919", 9, 7),
    ("en-AU", ["Australia/Sydney"], "+614", 8, 5),
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

# fmt: off
TOPIC_KEYS = (
    "product-updates", "billing-alerts", "security", "release-notes", "maintenance-windows",
    "incident-status", "weekly-newsletter", "marketing-promotions", "feature-announcements",
    "account-activity", "team-mentions", "project-updates", "deploy-notifications",
    "on-call-rotation", "compliance", "api-deprecations", "usage-reports", "beta-program",
    "webinars", "community-events", "support-tickets", "order-updates", "shipping-updates",
    "price-changes", "inventory-alerts", "partner-news", "developer-newsletter", "status-page",
    "login-alerts", "data-exports"
)
# fmt: on

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
    """ChannelSettings: a chat webhook for about a third, push tokens for about two thirds."""
    channels = []
    if rng.random() < 0.3:
        provider = rng.choices(CHAT_PROVIDERS, [3, 1])[0]
        if provider == "slack":
            url = (
                f"https://hooks.slack.com/services/T{_chars(rng, 8, UPPER)}/"
                f"B{_chars(rng, 10, UPPER)}/{_chars(rng, 24)}"
            )
        else:
            url = f"https://hooks.{slug}-ops.example/notify/{_chars(rng, 16, HEX)}"
        channels.append(_channel_setting(provider, {"webhookUrl": url}, integrations))
    if rng.random() < 0.65:
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
        phone = prefix + _digits(rng, digits) if rng.random() < 0.85 else None
        if phone and prefix == "+1":
            phone = f"+1{rng.randrange(201, 990)}{_digits(rng, 7)}"
        avatar = None
        if email and rng.random() < 0.7:
            avatar = f"https://www.gravatar.com/avatar/{hashlib.md5(email.encode()).hexdigest()}?d=identicon"
        last_online = now - timedelta(minutes=rng.expovariate(1 / 3000))
        online = now - last_online < timedelta(minutes=15)
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
                "updated_at": iso(when + (now - when) * rng.random()),
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
                {
                    "type": "timed",
                    "amount": 1,
                    "unit": "weeks",
                    "timed": {"atTime": "09:00", "weekDays": ["monday"]},
                },
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
    ),
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
            "event": rng.choice(
                ["new_login", "password_changed", "mfa_disabled", "api_key_created"]
            ),
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
            "alertName": rng.choice(
                ["HighErrorRate", "LatencySLOBurn", "DiskFull", "PodCrashLoop"]
            ),
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
        return cls(spec, json.loads(row["template"]), list(zip(types, steps, strict=True)))


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
    for key, column in (
        ("firstName", "first_name"),
        ("lastName", "last_name"),
        ("email", "email"),
        ("phone", "phone"),
    ):
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
        {
            "code": code,
            "message": message,
            "more_info": f"https://www.twilio.com/docs/errors/{code}",
            "status": status,
        }
    )


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


#: The subscriber profile key a channel needs: an address, or the chat/push provider (in-app: none).
ADDRESS = {"email": "email", "sms": "phone", "chat": "chat", "push": "push"}


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

    def targets(self, subscriber: dict[str, Any]) -> bool:
        """Whether deliveries to ``subscriber`` on the incident's channel would meet it."""
        value = subscriber[ADDRESS[self.channel]]
        reachable = value == self.provider_id if self.channel in ("chat", "push") else bool(value)
        return (
            reachable
            and (self.domain is None or subscriber["domain"] == self.domain)
            and (not self.subscribers or subscriber["id"] in self.subscribers)
        )

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


# --------------------------------------------------------------------------------------------
# Stories: a notification with every job and execution detail, shown as of a cutoff instant
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Event:
    """One execution detail at ``at``; the job takes ``job_status`` from then on (if set)."""

    at: datetime
    detail: dict[str, Any]
    job_status: str | None


@dataclass
class Job:
    """An ActivityJob without ``executionDetails``, ``status`` and ``updatedAt``, and its events."""

    doc: dict[str, Any]
    events: list[Event] = field(default_factory=list)

    def render(self, cutoff: datetime, created: str) -> dict[str, Any]:
        events = self.events
        if events and events[-1].at > cutoff:
            events = [event for event in events if event.at <= cutoff]
        status = "pending"
        for event in events:
            status = event.job_status or status
        return {
            **self.doc,
            "executionDetails": [event.detail for event in events],
            "status": status,
            "updatedAt": events[-1].detail["createdAt"] if events else created,
        }


@dataclass
class Story:
    """A notification's whole story: its document (without jobs), jobs and row values.

    ``open_until`` is set on a digest's lead notification while later events can still be
    merged into it (which changes its document).
    """

    doc: dict[str, Any]
    jobs: list[Job]
    created_at: datetime
    severity: str | None
    channel_mask: int
    topic_keys: list[str]
    open_until: datetime | None = None

    @property
    def id(self) -> str:
        return self.doc["_id"]

    def render(self, cutoff: datetime) -> tuple[Any, ...]:
        """The ``notifications`` row (its document as served) as things stand at ``cutoff``."""
        created = self.doc["createdAt"]
        jobs = [job.render(cutoff, created) for job in self.jobs]
        doc = {
            **self.doc,
            "updatedAt": max([created] + [j["updatedAt"] for j in jobs]),
            "jobs": jobs,
        }
        return (
            self.id,
            doc["_environmentId"],
            doc["_subscriberId"],
            doc["_templateId"],
            doc["transactionId"],
            self.severity,
            self.channel_mask,
            created,
            _json(doc),
        )

    def topic_rows(self) -> list[tuple[str, str, str]]:
        return [(self.id, self.doc["_environmentId"], key) for key in self.topic_keys]


NOTIFICATION_COLUMNS = (
    "id, environment_id, subscriber_id, template_id, transaction_id, severity, channel_mask,"
    " created_at, doc"
)
INSERT_NOTIFICATION = (
    f"INSERT INTO notifications ({NOTIFICATION_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?)"
)
INSERT_NOTIFICATION_TOPIC = (
    "INSERT INTO notification_topics (notification_id, environment_id, topic_key) VALUES (?,?,?)"
)


def _seconds(rng: random.Random, low: float, high: float) -> timedelta:
    return timedelta(seconds=rng.uniform(low, high))


#: Seconds from a channel step's start to the provider's answer.
SEND_LATENCY = {
    "in_app": (0.02, 0.2),
    "email": (0.4, 2.5),
    "sms": (0.5, 3.0),
    "chat": (0.3, 1.5),
    "push": (0.2, 1.2),
}
#: Back-off before each retry of a transient failure, in seconds.
RETRY_BACKOFF = (60, 300)
#: Digested events kept in a lead notification's ``digest.events``.
MAX_DIGEST_EVENTS = 25
UNITS = {"seconds": 1, "minutes": 60, "hours": 3600, "days": 86400, "weeks": 604800}
DELIVERED_RAW = {"email": '{"event": "delivered"}', "sms": '{"MessageStatus": "delivered"}'}
MISSING_ADDRESS = {
    "email": "Subscriber does not have an email address",
    "sms": "Subscriber does not have a phone number",
    "chat": "Subscriber does not have an active chat channel",
    "push": "Subscriber does not have an active push channel",
}


class NotificationFactory:
    """Builds notifications (as :class:`Story` objects) for one environment's :class:`Catalog`.

    Parameters
    ----------
    catalog : Catalog
        The environment's subscribers, workflows, topics and providers.
    rng : random.Random
        The only source of randomness (choices, latencies, failures, payloads).
    ids : IdFactory
        Makes the ids of notifications, jobs and execution details.
    incidents : list of IncidentPlan, optional
        Planted incidents; their failures are recorded in ``hits``.

    Attributes
    ----------
    hits : dict
        Incident name -> list of ``(failed at, notification _id, subscriberId)``.
    """

    def __init__(
        self,
        catalog: Catalog,
        rng: random.Random,
        ids: IdFactory,
        incidents: Iterable[IncidentPlan] = (),
    ):
        self.catalog, self.rng, self.ids = catalog, rng, ids
        self.incidents = list(incidents)
        self.hits: dict[str, list[tuple[datetime, str, str]]] = {p.name: [] for p in self.incidents}
        activity = [min(rng.paretovariate(1.2), 40.0) for _ in catalog.subscribers]
        self._audiences = {None: self._cumulative(range(len(activity)), activity)}
        chat = [i for i, s in enumerate(catalog.subscribers) if s["chat"]]
        self._audiences["chat"] = self._cumulative(chat, [activity[i] for i in chat])
        self._workflows = self._cumulative(
            range(len(catalog.workflows)), [flow.spec.weight for flow in catalog.workflows]
        )
        self._digests: dict[tuple[str, str], tuple[Story, Job]] = {}
        self._targets: dict[str, list[dict[str, Any]]] = {}  # incident name -> subscribers

    @staticmethod
    def _cumulative(items: Iterable[int], weights: list[float]) -> tuple[list[int], list[float]]:
        total, cumulative = 0.0, []
        for weight in weights:
            total += weight
            cumulative.append(total)
        return list(items), cumulative

    # -- choosing -------------------------------------------------------------------------

    def trigger(self, when: datetime, limit: int | None = None) -> list[Story]:
        """One trigger at ``when``: a workflow and its recipients (a topic fans out).

        Returns the new stories (at most ``limit``), all created at ``when``.
        """
        if not self.catalog.workflows or not self.catalog.subscribers:
            return []
        workflow = self.catalog.workflows[self._pick(*self._workflows)]
        if workflow.spec.topics:
            return self._broadcast(when, workflow, limit)
        return [self.build(when, self._subscriber(workflow.spec.audience), workflow)]

    def planted(self, when: datetime, plan: IncidentPlan) -> list[Story]:
        """A notification bound to meet ``plan``: a subscriber it targets, a workflow that
        delivers on its channel without waiting (no digest); a plain trigger if there is none."""
        flows = [
            flow
            for flow in self.catalog.workflows
            if plan.channel in flow.channels
            and "digest" not in flow.channels
            and not flow.spec.topics
        ]
        if plan.name not in self._targets:
            subscribers = self.catalog.subscribers
            self._targets[plan.name] = [person for person in subscribers if plan.targets(person)]
        people = self._targets[plan.name]
        if not flows or not people:
            return self.trigger(when)
        flow = self.rng.choices(flows, [flow.spec.weight for flow in flows])[0]
        return [self.build(when, self.rng.choice(people), flow)]

    def _subscriber(self, audience: str | None) -> dict[str, Any]:
        items, cumulative = self._audiences.get(audience) or self._audiences[None]
        if not items:
            items, cumulative = self._audiences[None]
        return self.catalog.subscribers[self._pick(items, cumulative)]

    def _pick(self, items: list[int], cumulative: list[float]) -> int:
        """A weighted choice among ``items`` (``cumulative`` weights)."""
        index = bisect.bisect_right(cumulative, self.rng.random() * cumulative[-1])
        return items[min(index, len(items) - 1)]

    def _broadcast(self, when: datetime, workflow: Workflow, limit: int | None) -> list[Story]:
        topics = [key for key in workflow.spec.topics if self.catalog.topics.get(key, ("", []))[1]]
        if not topics:
            return [self.build(when, self._subscriber(None), workflow)]
        key = self.rng.choice(topics)
        topic_id, members = self.catalog.topics[key]
        size = min(self.rng.randint(3, 12), len(members), limit or len(members))
        transaction_id = self._transaction_id()
        return [
            self.build(
                when,
                self.catalog.subscribers[index],
                workflow,
                topic=(topic_id, key),
                transaction_id=transaction_id,
            )
            for index in self.rng.sample(members, size)
        ]

    def _transaction_id(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    # -- building -------------------------------------------------------------------------

    def build(
        self,
        when: datetime,
        subscriber: dict[str, Any],
        workflow: Workflow,
        *,
        topic: tuple[str, str] | None = None,
        transaction_id: str | None = None,
    ) -> Story:
        """The story of one notification of ``workflow`` to ``subscriber`` created at ``when``.

        ``subscriber`` is a :func:`subscriber_profile`; ``topic`` is ``(topic _id, key)`` for a
        topic-triggered notification.
        """
        spec, rng = workflow.spec, self.rng
        payload = spec.payload(rng, subscriber["summary"], when)
        template = workflow.template
        doc: dict[str, Any] = {
            "_id": self.ids.new(when),
            "_environmentId": self.catalog.environment_id,
            "_organizationId": self.catalog.organization_id,
            "_subscriberId": subscriber["id"],
            "_templateId": template["_id"],
            "transactionId": transaction_id or self._transaction_id(),
            "createdAt": iso(when),
            "channels": workflow.channels,
            "subscriber": subscriber["summary"],
            "template": template,
            "payload": payload,
            "tags": list(spec.tags),
            "to": {"subscriberId": subscriber["subscriberId"]},
            "critical": spec.critical,
        }
        if topic is not None:
            doc["to"] = {"type": "Topic", "topicKey": topic[1]}
            doc["topics"] = [{"_topicId": topic[0], "topicKey": topic[1]}]
        if spec.severity is not None:
            doc["severity"] = spec.severity
        story = Story(
            doc,
            [],
            when,
            spec.severity,
            sum(CHANNEL_BITS[channel] for channel in workflow.channels),
            [topic[1]] if topic else [],
        )
        self._add_jobs(story, workflow, subscriber, payload)
        return story

    def _add_jobs(
        self, story: Story, workflow: Workflow, subscriber: dict[str, Any], payload: dict
    ) -> None:
        """Run the steps in order; a merged digest or a canceled delay ends the chain early."""
        at = story.created_at + _seconds(self.rng, 0.01, 0.3)
        stopped: tuple[str, str, datetime] | None = None  # (job status, detail, at)
        for step_type, step in workflow.steps:
            provider = self._provider(step_type, subscriber)
            job = Job(
                {
                    "_id": self.ids.new(story.created_at),
                    "type": step_type,
                    "step": step,
                    "providerId": provider,
                }
            )
            if stopped is not None:
                status, text, when = stopped
                job.events.append(self._event(when, "Warning", text, "Internal", provider, status))
            elif step_type == "digest":
                at, stopped = self._digest(job, story, workflow, step, subscriber, payload, at)
            elif step_type == "delay":
                at, stopped = self._delay(job, step, at)
            else:
                at = self._deliver(job, story, step_type, provider, subscriber, at)
            story.jobs.append(job)
            at += _seconds(self.rng, 0.02, 0.3)

    def _provider(self, channel: str, subscriber: dict[str, Any]) -> str:
        if channel in ("chat", "push"):
            return subscriber[channel] or self.catalog.providers.get(channel, "svc")
        return self.catalog.providers.get(channel, "svc")

    def _event(
        self,
        at: datetime,
        status: str,
        text: str,
        source: str,
        provider: str,
        job_status: str | None,
        raw: str | None = None,
        retry: bool = False,
    ) -> Event:
        detail = {
            "_id": self.ids.new(at),
            "createdAt": iso(at),
            "status": status,
            "detail": text,
            "isRetry": retry,
            "isTest": False,
            "providerId": provider,
            "raw": raw,
            "source": source,
        }
        return Event(at, detail, job_status)

    # -- digest and delay steps -----------------------------------------------------------

    def _digest(
        self,
        job: Job,
        story: Story,
        workflow: Workflow,
        step: dict[str, Any],
        subscriber: dict[str, Any],
        payload: dict[str, Any],
        at: datetime,
    ) -> tuple[datetime, tuple[str, str, datetime] | None]:
        """Open a digest window (this notification leads it), or merge into the open one."""
        meta = step.get("metadata") or {"type": "regular", "amount": 10, "unit": "minutes"}
        job.doc["digest"] = {**meta, "events": [payload]}
        provider = job.doc["providerId"]
        job.events.append(self._event(at, "Queued", "Step queued", "Internal", provider, "delayed"))
        key = (workflow.template["_id"], subscriber["id"])
        lead, lead_job = self._digests.get(key, (None, job))
        if lead is not None and lead.open_until is not None and at < lead.open_until:
            events = lead_job.doc["digest"]["events"]
            if len(events) < MAX_DIGEST_EVENTS:
                events.append(payload)
            story.doc["_digestedNotificationId"] = lead.id
            merged = at + _seconds(self.rng, 0.01, 0.2)
            text = "Digest was merged with other digest"
            job.events.append(self._event(merged, "Success", text, "Internal", provider, "merged"))
            return merged, ("skipped", "Step skipped: merged into an earlier digest", merged)
        until = _digest_until(meta, at)
        story.open_until = until
        self._digests[key] = (story, job)
        job.events.append(
            self._event(until, "Success", "Digest completed", "Internal", provider, "completed")
        )
        return until, None

    def _delay(
        self, job: Job, step: dict[str, Any], at: datetime
    ) -> tuple[datetime, tuple[str, str, datetime] | None]:
        """Wait; about one in twenty delayed notifications is canceled meanwhile."""
        meta = step.get("metadata") or {"amount": 5, "unit": "minutes"}
        length = timedelta(seconds=meta["amount"] * UNITS[meta["unit"]])
        provider = job.doc["providerId"]
        job.events.append(self._event(at, "Queued", "Step queued", "Internal", provider, "delayed"))
        if self.rng.random() < 0.05:
            canceled = at + length * self.rng.random()
            job.events.append(
                self._event(canceled, "Warning", "Delay canceled", "Internal", provider, "canceled")
            )
            return canceled, ("canceled", "Step canceled", canceled)
        done = at + length
        job.events.append(
            self._event(done, "Success", "Delay finished", "Internal", provider, "completed")
        )
        return done, None

    # -- channel steps --------------------------------------------------------------------

    def _deliver(
        self,
        job: Job,
        story: Story,
        channel: str,
        provider: str,
        subscriber: dict[str, Any],
        at: datetime,
    ) -> datetime:
        """Queue, send (with retries after transient failures), then the provider's webhooks.

        Returns when the step ended (sent, or given up), when the next step starts.
        """
        events = job.events
        events.append(self._event(at, "Pending", "Step queued", "Internal", provider, "queued"))
        if not self._reachable(channel, subscriber):
            events.append(
                self._event(at, "Warning", MISSING_ADDRESS[channel], "Payload", provider, "skipped")
            )
            return at
        at += _seconds(self.rng, *SEND_LATENCY[channel])
        failure = self._failure(channel, provider, at, story, subscriber)
        attempt = 0
        while failure is not None and not failure.after_send:
            retrying = failure.transient and attempt < len(RETRY_BACKOFF)
            status = "queued" if retrying else "failed"
            events.append(
                self._event(
                    at,
                    "Failed",
                    failure.detail,
                    failure.source,
                    provider,
                    status,
                    failure.raw,
                    retry=attempt > 0,
                )
            )
            if not retrying:
                return at
            at += timedelta(seconds=RETRY_BACKOFF[attempt] * self.rng.uniform(0.9, 1.3))
            attempt += 1
            failure = self._failure(channel, provider, at, story, subscriber)
        events.append(
            self._event(
                at,
                "Success",
                "Message sent",
                "Credentials",
                provider,
                "completed",
                _sent_raw(self.rng, provider),
                retry=attempt > 0,
            )
        )
        if failure is not None:
            later = at + _seconds(self.rng, 2, 90)
            events.append(
                self._event(
                    later, "Failed", failure.detail, failure.source, provider, "failed", failure.raw
                )
            )
        else:
            self._after_delivery(events, channel, provider, at)
        return at

    @staticmethod
    def _reachable(channel: str, subscriber: dict[str, Any]) -> bool:
        key = ADDRESS.get(channel)
        return key is None or bool(subscriber[key])

    def _failure(
        self,
        channel: str,
        provider: str,
        at: datetime,
        story: Story,
        subscriber: dict[str, Any],
    ) -> Failure | None:
        """The failure this attempt meets: a planted incident's, else maybe a background one."""
        for plan in self.incidents:
            if plan.applies(provider, at, subscriber):
                self.hits[plan.name].append((at, story.id, subscriber["subscriberId"]))
                return plan.failure
        failures = FAILURES.get(provider)
        if failures and self.rng.random() < FAILURE_RATE.get(channel, 0.0):
            return self.rng.choice(failures)
        return None

    def _after_delivery(self, events: list[Event], channel: str, provider: str, sent: datetime):
        """Delivery receipts (email, SMS), opens and reads, minutes to hours after the send."""
        rng = self.rng
        if channel in ("email", "sms") and rng.random() < 0.95:
            delivered = sent + _seconds(rng, 2, 40)
            raw = DELIVERED_RAW[channel]
            events.append(
                self._event(
                    delivered, "Success", "Message delivered", "Webhook", provider, None, raw
                )
            )
            if channel == "email" and rng.random() < 0.35:
                opened = delivered + timedelta(minutes=rng.expovariate(1 / 180))
                events.append(
                    self._event(
                        opened,
                        "Success",
                        "Email opened",
                        "Webhook",
                        provider,
                        None,
                        '{"event": "open"}',
                    )
                )
        elif channel in ("in_app", "push") and rng.random() < (
            0.5 if channel == "in_app" else 0.25
        ):
            read = sent + timedelta(minutes=rng.expovariate(1 / 240))
            source = "Internal" if channel == "in_app" else "Webhook"
            events.append(
                self._event(read, "ReadConfirmation", "Message read", source, provider, None)
            )


def _sent_raw(rng: random.Random, provider: str) -> str | None:
    """The provider's answer to a successful send, as a JSON string (None for in-app)."""
    if provider == "svc":
        return None
    if provider == "sendgrid":
        return f'{{"statusCode": 202, "messageId": "{rng.getrandbits(96):024x}"}}'
    if provider in ("ses", "sns"):
        return f'{{"MessageId": "{uuid.UUID(int=rng.getrandbits(128), version=4)}"}}'
    if provider == "twilio":
        return f'{{"sid": "SM{rng.getrandbits(128):032x}", "status": "queued"}}'
    if provider in PUSH_PROVIDER_IDS:
        return f'{{"messageId": "{rng.getrandbits(96):024x}", "success": 1}}'
    return '{"status": 200, "body": "ok"}'


def _digest_until(meta: dict[str, Any], at: datetime) -> datetime:
    """The end of a digest window opened at ``at`` (timed: the next listed weekday at atTime)."""
    timed = meta.get("timed")
    if meta.get("type") != "timed" or not timed:
        return at + timedelta(seconds=meta["amount"] * UNITS[meta["unit"]])
    hour, minute = (int(part) for part in timed.get("atTime", "09:00").split(":"))
    days = {
        "monday": 0,
        "tuesday": 1,
        "wednesday": 2,
        "thursday": 3,
        "friday": 4,
        "saturday": 5,
        "sunday": 6,
    }
    weekdays = {days[name] for name in timed.get("weekDays") or ["monday"]}
    candidate = at.replace(hour=hour, minute=minute, second=0, microsecond=0)
    while candidate <= at or candidate.weekday() not in weekdays:
        candidate += timedelta(days=1)
    return candidate


# --------------------------------------------------------------------------------------------
# Activity over time and populate
# --------------------------------------------------------------------------------------------

#: Relative trigger volume by hour of the day (UTC); weekends get WEEKEND of it.
HOURLY = (0.22, 0.16, 0.13, 0.12, 0.14, 0.22, 0.40, 0.65, 0.90, 1.00, 1.05, 1.08,
          1.05, 1.05, 1.08, 1.05, 1.00, 0.92, 0.82, 0.72, 0.60, 0.48, 0.38, 0.30)  # fmt: skip
WEEKEND = 0.45


def activity_times(
    rng: random.Random, now: datetime, count: int, days: int = ACTIVITY_DAYS
) -> list[datetime]:
    """``count`` sorted instants in the ``days`` before ``now``, with a daily and weekly rhythm."""
    hours = days * 24
    starts = [now - timedelta(hours=hours - h) for h in range(hours)]
    weights = []
    for start in starts:
        middle = start + timedelta(minutes=30)
        weights.append(HOURLY[middle.hour] * (WEEKEND if middle.weekday() >= 5 else 1.0))
    picks = rng.choices(range(hours), weights, k=count)
    return sorted(starts[h] + timedelta(seconds=rng.random() * 3600) for h in picks)


def _insert(db: Any, table: str, rows: list[dict[str, Any]]) -> None:
    if rows:
        columns = list(rows[0])
        sql = f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"
        db.executemany(sql, [tuple(row[c] for c in columns) for row in rows])


def _write_activity(
    db: Any,
    factory: NotificationFactory,
    slots: list[tuple[datetime, IncidentPlan | None]],
    now: datetime,
) -> None:
    """Trigger at each slot, in time order, and insert the rows.

    A slot with a plan plants a notification that meets it; a topic's fan-out uses up the
    following slots. A digest's lead is held back until its window closes, since later events
    still merge into it.
    """
    held: list[Story] = []
    ready: list[Story] = []
    position = 0
    while position < len(slots):
        when, plan = slots[position]
        if plan is None:
            stories = factory.trigger(when, limit=len(slots) - position)
        else:
            stories = factory.planted(when, plan)
        position += max(1, len(stories))
        for story in stories:
            (held if story.open_until else ready).append(story)
        if len(ready) >= CHUNK:
            ready += [story for story in held if story.open_until <= when]
            held = [story for story in held if story.open_until > when]
            _insert_stories(db, ready, now)
            ready = []
    _insert_stories(db, ready + held, now)


def _slots(
    rng: random.Random, now: datetime, count: int, days: int, plans: list[IncidentPlan]
) -> list[tuple[datetime, IncidentPlan | None]]:
    """``count`` trigger slots: a few per incident plan inside its window, the rest at random."""
    per_plan = count // 1000 + 3 if count >= 100 else 0
    planted = []
    for plan in plans:
        span = (min(plan.end, now) - plan.start - timedelta(minutes=30)).total_seconds()
        planted += [
            (plan.start + timedelta(seconds=rng.random() * span), plan) for _ in range(per_plan)
        ]
    times = activity_times(rng, now, count - len(planted), days)
    return sorted([(when, None) for when in times] + planted, key=lambda slot: slot[0])


def _insert_stories(db: Any, stories: list[Story], now: datetime) -> None:
    db.executemany(INSERT_NOTIFICATION, [story.render(now) for story in stories])
    db.executemany(INSERT_NOTIFICATION_TOPIC, [row for s in stories for row in s.topic_rows()])


def _describe(
    plan: IncidentPlan, factory: NotificationFactory, environment_id: str, now: datetime
) -> dict[str, Any]:
    """The incident as ``populate`` reports it, with the notifications and subscribers it hit."""
    hits = [hit for hit in factory.hits[plan.name] if hit[0] <= now]
    notifications = sorted({notification for _, notification, _ in hits})
    subscribers = sorted({subscriber for _, _, subscriber in hits})
    incident = {
        "name": plan.name,
        "summary": plan.summary,
        "environment_id": environment_id,
        "channel": plan.channel,
        "provider_id": plan.provider_id,
        "start": iso(plan.start),
        "end": iso(plan.end),
        "error_code": plan.failure.code,
        "detail": plan.failure.detail,
        "failures": len(hits),
        "notifications": len(notifications),
        "subscribers": len(subscribers),
        "notification_ids": notifications,
        "subscriber_ids": subscribers,
    }
    if plan.domain is not None:
        incident["domain"] = plan.domain
    return incident


def _populate_environment(
    db: Any,
    seed: int,
    index: int,
    env: dict[str, Any],
    ids: IdFactory,
    now: datetime,
    notifications: int,
    subscribers: int,
    plant: bool,
) -> list[dict[str, Any]]:
    """Write one environment's data; return its planted incidents (if ``plant``)."""
    rng = _rng(seed, "environment", index)
    integrations = _integration_rows(rng, ids, env, now)
    workflows = _workflow_rows(rng, ids, env, now)
    people = _subscriber_rows(rng, ids, env, now, subscribers, integrations)
    topics = _topic_rows(rng, ids, env, now)
    subscriptions = _subscription_rows(rng, ids, people, topics, now)
    for table, rows in (
        ("integrations", integrations),
        ("workflows", workflows),
        ("subscribers", people),
        ("topics", topics),
        ("subscriptions", subscriptions),
    ):
        _insert(db, table, rows)
    catalog = Catalog.from_rows(env, people, workflows, topics, subscriptions, integrations)
    plans = plan_incidents(rng, catalog, now) if plant else []
    factory = NotificationFactory(catalog, _rng(seed, "activity", index), ids, plans)
    days = min(ACTIVITY_DAYS, 3 * RETENTION_DAYS[env["plan"]])
    _write_activity(db, factory, _slots(rng, now, notifications, days, plans), now)
    return [_describe(plan, factory, env["id"], now) for plan in plans]


def populate(
    store: Store,
    *,
    seed: int = 7,
    now: datetime | str,
    notifications: int = 20_000,
    subscribers: int = 2_000,
) -> dict[str, Any]:
    """Fill an empty store with seeded, realistic data ending at ``now``, in one transaction.

    Parameters
    ----------
    store : Store
        An empty store.
    seed : int
        Same ``(seed, now, sizes)``, byte-identical rows.
    now : datetime or str
        The end of the activity (14 days of it; 3 days on the free plan, whose feed keeps 24 h);
        nothing is dated after it.
    notifications, subscribers : int
        Sizes of the default environment (Acme/Development); the other two environments get
        about 5 % of each.

    Returns
    -------
    dict
        ``{"environments": [...], "incidents": [...]}``: environments (``id``,
        ``organization_id``, ``organization``, ``name``, ``plan``, ``api_key``; the first is the
        default) and the planted incidents. Also stored in ``meta`` (``tenancy``, ``incidents``,
        ``seed``, ``now``, ``notifications``, ``subscribers``).
    """
    now = parse_instant(now)
    ids = IdFactory(_rng(seed, "ids"))
    environments = _tenancy(_rng(seed, "tenancy"), ids, now)
    small = (max(1, round(notifications * SMALL_SHARE)), max(5, round(subscribers * SMALL_SHARE)))
    incidents: list[dict[str, Any]] = []
    with store.write() as db:
        _insert_tenancy(db, environments)
        for index, env in enumerate(environments):
            sizes = (notifications, subscribers) if index == 0 else small
            incidents += _populate_environment(db, seed, index, env, ids, now, *sizes, index == 0)
        meta = {
            "tenancy": _json({"environments": environments}),
            "incidents": _json(incidents),
            "seed": str(seed),
            "now": iso(now),
            "notifications": str(notifications),
            "subscribers": str(subscribers),
        }
        db.executemany("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", meta.items())
    return {"environments": environments, "incidents": incidents}
