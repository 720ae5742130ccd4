"""How deliveries fail: provider error payloads, the background failures of each provider, and
the failure each kind of planted incident uses by default."""

from __future__ import annotations

import json
from dataclasses import dataclass

from toolkit.error_codes import RATE_LIMITED


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


#: A provider's error when it has none of its own in `FAILURES`.
GENERIC_OUTAGE = Failure(
    PROVIDER_ERROR, json.dumps({"status": 503, "message": "Service Unavailable"}), "503",
    transient=True,
)  # fmt: skip
GENERIC_REJECTION = Failure(
    DELIVERY_FAILED, json.dumps({"status": 400, "message": "Bad Request"}), "400"
)
#: The outage failure of a provider, when it is not the first transient one in `FAILURES`.
OUTAGES = {"twilio": TWILIO_OUTAGE}


def outage_failure(provider: str, code: str | None = None) -> Failure:
    """The failure of ``provider``'s sends during an outage (retried, and failing again): its
    first transient failure that is not a rate limit (a provider throttling is up)."""
    if code is not None:
        return coded_failure(provider, code, transient=True)
    own = [f for f in FAILURES.get(provider, [])
           if f.transient and not RATE_LIMITED.search(f"{f.code} {f.raw}")]  # fmt: skip
    return OUTAGES.get(provider) or (own[0] if own else GENERIC_OUTAGE)


def rejection_failure(provider: str, code: str | None = None) -> Failure:
    """A failure of ``provider`` that is not retried (a rejected send): its first such one."""
    if code is not None:
        return coded_failure(provider, code, transient=False)
    own = [f for f in FAILURES.get(provider, []) if not f.transient and not f.after_send]
    return own[0] if own else GENERIC_REJECTION


def coded_failure(provider: str, code: str, *, transient: bool) -> Failure:
    """``provider``'s failure with error code ``code`` (its own one if it has it)."""
    for failure in FAILURES.get(provider, []):
        if failure.code == code:
            return failure
    detail = PROVIDER_ERROR if transient else DELIVERY_FAILED
    raw = json.dumps({"code": code, "message": f"{provider} error {code}"})
    return Failure(detail, raw, code, transient=transient)
