"""``python -m toolkit {sandbox,report,incidents,what-changed,sync} ...``"""

from __future__ import annotations

import os
import sys

USAGE = """usage: python -m toolkit {sandbox,report,incidents,what-changed,sync} [options]

  sandbox   serve the local sandbox service (python -m toolkit sandbox --help)
  report    write the shareable HTML delivery report (python -m toolkit report --help)
  incidents print the incidents of a window (python -m toolkit incidents --help)
  what-changed
            the slices that explain a window against the one before (--help)
  sync      keep a store of activity current on disk (python -m toolkit sync --help)
"""


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in {"-h", "--help"}:
        print(USAGE)
        return 0 if argv else 2
    command, rest = argv[0], argv[1:]
    if command in {"report", "incidents", "what-changed"}:
        from toolkit._cli import start_sandbox

        start_sandbox(rest)  # with nothing configured: while the command is imported
    if command == "sandbox":
        from toolkit.sandbox.cli import main as run
    elif command == "report":
        from toolkit.report.cli import main as run
    elif command == "incidents":
        from toolkit.incidents.cli import main as run
    elif command == "what-changed":
        from toolkit.changes.cli import main as run
    elif command == "sync":
        from toolkit.store.cli import main as run
    else:
        print(f"unknown command {command!r}\n\n{USAGE}", file=sys.stderr)
        return 2
    return run(rest)


if __name__ == "__main__":
    code = main()
    if sys.argv[1:2] == ["report"]:
        # Written and printed: exit without freeing the heap object by object (0.4-0.6 s of a
        # report's run; the local sandbox has nothing to save).
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)
