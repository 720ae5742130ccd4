"""The seeding's data tables: names, locales, email domains, topics, integrations and their
fake credentials, and the workflows with their payloads."""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from toolkit.sandbox.clock import iso

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


def chars(rng: random.Random, n: int, alphabet: str = ALNUM) -> str:
    return "".join(rng.choices(alphabet, k=n))


def digits(rng: random.Random, n: int) -> str:
    return "".join(rng.choices("0123456789", k=n))


def to_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def rng_for(seed: int, *parts: object) -> random.Random:
    """An independent generator for one part of the data (string seeds hash deterministically)."""
    return random.Random(":".join(map(str, (seed, *parts))))


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
    body = chars(rng, 64, ALNUM + "+/")
    return f"-----BEGIN PRIVATE KEY-----\n{body}\n-----END PRIVATE KEY-----\n"


def fake_credentials(provider: str, rng: random.Random, slug: str) -> dict[str, Any]:
    """Realistic-looking fake credentials of one provider for the organization ``slug``."""
    sender = {"from": f"notifications@{slug}.example", "senderName": slug.title()}
    aws = {"apiKey": "AKIA" + chars(rng, 16, UPPER), "secretKey": chars(rng, 40)}
    if provider == "svc":
        return {"hmac": False}
    if provider == "sendgrid":
        return {"apiKey": f"SG.{chars(rng, 22)}.{chars(rng, 43)}", **sender}
    if provider == "ses":
        return {**aws, "region": "eu-west-1", **sender}
    if provider == "postmark":
        return {"apiKey": str(uuid.UUID(int=rng.getrandbits(128), version=4)), **sender}
    if provider == "twilio":
        return {
            "accountSid": "AC" + chars(rng, 32, HEX),
            "token": chars(rng, 32, HEX),
            "from": "+1415555" + digits(rng, 4),
        }
    if provider == "sns":
        return {**aws, "region": "us-east-1", "senderId": slug.upper()[:11]}
    if provider == "slack":
        return {
            "applicationId": "A0" + chars(rng, 9, UPPER),
            "clientId": f"{digits(rng, 12)}.{digits(rng, 13)}",
            "secretKey": chars(rng, 32, HEX),
            "redirectUrl": f"https://app.{slug}.example/integrations/slack/callback",
        }
    if provider == "fcm":
        account = {
            "type": "service_account",
            "project_id": f"{slug}-mobile",
            "private_key_id": chars(rng, 40, HEX),
            "private_key": _private_key(rng),
            "client_email": f"firebase-adminsdk@{slug}-mobile.iam.gserviceaccount.com",
        }
        return {"serviceAccount": json.dumps(account)}
    if provider == "apns":
        return {
            "secretKey": _private_key(rng),
            "apiKey": chars(rng, 10, UPPER),
            "projectName": chars(rng, 10, UPPER),
            "applicationId": f"com.{slug}.app",
            "secure": True,
        }
    if provider == "expo":
        return {"apiKey": chars(rng, 40)}
    return {}  # chat-webhook, msteams: the subscriber's webhook URL is the credential


CHAT_PROVIDERS = ("slack", "chat-webhook")
PUSH_PROVIDERS = ("fcm", "apns", "expo")
PLANS = ("free", "free", "starter", "pro", "pro", "team", "enterprise")
SIGNUP_SOURCES = ("web", "web", "ios", "android", "referral", "sales", "partner")


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
            "resetUrl": f"https://app.example.com/reset?token={chars(rng, 24, HEX)}",
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
        lambda rng, s, t: {"code": digits(rng, 6), "expiresInMinutes": 10},
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
            "trackingNumber": chars(rng, 18, UPPER),
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
            "invoiceId": f"in_{chars(rng, 14)}",
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
            "commentId": f"cmt_{chars(rng, 10, HEX)}",
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
            "objectId": f"obj_{chars(rng, 10, HEX)}",
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


PUSH_PROVIDER_IDS = {"fcm", "apns", "expo", "one-signal", "pushpad", "pusher-beams", "push-webhook"}
