"""The activity feed: ``GET /v1/notifications``, paged by ``page``/``limit`` within a time window.

Each page is one statement: the page's rows are chosen from an index picked for the filters
(transaction, subscribers, templates, else the feed order, which also holds the channel and
severity), then only their documents are read, and the response joins the stored JSON texts
without parsing them. On 200,000 notifications a filtered page of 50 takes 1-3 ms in the
service; a filter that matches nothing scans the window's index entries (about 40 ms).
"""

import json
from datetime import datetime, timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, Field

from toolkit.sandbox.clock import iso, parse_instant
from toolkit.sandbox.routes_base import (
    ApiError,
    ParametersRoute,
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
#: How ``after``/``before`` are documented (the route parses them itself: a bad one is a 400).
DATE_TIME = {"format": "date-time"}
#: Larger skips answer an empty page (SQLite integers are 64-bit).
MAX_OFFSET = 2**62


def window(tenant: Tenant, now: datetime, after: str | None, before: str | None) -> tuple[str, str]:
    """The ``[after, before]`` window as stored-time strings; 400 or 402 when it is not allowed."""
    days = RETENTION_DAYS.get(tenant.plan, DEFAULT_RETENTION_DAYS)
    earliest = now - timedelta(days=days)
    start = earliest if after is None else _instant("after", after)
    end = now if before is None else _instant("before", before)
    if after is None and end < earliest - RETENTION_GRACE:  # "start > end" would blame 'after'
        raise ApiError(
            402,
            "Requested date range exceeds your plan's retention period. The"
            f" {tenant.plan} plan keeps {days} day(s) of activity: 'before' must not be earlier"
            f" than {iso(earliest)}.",
        )
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
    """One feed request's SQL: the window, the filters, and the index that serves them best.

    The page is chosen from index data (``rowid`` in feed order), then its documents are read:
    rows outside the page are never loaded.
    """

    def __init__(self, environment_id: str, start: str, end: str):
        self.conditions = ["environment_id = ?", "created_at >= ?", "created_at <= ?"]
        self.params: list[Any] = [environment_id, start, end]
        self.index = "notifications_feed"

    def add(self, condition: str, *params: Any, index: str | None = None) -> None:
        """Add a filter; ``index`` serves it better than a scan in feed order."""
        self.conditions.append(condition)
        self.params.extend(params)
        if index is not None and INDEX_RANK[index] < INDEX_RANK[self.index]:
            self.index = index

    def sql(self) -> str:
        order = "ORDER BY created_at DESC, id DESC"
        page = (
            f"SELECT rowid FROM notifications INDEXED BY {self.index}"
            f" WHERE {' AND '.join(self.conditions)} {order} LIMIT ? OFFSET ?"
        )
        return f"SELECT doc FROM notifications WHERE rowid IN ({page}) {order}"


#: Indexes by selectivity of the filter they serve (most selective first).
INDEX_RANK = {
    "notifications_by_transaction": 0,
    "notifications_by_subscriber": 1,
    "notifications_by_template": 2,
    "notifications_feed": 3,
}


def _in(values: list[str]) -> tuple[str, str]:
    """``IN`` over a JSON array parameter (any number of values, one SQL variable)."""
    return "IN (SELECT value FROM json_each(?))", json.dumps(sorted(set(values)))


def _subscriber_ids(db: Any, environment_id: str, emails: list[str], ids: list[str]) -> list[str]:
    """Internal ids of the subscribers with one of ``emails`` or of the external ``ids``."""
    by_email, emails_json = _in(emails)
    by_id, ids_json = _in(ids)
    rows = db.execute(
        f"SELECT id FROM subscribers WHERE environment_id = ? AND email {by_email} UNION"
        f" SELECT id FROM subscribers WHERE environment_id = ? AND subscriber_id {by_id}",
        (environment_id, emails_json, environment_id, ids_json),
    )
    return [row[0] for row in rows]


def _filter(
    query: FeedQuery,
    environment_id: str,
    *,
    channels: list[str] | None,
    templates: list[str] | None,
    severity: list[str] | None,
    transaction_id: str | None,
    topic_key: str | None,
    search: str | None,
) -> None:
    """Add the filters that need no lookup."""
    if channels:
        query.add("channel_mask & ? != 0", sum(CHANNEL_BITS[c] for c in set(channels)))
    if templates:
        sql, values = _in(templates)
        query.add(f"template_id {sql}", values, index="notifications_by_template")
    if severity:
        sql, values = _in(severity)
        none = " OR severity IS NULL" if "none" in severity else ""
        query.add(f"(severity {sql}{none})", values)
    if transaction_id is not None:
        query.add("transaction_id = ?", transaction_id, index="notifications_by_transaction")
    if topic_key is not None:
        query.add(
            "id IN (SELECT notification_id FROM notification_topics"
            " WHERE environment_id = ? AND topic_key = ?)",
            environment_id,
            topic_key,
        )
    if search:  # deprecated: a transaction id, or part of an email or subscriberId
        query.add(
            "(transaction_id = ? OR subscriber_id IN (SELECT id FROM subscribers WHERE"
            " environment_id = ? AND (instr(email, ?) > 0 OR instr(subscriber_id, ?) > 0)))",
            search,
            environment_id,
            search,
            search,
        )


def _page(docs: list[str], limit: int, page: int) -> str:
    more = "true" if len(docs) == limit else "false"
    return f'{{"hasMore":{more},"data":[{",".join(docs)}],"pageSize":{limit},"page":{page}}}'


class FeedParameters(BaseModel):
    """The feed's query parameters (one model: `ParametersRoute` validates them in one call)."""

    channels: list[NotificationChannel] = None
    templates: list[str] = None
    emails: list[str] = None
    search: str = Field(None, deprecated=True)
    subscriberIds: list[str] = None
    severity: list[Severity] = None
    page: int = Field(0, ge=0)
    limit: int = Field(10, ge=1, le=50)
    transactionId: str = None
    topicKey: str = None
    after: str = Field(None, json_schema_extra=DATE_TIME)
    before: str = Field(None, json_schema_extra=DATE_TIME)


def register(router: APIRouter, service: Service) -> None:
    """Add the activity feed to ``router``."""
    TenantDep = Annotated[Tenant, Depends(service.tenant)]

    async def list_notifications(  # async: SQLite reads are fast, no thread hop
        tenant: TenantDep, query: Annotated[FeedParameters, Query()]
    ):
        given = vars(query)  # not query.search: reading a deprecated field warns
        channels, templates, emails = given["channels"], given["templates"], given["emails"]
        search, subscriberIds, severity = given["search"], given["subscriberIds"], given["severity"]
        page, limit, transactionId = given["page"], given["limit"], given["transactionId"]
        topicKey, after, before = given["topicKey"], given["after"], given["before"]
        start, end = window(tenant, service.now(), after, before)
        feed = FeedQuery(tenant.environment_id, start, end)
        _filter(
            feed,
            tenant.environment_id,
            channels=channels,
            templates=templates,
            severity=severity,
            transaction_id=transactionId,
            topic_key=topicKey,
            search=search,
        )
        with service.store.read() as db:
            if emails or subscriberIds:
                ids = _subscriber_ids(db, tenant.environment_id, emails or [], subscriberIds or [])
                if not ids:
                    return raw_json_response(_page([], limit, 0))
                sql, values = _in(ids)
                feed.add(f"subscriber_id {sql}", values, index="notifications_by_subscriber")
            offset = min(page * limit, MAX_OFFSET)
            docs = [row[0] for row in db.execute(feed.sql(), (*feed.params, limit, offset))]
        return raw_json_response(_page(docs, limit, page))

    router.add_api_route(
        "/v1/notifications",
        list_notifications,
        methods=["GET"],
        operation_id="listNotifications",
        summary="List all events",
        response_model=ActivityPage,
        responses=error_responses(402),
        route_class_override=ParametersRoute,
    )
