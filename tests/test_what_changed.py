"""`toolkit.what_changed` on counts frames built by hand, then on the sandbox's planted incidents."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import toolkit
from toolkit.errors import ParameterError

DAY = pd.Timestamp("2026-11-01", tz="UTC")
PERIOD = (DAY + pd.Timedelta("1D"), DAY + pd.Timedelta("2D"))
VALUES = {
    "provider_id": [f"p{i}" for i in range(6)],
    "workflow": [f"w{i}" for i in range(8)],
    "domain": [f"d{i}.example" for i in range(5)],
    "country_code": ["+1", "+44", "+55", "+91"],
}


def counts(change=None, *, seed: int = 0, jobs: float = 400_000.0) -> pd.DataFrame:
    """A counts frame of a baseline day and a period day over four dimensions: skewed volumes,
    failure rates that vary by value (~2%), Poisson and binomial noise. ``change(leaves)`` returns
    the period's ``(volume, rate)`` from ``leaves`` (a frame with the dimensions, ``volume`` and
    ``rate``)."""
    rng = np.random.default_rng(seed)
    grid = pd.MultiIndex.from_product(VALUES.values(), names=list(VALUES)).to_frame(index=False)
    weight, rate = np.ones(len(grid)), np.full(len(grid), 0.02)
    for name, values in VALUES.items():
        position = grid[name].map({v: i for i, v in enumerate(values)}).to_numpy()
        weight *= rng.permutation(1 / np.arange(1, len(values) + 1) ** 1.1)[position]
        rate *= rng.lognormal(0, 0.4, len(values))[position]
    leaves = grid.assign(volume=jobs * weight / weight.sum(), rate=np.clip(rate, 0.001, 0.3))
    frames = []
    for bucket, (volume, rates) in (
        (DAY, (leaves["volume"], leaves["rate"])),
        (PERIOD[0], change(leaves.copy()) if change else (leaves["volume"], leaves["rate"])),
    ):
        n = rng.poisson(np.asarray(volume, dtype=float))
        frames.append(grid.assign(bucket=bucket, jobs=n, failed=rng.binomial(n, np.asarray(rates))))
    frame = pd.concat(frames, ignore_index=True)
    frame = frame[frame["jobs"] > 0].astype(dict.fromkeys(VALUES, "string"))
    return frame[["bucket", *VALUES, "jobs", "failed"]].reset_index(drop=True)


def broken(where: dict[str, str], share: float = 0.6):
    """A change: ``share`` of the jobs of the slice ``where`` that would have succeeded fail."""

    def change(leaves):
        inside = np.logical_and.reduce([leaves[k].eq(v) for k, v in where.items()])
        rate = leaves["rate"].where(~inside, leaves["rate"] + (1 - leaves["rate"]) * share)
        return leaves["volume"], rate

    return change


def causes(frame, **options) -> list[dict]:
    return list(toolkit.what_changed(frame, period=PERIOD, **options)["cause"])


@pytest.mark.parametrize(
    "where",
    [
        {"provider_id": "p1"},
        {"provider_id": "p2", "country_code": "+55"},
        {"provider_id": "p0", "workflow": "w3", "domain": "d1.example"},
    ],
)
def test_a_cause_at_one_two_or_three_dimensions_is_named_exactly(where):
    assert causes(counts(broken(where))) == [where]


def test_two_independent_causes_are_two_rows_largest_first():
    first, second = {"provider_id": "p0"}, {"workflow": "w5", "domain": "d2.example"}

    def change(leaves):
        _, rate = broken(first)(leaves)
        return broken(second, share=0.3)(leaves.assign(rate=rate))

    result = toolkit.what_changed(counts(change), period=PERIOD)
    assert list(result["cause"]) == [first, second]
    assert result["excess"].is_monotonic_decreasing
    assert result["share_of_change"].sum() == pytest.approx(1.0, abs=0.1)


def test_the_ripple_on_an_ancestor_does_not_name_it():
    # p0 & +44 holds most of p0's jobs: p0 moved nearly as much, but its other slices did not
    frame = counts(broken({"provider_id": "p0", "country_code": "+44"}))
    both = frame.groupby(["provider_id", "country_code"])["jobs"].sum()
    assert both["p0"]["+44"] > 0.5 * both["p0"].sum()
    assert causes(frame) == [{"provider_id": "p0", "country_code": "+44"}]


def test_a_quiet_period_gives_no_row_with_every_column_and_a_reason():
    result = toolkit.what_changed(counts(seed=3), period=PERIOD)
    assert result.empty
    assert list(result.columns) == [
        "cause", *VALUES, "jobs", "failed", "failure_rate", "baseline_jobs", "baseline_failed",
        "baseline_rate", "excess", "share_of_change", "summary",
    ]  # fmt: skip
    assert "beyond noise" in result.attrs["reason"]


def test_a_change_shared_by_every_slice_names_no_slice():
    frame = counts(lambda leaves: (leaves["volume"], leaves["rate"] * 2.5))
    result = toolkit.what_changed(frame, period=PERIOD)
    assert result.empty and "every slice" in result.attrs["reason"]


def test_the_row_holds_the_numbers_of_its_slice():
    frame = counts(broken({"provider_id": "p1"}))
    row = toolkit.what_changed(frame, period=PERIOD).iloc[0]
    mine = frame[frame["provider_id"].eq("p1")]
    now, then = mine[mine["bucket"].eq(PERIOD[0])], mine[mine["bucket"].eq(DAY)]
    assert (row["jobs"], row["failed"]) == (now["jobs"].sum(), now["failed"].sum())
    assert (row["baseline_jobs"], row["baseline_failed"]) == (then["jobs"].sum(), then["failed"].sum())  # fmt: skip
    assert row["failure_rate"] == pytest.approx(row["failed"] / row["jobs"])
    naive = row["failed"] - row["jobs"] * row["baseline_rate"]  # the mix aside
    assert row["excess"] == pytest.approx(naive, rel=0.05)
    assert row["provider_id"] == "p1" and pd.isna(row["workflow"])
    assert row["summary"].startswith("provider_id=p1: ") and "more failures than expected" in row["summary"]  # fmt: skip


def test_volume_names_a_drop_and_a_spike_apart_from_a_change_everyone_shares():
    def change(leaves):
        volume = leaves["volume"] * 1.3  # the hour of day: every slice
        volume = volume.where(~leaves["workflow"].eq("w2"), volume * 0.2)
        spike = leaves["provider_id"].eq("p3") & leaves["domain"].eq("d0.example")
        return volume.where(~spike, volume * 2.5), leaves["rate"]

    result = toolkit.what_changed(counts(change), period=PERIOD, measure="volume")
    assert {frozenset(c.items()) for c in result["cause"]} == {
        frozenset({("workflow", "w2")}),
        frozenset({("provider_id", "p3"), ("domain", "d0.example")}),
    }
    assert sorted(np.sign(result["excess"])) == [-1, 1]
    assert toolkit.what_changed(
        counts(lambda leaves: (leaves["volume"] * 1.3, leaves["rate"])),
        period=PERIOD,
        measure="volume",
    ).empty


def test_an_error_code_says_how_the_slice_failed_not_which():
    frame = counts(broken({"provider_id": "p1"}))
    failed = frame.assign(error_code="timeout", jobs=frame["failed"])[frame["failed"] > 0]
    surge = failed["bucket"].eq(PERIOD[0]) & failed["provider_id"].eq("p1")
    failed.loc[surge, "error_code"] = "30007"
    ok = frame.assign(error_code=pd.NA, jobs=frame["jobs"] - frame["failed"], failed=0)
    coded = pd.concat([failed, ok], ignore_index=True).astype({"error_code": "string"})
    result = toolkit.what_changed(coded, period=PERIOD)
    assert list(result["cause"]) == [{"provider_id": "p1"}]
    assert "error_code" in result.columns and result.attrs["dimensions"] == list(VALUES)
    assert "mostly error_code 30007" in result["summary"].iloc[0]


def test_the_failure_rate_counts_finished_and_failed_jobs_only():
    frame = counts(broken({"provider_id": "p1"}))
    # jobs in flight or not sent count neither way
    frame = frame.assign(finished=frame["jobs"] - frame["failed"], jobs=frame["jobs"] * 3)
    row = toolkit.what_changed(frame, period=PERIOD).iloc[0]
    now = frame[frame["bucket"].eq(PERIOD[0]) & frame["provider_id"].eq("p1")]
    assert row["jobs"] == now["finished"].sum() + now["failed"].sum()


def test_the_default_baseline_is_the_same_length_just_before():
    frame = counts(broken({"provider_id": "p1"}))
    result = toolkit.what_changed(frame, period=PERIOD)
    assert result.attrs["baseline"] == ("2026-11-01T00:00:00.000Z", "2026-11-02T00:00:00.000Z")
    relative = toolkit.what_changed(frame, period=("1d", "0d"))  # from the data's end
    assert relative.attrs["period"] == result.attrs["period"]


def test_a_counts_frame_from_delivery_counts_is_explained_like_the_activity(sandbox_activity):
    activity, window = sandbox_activity["activity"], sandbox_activity["outage"]
    frame = toolkit.delivery_counts(activity, freq="1h", by=["channel", "provider_id", "domain"])
    start, end = (pd.Timestamp(t).floor("1h") for t in window)
    end += pd.Timedelta("1h")
    dims = ["channel", "provider_id", "domain"]
    assert list(toolkit.what_changed(frame, period=(start, end))["cause"]) == list(
        toolkit.what_changed(activity, period=(start, end), dimensions=dims)["cause"]
    )


@pytest.mark.parametrize(
    ("options", "name"),
    [
        ({"period": (DAY + pd.Timedelta("10D"), DAY + pd.Timedelta("11D"))}, "period"),
        ({"period": (PERIOD[1], PERIOD[0])}, "period"),
        ({"period": "7d"}, "period"),
        ({"period": PERIOD, "baseline": (DAY + pd.Timedelta("12h"), PERIOD[1])}, "baseline"),
        ({"period": PERIOD, "baseline": (DAY - pd.Timedelta("5D"), DAY)}, "baseline"),
        ({"period": PERIOD, "dimensions": ["locale"]}, "dimensions"),
        ({"period": PERIOD, "dimensions": "workflow"}, "dimensions"),
        ({"period": PERIOD, "measure": "latency"}, "measure"),
        ({"period": PERIOD, "alpha": 0}, "alpha"),
    ],
)
def test_bad_arguments_are_refused_by_name(options, name):
    with pytest.raises(ParameterError) as error:
        toolkit.what_changed(counts(seed=1), **options)
    assert error.value.name == name


@pytest.mark.parametrize(
    "spoil",
    [
        lambda f: f.drop(columns="failed"),
        lambda f: f.drop(columns="jobs"),
        lambda f: f.assign(jobs=f["jobs"] - 10_000),
        lambda f: f.assign(jobs=f["jobs"] + 0.5),
        lambda f: f.assign(failed=f["jobs"] + 1),
        lambda f: f.drop(columns="bucket"),
        lambda f: f[["bucket", "jobs", "failed"]],  # no dimension
    ],
)
def test_bad_counts_are_refused(spoil):
    with pytest.raises(ParameterError) as error:
        toolkit.what_changed(spoil(counts(seed=1)), period=PERIOD)
    assert error.value.name == "data"


def test_other_data_are_refused():
    with pytest.raises(ParameterError, match="data"):
        toolkit.what_changed([1, 2], period=PERIOD)


# -- the sandbox's planted incidents, read over HTTP ---------------------------------------------

NOW = "2026-11-01T12:00:00Z"
PLANTED = [
    {"kind": "provider_outage", "provider_id": "twilio", "start": "100h", "duration": "6h",
     "name": "outage"},
    {"kind": "domain_bounces", "domain": "gmail.com", "start": "54h", "duration": "6h",
     "name": "bounces"},
    {"kind": "provider_outage", "provider_id": "expo", "start": "30h", "duration": "6h",
     "name": "pair-outage"},
    {"kind": "domain_bounces", "domain": "yahoo.com", "start": "30h", "duration": "6h",
     "name": "pair-bounces"},
    # these fail nothing: they route part of SMS and email through a second provider
    {"kind": "latency_degradation", "provider_id": "sns", "start": "220h", "duration": "1h"},
    {"kind": "latency_degradation", "provider_id": "ses", "start": "200h", "duration": "1h"},
]  # fmt: skip


@pytest.fixture(scope="module")
def sandbox_activity(tmp_path_factory):
    store = tmp_path_factory.mktemp("what_changed") / "store"
    with toolkit.sandbox.start(seed=5, now=NOW, notifications=20_000, incidents=PLANTED) as sb:
        client = toolkit.connect(sandbox=sb)
        activity = toolkit.read_activity(client, after="14d", progress=False)
        toolkit.sync(client, store, since="14d", progress=False)
        windows = {i["name"]: (i["start"], i["end"]) for i in sb.incidents}
    return {"activity": activity, "store": store, **windows}


def explained(sandbox_activity, name, **options) -> list[dict]:
    window = sandbox_activity[name]
    result = toolkit.what_changed(sandbox_activity["activity"], period=window, **options)
    return list(result["cause"])


def test_a_provider_outage_is_the_provider(sandbox_activity):
    assert explained(sandbox_activity, "outage") == [{"provider_id": "twilio"}]


def test_a_domain_bouncing_on_one_provider_is_both(sandbox_activity):
    assert explained(sandbox_activity, "bounces") == [
        {"provider_id": "sendgrid", "domain": "gmail.com"}
    ]


def test_two_incidents_at_once_are_two_causes(sandbox_activity):
    found = explained(sandbox_activity, "pair-outage")
    assert sorted(map(str, found)) == sorted(
        map(str, [{"provider_id": "expo"}, {"provider_id": "sendgrid", "domain": "yahoo.com"}])
    )


def test_a_quiet_day_names_nothing(sandbox_activity):
    quiet = ("2026-10-26T12:00:00Z", "2026-10-27T12:00:00Z")
    result = toolkit.what_changed(sandbox_activity["activity"], period=quiet)
    assert result.empty and result.attrs["reason"]
    volume = toolkit.what_changed(sandbox_activity["activity"], period=quiet, measure="volume")
    assert volume.empty


def test_an_incident_found_is_explained_from_its_own_row(sandbox_activity):
    activity = sandbox_activity["activity"]
    incidents = toolkit.find_incidents(activity)
    outage = incidents[incidents["provider_id"].eq("twilio")].iloc[0]
    result = toolkit.what_changed(activity, period=(outage.started_at, outage.ended_at))
    assert list(result["cause"]) == [{"provider_id": "twilio"}]
    assert "error_code" in result["summary"].iloc[0]  # how it failed: the provider's own code


def test_a_store_is_counted_in_its_engine_and_explained_alike(sandbox_activity):
    window = sandbox_activity["bounces"]
    from_store = toolkit.what_changed(toolkit.open_store(sandbox_activity["store"]), period=window)
    in_memory = toolkit.what_changed(sandbox_activity["activity"], period=window)
    pd.testing.assert_frame_equal(from_store, in_memory)


def test_the_command_prints_the_causes_of_the_last_days_of_a_store(sandbox_activity):
    store = str(sandbox_activity["store"])
    command = [sys.executable, "-m", "toolkit", "what-changed", "--since", "7d", "--store", store]
    text = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    data = json.loads(
        subprocess.run([*command, "--json"], capture_output=True, text=True, check=True).stdout
    )
    assert data[0]["cause"] == {"provider_id": "twilio"}
    assert set(data[0]) >= {"jobs", "failed", "excess", "share_of_change", "summary"}
    assert text.splitlines()[0] == f"- {data[0]['summary']}"
    bad = subprocess.run([*command[:-2], "--store", store, "--since", "yesterday"],
                         capture_output=True, text=True)  # fmt: skip
    assert bad.returncode == 2 and "since" in bad.stderr


def _slice(activity, after, before):
    notifications, jobs, details = activity
    notifications = notifications[notifications["created_at"].between(after, before, inclusive="left")].copy()  # fmt: skip
    jobs = jobs[jobs["notification_id"].isin(notifications["notification_id"])]
    details = details[details["job_id"].isin(jobs["job_id"])]
    notifications.attrs = {**activity.attrs, "after": after, "before": before}
    return type(activity)(notifications, jobs, details)


def test_the_report_says_what_changed_since_the_previous_period(sandbox_activity, tmp_path):
    from toolkit.report import report_window

    activity = sandbox_activity["activity"]
    start, end = (pd.Timestamp(t) for t in sandbox_activity["outage"])
    report = report_window(
        lambda after, before: _slice(activity, pd.Timestamp(after), pd.Timestamp(before)),
        now=end.to_pydatetime(), since=start.isoformat(), out=tmp_path / "report.html",
    )  # fmt: skip
    html = report.path.read_text()
    assert "What changed since the previous period" in html
    section = html.split('id="changes"')[1].split("</section>")[0]
    assert "provider_id=twilio: " in section
    assert 'id="change-1-plot"' in section  # its small chart
    quiet = ("2026-10-26T12:00:00Z", "2026-10-27T12:00:00Z")
    calm = report_window(
        lambda after, before: _slice(activity, pd.Timestamp(after), pd.Timestamp(before)),
        now=pd.Timestamp(quiet[1]).to_pydatetime(), since=quiet[0], out=tmp_path / "calm.html",
    )  # fmt: skip
    assert 'id="changes"' not in calm.path.read_text()


def test_the_explorer_explains_its_window_against_the_one_before(sandbox_activity):
    from toolkit.panels import ActivityFilter, ActivityPanel, Explorer

    activity, (start, end) = sandbox_activity["activity"], sandbox_activity["outage"]
    fetched = []

    def fetch(value):
        kwargs = value.to_read_kwargs(pd.Timestamp(NOW).to_pydatetime())
        fetched.append((kwargs["after"], kwargs["before"]))
        return _slice(activity, pd.Timestamp(kwargs["after"]), pd.Timestamp(kwargs["before"]))

    panel = ActivityPanel(value=ActivityFilter(period="custom", after=start, before=end))
    explorer = Explorer(panel, fetch, charts=[])
    explorer.explain_button.click()
    assert explorer.error is None and list(explorer.changes["cause"]) == [{"provider_id": "twilio"}]
    length = pd.Timestamp(end) - pd.Timestamp(start)
    assert [pd.Timestamp(t) for t in fetched[-1]] == [pd.Timestamp(start) - length, pd.Timestamp(start)]  # fmt: skip
    assert "provider_id=twilio" in explorer.changes_output.outputs[0]["text"]


def test_a_cause_has_a_small_chart_of_its_slice():
    row = toolkit.what_changed(counts(broken({"provider_id": "p1"})), period=PERIOD).iloc[0]
    bars = toolkit.charts.change(row).data[0]
    assert list(bars.x) == ["baseline", "expected", "period"]
    assert list(bars.y) == pytest.approx(
        [row["baseline_rate"], (row["failed"] - row["excess"]) / row["jobs"], row["failure_rate"]]
    )
    with pytest.raises(ParameterError, match="cause"):
        toolkit.charts.change({"jobs": 1})
