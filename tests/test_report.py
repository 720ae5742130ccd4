"""The delivery report, by content: against the shared sandbox's seeded week of activity."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from html import escape as _html_escape

import numpy as np
import pandas as pd
import plotly.offline
import pytest
import requests
from conftest import NOW, wait_for
from test_charts import T0, sample_activity

from toolkit import __version__, charts, metrics
from toolkit.client import connect
from toolkit.errors import ParameterError
from toolkit.frames import activity_frames
from toolkit.read import read_activity
from toolkit.redact import is_secret
from toolkit.report import (
    CHARTS,
    COLUMNS,
    COUNTED_COLUMNS,
    Window,
    build_report,
    delivery_report,
    report_window,
    write_report,
)
from toolkit.report.bundle import packed_plotlyjs, unpack
from toolkit.report.cli import main
from toolkit.report.summary import CARDS
from toolkit.schemas import CHANNELS
from toolkit.timeutil import to_iso

GENERATED_AT = datetime(2026, 11, 1, 12, 30, tzinfo=UTC)
SECTIONS = ("report-header", "findings", "changes", "headline", "by-provider", "charts",
            "top-failures", "completeness", "glossary", "provenance")  # fmt: skip


@pytest.fixture(scope="module")
def client(sandbox):
    return connect(sandbox=sandbox, progress=False)


@pytest.fixture(scope="module")
def written(client, tmp_path_factory):
    out = tmp_path_factory.mktemp("report") / "delivery-report.html"
    report = delivery_report(client, since="7d", out=out, generated_at=GENERATED_AT, progress=False)
    return report, out.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def windows(client, written):
    """The report's window and the previous one, read again here to check its numbers by hand."""
    after, before = written[0].provenance["after"], written[0].provenance["before"]
    current = read_activity(client, after=after, before=before, progress=False)
    previous = read_activity(client, after=after - (before - after), before=after, progress=False)
    return current, previous


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


def escape(text):
    """As Jinja2 escapes text."""
    return _html_escape(text).replace("&#x27;", "&#39;")


def _without_plotlyjs(html):
    """The page as the browser reads it, but plotly.js: each figure's JSON unpacked."""
    html = html.replace(packed_plotlyjs(), "")
    return re.sub(r'(<script type="text/plain" data-plot="[^"]+">)(.*?)(</script>)',
                  lambda m: m[1] + unpack(m[2]) + m[3], html)  # fmt: skip


def _section(html, name):
    start = html.index(f'<section id="{name}">')
    return html[start : html.index("</section>", start)]


def _rows(table_html):
    return [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in re.findall(r"<tr><td.*?</tr>", table_html)]  # fmt: skip


def _by_hand(activity):
    """Delivery jobs counted by hand from the raw frames: type is a channel; failed, finished
    (sent or better) and in flight by final status."""
    jobs = activity.jobs[activity.jobs["type"].astype(str).isin(CHANNELS)]
    final = jobs["final_status"].astype(str)
    return jobs.assign(
        failed=final == "failed",
        counted=final.isin(["failed", "sent", "delivered", "read", "completed", "warning"]),
        in_flight=final.isin(["pending", "queued", "running", "delayed"]),
    )


def test_sections_in_order_charts_and_plotlyjs_once(written):
    report, html = written
    assert re.findall(r'<(?:section|header) id="([^"]+)"', html) == list(SECTIONS)
    for element_id in CHARTS:
        assert html.count(f'<figure id="{element_id}">') == 1
        assert html.count(f'<div id="{element_id}-plot" class="plotly-graph-div"') == 1
    findings = len(report.findings)
    for number in range(1, findings + 1):
        assert html.count(f'<div id="finding-{number}-plot" class="plotly-graph-div"') == 1
    changes = html.count('<article class="change"')  # one small chart per cause
    assert html.count("data-plot=") == len(CHARTS) + findings + changes
    assert html.count(packed_plotlyjs()) == 1
    assert unpack(packed_plotlyjs()) == plotly.offline.get_plotlyjs()
    assert len(html.encode()) < 2_000_000  # one offline file (4.9 MB with plotly.js as is)
    assert "no data" not in _without_plotlyjs(html)  # a week of data: every chart has some


