"""``python -m toolkit incidents``: print the incidents of a window (a table, or JSON)."""

from __future__ import annotations

import argparse
import json
import sys

from toolkit.errors import ServiceError, ToolkitError

DESCRIPTION = """Find the incidents of the service's activity in a window and print them.

The service is the one given by --base-url/--api-key, else by SVC_BASE_URL/SVC_API_KEY, else a
local sandbox started for the run. Prefer the variable to --api-key: command lines are visible to
other users of the machine. How incidents are decided: `help(toolkit.incidents)`."""

_SHOWN = ["kind", "channel", "provider_id", "error_code", "domain", "started_at", "ended_at",
          "ongoing", "notifications", "subscribers"]  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    """Run the command; 0 on success, 2 for bad arguments or settings, 1 if the service failed."""
    parser = argparse.ArgumentParser(
        prog="python -m toolkit incidents",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--since", default="7d", help="start: a duration before now (7d, 24h) or an ISO time (default 7d)")  # fmt: skip
    parser.add_argument("--until", help="end: a duration before now or an ISO time (default now)")
    parser.add_argument("--json", action="store_true", help="print JSON (one object per incident)")
    parser.add_argument("--base-url", help="the service (default SVC_BASE_URL, else a local sandbox)")  # fmt: skip
    parser.add_argument("--api-key", help="the API key (default SVC_API_KEY)")
    parser.add_argument("--environment", help="with the sandbox: Organization/Environment to read")
    try:
        args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    except SystemExit as exit:  # argparse has printed the usage and the error
        return int(exit.code or 0)

    from toolkit.client import connect
    from toolkit.incidents import find_incidents
    from toolkit.read import read_activity

    try:
        client = connect(args.base_url, args.api_key, environment=args.environment)
        activity = read_activity(client, after=args.since, before=args.until, progress=False)
        incidents = find_incidents(activity)
    except ServiceError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except (ToolkitError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(json.loads(incidents.to_json(orient="records", date_format="iso")),
                         indent=2))  # fmt: skip
    elif incidents.empty:
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
    return 0
