"""How the toolkit writes things for people: provider, channel and incident-kind names, times,
windows, percents and chances. One definition each, shared by the charts, the report and the
incidents' sentences.

>>> provider_name("sendgrid"), channel_name("in_app"), kind_name("provider_outage")
('SendGrid', 'in-app', 'provider outage')
>>> moment(pd.Timestamp("2026-11-20T01:36:25.796Z"))
'Nov 20, 01:36 UTC'
"""

from __future__ import annotations

import math
from datetime import datetime

import pandas as pd

__all__ = [
    "CHANNEL_NAMES",
    "ONGOING",
    "PROVIDER_NAMES",
    "chance",
    "channel_name",
    "kind_name",
    "moment",
    "percent",
    "provider_name",
    "window",
]

#: How an incident's sentence marks it as still going on at the end of the window read.
ONGOING = " (ongoing)"

#: Providers whose name is not their id with a capital letter.
PROVIDER_NAMES = {
    "sendgrid": "SendGrid",
    "ses": "Amazon SES",
    "sns": "Amazon SNS",
    "fcm": "FCM",
    "apns": "APNs",
    "msteams": "MS Teams",
    "one-signal": "OneSignal",
    "chat-webhook": "Chat webhook",
    "push-webhook": "Push webhook",
    "svc": "In-app (built-in)",
}

#: Channels as a sentence writes them.
CHANNEL_NAMES = {"sms": "SMS", "email": "email", "push": "push", "chat": "chat", "in_app": "in-app"}

_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


def provider_name(provider: str | None) -> str:
    """``"sendgrid"`` -> ``"SendGrid"``, ``"twilio"`` -> ``"Twilio"``; None -> ``"(none)"``."""
    if provider is None or pd.isna(provider) or provider == "":
        return "(none)"
    if provider in PROVIDER_NAMES:
        return PROVIDER_NAMES[provider]
    return provider[0].upper() + provider[1:] if provider.isalpha() else provider


def channel_name(channel: str | None) -> str:
    """``"in_app"`` -> ``"in-app"``, ``"sms"`` -> ``"SMS"``; others as they are."""
    if channel is None or pd.isna(channel):
        return "(none)"
    return CHANNEL_NAMES.get(channel, channel)


def kind_name(kind: str) -> str:
    """An incident kind in words: ``"provider_outage"`` -> ``"provider outage"``."""
    return str(kind).replace("_", " ")


def day(at: datetime) -> str:
    """``Nov 3``: a date as the summaries write it (strftime's flag for no zero is not portable:
    Windows refuses it)."""
    return f"{at:%b} {at.day}"


def moment(at: datetime | str | None, seconds: bool = False) -> str:
    """A time as a person reads it: ``Nov 20, 01:36 UTC`` (``01:36:25`` with ``seconds``)."""
    if at is None or pd.isna(at):
        return "-"
    at = pd.Timestamp(at)
    at = at.tz_localize("UTC") if at.tzinfo is None else at.tz_convert("UTC")
    return f"{day(at)}, {at:%H:%M:%S}" if seconds else f"{day(at)}, {at:%H:%M} UTC"


def window(after: datetime | str, before: datetime | str) -> str:
    """``Nov 17, 01:06 to Nov 24, 01:06 UTC (7 days)``: the ends without a repeated day, and
    the length."""
    start, end = pd.Timestamp(after), pd.Timestamp(before)
    first = moment(start).removesuffix(" UTC")
    last = f"{end.tz_convert('UTC'):%H:%M} UTC" if start.date() == end.date() else moment(end)
    return f"{first} to {last} ({_length(end - start)})"


def percent(share: float) -> str:
    """A share in whole percents, or to a tenth under 1% (a rare error's usual rate is not
    0%): ``0.07`` -> ``"7%"``, ``0.0034`` -> ``"0.3%"``, ``0.0002`` -> ``"under 0.1%"``."""
    if 0 < share < 0.0005:
        return "under 0.1%"
    return f"{share:.1%}" if 0 < share < 0.0095 else f"{share:.0%}"


def chance(p_value: float) -> str:
    """How often a result this far from the baseline comes by chance: ``2.3e-114`` ->
    ``"1 in 10¹¹⁴"``, ``0.004`` -> ``"1 in 250"``."""
    if p_value is None or pd.isna(p_value) or p_value <= 0:
        return "less than 1 in 10³⁰⁰"
    if p_value >= 1e-6:
        return f"1 in {max(1, round(1 / p_value)):,}"
    return "1 in 10" + str(round(-math.log10(p_value))).translate(_SUPERSCRIPT)


def _length(span: pd.Timedelta) -> str:
    hours = span / pd.Timedelta(hours=1)
    if hours >= 48:
        days = hours / 24
        return f"{days:.0f} days" if abs(days - round(days)) < 0.05 else f"{days:.1f} days"
    return f"{hours:.0f} hours" if abs(hours - round(hours)) < 0.05 else f"{hours:.1f} hours"
