"""Stores that must not lose data (issue 21): a sync during an outage, a watermark ahead of the
service; damaged stores get the store's error naming the file and what to do."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
import requests

import toolkit
from tests.stub_service import Stub, send
from toolkit.client import Client
from toolkit.errors import ResponseError
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
