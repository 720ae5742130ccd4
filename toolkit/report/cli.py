"""``python -m toolkit report``: write the delivery report and print its headline figures."""

from __future__ import annotations

import argparse

from toolkit import _cli, _fork
from toolkit.timeutil import to_iso

DESCRIPTION = f"""Write a self-contained HTML delivery report of the service's activity.

{_cli.SERVICE}"""


def main(argv: list[str] | None = None) -> int:
    """Run the command; 0 on success, 2 for bad arguments or settings, 1 if the service failed."""
    args = _cli.parse(_parser(), argv)
    return args if isinstance(args, int) else _cli.run(lambda: _report(args))


def _report(args: argparse.Namespace) -> int:
    from toolkit.report import _client_read, _preload, check_out, headline_lines, report_window

    check_out(args.out)
    if args.store:
        from toolkit.report import store_report
        from toolkit.store import open_store

        report = store_report(
            open_store(args.store, engine=args.engine), args.since, args.until, out=args.out,
            top=args.top,
            **{k: v for k, v in (("channels", args.channels), ("severity", args.severity)) if v},
        )  # fmt: skip
    else:  # delivery_report, the previous period read in a forked process while the window is
        _preload()  # while the local sandbox starts
        client = _cli.connect(args)
        filters = {"channels": args.channels, "severity": args.severity}
        read, source, filters = _client_read(client, True, filters)
        how = "process" if _fork.AVAILABLE else True
        # The forked child and this process each pace their requests at half the rate limits
        with client.transport.pacer.shared(2 if how == "process" else 1):
            report = report_window(read, now=client.now(), since=args.since, until=args.until,
                                   out=args.out, source=source, filters=filters, top=args.top,
                                   concurrent=how)  # fmt: skip
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
    parser = _cli.parser("python -m toolkit report", DESCRIPTION)
    _cli.add_window(parser)
    parser.add_argument("--out", default="delivery-report.html", help="the HTML file to write")
    parser.add_argument("--channels", type=_list, help="only these channels, comma-separated (email,sms)")  # fmt: skip
    parser.add_argument("--severity", type=_list, help="only these severities, comma-separated")
    parser.add_argument("--top", type=_positive, default=10, help="rows of the top-failures table")
    _cli.add_service(parser)
    _cli.add_store(parser, "report from")
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
