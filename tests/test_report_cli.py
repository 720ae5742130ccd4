"""``python -m toolkit report``: what it refuses, before reading anything, and how it says so."""

from __future__ import annotations

from datetime import timedelta

import pytest

from toolkit.report.cli import main
from toolkit.timeutil import to_iso

#: Nothing listens there: a command that tried to read would fail on the connection instead.
UNREACHABLE = "http://127.0.0.1:9"


@pytest.fixture
def configured(monkeypatch, sandbox):
    """A configured service (the shared sandbox, as a real service would be configured)."""
    monkeypatch.setenv("SVC_BASE_URL", sandbox.url)
    monkeypatch.setenv("SVC_API_KEY", sandbox.api_key)
    return sandbox


def test_environment_is_refused_with_a_configured_service(configured, tmp_path, capsys):
    out = tmp_path / "r.html"
    # once, the report was written and labelled "Acme/Production" with Acme/Development's data
    assert main(["--since", "1d", "--environment", "Acme/Production", "--out", str(out)]) == 2
    error = capsys.readouterr().err
    assert "--environment" in error and "SVC_BASE_URL" in error
    assert not out.exists()


def test_environment_is_refused_with_base_url_flags(monkeypatch, sandbox, tmp_path, capsys):
    monkeypatch.delenv("SVC_BASE_URL", raising=False)
    monkeypatch.delenv("SVC_API_KEY", raising=False)
    argv = ["--base-url", sandbox.url, "--api-key", sandbox.api_key, "--environment", "Acme/Production"]  # fmt: skip
    assert main([*argv, "--out", str(tmp_path / "r.html")]) == 2
    assert "--environment" in capsys.readouterr().err
    assert not (tmp_path / "r.html").exists()


@pytest.mark.parametrize(
    ("where", "message"),
    [
        ("missing/r.html", "a file in an existing directory"),
        (".", "a file name, not a directory"),
    ],
)
def test_out_is_checked_before_anything_is_read(monkeypatch, tmp_path, capsys, where, message):
    monkeypatch.setenv("SVC_BASE_URL", UNREACHABLE)
    monkeypatch.setenv("SVC_API_KEY", "k" * 32)
    assert main(["--out", str(tmp_path / where)]) == 2
    error = capsys.readouterr().err
    assert error.startswith("error: out=") and message in error
    assert "127.0.0.1:9" not in error  # the service was never contacted


def _window(sandbox, hours: int) -> list[str]:
    """``--since``/``--until`` for the ``hours`` before the sandbox's now (a configured client's
    clock is the machine's, not the sandbox's)."""
    now = sandbox.now()
    return ["--since", to_iso(now - timedelta(hours=hours)), "--until", to_iso(now)]


def test_retention_error_names_the_cli_flags(monkeypatch, sandbox, tmp_path, capsys):
    monkeypatch.setenv("SVC_BASE_URL", sandbox.url)
    monkeypatch.setenv("SVC_API_KEY", sandbox.api_keys["Globex/Development"])  # free: 24 h
    assert main([*_window(sandbox, 72), "--out", str(tmp_path / "r.html")]) == 2
    error = capsys.readouterr().err
    assert "retention" in error and "--since" in error
    assert "'after'" not in error and "after >=" not in error  # the API's parameter, not the CLI's
    assert "use a --since of 20" in error  # the earliest instant allowed
    assert not (tmp_path / "r.html").exists()


def test_a_window_within_retention_is_reported_without_its_previous_period(
    monkeypatch, sandbox, tmp_path, capsys
):
    monkeypatch.setenv("SVC_BASE_URL", sandbox.url)
    monkeypatch.setenv("SVC_API_KEY", sandbox.api_keys["Globex/Development"])  # free: 24 h
    out = tmp_path / "r.html"
    assert main([*_window(sandbox, 20), "--out", str(out)]) == 0  # the 20 h before: too old
    html = out.read_text(encoding="utf-8")
    assert "<dt>Previous period</dt><dd>not available: it starts before the plan" in html
    assert html.count("previous period: not read") == 7  # every headline card
    printed = capsys.readouterr().out
    assert "findings: " in printed and "[previous" not in printed


@pytest.mark.parametrize("command", ["incidents", "sync"])
def test_every_command_names_its_own_flags_for_retention_and_environment(
    command, monkeypatch, sandbox, tmp_path, capsys
):
    from toolkit.__main__ import main as toolkit_main

    store = ["--store", str(tmp_path / "store")] if command == "sync" else []
    since = _window(sandbox, 72)[:2]
    monkeypatch.setenv("SVC_BASE_URL", sandbox.url)
    monkeypatch.setenv("SVC_API_KEY", sandbox.api_keys["Globex/Development"])  # free: 24 h
    assert toolkit_main([command, *store, *since]) == 2
    error = capsys.readouterr().err
    assert "retention" in error and "--since" in error and "'after'" not in error
    assert toolkit_main([command, *store, "--environment", "Acme/Production"]) == 2
    assert "leave --environment out" in capsys.readouterr().err
