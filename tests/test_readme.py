"""The README's Python snippets run as written, in order, in one session against the sandbox."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from threading import Thread

README = Path(__file__).parent.parent / "README.md"


def snippets() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


class _Webhook(BaseHTTPRequestHandler):
    """A chat webhook on 127.0.0.1 for the alerts snippet's ``SLACK_WEBHOOK_URL``."""

    def do_POST(self):  # noqa: N802 (the handler's name)
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


RUNNER = textwrap.dedent(
    """
    import re, sys
    blocks = re.findall(r"```python\\n(.*?)```", open(sys.argv[1]).read(), flags=re.S)
    chosen = [int(n) for n in sys.argv[2:]] or range(1, len(blocks) + 1)
    session = {"__name__": "__main__"}
    try:
        for number, block in ((n, blocks[n - 1]) for n in chosen):
            print(f"--- snippet {number}", flush=True)
            exec(compile(block, f"README.md, python snippet {number}", "exec"), session)
    finally:
        for name in ("monitor",):
            if name in session:
                session[name].close()
    """
)


def test_readme_snippets_run_as_written(tmp_path):
    assert len(snippets()) >= 5
    webhook = ThreadingHTTPServer(("127.0.0.1", 0), _Webhook)
    Thread(target=webhook.serve_forever, daemon=True).start()
    environ = {k: v for k, v in os.environ.items() if not k.startswith("SVC_")}
    environ["SLACK_WEBHOOK_URL"] = f"http://127.0.0.1:{webhook.server_port}/hook"
    try:
        result = subprocess.run([sys.executable, "-c", RUNNER, str(README)], cwd=tmp_path,
                                env=environ, capture_output=True, text=True, timeout=900)  # fmt: skip
    finally:
        webhook.shutdown()
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert (tmp_path / "delivery-report.html").exists() and (tmp_path / "report.html").exists()
    # the first example's comment shows what the default sandbox finds (its times move with
    # the clock: the sandbox's data end now)
    printed = result.stdout.split("--- snippet 2")[0].splitlines()[1:]
    shown = [line[2:] for line in snippets()[0].splitlines() if line.startswith("# ")]
    assert [_timeless(line) for line in shown] == [_timeless(line) for line in printed]
    # the sync snippet again, in a new session: a new local sandbox on another port, same store
    # (once, refused as "another source")
    history = next(n for n, s in enumerate(snippets(), 1) if "toolkit.sync(" in s)
    again = subprocess.run([sys.executable, "-c", RUNNER, str(README), "1", str(history)],
                           cwd=tmp_path, env=environ, capture_output=True, text=True, timeout=900)  # fmt: skip
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]


def test_the_tutorial_list_names_every_notebook():
    text = README.read_text()
    for notebook in (README.parent / "notebooks").glob("[0-9]*.ipynb"):
        assert f"`{notebook.stem}`" in text


def _timeless(sentence: str) -> str:
    """A sentence with its clock times and dates blanked (a period across midnight, whose days
    are named at both ends, reads as one within a day: the run's hour decides which it is)."""
    sentence = re.sub(r"\b\d{2}:\d{2}\b", "HH:MM", sentence)
    sentence = re.sub(
        r"\b(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{1,2}\b", "DAY", sentence
    )
    return sentence.replace("from DAY HH:MM to DAY HH:MM UTC", "from HH:MM to HH:MM UTC on DAY")
