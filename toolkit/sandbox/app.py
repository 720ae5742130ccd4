"""The sandbox service: `create_app` serves the spec's seven operations over a `Store`.

Behaviour follows the spec where it speaks and the reference notes elsewhere. Choices of the
sandbox where both are silent:

- Every error has the body ``{statusCode, timestamp, path, message, error}``; invalid requests
  answer 422 with ``errors`` keyed by field; malformed JSON 400; unknown routes 404
  (``Cannot GET /v1/xyz``); a known path with another method 405; an unexpected failure 500 with
  ``errorId``. A missing or unknown API key wins over every validation error (401 first).
- Idempotency (``idempotency-key`` on POST and PATCH): keys are per organization and kept 24 h
  by the service clock. The fingerprint is method, path and the raw body bytes. Results with a
  status below 500 are stored and replayed (a deterministic 4xx replays as well); a 5xx frees the
  key so that the retry runs again. A different fingerprint answers 422 (also when the first
  request is still running); a running one 409 with ``Retry-After: 1``. An empty key is no key.
  Keys still claimed by a killed process are released when its database file is opened again.
- A request body over `MAX_BODY_BYTES` (1 MiB) answers 413.
- Cursor lists: ``after`` with ``before`` is a 422 (field ``before``); the search's ``limit`` is
  at most 100 and ``orderBy`` one of ``_id``, ``createdAt``, ``updatedAt``; empty search filters
  are ignored. A cursor must name an item of the list's scope (its filters aside).
- Update credentials: more than 100 ``deviceTokens`` (as sent) is a 400; an
  ``integrationIdentifier`` must name a live integration of the same ``providerId``.
- Create integration: ``providerId`` is any non-empty string; ``_environmentId`` any string (the
  spec's uuid format is not checked: environment ids are object ids), another environment's 403;
  identifiers are unique among the environment's integrations that are not deleted; ``primary``
  when active, email or sms, and no other active one of the channel remains. ``deletedBy`` is a
  stable pseudo user id per environment (the API key has no user).
- Activity feed: ``emails`` and ``subscriberIds`` select the union of their subscribers; a window
  may start up to 10 minutes before the retention limit (see ``routes_activity``).
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from collections.abc import Callable
from datetime import timedelta
from http import HTTPStatus
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, Header, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException

from toolkit.sandbox import routes_activity, routes_integrations, routes_subscribers
from toolkit.sandbox.clock import Clock, iso
from toolkit.sandbox.routes_base import ApiError, Service, dumps, raw_json_response
from toolkit.sandbox.store import Store
from toolkit.sandbox.validation import field_errors

log = logging.getLogger(__name__)

#: How long an idempotency key is remembered.
IDEMPOTENCY_TTL = timedelta(hours=24)
#: Longest idempotency key accepted (longer: 400).
MAX_IDEMPOTENCY_KEY = 255
#: Largest request body accepted (larger: 413).
MAX_BODY_BYTES = 1_048_576
#: Methods whose requests honour an idempotency key.
IDEMPOTENT_METHODS = frozenset({"POST", "PATCH"})

DESCRIPTION = """A local sandbox of the notification service: subscribers, provider credentials,
integrations and the activity feed, scoped to the environment of the API key
(`Authorization: ApiKey <key>`)."""


def create_app(store: Store, clock: Clock) -> FastAPI:
    """The FastAPI application of the seven operations over ``store``, timed by ``clock``."""
    service = Service(store, clock)
    app = FastAPI(
        title="Notification service sandbox",
        version="1.0.0",
        description=DESCRIPTION,
        separate_input_output_schemas=False,
        redoc_url=None,
        max_body_size=MAX_BODY_BYTES,
    )
    errors = ErrorRenderer(service)
    app.state.errors = errors
    app.state.service = service
    app.state.idempotency = Idempotency(service)
    router = APIRouter(route_class=IdempotentRoute)
    for module in (routes_subscribers, routes_integrations, routes_activity):
        module.register(router, service)
    app.include_router(router)
    app.add_exception_handler(ApiError, errors.render)
    app.add_exception_handler(RequestValidationError, errors.render)
    app.add_exception_handler(HTTPException, errors.render)
    app.add_exception_handler(Exception, errors.unexpected)
    return app


class BodyLimit:
    """ASGI wrapper of the service: a body announced larger than `MAX_BODY_BYTES` answers 413
    with the service's error body before it is read (a streamed one is cut by FastAPI's own
    ``max_body_size``)."""

    def __init__(self, app: FastAPI):
        self.app = app

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] == "http":
            for name, value in scope["headers"]:
                if name == b"content-length" and value.isdigit() and int(value) > MAX_BODY_BYTES:
                    message = f"Request body larger than {MAX_BODY_BYTES} bytes"
                    response = self.app.state.errors.response(Request(scope), 413, message)
                    await response(scope, receive, send)
                    return
        await self.app(scope, receive, send)


async def _idempotency_key(
    idempotency_key: Annotated[
        str,
        Header(
            alias="idempotency-key",
            description="Runs the request once (at most 255 characters).",
        ),
    ] = None,
) -> None:
    """Declares the header in the OpenAPI document; `IdempotentRoute` acts on it."""


class ErrorRenderer:
    """Turns every error into the service's error body."""

    def __init__(self, service: Service):
        self.service = service

    def response(
        self,
        request: Request,
        status: int,
        message: str,
        headers: dict[str, str] | None = None,
        **extra: Any,
    ) -> Response:
        query = request.scope.get("query_string", b"").decode("latin-1")
        body = {
            "statusCode": status,
            "timestamp": iso(self.service.now()),
            "path": request.scope["path"] + (f"?{query}" if query else ""),
            "message": message,
            "error": HTTPStatus(status).phrase,
            **extra,
        }
        return raw_json_response(dumps(body), status, headers)

    async def render(self, request: Request, exc: Exception) -> Response:
        """The response of an `ApiError`, a validation error or an HTTP exception."""
        if isinstance(exc, ApiError):
            extra = {} if exc.errors is None else {"errors": exc.errors}
            return self.response(request, exc.status, exc.message, exc.headers, **extra)
        if isinstance(exc, RequestValidationError) or (
            isinstance(exc, HTTPException) and exc.status_code == 400
        ):
            try:  # authentication is checked before the request's contents
                self.service.authenticate(request.headers.get("authorization"))
            except ApiError as denied:
                return await self.render(request, denied)
        if isinstance(exc, RequestValidationError):
            return self._invalid(request, exc)
        assert isinstance(exc, HTTPException)
        if exc.status_code in (404, 405):
            message = f"Cannot {request.method} {request.scope['path']}"
        elif exc.status_code == 413:
            message = f"Request body larger than {MAX_BODY_BYTES} bytes"
        else:
            message = str(exc.detail)
        return self.response(request, exc.status_code, message, dict(exc.headers or {}))

    def _invalid(self, request: Request, exc: RequestValidationError) -> Response:
        problems = list(exc.errors())
        broken = [e for e in problems if e.get("type") == "json_invalid"]
        if broken:
            reason = (broken[0].get("ctx") or {}).get("error", "malformed JSON")
            return self.response(request, 400, f"Invalid JSON body: {reason}")
        return self.response(request, 422, "Validation failed", errors=field_errors(problems))

    async def unexpected(self, request: Request, exc: Exception) -> Response:
        """500 for a failure nobody planned for (a bug): logged under its ``errorId``."""
        error_id = uuid.uuid4().hex
        log.error("unexpected error %s on %s %s", error_id, request.method, request.url.path,
                  exc_info=exc)  # fmt: skip
        return self.response(request, 500, "Internal server error", errorId=error_id)


