"""``python -m toolkit sync --store PATH``: bring a store up to the service's now."""

from __future__ import annotations

import argparse
import sys

from toolkit.errors import ServiceError, ToolkitError

DESCRIPTION = """Sync the service's activity into a store (Parquet files, see README "History and
scale"): the first run reads the window, later ones only what is new or may still change.

The service is the one given by SVC_BASE_URL/SVC_API_KEY, else a local sandbox started for the
run."""


def main(argv: list[str] | None = None) -> int:
    """Run the command; 0 on success, 2 for bad arguments or a store in the way, 1 if the service
    failed (the store stays as the last complete sync left it; run again to resume)."""
    parser = argparse.ArgumentParser(
        prog="python -m toolkit sync",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--store", required=True, metavar="PATH", help="the store's directory")
    parser.add_argument("--since", default="7d", help="the window's start: a duration before now (7d, 24h) or an ISO time (default 7d)")  # fmt: skip
    parser.add_argument("--lag", default="1h", help="how far before the last sync's end to read again, for notifications still changing (default 1h)")  # fmt: skip
    parser.add_argument("--allow-source-change", action="store_true", help="accept another service or environment than the store's")  # fmt: skip
    parser.add_argument("--environment", help="with the sandbox: Organization/Environment to sync")
    try:
        args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    except SystemExit as exit:  # argparse has printed the usage and the error
        return int(exit.code or 0)

    from toolkit.client import connect
    from toolkit.store import sync

    try:
        client = connect(environment=args.environment)
        print(f"syncing {client!r} into {args.store}", file=sys.stderr)
        result = sync(
            client,
            args.store,
            since=args.since,
            lag=args.lag,
            allow_source_change=args.allow_source_change,
        )
    except ServiceError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except (ToolkitError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(result)
    return 0
