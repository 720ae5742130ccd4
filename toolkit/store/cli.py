"""``python -m toolkit sync --store PATH``: bring a store up to the service's now."""

from __future__ import annotations

import argparse
import sys

from toolkit import _cli

DESCRIPTION = f"""Sync the service's activity into a store (Parquet files, see README "History and
scale"): the first run reads the window, later ones only what is new or may still change.

{_cli.SERVICE}"""


def main(argv: list[str] | None = None) -> int:
    """Run the command; 0 on success, 2 for bad arguments or a store in the way, 1 if the service
    failed (the store stays as the last complete sync left it; run again to resume)."""
    parser = _cli.parser("python -m toolkit sync", DESCRIPTION)
    parser.add_argument("--store", required=True, metavar="PATH", help="the store's directory")
    _cli.add_window(
        parser, until=False, since=None, default="7d for a new store, else the store's own start"
    )
    parser.add_argument("--lag", default="1h", help="how far before the last sync's end to read again, for notifications still changing (default 1h)")  # fmt: skip
    parser.add_argument("--allow-source-change", action="store_true", help="accept another service or environment than the store's")  # fmt: skip
    _cli.add_service(parser)
    args = _cli.parse(parser, argv)
    return args if isinstance(args, int) else _cli.run(lambda: _sync(args))


def _sync(args: argparse.Namespace) -> int:
    from toolkit.store import sync

    client = _cli.connect(args)
    print(f"syncing {client!r} into {args.store}", file=sys.stderr)
    result = sync(
        client,
        args.store,
        since=args.since,
        lag=args.lag,
        allow_source_change=args.allow_source_change,
    )
    print(result)
    return 0
