"""The pagers: cursors (``next``) for the v2 lists, page numbers for the activity feed, and the
feed read as time slices that never page deep (`time_slices`, `read_sliced`)."""

from __future__ import annotations

import contextlib
import functools
import gc
import heapq
import itertools
import math
import re
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from toolkit.errors import PaginationError, ParameterError, ResponseError
from toolkit.timeutil import parse_time

__all__ = [
    "MAX_QUERY",
    "ActivityPager",
    "check_page",
    "iter_cursor_pages",
    "merge_newest_first",
    "progress_bar",
    "read_sliced",
    "split_query",
    "time_slices",
]

#: Most pages of a read asked for past the one its caller waits for: they wait decoded for the
#: caller (32 cost 20 MB more peak RSS than 16 on the 20,000-notification read).
AHEAD = 16
#: Longest query string sent (servers and proxies drop longer request lines, often from 4-8 KB).
MAX_QUERY = 4000


_TIME = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:?\d\d)?")


def check_page(body: Any, path: str, *, activity: bool = False) -> Any:
    """``body`` if it is a page of ``GET path``, else `ResponseError` naming what is wrong.

    A page is ``{"data": [object, ...], ...}`` (or a bare list of objects) whose ``_id`` are
    text; ``next`` is text or null and ``hasMore`` a flag. With ``activity``, each record's
    ``createdAt`` is an ISO time and its ``jobs`` (and their ``executionDetails``) are lists.
    A body that is no page (``{"message": "Service under maintenance"}``) is never read as an
    empty one.
    """

    def refuse(what: str) -> ResponseError:
        return ResponseError("GET", path, 200, f"the answer is not a page: {what}")

    items = body if isinstance(body, list) else body.get("data") if isinstance(body, Mapping) else None  # fmt: skip
    if not isinstance(items, list):
        shown = body.get("message") if isinstance(body, Mapping) else None
        found = f"the service said {str(shown)[:200]!r}" if shown else f"{_kind(body)} without a `data` list"  # fmt: skip
        raise refuse(found)
    if isinstance(body, Mapping):
        if not isinstance(body.get("next"), str | None):
            raise refuse(f"`next` is {_kind(body['next'])}, not text or null")
        if not isinstance(body.get("hasMore", False), bool):
            raise refuse(f"`hasMore` is {_kind(body['hasMore'])}, not true or false")
    for number, item in enumerate(items):  # plain type checks: 20,000 records in ~30 ms
        if type(item) is not dict:
            raise refuse(f"item {number} is {_kind(item)}, not an object")
        if type(item.get("_id", "")) is not str:
            raise refuse(f"item {number}'s `_id` is {_kind(item['_id'])}, not text")
        if activity:
            created = item.get("createdAt")
            if type(created) is not str or not _TIME.fullmatch(created):
                raise refuse(f"item {number}'s `createdAt` is {str(created)[:40]!r}, not a time")
            jobs = item.get("jobs")
            if jobs is not None and (
                type(jobs) is not list
                or not all(
                    type(job) is dict and type(job.get("executionDetails", _NO)) in _LISTS
                    for job in jobs
                )  # fmt: skip
            ):
                raise refuse(f"item {number}'s `jobs` is not a list of jobs with detail lists")
    return body


_NO: list = []
_LISTS = (list, type(None))


def _kind(value: Any) -> str:
    return "null" if value is None else f"a {type(value).__name__} ({str(value)[:40]!r})"


def _items(body: Any) -> list[Any]:
    """The items of a page: its ``data`` list (or the body itself when it is a bare list)."""
    if isinstance(body, list):
        return body
    if isinstance(body, Mapping) and isinstance(body.get("data"), list):
        return body["data"]
    return []