class Idempotency:
    """The ``idempotency`` table: claim a key, record its result, replay it."""

    def __init__(self, service: Service):
        self.service = service

    def claim(self, organization_id: str, key: str, fingerprint: str) -> Response | None:
        """Claim ``key`` for a new request (None), or return the replay of its stored result.

        Raises `ApiError` 400 (key too long), 422 (another body), 409 (still running).
        """
        if len(key) > MAX_IDEMPOTENCY_KEY:
            raise ApiError(400, f"Idempotency key must be at most {MAX_IDEMPOTENCY_KEY} characters")
        now = self.service.now()
        with self.service.store.write() as db:
            db.execute(
                "DELETE FROM idempotency WHERE created_at < ?", (iso(now - IDEMPOTENCY_TTL),)
            )
            row = db.execute(
                "SELECT body_hash, state, status, body FROM idempotency"
                " WHERE organization_id = ? AND key = ?",
                (organization_id, key),
            ).fetchone()
            if row is None:
                db.execute(
                    "INSERT INTO idempotency (organization_id, key, body_hash, state, created_at)"
                    " VALUES (?, ?, ?, 'running', ?)",
                    (organization_id, key, fingerprint, iso(now)),
                )
                return None
        if row["body_hash"] != fingerprint:
            message = f'Request with key "{key}" is being reused for a different body'
            field = {"idempotency-key": {"messages": [message], "value": key}}
            raise ApiError(422, message, errors=field)
        if row["state"] == "running":
            raise ApiError(
                409,
                f'Request with key "{key}" is still being processed; retry later',
                {"Retry-After": "1"},
            )
        headers = {"Idempotency-Key": key, "Idempotency-Replay": "true"}
        return raw_json_response(row["body"], row["status"], headers)

    def record(self, organization_id: str, key: str, response: Response) -> None:
        """Store the result (status < 500) or free the key (5xx)."""
        if response.status_code >= 500:
            self.release(organization_id, key)
            return
        with self.service.store.write() as db:
            db.execute(
                "UPDATE idempotency SET state = 'done', status = ?, body = ?"
                " WHERE organization_id = ? AND key = ?",
                (response.status_code, bytes(response.body).decode(), organization_id, key),
            )

    def release(self, organization_id: str, key: str) -> None:
        with self.service.store.write() as db:
            db.execute(
                "DELETE FROM idempotency WHERE organization_id = ? AND key = ?",
                (organization_id, key),
            )


