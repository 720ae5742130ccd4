"""Pure functions: the service's JSON records → tidy, typed DataFrames.

Every column's dtype is declared in `toolkit.schemas`, never inferred: ids and text are
``string``, times ``datetime64[ns, UTC]``, counts ``Int64``, flags ``boolean``, channels,
statuses, types, sources and severities ``category`` (the known values first, in their
vocabulary's order, then any unknown values found, sorted: kept, never dropped), lists and
objects ``object``. An empty input gives a zero-row frame with every column and dtype.
``subscriber_id`` is always the caller's external ``subscriberId``; a job carries its
notification's ``subscriber_id`` and ``workflow`` (``workflow_identifier``). Nested lists and objects
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
import math
import operator
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import compress, repeat
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
import pyarrow as pa

from toolkit import schemas
from toolkit.error_codes import error_code
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
#: Whether pandas keeps ``string`` columns in Arrow (with pyarrow installed, it does).
_ARROW_STRINGS = pd.StringDtype().storage == "pyarrow"
#: Arrow text is allocated with malloc: Arrow's own pool keeps what a long read frees.
_ARROW_POOL = pa.system_memory_pool()
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
            {
                "subscriber_id": record.get("subscriberId"),
                "subscriber_internal_id": record.get("_id"),
                "first_name": record.get("firstName"),
                "last_name": record.get("lastName"),
                "email": record.get("email"),
                "phone": record.get("phone"),
                "avatar": record.get("avatar"),
                "locale": record.get("locale"),
                "timezone": record.get("timezone"),
                "data": record.get("data"),
                "channels": channels if reveal_secrets else mask_channels(channels),
                "provider_ids": [setting.get("providerId") for setting in channels],
                "device_token_count": sum(
                    len(_credentials(setting).get("deviceTokens") or ()) for setting in channels
                ),
                "is_online": record.get("isOnline"),
                "last_online_at": record.get("lastOnlineAt"),
                "created_at": record.get("createdAt"),
                "updated_at": record.get("updatedAt"),
                "deleted": record.get("deleted"),
                "version": record.get("__v"),
                "environment_id": record.get("_environmentId"),
                "organization_id": record.get("_organizationId"),
            }
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
            {
                "subscription_id": record.get("_id"),
                "identifier": record.get("identifier"),
                "created_at": record.get("createdAt"),
                "topic_id": topic.get("_id"),
                "topic_key": topic.get("key"),
                "topic_name": topic.get("name"),
                "context_keys": record.get("contextKeys"),
                "subscriber_internal_id": subscriber.get("_id"),
                "subscriber_id": subscriber.get("subscriberId"),
                "subscriber_email": subscriber.get("email"),
                "subscriber_first_name": subscriber.get("firstName"),
                "subscriber_last_name": subscriber.get("lastName"),
            }
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
            {
                "integration_id": record.get("_id"),
                "name": record.get("name"),
                "identifier": record.get("identifier"),
                "provider_id": record.get("providerId"),
                "channel": record.get("channel"),
                "active": record.get("active"),
                "primary": record.get("primary"),
                "deleted": record.get("deleted"),
                "deleted_at": record.get("deletedAt"),
                "deleted_by": record.get("deletedBy"),
                "credentials": credentials,
                "conditions": record.get("conditions"),
                "configurations": configurations,
                "created_at": record.get("createdAt"),
                "updated_at": record.get("updatedAt"),
                "environment_id": record.get("_environmentId"),
                "organization_id": record.get("_organizationId"),
            }
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
    add_notification = _notification_adder(notifications, jobs, details)
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
        "workflow": notifications["workflow_identifier"].array.repeat(per_notification),
        "first_execution_at": first,
        "last_execution_at": last,
        "duration_s": (last - first).total_seconds(),
    }
    return Activity(notifications, jobs.frame(provenance, given), details)


def empty_frame(spec: Sequence[Column]) -> pd.DataFrame:
    """A zero-row frame with every column of ``spec`` and its dtype."""
    return _Table(spec).frame(None)


# -- activity rows -----------------------------------------------------------------------------
# Each row is a tuple of its values in a declared order, appended straight to its table's rows
# (no record is kept: the records' own strings and objects are all that stay), which are turned
# into columns after each notification that fills a chunk.


def _notification_adder(table: _Table, jobs: _Table, details: _Table) -> Callable[..., None]:
    """A function adding one ActivityNotification, its jobs and their execution details."""
    add_row, add_job = table.appender(_NOTIFICATION_FIELDS), _job_adder(jobs, details)
    tables = (table, jobs, details)

    def add(record: Mapping[str, Any]) -> None:
        subscriber = record.get("subscriber") or {}
        template = record.get("template") or {}
        triggers = template.get("triggers") or [{}]
        finals = [add_job(job) for job in record.get("jobs") or ()]
        add_row(  # in the order of _NOTIFICATION_FIELDS
            (
                record.get("_id"),
                record.get("createdAt"),
                record.get("updatedAt"),
                record.get("transactionId"),
                record.get("_templateId") or template.get("_id"),
                template.get("name"),
                triggers[0].get("identifier"),
                template.get("origin"),
                record.get("_subscriberId") or subscriber.get("_id"),
                subscriber.get("subscriberId"),
                subscriber.get("email"),
                subscriber.get("firstName"),
                subscriber.get("lastName"),
                subscriber.get("phone"),
                record.get("channels") or [],
                [topic.get("topicKey") for topic in record.get("topics") or ()],
                record.get("tags") or [],
                record.get("severity"),
                record.get("critical"),
                record.get("_digestedNotificationId"),
                record.get("payload"),
                len(finals),
                finals.count("failed"),
                _overall_status(finals),
                record.get("_environmentId"),
                record.get("_organizationId"),
            )
        )
        for kept in tables:
            kept.compact_full()

    return add


#: The values of a notification's row, a job's and an execution detail's, in the order the
#: adders give them (tuples, appended without a call per row: the details are most rows of a
#: read, and a dict per row cost a third of its CPU).
_NOTIFICATION_FIELDS = (
    "notification_id", "created_at", "updated_at", "transaction_id", "template_id",
    "workflow_name", "workflow_identifier", "template_origin", "subscriber_internal_id",
    "subscriber_id", "subscriber_email", "subscriber_first_name", "subscriber_last_name",
    "subscriber_phone", "channels", "topic_keys", "tags", "severity", "critical",
    "digested_notification_id", "payload", "job_count", "failed_job_count", "status",
    "environment_id", "organization_id",
)  # fmt: skip
_JOB_FIELDS = (
    "job_id", "type", "status", "final_status", "step_id", "step_name", "provider_id",
    "digest_type", "updated_at", "execution_count", "failed_count", "retry_count", "error_text",
    "error_code",
)  # fmt: skip
_DETAIL_FIELDS = (
    "execution_detail_id", "created_at", "status", "source", "detail", "provider_id", "is_retry",
    "is_test", "raw", "error_text", "error_code",
)  # fmt: skip


def _job_adder(jobs: _Table, details: _Table) -> Callable[..., str]:
    """A function adding one ActivityJob and its execution details; it returns the job's final
    status."""
    add_job, add_detail = jobs.appender(_JOB_FIELDS), details.appender(_DETAIL_FIELDS)

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
            failure = status == "Failed"
            if failure:
                failed += 1
                error_text, code = text, error_code(raw)
            add_detail(  # in the order of _DETAIL_FIELDS
                (
                    detail.get("_id"),
                    detail.get("createdAt"),
                    status,
                    detail.get("source"),
                    text,
                    detail.get("providerId") or provider,
                    is_retry,
                    detail.get("isTest"),
                    raw,
                    text if failure else None,
                    code if failure else None,
                )
            )
        final = _final_status(job.get("status"), job.get("type"), executions)
        step, digest = job.get("step") or {}, job.get("digest") or {}
        add_job(  # in the order of _JOB_FIELDS
            (
                job.get("_id"),
                job.get("type"),
                job.get("status"),
                final,
                step.get("_id"),
                step.get("name"),
                provider,
                digest.get("type"),
                job.get("updatedAt"),
                len(executions),
                failed,
                retries,
                error_text,
                code,
            )
        )
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


# -- columns → frames --------------------------------------------------------------------------


class _Table:
    """The columns of one frame, filled row by row, then as arrays of their dtypes.

    Rows are dicts keyed by column name, with every column of the spec but the ``given`` ones
    (passed whole to `frame`): a missing or unknown name is an error, never a shifted column.
    Every `CHUNK` rows are turned into columns (after `CHUNK` rows added, or when `compact_full`
    finds that many): compact arrays (categories as shared strings), so that a long read does
    not hold a Python object per value; object columns keep the records' own objects.
    """

    #: Rows kept as dicts before they are turned into columns.
    CHUNK = 4096

    def __init__(self, spec: Sequence[Column], given: Iterable[str] = ()):
        self.spec = spec
        self.columns = {column.name: column for column in spec}
        self.names = tuple(column.name for column in spec if column.name not in set(given))
        self.parts: dict[str, list[Any]] = {name: [] for name in self.names}
        self.rows: list[tuple[Any, ...]] = []  # each row's values, in the order of `names`
        self.arrays: dict[str, Any] = {}
        self._values = operator.itemgetter(*self.names)

    def add(self, row: Mapping[str, Any]) -> None:
        """Add one row: a value for each column, by name."""
        if len(row) != len(self.names):
            unknown = set(row).symmetric_difference(self.names)
            raise KeyError(f"columns not in the row or not in the frame: {sorted(unknown)}")
        self._append(self._values(row))

    def appender(self, fields: Sequence[str]) -> Callable[[tuple[Any, ...]], None]:
        """`add` for a hot loop: it takes each row as a tuple of the values of ``fields``, which
        must be the columns in their order (checked here, once); the caller calls
        `compact_full` now and then."""
        if tuple(fields) != self.names:
            raise KeyError(f"fields {list(fields)} are not the columns {list(self.names)}")
        return self.rows.append

    def compact_full(self) -> None:
        """Turn the rows kept into columns if there are `CHUNK` of them or more."""
        if len(self.rows) >= self.CHUNK:
            self._compact()

    def _append(self, values: tuple[Any, ...]) -> None:
        rows = self.rows
        rows.append(values)
        if len(rows) == self.CHUNK:
            self._compact()

    def _compact(self) -> None:
        """Turn the rows kept into one part of each column (the list of rows is emptied, not
        replaced: `appender` gave its ``append``)."""
        rows = self.rows
        if not rows:
            return
        values = zip(*rows, strict=True)  # it holds the rows until the columns are built
        rows.clear()
        for name, column in zip(self.names, values, strict=True):
            dtype = self.columns[name].dtype
            if dtype == schemas.OBJECT:
                self.parts[name].extend(column)
            elif dtype == schemas.CATEGORY:
                shared: dict[Any, Any] = {}
                self.parts[name].extend([shared.setdefault(value, value) for value in column])
            else:
                self.parts[name].append(_array(list(column), self.columns[name]))

    def array(self, name: str) -> Any:
        """The column ``name`` as an array of its dtype (its parts are dropped)."""
        if name not in self.arrays:
            self._compact()
            column, parts = self.columns[name], self.parts.pop(name)
            if column.dtype in (schemas.OBJECT, schemas.CATEGORY):
                self.arrays[name] = _array(parts, column)
            else:
                self.arrays[name] = _concat(parts) if parts else _array([], column)
        return self.arrays[name]

    def frame(
        self, provenance: Mapping[str, Any] | None, given: Mapping[str, Any] | None = None
    ) -> pd.DataFrame:
        """The frame, with the ``given`` columns' arrays and the provenance as ``attrs``."""
        self.arrays.update(given or {})
        data = {column.name: self.array(column.name) for column in self.spec}
        self.arrays = {}
        frame = pd.DataFrame(data, copy=False)
        frame.attrs = dict(provenance or {})
        return frame


