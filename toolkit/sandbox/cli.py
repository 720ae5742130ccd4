"""``python -m toolkit sandbox``: serve the sandbox in the foreground until Ctrl-C or SIGTERM."""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import signal
import sys
import threading
from collections.abc import Callable

from toolkit.sandbox.clock import iso, parse_instant
from toolkit.sandbox.seed.incidents import specs_of


def _non_negative(kind: type) -> Callable[[str], float]:
    def parse(text: str) -> float | int:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid {kind.__name__} value: {text!r}") from None
        if not math.isfinite(value) or value < 0:
            raise argparse.ArgumentTypeError(f"must be a number >= 0, got {text!r}")
        return value

    return parse


def _port(text: str) -> int:
    value = _non_negative(int)(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"not a TCP port: {text!r}")
    return value


def _fraction(text: str) -> float:
    value = _non_negative(float)(text)
    if value > 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {text!r}")
    return value


def _instant(text: str) -> str:
    try:
        return iso(parse_instant(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO 8601 instant: {text!r}") from None


def _incidents(text: str) -> str | list:
    if text in ("default", "none"):
        return text
    try:
        specs = json.loads(text)
    except ValueError:
        specs = None
    if not isinstance(specs, list):
        raise argparse.ArgumentTypeError(f"not 'default', 'none' or a JSON list of specs: {text!r}")
    try:
        specs_of(specs)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{exc}: {text!r}") from None
    return specs


def _speed(text: str) -> float:
    value = _non_negative(float)(text)
    if value == 0:
        raise argparse.ArgumentTypeError(f"must be a number > 0, got {text!r}")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m toolkit sandbox",
        description="Serve the local sandbox of the notification service and print its API keys.",
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="interface to bind (default: %(default)s)"
    )
    parser.add_argument(
        "--port",
        type=_port,
        default=8642,
        help="TCP port, 0 for any free one (default: %(default)s)",
    )
    parser.add_argument(
        "--seed", type=_non_negative(int), default=7, help="seed of the data (default: %(default)s)"
    )
    parser.add_argument(
        "--db",
        metavar="PATH",
        help="SQLite file: seeded when new, reused when it exists (default: in memory)",
    )
    parser.add_argument(
        "--now",
        type=_instant,
        metavar="ISO",
        help="instant the clock starts at (default: the real now)",
    )
    parser.add_argument(
        "--notifications",
        type=_non_negative(int),
        default=20_000,
        metavar="N",
        help="seeded notifications (default: %(default)s)",
    )
    parser.add_argument(
        "--subscribers",
        type=_non_negative(int),
        default=2_000,
        metavar="N",
        help="seeded subscribers (default: %(default)s)",
    )
    parser.add_argument(
        "--traffic-rate",
        type=_non_negative(float),
        default=0.0,
        metavar="R",
        help="live notifications per sandbox second (default: none)",
    )
    parser.add_argument(
        "--incidents",
        type=_incidents,
        default="default",
        metavar="SPECS",
        help="incidents planted in the data: default, none, or a JSON list of specs "
        '(e.g. \'[{"kind": "provider_outage", "provider_id": "sns", "start": "30h"}]\')',
    )
    parser.add_argument(
        "--clock-speed",
        type=_speed,
        default=1.0,
        metavar="X",
        help="the clock runs X times faster than real time (default: %(default)s)",
    )
    parser.add_argument(
        "--latency-ms",
        type=_non_negative(float),
        default=0.0,
        metavar="MS",
        help="added latency per request",
    )
    parser.add_argument(
        "--jitter-ms",
        type=_non_negative(float),
        default=0.0,
        metavar="MS",
        help="± random spread of the latency",
    )
    parser.add_argument(
        "--error-rate",
        type=_fraction,
        default=0.0,
        metavar="P",
        help="fraction of requests answered 503",
    )
    parser.add_argument(
        "--rate-limit", action="store_true", help="enforce the service's rate limits"
    )
    return parser


def main(argv: list[str]) -> int:
    """Run the sandbox until Ctrl-C or SIGTERM; return the exit status."""
    args = _parser().parse_args(argv)
    from toolkit.sandbox.server import start

    for signum in (signal.SIGINT, signal.SIGTERM):  # both stop the sandbox like Ctrl-C
        signal.signal(signum, signal.default_int_handler)
    try:
        sandbox = start(
            seed=args.seed,
            port=args.port,
            host=args.host,
            db=args.db,
            now=args.now,
            notifications=args.notifications,
            subscribers=args.subscribers,
            traffic_rate=args.traffic_rate,
            rate_limit=args.rate_limit,
            incidents=args.incidents,
            clock_speed=args.clock_speed,
        )
    except KeyboardInterrupt:
        return 130
    except ValueError as exc:
        print(f"python -m toolkit sandbox: error: {exc}", file=sys.stderr)
        return 2
    except RuntimeError as exc:
        print(
            f"python -m toolkit sandbox: error: {exc}; is the port in use? (--port 0 picks a free one)",
            file=sys.stderr,
        )
        return 1
    with sandbox:
        if args.latency_ms or args.jitter_ms or args.error_rate:
            sandbox.faults.set(
                latency=args.latency_ms / 1000,
                jitter=args.jitter_ms / 1000,
                error_rate=args.error_rate,
            )
        width = max(map(len, sandbox.api_keys))
        print(f"Sandbox serving at {sandbox.url}")
        print('API keys (send as "Authorization: ApiKey <key>"):')
        for name, key in sandbox.api_keys.items():
            default = "  (default)" if key == sandbox.api_key else ""
            print(f"  {name:<{width}}  {key}{default}")
        print(f"export SVC_BASE_URL={sandbox.url} SVC_API_KEY={sandbox.api_key}")
        print("Press Ctrl-C to stop.", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()
    print("Sandbox stopped.", flush=True)
    return 0
