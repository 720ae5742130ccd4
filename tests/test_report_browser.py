"""The report in a real browser (Debian's headless Chromium via playwright), opened offline."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from toolkit.client import connect
from toolkit.frames import activity_frames
from toolkit.report import CHARTS, delivery_report, write_report

ARGS = ["--no-sandbox", "--disable-background-networking", "--disable-gpu", "--disable-dev-shm-usage"]  # fmt: skip
GENERATED_AT = datetime(2026, 11, 1, 12, 30, tzinfo=UTC)


@pytest.fixture(scope="module")
def browser(chromium):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(chromium), args=ARGS)
        yield browser
        browser.close()


def _open(browser, path: Path):
    """Open ``path``; return the page, its console errors and page errors, and any network
    request (all are refused: the report must not need one)."""
    page = browser.new_page()
    errors, requests = [], []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)  # fmt: skip
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.route("**/*", lambda route: _only_the_file(route, path, requests))
    page.goto(path.as_uri(), wait_until="load")
    page.wait_for_function(  # every figure drawn (the page draws them one after the other)
        "n => { const divs = [...document.querySelectorAll('.plotly-graph-div')];"
        " return divs.length >= n && divs.every((div) => div.querySelector('.main-svg')); }",
        arg=len(CHARTS),
        timeout=30_000,
    )
    return page, errors, requests


def _only_the_file(route, path: Path, requests: list[str]) -> None:
    if route.request.url == path.as_uri():
        route.continue_()
    else:
        requests.append(route.request.url)
        route.abort()


def _assert_rendered(browser, path: Path, findings: int = 0) -> None:
    page, errors, requests = _open(browser, path)
    try:
        for element_id in (*CHARTS, *(f"finding-{n}" for n in range(1, findings + 1))):
            assert page.locator(f"#{element_id}-plot .main-svg").count() >= 1, element_id
        assert errors == []
        assert requests == []
    finally:
        page.close()


def test_every_chart_renders_offline(browser, sandbox, tmp_path):
    client = connect(sandbox=sandbox, progress=False)
    out = tmp_path / "delivery-report.html"
    report = delivery_report(client, since="7d", out=out, generated_at=GENERATED_AT, progress=False)
    assert len(report.findings) == 3  # the planted incidents, each with its small chart
    _assert_rendered(browser, out, findings=len(report.findings))


def test_empty_report_renders(browser, tmp_path):
    out = write_report(
        tmp_path / "empty.html", activity_frames([]), provenance={}, generated_at=GENERATED_AT
    )
    _assert_rendered(browser, out)


def test_prints_on_pages_with_every_chart_whole(browser, sandbox, tmp_path):
    client = connect(sandbox=sandbox, progress=False)
    out = tmp_path / "delivery-report.html"
    delivery_report(client, since="7d", out=out, generated_at=GENERATED_AT, progress=False)
    page, errors, _ = _open(browser, out)
    try:
        page.emulate_media(media="print")
        page.set_viewport_size({"width": 794, "height": 1123})  # A4 at 96 dpi
        page.evaluate("window.dispatchEvent(new Event('beforeprint'))")
        page.wait_for_function(_ALL_CHARTS_FIT, timeout=30_000)  # drawn again to the page's width
        pdf = page.pdf(format="A4", print_background=True)
        assert len(re.findall(rb"/Type\s*/Page[^s]", pdf)) >= 4  # pages, not one long strip
        assert errors == []
    finally:
        page.close()


#: Every chart's drawing within its figure (none cut at the page's edge).
_ALL_CHARTS_FIT = """() => [...document.querySelectorAll("figure")].every((figure) => {
  const svg = figure.querySelector(".main-svg");
  return svg && svg.getBoundingClientRect().right <= figure.getBoundingClientRect().right + 1;
})"""
