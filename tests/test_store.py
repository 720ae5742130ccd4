"""The activity store against a real sandbox: reads equal direct reads, syncs are incremental, the
layout is read by DuckDB, Dask and Polars, and bad input is refused with nothing half-written."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

import toolkit
from tests.conftest import wait_for
from toolkit.client import connect
from toolkit.errors import ParameterError
from toolkit.incidents import find_incidents
from toolkit.metrics import (
    COUNT_COLUMNS,
    REQUIRED_COLUMNS,
    delivery_jobs,
    detail_counts,
    failure_rates,
)
from toolkit.report import store_report
from toolkit.report.bundle import unpack
from toolkit.store import StoreError, StoreLockedError, layout
from toolkit.store.state import writer_lock


@pytest.fixture(scope="module")
def client(sandbox):
    return connect(sandbox=sandbox, progress=False)


@pytest.fixture(scope="module")
def synced(client, tmp_path_factory):
    """A store of the shared sandbox's last three days."""
    path = tmp_path_factory.mktemp("store") / "activity"
    result = toolkit.sync(client, path, since="3d")
    return path, result


def _requests(sandbox):
    return sandbox.faults.stats["requests"]


def _equal(got, expected):
    for name, mine, theirs in zip(got._fields, got, expected, strict=True):
        pd.testing.assert_frame_equal(mine, theirs, obj=name)


def _files(path):
    return sorted(str(p.relative_to(path)) for p in path.rglob("*") if p.is_file())


def test_store_read_equals_a_direct_read(sandbox, client, synced):
    path, result = synced
    store = toolkit.open_store(path)
    after, watermark = store.window
    assert (after, watermark) == (result.after, result.before)
    assert result.added == len(store.read().notifications) > 1000 and result.days == 4
    _equal(store.read(), toolkit.read_activity(client, after=after, before=watermark))
    # a part of the window, with filters, and the newest few
    start, end = watermark - pd.Timedelta("30h"), watermark - pd.Timedelta("2h")
    for filters in ({}, {"channels": ["sms", "push"]}, {"severity": "high"}, {"limit": 7}):
        direct = toolkit.read_activity(client, after=start, before=end, **filters)
        _equal(store.read(after=start, before=end, **filters), direct)
    assert pd.Timestamp(store.read(after="6h").attrs["after"]) == watermark - pd.Timedelta("6h")
    text = repr(store)
    assert "notifications" in text and "MB" in text and "Acme/Development" in text
    assert sandbox.api_key not in text and sandbox.api_key not in (path / "state.json").read_text()


def test_metrics_from_only_the_required_columns(synced):
    store = toolkit.open_store(synced[0])
    full, lean = store.read(), store.read_for_metrics()
    for name, needed in REQUIRED_COLUMNS.items():
        assert set(getattr(lean, name).columns) == set(needed)
    assert len(lean.execution_details) < len(full.execution_details)
    rates = failure_rates(delivery_jobs(full), ["channel", "provider_id"])
    pd.testing.assert_frame_equal(
        failure_rates(delivery_jobs(lean), ["channel", "provider_id"]), rates
    )
    pd.testing.assert_frame_equal(
        delivery_jobs(lean).reset_index(drop=True), delivery_jobs(full).reset_index(drop=True)
    )
    found = toolkit.find_incidents(full)
    assert len(found) > 0  # the planted incidents of the last days
    pd.testing.assert_frame_equal(toolkit.find_incidents(lean), found)


def test_detail_counts_in_duckdb_equal_counting_the_frames(synced):
    store = toolkit.open_store(synced[0])
    for window, filters, freq in ((("3d", None), {}, "1h"), (("30h", "2h"), {"channels": "sms"}, "15min")):  # fmt: skip
        details = store.read(*window, **filters).execution_details
        counted = store.detail_counts(*window, freq=freq, **filters)
        pd.testing.assert_frame_equal(counted, detail_counts(details, freq))
        assert counted.attrs["freq"] == pd.Timedelta(freq) and counted["count"].sum() == len(
            details
        )
    none = store.detail_counts(transaction_id="no-such-transaction")
    assert none.empty and none.dtypes.astype(str).to_dict() == {k: str(pd.Series(dtype=v).dtype) for k, v in COUNT_COLUMNS.items()}  # fmt: skip
    with pytest.raises(ParameterError, match="freq='soon'"):
        store.detail_counts(freq="soon")


