"""Rows of the seeded tables: environments, integrations, subscribers, topics, subscriptions and
workflows."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from toolkit.sandbox.clock import iso, parse_instant
from toolkit.sandbox.ids import IdFactory
from toolkit.sandbox.seed.data import (
    ACTIVITY_DAYS,
    ALNUM,
    CHAT_PROVIDERS,
    EMAIL_DOMAINS,
    FIRST_NAMES,
    HEX,
    INTEGRATIONS,
    LAST_NAMES,
    LOCALES,
    PLANS,
    PUSH_PROVIDERS,
    SIGNUP_SOURCES,
    TENANCY,
    TOPIC_KEYS,
    UPPER,
    WORKFLOWS,
    chars,
    digits,
    fake_credentials,
    to_json,
)

# --------------------------------------------------------------------------------------------
# Tenancy
# --------------------------------------------------------------------------------------------


def make_environments(rng: random.Random, ids: IdFactory, now: datetime) -> list[dict[str, Any]]:
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


def insert_tenancy(db: Any, environments: list[dict[str, Any]]) -> None:
    organizations = {e["organization_id"]: (e["organization"], e["plan"]) for e in environments}
    db.executemany(
        "INSERT INTO organizations (id, name, plan) VALUES (?, ?, ?)",
        [(oid, name, plan) for oid, (name, plan) in organizations.items()],
    )
    db.executemany(
        "INSERT INTO environments (id, organization_id, name, api_key) VALUES (?, ?, ?, ?)",
        [(e["id"], e["organization_id"], e["name"], e["api_key"]) for e in environments],
    )


def integration_rows(
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
                "inboundWebhookSigningKey": chars(rng, 32, HEX),
            }
        rows.append(
            {
                "id": ids.new(created),
                "environment_id": env["id"],
                "organization_id": env["organization_id"],
                "name": name,
                "identifier": f"{provider}-{chars(rng, 6, HEX)}",
                "provider_id": provider,
                "channel": channel,
                "credentials": to_json(fake_credentials(provider, rng, slug)),
                "configurations": None if configurations is None else to_json(configurations),
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
                f"https://hooks.slack.com/services/T{chars(rng, 8, UPPER)}/"
                f"B{chars(rng, 10, UPPER)}/{chars(rng, 24)}"
            )
        else:
            url = f"https://hooks.{slug}-ops.example/notify/{chars(rng, 16, HEX)}"
        channels.append(_channel_setting(provider, {"webhookUrl": url}, integrations))
    if rng.random() < 0.65:
        provider = rng.choices(PUSH_PROVIDERS, [5, 3, 2])[0]
        tokens = [_push_token(rng, provider) for _ in range(rng.choices([1, 2], [4, 1])[0])]
        channels.append(_channel_setting(provider, {"deviceTokens": tokens}, integrations))
    return channels


def _push_token(rng: random.Random, provider: str) -> str:
    if provider == "fcm":
        return f"{chars(rng, 22)}:APA91b{chars(rng, 134, ALNUM + '-_')}"
    if provider == "apns":
        return chars(rng, 64, HEX)
    return f"ExponentPushToken[{chars(rng, 22)}]"


def subscriber_rows(
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
        locale, zones, prefix, length, _ = rng.choices(LOCALES, [x[4] for x in LOCALES])[0]
        first, last = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)
        email = _email(rng, first, last, taken) if rng.random() < 0.97 else None
        phone = prefix + digits(rng, length) if rng.random() < 0.85 else None
        if phone and prefix == "+1":
            phone = f"+1{rng.randrange(201, 990)}{digits(rng, 7)}"
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
                "data": to_json(
                    {
                        "plan": rng.choice(PLANS),
                        "signupSource": rng.choice(SIGNUP_SOURCES),
                        "accountId": f"acct_{chars(rng, 12, HEX)}",
                        "marketingOptIn": rng.random() < 0.4,
                    }
                ),
                "channels": to_json(_subscriber_channels(rng, by_provider, slug)),
                "is_online": int(online),
                "last_online_at": iso(last_online),
                "version": rng.randrange(4),
                "deleted": 0,
                "created_at": iso(when),
                "updated_at": iso(when + (now - when) * rng.random()),
            }
        )
    return rows


def topic_rows(
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


def subscription_rows(
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


def workflow_rows(
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
                "template": to_json(template),
                "steps": to_json(steps),
                "created_at": iso(created),
            }
        )
    return rows
