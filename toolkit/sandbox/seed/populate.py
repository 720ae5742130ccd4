"""Activity over time and `populate`: fill an empty store with the seeded data."""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import Any

from toolkit.sandbox.clock import iso, parse_instant
from toolkit.sandbox.ids import IdFactory
from toolkit.sandbox.seed.catalog import Catalog
from toolkit.sandbox.seed.data import ACTIVITY_DAYS, CHUNK, SMALL_SHARE, rng_for, to_json
from toolkit.sandbox.seed.factory import NotificationFactory
from toolkit.sandbox.seed.incidents import (
    IncidentPlan,
    IncidentSpec,
    describe,
    plan_incidents,
    plan_specs,
    specs_of,
)
from toolkit.sandbox.seed.story import INSERT_NOTIFICATION, INSERT_NOTIFICATION_TOPIC, Story
from toolkit.sandbox.seed.tenancy import (
    insert_tenancy,
    integration_rows,
    make_environments,
    subscriber_rows,
    subscription_rows,
    topic_rows,
    workflow_rows,
)
from toolkit.sandbox.store import RETENTION_DAYS, Store

# --------------------------------------------------------------------------------------------
# Activity over time and populate
# --------------------------------------------------------------------------------------------

#: Relative trigger volume by hour of the day (UTC); weekends get WEEKEND of it.
HOURLY = (0.22, 0.16, 0.13, 0.12, 0.14, 0.22, 0.40, 0.65, 0.90, 1.00, 1.05, 1.08,
          1.05, 1.05, 1.08, 1.05, 1.00, 0.92, 0.82, 0.72, 0.60, 0.48, 0.38, 0.30)  # fmt: skip
WEEKEND = 0.45


def activity_times(
    rng: random.Random, now: datetime, count: int, days: int = ACTIVITY_DAYS
) -> list[datetime]:
    """``count`` sorted instants in the ``days`` before ``now``, with a daily and weekly rhythm."""
    hours = days * 24
    starts = [now - timedelta(hours=hours - h) for h in range(hours)]
    weights = []
    for start in starts:
        middle = start + timedelta(minutes=30)
        weights.append(HOURLY[middle.hour] * (WEEKEND if middle.weekday() >= 5 else 1.0))
    picks = rng.choices(range(hours), weights, k=count)
    return sorted(starts[h] + timedelta(seconds=rng.random() * 3600) for h in picks)


def _insert(db: Any, table: str, rows: list[dict[str, Any]]) -> None:
    if rows:
        columns = list(rows[0])
        sql = f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"
        db.executemany(sql, [tuple(row[c] for c in columns) for row in rows])


def _write_activity(
    db: Any,
    factory: NotificationFactory,
    slots: list[tuple[datetime, IncidentPlan | None]],
    now: datetime,
) -> None:
    """Trigger at each slot, in time order, and insert the rows.

    A slot with a plan plants a notification that meets it; a topic's fan-out uses up the
    following slots. A digest's lead is held back until its window closes, since later events
    still merge into it.
    """
    held: list[Story] = []
    ready: list[Story] = []
    position = 0
    while position < len(slots):
        when, plan = slots[position]
        if plan is None:
            stories = factory.trigger(when, limit=len(slots) - position)
        else:
            stories = factory.planted(when, plan)
        position += max(1, len(stories))
        for story in stories:
            (held if story.open_until else ready).append(story)
        if len(ready) >= CHUNK:
            ready += [story for story in held if story.open_until <= when]
            held = [story for story in held if story.open_until > when]
            _insert_stories(db, ready, now)
            ready = []
    _insert_stories(db, ready + held, now)


def _slots(
    rng: random.Random, now: datetime, count: int, days: int, plans: list[IncidentPlan]
) -> list[tuple[datetime, IncidentPlan | None]]:
    """``count`` trigger slots: a few per incident plan inside its window, the rest at random."""
    per_plan = count // 1000 + 3 if count >= 100 else 0
    planted = []
    for plan in plans:
        if plan.kind == "volume_drop":
            continue
        window = min(plan.end, now) - plan.start
        span = (window - min(timedelta(minutes=30), window / 2)).total_seconds()
        planted += [
            (plan.start + timedelta(seconds=rng.random() * span), plan) for _ in range(per_plan)
        ]
    times = activity_times(rng, now, count - len(planted), days)
    return sorted([(when, None) for when in times] + planted, key=lambda slot: slot[0])


