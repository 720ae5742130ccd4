"""What the commands that read the service share: their service and window options, how they
connect, and how errors become one line on stderr and an exit code."""

from __future__ import annotations

import argparse
import importlib.util
import sys
import warnings
from collections.abc import Callable

from toolkit.config import Settings
from toolkit.errors import ParameterError, RetentionError, ServiceError, ToolkitError
from toolkit.timeutil import NaiveTimeWarning, parse_time, to_iso

#: How a command finds its service (the end of every such command's description).
SERVICE = """The service is the one given by --base-url/--api-key, else by SVC_BASE_URL/SVC_API_KEY, else a
local sandbox started for the run. Prefer the variable to --api-key: command lines are visible to
other users of the machine. --environment picks an environment of the local sandbox; with a
configured service, the API key decides the environment."""


def parser(prog: str, description: str) -> argparse.ArgumentParser:
    """A command's parser, its description printed as written."""
    return argparse.ArgumentParser(
        prog=prog, description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )


def add_window(
    parser: argparse.ArgumentParser,
    until: bool = True,
    since: str | None = "7d",
    default: str = "7d",
) -> None:
    """``--since`` (default ``since``, described as ``default``) and, if ``until``,
    ``--until``."""
    parser.add_argument("--since", default=since, type=_time("--since"), help=f"start: a duration before now (7d, 24h) or an ISO time (default {default})")  # fmt: skip
    if until:
        parser.add_argument("--until", type=_time("--until"), help="end: a duration before now or an ISO time (default now)")  # fmt: skip


def _time(flag: str) -> Callable[[str], str]:
    """An argparse ``type`` checking a window's bound as the toolkit reads it, so that a bad
    one is named by its flag before anything starts; a time without an offset is noted once."""

    def check(value: str) -> str:
        with warnings.catch_warnings(record=True) as noted:
            warnings.simplefilter("always", NaiveTimeWarning)
            try:
                parse_time(value, name=flag)
            except ToolkitError as error:
                raise argparse.ArgumentTypeError(str(error).removeprefix(f"{flag}=")) from None
        for note in noted:
            print(f"note: {note.message}", file=sys.stderr)
        return value

    return check


def add_store(parser: argparse.ArgumentParser, doing: str) -> None:
    """``--store PATH`` and ``--engine`` (what counts a store)."""
    parser.add_argument("--store", metavar="PATH", help=f"{doing} this store (python -m toolkit sync) instead of the service; --since/--until count back from its watermark")  # fmt: skip
    parser.add_argument("--engine", choices=("duckdb", "spark"), default="duckdb", help="what counts the store: duckdb (embedded, the default) or spark (SparkSession.builder.getOrCreate(); needs the [spark] extra and Java 17)")  # fmt: skip


def add_service(parser: argparse.ArgumentParser) -> None:
    """``--base-url``, ``--api-key`` and ``--environment``."""
    parser.add_argument("--base-url", help="the service (default SVC_BASE_URL, else a local sandbox)")  # fmt: skip
    parser.add_argument("--api-key", help="the API key (default SVC_API_KEY)")
    parser.add_argument("--environment", help="with the local sandbox only: Organization/Environment to read")  # fmt: skip


def parse(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace | int:
    """The parsed arguments, or the exit code when argparse has printed usage or an error."""
    try:
        return parser.parse_args(sys.argv[1:] if argv is None else argv)
    except SystemExit as exit:
        return int(exit.code or 0)


def start_sandbox(argv: list[str]) -> None:
    """Before a command that reads the service imports what it needs: when its arguments
    (``argv``) and the environment configure no service (nor ``--store``, nor ``--help``), start
    the local sandbox now, in a child process (`toolkit.sandbox.process`), for `connect` to
    use. It starts while the command imports, and serves on the other core instead of under
    this process's GIL. If in doubt, nothing is started: `connect` then starts the sandbox in
    this process, or says what is wrong."""
    try:
        args = _early(argv)
        if args.help or args.store or Settings.resolve(args.base_url, args.api_key).configured:
            return
        for value in (args.since, args.until):  # a bad one: the command says so, nothing starts
            if value is not None:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", NaiveTimeWarning)
                    parse_time(value)
    except (SystemExit, ToolkitError):
        return
    if not all(importlib.util.find_spec(name) for name in ("fastapi", "uvicorn", "pydantic")):
        return  # `connect` says the sandbox extra is missing
    from toolkit.sandbox.process import SandboxProcess

    sandbox = SandboxProcess()  # before the client's imports (0.09 s): the reads wait for it
    from toolkit.client import adopt_local_sandbox

    adopt_local_sandbox(sandbox)


def _early(argv: list[str]) -> argparse.Namespace:
    """The options that decide what a command reads, parsed before the command is imported."""
    early = argparse.ArgumentParser(add_help=False)
    for option in ("--base-url", "--api-key", "--store", "--since", "--until"):
        early.add_argument(option)
    early.add_argument("-h", "--help", action="store_true")
    return early.parse_known_args(argv)[0]


def connect(args: argparse.Namespace):
    """The client the options of `add_service` name; ``--environment`` is refused with a
    configured service (it would only relabel what the API key reads)."""
    from toolkit.client import connect

    if args.environment and configured(args):
        raise ToolkitError(
            f"--environment {args.environment!r} only selects an environment of the local "
            "sandbox; with a configured service (SVC_BASE_URL/SVC_API_KEY or --base-url) "
            "the API key decides the environment: leave --environment out"
        )
    return connect(args.base_url, args.api_key, environment=args.environment)


def configured(args: argparse.Namespace) -> bool:
    """Whether the options of `add_service` or the environment name a service (else `connect`
    gives the local sandbox)."""
    return Settings.resolve(args.base_url, args.api_key).configured


#: The flags of the window's bounds, by the names the functions behind the commands give them.
_WINDOW_FLAGS = {"after": "--since", "since": "--since", "before": "--until", "until": "--until"}


def run(action: Callable[[], int]) -> int:
    """``action()``, with the toolkit's errors printed as one line: 1 when the service failed,
    2 for bad arguments or settings (a window's bound named by its flag, ``--since``)."""
    try:
        return action()
    except RetentionError as error:
        earliest = f" of {to_iso(error.earliest)} or later" if error.earliest else ""
        where, why = (
            ("the plan's retention", f"{error.method} {error.path} answered {error.status}")
            if error.status is not None
            else ("the store's window", error.message)  # a store: no service was asked
        )
        print(
            f"error: the window starts before {where}: use a --since{earliest} ({why})",
            file=sys.stderr,
        )
        return 2
    except ServiceError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except ParameterError as error:
        flag = _WINDOW_FLAGS.get(error.name)
        text = str(error) if flag is None else f"{flag} {str(error).split('=', 1)[1]}"
        print(f"error: {text}", file=sys.stderr)
        return 2
    except (ToolkitError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
