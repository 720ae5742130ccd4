"""Subscriber operations: update (v2), upsert credentials (v1), search and subscriptions (v2
cursor lists)."""

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query

from toolkit.sandbox.clock import iso
from toolkit.sandbox.routes_base import (
    ApiError,
    Service,
    Tenant,
    dumps,
    error_responses,
    invalid,
    json_response,
)
from toolkit.sandbox.validation import (
    MAX_DEVICE_TOKENS,
    CredentialsUpdate,
    OrderDirection,
    SearchOrderBy,
    SubscriberEnvelope,
    SubscriberPage,
    SubscriberUpdate,
    SubscriptionPage,
)

#: ``totalCount`` counts matches up to this many; beyond, ``totalCountCapped`` is true.
TOTAL_COUNT_CAP = 50_000
#: Largest ``limit`` of the subscriber search (the spec leaves it open; the subscriptions' is 100).
SEARCH_MAX_LIMIT = 100
DEFAULT_LIMIT = 10

_SUBSCRIBER_COLUMNS = {
    "firstName": "first_name",
    "lastName": "last_name",
    "email": "email",
    "phone": "phone",
    "avatar": "avatar",
    "timezone": "timezone",
    "locale": "locale",
    "data": "data",
}
_SORT_COLUMNS = {"_id": "id", "createdAt": "created_at", "updatedAt": "updated_at"}


def subscriber_doc(row: sqlite3.Row) -> dict[str, Any]:
    """The Subscriber object of a ``subscribers`` row."""
    return {
        "_id": row["id"],
        "subscriberId": row["subscriber_id"],
        "firstName": row["first_name"],
        "lastName": row["last_name"],
        "email": row["email"],
        "phone": row["phone"],
        "avatar": row["avatar"],
        "locale": row["locale"],
        "timezone": row["timezone"],
        "channels": json.loads(row["channels"]),
        "isOnline": None if row["is_online"] is None else bool(row["is_online"]),
        "lastOnlineAt": row["last_online_at"],
        "__v": row["version"],
        "data": None if row["data"] is None else json.loads(row["data"]),
        "_organizationId": row["organization_id"],
        "_environmentId": row["environment_id"],
        "deleted": bool(row["deleted"]),
        "createdAt": row["created_at"],
        "updatedAt": row["updated_at"],
    }


def _find_subscriber(db: sqlite3.Connection, tenant: Tenant, subscriber_id: str) -> sqlite3.Row:
    return db.execute(
        "SELECT * FROM subscribers WHERE environment_id = ? AND subscriber_id = ? AND deleted = 0",
        (tenant.environment_id, subscriber_id),
    ).fetchone()


# --------------------------------------------------------------------------------------------
# Cursor pagination
# --------------------------------------------------------------------------------------------


@dataclass
class CursorQuery:
    """A cursor list: ``FROM`` clause, the scope a cursor must lie in, the filters, the sort.

    ``scope`` and ``filters`` are ``(sql condition, params)`` pairs; ``sort`` is the ordering
    column, ties broken by ``id`` (the cursor column).
    """

    source: str
    columns: str
    id: str
    sort: str
    scope: list[tuple[str, Sequence[Any]]]
    filters: list[tuple[str, Sequence[Any]]] = field(default_factory=list)

    def where(self, *extra: tuple[str, Sequence[Any]]) -> tuple[str, list[Any]]:
        parts = [*self.scope, *self.filters, *extra]
        return " AND ".join(sql for sql, _ in parts), [p for _, params in parts for p in params]

    def beyond(self, op: str, key: Any, id_: str) -> tuple[str, Sequence[Any]]:
        """Condition: ``(sort, id) op (key, id_)``."""
        if self.sort == self.id:
            return f"{self.id} {op} ?", (id_,)
        return f"({self.sort}, {self.id}) {op} (?, ?)", (key, id_)


@dataclass
class Cursors:
    """The paging parameters of a request."""

    limit: int
    direction: str
    after: str | None
    before: str | None
    include_cursor: bool


@dataclass
class Page:
    rows: list[sqlite3.Row]
    next: str | None
    previous: str | None
    total: int

    def envelope(self, items: list[dict[str, Any]]) -> dict[str, Any]:
        """The paged list envelope around ``items`` (the rows as documents)."""
        return {
            "data": items,
            "next": self.next,
            "previous": self.previous,
            "totalCount": min(self.total, TOTAL_COUNT_CAP),
            "totalCountCapped": self.total > TOTAL_COUNT_CAP,
        }


