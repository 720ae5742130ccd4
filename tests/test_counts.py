"""Counts (`toolkit.delivery_counts`): against hand-counted frames, equal from an Activity and from
a store of the same window, on DuckDB and on Spark, and bad input refused before any work."""

from __future__ import annotations

import importlib.util
import shutil

import pandas as pd
import pytest

import toolkit
from tests.test_charts import T0, _detail, _job, _notification
from toolkit import counts
from toolkit.client import connect
from toolkit.errors import ParameterError, StoreError
from toolkit.frames import activity_frames


def _hand_activity():
    """Three notifications at 10:00 and one at 11:30: email delivered after one failed attempt,
    email bounced, sms pending, push skipped, and a digest step that is no delivery."""
    rows = [
        _notification(1, _job("e1", "email", "sendgrid", "completed", _detail("a", 1, "Failed"),
                              _detail("b", 3, "Success"))),
        _notification(2, _job("e2", "email", "sendgrid", "failed", _detail("c", 2, "Failed"))),
        _notification(3, _job("s1", "sms", "twilio", "pending", _detail("d", 4, "Pending")),
                      _job("g1", "digest", None, "completed", _detail("e", 5, "Success"))),
        _notification(4, _job("p1", "push", "fcm", "skipped")),
    ]  # fmt: skip
    rows[0]["subscriber"]["email"] = "Ann@Example.COM"
    rows[1]["subscriber"]["email"] = "bob@example.com"
    rows[3]["createdAt"] = (T0 + pd.Timedelta("90min")).isoformat()
    return activity_frames(rows)


def test_counts_by_hand():
    table = toolkit.delivery_counts(_hand_activity(), freq="1h", by=["channel", "domain"])
    assert list(table.columns) == ["bucket", "channel", "domain", *counts.COUNTS]
    rows = table.assign(bucket=table["bucket"].dt.strftime("%H:%M")).astype(object)
    rows = rows.where(table.notna(), None).to_dict("records")
    zero = dict.fromkeys(counts.COUNTS, 0)
    assert rows == [
        {**zero, "bucket": "10:00", "channel": "email", "domain": "example.com", "jobs": 2,
         "finished": 1, "failed": 1, "met_failure": 2, "delivered": 1},
        {**zero, "bucket": "10:00", "channel": "sms", "domain": None, "jobs": 1, "in_flight": 1},
        {**zero, "bucket": "11:00", "channel": "push", "domain": None, "jobs": 1, "not_sent": 1},
    ]  # fmt: skip
    assert table.attrs["freq"] == pd.Timedelta("1h") and table.attrs["engine"] == "duckdb"
    totals = toolkit.delivery_counts(_hand_activity(), freq="1D", by=[])
    assert totals[list(counts.COUNTS)].to_dict("records") == [
        {"jobs": 4, "finished": 1, "failed": 1, "in_flight": 1, "not_sent": 1,
         "met_failure": 2, "delivered": 1}
    ]  # fmt: skip


def test_counts_sum_to_the_delivery_jobs_rows(sandbox):
    activity = toolkit.read_activity(connect(sandbox=sandbox, progress=False), after="2d")
    jobs = toolkit.metrics.delivery_jobs(activity)
    table = toolkit.delivery_counts(activity, by=["channel", "provider_id"])
    by_outcome = jobs["outcome"].value_counts()
    for outcome in toolkit.metrics.OUTCOMES:
        assert table[outcome].sum() == by_outcome.get(outcome, 0)
    rates = toolkit.metrics.failure_rates(jobs, ["channel", "provider_id"])
    summed = table.groupby(["channel", "provider_id"], dropna=False)[["failed", "finished"]].sum()
    for row in rates.itertuples():
        assert summed.loc[(row.channel, row.provider_id), "failed"] == row.failed


def test_an_empty_window_is_a_zero_row_frame_with_every_column():
    activity = _hand_activity()
    table = toolkit.delivery_counts(activity, after=T0 + pd.Timedelta("2h"), before=T0 + pd.Timedelta("3h"))  # fmt: skip
    assert len(table) == 0
    assert list(table.columns) == ["bucket", *counts.DEFAULT_BY, *counts.COUNTS]
    assert str(table["bucket"].dtype) == "datetime64[ns, UTC]"
    assert all(str(table[c].dtype) == "int64" for c in counts.COUNTS)


def test_bad_input_is_refused():
    activity = _hand_activity()
    with pytest.raises(ParameterError, match="by"):
        toolkit.delivery_counts(activity, by=["channel", "colour"])
    with pytest.raises(ParameterError, match="freq"):
        toolkit.delivery_counts(activity, freq="soon")
    with pytest.raises(ParameterError, match="source"):
        toolkit.delivery_counts(activity.jobs)  # not delivery jobs
    with pytest.raises(ParameterError, match="an Activity"):
        toolkit.delivery_counts(activity.notifications.to_dict())
    with pytest.raises(ParameterError, match="engine"):
        toolkit.open_store("anywhere", engine="postgres")


