"""A function run in a forked child process, on the machine's other core, its result sent back.

For a program (a command), not a library call: forking a process that runs other threads (a
notebook's kernel) can leave the child waiting on a lock no thread will release. The report
command forks before its window's read starts, when its only other threads are idle (DuckDB's and
the BLAS pools, native; the HTTP deadline timer); the child opens its own DuckDB database
(`toolkit.engines`) and connections (a `Transport` drops its pooled ones in a forked child). The
child is a copy of the caller with everything imported, so it starts at once; it sends back the
pickled result of ``function(*args)``, or the exception it raised, and exits without running the
caller's exit handlers. Where there is no ``fork`` (`AVAILABLE` false), callers use a thread.

>>> previous = Forked(headline_of_a_read, start, end)
>>> ...  # meanwhile, something else in this process
>>> previous.result()  # the child's result, or its exception raised here
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import sys
from collections.abc import Callable
from typing import Any

from toolkit.errors import ToolkitError

__all__ = ["AVAILABLE", "Forked"]

#: Whether `Forked` may be used: Linux (macOS's system libraries are not safe to use in a forked
#: child, Windows has no fork).
AVAILABLE = sys.platform.startswith("linux")


class Forked:
    """``function(*args)`` running in a forked child; `result` waits for it, `cancel` kills it."""

    def __init__(self, function: Callable[..., Any], *args: Any):
        reader, writer = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            os.close(reader)
            _run_and_exit(writer, function, args)
        os.close(writer)
        self._pid: int | None = pid
        self._reader: int | None = reader

    def result(self) -> Any:
        """The child's result; its exception, raised here (a `ToolkitError` naming it if it
        cannot be sent whole)."""
        try:
            with open(self._reader, "rb", closefd=False) as pipe:
                sent = pipe.read()
            code = os.waitstatus_to_exitcode(self._wait())
        finally:
            self.cancel()  # closes the pipe; kills the child if this wait was interrupted
        if not sent:
            how = f"killed by signal {-code}" if code < 0 else f"exit code {code}"
            raise ToolkitError(f"the worker process ended without an answer ({how})")
        ok, value = pickle.loads(sent)
        if ok:
            return value
        raise _rebuilt(*value)

    def cancel(self) -> None:
        """Kill the child (if still running) and wait for it."""
        if self._pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._pid, signal.SIGKILL)
            self._wait()
        if self._reader is not None:
            os.close(self._reader)
            self._reader = None

    def _wait(self) -> int:
        pid, self._pid = self._pid, None
        return os.waitpid(pid, 0)[1]


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