def test_works_offline(written, sandbox):
    _, html = written
    rest = _without_plotlyjs(html)
    assert not re.search(r"<(script|img|iframe)[^>]*\ssrc=", rest, re.IGNORECASE)
    assert not re.search(r"<link[^>]*\shref=", rest, re.IGNORECASE)
    assert "@import" not in rest and "url(" not in rest
    quoted = " ".join(re.findall(r"<code>(.*?)</code>", _section(rest, "findings")))
    addresses = set(re.findall(r"https?://[^\s\"<&]+", rest))
    # text only, and no dead local port: the sandbox is named "local sandbox"
    assert addresses - set(re.findall(r"https?://[^\s\"<&]+", quoted)) == set()


def test_no_secret(written, sandbox):
    _, html = written
    for key in sandbox.api_keys.values():
        assert key not in html
    secrets = _secret_values(sandbox)
    assert len(secrets) > 20  # the scan found the seeded credentials
    assert not [value for value in secrets if value in html]
    assert "payload" not in _without_plotlyjs(html)


def test_findings_are_the_incidents_each_with_its_numbers_and_chart(written, sandbox):
    report, html = written
    findings = report.findings
    planted = {(i["kind"], i["provider_id"]) for i in sandbox.incidents}
    assert set(zip(findings["kind"], findings["provider_id"], strict=True)) == planted
    section = _section(html, "findings")
    articles = re.findall(r'<article class="finding" id="(finding-\d+)">(.*?)</article>', section, re.S)  # fmt: skip
    assert [element_id for element_id, _ in articles] == [f"finding-{n}" for n in range(1, len(findings) + 1)]  # fmt: skip
    for (element_id, article), row in zip(articles, findings.to_dict("records"), strict=True):
        assert f'<p class="summary">{escape(row["summary"])}</p>' in article
        failed = f"{row['failed_jobs']:,} of {row['jobs']:,} delivery jobs in that time ({100 * row['failure_rate']:.1f}%;"  # fmt: skip
        assert f"<dt>failed</dt><dd>{failed}" in article
        assert f"{row['notifications']:,} notifications, {row['subscribers']:,} people" in article  # fmt: skip
        # plain words for a manager; the statistics in a details line, with their meaning
        assert row["kind"] not in article.split("<figure>")[0] and "by chance about 1 in 10" in article  # fmt: skip
        assert f'<div id="{element_id}-plot"' in article
    outage = findings.iloc[0]  # the largest: the SMS provider's outage, found to the minute
    assert (outage["kind"], outage["provider_id"], outage["error_code"]) == ("provider_outage", "twilio", "20503")  # fmt: skip
    planted_outage = next(i for i in sandbox.incidents if i["kind"] == "provider_outage")
    assert abs(outage["notifications"] - planted_outage["notifications"]) <= 0.1 * planted_outage["notifications"]  # fmt: skip
    assert f"{outage['notifications']} notifications" in outage["summary"]
    assert 'id="findings-checked">Checked ' in section and "3 incident(s) found" in section


def test_headline_changes_against_the_previous_period(written, windows):
    report, html = written
    current, previous = windows
    for figures, activity in ((report.headline, current), (report.previous, previous)):
        jobs = _by_hand(activity)
        assert figures["notifications"] == len(activity.notifications) > 1000
        assert figures["failed"] == jobs["failed"].sum() > 0
        assert figures["jobs"] == jobs["counted"].sum()
        assert figures["failure_rate"] == pytest.approx(jobs["failed"].sum() / jobs["counted"].sum())  # fmt: skip
    now, before = report.headline["failed"], report.previous["failed"]
    assert now > before  # the planted incidents are in this week
    change = f"{100 * (now - before) / before:+.1f}%"
    card = re.search(r'id="headline-failed">(.*?)</div></div>', html).group(1)
    assert f'<div class="value">{now:,}</div>' in card
    assert f'<div class="previous">previous: {before:,} ({change})' in card
    points = 100 * (report.headline["failure_rate"] - report.previous["failure_rate"])
    assert f"({points:+.1f} pts)" in html
    assert f"<dt>Previous period</dt><dd>{to_iso(report.provenance['after'] - timedelta(days=7))} to " in html  # fmt: skip