def test_the_report_s_queries_by_hand():
    """What the report asks a source (`counts.summaries`, `failures`, `notification_statuses`,
    `around`), counted by hand on `_hand_activity`."""
    activity = _hand_activity()
    totals, channels = counts.summaries(activity, [(), "channel"])
    pd.testing.assert_frame_equal(totals, counts.summary(activity))  # one pass, the same frames
    pd.testing.assert_frame_equal(channels, counts.summary(activity, "channel"))
    row = totals.iloc[0]
    assert (row["delivery_jobs"], row["jobs"], row["failed"], row["p50"]) == (4, 2, 1, 3.0)
    assert (row["subscribers_reached"], row["in_flight_notifications"]) == (1, 1)  # e1; s1
    assert list(channels["channel"]) == ["email", "push", "sms"]
    failed = counts.failures(activity)
    assert failed.drop(columns=["first_seen", "last_seen"]).astype(object).where(failed.notna(), None).to_dict("records") == [
        {"channel": "email", "provider_id": "sendgrid", "error_code": None, "error_text": "",
         "failed": 1, "notifications": 1, "subscribers": 1, "transaction_ids": ["tx-2"]}
    ]  # fmt: skip
    assert failed.loc[0, "first_seen"] == T0 + pd.Timedelta(seconds=2)
    statuses = counts.notification_statuses(activity)
    assert dict(zip(statuses["status"], statuses["notifications"], strict=True)) == {
        "failed": 1, "pending": 1, "sent": 1, "skipped": 1
    }  # fmt: skip
    shown = pd.DataFrame([{"channel": "email", "provider_id": "sendgrid", "domain": None,
                           "low": T0 - pd.Timedelta("30min"), "high": T0 + pd.Timedelta("31min"),
                           "step": pd.Timedelta("5min"), "timed": True}])  # fmt: skip
    near = counts.around(activity, shown)
    assert near.to_dict("records") == [
        {"incident": 0, "bucket": T0, "finished": 1, "failed": 1, "median": 3.0}
    ]  # e1 and e2 at 10:00; not the sms, push or digest jobs
    assert near.attrs["latest"] == T0 + pd.Timedelta("90min")  # the skipped push, at its trigger
    nothing = counts.around(activity, shown.assign(domain="nowhere.example"))
    assert nothing.empty and nothing.attrs["latest"] == T0 + pd.Timedelta("90min")


def test_failures_name_the_first_three_notifications_of_a_group():
    ended = pd.to_datetime([f"2026-11-01T10:0{m}:00Z" for m in (4, 1, 3, 0, 2, 5)])
    jobs = pd.DataFrame({
        "job_id": list("abcdef"), "notification_id": ["n1", "n2", "n3", "n4", "n2", "n6"],
        "subscriber_id": ["u1"] * 6, "channel": ["sms"] * 6, "provider_id": ["p"] * 6,
        "error_code": ["E1"] * 6, "error_text": ["x"] * 6, "outcome": ["failed"] * 6,
        "started_at": ended, "ended_at": ended,
    })  # fmt: skip
    notifications = pd.DataFrame({"notification_id": ["n1", "n2", "n3", "n4", "n6"],
                                  "transaction_id": ["t1", "t2", "t3", None, "t6"]})  # fmt: skip
    table = counts.failures(jobs, notifications=notifications)
    # by their failed job's end: n4 (10:00, no transaction id), n2 (10:01), n3 (10:03), n1 (10:04)
    assert table.loc[0, "transaction_ids"] == ["t2", "t3", "t1"]
    assert table.loc[0, ["failed", "notifications", "subscribers"]].tolist() == [6, 5, 1]
    assert counts.failures(jobs).loc[0, "transaction_ids"] == []  # no notifications: no examples
    assert counts.failures(jobs, notifications=notifications, examples=1).loc[0, "transaction_ids"] == ["t2"]  # fmt: skip


