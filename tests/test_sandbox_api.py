"""The sandbox's seven operations over real HTTP: success and error cases, cursor walks,
tenancy, idempotency, retention and the error body (fixtures: ``tests/conftest.py``)."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
import requests

from toolkit.sandbox.clock import iso, parse_instant

ERROR_FIELDS = {"statusCode", "timestamp", "path", "message", "error"}
#: (method, path template) of the seven operations, with a body where one is required.
OPERATIONS = [
    ("PATCH", "/v1/subscribers/user-000001/credentials", {"providerId": "fcm", "credentials": {}}),
    ("PATCH", "/v2/subscribers/user-000001", {}),
    ("GET", "/v2/subscribers", None),
    ("GET", "/v2/subscribers/user-000001/subscriptions", None),
    ("POST", "/v1/integrations", {"providerId": "sendgrid", "channel": "email"}),
    ("DELETE", "/v1/integrations/000000000000000000000000", None),
    ("GET", "/v1/notifications", None),
]


def call(sb, method, path, *, env=None, key=None, headers=None, **kwargs) -> requests.Response:
    """One request with the API key of ``env`` (``"Acme/Production"``; default: the default)."""
    key = key if key is not None else sb.api_keys[env] if env else sb.api_key
    all_headers = {"Authorization": f"ApiKey {key}", **(headers or {})}
    return requests.request(method, sb.url + path, headers=all_headers, timeout=30, **kwargs)


def ok(response: requests.Response, status: int = 200):
    assert response.status_code == status, response.text
    return response.json()


def error(response: requests.Response, status: int) -> dict:
    """The error body, checked for the service's shape."""
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) >= ERROR_FIELDS, body
    assert body["statusCode"] == status
    parse_instant(body["timestamp"])
    return body


def env_id(sb, name=None) -> str:
    return sb.environment(name)["id"]


def subscriber(sb, subscriber_id, env=None) -> dict:
    page = ok(call(sb, "GET", "/v2/subscribers", env=env, params={"subscriberId": subscriber_id}))
    assert len(page["data"]) == 1
    return page["data"][0]


def walk(sb, path, params, *, backwards=False) -> list[str]:
    """Every ``_id`` of a cursor list: forwards with ``after=next`` from the first page, or
    backwards with ``before=previous`` from the last page."""
    page = ok(call(sb, "GET", path, params=params))
    if backwards:  # reach the last page first
        while page["next"]:
            page = ok(call(sb, "GET", path, params={**params, "after": page["next"]}))
    pages = [page]
    link, cursor = ("previous", "before") if backwards else ("next", "after")
    while page[link]:
        page = ok(call(sb, "GET", path, params={**params, cursor: page[link]}))
        pages.append(page)
    if backwards:
        pages.reverse()
    return [item["_id"] for page in pages for item in page["data"]]


# --- authentication and errors ---------------------------------------------------------------


@pytest.mark.parametrize(("method", "path", "body"), OPERATIONS)
def test_every_operation_requires_an_api_key(sandbox, method, path, body):
    url = sandbox.url + path
    missing = requests.request(method, url, json=body, timeout=10)
    assert error(missing, 401)["message"] == "Missing authorization header"
    assert error(missing, 401)["error"] == "Unauthorized"
    token = requests.request(
        method, url, json=body, headers={"Authorization": "Token abc"}, timeout=10
    )
    assert error(token, 401)["message"] == 'Invalid authentication scheme: "Token"'
    unknown = call(sandbox, method, path, key="0" * 32, json=body)
    assert error(unknown, 401)["message"] == "API Key not found"


def test_authentication_is_checked_before_validation(sandbox):
    response = requests.get(f"{sandbox.url}/v1/notifications?limit=500", timeout=10)
    assert error(response, 401)["message"] == "Missing authorization header"
    bad_json = requests.post(
        f"{sandbox.url}/v1/integrations",
        data="{",
        headers={"Content-Type": "application/json"},
        timeout=10,
    )
    error(bad_json, 401)


def test_error_body_has_the_path_with_its_query_string(sandbox):
    body = error(call(sandbox, "GET", "/v1/notifications?limit=51&page=0"), 422)
    assert body["path"] == "/v1/notifications?limit=51&page=0"
    assert body["errors"] == {
        "limit": {"messages": ["limit must not be greater than 50"], "value": 51}
    }


def test_unknown_routes_and_methods(sandbox):
    assert error(call(sandbox, "GET", "/v1/xyz"), 404)["message"] == "Cannot GET /v1/xyz"
    not_allowed = error(call(sandbox, "PUT", "/v1/notifications"), 405)
    assert not_allowed["message"] == "Cannot PUT /v1/notifications"