def _insert_stories(db: Any, stories: list[Story], now: datetime) -> None:
    db.executemany(INSERT_NOTIFICATION, [story.row(now) for story in stories])
    db.executemany(INSERT_NOTIFICATION_TOPIC, [row for s in stories for row in s.topic_rows()])


def _populate_environment(
    db: Any,
    seed: int,
    index: int,
    env: dict[str, Any],
    ids: IdFactory,
    now: datetime,
    notifications: int,
    subscribers: int,
    plant: bool,
    specs: list[IncidentSpec] | None,
) -> list[dict[str, Any]]:
    """Write one environment's data; return its planted incidents (if ``plant``): the default
    ones when ``specs`` is None, else those of ``specs``."""
    rng = rng_for(seed, "environment", index)
    integrations = integration_rows(rng, ids, env, now)
    workflows = workflow_rows(rng, ids, env, now)
    people = subscriber_rows(rng, ids, env, now, subscribers, integrations)
    topics = topic_rows(rng, ids, env, now)
    subscriptions = subscription_rows(rng, ids, people, topics, now)
    for table, rows in (
        ("integrations", integrations),
        ("workflows", workflows),
        ("subscribers", people),
        ("topics", topics),
        ("subscriptions", subscriptions),
    ):
        _insert(db, table, rows)
    catalog = Catalog.from_rows(env, people, workflows, topics, subscriptions, integrations)
    plans: list[IncidentPlan] = []
    if plant and specs is None:
        plans = plan_incidents(rng, catalog, now)
    elif plant:
        plans = plan_specs(specs, rng_for(seed, "incidents"), catalog, now)
    factory = NotificationFactory(catalog, rng_for(seed, "activity", index), ids, plans)
    days = min(ACTIVITY_DAYS, 3 * RETENTION_DAYS[env["plan"]])
    _write_activity(db, factory, _slots(rng, now, notifications, days, plans), now)
    return [describe(plan, factory.hits[plan.name], env["id"], now) for plan in plans]


def populate(
    store: Store,
    *,
    seed: int = 7,
    now: datetime | str,
    notifications: int = 20_000,
    subscribers: int = 2_000,
    incidents: str | list = "default",
) -> dict[str, Any]:
    """Fill an empty store with seeded, realistic data ending at ``now``, in one transaction.

    Parameters
    ----------
    store : Store
        An empty store.
    seed : int
        Same ``(seed, now, sizes, incidents)``, byte-identical rows.
    now : datetime or str
        The end of the activity (14 days of it; 3 days on the free plan, whose feed keeps 24 h);
        nothing is dated after it.
    notifications, subscribers : int
        Sizes of the default environment (Acme/Development); the other two environments get
        about 5 % of each.
    incidents : "default", "none" or list
        What to plant in the default environment: the three default incidents, nothing, or
        these specs (dicts or `IncidentSpec`; see `toolkit.sandbox.seed.incidents`).

    Returns
    -------
    dict
        ``{"environments": [...], "incidents": [...]}``: environments (``id``,
        ``organization_id``, ``organization``, ``name``, ``plan``, ``api_key``; the first is the
        default) and the planted incidents. Also stored in ``meta`` (``tenancy``, ``incidents``,
        ``seed``, ``now``, ``notifications``, ``subscribers``).
    """
    now = parse_instant(now)
    specs = specs_of(incidents)
    ids = IdFactory(rng_for(seed, "ids"))
    environments = make_environments(rng_for(seed, "tenancy"), ids, now)
    small = (max(1, round(notifications * SMALL_SHARE)), max(5, round(subscribers * SMALL_SHARE)))
    planted: list[dict[str, Any]] = []
    with store.write() as db:
        insert_tenancy(db, environments)
        for index, env in enumerate(environments):
            sizes = (notifications, subscribers) if index == 0 else small
            planted += _populate_environment(
                db, seed, index, env, ids, now, *sizes, index == 0, specs
            )
        meta = {
            "tenancy": to_json({"environments": environments}),
            "incidents": to_json(planted),
            "seed": str(seed),
            "now": iso(now),
            "notifications": str(notifications),
            "subscribers": str(subscribers),
        }
        db.executemany("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", meta.items())
    return {"environments": environments, "incidents": planted}