def iter_cursor_pages(
    fetch: Callable[[str | None], Any], *, limit: int | None = None
) -> Iterator[dict[str, Any]]:
    """Yield the items of a cursor-paged list, following ``next`` until it is null.

    Parameters
    ----------
    fetch : callable
        ``fetch(cursor)`` returns one page (``{data, next, ...}``); ``cursor`` is None for the
        first page, else the ``after`` cursor.
    limit : int, optional
        Stop after this many items.

    Raises
    ------
    PaginationError
        The service handed back a cursor it had already given (the list would never end).
    """
    seen: set[str] = set()
    ids: set[Any] = set()
    cursor: str | None = None
    count = 0
    while True:
        body = fetch(cursor)
        items = _items(body)
        keys = {_key(item) for item in items} - {None}
        if keys and keys <= ids:
            raise PaginationError(
                f"the service returned only items already read after the cursor {cursor!r}"
                " (the list would never end); stopped"
            )
        for item in items:
            if _key(item) in ids:
                continue
            yield item
            count += 1
            if limit is not None and count >= limit:
                return
        ids |= keys
        cursor = body.get("next") if isinstance(body, Mapping) else None
        if not cursor or not items:
            return
        if cursor in seen:
            raise PaginationError(f"the service returned the cursor {cursor!r} twice; stopped")
        seen.add(cursor)


class ActivityPager:
    """Reads a page-numbered feed concurrently, in page order, without gaps or duplicates.

    Pages in flight ramp up 1, 2, 4, ... to ``workers`` as pages arrive, so a short result is not
    over-fetched; reading stops at the first empty or short page (or ``hasMore: false``), since
    ``hasMore`` alone can be true on a last, full page. Pages are handed on in order as soon as
    they are contiguous and then dropped, so the caller can build its columns while the next
    pages are fetched. The caller pins the window (``before``) so that offsets stay put.

    Parameters
    ----------
    fetch : callable
        ``fetch(page, page_size)`` returns one page body (``{data, hasMore, page, pageSize}``).
    page_size : int
        Items per page.
    limit : int, optional
        Read at most this many items.
    workers : int
        Most pages fetched at once.
    progress : bool
        Show a progress bar (tqdm) once the read takes more than one page.
    gate : threading.Semaphore, optional
        Shared by readers that together may have only so many requests in flight; a page found
        past the end once its turn comes is not asked for.
    expected : float
        Items the caller expects (an estimate): the pages after the first start at half as many
        pages at once (up to ``workers``) instead of ramping up from one; none past those is
        asked for before the last of them comes back full, then a quarter of the estimate at a
        time (each after the last comes back full), so little is asked for past the end.
    window : (datetime, datetime), optional
        With ``expected``: the ``[after, before]`` the feed is read over. Each full page's oldest
        ``createdAt`` then tells how much of the window the pages so far cover, so the pages
        the rest should take are asked for at once, not a quarter of the estimate at a time.
    """

    def __init__(
        self,
        fetch: Callable[[int, int], Any],
        *,
        page_size: int = 50,
        limit: int | None = None,
        workers: int = 16,
        progress: bool = False,
        expected: float = 0,
        gate: threading.Semaphore | None = None,
        window: tuple[datetime, datetime] | None = None,
    ):
        self.fetch, self.limit, self.workers, self.progress = fetch, limit, workers, progress
        self.window = window
        self.gate = gate or contextlib.nullcontext()
        self.page_size = min(page_size, limit) if limit else page_size
        self.pages = math.ceil(limit / self.page_size) if limit else math.inf
        self.eager = min(workers, max(1, math.ceil(expected / self.page_size / 2)))
        self.horizon = self.eager if expected else math.inf
        #: Pages requested so far (past-the-end ones included).
        self.requested = 0
        self.end = self.pages

    def read(self) -> list[dict[str, Any]]:
        """Every item, de-duplicated by ``_id``, in feed order."""
        return list(self.records())

    def records(self) -> Iterator[dict[str, Any]]:
        """The items one by one, de-duplicated by ``_id``, in feed order, as pages arrive."""
        items = _unique(itertools.chain.from_iterable(self._ordered()))
        for count, item in enumerate(items, 1):
            yield item
            if self.limit and count >= self.limit:
                return

    def _ordered(self) -> Iterator[list[Any]]:
        """Each page's items, in page order. Without an estimate, the first page is read alone
        (a short result costs one request); with one, it is asked for with the next ones."""
        previous: list[Any] = []
        if not self.horizon < math.inf or self.pages == 1:
            first = self._page(0)
            if self._last(0, first) or self.pages == 1:
                yield first[0]
                return
            previous = first[0]
            del first
        bar = self._bar(len(previous))
        pool = ThreadPoolExecutor(max(1, self.workers), thread_name_prefix="toolkit-page")
        start = 1 if previous else 0
        feed = _Feed(self, pool, following=start)
        try:
            if previous:
                yield previous
            read = {_key(item) for item in previous}
            for number in itertools.count(start):
                page = feed.take(number)
                if page is None:
                    return
                items = page.result()[0]
                previous = self._check_repeat(previous, items, number, read)
                if bar is not None:
                    bar.update(len(items))
                yield items
        finally:
            feed.close()
            pool.shutdown(wait=True, cancel_futures=True)
            if bar is not None:
                bar.close()

    def _page(self, number: int) -> tuple[list[Any], Any]:
        with self.gate:
            if number >= self.end:  # the end was found while this page waited its turn
                return [], None
            self.requested += 1
            body = self.fetch(number, self.page_size)
        return _items(body), body

    def _pages_in_window(self, number: int, items: list[Any]) -> float:
        """How many pages the window holds, as page ``number`` (full) says: the share of the
        window that pages 0 to ``number`` cover, from its oldest ``createdAt`` (0: unknown)."""
        try:
            after, before = self.window
            oldest = parse_time(items[-1]["createdAt"], name="createdAt")
            covered = (before - oldest) / (before - after)
        except (TypeError, KeyError, ValueError, ZeroDivisionError, ParameterError):
            return 0
        return (number + 1) / covered if covered > 0 else 0

    def _last(self, number: int, page: tuple[list[Any], Any]) -> bool:
        items, body = page
        has_more = body.get("hasMore") if isinstance(body, Mapping) else None
        return len(items) < self.page_size or has_more is False or number + 1 >= self.pages

    @staticmethod
    def _check_repeat(
        previous: list[Any], items: list[Any], number: int, read: set[Any]
    ) -> list[Any]:
        """Page ``number`` (after checking it does not repeat the page before, nor hold only
        items of earlier pages: ``read``, their ids, grows with it)."""
        first = _key(items[0]) if items else None
        if (
            first is not None
            and previous
            and first == _key(previous[0])
            and list(map(_key, items)) == list(map(_key, previous))
        ):
            raise PaginationError(
                f"the service returned the same items for pages {number - 1} and {number}"
                " (is the `page` parameter ignored?); stopped"
            )
        keys = {_key(item) for item in items} - {None}
        if keys and keys <= read and len(items) == len(previous):
            raise PaginationError(
                f"page {number} of the service holds only items of earlier pages (pages that"
                " cycle?); stopped"
            )
        read |= keys
        return items

    def _bar(self, initial: int):
        if not self.progress:
            return None
        return progress_bar(total=self.limit, initial=initial, unit=" rows", desc="activity")


