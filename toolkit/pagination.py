"""The two pagers: cursors (``next``) for the v2 lists, page numbers for the activity feed."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any

from toolkit.errors import PaginationError

__all__ = ["ActivityPager", "iter_cursor_pages"]


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
    cursor: str | None = None
    count = 0
    while True:
        body = fetch(cursor)
        items = _items(body)
        for item in items:
            yield item
            count += 1
            if limit is not None and count >= limit:
                return
        cursor = body.get("next") if isinstance(body, Mapping) else None
        if not cursor or not items:
            return
        if cursor in seen:
            raise PaginationError(f"the service returned the cursor {cursor!r} twice; stopped")
        seen.add(cursor)


class ActivityPager:
    """Reads a page-numbered feed concurrently, in page order, without gaps or duplicates.

    Up to ``workers`` pages are in flight at once; reading stops at the first empty or short
    page (or ``hasMore: false``), since ``hasMore`` alone can be true on a last, full page.
    The caller pins the window (``before``) so that offsets stay put while pages are read.

    Parameters
    ----------
    fetch : callable
        ``fetch(page, page_size)`` returns one page body (``{data, hasMore, page, pageSize}``).
    page_size : int
        Items per page.
    limit : int, optional
        Read at most this many items.
    workers : int
        Pages fetched concurrently.
    progress : bool
        Show a progress bar (tqdm) once the read takes more than one page.
    """

    def __init__(
        self,
        fetch: Callable[[int, int], Any],
        *,
        page_size: int = 50,
        limit: int | None = None,
        workers: int = 16,
        progress: bool = False,
    ):
        self.fetch, self.limit, self.workers, self.progress = fetch, limit, workers, progress
        self.page_size = min(page_size, limit) if limit else page_size
        self.pages = math.ceil(limit / self.page_size) if limit else math.inf

    def read(self) -> list[dict[str, Any]]:
        """Fetch every page and return the items, de-duplicated by ``_id``, in feed order."""
        pages = {0: self._page(0)}
        if self._last(0, pages[0]) or self.pages == 1:
            return self._collect(pages, 1)
        bar = self._bar(len(pages[0][0]))
        end = self.pages  # pages at or past `end` are not needed
        pool = ThreadPoolExecutor(max(1, self.workers), thread_name_prefix="toolkit-page")
        pending: dict[Future, int] = {}
        following = 1
        try:
            while pending or following < end:
                while following < end and len(pending) < self.workers:
                    pending[pool.submit(self._page, following)] = following
                    following += 1
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    number = pending.pop(future)
                    if number >= end:
                        continue
                    pages[number] = future.result()
                    self._check_repeat(pages, number)
                    if self._last(number, pages[number]):
                        end = number + 1
                    if bar is not None:
                        bar.update(len(pages[number][0]))
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
            if bar is not None:
                bar.close()
        return self._collect(pages, end)

    def _page(self, number: int) -> tuple[list[Any], Any]:
        body = self.fetch(number, self.page_size)
        return _items(body), body

    def _last(self, number: int, page: tuple[list[Any], Any]) -> bool:
        items, body = page
        has_more = body.get("hasMore") if isinstance(body, Mapping) else None
        return len(items) < self.page_size or has_more is False or number + 1 >= self.pages

    def _check_repeat(self, pages: dict[int, tuple[list[Any], Any]], number: int) -> None:
        ids = [_key(item) for item in pages[number][0]]
        if not ids or None in ids:
            return
        for neighbour in (number - 1, number + 1):
            if neighbour in pages and [_key(i) for i in pages[neighbour][0]] == ids:
                first, second = sorted((number, neighbour))
                raise PaginationError(
                    f"the service returned the same items for pages {first} and {second}"
                    " (is the `page` parameter ignored?); stopped"
                )

    def _collect(self, pages: dict[int, tuple[list[Any], Any]], end: float) -> list[dict[str, Any]]:
        seen: set[Any] = set()
        out: list[dict[str, Any]] = []
        for number in sorted(n for n in pages if n < end):
            for item in pages[number][0]:
                key = _key(item)
                if key is not None and key in seen:
                    continue
                seen.add(key)
                out.append(item)
        return out[: self.limit] if self.limit else out

    def _bar(self, initial: int):
        if not self.progress:
            return None
        from tqdm.auto import tqdm

        return tqdm(total=self.limit, initial=initial, unit=" rows", desc="activity")


def _key(item: Any) -> Any:
    return item.get("_id") if isinstance(item, Mapping) else None
