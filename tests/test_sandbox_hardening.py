"""The sandbox under a killed write, oversized bodies, out-of-retention windows, bad start-up
arguments, and the newer subscription shape."""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import requests

from tests.conftest import wait_for
from toolkit.sandbox import start
from toolkit.sandbox.app import MAX_BODY_BYTES

NOW = "2026-11-01T12:00:00Z"
ROOT = Path(__file__).resolve().parents[1]
SMALL = {"now": NOW, "notifications": 300, "subscribers": 50}


def _key(sandbox, name=None):
    return {"Authorization": f"ApiKey {sandbox.api_keys[name] if name else sandbox.api_key}"}


def _serve_in_subprocess(db: Path) -> tuple[subprocess.Popen, str, str]:
    """``python -m toolkit sandbox --db`` in a subprocess: (process, url, default key)."""
    command = [sys.executable, "-m", "toolkit", "sandbox", "--port", "0", "--db", str(db)]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    output = ""
    while "Press Ctrl-C" not in output:
        line = process.stdout.readline()
        assert line, f"the sandbox exited early: {output}"
        output += line
    url = re.search(r"serving at (\S+)", output).group(1)
    return process, url, re.search(r"SVC_API_KEY=(\S+)", output).group(1)


def test_a_write_killed_in_flight_does_not_keep_its_idempotency_key_claimed(tmp_path):
    db = tmp_path / "sandbox.db"
    with start(db=db, seed=3, **SMALL) as first:
        subscriber = requests.get(f"{first.url}/v2/subscribers", params={"limit": 1},
                                  headers=_key(first), timeout=10).json()["data"][0]  # fmt: skip
    with sqlite3.connect(db) as scaffold:  # makes the update take seconds: the kill lands inside
        scaffold.execute(
            "CREATE TRIGGER slow BEFORE UPDATE ON subscribers BEGIN SELECT count(*)"
            " FROM notifications a, notifications b, notifications c; END"
        )
    process, url, key = _serve_in_subprocess(db)
    headers = {"Authorization": f"ApiKey {key}", "idempotency-key": "killed-1"}
    path = f"/v2/subscribers/{subscriber['subscriberId']}"
    answers = []

    def send():
        try:
            answers.append(requests.patch(url + path, json={"firstName": "Once"}, headers=headers,
                                          timeout=120).status_code)  # fmt: skip
        except requests.ConnectionError:
            answers.append("killed")

    sender = threading.Thread(target=send)
    sender.start()
    try:
        with sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True) as probe:

            def claimed():
                assert process.poll() is None, "the server exited before claiming the write"
                return probe.execute("SELECT 1 FROM idempotency WHERE state = 'running'").fetchone()

            wait_for(claimed, timeout=60)
    finally:
        process.kill()  # SIGKILL while the claimed write runs
        process.wait(timeout=20)
        process.stdout.close()
        sender.join(timeout=60)
    assert answers == ["killed"]
    with sqlite3.connect(db) as scaffold:
        scaffold.execute("DROP TRIGGER slow")
    with start(db=db) as again:
        retry = requests.patch(again.url + path, json={"firstName": "Once"},
                               headers={**_key(again), "idempotency-key": "killed-1"}, timeout=10)  # fmt: skip
        assert retry.status_code == 200, retry.text
        assert retry.json()["data"]["firstName"] == "Once"


@pytest.fixture(scope="module")
def small():
    with start(seed=3, **SMALL) as handle:
        yield handle


def test_a_body_over_the_limit_answers_413_with_the_service_body(small):
    subscriber = requests.get(f"{small.url}/v2/subscribers", params={"limit": 1},
                              headers=_key(small), timeout=10).json()["data"][0]  # fmt: skip
    url = f"{small.url}/v2/subscribers/{subscriber['subscriberId']}"
    big = {"data": {"blob": "x" * MAX_BODY_BYTES}}
    response = requests.patch(url, json=big, headers=_key(small), timeout=30)
    assert response.status_code == 413
    body = response.json()
    assert body["statusCode"] == 413 and str(MAX_BODY_BYTES) in body["message"]
    fits = {"data": {"blob": "x" * 1000}}
    assert requests.patch(url, json=fits, headers=_key(small), timeout=10).status_code == 200


def test_a_before_older_than_retention_names_the_retention_limit(small):
    free = _key(small, "Globex/Development")
    response = requests.get(f"{small.url}/v1/notifications", headers=free, timeout=10,
                            params={"before": "2026-10-20T00:00:00Z"})  # fmt: skip
    assert response.status_code == 402
    message = response.json()["message"]
    assert "free plan keeps 1 day(s)" in message and "'before'" in message
    assert "'after' must not be later" not in message


def test_subscriptions_carry_identifier_and_context_keys(small):
    people = requests.get(f"{small.url}/v2/subscribers", params={"limit": 20},
                          headers=_key(small), timeout=10).json()["data"]  # fmt: skip
    seen = 0
    for person in people:
        url = f"{small.url}/v2/subscribers/{person['subscriberId']}/subscriptions"
        for item in requests.get(url, headers=_key(small), timeout=10).json()["data"]:
            assert item["identifier"] == f"tk={item['topic']['key']}:si={person['subscriberId']}"
            assert item["contextKeys"] == []
            seen += 1
    assert seen > 0


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            ["--db", "/nonexistent-folder/x.db"],
            "db: the folder '/nonexistent-folder' does not exist",
        ),
        (["--db", "NOT_A_DB"], "is not a sandbox database"),
        (["--host", "256.1.1.1"], "host: cannot serve on '256.1.1.1'"),
    ],
)
def test_the_cli_refuses_a_bad_db_or_host_in_one_line(tmp_path, arguments, message):
    if "NOT_A_DB" in arguments:
        text = tmp_path / "notes.txt"
        text.write_text("not a database\n")
        arguments = ["--db", str(text)]
    result = subprocess.run([sys.executable, "-m", "toolkit", "sandbox", "--port", "0", *arguments],
                            cwd=ROOT, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and message in result.stderr
    assert "Traceback" not in result.stderr
