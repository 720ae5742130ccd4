"""Quillbrook's blind benchmark traffic (`benchmarks/quillbrook.py`): frames of the schema,
deterministic draws, planted incidents on top of the same quiet traffic."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from toolkit import schemas

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from quillbrook import make  # noqa: E402

NOW = pd.Timestamp("2026-04-13T08:00Z")
DAYS = 28


@pytest.fixture(scope="module")
def quiet():
    return make(1, NOW, DAYS)


@pytest.fixture(scope="module")
def planted():
    return make(1, NOW, DAYS, incidents=True)


@pytest.mark.parametrize("draw", ["quiet", "planted"])
def test_frames_have_the_schema_columns_and_dtypes(draw, request):
    traffic = request.getfixturevalue(draw)
    for frame, spec in ((traffic.notifications, schemas.NOTIFICATIONS), (traffic.jobs, schemas.JOBS),
                        (traffic.execution_details, schemas.EXECUTION_DETAILS)):  # fmt: skip
        assert list(frame.columns) == schemas.names(spec)
        for column in spec:
            dtype = frame[column.name].dtype
            if column.dtype == schemas.CATEGORY:
                assert isinstance(dtype, pd.CategoricalDtype), column.name
                assert list(dtype.categories) == list(column.categories), column.name
            else:
                assert str(dtype) == column.dtype, (column.name, dtype)
        assert len(frame)


def test_frames_are_linked_and_consistent(quiet):
    notes, jobs, details = quiet.notifications, quiet.jobs, quiet.execution_details
    assert notes["notification_id"].is_unique and jobs["job_id"].is_unique
    assert details["execution_detail_id"].is_unique
    assert notes["created_at"].is_monotonic_increasing
    assert jobs["notification_id"].isin(notes["notification_id"]).all()
    assert details["job_id"].isin(jobs["job_id"]).all()
    assert (details["created_at"] < NOW).all()
    counts = details.groupby("job_id").size().reindex(jobs["job_id"], fill_value=0)
    assert (counts.to_numpy() == jobs["execution_count"].to_numpy()).all()
    per_note = jobs.groupby("notification_id").size().reindex(notes["notification_id"])
    assert (per_note.to_numpy() == notes["job_count"].to_numpy()).all()
    failed = jobs.loc[jobs["final_status"] == "failed", "notification_id"].unique()
    assert (notes.set_index("notification_id").loc[failed, "status"] == "failed").all()
    # a job's error code is the one its last Failed detail's raw gives
    from toolkit.error_codes import error_code

    fails = details[details["status"] == "Failed"]
    assert fails["raw"].map(error_code).astype("string").equals(fails["error_code"])
    assert fails["error_code"].notna().mean() > 0.9


def test_the_same_seed_draws_the_same_traffic(quiet):
    again = make(1, NOW, DAYS)
    for name in ("notifications", "jobs", "execution_details"):
        one, two = getattr(quiet, name), getattr(again, name)
        assert list(one.columns) == list(two.columns) and len(one) == len(two)
        for column in one.columns:
            if one[column].dtype == object:
                assert one[column].tolist() == two[column].tolist(), column
            else:
                assert one[column].equals(two[column]), column
    other = make(2, NOW, 3)
    assert len(other.notifications) != len(quiet.notifications)


def test_incidents_keep_the_quiet_notifications_they_did_not_hit(quiet, planted):
    kinds = {incident["kind"] for incident in planted.planted}
    assert len(kinds) == 9 and not quiet.planted
    drop = next(i for i in planted.planted if i["kind"] == "volume_drop")
    spike = next(i for i in planted.planted if i["kind"] == "volume_spike")
    q = quiet.notifications.set_index("notification_id")
    p = planted.notifications.set_index("notification_id")
    stopped = (q["workflow_identifier"] == drop["workflow"]) & q["created_at"].between(
        drop["start"], drop["end"], inclusive="left"
    )
    assert stopped.sum() == len(drop["hits"]) > 0
    kept = q[~stopped]
    assert kept.index.isin(p.index).all()
    columns = ["created_at", "workflow_identifier", "subscriber_id", "payload"]
    pd.testing.assert_frame_equal(p.loc[kept.index, columns], kept[columns])
    assert len(p) == len(kept) + len(spike["hits"])
    # a quiet notification no incident hit keeps its jobs' outcomes too
    hit = np.unique(np.concatenate([i["hits"].asi8 for i in planted.planted]))
    untouched = kept.index[~kept["created_at"].astype("int64").isin(hit)]
    qs = q.loc[untouched, "status"].astype(str)
    ps = p.loc[untouched, "status"].astype(str)
    assert (qs == ps).mean() > 0.999


def test_planted_hits_fall_inside_their_windows(planted):
    for incident in planted.planted:
        hits = incident["hits"]
        assert isinstance(hits, pd.DatetimeIndex) and str(hits.tz) == "UTC", incident["kind"]
        assert len(hits) > 0 and hits.is_monotonic_increasing, incident["kind"]
        assert (hits >= incident["start"]).all() and (hits < incident["end"]).all(), incident
        assert incident["end"] <= NOW and incident["start"] >= NOW - pd.Timedelta(days=25)
        assert incident["optional"] == (incident["kind"] == "traffic_shift")
    windows = sorted(
        (i["start"], i["end"]) for i in planted.planted if i["kind"] != "traffic_shift"
    )
    assert all(a[1] <= b[0] for a, b in zip(windows, windows[1:], strict=False))