@pytest.mark.parametrize(
    ("method", "path", "kwargs", "field"),
    [
        ("GET", "/v1/notifications", {"params": {"limit": 0}}, "limit"),
        ("GET", "/v1/notifications", {"params": {"page": -1}}, "page"),
        ("GET", "/v1/notifications", {"params": {"limit": "ten"}}, "limit"),
        ("GET", "/v1/notifications", {"params": {"channels": ["email", "fax"]}}, "channels.1"),
        ("GET", "/v1/notifications", {"params": {"severity": "urgent"}}, "severity.0"),
        ("GET", "/v2/subscribers", {"params": {"limit": 101}}, "limit"),
        ("GET", "/v2/subscribers", {"params": {"orderDirection": "down"}}, "orderDirection"),
        ("GET", "/v2/subscribers", {"params": {"orderBy": "email"}}, "orderBy"),
        ("GET", "/v2/subscribers", {"params": {"after": "a", "before": "b"}}, "before"),
        ("GET", "/v2/subscribers/user-000001/subscriptions", {"params": {"limit": 101}}, "limit"),
        ("PATCH", "/v2/subscribers/user-000001", {"json": {"email": "nope"}}, "email"),
        ("PATCH", "/v2/subscribers/user-000001", {"json": {"timezone": "Mars/Base"}}, "timezone"),
        ("PATCH", "/v2/subscribers/user-000001", {"json": {"locale": "!!"}}, "locale"),
        ("PATCH", "/v2/subscribers/user-000001", {"json": {"firstName": 5}}, "firstName"),
        ("PATCH", "/v2/subscribers/user-000001", {"json": {"data": [1]}}, "data"),
        ("PATCH", "/v2/subscribers/user-000001", {"json": ["x"]}, "body"),
        (
            "PATCH",
            "/v1/subscribers/user-000001/credentials",
            {"json": {"providerId": "carrier-pigeon", "credentials": {}}},
            "providerId",
        ),
        (
            "PATCH",
            "/v1/subscribers/user-000001/credentials",
            {"json": {"providerId": "fcm", "credentials": {"deviceTokens": "abc"}}},
            "credentials.deviceTokens",
        ),
        ("POST", "/v1/integrations", {"json": {"providerId": "x", "channel": "fax"}}, "channel"),
        ("POST", "/v1/integrations", {"json": {"channel": "email"}}, "providerId"),
        (
            "POST",
            "/v1/integrations",
            {"json": {"providerId": "x", "channel": "sms", "active": "yes"}},
            "active",
        ),
        (
            "POST",
            "/v1/integrations",
            {
                "json": {
                    "providerId": "x",
                    "channel": "sms",
                    "conditions": [
                        {
                            "children": [
                                {"field": "a", "value": "b", "on": "payload", "operator": "ROUGHLY"}
                            ]
                        }
                    ],
                }
            },
            "conditions.0.children.0.operator",
        ),  # fmt: skip
    ],
)
def test_invalid_requests_answer_422_naming_the_field(sandbox, method, path, kwargs, field):
    body = error(call(sandbox, method, path, **kwargs), 422)
    assert field in body["errors"], body
    assert body["errors"][field]["messages"]


def test_malformed_json_is_400(sandbox):
    response = call(
        sandbox,
        "PATCH",
        "/v2/subscribers/user-000001",
        data="{not json",
        headers={"Content-Type": "application/json"},
    )
    assert error(response, 400)["message"].startswith("Invalid JSON body")


def test_openapi_describes_the_seven_operations_and_the_key(sandbox):
    schema = requests.get(f"{sandbox.url}/openapi.json", timeout=10).json()
    operations = {(m.upper(), p) for p, item in schema["paths"].items() for m in item}
    assert operations == {
        ("PATCH", "/v1/subscribers/{subscriberId}/credentials"),
        ("PATCH", "/v2/subscribers/{subscriberId}"),
        ("GET", "/v2/subscribers"),
        ("GET", "/v2/subscribers/{subscriberId}/subscriptions"),
        ("POST", "/v1/integrations"),
        ("DELETE", "/v1/integrations/{integrationId}"),
        ("GET", "/v1/notifications"),
    }
    scheme = schema["components"]["securitySchemes"]["ApiKey"]
    assert scheme == {**scheme, "type": "apiKey", "in": "header", "name": "Authorization"}


# --- search subscribers --------------------------------------------------------------------


def test_search_defaults_to_ten_newest_by_id(sandbox):
    page = ok(call(sandbox, "GET", "/v2/subscribers"))
    ids = [item["_id"] for item in page["data"]]
    assert len(ids) == 10 and ids == sorted(ids, reverse=True)
    assert page["previous"] is None and page["next"] == ids[-1]
    assert page["totalCount"] == 2000 and page["totalCountCapped"] is False
    assert {item["_environmentId"] for item in page["data"]} == {env_id(sandbox)}


