"""``python -m toolkit incidents``: print the incidents of a window (a table, or JSON)."""

from __future__ import annotations

import argparse
import json

from toolkit import _cli

DESCRIPTION = f"""Find the incidents of the service's activity in a window and print them.
How incidents are decided: `help(toolkit.incidents)`.

{_cli.SERVICE}"""

_SHOWN = ["kind", "channel", "provider_id", "error_code", "domain", "started_at", "ended_at",
          "ongoing", "notifications", "subscribers"]  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    """Run the command; 0 on success, 2 for bad arguments or settings, 1 if the service failed."""
    parser = _cli.parser("python -m toolkit incidents", DESCRIPTION)
    _cli.add_window(parser)
    parser.add_argument("--json", action="store_true", help="print JSON (one object per incident)")
    _cli.add_store(parser, "find them in")
    _cli.add_service(parser)
    args = _cli.parse(parser, argv)
    return args if isinstance(args, int) else _cli.run(lambda: _incidents(args))


def _incidents(args: argparse.Namespace) -> int:
    from toolkit.incidents import find_incidents

    if args.store:  # counted by the store's engine; its weeks before the window: the baseline
        from toolkit.store import open_store

        store = open_store(args.store, engine=args.engine)
        incidents = find_incidents(store, after=args.since, before=args.until, baseline=store)
    else:
        from toolkit.read import read_activity

        client = _cli.connect(args)
        incidents = find_incidents(
            read_activity(client, after=args.since, before=args.until, progress=False)
        )
    print_incidents(incidents, as_json=args.json)
    return 0


def print_incidents(incidents, *, as_json: bool = False) -> None:
    """`find_incidents`'s frame as the command prints it: JSON (one object per incident), or a
    table and a sentence each, then what was set aside as a load (``attrs["set_aside"]``)."""
    if as_json:
        print(json.dumps(json.loads(incidents.to_json(orient="records", date_format="iso")),
                         indent=2))  # fmt: skip
        return
    if incidents.empty:
        print(f"no incidents: {incidents.attrs['reason']}")
    else:
        with_times = incidents.assign(
            started_at=incidents["started_at"].dt.strftime("%Y-%m-%d %H:%M"),
            ended_at=incidents["ended_at"].dt.strftime("%Y-%m-%d %H:%M"),
        )
        print(with_times[_SHOWN].to_string(index=False))
        print()
        for sentence in incidents["summary"]:
            print(f"- {sentence}")
    if incidents.attrs.get("set_aside"):
        print("\nread as a load, not an incident:")
        for sentence in incidents.attrs["set_aside"]:
            print(f"- {sentence}")
