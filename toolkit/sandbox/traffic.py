"""Live traffic: new notifications inserted at a steady rate of the sandbox's clock.

A running clock has a daemon thread keep up with it; a stopped one (``speed=0``) is kept up with
by `LiveTraffic.catch_up`, which `Sandbox.advance` calls after moving it (deterministic tests).

New notifications are made by the seeding's :class:`~toolkit.sandbox.seed.NotificationFactory`
from the environment's subscribers, workflows, topics and integrations as they are in the store
when traffic starts. A new notification is created at ``clock.now()`` and is in flight: its
document is rewritten as its execution details come due (sent, delivered, read, digest closed),
so nothing is ever dated after the service's now (for :data:`FOLLOW` after its creation).
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import random
import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from toolkit.sandbox import seed as seeding
from toolkit.sandbox.clock import Clock, iso
from toolkit.sandbox.ids import IdFactory
from toolkit.sandbox.store import Store

#: How long ``stop()`` waits for the thread.
JOIN_TIMEOUT = 5.0
#: How long after its creation a notification's document keeps being rewritten as details come
#: due (later ones, such as most reads, never show): bounds the memory of long runs.
FOLLOW = timedelta(minutes=45)


def load_catalog(store: Store, environment_id: str) -> seeding.Catalog:
    """The :class:`~toolkit.sandbox.seed.Catalog` of one environment, read from the store."""
    with store.read() as db:
        environment = db.execute(
            "SELECT id, organization_id FROM environments WHERE id = ?", (environment_id,)
        ).fetchone()
        if environment is None:
            raise ValueError(f"unknown environment {environment_id!r}")

        def rows(table: str, order: str) -> list[dict[str, Any]]:
            sql = f"SELECT * FROM {table} WHERE environment_id = ? ORDER BY {order}"
            return [dict(row) for row in db.execute(sql, (environment_id,))]

        return seeding.Catalog.from_rows(
            dict(environment),
            rows("subscribers", "id"),
            rows("workflows", "id"),
            rows("topics", "id"),
            rows("subscriptions", "id"),
            rows("integrations", "created_at, id"),
        )


class LiveTraffic:
    """Insert new notifications into ``environment_id`` at about ``rate`` per second.

    Parameters
    ----------
    store : Store
        The sandbox's store.
    clock : Clock
        New notifications are created at ``clock.now()`` (a stopped clock's, by `catch_up`, at
        their scheduled instants).
    environment_id : str
        The environment that receives the traffic.
    rate : float
        Notifications per second of the sandbox's clock (a topic trigger's fan-out counts each
        notification): at a clock speed of 10, ``rate=5`` inserts 50 per real second.
    seed : int
        Seeds the choices of workflows, subscribers and outcomes.
    live : callable, optional
        Returns the live incidents (outages) that new notifications meet.

    Attributes
    ----------
    count : int
        Notifications inserted so far.
    """

    def __init__(
        self,
        store: Store,
        clock: Clock,
        environment_id: str,
        rate: float,
        seed: int = 0,
        live: Callable[[], list[seeding.IncidentPlan]] | None = None,
    ):
        if rate <= 0:
            raise ValueError(f"rate must be positive, got {rate}")
        self.store, self.clock = store, clock
        self.environment_id, self.rate, self.seed = environment_id, float(rate), seed
        self.count = 0
        self.live = live
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._feed: _Feed | None = None
        self._origin, self._paced = clock.now(), 0  # the schedule: set again by start()

    @property
    def running(self) -> bool:
        if self._thread is None:  # a stopped clock's traffic: between start and stop
            return self._feed is not None
        return self._thread.is_alive()

    def start(self) -> LiveTraffic:
        """Start inserting (the catalog is read now, so a bad environment raises here): in a
        thread when the clock runs, else at each `catch_up`."""
        if self.running:
            return self
        catalog = load_catalog(self.store, self.environment_id)
        started = self.clock.now()
        factory = seeding.NotificationFactory(
            catalog,
            random.Random(f"{self.seed}:traffic:{self.environment_id}"),
            IdFactory(random.Random(f"{self.seed}:traffic-ids:{iso(started)}")),
            live=self.live,
        )
        self._feed, self._origin, self._paced = _Feed(factory), started, 0
        self._stop.clear()
        if self.clock.speed:
            self._thread = threading.Thread(
                target=self._run, args=(self._feed,), name="live-traffic", daemon=True
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop inserting; wait for the thread (it finishes at most one small transaction)."""
        self._stop.set()
        self._feed = None
        if self._thread is not None:
            self._thread.join(JOIN_TIMEOUT)

    def catch_up(self, until: datetime) -> None:
        """Insert what falls due up to ``until``, each trigger at its scheduled instant, in the
        calling thread (how a stopped clock's traffic keeps up when the clock is moved)."""
        feed = self._feed
        while feed is not None and (due := self._due()) <= until:
            self._tick(feed, due)

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"<LiveTraffic {self.environment_id} {self.rate}/s {state}, {self.count} inserted>"

    def _due(self) -> datetime:
        """When the next trigger is due: ``rate`` per second of the clock since the start."""
        return self._origin + timedelta(seconds=self._paced / self.rate)

    def _run(self, feed: _Feed) -> None:
        """Trigger on schedule as the clock runs."""
        while not self._stop.wait(
            max(0.0, (self._due() - self.clock.now()).total_seconds() / self.clock.speed)
        ):
            self._tick(feed, self.clock.now())

    def _tick(self, feed: _Feed, now: datetime) -> None:
        """Trigger at ``now`` and rewrite what changed by then, in one transaction."""
        stories, changed = feed.tick(now)
        if stories or changed:
            with self.store.write() as db:
                db.executemany(seeding.INSERT_NOTIFICATION, [s.row(now) for s in stories])
                db.executemany(
                    seeding.INSERT_NOTIFICATION_TOPIC, [r for s in stories for r in s.topic_rows()]
                )
                db.executemany(
                    "UPDATE notifications SET doc = ? WHERE id = ?",
                    [(seeding.to_json(s.document(now)), s.id) for s in changed],
                )
            self.count += len(stories)
        self._paced += max(1, len(stories))  # a topic's fan-out counts each notification