@pytest.mark.parametrize("direction", ["ASC", "DESC"])
def test_search_walks_every_subscriber_once_both_ways(sandbox, direction):
    params = {"limit": 100, "orderDirection": direction}
    forwards = walk(sandbox, "/v2/subscribers", params)
    assert len(forwards) == len(set(forwards)) == 2000
    assert forwards == sorted(forwards, reverse=direction == "DESC")
    assert walk(sandbox, "/v2/subscribers", params, backwards=True) == forwards


def test_search_walks_in_created_at_order(sandbox):
    params = {"limit": 37, "orderBy": "createdAt", "orderDirection": "ASC", "email": "@gmail"}
    forwards = walk(sandbox, "/v2/subscribers", params)
    assert len(forwards) == len(set(forwards)) > 37
    assert walk(sandbox, "/v2/subscribers", params, backwards=True) == forwards


def test_search_include_cursor_and_unknown_cursor(sandbox):
    first = ok(call(sandbox, "GET", "/v2/subscribers", params={"limit": 3}))
    cursor = first["data"][1]["_id"]
    after = ok(call(sandbox, "GET", "/v2/subscribers", params={"after": cursor, "limit": 2}))
    assert after["data"][0]["_id"] == first["data"][2]["_id"]
    assert after["previous"] == first["data"][2]["_id"]
    included = ok(
        call(
            sandbox,
            "GET",
            "/v2/subscribers",
            params={"after": cursor, "limit": 2, "includeCursor": "true"},
        )
    )
    assert [i["_id"] for i in included["data"]] == [cursor, first["data"][2]["_id"]]
    before = ok(call(sandbox, "GET", "/v2/subscribers", params={"before": cursor}))
    assert [i["_id"] for i in before["data"]] == [first["data"][0]["_id"]]
    assert before["previous"] is None
    unknown = ok(call(sandbox, "GET", "/v2/subscribers", params={"after": "f" * 24}))
    assert unknown["data"] == [] and unknown["next"] is None and unknown["previous"] is None


def test_search_filters_are_case_sensitive_substrings_combined_with_and(sandbox):
    someone = ok(call(sandbox, "GET", "/v2/subscribers", params={"limit": 1}))["data"][0]
    local = someone["email"].split("@")[0]
    by_email = ok(call(sandbox, "GET", "/v2/subscribers", params={"email": local, "limit": 100}))
    assert someone["_id"] in {s["_id"] for s in by_email["data"]}
    assert all(local in s["email"] for s in by_email["data"])
    upper = ok(call(sandbox, "GET", "/v2/subscribers", params={"email": local.upper()}))
    assert someone["_id"] not in {s["_id"] for s in upper["data"]}
    full_name = f"{someone['firstName']} {someone['lastName']}"
    by_name = ok(call(sandbox, "GET", "/v2/subscribers", params={"name": full_name, "limit": 100}))
    assert someone["_id"] in {s["_id"] for s in by_name["data"]}
    both = ok(
        call(
            sandbox,
            "GET",
            "/v2/subscribers",
            params={"name": someone["firstName"], "subscriberId": someone["subscriberId"]},
        )
    )
    assert [s["_id"] for s in both["data"]] == [someone["_id"]] and both["totalCount"] == 1
    if someone["phone"]:
        by_phone = ok(call(sandbox, "GET", "/v2/subscribers", params={"phone": someone["phone"]}))
        assert someone["_id"] in {s["_id"] for s in by_phone["data"]}
    exact = ok(call(sandbox, "GET", "/v2/subscribers", params={"subscriberId": "user-00000"}))
    assert exact["data"] == [] and exact["totalCount"] == 0


# --- subscriptions -------------------------------------------------------------------------


def _busy_subscriber(sb) -> tuple[str, int]:
    """A subscriber of the default environment with the most subscriptions, and their count."""
    with sb.store.read() as db:
        row = db.execute(
            "SELECT b.subscriber_id, COUNT(*) FROM subscriptions s JOIN subscribers b"
            " ON b.id = s.subscriber_id WHERE s.environment_id = ? GROUP BY b.id"
            " ORDER BY 2 DESC, 1 LIMIT 1",
            (env_id(sb),),
        ).fetchone()
    return row[0], row[1]


@pytest.mark.parametrize("direction", ["ASC", "DESC"])
def test_subscriptions_walk_every_item_once_both_ways(sandbox, direction):
    subscriber_id, count = _busy_subscriber(sandbox)
    path = f"/v2/subscribers/{subscriber_id}/subscriptions"
    params = {"limit": 2, "orderDirection": direction, "orderBy": "createdAt"}
    forwards = walk(sandbox, path, params)
    assert len(forwards) == len(set(forwards)) == count
    assert forwards == sorted(forwards, reverse=direction == "DESC")
    assert walk(sandbox, path, params, backwards=True) == forwards