class _Feed:
    """The pages after the first of an `ActivityPager` read, asked for as soon as there is room:
    each page that comes back asks for the next ones in its own thread (the caller may be busy
    building columns), up to ``workers`` in flight, none past the end found or the horizon, and
    at most `AHEAD` pages past the one the caller waits for."""

    def __init__(self, pager: ActivityPager, pool: ThreadPoolExecutor, following: int):
        self.pager, self.pool = pager, pool
        self.changed = threading.Condition()
        self.arrived: dict[int, Future] = {}
        self.following, self.wanted, self.pending = following, following, 0
        self.in_flight = pager.eager
        self.horizon = pager.horizon  # no page past it is asked for before it comes back full
        self.step = math.ceil(pager.eager / 2)  # a quarter of the estimate
        self.closed = False
        pager.end = pager.pages  # pages at or past the end are not needed
        with self.changed:
            self._ask()

    def take(self, number: int) -> Future | None:
        """Page ``number`` once it has come back (a done future), or None past the end."""
        with self.changed:
            self.wanted = number
            self._ask()
            while number not in self.arrived and number < self.pager.end:
                self.changed.wait()
            return self.arrived.pop(number, None)

    def close(self) -> None:
        with self.changed:
            self.closed = True

    def _ask(self) -> None:
        """Submit the pages there is room for (called with the lock held)."""
        pager = self.pager
        ahead = self.wanted + AHEAD
        while (
            not self.closed
            and self.following < min(pager.end, self.horizon + 1, ahead)
            and self.pending < self.in_flight
        ):
            number, self.following = self.following, self.following + 1
            self.pending += 1
            future = self.pool.submit(pager._page, number)
            future.add_done_callback(functools.partial(self._arrive, number))  # may run now

    def _arrive(self, number: int, future: Future) -> None:
        with self.changed:
            self.pending -= 1
            pager = self.pager
            if number < pager.end and not future.cancelled():
                self.arrived[number] = future
                if future.exception() is None:
                    self.in_flight = min(pager.workers, self.in_flight * 2)
                    if pager._last(number, future.result()):
                        pager.end = number + 1
                    else:
                        if number >= self.horizon:
                            self.horizon = number + self.step
                        if pager.window:
                            estimate = pager._pages_in_window(number, future.result()[0])
                            self.horizon = max(self.horizon, min(math.ceil(estimate), 10**6))
            self._ask()
            self.changed.notify_all()


