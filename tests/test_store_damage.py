"""Stores that must not lose data (issue 21): a sync during an outage, a watermark ahead of the
service; damaged stores get the store's error naming the file and what to do."""

from __future__ import annotations

import json
import shutil

import pyarrow.parquet as pq
import pytest
import requests

import toolkit
from tests.stub_service import Stub, send
from toolkit.client import Client
from toolkit.errors import ResponseError
from toolkit.report import store_report
from toolkit.timeutil import parse_time


def _rows(path):
    return sum(pq.read_metadata(p).num_rows for p in (path / "notifications").glob("*/*.parquet"))


@pytest.fixture
def proxy(fresh_sandbox):
    """The fresh sandbox behind a proxy that can answer every feed read with a maintenance
    message (a 200, as some gateways do)."""
    outage = {"on": False}

    def answer(request, handler):
        if outage["on"] and request.path == "/v1/notifications":
            return send(handler, 200, {"message": "Service under maintenance"})
        upstream = requests.get(
            fresh_sandbox.url + handler.path, headers={"Authorization": request.headers["Authorization"]}
        )  # fmt: skip
        send(handler, upstream.status_code, upstream.content)

    stub = Stub(answer)
    client = Client(stub.url, fresh_sandbox.api_key, clock=fresh_sandbox.now, progress=False)
    yield client, outage
    stub.close()


def test_a_sync_during_an_outage_fails_and_keeps_the_store(proxy, tmp_path):
    client, outage = proxy
    store = tmp_path / "store"
    toolkit.sync(client, store, since="2d", lag="6h")
    held, state = _rows(store), (store / "state.json").read_text()
    recent = toolkit.open_store(store).read(after="6h").notifications
    assert held and len(recent)  # the re-read range holds notifications to lose
    outage["on"] = True
    with pytest.raises(ResponseError, match="Service under maintenance"):
        toolkit.sync(client, store, since="2d", lag="6h")
    assert _rows(store) == held
    assert json.loads((store / "state.json").read_text())["watermark"] == json.loads(state)["watermark"]  # fmt: skip


def test_a_watermark_after_the_services_now_is_moved_back_with_a_warning(fresh_sandbox, tmp_path):
    client = toolkit.connect(sandbox=fresh_sandbox, progress=False)
    store = tmp_path / "store"
    toolkit.sync(client, store, since="1d")
    path = store / "state.json"
    state = json.loads(path.read_text())
    state["watermark"] = "2030-01-01T00:00:00.000Z"  # edited by hand
    path.write_text(json.dumps(state))
    with pytest.warns(UserWarning, match="after the service's now"):
        toolkit.sync(client, store, since="1d")
    watermark = parse_time(json.loads(path.read_text())["watermark"])
    assert watermark <= client.now()


def test_report_out_is_written_aside_a_failed_write_keeps_the_previous_report(fresh_sandbox, tmp_path):  # fmt: skip
    import os
    import resource
    import signal
    import subprocess
    import sys

    client = toolkit.connect(sandbox=fresh_sandbox, progress=False)
    store = tmp_path / "store"
    toolkit.sync(client, store, since="2d")
    out = tmp_path / "report.html"
    out.write_text("<html>the previous report</html>")

    def full_disk():  # writes past 20 KB fail (EFBIG), as on a full disk
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000))

    command = [sys.executable, "-m", "toolkit", "report", "--store", str(store), "--since", "1d", "--out", str(out)]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("SVC_")}
    done = subprocess.run(command, preexec_fn=full_disk, capture_output=True, text=True, env=env)
    assert done.returncode != 0
    assert out.read_text() == "<html>the previous report</html>"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    assert done.returncode == 0 and "the previous report" not in out.read_text()


# -- damaged stores -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small():
    from toolkit.sandbox import start

    with start(seed=11, now="2026-11-01T12:00:00Z", notifications=300, subscribers=60) as handle:
        yield handle


@pytest.fixture(scope="module")
def clean_store(small, tmp_path_factory):
    path = tmp_path_factory.mktemp("clean") / "store"
    toolkit.sync(toolkit.connect(sandbox=small, progress=False), path, since="2d")
    return path


def _damage_file(table, content):
    def damage(root):
        path = sorted((root / table).glob("*/part.parquet"))[-1]
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            import pyarrow as pa

            pq.write_table(pa.table({"x": [1, 2]}), path)
        return path.name

    return damage


def _damage_state(field, value):
    def damage(root):
        path = root / "state.json"
        state = json.loads(path.read_text())
        state[field] = value
        path.write_text(json.dumps(state))
        return "state.json"

    return damage


DAMAGES = {
    "zero-byte notifications": _damage_file("notifications", b""),
    "garbage jobs": _damage_file("jobs", b"not parquet" * 50),
    "foreign execution details": _damage_file("execution_details", None),
    "foreign notifications": _damage_file("notifications", None),
    "watermark a number": _damage_state("watermark", 5),
    "after not a time": _damage_state("after", "yesterday"),
    "filters null": _damage_state("filters", None),
    "environment ids text": _damage_state("environment_ids", "abc"),
    "base url null": _damage_state("base_url", None),
}


def _entry_points(small, root, out):
    from toolkit.incidents.cli import main as incidents
    from toolkit.report.cli import main as report

    client = toolkit.connect(sandbox=small, progress=False)
    return {
        "repr": lambda: repr(toolkit.open_store(root)),
        "sql": lambda: toolkit.open_store(root).sql(
            "SELECT count(*) AS n FROM notifications JOIN jobs USING (notification_id) JOIN execution_details USING (job_id)"
        ),  # fmt: skip
        "read": lambda: toolkit.open_store(root).read(),
        "report": lambda: store_report(toolkit.open_store(root), since="1d", out=str(out)),
        "sync": lambda: toolkit.sync(client, root, since="2d"),
        "report --store": lambda: report(
            ["--store", str(root), "--since", "1d", "--out", str(out)]
        ),  # fmt: skip
        "incidents --store": lambda: incidents(["--store", str(root), "--since", "1d"]),
    }


@pytest.mark.parametrize("damage", DAMAGES.values(), ids=DAMAGES)
def test_every_entry_point_names_a_damaged_store_file_and_what_to_do(small, clean_store, tmp_path, capsys, damage):  # fmt: skip
    from toolkit.store import StoreError

    root = tmp_path / "store"
    shutil.copytree(clean_store, root)
    name = damage(root)
    for entry, call in _entry_points(small, root, tmp_path / "r.html").items():
        capsys.readouterr()
        try:
            result = call()
        except StoreError as error:
            message = str(error)
        else:  # repr shows the error; the commands print it and exit with 2
            message = result if entry == "repr" else capsys.readouterr().err
            assert entry == "repr" or result == 2, (entry, message)
        assert name in message and str(root) in message, (entry, message)
        assert "delete" not in message or "retention" in message, (entry, message)


def test_a_store_path_with_glob_characters_works(small, clean_store, tmp_path):
    root = tmp_path / "we[ir]d*?dir"
    shutil.copytree(clean_store, root)
    for entry, call in _entry_points(small, root, tmp_path / "r.html").items():
        result = call()
        assert not isinstance(result, int) or result == 0, entry
        assert entry != "repr" or "notifications" in result
    assert toolkit.open_store(root).sql("SELECT count(*) AS n FROM notifications")["n"][0] > 0
