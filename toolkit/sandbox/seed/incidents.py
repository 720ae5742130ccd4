"""Failures and planted incidents: background provider errors, and the incident plans."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from toolkit.sandbox.seed.catalog import Catalog
from toolkit.sandbox.seed.data import BOUNCE_DOMAIN

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