def test_failures_find_examples_past_a_group_s_first_jobs_and_a_busier_group():
    """The examples are read a few first jobs at a time: a group whose first jobs repeat one
    notification, and a group whose failures all come after a busier group's, get theirs."""
    ended = pd.to_datetime([f"2026-11-01T10:{m:02d}:00Z" for m in [*range(10), 20, 21, 22]])
    named = ["a1"] * 6 + ["a2", "a3", "a4", "a5", "b1", "b2", "b3"]
    jobs = pd.DataFrame({
        "job_id": [f"j{i:02d}" for i in range(13)], "notification_id": named,
        "subscriber_id": ["u1"] * 13, "channel": ["sms"] * 10 + ["email"] * 3,
        "provider_id": ["p"] * 13, "error_code": ["E1"] * 13, "error_text": ["x"] * 13,
        "outcome": ["failed"] * 13, "started_at": ended, "ended_at": ended,
    })  # fmt: skip
    transactions = {"a1": "tA1", "a2": None, "a3": "tA3", "a4": "tA4", "a5": "tA5", "b1": "tB1", "b2": "tB2", "b3": "tB3"}  # fmt: skip
    notifications = pd.DataFrame({"notification_id": list(transactions), "transaction_id": list(transactions.values())})  # fmt: skip
    table = counts.failures(jobs, notifications=notifications, examples=2)
    assert table["transaction_ids"].tolist() == [["tA1", "tA3"], ["tB1", "tB2"]]
    assert table["notifications"].tolist() == [5, 3]
    shown = counts.failures(jobs, notifications=notifications, examples=2, top=1)
    assert shown["transaction_ids"].tolist() == [["tA1", "tA3"], []]
    assert shown["notifications"].tolist() == [5, pd.NA]  # distinct counts of the shown only
    for bad in ({"top": 0}, {"top": "3"}, {"examples": -1}, {"examples": 1.5}):
        with pytest.raises(ParameterError, match=next(iter(bad))):
            counts.failures(jobs, notifications=notifications, **bad)


@pytest.mark.parametrize("text", ["plain", "it's", "back\\slash", "'\\'", "", "ünïcode"])
def test_literals_read_the_same_on_every_engine(text, request):
    from toolkit import engines

    sql = f"SELECT {counts._literal(text)} AS v, {counts._literal(None)} AS missing"
    with engines.relations(None) as rel:
        assert rel.query(sql).to_pylist() == [{"v": text, "missing": None}]
    if shutil.which("java") and importlib.util.find_spec("pyspark"):  # Spark's escapes differ
        spark = request.getfixturevalue("spark")
        assert [tuple(row) for row in spark.sql(sql).collect()] == [(text, None)]


def test_a_store_counts_what_its_activity_counts(store_path):
    store = toolkit.open_store(store_path)
    window = {"after": "30h", "before": "2h"}
    from_store = toolkit.delivery_counts(store, freq="1h", **window)
    after, before = store._bounds(window["after"], window["before"])
    activity = store.read(after=after, before=before)
    from_frames = toolkit.delivery_counts(activity, freq="1h", after=after, before=before)
    pd.testing.assert_frame_equal(from_store, from_frames, check_like=False)
    assert from_store["jobs"].sum() > 1000


spark_missing = pytest.mark.skipif(
    shutil.which("java") is None, reason="Spark needs Java 17 (.ci/run installs it)"
)


@pytest.fixture(scope="module")
def spark():
    pyspark = pytest.importorskip("pyspark.sql", reason="the [spark] extra is not installed")
    session = (
        pyspark.SparkSession.builder.master("local[2]")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )
    yield session
    session.stop()


@spark_missing
def test_spark_counts_what_duckdb_counts(store_path, spark):
    duck = toolkit.open_store(store_path)
    on_spark = toolkit.open_store(store_path, engine=spark)
    for by in (None, ["workflow", "final_status"]):
        expected = toolkit.delivery_counts(duck, after="40h", freq="1h", by=by)
        got = toolkit.delivery_counts(on_spark, after="40h", freq="1h", by=by)
        assert got.attrs.pop("engine") == "spark" and expected.attrs.pop("engine") == "duckdb"
        pd.testing.assert_frame_equal(got, expected)
    with pytest.raises(StoreError, match="Spark cannot read"):
        toolkit.delivery_counts(toolkit.open_store(_emptied(store_path), engine=spark))


def _emptied(path):
    """A copy of the store at ``path`` without its jobs directory."""
    copy = path.parent / "no-jobs"
    if not copy.exists():
        shutil.copytree(path, copy)
        shutil.rmtree(copy / "jobs")
    return copy


@spark_missing
def test_a_report_on_spark_equals_the_report_on_duckdb(store_path, spark, tmp_path):
    from toolkit.report import store_report

    duck = store_report(toolkit.open_store(store_path), "1d", out=tmp_path / "duckdb.html")
    on_spark = store_report(toolkit.open_store(store_path, engine=spark), "1d", out=tmp_path / "spark.html")  # fmt: skip
    assert on_spark.headline == duck.headline and on_spark.previous == duck.previous
    pd.testing.assert_frame_equal(on_spark.findings, duck.findings)
    lines = duck.path.read_text().splitlines(), on_spark.path.read_text().splitlines()
    differ = [(a, b) for a, b in zip(*lines, strict=True) if a != b]
    assert len(differ) == 1 and "duckdb" in differ[0][0] and "spark" in differ[0][1]