def test_subscriptions_items_and_key_filter(sandbox):
    subscriber_id, count = _busy_subscriber(sandbox)
    path = f"/v2/subscribers/{subscriber_id}/subscriptions"
    page = ok(call(sandbox, "GET", path, params={"limit": 100}))
    assert page["totalCount"] == count and page["next"] is None and page["previous"] is None
    item = page["data"][0]
    assert set(item) == {"_id", "identifier", "contextKeys", "createdAt", "topic", "subscriber"}
    assert item["subscriber"]["subscriberId"] == subscriber_id
    key = item["topic"]["key"]
    only = ok(call(sandbox, "GET", path, params={"key": key}))
    assert [i["topic"]["key"] for i in only["data"]] == [key] and only["totalCount"] == 1
    assert ok(call(sandbox, "GET", path, params={"key": key[:-1]}))["data"] == []


def test_subscriptions_of_an_unknown_subscriber_are_404(sandbox):
    response = call(sandbox, "GET", "/v2/subscribers/nobody/subscriptions")
    assert error(response, 404)["message"] == "Subscriber not found"


# --- update a subscriber -------------------------------------------------------------------


def test_update_subscriber_absent_null_and_data(fresh_sandbox):
    sb = fresh_sandbox
    before = subscriber(sb, "user-000002")
    body = {"firstName": "Ada", "phone": None, "data": {"tier": "gold"}, "unknownField": 1}
    after = ok(call(sb, "PATCH", "/v2/subscribers/user-000002", json=body))["data"]
    assert after["firstName"] == "Ada" and after["phone"] is None
    assert after["data"] == {"tier": "gold"}
    assert after["lastName"] == before["lastName"] and after["email"] == before["email"]
    assert after["__v"] == before["__v"] + 1 and after["updatedAt"] > before["updatedAt"]
    assert "unknownField" not in after
    assert subscriber(sb, "user-000002") == after
    unchanged = ok(call(sb, "PATCH", "/v2/subscribers/user-000002", json={}))["data"]
    assert unchanged == after


def test_update_subscriber_validates_and_writes_nothing_on_failure(fresh_sandbox):
    sb = fresh_sandbox
    before = subscriber(sb, "user-000003")
    body = {"firstName": "Changed", "timezone": "Europe/Nowhere"}
    assert (
        "timezone"
        in error(call(sb, "PATCH", "/v2/subscribers/user-000003", json=body), 422)["errors"]
    )
    assert subscriber(sb, "user-000003") == before
    good = {"email": "a.b@example.org", "timezone": "Asia/Tokyo", "locale": "pt_BR"}
    after = ok(call(sb, "PATCH", "/v2/subscribers/user-000003", json=good))["data"]
    assert {k: after[k] for k in good} == good


def test_update_unknown_subscriber_is_404(sandbox):
    response = call(sandbox, "PATCH", "/v2/subscribers/ghost", json={"firstName": "x"})
    assert error(response, 404)["message"] == "Subscriber ghost was not found"


# --- upsert credentials --------------------------------------------------------------------


def _credentials(sb, subscriber_id, body, **kwargs):
    return call(sb, "PATCH", f"/v1/subscribers/{subscriber_id}/credentials", json=body, **kwargs)


def _channel(doc, provider_id):
    return [c for c in doc["channels"] if c["providerId"] == provider_id]


def test_device_tokens_replace_deduplicated_and_empty_clears(fresh_sandbox):
    sb = fresh_sandbox
    before = subscriber(sb, "user-000004")
    body = {"providerId": "expo", "credentials": {"deviceTokens": ["t1", "t2", "t1"]}}
    doc = ok(_credentials(sb, "user-000004", body))["data"]
    (entry,) = _channel(doc, "expo")
    assert entry["credentials"]["deviceTokens"] == ["t1", "t2"]
    assert entry["_integrationId"] and entry["integrationIdentifier"]
    assert doc["__v"] == before["__v"] + 1
    body["credentials"]["deviceTokens"] = ["t3"]
    (entry,) = _channel(ok(_credentials(sb, "user-000004", body))["data"], "expo")
    assert entry["credentials"]["deviceTokens"] == ["t3"]
    body["credentials"]["deviceTokens"] = []
    (entry,) = _channel(ok(_credentials(sb, "user-000004", body))["data"], "expo")
    assert entry["credentials"]["deviceTokens"] == []
    assert (
        subscriber(sb, "user-000004")["channels"]
        == ok(_credentials(sb, "user-000004", {"providerId": "expo", "credentials": {}}))["data"][
            "channels"
        ]
    )


