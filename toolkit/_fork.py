"""A function run in a forked child process, on the machine's other core, its result sent back.

For a program (a command), not a library call: forking a process that runs other threads (a
notebook's kernel) can leave the child waiting on a lock no thread will release. The report
command forks before its window's read starts, when its only other threads are idle (DuckDB's and
the BLAS pools, native; the HTTP deadline timer); the child opens its own DuckDB database
(`toolkit.engines`) and connections (a `Transport` drops its pooled ones in a forked child). The
child is a copy of the caller with everything imported, so it starts at once; it sends back the
pickled result of ``function(*args)``, or the exception it raised, and exits without running the
caller's exit handlers. Where there is no ``fork`` (`AVAILABLE` false), callers use a thread.

The work is never lost and the wait is bounded: a child that sends no answer within `result`'s
``timeout`` (a lock held at the fork by another thread, which the child waits for forever) or
that ends without one (a signal, ``os._exit``) is killed, and ``function(*args)`` runs in this
process instead, the same work as without a child, with one warning logged. Python 3.12's
warning on forking a process that runs other threads is not shown: forking one is this
module's purpose, and the bounded wait is its answer to that warning's deadlock.

>>> previous = Forked(headline_of_a_read, start, end)
>>> ...  # meanwhile, something else in this process
>>> previous.result(timeout=30)  # the child's result, or its exception raised here
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import select
import signal
import sys
import threading
import time
import warnings
from collections.abc import Callable
from typing import Any

from toolkit.errors import ToolkitError

__all__ = ["AVAILABLE", "Forked"]

log = logging.getLogger("toolkit.fork")

#: The start of the warning `os.fork` gives from Python 3.12 on when other threads run.
_MULTITHREADED = r"This process \(pid=\d+\) is multi-threaded"

#: Whether `Forked` may be used: Linux (macOS's system libraries are not safe to use in a forked
#: child, Windows has no fork).
AVAILABLE = sys.platform.startswith("linux")


class Forked:
    """``function(*args)`` running in a forked child; `result` waits for it, `cancel` kills it.

    ``what`` names the work in the warning logged if it has to run in this process instead
    (``function``'s name by default)."""

    def __init__(self, function: Callable[..., Any], *args: Any, what: str | None = None):
        self._work = function, args, what or getattr(function, "__qualname__", repr(function))
        reader, writer = os.pipe()
        with warnings.catch_warnings():  # Python 3.12+'s, when other threads run: see above
            warnings.filterwarnings("ignore", _MULTITHREADED, DeprecationWarning)
            pid = os.fork()
        if pid == 0:  # the child: never returns
            os.close(reader)
            _renew_progress_lock()
            _run_and_exit(writer, function, args)
        os.close(writer)
        self._pid: int | None = pid
        self._reader: int | None = reader

    def result(self, timeout: float | None = None) -> Any:
        """The child's result; its exception, raised here.

        Parameters
        ----------
        timeout : float, optional
            Seconds to wait for the child's answer from this call (None: as long as it takes).
            A child that has not answered by then, or that ends without an answer, is killed and
            the work runs in this process instead (one warning logged).
        """
        pid = self._pid
        try:
            sent = self._receive(timeout)
            code = None if sent is None else os.waitstatus_to_exitcode(self._wait())
        finally:
            self.cancel()  # closes the pipe; kills the child if it has not answered
        if code == 0 and sent:
            ok, value = pickle.loads(sent)
            if ok:
                return value
            raise _rebuilt(*value)
        function, args, what = self._work
        if code is None:
            how = f"gave no answer within {timeout:g} s (killed)"
        else:
            how = f"ended without an answer ({f'killed by signal {-code}' if code < 0 else f'exit code {code}'})"  # fmt: skip
        log.warning("%s: the forked process (pid %d) %s; running it in this process instead",
                    what, pid, how)  # fmt: skip
        return function(*args)

    def cancel(self) -> None:
        """Kill the child (if still running) and wait for it."""
        if self._pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._pid, signal.SIGKILL)
            self._wait()
        if self._reader is not None:
            os.close(self._reader)
            self._reader = None

    def _receive(self, timeout: float | None) -> bytes | None:
        """All the child sent until it closed the pipe; None if it did not within ``timeout``."""
        deadline = None if timeout is None else time.monotonic() + timeout
        poller = select.poll()
        poller.register(self._reader, select.POLLIN)
        chunks = []
        while True:
            left = None if deadline is None else max(0.0, deadline - time.monotonic()) * 1000
            if not poller.poll(left):  # milliseconds
                return None
            chunk = os.read(self._reader, 1 << 20)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)

    def _wait(self) -> int:
        pid, self._pid = self._pid, None
        return os.waitpid(pid, 0)[1]


def _renew_progress_lock() -> None:
    """In the child, a lock of its own for tqdm's bars. The lock it inherits is a semaphore
    shared with the parent and a thread lock that tqdm's monitor thread takes every few
    seconds: inherited while held, the child would wait for it forever, holding the semaphore,
    and the parent's next bar would wait for the child (killing it does not release it)."""
    std = sys.modules.get("tqdm.std")
    if std is None:
        return
    lock, classes = threading.RLock(), [std.tqdm]
    while classes:  # tqdm and the subclasses that made a lock of their own (tqdm.auto's)
        cls = classes.pop()
        if cls is std.tqdm or "_lock" in vars(cls):
            cls.set_lock(lock)
        classes += cls.__subclasses__()


def _run_and_exit(writer: int, function: Callable[..., Any], args: tuple[Any, ...]) -> None:
    code = 1
    try:
        try:
            answer = (True, function(*args))
        except BaseException as error:  # noqa: BLE001 - sent to the parent, raised there
            answer = (False, _sendable(error))
        sent = pickle.dumps(answer)
        with open(writer, "wb", closefd=True) as pipe:
            pipe.write(sent)
        code = 0
    finally:
        os._exit(code)  # no exit handlers: they are the parent's (its sandbox, its files)


def _sendable(error: BaseException) -> tuple[type, tuple[Any, ...], dict[str, Any]]:
    """``error`` as its class, arguments and attributes (its class's ``__init__`` need not take
    its ``args`` back); a `ToolkitError` naming it if they cannot be pickled."""
    state = (type(error), error.args, dict(vars(error)))
    try:
        pickle.dumps(state)
    except Exception:  # noqa: BLE001 - anything that does not pickle
        return ToolkitError, (f"{type(error).__name__}: {error}",), {}
    return state


def _rebuilt(kind: type, args: tuple[Any, ...], attributes: dict[str, Any]) -> BaseException:
    """The exception `_sendable` described: same class, message and attributes."""
    error = kind.__new__(kind)
    error.args = args
    vars(error).update(attributes)
    return error
