"""What a store knows about itself (``state.json``), its sync checkpoint, and its writer lock.

``state.json``: the source (``service``: what it is, ``Client.source``, the same for a local sandbox
whatever its port; the base URL last read; the environment; the environment ids seen), the filters of
every sync, the window (``after``: the earliest instant held; ``watermark``: everything created
up to it has been read and durably written) and the service time of the last sync.
``sync.checkpoint.json`` exists while a sync runs: its pinned window and the days already written,
so that a sync killed at any moment resumes where it stopped. Both are written atomically.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from toolkit._version import __version__
from toolkit.errors import ParameterError, StoreError
from toolkit.redact import mask_userinfo
from toolkit.timeutil import parse_time, to_iso, utcnow

__all__ = ["Checkpoint", "State", "StoreError", "StoreLockedError", "writer_lock"]

STATE_FILE = "state.json"
CHECKPOINT_FILE = "sync.checkpoint.json"
LOCK_FILE = ".lock"
FORMAT = 1


class StoreLockedError(StoreError):
    """Another sync is writing to the store."""


@dataclass
class State:
    """The contents of ``state.json``."""

    base_url: str
    environment: str | None
    filters: dict[str, Any]
    environment_ids: list[str] = field(default_factory=list)
    after: str | None = None
    watermark: str | None = None
    synced_at: str | None = None
    service: str | None = None  # `Client.source`; None in stores written before it (base_url)
    format: int = FORMAT
    toolkit_version: str = __version__

    @classmethod
    def load(cls, root: Path) -> State | None:
        """The state of the store at ``root``; None when there is none yet."""
        path = root / STATE_FILE
        if not path.exists():
            return None
        try:
            data = json.loads(path.read_text())
            if not isinstance(data, dict):
                raise TypeError(f"it holds {type(data).__name__}, not an object")
            state = cls(**data)
        except (ValueError, TypeError) as error:
            raise StoreError(
                f"{path} is damaged ({error}); restore it from a copy, or sync into a new store"
                " (keep this folder: its Parquet files hold days the plan's retention may no"
                " longer hold)"
            ) from None
        state._check(path)
        state.base_url = mask_userinfo(state.base_url)  # a store from before it was masked
        return state

    def _check(self, path: Path) -> None:
        """Raise `StoreError` naming the first field of the wrong type, and how to repair it."""
        texts = lambda v: isinstance(v, list) and all(isinstance(i, str) for i in v)  # noqa: E731
        checks = {
            "base_url": (lambda v: isinstance(v, str), "text"),
            "environment": (lambda v: v is None or isinstance(v, str), "text or null"),
            "filters": (lambda v: isinstance(v, dict), "an object ({} for none)"),
            "environment_ids": (texts, "a list of ids"),
            "format": (lambda v: v == FORMAT, f"{FORMAT}"),
        }
        for name in ("after", "watermark", "synced_at"):
            checks[name] = (lambda v: v is None or _is_time(v), "an ISO time or null")
        for name, (valid, expected) in checks.items():
            value = getattr(self, name)
            if not valid(value):
                raise StoreError(
                    f"{path}: `{name}` is {json.dumps(value)[:60]}, not {expected}; edit it"
                    " (`after` and `watermark` set to null make the next sync read its whole"
                    " window again, keeping the files held)"
                )

    def save(self, root: Path) -> None:
        """Write ``state.json`` atomically."""
        self.toolkit_version = __version__
        write_json(root / STATE_FILE, asdict(self))

    def time(self, name: str) -> datetime | None:
        """``after``, ``watermark`` or ``synced_at`` as a datetime."""
        value = getattr(self, name)
        return None if value is None else parse_time(value, name=name)

    def source(self) -> str:
        environment = f" ({self.environment})" if self.environment else ""
        return f"{self.service or self.base_url}{environment}"

    def same_source(self, client: Any) -> bool:
        """Whether ``client`` reads this store's source: the same service (``client.source``,
        not the port a local sandbox got) and environment (any, in a store that never knew
        it)."""
        return (self.service or self.base_url) == client.source and (
            self.environment is None or self.environment == client.environment
        )

    def adopt(self, client: Any) -> None:
        """Record ``client`` as the store's source (its address as last read)."""
        self.base_url, self.service, self.environment = (
            client.base_url,
            client.source,
            client.environment,
        )


def _is_time(value: Any) -> bool:
    try:
        parse_time(value)
    except (ParameterError, TypeError, ValueError):
        return False
    return isinstance(value, str)


@dataclass
class Checkpoint:
    """A sync under way: its pinned window, the days to write and the days written."""

    start: str
    before: str
    days: list[str]
    done: list[str] = field(default_factory=list)

    @classmethod
    def load(cls, root: Path) -> Checkpoint | None:
        path = root / CHECKPOINT_FILE
        if not path.exists():
            return None
        try:
            return cls(**json.loads(path.read_text()))
        except (ValueError, TypeError):
            return None  # torn by a crash: the sync starts over, which is always correct

    def save(self, root: Path) -> None:
        write_json(root / CHECKPOINT_FILE, asdict(self))

    @staticmethod
    def clear(root: Path) -> None:
        (root / CHECKPOINT_FILE).unlink(missing_ok=True)


def write_json(path: Path, data: Any) -> None:
    """Write ``data`` as JSON to ``path`` atomically (`write_text`)."""
    write_text(path, json.dumps(data, indent=1, sort_keys=True))


def write_text(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` through a temporary file flushed to disk, then
    renamed: a full disk or a kill leaves the previous file whole."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(temporary, "w", encoding="utf-8") as sink:
            sink.write(text)
            sink.flush()
            os.fsync(sink.fileno())
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


@contextmanager
def writer_lock(root: Path) -> Iterator[None]:
    """Hold the store's writer lock; a second writer gets `StoreLockedError` at once.

    An OS lock (``flock``): the kernel releases it when its process ends, even by SIGKILL.
    """
    path = root / LOCK_FILE
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(descriptor, 200, 0).decode(errors="replace").strip()
            raise StoreLockedError(
                f"another sync is writing to the store {root} ({holder or 'process unknown'});"
                " wait for it to finish, then run sync again"
            ) from None
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, f"pid {os.getpid()}, since {to_iso(utcnow())}".encode(), 0)
        yield
    finally:
        os.close(descriptor)  # releases the lock


def check_directory(root: Path) -> None:
    """Refuse a path that cannot hold a store: a file, an unwritable place, a foreign folder."""
    if root.exists() and not root.is_dir():
        raise ParameterError("store", str(root), "a directory (a new one, or a store)")
    existing = root
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise ParameterError(
            "store", str(root), f"a path inside a directory ({existing} is a file)"
        )
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ParameterError(
            "store", str(root), f"a directory you can write to ({existing} is not)"
        )
    if root.is_dir() and not (root / STATE_FILE).exists():
        foreign = [p.name for p in root.iterdir() if not p.name.startswith(".")]
        if foreign:
            raise ParameterError(
                "store",
                str(root),
                f"a new or empty directory, or a store (this one holds {sorted(foreign)[:3]}"
                f" and no {STATE_FILE})",
            )