def test_a_previous_period_before_the_services_history_is_said_not_compared(client, tmp_path):
    from toolkit.report.summary import headline_lines

    # the sandbox holds 14 days: the 20 days before a 20-day window hold no delivery job
    out = tmp_path / "r.html"
    report = delivery_report(client, since="20d", out=out, generated_at=GENERATED_AT, progress=False)  # fmt: skip
    assert report.previous["delivery_jobs"] == 0 < report.headline["delivery_jobs"]
    html = out.read_text(encoding="utf-8")
    assert html.count("previous period: no delivery jobs") == len(CARDS)  # every headline card
    assert "(was 0)" not in html and "no change to show" not in html
    lines = headline_lines(report.headline, report.previous)
    assert lines[0].startswith("notifications: ") and lines[0].endswith("[previous period: no delivery jobs]")  # fmt: skip


def test_per_provider_table_by_hand(written, windows):
    _, html = written
    current, _ = windows
    rows = {(row[0], row[1]): row for row in _rows(_section(html, "by-provider"))}
    jobs = _by_hand(current)
    sms = jobs[(jobs["type"].astype(str) == "sms") & (jobs["provider_id"] == "twilio")]
    counted, failed = int(sms["counted"].sum()), int(sms["failed"].sum())
    _, _, shown_jobs, shown_failed, in_flight, rate, p50, p95, top = rows[("SMS", "Twilio")]
    assert (shown_jobs, shown_failed) == (f"{counted:,}", f"{failed:,}")
    assert rate.startswith(f"{100 * failed / counted:.1f}% (")
    # time to deliver: the notification's creation to the job's first Success detail
    details = current.execution_details
    success = (
        details[details["status"].astype(str) == "Success"].groupby("job_id")["created_at"].min()
    )
    created = current.notifications.set_index("notification_id")["created_at"]
    delivered = sms[sms["job_id"].isin(success.index)]
    seconds = (success[delivered["job_id"]].to_numpy() - created[delivered["notification_id"]].to_numpy()) / np.timedelta64(1, "s")  # fmt: skip
    assert p50 == charts.format_seconds(float(np.median(seconds)))
    assert p95 == charts.format_seconds(float(np.percentile(seconds, 95)))
    errors = sms[sms["failed"]].groupby(["error_code", "error_text"]).size().sort_values()
    (code, text), count = errors.index[-1], errors.iloc[-1]
    assert top == f"{code} · {text} ({count:,})" and code == "20503"
    assert len(rows) == len(jobs.groupby(["type", "provider_id"], observed=True))


def test_top_failures_show_the_planted_outage(written):
    _, html = written
    rows = _rows(_section(html, "top-failures"))
    assert 0 < len(rows) <= 10
    assert rows[0][:3] == ["SMS", "Twilio", "20503"]  # the SMS provider outage, first
    assert re.search(r"<code>[^<]+</code>", _section(html, "top-failures"))  # transaction ids


def test_completeness_and_glossary(written, windows):
    report, html = written
    jobs = _by_hand(windows[0])
    in_flight = jobs[jobs["in_flight"]]
    notes = _section(html, "completeness")
    assert f"<li>{len(in_flight):,} delivery jobs of {in_flight['notification_id'].nunique():,} notifications were still in flight" in notes  # fmt: skip
    assert "retention" in notes
    glossary = _section(html, "glossary")
    for term, definition in metrics.DEFINITIONS.items():
        assert f"<dt>{term}</dt><dd>{escape(definition)}</dd>" in glossary