def cursor_page(db: sqlite3.Connection, query: CursorQuery, cursors: Cursors) -> Page:
    """One page of a cursor list.

    ``after`` walks in the list's order, ``before`` against it (the page keeps the list's
    order); ``next``/``previous`` name the last/first row when rows follow/precede it. A cursor
    naming no item of the scope gives an empty page.
    """
    total = _count(db, query)
    descending = cursors.direction == "DESC"
    forward = cursors.before is None
    cursor = cursors.after if forward else cursors.before
    towards_smaller = descending == forward
    extra = []
    if cursor is not None:
        key = _sort_key(db, query, cursor)
        if key is None:
            return Page([], None, None, total)
        op = ("<" if towards_smaller else ">") + ("=" if cursors.include_cursor else "")
        extra.append(query.beyond(op, key[0], cursor))
    rows = _rows(db, query, extra, towards_smaller, cursors.limit + 1)
    more = len(rows) > cursors.limit
    rows = rows[: cursors.limit]
    if not forward:
        rows.reverse()
    if not rows:
        return Page([], None, None, total)
    if forward:
        follows = more
        precedes = cursor is not None and _exists(db, query, not descending, rows[0])
    else:
        follows, precedes = _exists(db, query, descending, rows[-1]), more
    return Page(
        rows,
        next=rows[-1]["_cursor"] if follows else None,
        previous=rows[0]["_cursor"] if precedes else None,
        total=total,
    )


def _sort_key(db: sqlite3.Connection, query: CursorQuery, cursor: str) -> sqlite3.Row | None:
    """The sort value of the cursor item, if the cursor names an item of the scope."""
    where = " AND ".join([*(sql for sql, _ in query.scope), f"{query.id} = ?"])
    params = [*(p for _, ps in query.scope for p in ps), cursor]
    return db.execute(f"SELECT {query.sort} FROM {query.source} WHERE {where}", params).fetchone()


def _rows(
    db: sqlite3.Connection,
    query: CursorQuery,
    extra: list[tuple[str, Sequence[Any]]],
    descending: bool,
    limit: int,
) -> list[sqlite3.Row]:
    where, params = query.where(*extra)
    order = "DESC" if descending else "ASC"
    keys = dict.fromkeys([query.sort, query.id])
    sql = (
        f"SELECT {query.columns}, {query.sort} AS _key, {query.id} AS _cursor"
        f" FROM {query.source} WHERE {where}"
        f" ORDER BY {', '.join(f'{k} {order}' for k in keys)} LIMIT ?"
    )
    return db.execute(sql, (*params, limit)).fetchall()


def _exists(db: sqlite3.Connection, query: CursorQuery, smaller: bool, row: sqlite3.Row) -> bool:
    """Whether a match lies beyond ``row`` towards smaller (or larger) keys."""
    where, params = query.where(query.beyond("<" if smaller else ">", row["_key"], row["_cursor"]))
    sql = f"SELECT 1 FROM {query.source} WHERE {where} LIMIT 1"
    return db.execute(sql, params).fetchone() is not None


def _count(db: sqlite3.Connection, query: CursorQuery) -> int:
    """Matches of the filters, counted up to one beyond the cap."""
    where, params = query.where()
    sql = f"SELECT COUNT(*) FROM (SELECT 1 FROM {query.source} WHERE {where} LIMIT ?)"
    return db.execute(sql, (*params, TOTAL_COUNT_CAP + 1)).fetchone()[0]


def _cursors(
    limit: int, direction: str, after: str | None, before: str | None, include: bool
) -> Cursors:
    if after is not None and before is not None:
        raise invalid("before", "after and before cannot be used together", before)
    return Cursors(limit, direction, after, before, include)


def _subscription_doc(row: sqlite3.Row) -> dict[str, Any]:
    subscriber = {
        "_id": row["b_id"],
        "subscriberId": row["b_subscriber_id"],
        "avatar": row["b_avatar"],
        "firstName": row["b_first_name"],
        "lastName": row["b_last_name"],
        "email": row["b_email"],
    }
    topic = {"_id": row["t_id"], "key": row["t_key"], "name": row["t_name"],
             "createdAt": row["t_created_at"], "updatedAt": row["t_updated_at"]}  # fmt: skip
    if topic["name"] is None:
        del topic["name"]
    return {"_id": row["id"], "identifier": f"tk={row['t_key']}:si={row['b_subscriber_id']}",
            "contextKeys": [], "createdAt": row["created_at"], "topic": topic,
            "subscriber": subscriber}  # fmt: skip