def test_credentials_use_the_named_integration_or_the_newest_active(fresh_sandbox):
    sb = fresh_sandbox
    created = ok(
        call(
            sb,
            "POST",
            "/v1/integrations",
            json={"providerId": "chat-webhook", "channel": "chat", "identifier": "hooks-2"},
        ),
        201,
    )["data"]
    named = {"providerId": "chat-webhook", "integrationIdentifier": "hooks-2",
             "credentials": {"webhookUrl": "https://hooks.example/2"}}  # fmt: skip
    doc = ok(_credentials(sb, "user-000005", named))["data"]
    assert any(c["_integrationId"] == created["_id"] for c in _channel(doc, "chat-webhook"))
    newest = {"providerId": "chat-webhook", "credentials": {"webhookUrl": "https://h/1"}}
    doc = ok(_credentials(sb, "user-000005", newest))["data"]
    with sb.store.read() as db:
        active_id = db.execute(
            "SELECT id FROM integrations WHERE environment_id = ? AND provider_id = 'chat-webhook'"
            " AND active = 1 AND deleted = 0 ORDER BY created_at DESC LIMIT 1",
            (env_id(sb),),
        ).fetchone()[0]
    assert any(c["_integrationId"] == active_id for c in _channel(doc, "chat-webhook"))


def test_credentials_errors_are_400_and_write_nothing(fresh_sandbox):
    sb = fresh_sandbox
    before = subscriber(sb, "user-000006")
    missing = _credentials(sb, "user-000006", {"providerId": "discord", "credentials": {}})
    assert error(missing, 400)["message"] == (
        f"Subscribers environment ({env_id(sb)}) do not have active discord integration."
    )
    named = {"providerId": "fcm", "integrationIdentifier": "nope", "credentials": {}}
    error(_credentials(sb, "user-000006", named), 400)
    many = {"providerId": "fcm", "credentials": {"deviceTokens": [f"t{i}" for i in range(101)]}}
    error(_credentials(sb, "user-000006", many), 400)
    assert subscriber(sb, "user-000006") == before
    unknown = _credentials(sb, "ghost", {"providerId": "fcm", "credentials": {}})
    assert error(unknown, 400)["message"] == "SubscriberId: ghost not found"


# --- create and delete integrations --------------------------------------------------------


def test_create_integration_defaults(fresh_sandbox):
    sb = fresh_sandbox
    doc = ok(call(sb, "POST", "/v1/integrations", json={"providerId": "mailgun",
                                                          "channel": "email"}), 201)["data"]  # fmt: skip
    assert doc["name"] == "Mailgun" and doc["identifier"].startswith("mailgun-")
    assert doc["active"] is False and doc["primary"] is False and doc["deleted"] is False
    assert doc["_environmentId"] == env_id(sb) and doc["credentials"] == {}
    full = {
        "providerId": "generic-sms",
        "channel": "sms",
        "name": "My SMS",
        "identifier": "my-sms",
        "_environmentId": env_id(sb),
        "credentials": {"apiKey": "k", "secure": True, "tlsOptions": {"a": 1}},
        "active": True,
        "check": False,
        "conditions": [{"isNegated": False, "type": "GROUP", "value": "AND", "children": [
            {"field": "plan", "value": "pro", "operator": "EQUAL", "on": "subscriber"}]}],
        "configurations": {"inboundWebhookEnabled": False},
    }  # fmt: skip
    doc = ok(call(sb, "POST", "/v1/integrations", json=full), 201)["data"]
    for key in ("name", "identifier", "credentials", "conditions", "configurations", "active"):
        assert doc[key] == full[key]


def test_primary_goes_to_the_first_active_email_or_sms_of_its_channel(fresh_sandbox):
    """Globex starts with the seeded integrations: delete every sms one, then create."""
    sb = fresh_sandbox
    env = "Globex/Development"
    with sb.store.read() as db:
        sms = [r[0] for r in db.execute(
            "SELECT id FROM integrations WHERE environment_id = ? AND channel = 'sms'"
            " AND deleted = 0", (env_id(sb, env),))]  # fmt: skip
    for integration_id in sms:
        ok(call(sb, "DELETE", f"/v1/integrations/{integration_id}", env=env))

    def create(**body):
        body = {"providerId": "twilio", "channel": "sms", **body}
        return ok(call(sb, "POST", "/v1/integrations", env=env, json=body), 201)["data"]

    assert create(active=False)["primary"] is False
    assert create(active=True)["primary"] is True
    assert create(active=True)["primary"] is False
    assert create(channel="push", providerId="fcm", active=True)["primary"] is False


def test_create_integration_conflicts_and_forbidden_environment(fresh_sandbox):
    sb = fresh_sandbox
    body = {"providerId": "ses", "channel": "email", "identifier": "dup"}
    ok(call(sb, "POST", "/v1/integrations", json=body), 201)
    conflict = error(call(sb, "POST", "/v1/integrations", json=body), 409)
    assert conflict["message"] == "Integration with identifier already exists"
    ok(call(sb, "POST", "/v1/integrations", json=body, env="Acme/Production"), 201)
    other = {**body, "identifier": "x", "_environmentId": env_id(sb, "Acme/Production")}
    error(call(sb, "POST", "/v1/integrations", json=other), 403)
    with sb.store.read() as db:
        count = db.execute("SELECT COUNT(*) FROM integrations WHERE identifier IN ('dup', 'x')")
        assert count.fetchone()[0] == 2