class IdempotentRoute(APIRoute):
    """A route that, for POST and PATCH with an ``idempotency-key``, runs each request once."""

    def __init__(self, path: str, endpoint: Callable, **options: Any):
        methods = {method.upper() for method in options.get("methods") or ()}
        if methods & IDEMPOTENT_METHODS:  # only there: other routes skip resolving it
            options["dependencies"] = [*(options.get("dependencies") or []),
                                       Depends(_idempotency_key)]  # fmt: skip
        super().__init__(path, endpoint, **options)

    def get_route_handler(self) -> Callable:
        handle = super().get_route_handler()
        if not self.methods & IDEMPOTENT_METHODS:
            return handle

        async def handle_once(request: Request) -> Response:
            key = request.headers.get("idempotency-key")
            if not key:
                return await handle(request)
            state = request.app.state
            tenant = state.idempotency.service.authenticate(request.headers.get("authorization"))
            organization = tenant.organization_id
            digest = hashlib.sha256(f"{request.method} {request.scope['path']}\n".encode())
            digest.update(await request.body())
            replay = state.idempotency.claim(organization, key, digest.hexdigest())
            if replay is not None:
                return replay
            try:
                response = await handle(request)
            except (ApiError, RequestValidationError, HTTPException) as exc:
                response = await state.errors.render(request, exc)
            except BaseException:
                state.idempotency.release(organization, key)
                raise
            state.idempotency.record(organization, key, response)
            response.headers["Idempotency-Key"] = key
            return response

        return handle_once
