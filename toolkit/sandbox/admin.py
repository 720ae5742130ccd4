"""The sandbox's admin routes under ``/_sandbox/``: no API key, not in the service's OpenAPI
document, never faulted. They let another process steer a running sandbox:

- ``GET /_sandbox/state``: environments with counts, the clock, faults, traffic and outages;
- ``POST /_sandbox/faults``: a `FaultSettings` object (see `Faults.update`);
- ``POST /_sandbox/traffic``: ``{"rate": <per sandbox second, 0 stops>, "environment": <name>}``;

Invalid bodies answer 422 with ``{statusCode, message, error}``, the message naming the field.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import Field, ValidationError

from toolkit.sandbox.faults import ADMIN_PREFIX, FaultSettings, _Settings, message_of

if TYPE_CHECKING:
    from toolkit.sandbox.handle import Sandbox


class TrafficSettings(_Settings):
    rate: Annotated[float, Field(ge=0, allow_inf_nan=False)]
    environment: str | None = None


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