_SUBSCRIPTION_COLUMNS = """s.id AS id, s.created_at AS created_at, t.id AS t_id, t.key AS t_key,
t.name AS t_name, t.created_at AS t_created_at, t.updated_at AS t_updated_at, b.id AS b_id,
b.subscriber_id AS b_subscriber_id, b.avatar AS b_avatar, b.first_name AS b_first_name,
b.last_name AS b_last_name, b.email AS b_email"""

# --------------------------------------------------------------------------------------------
# Routes
# --------------------------------------------------------------------------------------------


def register(router: APIRouter, service: Service) -> None:
    """Add the four subscriber operations to ``router``."""
    TenantDep = Annotated[Tenant, Depends(service.tenant)]

    @router.patch(
        "/v2/subscribers/{subscriberId}",
        operation_id="updateSubscriber",
        summary="Update a subscriber",
        response_model=SubscriberEnvelope,
        responses=error_responses(404, 409),
    )
    def update_subscriber(subscriberId: str, body: SubscriberUpdate, tenant: TenantDep):
        changes = {name: getattr(body, name) for name in body.model_fields_set}
        if "data" in changes and changes["data"] is not None:
            changes["data"] = dumps(changes["data"])
        with service.store.write() as db:
            row = _find_subscriber(db, tenant, subscriberId)
            if row is None:
                raise ApiError(404, f"Subscriber {subscriberId} was not found")
            if changes:
                sets = ", ".join(f"{_SUBSCRIBER_COLUMNS[name]} = ?" for name in changes)
                db.execute(
                    f"UPDATE subscribers SET {sets}, version = version + 1, updated_at = ?"
                    " WHERE id = ?",
                    (*changes.values(), iso(service.now()), row["id"]),
                )
                row = db.execute("SELECT * FROM subscribers WHERE id = ?", (row["id"],)).fetchone()
        return json_response({"data": subscriber_doc(row)})

    @router.patch(
        "/v1/subscribers/{subscriberId}/credentials",
        operation_id="upsertCredentials",
        summary="Upsert provider credentials",
        response_model=SubscriberEnvelope,
        responses=error_responses(409),
    )
    def upsert_credentials(subscriberId: str, body: CredentialsUpdate, tenant: TenantDep):
        credentials = body.credentials.model_dump(exclude_unset=True)
        tokens = credentials.get("deviceTokens")
        if tokens is not None:
            if len(tokens) > MAX_DEVICE_TOKENS:
                raise ApiError(400, f"deviceTokens must contain at most {MAX_DEVICE_TOKENS} tokens")
            credentials["deviceTokens"] = list(dict.fromkeys(tokens))
        with service.store.write() as db:
            row = _find_subscriber(db, tenant, subscriberId)
            if row is None:
                raise ApiError(400, f"SubscriberId: {subscriberId} not found")
            integration = _integration_for(db, tenant, body.providerId, body.integrationIdentifier)
            channels = json.loads(row["channels"])
            _merge_channel(channels, body.providerId, integration, credentials)
            db.execute(
                "UPDATE subscribers SET channels = ?, version = version + 1, updated_at = ?"
                " WHERE id = ?",
                (dumps(channels), iso(service.now()), row["id"]),
            )
            row = db.execute("SELECT * FROM subscribers WHERE id = ?", (row["id"],)).fetchone()
        return json_response({"data": subscriber_doc(row)})

    @router.get(
        "/v2/subscribers",
        operation_id="searchSubscribers",
        summary="Search subscribers",
        response_model=SubscriberPage,
        responses=error_responses(),
    )
    def search_subscribers(
        tenant: TenantDep,
        after: str = None,
        before: str = None,
        limit: Annotated[int, Query(ge=1, le=SEARCH_MAX_LIMIT)] = DEFAULT_LIMIT,
        orderDirection: OrderDirection = "DESC",
        orderBy: SearchOrderBy = "_id",
        includeCursor: bool = False,
        email: str = None,
        name: str = None,
        phone: str = None,
        subscriberId: str = None,
    ):
        cursors = _cursors(limit, orderDirection, after, before, includeCursor)
        query = CursorQuery(
            source="subscribers",
            columns="*",
            id="id",
            sort=_SORT_COLUMNS[orderBy],
            scope=[("environment_id = ?", (tenant.environment_id,)), ("deleted = 0", ())],
            filters=_search_filters(email, name, phone, subscriberId),
        )
        with service.store.read() as db:
            page = cursor_page(db, query, cursors)
        return json_response(page.envelope([subscriber_doc(row) for row in page.rows]))

    @router.get(
        "/v2/subscribers/{subscriberId}/subscriptions",
        operation_id="listSubscriberSubscriptions",
        summary="Retrieve subscriber subscriptions",
        response_model=SubscriptionPage,
        responses=error_responses(404),
    )
    def list_subscriptions(
        subscriberId: str,
        tenant: TenantDep,
        after: str = None,
        before: str = None,
        limit: Annotated[int, Query(ge=1, le=100)] = DEFAULT_LIMIT,
        orderDirection: OrderDirection = "DESC",
        orderBy: Annotated[str, Query(description="Accepted and ignored: always `_id`.")] = None,
        includeCursor: bool = False,
        key: str = None,
    ):
        cursors = _cursors(limit, orderDirection, after, before, includeCursor)
        with service.store.read() as db:
            subscriber = _find_subscriber(db, tenant, subscriberId)
            if subscriber is None:
                raise ApiError(404, "Subscriber not found")
            query = CursorQuery(
                source="subscriptions s JOIN topics t ON t.id = s.topic_id"
                " JOIN subscribers b ON b.id = s.subscriber_id",
                columns=_SUBSCRIPTION_COLUMNS,
                id="s.id",
                sort="s.id",
                scope=[
                    ("s.environment_id = ?", (tenant.environment_id,)),
                    ("s.subscriber_id = ?", (subscriber["id"],)),
                ],
                filters=[] if key is None else [("t.key = ?", (key,))],
            )
            page = cursor_page(db, query, cursors)
        return json_response(page.envelope([_subscription_doc(row) for row in page.rows]))


