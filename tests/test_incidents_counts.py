"""find_incidents reads counts computed by the source's engine (`toolkit.counts.scan_counts`): an
Activity and a store of the same window find the same incidents, DuckDB and Spark too; the slow
count against hand-counted jobs; a store window without rows."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import toolkit
from tests.test_charts import T0, _detail, _job, _notification
from tests.test_counts import spark, spark_missing  # noqa: F401 (the Spark session fixture)
from toolkit import counts
from toolkit.frames import activity_frames
from toolkit.incidents import COLUMNS, find_incidents


def test_a_store_finds_what_its_activity_finds(store_path):
    store = toolkit.open_store(store_path)
    after, before = store._bounds("40h", None)
    from_store = find_incidents(store, after="40h")
    from_frames = find_incidents(store.read(after=after, before=before))
    assert len(from_store) > 0  # the shared sandbox's planted incidents
    pd.testing.assert_frame_equal(from_store, from_frames)
    assert from_store.attrs["checked"] == from_frames.attrs["checked"]


@spark_missing
def test_spark_finds_what_duckdb_finds(store_path, spark):  # noqa: F811 (the fixture)
    on_duckdb = find_incidents(toolkit.open_store(store_path), after="40h")
    on_spark = find_incidents(toolkit.open_store(store_path, engine=spark), after="40h")
    assert len(on_duckdb) > 0
    pd.testing.assert_frame_equal(on_spark, on_duckdb)


def _timed_jobs():
    """Six email jobs of one provider sent 10, 20, 30, 40, 50 and 300 s after their first
    execution detail, one that failed twice (never sent) and one pending."""
    rows = []
    for n, seconds in enumerate([10, 20, 30, 40, 50, 300], start=1):
        rows.append(_notification(n, _job(f"e{n}", "email", "sendgrid", "completed",
                                          _detail(f"q{n}", 60 * n, "Pending"),
                                          _detail(f"s{n}", 60 * n + seconds, "Success"))))  # fmt: skip
    rows.append(_notification(7, _job("e7", "email", "sendgrid", "failed",
                                      _detail("f1", 30, "Failed"), _detail("f2", 90, "Failed"))))  # fmt: skip
    rows.append(_notification(8, _job("e8", "email", "sendgrid", "pending",
                                      _detail("p1", 40, "Pending"))))  # fmt: skip
    return activity_frames(rows)


def test_the_slow_count_against_hand_counted_jobs():
    activity = _timed_jobs()
    reference = counts.slow_thresholds(activity)
    sent = [10, 20, 30, 40, 50, 300]
    (threshold,) = reference["slow_above"]  # the pair's (its one workflow sent too few)
    assert threshold == pytest.approx(np.percentile(sent, 90))  # 175 s: one job above it
    grid = (T0, pd.Timedelta("1h"), 2)
    table, used = counts.scan_counts(activity, grid=grid, slow_above=reference)
    assert table[["tried", "met_failure", "sent", "slow"]].sum().to_dict() == {
        "tried": 7,  # six sent, one failed (the pending one neither finished nor failed)
        "met_failure": 1,
        "sent": 6,
        "slow": 1,
    }
    assert used.to_dict("records") == [
        {"channel": "email", "provider_id": "sendgrid", "workflow": None, "slow_above": threshold}
    ]
    stricter = reference.assign(slow_above=35.0)  # a baseline's threshold: three are slower
    table, _ = counts.scan_counts(activity, grid=grid, slow_above=stricter)
    assert table["slow"].sum() == 3 and set(table["bucket"]) == {0}


def _sent(n: int, workflow: str, seconds: float) -> dict:
    """Notification ``n`` of ``workflow``: one email job sent ``seconds`` after its first
    execution detail."""
    record = _notification(n, _job(f"j{n}", "email", "sendgrid", "completed",
                                   _detail(f"q{n}", n, "Pending"),
                                   _detail(f"s{n}", n + seconds, "Success")))  # fmt: skip
    record["template"] = {"_id": workflow, "name": workflow, "triggers": [{"identifier": workflow}]}
    return record


def test_a_workflow_of_enough_sends_is_slow_against_its_own_sends():
    # 150 statements taking 300-449 s (a batch's queue), 150 alerts taking 1-150 s, 20 resets
    # taking 10-200 s: the statements and the alerts have thresholds of their own, the resets
    # (fewer than WORKFLOW_SENDS) the pair's; a tenth of each own workflow's sends is slow
    sends = {"statement": 300.0 + np.arange(150), "alert": 1.0 + np.arange(150),
             "reset": 10.0 * (1 + np.arange(20))}  # fmt: skip
    records, n = [], 0
    for workflow, seconds in sends.items():
        for value in seconds:
            n += 1
            records.append(_sent(n, workflow, float(value)))
    activity = activity_frames(records)
    thresholds = counts.slow_thresholds(activity)
    every = np.concatenate(list(sends.values()))
    expected = {None: np.percentile(every, 90), "statement": np.percentile(sends["statement"], 90),
                "alert": np.percentile(sends["alert"], 90)}  # fmt: skip
    assert dict(zip(thresholds["workflow"], thresholds["slow_above"], strict=True)) == pytest.approx(expected)  # fmt: skip
    above = {name: expected.get(name, expected[None]) for name in sends}
    slow = sum(int((seconds > above[name]).sum()) for name, seconds in sends.items())
    assert slow == 15 + 15 + 0  # the resets, all under the pair's threshold (the statements')
    grid = (T0, pd.Timedelta("1h"), 2)
    table, used = counts.scan_counts(activity, grid=grid, slow_above=thresholds)
    assert table["slow"].sum() == slow
    pd.testing.assert_frame_equal(used, thresholds)
    # the pair's threshold only: every send above it slow
    pair = thresholds[thresholds["workflow"].isna()].reset_index(drop=True)
    same = counts.scan_counts(activity, grid=grid, slow_above=pair)[0]
    assert same["slow"].sum() == int((every > expected[None]).sum())
    # each job's own threshold in the rows fetched
    rows = counts.scanned_job_rows(activity, slow_above=thresholds, where=[{}]).to_pandas()
    assert int(rows["slow"].sum()) == slow


def test_a_store_window_without_rows_is_an_empty_frame_with_a_reason(store_path):
    from toolkit.store import open_store

    store = open_store(store_path)
    created = store.read().notifications["created_at"].sort_values()
    gap = created.diff().gt(pd.Timedelta("3s")).to_numpy().nonzero()[0][0]  # a quiet moment
    after = created.iloc[gap - 1] + pd.Timedelta("1s")
    found = find_incidents(store, after=after, before=after + pd.Timedelta("1s"))
    assert found.empty and list(found.columns) == list(COLUMNS)
    assert found.attrs["reason"] == "no delivery jobs in the activity"


def test_the_command_reads_the_store_with_its_history_as_baseline(store_path, capsys):
    from toolkit.__main__ import main

    assert main(["incidents", "--store", str(store_path), "--since", "40h", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    store = toolkit.open_store(store_path)
    expected = find_incidents(store, after="40h", baseline=store)
    assert printed == json.loads(expected.to_json(orient="records", date_format="iso"))
    assert printed  # the shared sandbox's planted incidents