def _concat(parts: list[Any]) -> Any:
    """Arrays of one dtype end to end (Arrow text as the chunks it is, not copied)."""
    if len(parts) == 1:
        return parts[0]
    if all(isinstance(part, pd.arrays.ArrowStringArray) for part in parts):
        chunks = [chunk for part in parts for chunk in part.__arrow_array__().chunks]
        return pd.arrays.ArrowStringArray(pa.chunked_array(chunks, pa.large_string()))
    if isinstance(parts[0], np.ndarray):
        return np.concatenate(parts)
    return pd.concat([pd.Series(part, copy=False) for part in parts], ignore_index=True).array


#: Columns built whole (parent keys repeated, times from the details), not row by row.
_GIVEN_JOB_COLUMNS = (
    "notification_id",
    "subscriber_id",
    "workflow",
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
    if dtype in (schemas.INT, schemas.FLOAT):
        try:
            if dtype == schemas.FLOAT:
                return np.array(values, dtype="float64")
            return pd.array(values, dtype=dtype)
        except (TypeError, ValueError, OverflowError):  # odd values from the service
            return pd.array(_numbers(values, column), dtype=dtype)
    if dtype == schemas.STRING and _ARROW_STRINGS:
        try:  # straight to Arrow: several times faster than pandas' checks on each value
            return pd.arrays.ArrowStringArray(
                pa.chunked_array([pa.array(values, pa.large_string(), memory_pool=_ARROW_POOL)])
            )
        except (pa.ArrowInvalid, pa.ArrowTypeError):  # not all text: pandas converts it
            pass
    return pd.array(values, dtype=dtype)


def _numbers(values: list[Any], column: Column) -> list[Any]:
    """``values`` of a numeric column with numbers as text converted, and what is not a number
    of the column's kind (``1.5`` for a count, ``"abc"``, a list, a huge one) missing, with a
    warning naming the column."""
    whole = column.dtype == schemas.INT
    converted, odd = [], []
    for value in values:
        number = value
        if isinstance(value, str):
            try:
                number = float(value.strip())
            except ValueError:
                number = None
        number = _number(number, whole)
        if number is None and value is not None:
            odd.append(value)
        converted.append(number)
    if odd:
        kind = "whole numbers" if whole else "numbers"
        warnings.warn(
            f"{column.name}: {len(odd)} value(s) from the service are not {kind}"
            f" (e.g. {str(odd[0])[:40]!r}); they are missing (<NA>) in the frame",
            stacklevel=2,
        )
    return converted


def _number(value: Any, whole: bool) -> Any:
    """``value`` as an int (``whole``) or a float, or None if it is not one."""
    if isinstance(value, bool) or not isinstance(value, int | float | np.number):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    if not math.isfinite(number) or (whole and (number != int(number) or abs(number) >= 2**63)):
        return None
    return int(value) if whole else number


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
