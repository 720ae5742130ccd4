"""Seeded, realistic sandbox data: tenancy, subscribers, topics, integrations, workflows, activity.

Everything is a pure function of ``(seed, now, sizes, incidents)``: each part draws from its own
``random.Random`` seeded with a string derived from the seed, and no wall clock is read. Stored
documents are exactly what the API serves.

Modules: `data` (the tables the data are drawn from), `tenancy` (rows of environments,
integrations, subscribers, topics, workflows), `catalog` (what a factory draws from), `failures` and `incidents`
(how deliveries fail, planted incidents), `story` and `factory` (a notification's whole story, built by
one `NotificationFactory` for both `populate` and live traffic), `populate`.

A story holds every job and execution detail with their times from the start;
`Story.document` shows it as it stands at a cutoff instant, so nothing is ever dated after the
service's "now" and recent notifications are still in flight.
"""

from toolkit.sandbox.seed.catalog import Catalog
from toolkit.sandbox.seed.data import to_json
from toolkit.sandbox.seed.factory import NotificationFactory
from toolkit.sandbox.seed.incidents import KINDS, IncidentPlan, IncidentSpec
from toolkit.sandbox.seed.populate import populate
from toolkit.sandbox.seed.story import INSERT_NOTIFICATION, INSERT_NOTIFICATION_TOPIC, Story

__all__ = [
    "INSERT_NOTIFICATION",
    "INSERT_NOTIFICATION_TOPIC",
    "KINDS",
    "Catalog",
    "IncidentPlan",
    "IncidentSpec",
    "NotificationFactory",
    "Story",
    "populate",
    "to_json",
]