_gc_lock = threading.Lock()
_gc_pauses = [0, False]  # reads under way, whether the collector was enabled before the first


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the garbage collector while the block runs (in any thread; nested pauses count).

    For a read consumed whole: decoded pages hold no reference cycles, and the collector's passes
    over the records read so far made decoding several times slower.
    """
    with _gc_lock:
        if _gc_pauses[0] == 0:
            _gc_pauses[1] = gc.isenabled()
            gc.disable()
        _gc_pauses[0] += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_pauses[0] -= 1
            if _gc_pauses[0] == 0 and _gc_pauses[1]:
                gc.enable()


def progress_bar(**options: Any):
    """A tqdm bar (a widget in a notebook); in a log that is not a terminal, redrawn at most every
    30 s rather than several times a second."""
    from tqdm.auto import tqdm

    in_notebook = any(cls.__module__ == "tqdm.notebook" for cls in tqdm.__mro__)
    if not in_notebook and not _is_terminal(sys.stderr):
        options.setdefault("mininterval", 30.0)
    return tqdm(**options)


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def time_slices(after: datetime, before: datetime, count: int) -> list[tuple[datetime, datetime]]:
    """``[after, before]`` cut into ``count`` equal slices, newest first.

    The feed's bounds are inclusive, so two neighbours share their edge instant: a record
    created exactly then comes in both reads (`read_sliced` drops the repeat by ``_id``).

    >>> time_slices(datetime(2026, 1, 1), datetime(2026, 1, 3), 2)[0]
    (datetime.datetime(2026, 1, 2, 0, 0), datetime.datetime(2026, 1, 3, 0, 0))
    """
    step = (before - after) / max(1, count)
    edges = [before - step * n for n in range(count)] + [after]
    return list(itertools.pairwise(reversed(edges)))[::-1]


def read_sliced(
    read: Callable[[datetime, datetime, int | None, float], Iterable[dict[str, Any]]],
    slices: Iterable[tuple[datetime, datetime]],
    *,
    concurrent: int = 4,
    most: int = 2000,
    first: int | None = None,
    progress: bool = False,
) -> Iterator[dict[str, Any]]:
    """The records of consecutive time slices (newest first), in feed order, de-duplicated by
    ``_id`` (neighbours share their edge instant); up to ``concurrent`` slices are read at once.

    ``read(start, end, most, expected)`` yields the newest ``most`` records of ``[start, end]``
    (all of them when ``most`` is None); ``expected`` is how many records the slice probably
    holds (0 when unknown), to start with that many requests in flight. Each given slice first
    reads its newest ``first`` records (default ``most``); when there were more, what is left,
    ``[start, oldest record read]``, is cut into new slices read next: as many as the density
    seen says (up to ``concurrent``, none expected to hold more than a quarter of ``most``). So
    no request pages past ``most`` records, however dense the window, and a small window costs
    one request. The first slice not yet read is streamed as its pages arrive; the next ones
    are read meanwhile.
    """
    # Each entry: [start, end, most, expected, future or None], in feed order.
    order = deque([start, end, first or most, 0, None] for start, end in slices)
    bar = progress_bar(unit=" rows", desc="activity") if progress else None
    pool = ThreadPoolExecutor(concurrent, thread_name_prefix="toolkit-slice")

    def rest(start: datetime, end: datetime, count: int, oldest: datetime) -> list[list[Any]]:
        if not start < oldest < end:  # one instant holds them all: read it whole
            return [[start, min(oldest, end), None, 0, None]]
        expected = count * ((oldest - start) / (end - oldest))
        pieces = min(max(concurrent, 2), max(1, math.ceil(expected / (most / 4))))
        edges = time_slices(start, oldest, pieces)
        return [[low, high, most, expected / pieces, None] for low, high in edges]

    def records() -> Iterator[dict[str, Any]]:
        while order:
            for entry in itertools.islice(order, 1, concurrent):
                if entry[4] is None:
                    entry[4] = pool.submit(lambda *args: list(read(*args)), *entry[:4])
            start, end, depth, expected, future = order.popleft()
            count, record = 0, None
            got = read(start, end, depth, expected) if future is None else future.result()
            for record in got:
                count += 1
                yield record
            if depth is not None and count >= depth:
                oldest = parse_time(record["createdAt"], name="createdAt")
                order.extendleft(reversed(rest(start, end, count, oldest)))
            if bar is not None:
                bar.update(count)

    try:
        yield from _unique(records())
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        if bar is not None:
            bar.close()


def split_query(
    params: Mapping[str, Any], names: Mapping[str, str] | None = None, max_length: int = MAX_QUERY
) -> list[dict[str, Any]]:
    """``params`` as queries that each fit in ``max_length`` characters once encoded.

    The longest list is split over several queries (the others repeated in each); their results
    are the union of the original's, to merge with `merge_newest_first`.

    Raises
    ------
    ParameterError
        The other parameters leave too little room (two long lists): ``names`` maps a query
        parameter to the caller's name for the message.
    """
    if _length(params) <= max_length:
        return [dict(params)]
    lists = [name for name, value in params.items() if isinstance(value, list)]
    longest = max(lists, key=lambda name: _length({name: params[name]}))
    rest = {name: value for name, value in params.items() if name != longest}
    room = max_length - _length(rest) - 40  # page and limit
    if room < max_length // 2:  # name the longest of the other parameters: it does not fit
        other = max(rest, key=lambda name: _length({name: rest[name]}))
        raise ParameterError(
            (names or {}).get(other, other),
            rest[other],
            f"filters that fit in {max_length:,} characters of URL once "
            "encoded, with at most one long list (it is split over several requests)"
        )  # fmt: skip
    queries, chunk, size = [], [], 0
    for item in params[longest]:
        length = _length({longest: item}) + 1
        if chunk and size + length > room:
            queries.append({**rest, longest: chunk})
            chunk, size = [], 0
        chunk.append(item)
        size += length
    return [*queries, {**rest, longest: chunk}]


def merge_newest_first(
    reads: Iterable[Iterable[dict[str, Any]]], limit: int | None = None
) -> Iterator[dict[str, Any]]:
    """Records of several newest-first reads as one newest-first read, de-duplicated by ``_id``."""
    merged = heapq.merge(*reads, key=lambda record: record.get("createdAt") or "", reverse=True)
    for count, record in enumerate(_unique(merged), 1):
        yield record
        if limit and count >= limit:
            return


def _unique(records: Iterable[Any]) -> Iterator[Any]:
    """``records`` without repeats of an ``_id``."""
    seen: set[Any] = set()
    for record in records:
        key = _key(record)
        if key is None or key not in seen:
            seen.add(key)
            yield record


def _length(params: Mapping[str, Any]) -> int:
    return len(urlencode(params, doseq=True))


def _key(item: Any) -> Any:
    return item.get("_id") if isinstance(item, Mapping) else None