def test_delete_integration_soft_deletes_and_lists_the_rest(fresh_sandbox):
    sb = fresh_sandbox
    created = ok(
        call(sb, "POST", "/v1/integrations", json={"providerId": "resend", "channel": "email"}),
        201,
    )["data"]
    remaining = ok(call(sb, "DELETE", f"/v1/integrations/{created['_id']}"))["data"]
    assert created["_id"] not in {i["_id"] for i in remaining}
    assert remaining and all(i["credentials"] == {} for i in remaining)
    assert {i["_environmentId"] for i in remaining} == {env_id(sb)}
    assert all(i["deleted"] is False for i in remaining)
    with sb.store.read() as db:
        row = db.execute(
            "SELECT deleted, deleted_at, deleted_by FROM integrations WHERE id = ?",
            (created["_id"],),
        ).fetchone()
    assert row[0] == 1 and row[1] and row[2]
    again = error(call(sb, "DELETE", f"/v1/integrations/{created['_id']}"), 404)
    assert again["message"] == f"Entity with id {created['_id']} not found"


# --- tenancy -------------------------------------------------------------------------------


@pytest.mark.parametrize("env", ["Acme/Development", "Acme/Production", "Globex/Development"])
def test_each_key_sees_only_its_environment(sandbox, env):
    own = env_id(sandbox, env)
    subscribers = ok(call(sandbox, "GET", "/v2/subscribers", env=env, params={"limit": 100}))
    assert subscribers["data"] and {s["_environmentId"] for s in subscribers["data"]} == {own}
    with sandbox.store.read() as db:
        expected = db.execute(
            "SELECT COUNT(*) FROM subscribers WHERE environment_id = ? AND deleted = 0", (own,)
        ).fetchone()[0]
    assert subscribers["totalCount"] == expected
    feed = ok(call(sandbox, "GET", "/v1/notifications", env=env, params={"limit": 50}))
    assert feed["data"] and {n["_environmentId"] for n in feed["data"]} == {own}
    foreign = ok(call(sandbox, "GET", "/v2/subscribers", params={"limit": 1}))["data"][0]
    if env != "Acme/Development":
        params = {"subscriberId": foreign["subscriberId"]}
        found = ok(call(sandbox, "GET", "/v2/subscribers", env=env, params=params))["data"]
        assert all(s["_id"] != foreign["_id"] for s in found)


def test_a_key_cannot_change_another_environments_records(fresh_sandbox):
    sb = fresh_sandbox
    globex = "Globex/Development"
    with sb.store.read() as db:
        acme_only = db.execute(
            "SELECT subscriber_id FROM subscribers WHERE environment_id = ? AND subscriber_id"
            " NOT IN (SELECT subscriber_id FROM subscribers WHERE environment_id = ?) LIMIT 1",
            (env_id(sb), env_id(sb, globex)),
        ).fetchone()[0]
        acme_integration = db.execute(
            "SELECT id FROM integrations WHERE environment_id = ? AND deleted = 0 LIMIT 1",
            (env_id(sb),),
        ).fetchone()[0]
    before = subscriber(sb, acme_only)
    patch = call(sb, "PATCH", f"/v2/subscribers/{acme_only}", env=globex, json={"firstName": "X"})
    error(patch, 404)
    credentials = {"providerId": "fcm", "credentials": {"deviceTokens": ["x"]}}
    error(_credentials(sb, acme_only, credentials, env=globex), 400)
    error(call(sb, "GET", f"/v2/subscribers/{acme_only}/subscriptions", env=globex), 404)
    error(call(sb, "DELETE", f"/v1/integrations/{acme_integration}", env=globex), 404)
    assert subscriber(sb, acme_only) == before
    remaining = ok(call(sb, "GET", "/v2/subscribers", params={"subscriberId": acme_only}))
    assert remaining["data"] == [before]
    with sb.store.read() as db:
        deleted = db.execute("SELECT deleted FROM integrations WHERE id = ?", (acme_integration,))
        assert deleted.fetchone()[0] == 0


# --- activity feed -------------------------------------------------------------------------


def feed(sb, env=None, **params) -> requests.Response:
    return call(sb, "GET", "/v1/notifications", env=env, params=params)