def test_provenance(written, sandbox):
    report, html = written
    provenance = report.provenance
    assert provenance["base_url"] == "local sandbox"  # its port is dead once the report is read
    assert provenance["environment"] == "Acme/Development"
    assert provenance["before"] - provenance["after"] == timedelta(days=7)
    header = html[html.index('<header id="report-header">') : html.index("</header>")]
    # the window in words (its minutes follow the shared sandbox's clock), no ISO stamp
    assert re.search(r"Acme/Development · local sandbox · Oct 25, 1\d:\d\d to Nov 1, 1\d:\d\d UTC \(7 days\) · generated Nov 1, 12:30 UTC</div>", header)  # fmt: skip
    block = _section(html, "provenance")
    for text in (
        "<dd>local sandbox</dd>",
        "<dd>Acme/Development</dd>",
        f"<dd>{provenance['after'].strftime('%Y-%m-%dT%H:%M:%S')}",
        "<dt>Filters</dt><dd>none</dd>",
        "<dd>2026-11-01T12:30:00.000Z</dd>",
        f"<dd>{__version__}</dd>",
    ):
        assert text in block


def test_the_report_needs_only_its_columns(windows):
    current, previous = windows

    def trimmed(activity):
        return type(activity)(*(frame[list(COLUMNS[name])] for name, frame in zip(activity._fields, activity, strict=True)))  # fmt: skip

    kwargs = {"provenance": {"environment": "x"}, "generated_at": GENERATED_AT}
    full = build_report(current, previous=previous, **kwargs)
    # the status charts draw the execution details' counts, as a store gives them
    counts = metrics.detail_counts(current.execution_details)
    assert len(counts) < len(current.execution_details) / 5
    lean = build_report(trimmed(current), previous=trimmed(previous), counts=counts, **kwargs)
    assert lean == full
    with pytest.raises(ParameterError, match=r"activity.execution_details=.*channel"):
        build_report(trimmed(current), **kwargs)  # without counts, it counts them itself
    counted = list(dict.fromkeys([*COLUMNS["execution_details"], *COUNTED_COLUMNS]))
    details = current.execution_details[counted]
    assert build_report(trimmed(current)._replace(execution_details=details),
                        previous=trimmed(previous), **kwargs) == full  # fmt: skip
    with pytest.raises(
        ParameterError, match=r"counts='DataFrame' is not allowed: metrics.detail_counts"
    ):
        build_report(trimmed(current), counts=current.execution_details, **kwargs)
    missing = current._replace(jobs=current.jobs.drop(columns="final_status"))
    with pytest.raises(ParameterError, match=r"activity.jobs=.*final_status"):
        build_report(missing, **kwargs)


def _incident(**fields):
    row = {"kind": "provider_outage", "channel": "sms", "provider_id": "twilio",
           "error_code": "503", "domain": None, "started_at": T0 + timedelta(hours=1),
           "ended_at": T0 + timedelta(minutes=61), "ongoing": False, "jobs": 1, "failed_jobs": 1,
           "failure_rate": 1.0, "baseline_rate": 0.0, "p_value": 0.001, "notifications": 1,
           "subscribers": 1, "workflows": ["order"],
           "example_error": '{"code": "503", "apiKey": "sk_live_7f3a9c2e1dQ"}',
           "summary": "Twilio failed 1 of 1 SMS from 11:00 to 11:01 on Nov 1 UTC."}  # fmt: skip
    return pd.DataFrame([{**row, **fields}])


def test_findings_from_a_given_frame_are_rendered_and_masked():
    html = build_report(sample_activity(), provenance={}, generated_at=GENERATED_AT,
                        incidents=_incident(ongoing=True))  # fmt: skip
    section = _section(html, "findings")
    assert (
        '<p class="summary">Twilio failed 1 of 1 SMS from 11:00 to 11:01 on Nov 1 UTC.</p>'
        in section
    )
    assert "<dt>what</dt><dd>Provider outage</dd>" in section
    assert "<dd>SMS via Twilio (error 503)</dd>" in section
    assert "<dd>since Nov 1, 11:00 UTC, still going at the end of the window</dd>" in section
    assert "<dd>1 of 1 delivery jobs in that time (100.0%; usually 0.0%)" in section
    assert "<dd>p = 0.001: a rate this far above the usual one would come by chance about 1 in 1,000 times" in section  # fmt: skip
    assert "sk_live_7f3a9c2e1dQ" not in html and "&#34;code&#34;: &#34;503&#34;" in section
    assert '<div id="finding-1-plot"' in section and "No incidents found" not in section
    with pytest.raises(ParameterError, match="findings"):
        build_report(sample_activity(), provenance={}, generated_at=GENERATED_AT,
                     incidents=_incident().drop(columns="summary"))  # fmt: skip


