"""The activity feed: ``GET /v1/notifications``, paged by ``page``/``limit`` within a time window.

Each page is one indexed query; the response is built by joining the stored JSON documents, so
no document is parsed or re-encoded.
"""

import json
from datetime import datetime, timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query

from toolkit.sandbox.clock import iso, parse_instant
from toolkit.sandbox.routes_base import (
    ApiError,
    Service,
    Tenant,
    error_responses,
    raw_json_response,
)
from toolkit.sandbox.store import CHANNEL_BITS, RETENTION_DAYS
from toolkit.sandbox.validation import ActivityPage, NotificationChannel, Severity

#: A window may start this much before the retention limit without a 402: a client computing
#: "now minus retention" on its own clock is a little behind by the time the request arrives.
RETENTION_GRACE = timedelta(minutes=10)
#: Retention of a plan missing from ``RETENTION_DAYS``.
DEFAULT_RETENTION_DAYS = 1
#: Larger skips answer an empty page (SQLite integers are 64-bit).
MAX_OFFSET = 2**62


def window(tenant: Tenant, now: datetime, after: str | None, before: str | None) -> tuple[str, str]:
    """The ``[after, before]`` window as stored-time strings; 400 or 402 when it is not allowed."""
    days = RETENTION_DAYS.get(tenant.plan, DEFAULT_RETENTION_DAYS)
    earliest = now - timedelta(days=days)
    start = earliest if after is None else _instant("after", after)
    end = now if before is None else _instant("before", before)
    if start > end:
        raise ApiError(400, "The 'after' parameter must not be later than the 'before' parameter.")
    if start < earliest - RETENTION_GRACE:
        raise ApiError(
            402,
            "Requested date range exceeds your plan's retention period. The"
            f" {tenant.plan} plan keeps {days} day(s) of activity: 'after' must not be earlier"
            f" than {iso(earliest)}.",
        )
    return iso(start), iso(end)


def _instant(name: str, value: str) -> datetime:
    try:
        return parse_instant(value)
    except (ValueError, OverflowError):
        raise ApiError(
            400,
            f"Invalid date format for parameter '{name}': {value}. Use an ISO 8601 date or"
            " date-time, e.g. 2026-11-01T12:00:00.000Z.",
        ) from None


class FeedQuery:
    """The ``WHERE`` clause of one feed request, built filter by filter."""

    def __init__(self, environment_id: str, start: str, end: str):
        self.environment_id = environment_id
        self.conditions = ["environment_id = ?", "created_at >= ?", "created_at <= ?"]
        self.params: list[Any] = [environment_id, start, end]

    def add(self, condition: str, *params: Any) -> None:
        self.conditions.append(condition)
        self.params.extend(params)

    def sql(self) -> str:
        return (
            "SELECT doc FROM notifications WHERE " + " AND ".join(self.conditions) +
            " ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?"
        )  # fmt: skip


def _page(docs: list[str], limit: int, page: int) -> str:
    more = "true" if len(docs) == limit else "false"
    return f'{{"hasMore":{more},"data":[{",".join(docs)}],"pageSize":{limit},"page":{page}}}'


def register(router: APIRouter, service: Service) -> None:
    """Add the activity feed to ``router``."""
    TenantDep = Annotated[Tenant, Depends(service.tenant)]

    @router.get(
        "/v1/notifications",
        operation_id="listNotifications",
        summary="List all events",
        response_model=ActivityPage,
        responses=error_responses(402),
    )
    def list_notifications(
        tenant: TenantDep,
        channels: Annotated[list[NotificationChannel], Query()] = None,
        templates: Annotated[list[str], Query()] = None,
        emails: Annotated[list[str], Query()] = None,
        search: Annotated[str, Query(deprecated=True)] = None,
        subscriberIds: Annotated[list[str], Query()] = None,
        severity: Annotated[list[Severity], Query()] = None,
        page: Annotated[int, Query(ge=0)] = 0,
        limit: Annotated[int, Query(ge=1, le=50)] = 10,
        transactionId: str = None,
        topicKey: str = None,
        after: str = None,
        before: str = None,
    ):
        start, end = window(tenant, service.now(), after, before)
        query = FeedQuery(tenant.environment_id, start, end)
        if channels:
            query.add("channel_mask & ? != 0", sum(CHANNEL_BITS[c] for c in set(channels)))
        if templates:
            query.add("template_id IN (SELECT value FROM json_each(?))", json.dumps(templates))
        if severity:
            none = " OR severity IS NULL" if "none" in severity else ""
            query.add(
                f"(severity IN (SELECT value FROM json_each(?)){none})",
                json.dumps(sorted(set(severity))),
            )
        if transactionId is not None:
            query.add("transaction_id = ?", transactionId)
        if topicKey is not None:
            query.add(
                "id IN (SELECT notification_id FROM notification_topics"
                " WHERE environment_id = ? AND topic_key = ?)",
                tenant.environment_id,
                topicKey,
            )
        if search:
            query.add(
                "(transaction_id = ? OR subscriber_id IN (SELECT id FROM subscribers"
                " WHERE environment_id = ? AND (instr(email, ?) > 0 OR instr(subscriber_id, ?) > 0)))",
                search,
                tenant.environment_id,
                search,
                search,
            )
        with service.store.read() as db:
            if emails or subscriberIds:
                ids = [
                    row[0]
                    for row in db.execute(
                        "SELECT id FROM subscribers WHERE environment_id = ? AND"
                        " (email IN (SELECT value FROM json_each(?))"
                        " OR subscriber_id IN (SELECT value FROM json_each(?)))",
                        (tenant.environment_id, json.dumps(emails or []),
                         json.dumps(subscriberIds or [])),
                    )
                ]  # fmt: skip
                if not ids:
                    return raw_json_response(_page([], limit, 0))
                query.add("subscriber_id IN (SELECT value FROM json_each(?))", json.dumps(ids))
            offset = min(page * limit, MAX_OFFSET)
            docs = [row[0] for row in db.execute(query.sql(), (*query.params, limit, offset))]
        return raw_json_response(_page(docs, limit, page))
