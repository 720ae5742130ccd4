"""Stories: a notification with every job and execution detail, shown as of a cutoff instant."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from toolkit.sandbox.seed.data import to_json

# --------------------------------------------------------------------------------------------
# Stories: a notification with every job and execution detail, shown as of a cutoff instant
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Event:
    """One execution detail at ``at``; the job takes ``job_status`` from then on (if set)."""

    at: datetime
    detail: dict[str, Any]
    job_status: str | None


@dataclass
class Job:
    """An ActivityJob without ``executionDetails``, ``status`` and ``updatedAt``, and its events."""

    doc: dict[str, Any]
    events: list[Event] = field(default_factory=list)

    def render(self, cutoff: datetime, created: str) -> dict[str, Any]:
        events = self.events
        if events and events[-1].at > cutoff:
            events = [event for event in events if event.at <= cutoff]
        status = "pending"
        for event in events:
            status = event.job_status or status
        return {
            **self.doc,
            "executionDetails": [event.detail for event in events],
            "status": status,
            "updatedAt": events[-1].detail["createdAt"] if events else created,
        }


@dataclass
class Story:
    """A notification's whole story: its document (without jobs), jobs and row values.

    ``open_until`` is set on a digest's lead notification while later events can still be
    merged into it (which changes its document).
    """

    doc: dict[str, Any]
    jobs: list[Job]
    created_at: datetime
    severity: str | None
    channel_mask: int
    topic_keys: list[str]
    open_until: datetime | None = None

    @property
    def id(self) -> str:
        return self.doc["_id"]

    def document(self, cutoff: datetime) -> dict[str, Any]:
        """The notification's document, as served, as things stand at ``cutoff``."""
        created = self.doc["createdAt"]
        jobs = [job.render(cutoff, created) for job in self.jobs]
        return {
            **self.doc,
            "updatedAt": max([created] + [j["updatedAt"] for j in jobs]),
            "jobs": jobs,
        }

    def row(self, cutoff: datetime) -> tuple[Any, ...]:
        """The ``notifications`` row (`INSERT_NOTIFICATION`'s values) as of ``cutoff``."""
        doc = self.doc
        return (
            self.id,
            doc["_environmentId"],
            doc["_subscriberId"],
            doc["_templateId"],
            doc["transactionId"],
            self.severity,
            self.channel_mask,
            doc["createdAt"],
            to_json(self.document(cutoff)),
        )

    def topic_rows(self) -> list[tuple[str, str, str]]:
        return [(self.id, self.doc["_environmentId"], key) for key in self.topic_keys]


NOTIFICATION_COLUMNS = (
    "id, environment_id, subscriber_id, template_id, transaction_id, severity, channel_mask,"
    " created_at, doc"
)
INSERT_NOTIFICATION = (
    f"INSERT INTO notifications ({NOTIFICATION_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?)"
)
INSERT_NOTIFICATION_TOPIC = (
    "INSERT INTO notification_topics (notification_id, environment_id, topic_key) VALUES (?,?,?)"
)
