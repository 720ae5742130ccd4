"""Column specs and vocabularies: the single source of the frames' column names and dtypes.

Pure data (no pandas at import time), so that validation and frames can share it. The closed
vocabularies of the spec live in `toolkit.vocab` and are re-exported here; the ones only the
frames need (execution-detail statuses and sources, job statuses, derived statuses) are defined
here. Every vocabulary is a plain tuple in its display order.

>>> [column.name for column in JOBS][:3]
['job_id', 'notification_id', 'type']
"""

from __future__ import annotations

from typing import NamedTuple

from toolkit.vocab import CHANNEL_PROVIDERS, CHANNELS, ORDER_DIRECTIONS, SEVERITIES

__all__ = [
    "CHANNELS",
    "CHAT_PUSH_PROVIDERS",
    "DETAIL_SOURCES",
    "DETAIL_STATUSES",
    "DIGEST_TYPES",
    "EXECUTION_DETAILS",
    "FINAL_STATUSES",
    "IN_FLIGHT_STATUSES",
    "INTEGRATIONS",
    "JOBS",
    "JOB_STATUSES",
    "NOTIFICATIONS",
    "NOTIFICATION_STATUSES",
    "ORDER_DIRECTIONS",
    "SEVERITIES",
    "STEP_TYPES",
    "SUBSCRIBERS",
    "SUBSCRIPTIONS",
    "TEMPLATE_ORIGINS",
    "Column",
    "names",
]

# -- vocabularies ------------------------------------------------------------------------------

#: A notification's ``channels`` and a job's ``type``: the delivery channels, then the steps.
STEP_TYPES = (*CHANNELS, "digest", "trigger", "delay", "throttle", "custom")

#: ``providerId`` of subscriber channel credentials (chat, then push), from the reference notes.
CHAT_PUSH_PROVIDERS = CHANNEL_PROVIDERS

#: An execution detail's ``status`` (the spec's enumeration).
DETAIL_STATUSES = ("Success", "Warning", "Failed", "Pending", "Queued", "ReadConfirmation")

#: An execution detail's ``source``.
DETAIL_SOURCES = ("Credentials", "Internal", "Payload", "Webhook")

#: A job's ``status``: a free string in the spec; the values the real service uses.
JOB_STATUSES = (
    "pending",
    "queued",
    "running",
    "completed",
    "failed",
    "delayed",
    "canceled",
    "merged",
    "skipped",
)

#: A digest job's ``digest.type``.
DIGEST_TYPES = ("regular", "backoff", "timed")

#: An ActivityTemplate's ``origin``.
TEMPLATE_ORIGINS = ("svc-cloud", "svc-cloud-v1", "external")

#: A job's derived ``final_status`` (see `toolkit.frames`), worst first.
FINAL_STATUSES = (
    "failed",
    "warning",
    "pending",
    "queued",
    "running",
    "delayed",
    "sent",
    "delivered",
    "read",
    "completed",
    "skipped",
    "canceled",
    "merged",
)

#: Job statuses of work still under way; a notification with any such job is ``pending``.
IN_FLIGHT_STATUSES = ("pending", "queued", "running", "delayed")

#: A notification's derived overall ``status`` (see `toolkit.frames`), in `FINAL_STATUSES` order.
NOTIFICATION_STATUSES = tuple(
    status for status in FINAL_STATUSES if status == "pending" or status not in IN_FLIGHT_STATUSES
)

# -- dtypes ------------------------------------------------------------------------------------

STRING = "string"
DATETIME = "datetime64[ns, UTC]"
INT = "Int64"
FLOAT = "float64"
BOOL = "boolean"
OBJECT = "object"
CATEGORY = "category"


class Column(NamedTuple):
    """One column of a frame: its name, its pandas dtype, and for ``category`` the known values
    (unknown values found in the data are appended after them)."""

    name: str
    dtype: str
    categories: tuple[str, ...] = ()


def names(spec: tuple[Column, ...]) -> list[str]:
    """The column names of a spec, in order."""
    return [column.name for column in spec]


def _category(name: str, categories: tuple[str, ...]) -> Column:
    return Column(name, CATEGORY, categories)


# -- frames ------------------------------------------------------------------------------------

