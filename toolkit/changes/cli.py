"""``python -m toolkit what-changed``: the slices that explain a window against the one before."""

from __future__ import annotations

import argparse
import json

from toolkit import _cli

DESCRIPTION = f"""Explain what changed in the failure rate (or the volume) of a window against the
window of the same length just before it: one line per root cause. How causes are decided:
`help(toolkit.changes)`.

{_cli.SERVICE}"""


def main(argv: list[str] | None = None) -> int:
    """Run the command; 0 on success, 2 for bad arguments or settings, 1 if the service failed."""
    parser = _cli.parser("python -m toolkit what-changed", DESCRIPTION)
    _cli.add_window(parser)
    parser.add_argument("--measure", choices=["failure_rate", "volume"], default="failure_rate",
                        help="what to explain (default failure_rate)")  # fmt: skip
    parser.add_argument("--json", action="store_true", help="print JSON (one object per cause)")
    parser.add_argument("--store", metavar="PATH", help="read this store (python -m toolkit sync) instead of the service; --since/--until count back from its watermark")  # fmt: skip
    _cli.add_service(parser)
    args = _cli.parse(parser, argv)
    return args if isinstance(args, int) else _cli.run(lambda: _what_changed(args))


def _what_changed(args: argparse.Namespace) -> int:
    from toolkit.changes import what_changed
    from toolkit.timeutil import resolve_window

    if args.store:
        from toolkit.store import open_store

        data = open_store(args.store)
        now = data.watermark
    else:
        from toolkit.read import read_activity

        client = _cli.connect(args)
        now = client.now()
    start, end = resolve_window(args.since, args.until, now=now, after_name="since",
                                before_name="until")  # fmt: skip
    if not args.store:  # the window and its baseline
        data = read_activity(client, after=start - (end - start), before=end, progress=False)
    changes = what_changed(data, period=(start, end), measure=args.measure)
    if args.json:
        rows = json.loads(changes.drop(columns="cause").to_json(orient="records"))
        print(json.dumps([{"cause": c, **r} for c, r in zip(changes["cause"], rows, strict=True)],
                         indent=2))  # fmt: skip
    elif changes.empty:
        print(f"nothing stands out: {changes.attrs['reason']}")
    else:
        for sentence in changes["summary"]:
            print(f"- {sentence}")
    return 0
