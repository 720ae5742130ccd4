"""Planted incidents: what can be planted (`IncidentSpec`), and the plans a factory follows.

``incidents="default"`` plants three incidents relative to ``now`` (an SMS outage, a bounce
spike of one email domain, a batch of push tokens gone invalid); ``"none"`` plants nothing (the
background failures stay: random, a few percent); a list of specs plants exactly those. Each
kind (``start`` is an ISO instant or a duration before now such as ``"30h"``; ``duration`` a
duration or ``"end"``, up to now):

- ``provider_outage``: sends of ``provider_id`` fail (``failure_rate`` of its jobs, default all;
  retries fail too) with the provider's outage error or ``error_code``;
- ``error_spike``: one error code (``error_code``, default the provider's first rejection),
  not retried, on ``failure_rate`` (default 0.5) of the provider's jobs in a short period
  (default 45 minutes);
- ``domain_bounces``: email to ``domain`` (default northwind.example) bounces hard;
- ``stale_credentials``: ``share`` (default 0.3) of the subscribers whose push tokens or chat
  webhook belong to ``provider_id`` are broken from ``start`` on (to now unless given a
  duration): every send to them fails with the provider's not-registered/revoked error;
- ``volume_drop``: ``channel`` (or only its ``provider_id``) sends nothing: triggers that
  would deliver there are replaced by others;
- ``latency_degradation``: the provider's sends take ``factor`` times longer (default 10)
  plus ``delay`` seconds.

Any provider of the seeded integrations can be named; naming an email or SMS provider that is
not the channel's primary routes a share (`ROUTED_SHARE`) of that channel's sends through it for
the whole activity, so that it has a normal period to compare with.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields, replace
from datetime import datetime, timedelta
from typing import Any

from toolkit.sandbox.clock import iso, parse_instant
from toolkit.sandbox.seed.catalog import Catalog
from toolkit.sandbox.seed.data import BOUNCE_DOMAIN, EMAIL_DOMAINS, INTEGRATIONS
from toolkit.sandbox.seed.failures import (
    HARD_BOUNCE,
    TOKEN_NOT_REGISTERED,
    TWILIO_OUTAGE,
    Failure,
    outage_failure,
    rejection_failure,
)

KINDS = (
    "provider_outage",
    "error_spike",
    "domain_bounces",
    "stale_credentials",
    "volume_drop",
    "latency_degradation",
)
#: Kinds whose deliveries fail.
FAILING = frozenset(KINDS[:4])
#: Share of an email/SMS channel's sends routed through a named provider that is not its primary.
ROUTED_SHARE = 0.3
#: The subscriber profile key a channel needs: an address, or the chat/push provider (in-app: none).
ADDRESS = {"email": "email", "sms": "phone", "chat": "chat", "push": "push"}
#: Active providers of each channel in the seeded integrations; the first is the primary.
PROVIDERS: dict[str, list[str]] = {}
for _channel, _provider, _name, _active in INTEGRATIONS:
    if _active:
        PROVIDERS.setdefault(_channel, []).append(_provider)
#: The provider named by default for a channel.
DEFAULT_PROVIDER = {channel: providers[0] for channel, providers in PROVIDERS.items()}
DEFAULT_PROVIDER.update(chat="slack", push="fcm")
DEFAULTS = {  # kind -> (start before now, duration)
    "provider_outage": ("48h", "3h"),
    "error_spike": ("48h", "45m"),
    "domain_bounces": ("48h", "6h"),
    "stale_credentials": ("24h", "end"),
    "volume_drop": ("48h", "3h"),
    "latency_degradation": ("48h", "3h"),
}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(w|d|h|m|s)")
_UNIT = {"w": 604800, "d": 86400, "h": 3600, "m": 60, "s": 1}


def parse_duration(name: str, text: str) -> timedelta:
    """``"3h"``, ``"1h30m"``, ``"2d"``, ``"45m"``, ``"90s"`` as a positive timedelta."""
    compact = text.replace(" ", "") if isinstance(text, str) else ""
    parts = _DURATION.findall(compact)
    if not parts or "".join(n + u for n, u in parts) != compact:
        raise ValueError(f"{name} must be a duration like '3h' or '1h30m', got {text!r}")
    value = timedelta(seconds=sum(float(n) * _UNIT[u] for n, u in parts))
    if value <= timedelta(0):
        raise ValueError(f"{name} must be longer than zero, got {text!r}")
    return value


@dataclass(frozen=True)
class IncidentSpec:
    """An incident to plant (the keys of a spec dict; see the module's docstring).

    ``channel`` or ``provider_id`` may be left out: each is derived from the other (a channel's
    default provider is its primary, ``slack`` for chat, ``fcm`` for push).
    """

    kind: str
    channel: str | None = None
    provider_id: str | None = None
    start: str | datetime | None = None
    duration: str | None = None
    failure_rate: float | None = None
    error_code: str | None = None
    domain: str | None = None
    share: float | None = None
    factor: float | None = None
    delay: float | None = None
    name: str | None = None
    summary: str | None = None

    @classmethod
    def of(cls, value: IncidentSpec | Mapping[str, Any]) -> IncidentSpec:
        """A spec from a dict (unknown keys refused), checked and completed (`checked`)."""
        if isinstance(value, IncidentSpec):
            return value.checked()
        if not isinstance(value, Mapping):
            raise ValueError(f"an incident spec must be a dict or IncidentSpec, got {value!r}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(value) - known)
        if unknown:
            raise ValueError(f"unknown incident spec key(s) {unknown}; known: {sorted(known)}")
        if "kind" not in value:
            raise ValueError(f"an incident spec needs a 'kind', one of {list(KINDS)}")
        return cls(**value).checked()

    def checked(self) -> IncidentSpec:
        """This spec with channel, provider and defaults filled in; ValueError when invalid."""
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {list(KINDS)}, got {self.kind!r}")
        channel, provider = self.channel, self.provider_id
        if channel is None and provider is None:
            channel = {"domain_bounces": "email", "stale_credentials": "push"}.get(self.kind)
            if channel is None:
                raise ValueError(f"{self.kind} needs a channel or a provider_id")
        if channel is None:
            channel = next((c for c, ps in PROVIDERS.items() if provider in ps), None)
            if channel is None:
                known = sorted({p for ps in PROVIDERS.values() for p in ps})
                raise ValueError(f"provider_id must be one of {known}, got {provider!r}")
        if channel not in PROVIDERS:
            raise ValueError(f"channel must be one of {list(PROVIDERS)}, got {channel!r}")
        if provider is None and self.kind != "volume_drop":
            provider = DEFAULT_PROVIDER[channel]
        if provider is not None and provider not in PROVIDERS[channel]:
            raise ValueError(
                f"provider_id must be one of {PROVIDERS[channel]} for {channel}, got {provider!r}"
            )
        if self.kind == "domain_bounces" and channel != "email":
            raise ValueError(f"domain_bounces is an email incident, got channel {channel!r}")
        if self.kind == "stale_credentials" and channel not in ("push", "chat"):
            raise ValueError(f"stale_credentials needs channel push or chat, got {channel!r}")
        domains = [domain for domain, _, _ in EMAIL_DOMAINS]
        if self.domain is not None and (
            self.kind != "domain_bounces" or self.domain not in domains
        ):
            raise ValueError(f"domain is for domain_bounces, one of {domains}; got {self.domain!r}")
        for name in ("failure_rate", "share"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not 0 < value <= 1):
                raise ValueError(f"{name} must be a number in (0, 1], got {value!r}")
        for name in ("factor", "delay"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not 0 <= value < 1e6):
                raise ValueError(f"{name} must be a number >= 0, got {value!r}")
        start, duration = DEFAULTS[self.kind]
        start = self.start if self.start is not None else start
        if isinstance(start, str) and not _DURATION.match(start.replace(" ", "")):
            try:
                start = parse_instant(start)
            except ValueError:
                raise ValueError(
                    f"start must be an ISO instant or a duration, got {start!r}"
                ) from None
        elif isinstance(start, str):
            parse_duration("start", start)
        elif isinstance(start, datetime):
            start = parse_instant(start)
        else:
            raise ValueError(f"start must be an ISO instant or a duration, got {start!r}")
        duration = self.duration if self.duration is not None else duration
        if duration != "end":
            parse_duration("duration", duration)
        return replace(self, channel=channel, provider_id=provider, start=start, duration=duration)

    def window(self, now: datetime) -> tuple[datetime, datetime]:
        """``(start, end)`` of a checked spec for data ending at ``now``."""
        start = self.start
        if not isinstance(start, datetime):
            start = now - parse_duration("start", start)
        end = now if self.duration == "end" else start + parse_duration("duration", self.duration)
        return start, end

    def key(self, now: datetime) -> dict[str, Any]:
        """The spec as JSON data relative to ``now`` (an absolute start as an offset): a cache key."""
        data = asdict(self)
        if isinstance(self.start, datetime):
            data["start"] = f"{(now - self.start).total_seconds()}s before now"
        return data


@dataclass(frozen=True)
class IncidentPlan:
    """A planted incident as the factory follows it, in ``[start, end)``.

    Failing kinds fail ``failure_rate`` of the matching deliveries of ``provider_id`` (decided
    once per job) with ``failure``, optionally only for one email ``domain`` or a set of
    subscriber ids; ``volume_drop`` suppresses them; ``latency_degradation`` slows them.
    ``provider_id`` None matches every provider of the channel.
    """

    name: str
    summary: str
    channel: str
    provider_id: str | None
    start: datetime
    end: datetime
    failure: Failure | None
    domain: str | None = None
    subscribers: frozenset[str] = frozenset()
    kind: str = "provider_outage"
    failure_rate: float = 1.0
    factor: float = 1.0
    delay: float = 0.0

    def matches(self, channel: str, provider: str, subscriber: dict[str, Any]) -> bool:
        """Whether a delivery on ``channel`` through ``provider`` to ``subscriber`` is concerned."""
        return (
            channel == self.channel
            and (self.provider_id is None or provider == self.provider_id)
            and (self.domain is None or subscriber["domain"] == self.domain)
            and (not self.subscribers or subscriber["id"] in self.subscribers)
        )

    def applies(self, channel: str, provider: str, at: datetime, subscriber: dict) -> bool:
        return self.start <= at < self.end and self.matches(channel, provider, subscriber)


def plan_incidents(rng: random.Random, catalog: Catalog, now: datetime) -> list[IncidentPlan]:
    """The three default incidents, placed relative to ``now``."""
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
            kind="domain_bounces",
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
            kind="stale_credentials",
        ),
    ]


def plan_specs(
    specs: list[IncidentSpec], rng: random.Random, catalog: Catalog, now: datetime
) -> list[IncidentPlan]:
    """The plans of checked ``specs`` for data ending at ``now`` (names made unique)."""
    plans, names = [], set()
    for index, spec in enumerate(specs):
        start, end = spec.window(now)
        name = spec.name or f"{spec.kind.replace('_', '-')}-{spec.provider_id or spec.channel}"
        if name in names:
            name = f"{name}-{index + 1}"
        names.add(name)
        plans.append(_plan(spec, name, start, min(end, now), rng, catalog))
    return plans


def _plan(
    spec: IncidentSpec,
    name: str,
    start: datetime,
    end: datetime,
    rng: random.Random,
    catalog: Catalog,
) -> IncidentPlan:
    kind, provider, channel = spec.kind, spec.provider_id, spec.channel
    failure, subscribers, domain = None, frozenset(), None
    where = provider or channel
    if kind == "provider_outage":
        failure = outage_failure(provider, spec.error_code)
        summary = f"{where} outage: sends fail with {failure.code}"
    elif kind == "error_spike":
        failure = rejection_failure(provider, spec.error_code)
        summary = f"{where} error spike: {failure.code} on part of the sends"
    elif kind == "domain_bounces":
        failure, domain = HARD_BOUNCE, spec.domain or BOUNCE_DOMAIN
        summary = f"Hard bounces from {where} for every {domain} mailbox"
    elif kind == "stale_credentials":
        failure = rejection_failure(provider, spec.error_code)
        if provider == "fcm" and spec.error_code is None:
            failure = TOKEN_NOT_REGISTERED
        own = sorted(s["id"] for s in catalog.subscribers if s[ADDRESS[channel]] == provider)
        count = max(1, round(len(own) * (spec.share or 0.3))) if own else 0
        subscribers = frozenset(rng.sample(own, count))
        summary = f"{where} credentials of {count} subscribers are broken ({failure.code})"
    elif kind == "volume_drop":
        summary = f"{where} sends nothing"
    else:
        factor = spec.factor if spec.factor is not None else (1.0 if spec.delay else 10.0)
        summary = f"{where} deliveries take {factor:g}x longer" + (
            f" plus {spec.delay:g} s" if spec.delay else ""
        )
    default_rate = 0.5 if kind == "error_spike" else 1.0
    return IncidentPlan(
        name,
        spec.summary or summary,
        channel,
        provider,
        start,
        end,
        failure,
        domain=domain,
        subscribers=subscribers,
        kind=kind,
        failure_rate=spec.failure_rate if spec.failure_rate is not None else default_rate,
        factor=(spec.factor if spec.factor is not None else (1.0 if spec.delay else 10.0)),
        delay=spec.delay or 0.0,
    )


def specs_of(incidents: str | list) -> list[IncidentSpec] | None:
    """Checked specs of ``start(incidents=...)``: None for ``"default"``, [] for ``"none"``."""
    if incidents == "default":
        return None
    if incidents == "none":
        return []
    if isinstance(incidents, str) or not isinstance(incidents, list | tuple):
        raise ValueError(
            f"incidents must be 'default', 'none' or a list of specs, got {incidents!r}"
        )
    return [IncidentSpec.of(spec) for spec in incidents]


def describe(plan: IncidentPlan, hits: list[tuple], environment_id: str, now: datetime) -> dict:
    """The incident as `populate` reports it, with the notifications and subscribers it hit.

    ``hits`` are ``(at, notification _id or None, subscriberId)``; a volume drop's hits are the
    notifications it suppressed (counted, with no ids).
    """
    hits = [hit for hit in hits if hit[0] <= now]
    notifications = sorted({notification for _, notification, _ in hits if notification})
    subscribers = sorted({subscriber for _, _, subscriber in hits})
    return {
        "kind": plan.kind,
        "name": plan.name,
        "summary": plan.summary,
        "environment_id": environment_id,
        "channel": plan.channel,
        "provider_id": plan.provider_id,
        "start": iso(plan.start),
        "end": iso(plan.end),
        "error_code": plan.failure.code if plan.failure else None,
        "detail": plan.failure.detail if plan.failure else None,
        "domain": plan.domain,
        "failure_rate": plan.failure_rate if plan.kind in FAILING else None,
        "failures": len(hits),
        "notifications": len(notifications) if plan.kind != "volume_drop" else len(hits),
        "subscribers": len(subscribers),
        "notification_ids": notifications,
        "subscriber_ids": subscribers,
    }