class _Feed:
    """New stories from the factory, and the inserted ones whose document has changed since.

    A story changes when one of its execution details comes due, and a digest's lead also when
    a later notification merges into it.
    """

    def __init__(self, factory: seeding.NotificationFactory):
        self.factory = factory
        self._due: list[tuple[datetime, int, seeding.Story, list[datetime]]] = []  # a heap
        self._order = itertools.count()
        self._leads: dict[str, seeding.Story] = {}  # open digests, by notification id

    def tick(self, now: datetime) -> tuple[list[seeding.Story], list[seeding.Story]]:
        """``(new stories created at now, inserted stories to rewrite)``."""
        stories = self.factory.trigger(now)
        return stories, self._changed(stories, now)

    def _changed(self, stories: list[seeding.Story], now: datetime) -> list[seeding.Story]:
        """Already inserted stories whose document differs by ``now``; schedule the new ones."""
        changed: dict[str, seeding.Story] = {}
        for story in stories:
            lead = self._leads.get(story.doc.get("_digestedNotificationId", ""))
            if lead is not None:
                changed[lead.id] = lead
            if story.open_until is not None:
                self._leads[story.id] = story
            self._schedule(story, sorted(e.at for job in story.jobs for e in job.events), now)
        while self._due and self._due[0][0] <= now:
            _, _, story, times = heapq.heappop(self._due)
            changed[story.id] = story
            self._schedule(story, times, now)
        for key in [key for key, lead in self._leads.items() if lead.open_until <= now]:
            del self._leads[key]
        return list(changed.values())

    def _schedule(self, story: seeding.Story, times: list[datetime], now: datetime) -> None:
        """Queue ``story`` for its next event after ``now``, if any within :data:`FOLLOW`."""
        index = bisect.bisect_right(times, now)
        if index < len(times) and times[index] <= story.created_at + FOLLOW:
            heapq.heappush(self._due, (times[index], next(self._order), story, times))