def test_a_store_report_equals_the_report_of_every_row(synced, tmp_path):
    """`toolkit.report.store_report` counts every figure in the store's engine: the same bytes as
    the report of the whole frames read from the store."""
    from toolkit.report import report_window

    store = toolkit.open_store(synced[0])
    source = {"base_url": store._state.service, "environment": store._state.environment,
              "store": str(store.path), "engine": "duckdb"}  # fmt: skip
    for since, filters in (("1d", {"channels": ["email", "sms"]}), ("36h", {})):
        lean = store_report(store, since, out=tmp_path / "lean.html", **filters)
        full = report_window(
            lambda after, before: store.read(after, before, **filters),  # noqa: B023
            now=store.watermark, since=since, out=tmp_path / "full.html", source=source,
            filters=filters,
        )  # fmt: skip
        assert lean.path.read_bytes() == full.path.read_bytes()
        assert lean.previous is not None
    empty = store_report(store, "1d", out=tmp_path / "empty.html", transaction_id="no-such-transaction")  # fmt: skip
    assert empty.headline["delivery_jobs"] == 0
    assert "no data" in unpack(re.search(r'data-plot="chart-status-by-channel-plot">(.*?)</script>', empty.path.read_text()).group(1))  # fmt: skip


def test_second_sync_is_incremental_and_upserts(fresh_sandbox, tmp_path):
    client = connect(sandbox=fresh_sandbox, progress=False)
    path = tmp_path / "s"
    before = _requests(fresh_sandbox)
    first = toolkit.sync(client, path, since="14d", lag="10m")
    first_requests = _requests(fresh_sandbox) - before
    fresh_sandbox.start_traffic(rate=50)
    try:
        store = toolkit.open_store(path)
        wait_for(lambda: len(client.list_activity(after=store.watermark)) >= 20)
    finally:
        fresh_sandbox.stop_traffic()
    before = _requests(fresh_sandbox)
    second = toolkit.sync(client, path, since="14d", lag="10m")
    second_requests = _requests(fresh_sandbox) - before
    assert first_requests >= 10 and second_requests <= 6
    assert second.added >= 20 and second.after == first.before - pd.Timedelta("10m")
    assert second.before > first.before
    store = toolkit.open_store(path)
    assert store.window == (first.after, second.before)
    direct = toolkit.read_activity(client, after=first.after, before=second.before)
    _equal(store.read(), direct)


def test_other_engines_read_the_layout(synced):
    import dask.dataframe as dd
    import duckdb
    import polars as pl

    path = synced[0]
    store = toolkit.open_store(path)
    full = store.read()
    for table, frame in zip(layout.TABLES, full, strict=True):
        folder = str(path / table)
        assert len(dd.read_parquet(folder)) == len(frame), table
        assert pl.scan_parquet(f"{folder}/**/*.parquet", hive_partitioning=True).select(
            pl.len()
        ).collect().item() == len(frame)
        sql = f"SELECT count(*) FROM read_parquet('{folder}/*/*.parquet', hive_partitioning=1)"
        assert duckdb.sql(sql).fetchall() == [(len(frame),)]
        assert store.sql(f"SELECT count(*) AS n FROM {table}")["n"][0] == len(frame)
    by_day = store.sql(
        "SELECT created_date, count(*) AS n FROM notifications GROUP BY 1 ORDER BY 1"
    )
    days = full.notifications["created_at"].dt.strftime("%Y-%m-%d").value_counts().sort_index()
    assert by_day["n"].tolist() == days.tolist()
    assert by_day["created_date"].tolist() == days.index.tolist()
    schema = pq.read_schema(next((path / "jobs").glob("*/*.parquet")))
    assert str(schema.field("status").type) == "dictionary<values=string, indices=int32, ordered=0>"
    notifications = pq.read_schema(next((path / "notifications").glob("*/*.parquet")))
    assert str(notifications.field("channels").type.value_type) == "string"


def test_refuses_paths_that_cannot_be_stores(client, tmp_path):
    a_file = tmp_path / "file"
    a_file.write_text("x")
    with pytest.raises(ParameterError, match="a directory"):
        toolkit.sync(client, a_file, since="1d")
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    with pytest.raises(ParameterError, match="no state.json"):
        toolkit.sync(client, foreign, since="1d")
    assert _files(foreign) == ["notes.txt"]
    with pytest.raises(ParameterError, match="is a file"):
        toolkit.sync(client, a_file / "store", since="1d")
    locked = tmp_path / "locked"
    locked.mkdir()
    os.chmod(locked, 0o500)
    try:
        if not os.access(locked, os.W_OK):  # permissions hold (not when running as root)
            with pytest.raises(ParameterError, match="write to"):
                toolkit.sync(client, locked / "store", since="1d")
    finally:
        os.chmod(locked, 0o700)
    with pytest.raises(ParameterError, match="state.json"):
        toolkit.open_store(tmp_path / "nothing")


def test_refuses_another_source_other_filters_and_retention(sandbox, synced, tmp_path):
    path = synced[0]
    files = _files(path)
    other = connect(sandbox=sandbox, environment="Acme/Production", progress=False)
    with pytest.raises(ParameterError, match="allow_source_change"):
        toolkit.sync(other, path, since="3d")
    client = connect(sandbox=sandbox, progress=False)
    with pytest.raises(ParameterError, match="the store's filters"):
        toolkit.sync(client, path, since="3d", channels="sms")
    with pytest.raises(ParameterError, match="chanels"):
        toolkit.sync(client, path, since="3d", chanels="sms")
    with pytest.raises(ParameterError, match="lag"):
        toolkit.sync(client, path, since="3d", lag="soon")
    assert _files(path) == files
    free = connect(sandbox=sandbox, environment="Globex/Development", progress=False)
    with pytest.raises(ParameterError, match="--since") as raised:
        toolkit.sync(free, tmp_path / "free", since="3d")
    assert "retention" in str(raised.value)
    assert not (tmp_path / "free").exists()


