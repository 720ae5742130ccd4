"""The catalog a `NotificationFactory` draws from, built from table rows (by populate and by live
traffic)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from toolkit.sandbox.seed.data import PUSH_PROVIDER_IDS, SPECS, WorkflowSpec
from toolkit.sandbox.seed.tenancy import channel_providers

# --------------------------------------------------------------------------------------------
# The catalog a factory draws from (built from table rows, by populate and by live traffic)
# --------------------------------------------------------------------------------------------


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
