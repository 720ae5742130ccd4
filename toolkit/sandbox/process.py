"""The sandbox served by a child process (``python -m toolkit sandbox``).

For a caller that reads a lot from it: the server's work then runs on another core instead of
under the caller's GIL, and the child starts while the caller imports what it needs. The child
stops when told to, and by itself once its parent is gone (its standard input closes).

>>> with SandboxProcess("--now", "2026-11-01T12:00:00Z") as sandbox:
...     client = toolkit.connect(sandbox=sandbox)
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import urllib.request
from datetime import datetime

from toolkit.sandbox.clock import Clock, parse_instant

__all__ = ["SandboxProcess"]

#: Seconds `stop` waits for the child to exit before killing it.
STOP_TIMEOUT = 30.0


class SandboxProcess:
    """A sandbox in a child process, started at once with the options of ``python -m toolkit
    sandbox`` (``--port 0`` unless given); `url`, `api_key`, `api_keys` and `now` wait until it
    serves. The API keys are secrets: never in the repr."""

    def __init__(self, *options: str):
        if "--port" not in options:
            options = ("--port", "0", *options)
        command = [sys.executable, "-m", "toolkit.sandbox.process", *options]
        self._process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        self._lock = threading.Lock()
        self._keys: dict[str, str] | None = None
        self._url = self._default = ""
        self._clock: Clock | None = None

    @property
    def url(self) -> str:
        """Base address, e.g. ``"http://127.0.0.1:40123"``."""
        self._ready()
        return self._url

    @property
    def api_keys(self) -> dict[str, str]:
        """Key of every environment by ``"Organization/Environment"`` name."""
        return dict(self._ready())

    @property
    def api_key(self) -> str:
        """Key of the default environment."""
        return self._ready()[self._default]

    def now(self) -> datetime:
        """The child's clock (read once from its state, then advanced here)."""
        self._ready()
        return self._clock.now()

    def stop(self) -> None:
        """Stop the child (calling it again does nothing)."""
        if self._process.poll() is None:
            self._process.stdin.close()  # the child stops at the end of its input
            try:
                self._process.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._process.stdout.close()

    def __enter__(self) -> SandboxProcess:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"<SandboxProcess pid {self._process.pid} {self._url or 'starting'}>"

    def _ready(self) -> dict[str, str]:
        """The API keys, once the child serves (what it printed: the keys, then its address)."""
        with self._lock:
            if self._keys is None:
                keys = {}
                for line in self._process.stdout:
                    words = line.split()
                    if line.startswith("export "):
                        self._url = dict(word.split("=", 1) for word in words[1:])["SVC_BASE_URL"]
                        break
                    if line.startswith("  ") and len(words) >= 2:  # "  Org/Env  key  (default)"
                        keys[words[0]] = words[1]
                        if words[2:] == ["(default)"]:
                            self._default = words[0]
                else:
                    self.stop()
                    raise RuntimeError("the sandbox exited before printing its address")
                with urllib.request.urlopen(f"{self._url}/_sandbox/state", timeout=30) as answer:
                    state = json.load(answer)
                self._clock = Clock(parse_instant(state["now"]), state["clock_speed"])
                self._keys = keys
            return self._keys


def _main(argv: list[str]) -> int:
    """The child: ``python -m toolkit sandbox`` until its standard input ends (or a signal)."""
    from toolkit.sandbox.cli import main

    threading.Thread(target=_stop_at_end_of_input, daemon=True).start()
    return main(argv)


def _stop_at_end_of_input() -> None:
    sys.stdin.read()
    sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - the parent may have stopped reading
    os.kill(os.getpid(), signal.SIGTERM)


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
