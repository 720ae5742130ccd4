"""The status -> exception mapping on the body shapes the real service sends (reference notes),
including those the sandbox never sends (older servers' 400 with a list of messages)."""

from __future__ import annotations

import pytest

from toolkit.errors import (
    AuthenticationError,
    ConflictError,
    NotFoundError,
    RateLimitError,
    RetentionError,
    ServerError,
    ServiceError,
    ValidationError,
    error_from_response,
)

KEY = "0123456789abcdef0123456789abcdef"


def test_current_servers_422_gives_the_messages_per_field():
    body = {"statusCode": 422, "message": "Validation failed",
            "errors": {"limit": {"messages": ["limit must not be greater than 50"], "value": 51}}}  # fmt: skip
    error = error_from_response("GET", "/v1/notifications?limit=51", 422, body)
    assert isinstance(error, ValidationError)
    assert error.field_errors == {"limit": ["limit must not be greater than 50"]}
    assert "limit must not be greater than 50" in str(error)
    assert "\n" not in str(error)


def test_older_servers_400_with_a_list_of_messages_is_a_validation_error_too():
    body = {"statusCode": 400, "error": "Bad Request",
            "message": ["email must be an email", "timezone must be a valid IANA zone"]}  # fmt: skip
    error = error_from_response("PATCH", "/v2/subscribers/u1", 400, body)
    assert isinstance(error, ValidationError)
    assert error.field_errors == {
        "email": ["email must be an email"],
        "timezone": ["timezone must be a valid IANA zone"],
    }
    assert "email must be an email" in str(error) and "\n" not in str(error)


@pytest.mark.parametrize(
    ("status", "cls"),
    [(401, AuthenticationError), (403, AuthenticationError), (404, NotFoundError),
     (409, ConflictError), (429, RateLimitError), (402, RetentionError), (500, ServerError),
     (503, ServerError), (418, ServiceError)],
)  # fmt: skip
def test_each_status_maps_to_its_class(status, cls):
    error = error_from_response("GET", "/v1/notifications", status, {"message": "nope"})
    assert type(error) is cls
    assert error.status == status and error.method == "GET" and error.path == "/v1/notifications"


def test_a_429_carries_its_retry_after():
    error = error_from_response("GET", "/v1/notifications", 429,
                                {"message": "API rate limit exceeded"}, {"Retry-After": "3"})  # fmt: skip
    assert error.retry_after == 3


def test_a_402_says_how_far_back_is_allowed_when_the_window_shows_it():
    error = error_from_response("GET", "/v1/notifications?after=2020-01-01T00:00:00Z", 402,
                                {"message": "Requested date range exceeds your plan's retention period."})  # fmt: skip
    assert isinstance(error, RetentionError)
    assert "retention" in str(error)


def test_unknown_bodies_and_plain_text_still_give_one_line():
    error = error_from_response("GET", "/v1/xyz", 404, "Cannot GET /v1/xyz\n")
    assert isinstance(error, NotFoundError)
    assert "\n" not in str(error)


def test_the_key_is_masked_in_message_path_and_body():
    body = {"message": f"API Key {KEY} not found", "path": f"/v1/notifications?key={KEY}"}
    error = error_from_response("GET", f"/v1/{KEY}", 401, body, secrets=(KEY,))
    assert KEY not in str(error) + repr(error) + str(error.body) + error.path


def test_the_errors_and_time_modules_do_not_import_each_other_nor_the_facade():
    import ast
    from pathlib import Path

    package = Path(__file__).parent.parent / "toolkit"
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "toolkit":
                assert "__version__" not in [a.name for a in node.names], path
            if path.name == "errors.py" and isinstance(node, ast.ImportFrom | ast.Import):
                modules = [node.module] if isinstance(node, ast.ImportFrom) else []
                assert "toolkit.timeutil" not in modules


def test_a_refused_secret_is_masked_in_the_message_and_the_value():
    from toolkit.errors import ParameterError

    url = "https://hooks.slack.com/services/T000/B000/XXXXXXXXXXXXXXXXXXXXXXXX"
    for name, value in [
        ("api_key", KEY + "\n"),
        ("credentials['webhookURL']", url),
        ("credentials['deviceTokens']", ["token-aaaaaaaaaaaaaaaaaaaa", 7]),
        ("credentials", {"apiKey": KEY, 1: "x"}),
    ]:
        err = ParameterError(name, value, "something else")
        shown = str(err) + repr(err.value) + repr(err.args)
        assert KEY not in shown and "XXXXXXXX" not in shown and "token-aaaa" not in shown
        assert name in str(err)
    assert ParameterError("limit", 0, "at least 1").value == 0  # not a secret: shown as given


def test_a_validation_errors_body_keeps_no_credential_the_service_echoed():
    url = "https://hooks.slack.com/services/T000/B000/XXXXXXXXXXXXXXXXXXXXXXXX"
    body = {"statusCode": 422, "message": "Validation failed", "errors": {
        "credentials.webhookUrl": {"messages": ["webhookUrl must be a URL"], "value": url},
        "apiKey": {"messages": ["apiKey is too short"], "value": KEY}}}  # fmt: skip
    error = error_from_response("POST", "/v1/integrations", 422, body)
    shown = str(error) + repr(error.body) + repr(error.field_errors)
    assert url not in shown and "XXXXXXXX" not in shown and KEY not in shown
    assert error.field_errors["credentials.webhookUrl"] == ["webhookUrl must be a URL"]
    assert body["errors"]["apiKey"]["value"] == KEY  # the caller's object is not changed