def _search_filters(
    email: str | None, name: str | None, phone: str | None, subscriber_id: str | None
) -> list[tuple[str, Sequence[Any]]]:
    """Case-sensitive substring filters (``name`` against "first last"); empty values ignored."""
    full_name = "trim(coalesce(first_name, '') || ' ' || coalesce(last_name, ''))"
    filters = [
        (f"instr({column}, ?) > 0", (value,))
        for column, value in (("email", email), (full_name, name), ("phone", phone))
        if value
    ]
    if subscriber_id:
        filters.append(("subscriber_id = ?", (subscriber_id,)))
    return filters


def _integration_for(
    db: sqlite3.Connection, tenant: Tenant, provider_id: str, identifier: str | None
) -> sqlite3.Row:
    """The integration named by ``identifier``, else the newest active one of the provider."""
    sql = "SELECT id, identifier FROM integrations WHERE environment_id = ? AND deleted = 0 AND provider_id = ?"
    if identifier is not None:
        row = db.execute(
            f"{sql} AND identifier = ?", (tenant.environment_id, provider_id, identifier)
        ).fetchone()
    else:
        row = db.execute(
            f"{sql} AND active = 1 ORDER BY created_at DESC, id DESC LIMIT 1",
            (tenant.environment_id, provider_id),
        ).fetchone()
    if row is None:
        raise ApiError(
            400,
            f"Subscribers environment ({tenant.environment_id}) do not have active"
            f" {provider_id} integration.",
        )
    return row


def _merge_channel(
    channels: list[dict[str, Any]],
    provider_id: str,
    integration: sqlite3.Row,
    credentials: dict[str, Any],
) -> None:
    """Merge ``credentials`` into the (provider, integration) entry; supplied fields replace."""
    for entry in channels:
        if (
            entry.get("providerId") == provider_id
            and entry.get("_integrationId") == integration["id"]
        ):
            entry["credentials"] = {**(entry.get("credentials") or {}), **credentials}
            entry["integrationIdentifier"] = integration["identifier"]
            return
    channels.append(
        {
            "providerId": provider_id,
            "integrationIdentifier": integration["identifier"],
            "credentials": credentials,
            "_integrationId": integration["id"],
        }
    )
