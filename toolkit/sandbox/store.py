"""SQLite storage of the sandbox: the schema, one connection guarded by a lock, and transactions.

Records that the API returns as nested documents (a notification with its jobs and execution
details, a subscriber's channels, an integration's credentials) are stored as JSON text next to
the indexed columns that the filters need. Times are ISO strings in the service's format
(``clock.iso``), which sort lexicographically.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

#: Bit of each notification channel value in ``notifications.channel_mask``.
CHANNEL_BITS = {
    name: 1 << i
    for i, name in enumerate(
        [
            "in_app",
            "email",
            "sms",
            "chat",
            "push",
            "digest",
            "trigger",
            "delay",
            "throttle",
            "custom",
        ]
    )
}

#: Retention of the activity feed, by plan, in days (reference notes: free 24 h, pro 7 d, team/business 90 d).
RETENTION_DAYS = {"free": 1, "pro": 7, "team": 90, "business": 90}

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);

CREATE TABLE IF NOT EXISTS organizations (
    id   TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    plan TEXT NOT NULL                      -- free | pro | team | business
);

CREATE TABLE IF NOT EXISTS environments (
    id              TEXT PRIMARY KEY,
    organization_id TEXT NOT NULL REFERENCES organizations(id),
    name            TEXT NOT NULL,          -- Development | Production
    api_key         TEXT NOT NULL UNIQUE
);

CREATE TABLE IF NOT EXISTS subscribers (
    id              TEXT PRIMARY KEY,       -- the service's _id
    environment_id  TEXT NOT NULL,
    organization_id TEXT NOT NULL,
    subscriber_id   TEXT NOT NULL,          -- the caller's subscriberId
    first_name TEXT, last_name TEXT, email TEXT, phone TEXT, avatar TEXT,
    locale TEXT, timezone TEXT,
    data            TEXT,                   -- JSON object or NULL
    channels        TEXT NOT NULL DEFAULT '[]',  -- JSON array of ChannelSettings
    is_online       INTEGER,
    last_online_at  TEXT,
    version         INTEGER NOT NULL DEFAULT 0,  -- __v
    deleted         INTEGER NOT NULL DEFAULT 0,
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL,
    UNIQUE (environment_id, subscriber_id)
);
CREATE INDEX IF NOT EXISTS subscribers_env_id ON subscribers (environment_id, id);
CREATE INDEX IF NOT EXISTS subscribers_env_email ON subscribers (environment_id, email);

CREATE TABLE IF NOT EXISTS topics (
    id              TEXT PRIMARY KEY,
    environment_id  TEXT NOT NULL,
    organization_id TEXT NOT NULL,
    key             TEXT NOT NULL,
    name            TEXT,
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL,
    UNIQUE (environment_id, key)
);

CREATE TABLE IF NOT EXISTS subscriptions (
    id             TEXT PRIMARY KEY,
    environment_id TEXT NOT NULL,
    topic_id       TEXT NOT NULL REFERENCES topics(id),
    subscriber_id  TEXT NOT NULL REFERENCES subscribers(id),  -- internal _id
    created_at     TEXT NOT NULL,
    UNIQUE (topic_id, subscriber_id)
);
CREATE INDEX IF NOT EXISTS subscriptions_by_subscriber ON subscriptions (subscriber_id, id);

CREATE TABLE IF NOT EXISTS integrations (
    id              TEXT PRIMARY KEY,
    environment_id  TEXT NOT NULL,
    organization_id TEXT NOT NULL,
    name            TEXT NOT NULL,
    identifier      TEXT NOT NULL,
    provider_id     TEXT NOT NULL,
    channel         TEXT NOT NULL,
    credentials     TEXT NOT NULL DEFAULT '{}',   -- JSON
    configurations  TEXT,                          -- JSON or NULL
    conditions      TEXT,                          -- JSON array or NULL
    active          INTEGER NOT NULL,
    is_primary      INTEGER NOT NULL,
    deleted         INTEGER NOT NULL DEFAULT 0,
    deleted_at      TEXT,
    deleted_by      TEXT,
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS integrations_env ON integrations (environment_id, deleted, provider_id);

CREATE TABLE IF NOT EXISTS workflows (
    id              TEXT PRIMARY KEY,       -- the template's _id
    environment_id  TEXT NOT NULL,
    name            TEXT NOT NULL,
    identifier      TEXT NOT NULL,          -- trigger identifier
    template        TEXT NOT NULL,          -- JSON ActivityTemplate as the feed shows it
    steps           TEXT NOT NULL,          -- JSON array of ActivityStep
    created_at      TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS notifications (
    id              TEXT PRIMARY KEY,
    environment_id  TEXT NOT NULL,
    subscriber_id   TEXT NOT NULL,          -- internal _id of the subscriber
    template_id     TEXT,
    transaction_id  TEXT NOT NULL,
    severity        TEXT,                   -- high | medium | low | none | NULL
    channel_mask    INTEGER NOT NULL,       -- OR of CHANNEL_BITS of the notification's channels
    created_at      TEXT NOT NULL,
    doc             TEXT NOT NULL           -- JSON ActivityNotification, jobs included, as served
);
-- The feed's order, covering the channel and severity filters (tested before reading a row);
-- a template's feed; a subscriber's feed; a transaction.
CREATE INDEX IF NOT EXISTS notifications_feed
    ON notifications (environment_id, created_at DESC, id DESC, channel_mask, severity);
CREATE INDEX IF NOT EXISTS notifications_by_template
    ON notifications (environment_id, template_id, created_at DESC, id DESC);
CREATE INDEX IF NOT EXISTS notifications_by_subscriber ON notifications (environment_id, subscriber_id, created_at DESC);
CREATE INDEX IF NOT EXISTS notifications_by_transaction ON notifications (environment_id, transaction_id);

CREATE TABLE IF NOT EXISTS notification_topics (
    notification_id TEXT NOT NULL,
    environment_id  TEXT NOT NULL,
    topic_key       TEXT NOT NULL,
    PRIMARY KEY (environment_id, topic_key, notification_id)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS idempotency (
    organization_id TEXT NOT NULL,
    key             TEXT NOT NULL,
    body_hash       TEXT NOT NULL,
    state           TEXT NOT NULL,          -- running | done
    status          INTEGER,
    body            TEXT,
    created_at      TEXT NOT NULL,
    PRIMARY KEY (organization_id, key)
);
"""


