"""The delivery report, by content: against the shared sandbox's seeded week of activity."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from datetime import datetime, timedelta, timezone

import plotly.offline
import pytest
from test_charts import sample_activity

from toolkit import __version__
from toolkit.client import connect
from toolkit.errors import ParameterError
from toolkit.frames import activity_frames
from toolkit.read import read_activity
from toolkit.redact import is_secret
from toolkit.report import CHARTS, build_report, delivery_report, write_report
from toolkit.report.cli import main

GENERATED_AT = datetime(2026, 11, 1, 12, 30, tzinfo=timezone.utc)
SECTIONS = ("report-header", "headline", "by-channel", "charts", "top-failures", "provenance")


@pytest.fixture(scope="module")
def client(sandbox):
    return connect(sandbox=sandbox, progress=False)


@pytest.fixture(scope="module")
def written(client, tmp_path_factory):
    out = tmp_path_factory.mktemp("report") / "delivery-report.html"
    report = delivery_report(client, since="7d", out=out, generated_at=GENERATED_AT, progress=False)
    return report, out.read_text(encoding="utf-8")


def _secret_values(sandbox):
    """Every secret value of the seeded integrations' and subscribers' credentials."""
    found = set()

    def walk(value, secret=False):
        if isinstance(value, dict):
            for field, item in value.items():
                walk(item, secret or is_secret(field))
        elif isinstance(value, list):
            for item in value:
                walk(item, secret)
        elif secret and isinstance(value, str) and len(value) >= 8:
            found.add(value)

    with sandbox.store.read() as db:
        for (text,) in db.execute("SELECT credentials FROM integrations"):
            walk(json.loads(text))
        for (text,) in db.execute("SELECT channels FROM subscribers"):
            for setting in json.loads(text):
                walk(setting.get("credentials") or {}, secret=True)
    return found


def _without_plotlyjs(html):
    return html.replace(plotly.offline.get_plotlyjs(), "")


def test_sections_charts_and_plotlyjs_once(written):
    report, html = written
    for section in SECTIONS:
        assert f'id="{section}"' in html
    for element_id in CHARTS:
        assert html.count(f'<figure id="{element_id}">') == 1
        assert html.count(f'<div id="{element_id}-plot" class="plotly-graph-div"') == 1
    assert html.count("Plotly.newPlot(") == len(CHARTS)
    assert html.count(plotly.offline.get_plotlyjs()) == 1
    assert "no data" not in _without_plotlyjs(html)  # a week of data: every chart has some


def test_works_offline(written, sandbox):
    _, html = written
    rest = _without_plotlyjs(html)
    assert not re.search(r"<(script|img|iframe)[^>]*\ssrc=", rest, re.IGNORECASE)
    assert not re.search(r"<link[^>]*\shref=", rest, re.IGNORECASE)
    assert "@import" not in rest and "url(" not in rest
    assert set(re.findall(r"https?://[^\s\"<]+", rest)) == {sandbox.url}  # provenance text only


def test_no_secret(written, sandbox):
    _, html = written
    for key in sandbox.api_keys.values():
        assert key not in html
    secrets = _secret_values(sandbox)
    assert len(secrets) > 20  # the scan found the seeded credentials
    assert not [value for value in secrets if value in html]
    assert "payload" not in _without_plotlyjs(html)


def test_headline_and_provenance(written, sandbox, client):
    report, html = written
    figures = report.headline
    provenance = report.provenance
    assert provenance["base_url"] == sandbox.url
    assert provenance["environment"] == "Acme/Development"
    assert provenance["before"] - provenance["after"] == timedelta(days=7)
    activity = read_activity(
        client, after=provenance["after"], before=provenance["before"], progress=False
    )
    assert figures["notifications"] == len(activity.notifications) > 1000
    status = activity.notifications["status"].astype(str)
    assert figures["failed_notifications"] == (status == "failed").sum() > 0
    assert 0 < figures["failure_rate"] < figures["delivery_rate"] < 1
    assert sum(row["jobs"] for row in figures["by_channel"]) > figures["notifications"]
    block = html[html.index('id="provenance"') :]
    for text in (
        f"<dd>{sandbox.url}</dd>",
        "<dd>Acme/Development</dd>",
        f"<dd>{provenance['after'].strftime('%Y-%m-%dT%H:%M:%S')}",
        "<dt>Filters</dt><dd>none</dd>",
        "<dd>2026-11-01T12:30:00.000Z</dd>",
        f"<dd>{__version__}</dd>",
    ):
        assert text in block
    assert f'id="headline-notifications"><div class="value">{figures["notifications"]:,}<' in html


def test_top_failures_show_the_planted_outage(written, sandbox):
    _, html = written
    table = html[html.index('id="top-failures"') : html.index('id="provenance"')]
    rows = re.findall(r"<tr><td>(.*?)</td><td>(.*?)</td>", table)
    assert 0 < len(rows) <= 10
    assert ("twilio", "20503") in rows  # the SMS provider outage
    assert re.search(r"<code>[^<]+</code>", table)  # example transaction ids


def test_deterministic_and_refuses_secret_provenance():
    activity = sample_activity()
    provenance = {"base_url": "http://127.0.0.1:1", "filters": {"channels": ["sms"]}}
    first = build_report(activity, provenance=provenance, generated_at=GENERATED_AT)
    again = build_report(activity, provenance=provenance, generated_at=GENERATED_AT)
    assert first == again
    assert "<dd>channels=sms</dd>" in first
    with pytest.raises(ParameterError, match="provenance"):
        build_report(activity, provenance={"api_key": "x"}, generated_at=GENERATED_AT)


def test_empty_activity(tmp_path):
    path = write_report(
        tmp_path / "empty.html", activity_frames([]), provenance={}, generated_at=GENERATED_AT
    )
    html = path.read_text(encoding="utf-8")
    assert html.count("no data") >= len(CHARTS)
    assert "No failures in this window." in html
    assert 'id="headline-delivery-rate"><div class="value">n/a<' in html


def test_cli_writes_and_prints_the_headline(sandbox, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("SVC_BASE_URL", sandbox.url)
    monkeypatch.setenv("SVC_API_KEY", sandbox.api_key)
    out = tmp_path / "r.html"
    assert main(["--since", "2d", "--out", str(out), "--channels", "sms,email"]) == 0
    printed = capsys.readouterr().out
    assert f"wrote {out.resolve()}" in printed
    assert "notifications: " in printed and "failure rate: " in printed
    assert sandbox.api_key not in printed
    assert "<dt>Filters</dt><dd>channels=sms, email</dd>" in out.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--since", "yesterday"], "since='yesterday' is not allowed"),
        (["--since", "1h", "--until", "2h"], "since='1h' is not allowed"),
        (["--top", "0"], "expected a positive whole number"),
        (["--channels", "fax"], "channels"),
        (["--bogus"], "unrecognized arguments"),
    ],
)
def test_cli_bad_arguments_exit_2(sandbox, monkeypatch, tmp_path, capsys, argv, message):
    monkeypatch.setenv("SVC_BASE_URL", sandbox.url)
    monkeypatch.setenv("SVC_API_KEY", sandbox.api_key)
    assert main([*argv, "--out", str(tmp_path / "r.html")]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "r.html").exists()


def test_python_m_toolkit_report(sandbox, tmp_path):
    env = {**os.environ, "SVC_BASE_URL": sandbox.url, "SVC_API_KEY": sandbox.api_key}
    command = [sys.executable, "-m", "toolkit", "report", "--since", "7d", "--out", "r.html"]
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"wrote {(tmp_path / 'r.html').resolve()}\n")  # the absolute path
    assert (tmp_path / "r.html").stat().st_size > 1_000_000
    assert sandbox.api_key not in done.stdout + done.stderr