def test_the_same_window_gives_the_same_bytes(written, client, tmp_path):
    report, html = written
    window = {"since": report.provenance["after"], "until": report.provenance["before"]}
    again = delivery_report(client, **window, out=tmp_path / "again.html",
                            generated_at=GENERATED_AT, progress=False)  # fmt: skip
    assert again.path.read_text(encoding="utf-8") == html


def test_deterministic_and_refuses_secret_provenance():
    activity = sample_activity()
    provenance = {"base_url": "http://127.0.0.1:1", "filters": {"channels": ["sms"]}}
    first = build_report(activity, provenance=provenance, generated_at=GENERATED_AT)
    again = build_report(activity, provenance=provenance, generated_at=GENERATED_AT)
    assert first == again
    assert "<dd>channels=sms</dd>" in first
    with pytest.raises(ParameterError, match="provenance"):
        build_report(activity, provenance={"api_key": "x"}, generated_at=GENERATED_AT)


@pytest.mark.parametrize("top", [0, -1, 2.5, "3", True, None])
def test_a_bad_top_is_refused_before_any_request_or_read(top, tmp_path):
    from tests.stub_service import Stub, page, send
    from toolkit.client import Client

    stub = Stub(lambda request, handler: send(handler, 200, page([])))
    reads = []
    try:
        client = Client(stub.url, "k" * 32, progress=False, max_retries=0)
        calls = {
            "delivery_report": lambda: delivery_report(client, out=tmp_path / "r.html", top=top),
            "report_window": lambda: report_window(
                lambda *window: reads.append(window),
                now=GENERATED_AT,
                out=tmp_path / "r.html",
                top=top,
            ),  # fmt: skip
            "build_report": lambda: build_report(
                None, provenance={}, generated_at=GENERATED_AT, top=top
            ),  # fmt: skip
            "failure_reasons": lambda: charts.failure_reasons(None, top=top),
        }
        for name, call in calls.items():
            with pytest.raises(ParameterError, match=rf"top={re.escape(repr(top))} is not allowed: a positive whole number$"):  # fmt: skip
                call()
            assert (stub.requests, reads) == ([], []), name
        client.transport.request("GET", "/v1/notifications")  # the stub counts what is sent
        assert len(stub.requests) == 1
    finally:
        stub.close()
    assert not (tmp_path / "r.html").exists()


def test_empty_activity(tmp_path):
    path = write_report(
        tmp_path / "empty.html", activity_frames([]), provenance={}, generated_at=GENERATED_AT
    )
    html = _without_plotlyjs(path.read_text(encoding="utf-8"))
    assert html.count("no data") >= len(CHARTS)
    assert "No failures in this window." in html
    assert 'id="headline-failure-rate"><div class="value">n/a<' in html
    findings = _section(html, "findings")
    assert "<strong>No incidents found.</strong>" in findings
    assert "Checked 0 delivery jobs" in findings and "no delivery jobs" in findings
    assert "previous period: not read" in html


def test_a_quiet_week_has_no_findings_and_says_what_was_checked(tmp_path):
    from toolkit.sandbox import start

    with start(seed=11, now=NOW, notifications=1500, subscribers=200, incidents="none") as quiet:
        client = connect(sandbox=quiet, progress=False)
        report = delivery_report(client, since="7d", out=tmp_path / "quiet.html",
                                 generated_at=GENERATED_AT, progress=False)  # fmt: skip
        jobs = _by_hand(read_activity(client, after=report.provenance["after"],
                                      before=report.provenance["before"], progress=False))  # fmt: skip
    findings = _section((tmp_path / "quiet.html").read_text(encoding="utf-8"), "findings")
    assert report.findings.empty
    assert "<strong>No incidents found.</strong>" in findings
    assert f"Checked {len(jobs):,} delivery jobs from " in findings
    assert "provider outage, error spike, domain bounces" in findings


