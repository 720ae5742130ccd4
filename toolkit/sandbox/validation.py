"""Wire models of the sandbox API and the field-keyed validation errors.

Request models validate bodies (strictly: a string field takes only a string, a boolean only a
boolean; unknown fields are ignored). Response models only describe what the routes send, for
the OpenAPI document; the routes build their JSON themselves. Vocabularies are the spec's.
"""

from __future__ import annotations

import json
import math
import re
from typing import Annotated, Any, Literal
from zoneinfo import available_timezones

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, WithJsonSchema, create_model
from pydantic_core import PydanticCustomError

# --------------------------------------------------------------------------------------------
# Vocabularies (the spec's enumerations; chat providers as the reference notes list them)
# --------------------------------------------------------------------------------------------

Channel = Literal["in_app", "email", "sms", "chat", "push"]
NotificationChannel = Literal[
    "in_app", "email", "sms", "chat", "push", "digest", "trigger", "delay", "throttle", "custom"
]
Severity = Literal["high", "medium", "low", "none"]
OrderDirection = Literal["ASC", "DESC"]
#: Fields the subscriber search can order by (the spec does not list them; ``_id`` is the default).
SearchOrderBy = Literal["_id", "createdAt", "updatedAt"]
ChannelProvider = Literal[
    # chat
    "slack", "discord", "msteams", "mattermost", "ryver", "zulip", "grafana-on-call", "getstream",
    "rocket-chat", "whatsapp-business", "telegram", "chat-webhook", "svc-slack",
    # push
    "fcm", "apns", "expo", "one-signal", "pushpad", "pusher-beams", "push-webhook",
]  # fmt: skip
FilterType = Literal[
    "BOOLEAN", "TEXT", "DATE", "NUMBER", "STATEMENT", "LIST", "MULTI_LIST", "GROUP"
]
FilterOperator = Literal[
    "LARGER", "SMALLER", "LARGER_EQUAL", "SMALLER_EQUAL", "EQUAL", "NOT_EQUAL", "ALL_IN", "ANY_IN",
    "NOT_IN", "BETWEEN", "NOT_BETWEEN", "LIKE", "NOT_LIKE", "IN",
]  # fmt: skip

#: Most device tokens one credentials update may carry (more: 400).
MAX_DEVICE_TOKENS = 100
#: Deepest nesting accepted in free-form objects (``data``, ``tlsOptions``).
MAX_DEPTH = 32

# --------------------------------------------------------------------------------------------
# Checked values
# --------------------------------------------------------------------------------------------

_ZONES = frozenset(available_timezones())
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s.]+")
_INTEGER = re.compile(r"-?[0-9]{1,18}")
_LOCALE = re.compile(r"[A-Za-z]{2,3}(?:[_-][A-Za-z0-9]{2,8})*")


def _invalid(message: str) -> PydanticCustomError:
    return PydanticCustomError("invalid", message)


def _storable(text: str) -> str:
    """Reject strings that cannot be stored as UTF-8 (lone surrogates from ``\\ud800`` escapes)."""
    try:
        text.encode()
    except UnicodeEncodeError:
        raise _invalid("must be valid Unicode text") from None
    return text


def _json_value(value: Any, depth: int = 0) -> None:
    if depth > MAX_DEPTH:
        raise _invalid(f"must not be nested deeper than {MAX_DEPTH} levels")
    if isinstance(value, str):
        _storable(value)
    elif isinstance(value, float) and not math.isfinite(value):
        raise _invalid("must hold finite numbers only")
    elif isinstance(value, list):
        for item in value:
            _json_value(item, depth + 1)
    elif isinstance(value, dict):
        for key, item in value.items():
            _storable(key)
            _json_value(item, depth + 1)


def _free_object(value: dict[str, Any]) -> dict[str, Any]:
    _json_value(value)
    return value


def _email(value: str) -> str:
    if not _EMAIL.fullmatch(value):
        raise _invalid("must be an email")
    return value


def _timezone(value: str) -> str:
    if value not in _ZONES:
        raise _invalid("must be a valid IANA time zone")
    return value


def _locale(value: str) -> str:
    if not _LOCALE.fullmatch(value):
        raise _invalid("must be a locale")
    return value


