"""Integration operations: create (201) and soft delete."""

import hashlib
import json
import re
import sqlite3
from typing import Annotated, Any

from fastapi import APIRouter, Depends

from toolkit.sandbox.clock import iso
from toolkit.sandbox.routes_base import (
    ApiError,
    Service,
    Tenant,
    dumps,
    error_responses,
    json_response,
)
from toolkit.sandbox.validation import IntegrationCreate, IntegrationEnvelope, IntegrationList

#: Display names of well-known providers: the default ``name`` of a new integration.
DISPLAY_NAMES = {
    "svc": "In-App",
    "sendgrid": "SendGrid",
    "ses": "Amazon SES",
    "sns": "Amazon SNS",
    "msteams": "MS Teams",
    "fcm": "Firebase Cloud Messaging",
    "apns": "Apple Push Notification Service",
    "expo": "Expo Push",
    "svc-email": "Email",
    "svc-sms": "SMS",
}
#: Channels whose integrations take part in the primary rule.
PRIMARY_CHANNELS = ("email", "sms")
_SUFFIX_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"


def integration_doc(row: sqlite3.Row, *, hide_credentials: bool = False) -> dict[str, Any]:
    """The Integration object of an ``integrations`` row."""
    doc = {
        "_id": row["id"],
        "_environmentId": row["environment_id"],
        "_organizationId": row["organization_id"],
        "name": row["name"],
        "identifier": row["identifier"],
        "providerId": row["provider_id"],
        "channel": row["channel"],
        "credentials": {} if hide_credentials else json.loads(row["credentials"]),
        "active": bool(row["active"]),
        "deleted": bool(row["deleted"]),
        "primary": bool(row["is_primary"]),
        "createdAt": row["created_at"],
        "updatedAt": row["updated_at"],
    }
    for key, column in (("configurations", "configurations"), ("conditions", "conditions")):
        if row[column] is not None:
            doc[key] = json.loads(row[column])
    for key, column in (("deletedAt", "deleted_at"), ("deletedBy", "deleted_by")):
        if row[column] is not None:
            doc[key] = row[column]
    return doc


def display_name(provider_id: str) -> str:
    """The provider's display name, else its id in title case (``chat-webhook`` → Chat Webhook)."""
    return DISPLAY_NAMES.get(provider_id) or provider_id.replace("-", " ").title()


def api_user(tenant: Tenant) -> str:
    """Id of the (pseudo) user behind an API key: what ``deletedBy`` records."""
    return hashlib.sha256(f"api-key-user:{tenant.environment_id}".encode()).hexdigest()[:24]


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "integration"


def _identifier_taken(db: sqlite3.Connection, tenant: Tenant, identifier: str) -> bool:
    return (
        db.execute(
            "SELECT 1 FROM integrations WHERE environment_id = ? AND identifier = ? AND deleted = 0",
            (tenant.environment_id, identifier),
        ).fetchone()
        is not None
    )


def _becomes_primary(db: sqlite3.Connection, tenant: Tenant, channel: str, active: bool) -> bool:
    """Only an active email/sms integration, and only when its channel has no active one yet."""
    if not active or channel not in PRIMARY_CHANNELS:
        return False
    other = db.execute(
        "SELECT 1 FROM integrations WHERE environment_id = ? AND channel = ? AND active = 1"
        " AND deleted = 0 LIMIT 1",
        (tenant.environment_id, channel),
    ).fetchone()
    return other is None


def register(router: APIRouter, service: Service) -> None:
    """Add create and delete integration to ``router``."""
    TenantDep = Annotated[Tenant, Depends(service.tenant)]

    def new_identifier(db: sqlite3.Connection, tenant: Tenant, name: str) -> str:
        while True:
            suffix = "".join(service.rng.choices(_SUFFIX_ALPHABET, k=5))
            identifier = f"{_slug(name)}-{suffix}"
            if not _identifier_taken(db, tenant, identifier):
                return identifier

    @router.post(
        "/v1/integrations",
        status_code=201,
        operation_id="createIntegration",
        summary="Create an integration",
        response_model=IntegrationEnvelope,
        responses=error_responses(403, 409),
    )
    def create_integration(body: IntegrationCreate, tenant: TenantDep):
        if body.environmentId is not None and body.environmentId != tenant.environment_id:
            raise ApiError(403, "The API key cannot create integrations in another environment")
        name = body.name or display_name(body.providerId)
        active = bool(body.active)
        now = iso(service.now())
        with service.store.write() as db:
            if body.identifier is not None and _identifier_taken(db, tenant, body.identifier):
                raise ApiError(409, "Integration with identifier already exists")
            row = {
                "id": service.ids.new(service.now()),
                "environment_id": tenant.environment_id,
                "organization_id": tenant.organization_id,
                "name": name,
                "identifier": body.identifier or new_identifier(db, tenant, name),
                "provider_id": body.providerId,
                "channel": body.channel,
                "credentials": dumps(_dump(body.credentials) or {}),
                "configurations": _json_or_null(_dump(body.configurations)),
                "conditions": _json_or_null(
                    None if body.conditions is None else [_dump(c) for c in body.conditions]
                ),
                "active": int(active),
                "is_primary": int(_becomes_primary(db, tenant, body.channel, active)),
                "created_at": now,
                "updated_at": now,
            }
            db.execute(
                f"INSERT INTO integrations ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
                tuple(row.values()),
            )
            stored = db.execute("SELECT * FROM integrations WHERE id = ?", (row["id"],)).fetchone()
        return json_response({"data": integration_doc(stored)}, 201)

    @router.delete(
        "/v1/integrations/{integrationId}",
        operation_id="deleteIntegration",
        summary="Delete an integration",
        response_model=IntegrationList,
        responses=error_responses(404),
    )
    def delete_integration(integrationId: str, tenant: TenantDep):
        now = iso(service.now())
        with service.store.write() as db:
            updated = db.execute(
                "UPDATE integrations SET deleted = 1, deleted_at = ?, deleted_by = ?, updated_at = ?"
                " WHERE id = ? AND environment_id = ? AND deleted = 0",
                (now, api_user(tenant), now, integrationId, tenant.environment_id),
            ).rowcount
            if not updated:
                raise ApiError(404, f"Entity with id {integrationId} not found")
            rows = db.execute(
                "SELECT * FROM integrations WHERE environment_id = ? AND deleted = 0"
                " ORDER BY created_at, id",
                (tenant.environment_id,),
            ).fetchall()
        return json_response({"data": [integration_doc(r, hide_credentials=True) for r in rows]})


def _dump(model: Any) -> Any:
    return None if model is None else model.model_dump(by_alias=True, exclude_unset=True)


def _json_or_null(value: Any) -> str | None:
    return None if value is None else dumps(value)