def test_feed_pages_newest_first(sandbox):
    first = ok(feed(sandbox))
    assert first["page"] == 0 and first["pageSize"] == 10 and first["hasMore"] is True
    second = ok(feed(sandbox, page=1, limit=10))
    both = first["data"] + second["data"]
    keys = [(n["createdAt"], n["_id"]) for n in both]
    assert keys == sorted(keys, reverse=True) and len(set(keys)) == 20
    fifty = ok(feed(sandbox, limit=50))
    assert [n["_id"] for n in fifty["data"][:20]] == [n["_id"] for n in both]


def test_feed_filters(sandbox):
    sample = ok(feed(sandbox, limit=50))["data"]
    by_channel = ok(feed(sandbox, channels=["sms", "chat"], limit=50))["data"]
    assert by_channel and all({"sms", "chat"} & set(n["channels"]) for n in by_channel)
    single = ok(feed(sandbox, channels="sms", limit=50))["data"]
    assert single and all("sms" in n["channels"] for n in single)
    template = ok(feed(sandbox, templates=sample[0]["_templateId"], limit=50))["data"]
    assert template and all(n["_templateId"] == sample[0]["_templateId"] for n in template)
    who = sample[0]["subscriber"]
    mine = ok(feed(sandbox, subscriberIds=[who["subscriberId"], "ghost"], limit=50))["data"]
    assert mine and all(n["_subscriberId"] == who["_id"] for n in mine)
    if who.get("email"):
        by_email = ok(feed(sandbox, emails=who["email"], limit=50))["data"]
        assert [n["_id"] for n in by_email] == [n["_id"] for n in mine]
    transaction = ok(feed(sandbox, transactionId=sample[0]["transactionId"]))["data"]
    assert [n["_id"] for n in transaction] == [sample[0]["_id"]]
    with sandbox.store.read() as db:
        key = db.execute("SELECT topic_key FROM notification_topics LIMIT 1").fetchone()[0]
    topical = ok(feed(sandbox, topicKey=key, limit=50))["data"]
    assert topical and all(key in {t["topicKey"] for t in n["topics"]} for n in topical)
    searched = ok(feed(sandbox, search=sample[0]["transactionId"]))["data"]
    assert sample[0]["_id"] in {n["_id"] for n in searched}


def test_feed_severity_none_also_matches_missing_severity(sandbox):
    for value in ("high", "medium", "low"):
        page = ok(feed(sandbox, severity=value, limit=50))["data"]
        assert page and all(n.get("severity") == value for n in page)
    none = ok(feed(sandbox, severity="none", limit=50))["data"]
    assert none and all(n.get("severity") in (None, "none") for n in none)
    after = iso(sandbox.now() - timedelta(days=1))
    with sandbox.store.read() as db:
        expected = db.execute(
            "SELECT COUNT(*) FROM notifications WHERE environment_id = ? AND created_at >= ?"
            " AND (severity IS NULL OR severity IN ('none', 'low'))",
            (env_id(sandbox), after),
        ).fetchone()[0]
    seen, page = [], 0
    while True:
        params = {"severity": ["none", "low"], "limit": 50, "page": page, "after": after}
        data = ok(feed(sandbox, **params))["data"]
        seen, page = seen + [n["_id"] for n in data], page + 1
        if len(data) < 50:
            break
    assert len(seen) == len(set(seen)) == expected > 50


def test_feed_unknown_subscribers_give_an_empty_first_page(sandbox):
    body = ok(feed(sandbox, subscriberIds=["ghost"], emails="nobody@nowhere.example", page=3))
    assert body == {"hasMore": False, "data": [], "pageSize": 10, "page": 0}


def test_feed_time_window(sandbox):
    now = sandbox.now()
    window = {"after": iso(now - timedelta(hours=2)), "before": iso(now - timedelta(hours=1))}
    data = ok(feed(sandbox, limit=50, **window))["data"]
    assert data and all(window["after"] <= n["createdAt"] <= window["before"] for n in data)
    bad = error(feed(sandbox, after="yesterday"), 400)
    assert bad["message"].startswith("Invalid date format for parameter 'after': yesterday.")
    error(feed(sandbox, after=window["before"], before=window["after"]), 400)
    ok(feed(sandbox, after=iso(now - timedelta(days=89))))
    error(feed(sandbox, after=iso(now - timedelta(days=91))), 402)


def test_free_plan_retention_is_24_hours(sandbox):
    env = "Globex/Development"
    data = ok(feed(sandbox, env=env, limit=50))["data"]
    cutoff = iso(sandbox.now() - timedelta(days=1))
    assert data and all(n["createdAt"] >= cutoff for n in data)
    ok(feed(sandbox, env=env, after=iso(sandbox.now() - timedelta(hours=24, minutes=5))))
    refused = error(feed(sandbox, env=env, after=iso(sandbox.now() - timedelta(days=2))), 402)
    assert refused["message"].startswith(
        "Requested date range exceeds your plan's retention period."
    )
    assert refused["error"] == "Payment Required"