SUBSCRIBERS = (
    Column("subscriber_id", STRING),
    Column("subscriber_internal_id", STRING),
    Column("first_name", STRING),
    Column("last_name", STRING),
    Column("email", STRING),
    Column("phone", STRING),
    Column("avatar", STRING),
    Column("locale", STRING),
    Column("timezone", STRING),
    Column("data", OBJECT),
    Column("channels", OBJECT),
    Column("provider_ids", OBJECT),
    Column("device_token_count", INT),
    Column("is_online", BOOL),
    Column("last_online_at", DATETIME),
    Column("created_at", DATETIME),
    Column("updated_at", DATETIME),
    Column("deleted", BOOL),
    Column("version", INT),
    Column("environment_id", STRING),
    Column("organization_id", STRING),
)

SUBSCRIPTIONS = (
    Column("subscription_id", STRING),
    Column("identifier", STRING),
    Column("created_at", DATETIME),
    Column("topic_id", STRING),
    Column("topic_key", STRING),
    Column("topic_name", STRING),
    Column("context_keys", OBJECT),
    Column("subscriber_internal_id", STRING),
    Column("subscriber_id", STRING),
    Column("subscriber_email", STRING),
    Column("subscriber_first_name", STRING),
    Column("subscriber_last_name", STRING),
)

INTEGRATIONS = (
    Column("integration_id", STRING),
    Column("name", STRING),
    Column("identifier", STRING),
    Column("provider_id", STRING),
    _category("channel", CHANNELS),
    Column("active", BOOL),
    Column("primary", BOOL),
    Column("deleted", BOOL),
    Column("deleted_at", DATETIME),
    Column("deleted_by", STRING),
    Column("credentials", OBJECT),
    Column("conditions", OBJECT),
    Column("configurations", OBJECT),
    Column("created_at", DATETIME),
    Column("updated_at", DATETIME),
    Column("environment_id", STRING),
    Column("organization_id", STRING),
)

NOTIFICATIONS = (
    Column("notification_id", STRING),
    Column("created_at", DATETIME),
    Column("updated_at", DATETIME),
    Column("transaction_id", STRING),
    Column("template_id", STRING),
    Column("workflow_name", STRING),
    Column("workflow_identifier", STRING),
    _category("template_origin", TEMPLATE_ORIGINS),
    Column("subscriber_internal_id", STRING),
    Column("subscriber_id", STRING),
    Column("subscriber_email", STRING),
    Column("subscriber_first_name", STRING),
    Column("subscriber_last_name", STRING),
    Column("subscriber_phone", STRING),
    Column("channels", OBJECT),
    Column("topic_keys", OBJECT),
    Column("tags", OBJECT),
    _category("severity", SEVERITIES),
    Column("critical", BOOL),
    Column("digested_notification_id", STRING),
    Column("payload", OBJECT),
    Column("job_count", INT),
    Column("failed_job_count", INT),
    _category("status", NOTIFICATION_STATUSES),
    Column("environment_id", STRING),
    Column("organization_id", STRING),
)

JOBS = (
    Column("job_id", STRING),
    Column("notification_id", STRING),
    _category("type", STEP_TYPES),
    _category("status", JOB_STATUSES),
    _category("final_status", FINAL_STATUSES),
    Column("step_id", STRING),
    Column("step_name", STRING),
    Column("provider_id", STRING),
    _category("digest_type", DIGEST_TYPES),
    Column("updated_at", DATETIME),
    Column("first_execution_at", DATETIME),
    Column("last_execution_at", DATETIME),
    Column("duration_s", FLOAT),
    Column("execution_count", INT),
    Column("failed_count", INT),
    Column("retry_count", INT),
    Column("error_text", STRING),
    Column("error_code", STRING),
    Column("subscriber_id", STRING),
    Column("workflow", STRING),
)

EXECUTION_DETAILS = (
    Column("execution_detail_id", STRING),
    Column("job_id", STRING),
    Column("notification_id", STRING),
    Column("created_at", DATETIME),
    _category("status", DETAIL_STATUSES),
    _category("source", DETAIL_SOURCES),
    Column("detail", STRING),
    Column("provider_id", STRING),
    Column("is_retry", BOOL),
    Column("is_test", BOOL),
    Column("raw", STRING),
    Column("error_text", STRING),
    Column("error_code", STRING),
    _category("channel", STEP_TYPES),
)