def test_cli_writes_and_prints_the_headline(sandbox, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("SVC_BASE_URL", sandbox.url)
    monkeypatch.setenv("SVC_API_KEY", sandbox.api_key)
    out = tmp_path / "r.html"
    # A service's windows count back from the machine's clock, the sandbox's clock is fixed:
    # give the window as instants of the sandbox's clock so that the report has data.
    now = pd.Timestamp(sandbox.now())
    window = ["--since", (now - pd.Timedelta(days=2)).isoformat(), "--until", now.isoformat()]
    assert main([*window, "--out", str(out), "--channels", "sms,email"]) == 0
    printed = capsys.readouterr().out
    assert f"wrote {out.resolve()}" in printed
    assert int(re.search(r"notifications: ([\d,]+)", printed)[1].replace(",", "")) > 100
    assert "failure rate: " in printed
    assert "findings: " in printed and "[previous: " in printed
    assert sandbox.api_key not in printed
    assert "<dt>Filters</dt><dd>channels=sms, email</dd>" in out.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--since", "yesterday"], "argument --since: 'yesterday' is not allowed"),
        (["--since", "1h", "--until", "2h"], "--since '1h' is not allowed"),
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


def test_python_m_toolkit_report_with_nothing_configured_uses_a_sandbox_process(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SVC_")}
    command = [sys.executable, "-m", "toolkit", "report", "--since", "1d", "--out", "r.html"]
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    url = re.search(r"using the local sandbox at (http://127\.0\.0\.1:\d+) \(Acme/Development\)", done.stderr).group(1)  # fmt: skip
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "<dd>local sandbox</dd>" in html and url not in html and "findings: " in done.stdout
    wait_for(lambda: _refused(url))  # the child sandbox stopped once the command had exited


def _refused(url: str) -> bool:
    try:
        requests.get(url, timeout=5)
    except requests.ConnectionError:
        return True
    return False


def test_a_report_from_a_store_equals_the_report_from_the_service(client, tmp_path):
    from toolkit.store import open_store, sync

    sync(client, tmp_path / "store", since="15d", lag="0s")  # this week and the one before
    store = open_store(tmp_path / "store")
    before = client.now().replace(microsecond=0) - timedelta(hours=1)
    window = {"since": before - timedelta(days=7), "until": before, "generated_at": GENERATED_AT}
    from_service = delivery_report(client, out=tmp_path / "service.html", progress=False, **window)
    source = {"base_url": client.source, "environment": client.environment}

    def counted(after, before):  # every figure counted by the store's engine
        return Window(store.selection(), after, before)

    from_store = report_window(
        counted, now=client.now(), out=tmp_path / "store.html", source=source, **window
    )
    assert from_store.previous is not None and len(from_store.findings) == 3
    html = from_store.path.read_text(encoding="utf-8")
    assert html == from_service.path.read_text(encoding="utf-8")


def test_times_names_and_examples_are_written_for_people(written):
    _, html = written
    failures = _section(html, "top-failures")
    findings = _section(_without_plotlyjs(html), "findings").split("<figure>")[0]
    assert not re.search(r"\d{4}-\d{2}-\d{2}T\d{2}:", findings + failures)  # no ISO stamps
    first = _rows(failures)[0]
    assert re.fullmatch(r"[A-Z][a-z]{2} \d{1,2}, \d{2}:\d{2} UTC", first[7])  # "Nov 20, 01:36 UTC"
    # one example id shown; the rest on demand, so that the table fits a screen
    assert first[9].startswith("<code>") and "<details><summary>2 more</summary>" in first[9]
    providers = [row[1] for row in _rows(_section(html, "by-provider"))]
    assert "In-app (built-in)" in providers and "svc" not in providers and "SendGrid" in providers
