"""``python -m toolkit report``: write the delivery report and print its headline figures."""

from __future__ import annotations

import argparse
import sys

from toolkit.errors import RetentionError, ServiceError, ToolkitError
from toolkit.timeutil import to_iso

DESCRIPTION = """Write a self-contained HTML delivery report of the service's activity.

The service is the one given by --base-url/--api-key, else by SVC_BASE_URL/SVC_API_KEY, else a
local sandbox started for the run. Prefer the variable to --api-key: command lines are visible to
other users of the machine. --environment picks an environment of the local sandbox; with a
configured service, the API key decides the environment."""


def main(argv: list[str] | None = None) -> int:
    """Run the command; 0 on success, 2 for bad arguments or settings, 1 if the service failed."""
    parser = _parser()
    try:
        args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    except SystemExit as exit:  # argparse has printed the usage and the error
        return int(exit.code or 0)

    from toolkit.client import connect
    from toolkit.config import Settings
    from toolkit.report import check_out, delivery_report, headline_lines

    try:
        check_out(args.out)
        if args.environment and Settings.resolve(args.base_url, args.api_key).configured:
            raise ToolkitError(
                f"--environment {args.environment!r} only selects an environment of the local "
                "sandbox; with a configured service (SVC_BASE_URL/SVC_API_KEY or --base-url) "
                "the API key decides the environment: leave --environment out"
            )
        if args.store:
            from toolkit.store import open_store

            report = open_store(args.store).report(
                args.since, args.until, out=args.out, top=args.top,
                **{k: v for k, v in (("channels", args.channels), ("severity", args.severity)) if v},
            )  # fmt: skip
        else:
            client = connect(args.base_url, args.api_key, environment=args.environment)
            report = delivery_report(
                client,
                since=args.since,
                until=args.until,
                out=args.out,
                channels=args.channels,
                severity=args.severity,
                top=args.top,
            )
    except RetentionError as error:
        earliest = f" of {to_iso(error.earliest)} or later" if error.earliest else ""
        print(
            f"error: the window starts before the plan's retention: use a --since{earliest} "
            f"({error.method} {error.path} answered {error.status})",
            file=sys.stderr,
        )
        return 2
    except ServiceError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except (ToolkitError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    source = report.provenance
    print(f"wrote {report.path.resolve()}")
    print(
        f"service: {source['base_url']} ({source['environment']}), "
        f"{to_iso(source['after'])} to {to_iso(source['before'])}"
    )
    findings = report.findings
    print(f"findings: {len(findings)} incident(s)" if len(findings) else
          f"findings: none ({findings.attrs.get('reason', 'no incidents found')})")  # fmt: skip
    for summary in findings["summary"]:
        print(f"  - {summary}")
    for line in headline_lines(report.headline, report.previous):
        print(line)
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m toolkit report",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--since", default="7d", help="start: a duration before now (7d, 24h) or an ISO time (default 7d)")  # fmt: skip
    parser.add_argument("--until", help="end: a duration before now or an ISO time (default now)")
    parser.add_argument("--out", default="delivery-report.html", help="the HTML file to write")
    parser.add_argument("--channels", type=_list, help="only these channels, comma-separated (email,sms)")  # fmt: skip
    parser.add_argument("--severity", type=_list, help="only these severities, comma-separated")
    parser.add_argument("--top", type=_positive, default=10, help="rows of the top-failures table")
    parser.add_argument("--base-url", help="the service (default SVC_BASE_URL, else a local sandbox)")  # fmt: skip
    parser.add_argument("--api-key", help="the API key (default SVC_API_KEY)")
    parser.add_argument("--environment", help="with the local sandbox only: Organization/Environment to report on")  # fmt: skip
    parser.add_argument("--store", metavar="PATH", help="report from this store (python -m toolkit sync) instead of the service; --since/--until count back from its watermark")  # fmt: skip
    return parser


def _list(text: str) -> list[str]:
    items = [item.strip() for item in text.split(",") if item.strip()]
    if not items:
        raise argparse.ArgumentTypeError("expected a comma-separated list")
    return items


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text!r}")
    return value
