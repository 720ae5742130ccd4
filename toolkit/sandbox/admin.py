"""The sandbox's admin routes under ``/_sandbox/``: no API key, not in the service's OpenAPI
document, never faulted. They let another process steer a running sandbox:

- ``GET /_sandbox/state``: environments with counts, the clock, faults, traffic and outages;
- ``POST /_sandbox/faults``: a `FaultSettings` object (see `Faults.update`);
- ``POST /_sandbox/traffic``: ``{"rate": <per sandbox second, 0 stops>, "environment": <name>}``;
- ``POST /_sandbox/outage``: ``{"provider_id": "twilio", "failure_rate": 0.9, "error_code": null}``
  starts a live outage, ``{"stop": true, "provider_id": <optional>}`` ends it (or all of them).

Invalid bodies answer 422 with ``{statusCode, message, error}``, the message naming the field.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import Field, ValidationError

from toolkit.sandbox.faults import ADMIN_PREFIX, FaultSettings, Fraction, _Settings, message_of

if TYPE_CHECKING:
    from toolkit.sandbox.handle import Sandbox


class TrafficSettings(_Settings):
    rate: Annotated[float, Field(ge=0, allow_inf_nan=False)]
    environment: str | None = None


class OutageSettings(_Settings):
    provider_id: str | None = None
    failure_rate: Fraction = 0.9
    error_code: str | None = None
    stop: bool = False


def admin_app(sandbox: Sandbox) -> FastAPI:
    """The ASGI app of the ``/_sandbox/`` routes of ``sandbox``."""
    router = APIRouter(prefix=ADMIN_PREFIX.rstrip("/"))

    @router.get("/state")
    async def state() -> dict[str, Any]:
        return await run_in_threadpool(sandbox.state)

    @router.post("/faults")
    async def faults(settings: FaultSettings) -> dict[str, Any]:
        sandbox.faults.update(settings)
        return sandbox.faults.as_dict()

    @router.post("/traffic")
    async def traffic(settings: TrafficSettings) -> dict[str, Any] | None:
        if settings.rate == 0:
            await run_in_threadpool(sandbox.stop_traffic)
        else:
            await run_in_threadpool(sandbox.start_traffic, settings.rate, settings.environment)
        return (await run_in_threadpool(sandbox.state))["traffic"]

    @router.post("/outage")
    async def outage(settings: OutageSettings) -> list[dict[str, Any]]:
        if settings.stop:
            sandbox.stop_outage(settings.provider_id)
        elif settings.provider_id is None:
            raise ValueError("provider_id: required to start an outage")
        else:
            sandbox.start_outage(
                settings.provider_id,
                failure_rate=settings.failure_rate,
                error_code=settings.error_code,
            )
        return sandbox.outages()

    app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)
    app.include_router(router)

    async def unprocessable(request: Request, exc: Exception) -> JSONResponse:
        if isinstance(exc, RequestValidationError):
            problems = exc.errors()
            if any(p["type"] == "json_invalid" or list(p["loc"]) == ["body"] for p in problems):
                message = "the body must be a JSON object"
            else:
                message = message_of(problems)
        elif isinstance(exc, ValidationError):
            message = message_of(exc.errors())
        else:
            message = str(exc)
        body = {"statusCode": 422, "message": message, "error": "Unprocessable Entity"}
        return JSONResponse(body, 422)

    app.add_exception_handler(RequestValidationError, unprocessable)
    app.add_exception_handler(ValueError, unprocessable)
    return app