class Store:
    """One SQLite database (a file, or ``":memory:"``) shared by the server's threads.

    ``read()`` and ``write()`` hand out the connection under a lock; ``write()`` is a
    transaction that commits on success and rolls back on any exception, so a failed request
    never leaves a partial write.
    """

    def __init__(self, path: str | Path = ":memory:", page_size: int | None = None):
        self.path = str(path)
        self._conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._conn.row_factory = sqlite3.Row
        self._lock = threading.RLock()
        with self._lock:
            if page_size is not None:  # only takes effect on a new database
                self._conn.execute(f"PRAGMA page_size = {int(page_size)}")
            if self.path != ":memory:":
                self._conn.execute("PRAGMA journal_mode=WAL")
                self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute("PRAGMA foreign_keys=ON")
            self._conn.executescript(SCHEMA)

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            yield self._conn

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def load(self, image: bytes) -> None:
        """Replace an in-memory database by a SQLite file image (``Connection.serialize``)."""
        with self._lock:
            self._conn.deserialize(image)

    def release_claims(self) -> int:
        """Free the idempotency keys of requests that were running when a previous process
        stopped (killed mid-write): their retries run again instead of answering 409."""
        with self.write() as db:
            return db.execute("DELETE FROM idempotency WHERE state = 'running'").rowcount

    def get_meta(self, key: str) -> str | None:
        with self.read() as db:
            row = db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def close(self) -> None:
        with self._lock:
            self._conn.close()