Text = Annotated[str, AfterValidator(_storable)]
FreeObject = Annotated[dict[str, Any], AfterValidator(_free_object)]
# Checked by the validators above (their messages name the field); the schemas document them.
Email = Annotated[
    Text, AfterValidator(_email), WithJsonSchema({"type": "string", "format": "email"})
]
TimeZone = Annotated[
    Text,
    AfterValidator(_timezone),
    WithJsonSchema({"type": "string", "description": "An IANA time zone, e.g. Europe/Berlin"}),
]
Locale = Annotated[
    Text,
    AfterValidator(_locale),
    WithJsonSchema({"type": "string", "pattern": f"^{_LOCALE.pattern}$"}),
]

# --------------------------------------------------------------------------------------------
# Shared by requests and responses
# --------------------------------------------------------------------------------------------


class _Body(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore", populate_by_name=True)


class ChannelCredentials(_Body):
    webhookUrl: Text = None
    channel: Text = None
    deviceTokens: list[Text] = None
    alertUid: Text = None
    title: Text = None
    imageUrl: Text = None
    state: Text = None
    externalUrl: Text = None


_CREDENTIAL_STRINGS = (
    "apiKey",
    "user",
    "secretKey",
    "domain",
    "password",
    "host",
    "port",
    "region",
    "accountSid",
    "messageProfileId",
    "token",
    "from",
    "senderName",
    "projectName",
    "applicationId",
    "clientId",
    "baseUrl",
    "webhookUrl",
    "redirectUrl",
    "serviceAccount",
    "ipPoolName",
    "apiKeyRequestHeader",
    "secretKeyRequestHeader",
    "idPath",
    "datePath",
    "apiToken",
    "authenticationTokenKey",
    "instanceId",
    "alertUid",
    "title",
    "imageUrl",
    "state",
    "externalLink",
    "channelId",
    "phoneNumberIdentification",
    "accessKey",
    "appSid",
    "senderId",
)
_CREDENTIAL_FLAGS = ("secure", "requireTls", "ignoreTls", "hmac", "authenticateByToken")

IntegrationCredentials = create_model(
    "IntegrationCredentials",
    __base__=_Body,
    **{name: (Text, None) for name in _CREDENTIAL_STRINGS},
    **{name: (bool, None) for name in _CREDENTIAL_FLAGS},
    tlsOptions=(FreeObject, None),
)


class IntegrationConfigurations(_Body):
    inboundWebhookEnabled: bool = None
    inboundWebhookSigningKey: Text = None


class FieldFilterPart(_Body):
    field: Text
    value: Text
    operator: FilterOperator
    on: Literal["subscriber", "payload"]


class StepFilter(_Body):
    isNegated: bool = None
    type: FilterType = None
    value: Literal["AND", "OR"] = None
    children: list[FieldFilterPart] = None


# --------------------------------------------------------------------------------------------
# Request bodies
# --------------------------------------------------------------------------------------------


class CredentialsUpdate(_Body):
    """Body of PATCH /v1/subscribers/{subscriberId}/credentials."""

    providerId: ChannelProvider
    integrationIdentifier: Text = None
    credentials: ChannelCredentials


class SubscriberUpdate(_Body):
    """Body of PATCH /v2/subscribers/{subscriberId}: absent leaves alone, null clears."""

    firstName: Text | None = None
    lastName: Text | None = None
    email: Email | None = None
    phone: Text | None = None
    avatar: Text | None = None
    timezone: TimeZone | None = None
    locale: Locale | None = None
    data: FreeObject | None = None


class IntegrationCreate(_Body):
    """Body of POST /v1/integrations."""

    providerId: Annotated[Text, Field(min_length=1)]
    channel: Channel
    name: Annotated[Text, Field(min_length=1)] = None
    identifier: Annotated[Text, Field(min_length=1)] = None
    environmentId: Text = Field(None, alias="_environmentId")
    credentials: IntegrationCredentials = None
    active: bool = None
    check: bool = None
    conditions: list[StepFilter] = None
    configurations: IntegrationConfigurations = None


# --------------------------------------------------------------------------------------------
# Responses (documentation of what the routes send)
# --------------------------------------------------------------------------------------------


class _Doc(BaseModel):
    model_config = ConfigDict(populate_by_name=True)


class ChannelSettings(_Doc):
    providerId: ChannelProvider
    integrationIdentifier: str = None
    credentials: ChannelCredentials
    integrationId: str = Field(alias="_integrationId")


class Subscriber(_Doc):
    id: str = Field(None, alias="_id")
    subscriberId: str
    firstName: str | None = None
    lastName: str | None = None
    email: str | None = None
    phone: str | None = None
    avatar: str | None = None
    locale: str | None = None
    channels: list[ChannelSettings] = None
    topics: list[str] = None
    isOnline: bool | None = None
    lastOnlineAt: str | None = None
    version: int = Field(None, alias="__v")
    data: dict[str, Any] | None = None
    timezone: str | None = None
    organizationId: str = Field(alias="_organizationId")
    environmentId: str = Field(alias="_environmentId")
    deleted: bool
    createdAt: str
    updatedAt: str


class SubscriberEnvelope(_Doc):
    data: Subscriber


class SubscriberPage(_Doc):
    data: list[Subscriber]
    next: str | None
    previous: str | None
    totalCount: int
    totalCountCapped: bool


class Topic(_Doc):
    id: str = Field(alias="_id")
    key: str
    name: str = None
    createdAt: str = None
    updatedAt: str = None


class SubscriberSummary(_Doc):
    id: str = Field(alias="_id")
    subscriberId: str
    avatar: str | None = None
    firstName: str | None = None
    lastName: str | None = None
    email: str | None = None


class TopicSubscription(_Doc):
    id: str = Field(alias="_id")
    identifier: str = Field(
        description="The subscription's key: `tk=<topic key>:si=<subscriberId>`."
    )
    contextKeys: list[str] = Field(description="Context keys of the subscription (often empty).")
    createdAt: str
    topic: Topic
    subscriber: SubscriberSummary


class SubscriptionPage(_Doc):
    data: list[TopicSubscription]
    next: str | None
    previous: str | None
    totalCount: int
    totalCountCapped: bool


class Integration(_Doc):
    id: str = Field(None, alias="_id")
    environmentId: str = Field(alias="_environmentId")
    organizationId: str = Field(alias="_organizationId")
    name: str
    identifier: str
    providerId: str
    channel: Channel
    credentials: IntegrationCredentials
    configurations: IntegrationConfigurations = None
    active: bool
    deleted: bool
    deletedAt: str = None
    deletedBy: str = None
    primary: bool
    conditions: list[StepFilter] = None


class IntegrationEnvelope(_Doc):
    data: Integration


class IntegrationList(_Doc):
    data: list[Integration]


class ActivitySubscriber(_Doc):
    subscriberId: str
    id: str = Field(alias="_id")
    firstName: str = None
    lastName: str = None
    email: str = None
    phone: str = None


class _Name(_Doc):
    name: str


class Trigger(_Doc):
    type: Literal["event"]
    identifier: str
    variables: list[_Name]
    subscriberVariables: list[_Name] = None


class ActivityTemplate(_Doc):
    id: str = Field(None, alias="_id")
    name: str
    origin: Literal["svc-cloud", "svc-cloud-v1", "external"] = None
    triggers: list[Trigger]


class ActivityTopic(_Doc):
    topicId: str = Field(alias="_topicId")
    topicKey: str


TimeUnit = Literal["seconds", "minutes", "hours", "days", "weeks", "months"]
WeekDay = Literal["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]


class DigestTimedConfig(_Doc):
    atTime: str = None
    weekDays: list[WeekDay] = None
    monthDays: list[float] = None
    ordinal: Literal["1", "2", "3", "4", "5", "last"] = None
    ordinalValue: Literal["day", "weekday", "weekend", WeekDay] = None
    monthlyType: Literal["each", "on"] = None
    cronExpression: str = None
    untilDate: str = None


class DigestMetadata(_Doc):
    type: Literal["regular", "backoff", "timed"]
    digestKey: str = None
    amount: float = None
    unit: TimeUnit = None
    events: list[dict[str, Any]] = None
    backoff: bool = None
    backoffAmount: float = None
    backoffUnit: TimeUnit = None
    updateMode: bool = None
    timed: DigestTimedConfig = None


class ExecutionDetail(_Doc):
    id: str = Field(alias="_id")
    createdAt: str = None
    status: Literal["Success", "Warning", "Failed", "Pending", "Queued", "ReadConfirmation"]
    detail: str
    isRetry: bool
    isTest: bool
    providerId: str = None
    raw: str | None = None
    source: Literal["Credentials", "Internal", "Payload", "Webhook"]


class ActivityStep(_Doc):
    id: str = Field(alias="_id")
    active: bool
    filters: list[StepFilter]
    templateId: str = Field(alias="_templateId")
    replyCallback: dict[str, Any] = None
    controlVariables: dict[str, Any] = None
    metadata: dict[str, Any] = None
    issues: dict[str, Any] = None
    template: dict[str, Any] = None
    variants: list[ActivityStep] = None
    name: str = None
    parentId: str | None = Field(None, alias="_parentId")


class ActivityJob(_Doc):
    id: str = Field(alias="_id")
    type: NotificationChannel
    digest: DigestMetadata = None
    executionDetails: list[ExecutionDetail]
    step: ActivityStep
    overrides: dict[str, Any] = None
    payload: dict[str, Any] = None
    providerId: str
    status: str
    updatedAt: str = None
    scheduleExtensionsCount: float = None


class ActivityNotification(_Doc):
    id: str = Field(None, alias="_id")
    environmentId: str = Field(alias="_environmentId")
    organizationId: str = Field(alias="_organizationId")
    subscriberId: str = Field(alias="_subscriberId")
    transactionId: str
    templateId: str = Field(None, alias="_templateId")
    digestedNotificationId: str = Field(None, alias="_digestedNotificationId")
    createdAt: str = None
    updatedAt: str = None
    channels: list[NotificationChannel] = None
    subscriber: ActivitySubscriber = None
    template: ActivityTemplate = None
    jobs: list[ActivityJob] = None
    payload: dict[str, Any] = None
    tags: list[str] = None
    controls: dict[str, Any] = None
    to: dict[str, Any] = None
    topics: list[ActivityTopic] = None
    severity: Severity = None
    critical: bool = None
    contextKeys: list[str] = None


class ActivityPage(_Doc):
    hasMore: bool
    data: list[ActivityNotification]
    pageSize: int
    page: int


class ErrorBody(_Doc):
    statusCode: int
    timestamp: str
    path: str
    message: str
    error: str = None
    errorId: str = None


class FieldErrors(_Doc):
    messages: list[str]
    value: Any = None


class ValidationErrorBody(ErrorBody):
    errors: dict[str, FieldErrors]


# --------------------------------------------------------------------------------------------
# Validation errors, keyed by field
# --------------------------------------------------------------------------------------------

_MESSAGES = {
    "missing": "{field} is required",
    "less_than_equal": "{field} must not be greater than {le}",
    "greater_than_equal": "{field} must not be less than {ge}",
    "int_parsing": "{field} must be an integer number",
    "int_type": "{field} must be an integer number",
    "int_from_float": "{field} must be an integer number",
    "bool_parsing": "{field} must be a boolean value",
    "bool_type": "{field} must be a boolean value",
    "string_type": "{field} must be a string",
    "string_too_short": "{field} should not be empty",
    "literal_error": "{field} must be one of the following values: {expected}",
    "dict_type": "{field} must be an object",
    "model_type": "{field} must be an object",
    "model_attributes_type": "{field} must be an object",
    "list_type": "{field} must be an array",
    "invalid": "{field} {message}",
}


def field_errors(errors: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Pydantic/FastAPI errors as ``{field: {"messages": [...], "value": <input>}}``.

    The field is the error's location without its source (``query``, ``body``, ``path``),
    dotted for nested body fields (``credentials.deviceTokens.0``); ``body`` for the body itself.
    """
    out: dict[str, dict[str, Any]] = {}
    for error in errors:
        loc = [str(part) for part in error.get("loc", ())]
        field = ".".join(loc[1:]) or (loc[0] if loc else "request")
        template = _MESSAGES.get(error.get("type", ""), "{field}: {message}")
        message = template.format(field=field, message=error.get("msg", ""), **_ctx(error))
        value = None if error.get("type") == "missing" else _jsonable(error.get("input"))
        if loc[:1] == ["query"] and isinstance(value, str) and _INTEGER.fullmatch(value):
            value = int(value)  # echo a numeric query value as a number, like the service
        entry = out.setdefault(field, {"messages": [], "value": value})
        entry["messages"].append(message)
    return out


def _ctx(error: dict[str, Any]) -> dict[str, Any]:
    ctx = dict(error.get("ctx") or {})
    ctx.pop("field", None)
    ctx.pop("message", None)
    for name in ("le", "ge", "expected"):
        ctx.setdefault(name, "")
    return ctx


def _jsonable(value: Any) -> Any:
    """The offending input, if it can be echoed as JSON; else its text."""
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
    return value
