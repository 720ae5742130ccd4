"""Readers: client calls → typed DataFrames (`toolkit.frames`), with provenance in ``.attrs``.

Every frame's ``attrs`` says where its rows came from:

- ``operation``: the client method used;
- ``base_url`` and ``environment`` (``"Acme/Development"`` for the sandbox, else None);
- ``filters``: the filters given (None ones left out; never a secret);
- ``after`` and ``before``: the time window used (activity only; ``after`` None means the
  service's default, the start of the plan's retention);
- ``fetched_at``: the service's time when the read ended;
- ``toolkit_version``.

Times are ISO 8601 text in UTC (``2026-11-01T12:00:00.000Z``; ``pandas.Timestamp`` reads them
back) and every value is JSON-ready, so ``to_parquet`` and ``to_feather`` keep the provenance in
the file (``pandas.read_parquet`` gives it back in ``.attrs``); CSV has no place for it.

Arguments are checked by the client before any request is sent (`toolkit.errors.ParameterError`).

>>> notifications, jobs, details = read_activity(client, after="24h", channels="sms")
>>> notifications.attrs["before"]
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime, timedelta
from typing import Any

import pandas as pd

from toolkit._version import __version__
from toolkit.errors import ParameterError
from toolkit.frames import (
    Activity,
    activity_frames,
    integrations_frame,
    subscribers_frame,
    subscriptions_frame,
)
from toolkit.pagination import paused_gc, time_slices
from toolkit.redact import is_secret, mask
from toolkit.timeutil import resolve_window, to_iso

__all__ = [
    "read_activity",
    "read_activity_slices",
    "read_integrations",
    "read_subscribers",
    "read_subscriptions",
]


def read_subscribers(
    client: Any,
    *,
    email: str | None = None,
    name: str | None = None,
    phone: str | None = None,
    subscriber_id: str | None = None,
    order_by: str | None = None,
    order_direction: str | None = None,
    limit: int | None = None,
    reveal_secrets: bool = False,
    progress: bool | None = None,
) -> pd.DataFrame:
    """Subscribers matching every filter given (`Client.search_subscribers`), one row each.

    Parameters
    ----------
    client : Client
    email, name, phone : str, optional
        Substring filters (case sensitive per the spec).
    subscriber_id : str, optional
        An exact external subscriber id.
    order_by, order_direction : str, optional
        Sort field and ``"ASC"`` / ``"DESC"``.
    limit : int, optional
        At most this many subscribers.
    reveal_secrets : bool
        Show the webhook URLs and device tokens of ``channels`` (masked by default).
    progress : bool, optional
        Show a progress bar while pages arrive (default: the client's setting).

    Returns
    -------
    DataFrame
        ``subscriber_id`` (external), ``subscriber_internal_id``, ``first_name``,
        ``last_name``, ``email``, ``phone``, ``avatar``, ``locale``, ``timezone`` (string);
        ``data`` (dict), ``channels`` (list of ChannelSettings, secrets masked),
        ``provider_ids`` (list); ``device_token_count`` (Int64); ``is_online`` (boolean);
        ``last_online_at``, ``created_at``, ``updated_at`` (datetime, UTC); ``deleted``
        (boolean); ``version`` (Int64, ``__v``); ``environment_id``, ``organization_id``.
    """
    filters = {
        "email": email,
        "name": name,
        "phone": phone,
        "subscriber_id": subscriber_id,
        "order_by": order_by,
        "order_direction": order_direction,
        "limit": limit,
    }
    _check_client(client, "search_subscribers")
    records = client.search_subscribers(**filters)
    if client.progress if progress is None else progress:
        records = _progress(records, "subscribers")
    frame = subscribers_frame(records, reveal_secrets=reveal_secrets)
    frame.attrs = _provenance(client, "search_subscribers", filters)
    return frame


def read_subscriptions(
    client: Any,
    subscriber_ids: str | Iterable[str],
    key: str | None = None,
    *,
    workers: int | None = None,
    progress: bool | None = None,
) -> pd.DataFrame:
    """The topic subscriptions of one or many subscribers, fetched concurrently.

    Parameters
    ----------
    client : Client
    subscriber_ids : str or iterable of str
        External subscriber ids; an unknown one raises `toolkit.errors.NotFoundError`.
    key : str, optional
        Only the subscriptions to this topic key.
    workers : int, optional
        Subscribers fetched at once (default: the client's setting).
    progress : bool, optional
        Show a progress bar over the subscribers (default: the client's setting).

    Returns
    -------
    DataFrame
        One row per subscription, in the order of ``subscriber_ids``: ``subscription_id``,
        ``identifier`` (e.g. ``tk=product-updates:si=subscriber-123``), ``created_at``
        (datetime, UTC), ``topic_id``, ``topic_key``, ``topic_name``, ``context_keys`` (list),
        ``subscriber_internal_id``, ``subscriber_id`` (external), ``subscriber_email``,
        ``subscriber_first_name``, ``subscriber_last_name`` (string). Older servers send no
        ``identifier`` nor ``contextKeys``: missing values.
    """
    _check_client(client, "list_subscriptions_many")
    subscriber_ids = _listed(subscriber_ids)
    by_subscriber = client.list_subscriptions_many(
        subscriber_ids, key=key, workers=workers, progress=progress
    )
    records = [record for records in by_subscriber.values() for record in records]
    frame = subscriptions_frame(records)
    filters = {"subscriber_ids": subscriber_ids, "key": key}
    frame.attrs = _provenance(client, "list_subscriptions", filters)
    return frame


def read_activity(
    client: Any,
    *,
    channels: str | Iterable[str] | None = None,
    templates: str | Iterable[str] | None = None,
    emails: str | Iterable[str] | None = None,
    subscriber_ids: str | Iterable[str] | None = None,
    severity: str | Iterable[str] | None = None,
    transaction_id: str | None = None,
    topic_key: str | None = None,
    after: str | datetime | None = None,
    before: str | datetime | None = None,
    limit: int | None = None,
    workers: int | None = None,
    progress: bool | None = None,
) -> Activity:
    """The notifications of a time window as three linked frames (`Client.iter_activity`).

    Pages are turned into columns as they arrive (no record is kept whole), while the next
    pages are fetched.

    The window is pinned before the first request: ``before`` defaults to the service's now,
    and relative times (``"24h"``, ``"7d"``) count back from that same instant.

    Parameters
    ----------
    client : Client
    channels : str or list of str, optional
        Any of in_app, email, sms, chat, push, digest, trigger, delay, throttle, custom.
    templates, emails, subscriber_ids : str or list of str, optional
        Template ids, email addresses, external subscriber ids.
    severity : str or list of str, optional
        Any of high, medium, low, none.
    transaction_id, topic_key : str, optional
        Exact filters.
    after, before : str, datetime or pandas.Timestamp, optional
        The window: ISO 8601, a datetime (naive means UTC) or a duration before now such as
        ``"24h"``. ``after`` defaults to the start of the plan's retention.
    limit : int, optional
        At most this many notifications (the newest).
    workers : int, optional
        Pages fetched at once (default: the client's setting).
    progress : bool, optional
        Show a progress bar over the pages (default: the client's setting).

    Returns
    -------
    Activity
        ``notifications, jobs, execution_details`` (see `toolkit.frames` for the derived
        statuses), with the same provenance on each.

        notifications: ``notification_id``, ``created_at``, ``updated_at``, ``transaction_id``,
        ``template_id``, ``workflow_name``, ``workflow_identifier``, ``template_origin``,
        ``subscriber_internal_id``, ``subscriber_id`` (external), ``subscriber_email``,
        ``subscriber_first_name``, ``subscriber_last_name``, ``subscriber_phone``,
        ``channels``, ``topic_keys``, ``tags`` (lists), ``severity``, ``critical``,
        ``digested_notification_id``, ``payload`` (dict), ``job_count``,
        ``failed_job_count``, ``status`` (overall), ``environment_id``, ``organization_id``.

        jobs: ``job_id``, ``notification_id``, ``type``, ``status``, ``final_status``,
        ``step_id``, ``step_name``, ``provider_id``, ``digest_type``, ``updated_at``,
        ``first_execution_at``, ``last_execution_at``, ``duration_s``, ``execution_count``,
        ``failed_count``, ``retry_count``, ``error_text``, ``error_code``, ``subscriber_id``,
        ``workflow`` (the notification's ``workflow_identifier``: failures by workflow need no
        merge).

        execution_details: ``execution_detail_id``, ``job_id``, ``notification_id``,
        ``created_at``, ``status``, ``source``, ``detail``, ``provider_id``, ``is_retry``,
        ``is_test``, ``raw`` (string), ``error_text``, ``error_code``, ``channel`` (the job
        type).
    """
    _check_client(client, "iter_activity")
    start, end = resolve_window(after, before, now=client.now())
    filters = {
        "channels": _listed(channels),
        "templates": _listed(templates),
        "emails": _listed(emails),
        "subscriber_ids": _listed(subscriber_ids),
        "severity": _listed(severity),
        "transaction_id": transaction_id,
        "topic_key": topic_key,
        "limit": limit,
    }
    records = client.iter_activity(
        **filters, after=start, before=end, workers=workers, progress=progress
    )
    provenance = _provenance(client, "list_activity", filters)
    provenance["after"] = None if start is None else to_iso(start)
    provenance["before"] = to_iso(end)
    with paused_gc():  # the pages are decoded and built into columns in one go
        return activity_frames(records, provenance=provenance)


def read_activity_slices(
    client: Any,
    *,
    after: str | datetime,
    before: str | datetime | None = None,
    every: str | timedelta = "1d",
    **filters: Any,
) -> Iterator[tuple[pd.Timestamp, pd.Timestamp, Activity]]:
    """The window cut in consecutive time slices of ``every``, newest first, each read with
    `read_activity` into its own `Activity` (for a sync that saves slice by slice).

    Yields ``(start, end, activity)``; the bounds are inclusive, and a notification created on
    an edge is yielded once, in the newer slice. ``filters`` are those of `read_activity`.
    """
    _check_client(client, "iter_activity")
    start, end = resolve_window(after, before, now=client.now())
    try:
        step = pd.Timedelta(every)
    except (TypeError, ValueError):
        step = pd.NaT
    if start is None or step is pd.NaT or step <= pd.Timedelta(0):
        name, value = ("after", after) if start is None else ("every", every)
        raise ParameterError(name, value, "a time window with a start, cut by a positive duration")
    count = max(1, math.ceil((end - start) / step.to_pytimedelta()))
    on_edge: set[str] = set()
    for low, high in time_slices(start, end, count):
        activity = read_activity(client, after=low, before=high, **filters)
        if on_edge:
            activity = _without(activity, on_edge)
        notifications = activity.notifications
        edge = pd.Timestamp(low).floor("ms")  # the instant as sent (milliseconds)
        on_edge = set(notifications["notification_id"][notifications["created_at"] == edge])
        yield pd.Timestamp(low), pd.Timestamp(high), activity


def _without(activity: Activity, notification_ids: set[str]) -> Activity:
    """``activity`` without these notifications (and their jobs and execution details)."""
    kept = []
    for frame in activity:
        attrs = frame.attrs
        frame = frame[~frame["notification_id"].isin(notification_ids)].reset_index(drop=True)
        frame.attrs = attrs
        kept.append(frame)
    return Activity(*kept)


def read_integrations(
    client: Any,
    integrations: Mapping[str, Any] | Iterable[Mapping[str, Any]],
    *,
    reveal_secrets: bool = False,
) -> pd.DataFrame:
    """Integrations as a frame: what `Client.create_integration` or `Client.delete_integration`
    returned.

    The service has no operation that lists integrations; deleting one returns all the
    remaining integrations of the environment (with their credentials emptied by the real
    service), and creating one returns it.

    Parameters
    ----------
    client : Client
        The client that made the call (for the provenance).
    integrations : dict or iterable of dict
        One Integration, or a list of them.
    reveal_secrets : bool
        Show the credentials' secrets (masked by default, see `toolkit.redact`).

    Returns
    -------
    DataFrame
        ``integration_id``, ``name``, ``identifier``, ``provider_id`` (string); ``channel``
        (category); ``active``, ``primary``, ``deleted`` (boolean); ``deleted_at``
        (datetime, UTC); ``deleted_by`` (string); ``credentials`` (dict, secrets masked),
        ``conditions`` (list), ``configurations`` (dict, secrets masked); ``created_at``,
        ``updated_at`` (datetime, UTC); ``environment_id``, ``organization_id``.

    Examples
    --------
    >>> remaining = read_integrations(client, client.delete_integration(integration_id))
    """
    _check_client(client, "delete_integration")
    if isinstance(integrations, Mapping):
        integrations = [integrations]
    allowed = "an Integration (dict) or a list of them, as the client returned them"
    if isinstance(integrations, str | bytes) or not isinstance(integrations, Iterable):
        raise ParameterError("integrations", integrations, allowed)
    records = list(integrations)
    for record in records:
        if not isinstance(record, Mapping):
            raise ParameterError("integrations", record, allowed)
    frame = integrations_frame(records, reveal_secrets=reveal_secrets)
    frame.attrs = _provenance(client, "integrations", {})
    return frame


def _provenance(client: Any, operation: str, filters: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "operation": operation,
        "base_url": client.base_url,
        "environment": client.environment,
        "filters": _sanitised(filters),
        "fetched_at": to_iso(client.now()),
        "toolkit_version": __version__,
    }


def _check_client(client: Any, method: str) -> None:
    if not callable(getattr(client, method, None)):
        raise ParameterError("client", client, "a toolkit Client, such as toolkit.connect()")


def _listed(value: Any) -> Any:
    """An iterable of filter values (a generator too) as a list, so it can be used twice;
    anything else as it is (the client checks it)."""
    if isinstance(value, Iterable) and not isinstance(value, (str, bytes, Mapping)):
        return list(value)
    return value


def _sanitised(filters: Mapping[str, Any]) -> dict[str, Any]:
    """The filters given as JSON values (anything else as text): None ones dropped, secrets
    (by name) masked."""
    given = {
        name: mask(value) if is_secret(name) else value
        for name, value in filters.items()
        if value is not None
    }
    return json.loads(json.dumps(given, default=str))


def _progress(records: Iterable[Any], what: str) -> Iterable[Any]:
    from tqdm.auto import tqdm

    # Shown only when the read outlasts a second, so a one-page search draws no bar.
    return tqdm(records, unit=f" {what}", desc=what, delay=1.0)
