"""`NotificationFactory`: builds notifications (stories) for one environment's catalog."""

from __future__ import annotations

import bisect
import random
import uuid
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from typing import Any

from toolkit.sandbox.clock import iso
from toolkit.sandbox.ids import IdFactory
from toolkit.sandbox.seed.catalog import Catalog, Workflow
from toolkit.sandbox.seed.data import PUSH_PROVIDER_IDS
from toolkit.sandbox.seed.failures import FAILURE_RATE, FAILURES, Failure
from toolkit.sandbox.seed.incidents import ADDRESS, FAILING, ROUTED_SHARE, IncidentPlan
from toolkit.sandbox.seed.story import Event, Job, Story
from toolkit.sandbox.store import CHANNEL_BITS


def _seconds(rng: random.Random, low: float, high: float) -> timedelta:
    return timedelta(seconds=rng.uniform(low, high))


#: Seconds from a channel step's start to the provider's answer.
SEND_LATENCY = {
    "in_app": (0.02, 0.2),
    "email": (0.4, 2.5),
    "sms": (0.5, 3.0),
    "chat": (0.3, 1.5),
    "push": (0.2, 1.2),
}
#: Back-off before each retry of a transient failure, in seconds.
RETRY_BACKOFF = (60, 300)
#: Digested events kept in a lead notification's ``digest.events``.
MAX_DIGEST_EVENTS = 25
UNITS = {"seconds": 1, "minutes": 60, "hours": 3600, "days": 86400, "weeks": 604800}
DELIVERED_RAW = {"email": '{"event": "delivered"}', "sms": '{"MessageStatus": "delivered"}'}
#: Draws of a trigger before giving up when volume drops silence them.
REDRAWS = 50
MISSING_ADDRESS = {
    "email": "Subscriber does not have an email address",
    "sms": "Subscriber does not have a phone number",
    "chat": "Subscriber does not have an active chat channel",
    "push": "Subscriber does not have an active push channel",
}


