"""Pure functions: the service's JSON records → tidy, typed DataFrames.

Every column's dtype is declared in `toolkit.schemas`, never inferred: ids and text are
``string``, times ``datetime64[ns, UTC]``, counts ``Int64``, flags ``boolean``, channels,
statuses, types, sources and severities ``category`` (the known values first, in their
vocabulary's order, then any unknown values found, sorted: kept, never dropped), lists and
objects ``object``. An empty input gives a zero-row frame with every column and dtype.
``subscriber_id`` is always the caller's external ``subscriberId``. Nested lists and objects
(``payload``, ``data``, ...) are the records' own objects, not copies; masked ones are new.

Derived activity columns
------------------------
Execution details are taken in the order the service sends them (by ``createdAt``).

``jobs.final_status`` (`schemas.FINAL_STATUSES`), first rule that applies:

1. no execution details: the job's ``status`` (``pending`` when it has none, here and below);
2. the job is still in flight (``pending``, ``queued``, ``running``, ``delayed``): its ``status``;
3. the last detail is ``Failed``: ``failed`` (a bounce reported after the send counts);
4. the job's ``status`` is not ``completed``: that status (``failed``, ``canceled``, ...);
5. completed, by its last detail: ``ReadConfirmation`` → ``read``; ``Success`` → ``delivered``
   when the provider's webhook reported it, else ``sent`` (``completed`` for a step job such as
   digest or delay); ``Warning`` → ``warning``; anything else → ``completed``.

``notifications.status`` (`schemas.NOTIFICATION_STATUSES`) from its jobs' final statuses:
``failed`` if any job failed; else ``pending`` if any is in flight or there are no jobs; else the
first of ``read``, ``delivered``, ``sent`` (the best delivery reached), ``warning``, ``merged``
(digested into an earlier notification), ``canceled``, ``skipped``, ``completed`` that any job
has; else (only unknown statuses) the last job's final status.

``error_text`` is the ``detail`` text of a ``Failed`` execution detail (for a job, of its last
one) and ``error_code`` the provider's code found in that detail's ``raw`` (see `error_code`).
``duration_s`` is the seconds from a job's first to its last execution detail.

>>> notifications, jobs, details = activity_frames(records)
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import lru_cache
from itertools import compress, repeat
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from toolkit import schemas
from toolkit.redact import mask_channels, mask_credentials
from toolkit.schemas import Column

__all__ = [
    "Activity",
    "activity_frames",
    "empty_frame",
    "error_code",
    "integrations_frame",
    "subscribers_frame",
    "subscriptions_frame",
]

_CHANNELS = frozenset(schemas.CHANNELS)
_UNKNOWN = -2
_IN_FLIGHT = frozenset(schemas.IN_FLIGHT_STATUSES)
_COMPLETED_BY_DETAIL = {"ReadConfirmation": "read", "Warning": "warning"}
_OUTCOME_ORDER = (
    "read",
    "delivered",
    "sent",
    "warning",
    "merged",
    "canceled",
    "skipped",
    "completed",
)


class Activity(NamedTuple):
    """The activity feed as three linked frames; unpack it or use the attributes.

    ``jobs.notification_id`` refers to ``notifications``; ``execution_details.job_id`` to
    ``jobs`` (and its ``notification_id`` to the job's notification).
    """

    notifications: pd.DataFrame
    jobs: pd.DataFrame
    execution_details: pd.DataFrame

    @property
    def attrs(self) -> dict[str, Any]:
        """Provenance of the read (the same on all three frames)."""
        return self.notifications.attrs

    def __repr__(self) -> str:
        sizes = ", ".join(
            f"{name}={len(frame):,} rows" for name, frame in zip(self._fields, self, strict=True)
        )
        return f"Activity({sizes})"


# -- public frames -----------------------------------------------------------------------------


def subscribers_frame(
    records: Iterable[Mapping[str, Any]],
    *,
    reveal_secrets: bool = False,
    provenance: Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """Subscribers (`schemas.SUBSCRIBERS`), one row per record.

    ``channels`` holds the ChannelSettings with webhook URLs and device tokens masked unless
    ``reveal_secrets``; ``provider_ids`` their providers; ``device_token_count`` counts tokens.
    """
    table = _Table(schemas.SUBSCRIBERS)
    for record in records:
        channels = record.get("channels") or []
        table.add(
            (
                record.get("subscriberId"),
                record.get("_id"),
                record.get("firstName"),
                record.get("lastName"),
                record.get("email"),
                record.get("phone"),
                record.get("avatar"),
                record.get("locale"),
                record.get("timezone"),
                record.get("data"),
                channels if reveal_secrets else mask_channels(channels),
                [setting.get("providerId") for setting in channels],
                sum(len(_credentials(setting).get("deviceTokens") or ()) for setting in channels),
                record.get("isOnline"),
                record.get("lastOnlineAt"),
                record.get("createdAt"),
                record.get("updatedAt"),
                record.get("deleted"),
                record.get("__v"),
                record.get("_environmentId"),
                record.get("_organizationId"),
            )
        )
    return table.frame(provenance)


def subscriptions_frame(
    records: Iterable[Mapping[str, Any]], *, provenance: Mapping[str, Any] | None = None
) -> pd.DataFrame:
    """Topic subscriptions (`schemas.SUBSCRIPTIONS`), one row per TopicSubscription."""
    table = _Table(schemas.SUBSCRIPTIONS)
    for record in records:
        topic = record.get("topic") or {}
        subscriber = record.get("subscriber") or {}
        table.add(
            (
                record.get("_id"),
                record.get("createdAt"),
                topic.get("_id"),
                topic.get("key"),
                topic.get("name"),
                subscriber.get("_id"),
                subscriber.get("subscriberId"),
                subscriber.get("email"),
                subscriber.get("firstName"),
                subscriber.get("lastName"),
            )
        )
    return table.frame(provenance)


def integrations_frame(
    records: Iterable[Mapping[str, Any]],
    *,
    reveal_secrets: bool = False,
    provenance: Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """Integrations (`schemas.INTEGRATIONS`), one row per record.

    ``credentials`` and ``configurations`` have their secrets masked unless ``reveal_secrets``
    (see `toolkit.redact`).
    """
    table = _Table(schemas.INTEGRATIONS)
    for record in records:
        credentials, configurations = record.get("credentials"), record.get("configurations")
        if not reveal_secrets:
            credentials, configurations = (
                mask_credentials(credentials),
                mask_credentials(configurations),
            )
        table.add(
            (
                record.get("_id"),
                record.get("name"),
                record.get("identifier"),
                record.get("providerId"),
                record.get("channel"),
                record.get("active"),
                record.get("primary"),
                record.get("deleted"),
                record.get("deletedAt"),
                record.get("deletedBy"),
                credentials,
                record.get("conditions"),
                configurations,
                record.get("createdAt"),
                record.get("updatedAt"),
                record.get("_environmentId"),
                record.get("_organizationId"),
            )
        )
    return table.frame(provenance)


def activity_frames(
    records: Iterable[Mapping[str, Any]], *, provenance: Mapping[str, Any] | None = None
) -> Activity:
    """The activity feed's ActivityNotification records as three linked frames.

    One pass over the records fills the columns of `schemas.NOTIFICATIONS`, `schemas.JOBS`
    and `schemas.EXECUTION_DETAILS`; the derived columns are described in the module docstring.
    A child's keys (``notification_id``, ``job_id``, ...) are its parent's, repeated.
    """
    notifications = _Table(schemas.NOTIFICATIONS)
    jobs = _Table(schemas.JOBS, _GIVEN_JOB_COLUMNS)
    details = _Table(schemas.EXECUTION_DETAILS, _GIVEN_DETAIL_COLUMNS)
    add_notification = _notification_adder(notifications, _job_adder(jobs, details))
    for record in records:
        add_notification(record)
    del add_notification  # it holds the column lists, freed as their arrays are built

    notifications = notifications.frame(provenance)
    per_notification = notifications["job_count"].to_numpy("int64")
    notification_ids = notifications["notification_id"].array.repeat(per_notification)
    per_job = jobs.array("execution_count").to_numpy("int64")
    given = {
        "job_id": jobs.array("job_id").repeat(per_job),
        "notification_id": notification_ids.repeat(per_job),
        "channel": jobs.array("type").repeat(per_job),
    }
    details = details.frame(provenance, given)
    first, last = _first_and_last(details["created_at"].array, per_job)
    given = {
        "notification_id": notification_ids,
        "subscriber_id": notifications["subscriber_id"].array.repeat(per_notification),
        "first_execution_at": first,
        "last_execution_at": last,
        "duration_s": (last - first).total_seconds(),
    }
    return Activity(notifications, jobs.frame(provenance, given), details)


def empty_frame(spec: Sequence[Column]) -> pd.DataFrame:
    """A zero-row frame with every column of ``spec`` and its dtype."""
    return _Table(spec).frame(None)


@lru_cache(maxsize=4096)
def error_code(raw: str | None) -> str | None:
    """The provider's error code in an execution detail's ``raw`` text, as a string.

    ``raw`` must be a JSON object; the first code-like value found is taken from, in order:
    ``code``, ``errorCode``, ``error_code``, ``error.code``, ``Error.Code``, ``errors[0].code``,
    ``response.code``, ``details.error``, ``error``, ``reason``, ``body``, ``status``,
    ``statusCode``, ``event``. Free-text fields (from ``details.error`` on) count only when
    they are one word and not a generic one such as ``"error"``. None when there is no code
    (including a null or non-JSON ``raw``).

    >>> error_code('{"error": {"code": "messaging/internal-error", "message": "..."}}')
    'messaging/internal-error'
    """
    if not isinstance(raw, str) or not raw.lstrip().startswith("{"):
        return None
    try:
        body = json.loads(raw)
    except ValueError:
        return None
    for path, one_word in _CODE_PATHS:
        code = _code_text(_dig(body, path), one_word)
        if code is not None:
            return code
    return None


# -- activity rows -----------------------------------------------------------------------------
# The adders append straight to the column lists (no per-row objects: this is the hot loop).


def _notification_adder(table: _Table, add_job: Callable[..., str]) -> Callable[..., None]:
    """A function adding one ActivityNotification, its jobs and their execution details."""
    (add_notification_id, add_created_at, add_updated_at, add_transaction_id, add_template_id,
     add_workflow_name, add_workflow_identifier, add_template_origin, add_subscriber_internal_id,
     add_subscriber_id, add_subscriber_email, add_subscriber_first_name, add_subscriber_last_name,
     add_subscriber_phone, add_channels, add_topic_keys, add_tags, add_severity, add_critical,
     add_digested_notification_id, add_payload, add_job_count, add_failed_job_count, add_status,
     add_environment_id, add_organization_id) = table.appenders  # fmt: skip

    def add(record: Mapping[str, Any]) -> None:
        subscriber = record.get("subscriber") or {}
        template = record.get("template") or {}
        triggers = template.get("triggers") or [{}]
        finals = [add_job(job) for job in record.get("jobs") or ()]
        add_notification_id(record.get("_id"))
        add_created_at(record.get("createdAt"))
        add_updated_at(record.get("updatedAt"))
        add_transaction_id(record.get("transactionId"))
        add_template_id(record.get("_templateId") or template.get("_id"))
        add_workflow_name(template.get("name"))
        add_workflow_identifier(triggers[0].get("identifier"))
        add_template_origin(template.get("origin"))
        add_subscriber_internal_id(record.get("_subscriberId") or subscriber.get("_id"))
        add_subscriber_id(subscriber.get("subscriberId"))
        add_subscriber_email(subscriber.get("email"))
        add_subscriber_first_name(subscriber.get("firstName"))
        add_subscriber_last_name(subscriber.get("lastName"))
        add_subscriber_phone(subscriber.get("phone"))
        add_channels(record.get("channels") or [])
        add_topic_keys([topic.get("topicKey") for topic in record.get("topics") or ()])
        add_tags(record.get("tags") or [])
        add_severity(record.get("severity"))
        add_critical(record.get("critical"))
        add_digested_notification_id(record.get("_digestedNotificationId"))
        add_payload(record.get("payload"))
        add_job_count(len(finals))
        add_failed_job_count(finals.count("failed"))
        add_status(_overall_status(finals))
        add_environment_id(record.get("_environmentId"))
        add_organization_id(record.get("_organizationId"))

    return add


def _job_adder(jobs: _Table, details: _Table) -> Callable[..., str]:
    """A function adding one ActivityJob and its execution details; it returns the job's final
    status."""
    (add_job_id, add_type, add_status, add_final_status, add_step_id, add_step_name,
     add_provider_id, add_digest_type, add_updated_at, add_execution_count, add_failed_count,
     add_retry_count, add_error_text, add_error_code) = jobs.appenders  # fmt: skip
    (add_detail_id, add_created_at, add_detail_status, add_source, add_detail,
     add_detail_provider_id, add_is_retry, add_is_test, add_raw, add_detail_error_text,
     add_detail_error_code) = details.appenders  # fmt: skip

    def add(job: Mapping[str, Any]) -> str:
        provider = job.get("providerId")
        executions = job.get("executionDetails") or ()
        failed = retries = 0
        error_text = code = None
        for detail in executions:
            status, text, raw = detail.get("status"), detail.get("detail"), detail.get("raw")
            if raw is not None and not isinstance(raw, str):
                raw = json.dumps(raw)
            is_retry = detail.get("isRetry")
            retries += is_retry is True
            add_detail_id(detail.get("_id"))
            add_created_at(detail.get("createdAt"))
            add_detail_status(status)
            add_source(detail.get("source"))
            add_detail(text)
            add_detail_provider_id(detail.get("providerId") or provider)
            add_is_retry(is_retry)
            add_is_test(detail.get("isTest"))
            add_raw(raw)
            if status == "Failed":
                failed += 1
                error_text, code = text, error_code(raw)
                add_detail_error_text(text)
                add_detail_error_code(code)
            else:
                add_detail_error_text(None)
                add_detail_error_code(None)
        final = _final_status(job.get("status"), job.get("type"), executions)
        step, digest = job.get("step") or {}, job.get("digest") or {}
        add_job_id(job.get("_id"))
        add_type(job.get("type"))
        add_status(job.get("status"))
        add_final_status(final)
        add_step_id(step.get("_id"))
        add_step_name(step.get("name"))
        add_provider_id(provider)
        add_digest_type(digest.get("type"))
        add_updated_at(job.get("updatedAt"))
        add_execution_count(len(executions))
        add_failed_count(failed)
        add_retry_count(retries)
        add_error_text(error_text)
        add_error_code(code)
        return final

    return add


def _final_status(status: str | None, job_type: str | None, executions: Sequence[Mapping]) -> str:
    """A job's final status (rules in the module docstring)."""
    if status is None:
        status = "pending"
    if not executions or status in _IN_FLIGHT:
        return status
    last = executions[-1]
    outcome = last.get("status")
    if outcome == "Failed":
        return "failed"
    if status != "completed":
        return status
    if outcome == "Success":
        if job_type not in _CHANNELS:
            return "completed"
        return "delivered" if last.get("source") == "Webhook" else "sent"
    return _COMPLETED_BY_DETAIL.get(outcome, "completed")


def _overall_status(finals: list[str]) -> str:
    """A notification's status from its jobs' final statuses (rules in the module docstring)."""
    if "failed" in finals:
        return "failed"
    if not finals or _IN_FLIGHT.intersection(finals):
        return "pending"
    for outcome in _OUTCOME_ORDER:
        if outcome in finals:
            return outcome
    return finals[-1]


def _credentials(setting: Mapping[str, Any]) -> Mapping[str, Any]:
    credentials = setting.get("credentials")
    return credentials if isinstance(credentials, Mapping) else {}


# -- error codes -------------------------------------------------------------------------------

#: Where providers put their error code: (path, free-text field), in order of preference.
_CODE_PATHS = (
    (("code",), False),
    (("errorCode",), False),
    (("error_code",), False),
    (("error", "code"), False),
    (("Error", "Code"), False),
    (("errors", 0, "code"), False),
    (("response", "code"), False),
    (("details", "error"), True),
    (("error",), True),
    (("reason",), True),
    (("body",), True),
    (("status",), True),
    (("statusCode",), False),
    (("event",), True),
)

#: Free-text values that are not codes.
_GENERIC = frozenset(
    {"error", "errors", "failed", "failure", "fail", "ok", "success", "true", "false"}
)


def _dig(body: Any, path: tuple[str | int, ...]) -> Any:
    for key in path:
        if isinstance(key, int):
            body = body[key] if isinstance(body, list) and len(body) > key else None
        else:
            body = body.get(key) if isinstance(body, dict) else None
    return body


def _code_text(value: Any, one_word: bool) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else str(value)
    if not isinstance(value, str):
        return None
    value = value.strip()
    if not value or (one_word and (len(value.split()) > 1 or value.lower() in _GENERIC)):
        return None
    return value


# -- columns → frames --------------------------------------------------------------------------


class _Table:
    """The columns of one frame, as lists filled row by row, then as arrays of their dtypes.

    ``appenders`` are the lists' ``append`` methods in spec order, leaving out the ``given``
    columns, which are passed whole to `frame`.
    """

    def __init__(self, spec: Sequence[Column], given: Iterable[str] = ()):
        self.spec = spec
        given = set(given)
        self.lists = {column.name: [] for column in spec if column.name not in given}
        self.appenders = tuple(values.append for values in self.lists.values())
        self.arrays: dict[str, Any] = {}

    def add(self, row: Sequence[Any]) -> None:
        """Add one row, given as its values in spec order."""
        for append, value in zip(self.appenders, row, strict=True):
            append(value)

    def array(self, name: str) -> Any:
        """The column ``name`` as an array of its dtype (its list is dropped)."""
        if name not in self.arrays:
            column = next(column for column in self.spec if column.name == name)
            self.arrays[name] = _array(self.lists.pop(name), column)
        return self.arrays[name]

    def frame(
        self, provenance: Mapping[str, Any] | None, given: Mapping[str, Any] | None = None
    ) -> pd.DataFrame:
        """The frame, with the ``given`` columns' arrays and the provenance as ``attrs``."""
        self.appenders = ()
        self.arrays.update(given or {})
        data = {column.name: self.array(column.name) for column in self.spec}
        self.arrays = {}
        frame = pd.DataFrame(data, copy=False)
        frame.attrs = dict(provenance or {})
        return frame


#: Columns built whole (parent keys repeated, times from the details), not row by row.
_GIVEN_JOB_COLUMNS = (
    "notification_id",
    "subscriber_id",
    "first_execution_at",
    "last_execution_at",
    "duration_s",
)
_GIVEN_DETAIL_COLUMNS = ("job_id", "notification_id", "channel")


def _first_and_last(times: Any, counts: np.ndarray) -> tuple[Any, Any]:
    """The first and last of each run of ``counts`` consecutive ``times`` (NaT for no run)."""
    ends = np.cumsum(counts)
    some = counts > 0
    first = times.take(np.where(some, ends - counts, -1), allow_fill=True)
    last = times.take(np.where(some, ends - 1, -1), allow_fill=True)
    return first, last


def _array(values: list[Any], column: Column) -> Any:
    """One column's values as an array of the column's declared dtype."""
    dtype = column.dtype
    if dtype == schemas.CATEGORY:
        return _categorical(values, column.categories)
    if dtype == schemas.DATETIME:
        times = pd.to_datetime(values, utc=True, format="ISO8601", errors="coerce")
        return pd.DatetimeIndex(times).as_unit("ns").array
    if dtype == schemas.OBJECT:
        return np.fromiter(values, dtype=object, count=len(values))
    if dtype == schemas.FLOAT:
        return np.array(values, dtype="float64")
    return pd.array(values, dtype=dtype)


def _categorical(values: list[Any], known: tuple[str, ...]) -> pd.Categorical:
    """Known categories first, then the unknown values found (as text, sorted)."""
    codes = _codes(values, known)
    unknown = codes == _UNKNOWN
    if not unknown.any():
        return pd.Categorical.from_codes(codes, categories=known)
    found = {str(value) for value in compress(values, unknown)}
    categories = [*known, *sorted(found.difference(known))]
    return pd.Categorical.from_codes(_codes(values, categories, text=True), categories=categories)


def _codes(values: list[Any], categories: Sequence[str], *, text: bool = False) -> np.ndarray:
    """Each value's position in ``categories`` (-1 for None, `_UNKNOWN` if not there)."""
    position: dict[Any, int] = {label: code for code, label in enumerate(categories)}
    position[None] = -1
    if text:
        values = [value if value is None else str(value) for value in values]
    found = map(position.get, values, repeat(_UNKNOWN))
    return np.fromiter(found, dtype=np.int32, count=len(values))