@spark_missing
def test_the_commands_take_an_engine(store_path):
    import json
    import subprocess
    import sys

    def incidents(*engine):
        command = [sys.executable, "-m", "toolkit", "incidents", "--store", str(store_path), "--since", "2d", "--json", *engine]  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    found = incidents("--engine", "spark")
    assert found == incidents()
    refused = subprocess.run([sys.executable, "-m", "toolkit", "report", "--store", str(store_path), "--engine", "flink"], capture_output=True, text=True, timeout=120)  # fmt: skip
    assert refused.returncode == 2 and "invalid choice: 'flink'" in refused.stderr


def test_spark_without_pyspark_or_java_names_what_to_install(store_path, tmp_path):
    import subprocess
    import sys

    def open_on_spark(prelude, env=None):
        code = f"{prelude}\nimport toolkit\ntoolkit.open_store({str(store_path)!r}, engine='spark')"
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)  # fmt: skip

    no_pyspark = open_on_spark("import sys; sys.modules['pyspark'] = None")
    assert "pip install 'toolkit[spark]'" in no_pyspark.stderr
    assert "openjdk-17-jre-headless" in no_pyspark.stderr
    no_java = open_on_spark("", env={"PATH": str(tmp_path), "HOME": str(tmp_path)})
    assert "Java 17 for Spark" in no_java.stderr or "pip install 'toolkit[spark]'" in no_java.stderr


def test_an_empty_store_window_is_a_zero_row_frame(store_path):
    store = toolkit.open_store(store_path)
    table = toolkit.delivery_counts(store, after="30h", before="30h")
    assert len(table) == 0 and list(table.columns) == ["bucket", *counts.DEFAULT_BY, *counts.COUNTS]


@spark_missing
def test_a_stopped_spark_session_is_refused(store_path, spark):
    spark.stop()  # the module's last test: its session is not used again
    with pytest.raises(ParameterError, match="stopped SparkSession"):
        toolkit.open_store(store_path, engine=spark)


def _older(store_path, copy):
    """A copy of the store as an older version wrote it: jobs without workflow and facts."""
    import pyarrow.parquet as pq

    shutil.copytree(store_path, copy)
    for path in (copy / "jobs").glob("*/*.parquet"):
        pq.write_table(pq.read_table(path).drop_columns(["workflow", *counts.FACTS]), path)
    return copy


def test_a_store_written_by_an_older_version_is_read_as_it_is(store_path, tmp_path):
    old = _older(store_path, tmp_path / "old")
    expected = toolkit.delivery_counts(toolkit.open_store(store_path))
    pd.testing.assert_frame_equal(toolkit.delivery_counts(toolkit.open_store(old)), expected)
    assert "workflow" not in toolkit.open_store(old).read().jobs.columns


def test_the_next_sync_upgrades_an_older_store_and_says_so(sandbox, store_path, tmp_path):
    import pyarrow.parquet as pq

    from toolkit.store import layout

    old = _older(store_path, tmp_path / "old")
    before = toolkit.open_store(old).read()
    settled = toolkit.open_store(old).window[1] - pd.Timedelta("2h")  # not read again by sync
    expected = toolkit.delivery_counts(toolkit.open_store(store_path), before=settled)
    result = toolkit.sync(connect(sandbox=sandbox, progress=False), old)
    days = len(layout.days_held(old))
    assert result.upgraded == days > 0
    assert str(result).splitlines()[-1] == (
        f"{old}: upgraded {days} day(s) written by an older version to today's layout"
        " (jobs keep their workflow and delivery facts; rows unchanged)"
    )
    held = pq.read_table(sorted((old / "jobs").glob("*/*.parquet"))[0])
    assert {"workflow", *counts.FACTS} <= set(held.column_names)
    pd.testing.assert_frame_equal(
        toolkit.delivery_counts(toolkit.open_store(old), before=settled), expected
    )
    after = toolkit.open_store(old).read(before=settled)
    assert (
        after.notifications["notification_id"].isin(before.notifications["notification_id"]).all()
    )
    assert toolkit.sync(connect(sandbox=sandbox, progress=False), old).upgraded == 0


def test_stored_facts_are_the_facts_the_three_tables_give(store_path, tmp_path):
    old = _older(store_path, tmp_path / "old")
    for by in (None, ["workflow", "final_status"]):
        stored = toolkit.delivery_counts(toolkit.open_store(store_path), by=by)
        computed = toolkit.delivery_counts(toolkit.open_store(old), by=by)
        pd.testing.assert_frame_equal(stored, computed)
    rows = toolkit.metrics.delivery_jobs(toolkit.open_store(store_path))
    joined = toolkit.metrics.delivery_jobs(toolkit.open_store(old))
    pd.testing.assert_frame_equal(rows, joined)