class NotificationFactory:
    """Builds notifications (as :class:`Story` objects) for one environment's :class:`Catalog`.

    Parameters
    ----------
    catalog : Catalog
        The environment's subscribers, workflows, topics and providers.
    rng : random.Random
        The only source of randomness (choices, latencies, failures, payloads).
    ids : IdFactory
        Makes the ids of notifications, jobs and execution details.
    incidents : list of IncidentPlan, optional
        Planted incidents; the deliveries they fail, slow or suppress are recorded in ``hits``.
    live : callable, optional
        Returns the incidents started while the factory runs (live outages), read at each send.

    Attributes
    ----------
    hits : dict
        Incident name -> list of ``(at, notification _id or None, subscriberId)``.
    """

    def __init__(
        self,
        catalog: Catalog,
        rng: random.Random,
        ids: IdFactory,
        incidents: Iterable[IncidentPlan] = (),
        live: Callable[[], list[IncidentPlan]] | None = None,
    ):
        self.catalog, self.rng, self.ids = catalog, rng, ids
        self.incidents, self.live = list(incidents), live
        self.hits: dict[str, list[tuple[datetime, str | None, str]]] = {
            p.name: [] for p in self.incidents
        }
        self._routes = {  # an email/SMS provider named by an incident gets a share of its channel
            p.channel: p.provider_id
            for p in self.incidents
            if p.channel in ("email", "sms")
            and p.provider_id not in (None, catalog.providers.get(p.channel))
        }
        self._silent = [p for p in self.incidents if p.kind == "volume_drop"]
        self._slow = [p for p in self.incidents if p.kind == "latency_degradation"]
        activity = [min(rng.paretovariate(1.2), 40.0) for _ in catalog.subscribers]
        self._audiences = {None: self._cumulative(range(len(activity)), activity)}
        chat = [i for i, s in enumerate(catalog.subscribers) if s["chat"]]
        self._audiences["chat"] = self._cumulative(chat, [activity[i] for i in chat])
        self._workflows = self._cumulative(
            range(len(catalog.workflows)), [flow.spec.weight for flow in catalog.workflows]
        )
        self._digests: dict[tuple[str, str], tuple[Story, Job]] = {}
        self._people: dict[str, list[dict[str, Any]]] = {}  # incident name -> subscribers

    @staticmethod
    def _cumulative(items: Iterable[int], weights: list[float]) -> tuple[list[int], list[float]]:
        total, cumulative = 0.0, []
        for weight in weights:
            total += weight
            cumulative.append(total)
        return list(items), cumulative

    # -- choosing -------------------------------------------------------------------------

    def trigger(self, when: datetime, limit: int | None = None) -> list[Story]:
        """One trigger at ``when``: a workflow and its recipients (a topic fans out).

        Returns the new stories (at most ``limit``), all created at ``when``.
        """
        if not self.catalog.workflows or not self.catalog.subscribers:
            return []
        silent = [p for p in self._silent if p.start <= when < p.end]
        # A trigger that a volume drop silences is drawn again; only the first draw's silenced
        # notifications are the drop's hits (the redraws stand in for them).
        for attempt in range(REDRAWS):
            workflow = self.catalog.workflows[self._pick(*self._workflows)]
            if workflow.spec.topics:
                stories = self._broadcast(when, workflow, limit, silent, attempt == 0)
                if stories:
                    return stories
                continue
            subscriber = self._subscriber(workflow.spec.audience)
            if not self._silenced(silent, when, workflow, subscriber, attempt == 0):
                return [self.build(when, subscriber, workflow)]
        return []

    def _silenced(
        self,
        plans: list[IncidentPlan],
        when: datetime,
        workflow: Workflow,
        subscriber: dict,
        record: bool = True,
    ) -> bool:
        """Whether a volume drop suppresses this notification (recorded as its hit if
        ``record``)."""
        for plan in plans:
            for channel in workflow.channels:
                provider = self._provider(channel, subscriber)
                if self._reachable(channel, subscriber) and plan.matches(
                    channel, provider, subscriber
                ):
                    if record:
                        self._hit(plan, when, None, subscriber)
                    return True
        return False

    def _hit(self, plan: IncidentPlan, at: datetime, story_id: str | None, subscriber: dict):
        self.hits.setdefault(plan.name, []).append((at, story_id, subscriber["subscriberId"]))

    def _targets(self, plan: IncidentPlan, subscriber: dict[str, Any]) -> bool:
        """Whether deliveries to ``subscriber`` on the incident's channel would meet it."""
        provider = self._provider(plan.channel, subscriber)
        return self._reachable(plan.channel, subscriber) and plan.matches(
            plan.channel, provider, subscriber
        )

    def planted(self, when: datetime, plan: IncidentPlan) -> list[Story]:
        """A notification bound to meet ``plan``: a subscriber it targets, a workflow that
        delivers on its channel without waiting (no digest); a plain trigger if there is none."""
        flows = [
            flow
            for flow in self.catalog.workflows
            if plan.channel in flow.channels
            and "digest" not in flow.channels
            and not flow.spec.topics
        ]
        if plan.name not in self._people:
            subscribers = self.catalog.subscribers
            self._people[plan.name] = [s for s in subscribers if self._targets(plan, s)]
        people = self._people[plan.name]
        if not flows or not people:
            return self.trigger(when)
        flow = self.rng.choices(flows, [flow.spec.weight for flow in flows])[0]
        return [self.build(when, self.rng.choice(people), flow)]

    def _subscriber(self, audience: str | None) -> dict[str, Any]:
        items, cumulative = self._audiences.get(audience) or self._audiences[None]
        if not items:
            items, cumulative = self._audiences[None]
        return self.catalog.subscribers[self._pick(items, cumulative)]

    def _pick(self, items: list[int], cumulative: list[float]) -> int:
        """A weighted choice among ``items`` (``cumulative`` weights)."""
        index = bisect.bisect_right(cumulative, self.rng.random() * cumulative[-1])
        return items[min(index, len(items) - 1)]

    def _broadcast(
        self,
        when: datetime,
        workflow: Workflow,
        limit: int | None,
        silent: list[IncidentPlan],
        record: bool = True,
    ) -> list[Story]:
        topics = [key for key in workflow.spec.topics if self.catalog.topics.get(key, ("", []))[1]]
        if not topics:
            return [self.build(when, self._subscriber(None), workflow)]
        key = self.rng.choice(topics)
        topic_id, members = self.catalog.topics[key]
        size = min(self.rng.randint(3, 12), len(members), limit or len(members))
        transaction_id = self._transaction_id()
        people = [self.catalog.subscribers[index] for index in self.rng.sample(members, size)]
        return [
            self.build(when, person, workflow, topic=(topic_id, key), transaction_id=transaction_id)
            for person in people
            if not silent or not self._silenced(silent, when, workflow, person, record)
        ]

    def _transaction_id(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    # -- building -------------------------------------------------------------------------

    def build(
        self,
        when: datetime,
        subscriber: dict[str, Any],
        workflow: Workflow,
        *,
        topic: tuple[str, str] | None = None,
        transaction_id: str | None = None,
    ) -> Story:
        """The story of one notification of ``workflow`` to ``subscriber`` created at ``when``.

        ``subscriber`` is a :func:`subscriber_profile`; ``topic`` is ``(topic _id, key)`` for a
        topic-triggered notification.
        """
        spec, rng = workflow.spec, self.rng
        payload = spec.payload(rng, subscriber["summary"], when)
        template = workflow.template
        doc: dict[str, Any] = {
            "_id": self.ids.new(when),
            "_environmentId": self.catalog.environment_id,
            "_organizationId": self.catalog.organization_id,
            "_subscriberId": subscriber["id"],
            "_templateId": template["_id"],
            "transactionId": transaction_id or self._transaction_id(),
            "createdAt": iso(when),
            "channels": workflow.channels,
            "subscriber": subscriber["summary"],
            "template": template,
            "payload": payload,
            "tags": list(spec.tags),
            "to": {"subscriberId": subscriber["subscriberId"]},
            "critical": spec.critical,
        }
        if topic is not None:
            doc["to"] = {"type": "Topic", "topicKey": topic[1]}
            doc["topics"] = [{"_topicId": topic[0], "topicKey": topic[1]}]
        if spec.severity is not None:
            doc["severity"] = spec.severity
        story = Story(
            doc,
            [],
            when,
            spec.severity,
            sum(CHANNEL_BITS[channel] for channel in workflow.channels),
            [topic[1]] if topic else [],
        )
        self._add_jobs(story, workflow, subscriber, payload)
        return story

    def _add_jobs(
        self, story: Story, workflow: Workflow, subscriber: dict[str, Any], payload: dict
    ) -> None:
        """Run the steps in order; a merged digest or a canceled delay ends the chain early."""
        at = story.created_at + _seconds(self.rng, 0.01, 0.3)
        stopped: tuple[str, str, datetime] | None = None  # (job status, detail, at)
        for step_type, step in workflow.steps:
            provider = self._provider(step_type, subscriber)
            job = Job(
                {
                    "_id": self.ids.new(story.created_at),
                    "type": step_type,
                    "step": step,
                    "providerId": provider,
                }
            )
            if stopped is not None:
                status, text, when = stopped
                job.events.append(self._event(when, "Warning", text, "Internal", provider, status))
            elif step_type == "digest":
                at, stopped = self._digest(job, story, workflow, step, subscriber, payload, at)
            elif step_type == "delay":
                at, stopped = self._delay(job, step, at)
            else:
                at = self._deliver(job, story, step_type, provider, subscriber, at)
            story.jobs.append(job)
            at += _seconds(self.rng, 0.02, 0.3)

    def _provider(self, channel: str, subscriber: dict[str, Any]) -> str:
        routed = self._routes.get(channel)
        if routed and int(subscriber["id"][-6:], 16) % 100 < ROUTED_SHARE * 100:
            return routed
        if channel in ("chat", "push"):
            return subscriber[channel] or self.catalog.providers.get(channel, "svc")
        return self.catalog.providers.get(channel, "svc")

    def _event(
        self,
        at: datetime,
        status: str,
        text: str,
        source: str,
        provider: str,
        job_status: str | None,
        raw: str | None = None,
        retry: bool = False,
    ) -> Event:
        detail = {
            "_id": self.ids.new(at),
            "createdAt": iso(at),
            "status": status,
            "detail": text,
            "isRetry": retry,
            "isTest": False,
            "providerId": provider,
            "raw": raw,
            "source": source,
        }
        return Event(at, detail, job_status)

    # -- digest and delay steps -----------------------------------------------------------

    def _digest(
        self,
        job: Job,
        story: Story,
        workflow: Workflow,
        step: dict[str, Any],
        subscriber: dict[str, Any],
        payload: dict[str, Any],
        at: datetime,
    ) -> tuple[datetime, tuple[str, str, datetime] | None]:
        """Open a digest window (this notification leads it), or merge into the open one."""
        meta = step.get("metadata") or {"type": "regular", "amount": 10, "unit": "minutes"}
        job.doc["digest"] = {**meta, "events": [payload]}
        provider = job.doc["providerId"]
        job.events.append(self._event(at, "Queued", "Step queued", "Internal", provider, "delayed"))
        key = (workflow.template["_id"], subscriber["id"])
        lead, lead_job = self._digests.get(key, (None, job))
        if lead is not None and lead.open_until is not None and at < lead.open_until:
            events = lead_job.doc["digest"]["events"]
            if len(events) < MAX_DIGEST_EVENTS:
                events.append(payload)
            story.doc["_digestedNotificationId"] = lead.id
            merged = at + _seconds(self.rng, 0.01, 0.2)
            text = "Digest was merged with other digest"
            job.events.append(self._event(merged, "Success", text, "Internal", provider, "merged"))
            return merged, ("skipped", "Step skipped: merged into an earlier digest", merged)
        until = _digest_until(meta, at)
        story.open_until = until
        self._digests[key] = (story, job)
        job.events.append(
            self._event(until, "Success", "Digest completed", "Internal", provider, "completed")
        )
        return until, None

    def _delay(
        self, job: Job, step: dict[str, Any], at: datetime
    ) -> tuple[datetime, tuple[str, str, datetime] | None]:
        """Wait; about one in twenty delayed notifications is canceled meanwhile."""
        meta = step.get("metadata") or {"amount": 5, "unit": "minutes"}
        length = timedelta(seconds=meta["amount"] * UNITS[meta["unit"]])
        provider = job.doc["providerId"]
        job.events.append(self._event(at, "Queued", "Step queued", "Internal", provider, "delayed"))
        if self.rng.random() < 0.05:
            canceled = at + length * self.rng.random()
            job.events.append(
                self._event(canceled, "Warning", "Delay canceled", "Internal", provider, "canceled")
            )
            return canceled, ("canceled", "Step canceled", canceled)
        done = at + length
        job.events.append(
            self._event(done, "Success", "Delay finished", "Internal", provider, "completed")
        )
        return done, None

    # -- channel steps --------------------------------------------------------------------

    def _deliver(
        self,
        job: Job,
        story: Story,
        channel: str,
        provider: str,
        subscriber: dict[str, Any],
        at: datetime,
    ) -> datetime:
        """Queue, send (with retries after transient failures), then the provider's webhooks.

        Returns when the step ended (sent, or given up), when the next step starts.
        """
        events = job.events
        events.append(self._event(at, "Pending", "Step queued", "Internal", provider, "queued"))
        if not self._reachable(channel, subscriber):
            events.append(
                self._event(at, "Warning", MISSING_ADDRESS[channel], "Payload", provider, "skipped")
            )
            return at
        latency = _seconds(self.rng, *SEND_LATENCY[channel])
        for plan in self._slow:
            if plan.applies(channel, provider, at, subscriber):
                latency = latency * plan.factor + timedelta(seconds=plan.delay)
                self._hit(plan, at, story.id, subscriber)
        at += latency
        drawn: dict[str, bool] = {}  # incident name -> whether this job is among its failures
        failure = self._failure(channel, provider, at, story, subscriber, drawn)
        attempt = 0
        while failure is not None and not failure.after_send:
            retrying = failure.transient and attempt < len(RETRY_BACKOFF)
            status = "queued" if retrying else "failed"
            events.append(
                self._event(
                    at,
                    "Failed",
                    failure.detail,
                    failure.source,
                    provider,
                    status,
                    failure.raw,
                    retry=attempt > 0,
                )
            )
            if not retrying:
                return at
            at += timedelta(seconds=RETRY_BACKOFF[attempt] * self.rng.uniform(0.9, 1.3))
            attempt += 1
            failure = self._failure(channel, provider, at, story, subscriber, drawn)
        events.append(
            self._event(
                at,
                "Success",
                "Message sent",
                "Credentials",
                provider,
                "completed",
                _sent_raw(self.rng, provider),
                retry=attempt > 0,
            )
        )
        if failure is not None:
            later = at + _seconds(self.rng, 2, 90)
            events.append(
                self._event(
                    later, "Failed", failure.detail, failure.source, provider, "failed", failure.raw
                )
            )
        else:
            self._after_delivery(events, channel, provider, at)
        return at

    @staticmethod
    def _reachable(channel: str, subscriber: dict[str, Any]) -> bool:
        key = ADDRESS.get(channel)
        return key is None or bool(subscriber[key])

    def _failure(
        self,
        channel: str,
        provider: str,
        at: datetime,
        story: Story,
        subscriber: dict[str, Any],
        drawn: dict[str, bool],
    ) -> Failure | None:
        """The failure this attempt meets: a planted incident's, else maybe a background one."""
        plans = self.incidents + self.live() if self.live else self.incidents
        for plan in plans:
            if plan.kind in FAILING and plan.applies(channel, provider, at, subscriber):
                if plan.failure_rate < 1:
                    if plan.name not in drawn:
                        drawn[plan.name] = self.rng.random() < plan.failure_rate
                    if not drawn[plan.name]:
                        continue
                self._hit(plan, at, story.id, subscriber)
                return plan.failure
        failures = FAILURES.get(provider)
        if failures and self.rng.random() < FAILURE_RATE.get(channel, 0.0):
            return self.rng.choice(failures)
        return None

    def _after_delivery(self, events: list[Event], channel: str, provider: str, sent: datetime):
        """Delivery receipts (email, SMS), opens and reads, minutes to hours after the send."""
        rng = self.rng
        if channel in ("email", "sms") and rng.random() < 0.95:
            delivered = sent + _seconds(rng, 2, 40)
            raw = DELIVERED_RAW[channel]
            events.append(
                self._event(
                    delivered, "Success", "Message delivered", "Webhook", provider, None, raw
                )
            )
            if channel == "email" and rng.random() < 0.35:
                opened = delivered + timedelta(minutes=rng.expovariate(1 / 180))
                events.append(
                    self._event(
                        opened,
                        "Success",
                        "Email opened",
                        "Webhook",
                        provider,
                        None,
                        '{"event": "open"}',
                    )
                )
        elif channel in ("in_app", "push") and rng.random() < (
            0.5 if channel == "in_app" else 0.25
        ):
            read = sent + timedelta(minutes=rng.expovariate(1 / 240))
            source = "Internal" if channel == "in_app" else "Webhook"
            events.append(
                self._event(read, "ReadConfirmation", "Message read", source, provider, None)
            )


def _sent_raw(rng: random.Random, provider: str) -> str | None:
    """The provider's answer to a successful send, as a JSON string (None for in-app)."""
    if provider == "svc":
        return None
    if provider == "sendgrid":
        return f'{{"statusCode": 202, "messageId": "{rng.getrandbits(96):024x}"}}'
    if provider in ("ses", "sns"):
        return f'{{"MessageId": "{uuid.UUID(int=rng.getrandbits(128), version=4)}"}}'
    if provider == "twilio":
        return f'{{"sid": "SM{rng.getrandbits(128):032x}", "status": "queued"}}'
    if provider in PUSH_PROVIDER_IDS:
        return f'{{"messageId": "{rng.getrandbits(96):024x}", "success": 1}}'
    return '{"status": 200, "body": "ok"}'


def _digest_until(meta: dict[str, Any], at: datetime) -> datetime:
    """The end of a digest window opened at ``at`` (timed: the next listed weekday at atTime)."""
    timed = meta.get("timed")
    if meta.get("type") != "timed" or not timed:
        return at + timedelta(seconds=meta["amount"] * UNITS[meta["unit"]])
    hour, minute = (int(part) for part in timed.get("atTime", "09:00").split(":"))
    days = {
        "monday": 0,
        "tuesday": 1,
        "wednesday": 2,
        "thursday": 3,
        "friday": 4,
        "saturday": 5,
        "sunday": 6,
    }
    weekdays = {days[name] for name in timed.get("weekDays") or ["monday"]}
    candidate = at.replace(hour=hour, minute=minute, second=0, microsecond=0)
    while candidate <= at or candidate.weekday() not in weekdays:
        candidate += timedelta(days=1)
    return candidate
