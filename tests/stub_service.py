"""A hostile service for tests: an HTTP server on 127.0.0.1 whose answers a test scripts."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


class Request:
    """One request the stub received."""

    def __init__(self, handler: BaseHTTPRequestHandler):
        parts = urlsplit(handler.path)
        self.method, self.path = handler.command, parts.path
        self.query = parse_qs(parts.query)
        self.headers = dict(handler.headers)
        length = int(handler.headers.get("Content-Length") or 0)
        self.body = handler.rfile.read(length) if length else b""

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


class Stub:
    """Answers each request with ``answer(request, handler)``; keeps every request.

    ``answer`` writes the response with the helpers `send` (status, JSON or bytes, headers), or
    by hand through ``handler`` (to trickle a body).
    """

    def __init__(self, answer: Callable[[Request, BaseHTTPRequestHandler], Any]):
        self.answer, self.requests = answer, []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _any(self) -> None:
                request = Request(self)
                stub.requests.append(request)
                try:
                    stub.answer(request, self)
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _any

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def send(
    handler: BaseHTTPRequestHandler,
    status: int = 200,
    body: Any = None,
    headers: dict[str, str] | None = None,
) -> None:
    """Answer with ``body`` (JSON unless bytes) and ``headers``."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    handler.send_response(status)
    headers = {"Content-Type": "application/json", **(headers or {})}
    for name, value in headers.items():
        handler.send_header(name, value)
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def page(records: list[dict], has_more: bool = False, number: int = 0) -> dict:
    """An activity feed page."""
    return {"data": records, "hasMore": has_more, "page": number, "pageSize": len(records)}


def record(number: int, created: str = "2026-11-01T11:00:00.000Z") -> dict:
    """A minimal notification record."""
    return {
        "_id": f"{number:024x}",
        "createdAt": created,
        "channels": ["email"],
        "jobs": [],
        "transactionId": f"t{number}",
    }