def test_feed_huge_page_is_empty(sandbox):
    body = ok(feed(sandbox, page=10**30, limit=50))
    assert body["data"] == [] and body["hasMore"] is False and body["page"] == 10**30


# --- idempotency ---------------------------------------------------------------------------


def _post(sb, body, key, env=None):
    return call(sb, "POST", "/v1/integrations", env=env, json=body,
                headers={"idempotency-key": key})  # fmt: skip


def test_idempotent_post_replays_the_first_result(fresh_sandbox):
    sb = fresh_sandbox
    body = {"providerId": "postmark", "channel": "email"}
    first = _post(sb, body, "key-1")
    assert first.status_code == 201 and first.headers["Idempotency-Key"] == "key-1"
    assert "Idempotency-Replay" not in first.headers
    again = _post(sb, body, "key-1")
    assert again.status_code == 201 and again.json() == first.json()
    assert again.headers["Idempotency-Replay"] == "true"
    assert again.headers["Idempotency-Key"] == "key-1"
    with sb.store.read() as db:
        assert db.execute("SELECT COUNT(*) FROM integrations WHERE provider_id = 'postmark'"
                          " AND environment_id = ?", (env_id(sb),)).fetchone()[0] == 2  # fmt: skip
    other = _post(sb, {**body, "name": "Other"}, "key-1")
    assert error(other, 422)["message"] == (
        'Request with key "key-1" is being reused for a different body'
    )
    # keys belong to an organization: Globex may use the same key for its own request
    assert "Idempotency-Replay" not in _post(sb, body, "key-1", env="Globex/Development").headers


def test_idempotent_patch_and_stored_client_errors(fresh_sandbox):
    sb = fresh_sandbox
    path = "/v2/subscribers/user-000007"
    headers = {"idempotency-key": "patch-1"}
    first = call(sb, "PATCH", path, json={"lastName": "One"}, headers=headers)
    ok(call(sb, "PATCH", path, json={"lastName": "Two"}))
    replay = call(sb, "PATCH", path, json={"lastName": "One"}, headers=headers)
    assert replay.json() == first.json() and replay.headers["Idempotency-Replay"] == "true"
    assert subscriber(sb, "user-000007")["lastName"] == "Two"
    bad = {"headers": {"idempotency-key": "bad-1"}, "json": {"email": "x"}}
    error(call(sb, "PATCH", path, **bad), 422)
    assert call(sb, "PATCH", path, **bad).headers["Idempotency-Replay"] == "true"


def test_idempotency_key_limits_and_methods(fresh_sandbox):
    sb = fresh_sandbox
    body = {"providerId": "ses", "channel": "email"}
    assert error(_post(sb, body, "k" * 256), 400)["message"].startswith("Idempotency key")
    assert _post(sb, body, "k" * 255).status_code == 201
    for _ in range(2):
        get = call(sb, "GET", "/v1/notifications", headers={"idempotency-key": "g" * 300})
        assert get.status_code == 200 and "Idempotency-Replay" not in get.headers


def test_a_request_still_running_answers_409(fresh_sandbox):
    sb = fresh_sandbox
    body = {"providerId": "ses", "channel": "email"}
    first = _post(sb, body, "running-1")
    with sb.store.write() as db:  # as if the first request had not finished yet
        db.execute("UPDATE idempotency SET state = 'running' WHERE key = 'running-1'")
    busy = _post(sb, body, "running-1")
    assert error(busy, 409)["statusCode"] == 409 and busy.headers["Retry-After"] == "1"
    assert first.status_code == 201


def test_idempotency_keys_expire_after_24_hours(fresh_sandbox):
    sb = fresh_sandbox
    body = {"providerId": "ses", "channel": "email"}
    first = ok(_post(sb, body, "old-1"), 201)
    sb.clock.start += timedelta(hours=24, minutes=1)
    second = _post(sb, body, "old-1")
    assert "Idempotency-Replay" not in second.headers
    assert ok(second, 201)["data"]["_id"] != first["data"]["_id"]


def test_error_bodies_are_json_with_every_field(sandbox):
    for response in (
        call(sandbox, "GET", "/v1/nothing"),
        call(sandbox, "GET", "/v1/notifications", key="bad"),
        feed(sandbox, limit=0),
    ):
        assert response.headers["content-type"].startswith("application/json")
        assert set(json.loads(response.text)) >= ERROR_FIELDS


def test_an_unexpected_failure_is_500_with_an_error_id(fresh_sandbox):
    ok(call(fresh_sandbox, "GET", "/v1/notifications"))
    fresh_sandbox.store.close()  # every query now fails inside the service
    body = error(call(fresh_sandbox, "GET", "/v1/notifications"), 500)
    assert body["message"] == "Internal server error" and len(body["errorId"]) == 32
