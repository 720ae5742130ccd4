"""What the route modules share: the service context (store, clock, ids, auth), the error type
and JSON responses."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, get_args, get_origin, get_type_hints

from fastapi import Request, Security
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from fastapi.routing import APIRoute
from fastapi.security import APIKeyHeader
from pydantic import ValidationError

from toolkit.sandbox.clock import Clock
from toolkit.sandbox.ids import IdFactory
from toolkit.sandbox.store import Store
from toolkit.sandbox.validation import ErrorBody, ValidationErrorBody

#: The security scheme of the OpenAPI document: ``Authorization: ApiKey <key>``.
api_key_header = APIKeyHeader(
    name="Authorization",
    scheme_name="ApiKey",
    description="`ApiKey <API_KEY>`: the key selects the environment every operation acts on.",
    auto_error=False,
)


class ApiError(Exception):
    """An error answer: status, message, extra headers (e.g. ``Retry-After``) and, for 422,
    the field-keyed ``errors``."""

    def __init__(
        self,
        status: int,
        message: str,
        headers: dict[str, str] | None = None,
        errors: dict[str, Any] | None = None,
    ):
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}
        self.errors = errors


def invalid(field: str, message: str, value: Any) -> ApiError:
    """A 422 naming one field, like the validation of the request models."""
    return ApiError(
        422, "Validation failed", errors={field: {"messages": [message], "value": value}}
    )


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` of the errors an operation answers: these and 400, 401, 422, 429."""
    described = {
        400: "Bad request",
        401: "Missing or unknown API key",
        402: "Date range beyond the plan's retention",
        403: "Another environment",
        404: "Not found",
        409: "Conflict (duplicate, or an idempotent request still running)",
        422: "Validation failed",
        429: "Rate limited",
    }
    return {
        status: {
            "model": ValidationErrorBody if status == 422 else ErrorBody,
            "description": described[status],
        }
        for status in sorted({400, 401, 422, 429, *statuses})
    }


@dataclass(frozen=True)
class Tenant:
    """The environment (and organization, with its plan) that an API key selects."""

    environment_id: str
    organization_id: str
    plan: str


class Service:
    """The state every route needs: the store, the clock, an id factory, authentication."""

    def __init__(self, store: Store, clock: Clock):
        self.store = store
        self.clock = clock
        self.ids = IdFactory(random.Random())
        self.rng = random.Random()
        self._tenants: dict[str, Tenant] = {}

    def now(self) -> datetime:
        return self.clock.now()

    def authenticate(self, authorization: str | None) -> Tenant:
        """The tenant of an ``Authorization`` header value; `ApiError` 401 otherwise."""
        if authorization is None:
            raise ApiError(401, "Missing authorization header")
        scheme, _, key = authorization.strip().partition(" ")
        if scheme != "ApiKey":
            raise ApiError(401, f'Invalid authentication scheme: "{scheme}"')
        tenant = self._tenants.get(key.strip())
        if tenant is None:
            with self.store.read() as db:
                row = db.execute(
                    "SELECT e.id, e.organization_id, o.plan FROM environments e"
                    " JOIN organizations o ON o.id = e.organization_id WHERE e.api_key = ?",
                    (key.strip(),),
                ).fetchone()
            if row is None:
                raise ApiError(401, "API Key not found")
            tenant = self._tenants[key.strip()] = Tenant(*row)  # keys never change
        return tenant

    async def tenant(self, authorization: str | None = Security(api_key_header)) -> Tenant:
        """FastAPI dependency: the caller's tenant (async: no thread hop)."""
        return self.authenticate(authorization)


class ParametersRoute(APIRoute):
    """A read route whose endpoint is ``async (tenant, query)``, ``query`` one pydantic model of
    the query parameters: the request is served without FastAPI's dependency solving (the
    tenant looked up directly, the model validated in one call, errors raised as FastAPI
    would), which halves the CPU of a feed page. FastAPI still documents it from the signature.
    """

    def get_route_handler(self) -> Callable:
        endpoint = self.endpoint
        model = get_args(get_type_hints(endpoint, include_extras=True)["query"])[0]
        lists = {n for n, f in model.model_fields.items() if get_origin(f.annotation) is list}

        async def handle(request: Request) -> Response:
            service: Service = request.app.state.service
            tenant = service.authenticate(request.headers.get("authorization"))
            params = request.query_params
            given = {
                name: params.getlist(name) if name in lists else params[name]
                for name in model.model_fields
                if name in params
            }
            try:
                query = model.model_validate(given)
            except ValidationError as exc:
                errors = exc.errors(include_url=False)
                raise RequestValidationError(
                    [{**error, "loc": ("query", *error["loc"])} for error in errors]
                ) from None
            return await endpoint(tenant, query)

        return handle


def dumps(value: Any) -> str:
    """Compact JSON, ASCII only (safe for any text the validators let through)."""
    return json.dumps(value, separators=(",", ":"), allow_nan=False)


def json_response(value: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return raw_json_response(dumps(value), status, headers)


def raw_json_response(
    text: str | bytes, status: int = 200, headers: dict[str, str] | None = None
) -> Response:
    """A response whose body is already JSON text."""
    return Response(text, status, headers, media_type="application/json")