def test_a_second_sync_at_once_is_refused(client, synced):
    path = synced[0]
    files = _files(path)
    with writer_lock(path), pytest.raises(StoreLockedError, match="another sync"):
        toolkit.sync(client, path, since="3d")
    assert _files(path) == files


def test_damaged_file_is_named_and_repaired_by_a_sync(client, synced, tmp_path):
    import shutil

    path = tmp_path / "copy"
    shutil.copytree(synced[0], path)
    expected = toolkit.open_store(path).read()
    day = sorted(layout.days_held(path))[1]
    damaged = layout.day_path(path, "jobs", day)
    damaged.write_bytes(damaged.read_bytes()[:100])  # truncated
    with pytest.raises(StoreError, match=f"{damaged}.*re-read {day}"):
        toolkit.open_store(path).read()
    damaged.unlink()
    state = json.loads((path / "state.json").read_text())
    result = toolkit.sync(client, path, since="3d", lag="0s")
    assert result.days == 2  # the repaired day and the watermark's
    store = toolkit.open_store(path)
    assert store.window == (pd.Timestamp(expected.attrs["after"]), pd.Timestamp(result.before))
    assert json.loads((path / "state.json").read_text())["after"] == state["after"]
    _equal(store.read(before=expected.attrs["before"]), expected)


def test_sync_command(sandbox, tmp_path, monkeypatch, capsys):
    from toolkit.__main__ import main

    monkeypatch.setenv("SVC_BASE_URL", sandbox.url)
    monkeypatch.setenv("SVC_API_KEY", sandbox.api_key)
    assert main(["sync", "--store", str(tmp_path / "s"), "--since", "1d", "--lag", "5m"]) == 0
    out, err = capsys.readouterr()
    assert "added" in out and "day(s) written" in out and sandbox.api_key not in out + err
    assert toolkit.open_store(tmp_path / "s").watermark is not None
    assert main(["sync", "--store", str(tmp_path / "s"), "--lag", "soon"]) == 2
    assert "lag='soon' is not allowed" in capsys.readouterr().err
    assert main(["sync"]) == 2


def test_report_from_a_store(synced, tmp_path, capsys):
    from toolkit.__main__ import main

    path = synced[0]
    out = tmp_path / "report.html"
    assert main(["report", "--store", str(path), "--since", "1d", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"wrote {out}" in printed and "findings:" in printed
    html = out.read_text()
    assert str(path) in html  # the provenance names the store
    # the previous day is in the store; a previous period it does not hold is reported missing
    report = store_report(toolkit.open_store(path), "2d", out=tmp_path / "two.html")
    assert report.previous is None and "not available" in report.provenance["previous"]
    assert main(["report", "--store", str(tmp_path / "none"), "--out", str(out)]) == 2


def test_incidents_from_a_store(synced, capsys):
    """``incidents --store`` finds, from the lean period a report reads, what `find_incidents`
    finds in every row of the window."""
    from toolkit.__main__ import main

    path = synced[0]
    assert main(["incidents", "--store", str(path), "--since", "2d", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    expected = find_incidents(toolkit.open_store(path).read(after="2d"))
    assert printed == json.loads(expected.to_json(orient="records", date_format="iso"))
    assert printed  # the shared sandbox's planted incidents
    assert main(["incidents", "--store", str(path), "--since", "4d"]) == 2
    assert "within the store's window" in capsys.readouterr().err


def test_the_report_program_over_a_store_writes_the_library_s_report(synced, tmp_path):
    """``python -m toolkit report --store`` writes `toolkit.report.store_report`'s report,
    byte for byte."""
    path, program, library = synced[0], tmp_path / "program.html", tmp_path / "library.html"
    command = [sys.executable, "-m", "toolkit", "report", "--store", str(path), "--since", "1d"]
    done = subprocess.run([*command, "--out", str(program)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    store_report(toolkit.open_store(path), "1d", out=library)
    assert program.read_bytes() == library.read_bytes()


def test_the_store_imports_neither_the_report_nor_the_incidents():
    """The store only stores: the report and the incident finder ask it for relations."""
    code = (
        "import sys, toolkit.store, toolkit.store.cli, toolkit.store.reader;"
        " print(sorted(m for m in sys.modules if m.startswith(('toolkit.report', 'toolkit.incidents'))))"
    )  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
    for module in (Path(toolkit.__file__).parent / "store").glob("*.py"):
        assert not re.search(r"(from|import) +toolkit\.(report|incidents)", module.read_text()), (
            module
        )
