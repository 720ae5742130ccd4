"""find_incidents on real sandbox reads: the planted incidents, the frame's contract, bad input."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import toolkit
from tests.conftest import NOW
from toolkit.errors import ParameterError
from toolkit.incidents import COLUMNS, KINDS, find_incidents

#: The kinds of the sandbox's three default incidents.
DEFAULT_KINDS = {
    "sms-provider-outage": "provider_outage",
    "email-bounce-spike": "domain_bounces",
    "push-tokens-invalid": "stale_credentials",
}


def matches(row: pd.Series, planted: dict) -> bool:
    """A found row is the planted incident: same kind and provider, overlapping windows, and
    notifications within 10%."""
    start, end = pd.Timestamp(planted["start"]), pd.Timestamp(planted["end"])
    kind = planted.get("kind") or DEFAULT_KINDS[planted["name"]]
    return (
        row["kind"] == kind
        and row["provider_id"] == planted["provider_id"]
        and row["started_at"] <= end
        and row["ended_at"] >= start
        and abs(row["notifications"] - planted["notifications"]) <= 0.1 * planted["notifications"]
    )


def window(activity, after, before):
    """The part of ``activity`` triggered in ``[after, before]``, as a read of that window."""
    notifications, jobs, details = activity
    notifications = notifications[notifications["created_at"].between(after, before)].copy()
    ids = notifications["notification_id"]
    jobs = jobs[jobs["notification_id"].isin(ids)]
    details = details[details["job_id"].isin(jobs["job_id"])]
    notifications.attrs = {**activity.attrs, "after": after, "before": before}
    return type(activity)(notifications, jobs, details)


@pytest.fixture(scope="module")
def planted():
    with toolkit.sandbox.start(seed=7, now=NOW, notifications=4000) as sandbox:
        client = toolkit.connect(sandbox=sandbox)
        activity = toolkit.read_activity(client, after="14d", progress=False)
        yield activity, sandbox.incidents, sandbox


@pytest.fixture(scope="module")
def found(planted):
    return find_incidents(planted[0])


def test_every_default_incident_is_found_and_nothing_else(planted, found):
    incidents = planted[1]
    assert len(found) == len(incidents) == 3
    for incident in incidents:
        assert [matches(row, incident) for _, row in found.iterrows()].count(True) == 1, incident


def test_the_frame_keeps_its_contract(found):
    assert list(found.columns) == list(COLUMNS)
    assert found.dtypes.astype(str).to_dict() == {
        k: str(pd.Series(dtype=v).dtype) for k, v in COLUMNS.items()
    }
    assert found["notifications"].is_monotonic_decreasing  # sorted by impact
    assert set(found["kind"]) <= set(KINDS)
    outage = found.set_index("kind").loc["provider_outage"]
    assert outage["error_code"] == "20503" and outage["failure_rate"] > 0.9
    assert outage["p_value"] < 0.01 and outage["baseline_rate"] < 0.1
    assert not outage["ongoing"] and outage["ended_at"] > outage["started_at"]
    assert outage["workflows"] and all(isinstance(w, str) for w in outage["workflows"])
    assert json.loads(outage["example_error"])["code"] == 20503  # the provider's own payload
    assert outage["summary"].startswith("Twilio failed 100% of SMS from ")
    assert f"{outage['notifications']} notifications" in outage["summary"]
    stale = found.set_index("kind").loc["stale_credentials"]
    assert stale["ongoing"]  # it lasts to the end of the window


def test_start_and_end_come_from_the_jobs_not_bucket_edges(found):
    times = pd.concat([found["started_at"], found["ended_at"]])
    assert (times.dt.second != 0).any() or (times.dt.minute != 0).any()
    assert not (times == times.dt.floor("1h")).all()


def test_a_window_too_short_for_a_baseline_gives_an_empty_frame_with_a_reason(planted):
    before = planted[0].notifications["created_at"].max()
    short = window(planted[0], before - pd.Timedelta("3h"), before)
    result = find_incidents(short, freq="1h")
    assert result.empty and list(result.columns) == list(COLUMNS)
    assert "too short" in result.attrs["reason"]


def test_no_jobs_gives_an_empty_frame_with_every_column(planted):
    activity = planted[0]
    empty = type(activity)(*(frame.iloc[:0] for frame in activity))
    result = find_incidents(empty)
    assert result.empty and list(result.columns) == list(COLUMNS)
    assert result.dtypes["started_at"] == "datetime64[ns, UTC]"
    assert result.attrs["reason"] == "no delivery jobs in the activity"


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("alpha", 0),
        ("alpha", 1.5),
        ("min_jobs", 0),
        ("min_jobs", 2.5),
        ("min_failed", True),
        ("min_ratio", 0.5),
        ("kinds", ["outage"]),
        ("kinds", "provider_outage"),
        ("freq", "soon"),
        ("freq", "1s"),
        ("outage_rate", 0),
    ],  # fmt: skip
)
def test_bad_parameters_are_refused_by_name(planted, name, value):
    with pytest.raises(ParameterError) as error:
        find_incidents(planted[0], **{name: value})
    assert error.value.name == name


def test_a_wrong_frame_type_is_refused(planted):
    with pytest.raises(ParameterError, match="activity"):
        find_incidents(planted[0].jobs)
    with pytest.raises(ParameterError) as error:
        find_incidents(planted[0], baseline=planted[0].notifications)
    assert error.value.name == "baseline"


def test_kinds_selects_what_is_reported(planted):
    only = find_incidents(planted[0], kinds=["stale_credentials"])
    assert only["kind"].tolist() == ["stale_credentials"]


def test_two_of_two_failed_at_night_is_not_an_incident(planted):
    """The minimum evidence: a handful of failures is never an incident, however bunched."""
    activity = planted[0]
    found = find_incidents(activity, min_jobs=10, min_failed=5)
    assert not ((found["failed_jobs"] < 5) | (found["jobs"] < 10)).any()
    strict = find_incidents(activity, min_failed=40)
    assert strict.empty and "departs" in strict.attrs["reason"]


def test_cli_prints_the_table_and_json(planted, capsys):
    from toolkit.incidents.cli import main

    sandbox = planted[2]
    window = ["--since", "2026-10-18T12:00:00Z", "--until", NOW]  # the sandbox's clock, not ours
    service = ["--base-url", sandbox.url, "--api-key", sandbox.api_key, *window]
    assert main(service) == 0
    out = capsys.readouterr().out
    assert "provider_outage" in out and "- Twilio failed 100% of SMS" in out
    assert main([*service, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert sorted(row["kind"] for row in rows) == sorted(DEFAULT_KINDS.values())
    assert sandbox.api_key not in json.dumps(rows)
    assert main([*service[:4], "--since", "-1d"]) == 2  # bad input: a message, no traceback
    assert "error:" in capsys.readouterr().err


def test_p_values_are_corrected_and_bounded(found):
    assert np.all((found["p_value"] >= 0) & (found["p_value"] <= 0.01))


def test_the_required_columns_are_all_it_reads(planted, found):
    """A store keeps only `metrics.REQUIRED_COLUMNS`: the same incidents from those alone."""
    from toolkit import metrics

    activity = planted[0]
    slim = type(activity)(
        *(
            frame[list(metrics.REQUIRED_COLUMNS[name])]
            for name, frame in zip(activity._fields, activity, strict=True)
        )
    )
    slim.notifications.attrs = dict(activity.attrs)
    pd.testing.assert_frame_equal(find_incidents(slim), found)


@pytest.mark.parametrize(
    ("seed", "now"),
    [
        (1, NOW),
        (2, "2026-07-04T18:45:00Z"),
        (3, "2026-03-18T03:30:00Z"),
        (5, "2026-07-04T18:45:00Z"),
        (7, "2026-03-18T03:30:00Z"),
    ],  # fmt: skip
)
def test_every_seed_and_clock_gives_the_planted_incidents_and_nothing_else(seed, now):
    with toolkit.sandbox.start(seed=seed, now=now, notifications=10_000, subscribers=1_000) as sb:
        client = toolkit.connect(sandbox=sb)
        found = find_incidents(toolkit.read_activity(client, after="14d", progress=False))
        assert len(found) == len(sb.incidents) == 3
        for incident in sb.incidents:
            assert [matches(row, incident) for _, row in found.iterrows()].count(True) == 1


@pytest.mark.parametrize(
    ("to_domain", "to_others", "kind"),
    [((19, 1), (14, 3), "provider_outage"),  # every domain failed: the provider is down
     ((5, 0), (1, 4), "domain_bounces")],  # the domain's sends failed, the others' did not
)  # fmt: skip
def test_a_row_is_a_domain_s_when_its_domain_failed_more_often_than_the_others(
    to_domain, to_others, kind
):
    # a provider's row whose failures are mostly one domain's (as they are when most of its
    # recipients are at that domain) is that domain's only when its sends to other domains
    # then failed at most half as often: its few other sends say little about the shares
    from toolkit.incidents.detect import _one_per_domain

    (failed, sent), (others_failed, others_sent) = to_domain, to_others
    domain = (["gmail.com"] * (failed + sent)
              + [("yahoo.com", "outlook.com")[i % 2] for i in range(others_failed)]
              + ["icloud.com"] * others_sent)  # fmt: skip
    met = [True] * failed + [False] * sent + [True] * others_failed + [False] * others_sent
    jobs = pd.DataFrame({"channel": "email", "provider_id": "p1", "domain": domain,
                         "tried": True, "met_failure": met})  # fmt: skip
    row = {"kind": "provider_outage", "affected": np.flatnonzero(met), "first": 0,
           "last": len(jobs) - 1, "keys": {"channel": "email", "provider_id": "p1"},
           "start": NOW, "end": NOW}  # fmt: skip
    (out,) = _one_per_domain([row], jobs)
    assert out["kind"] == kind


def test_summaries_write_dates_without_platform_only_directives():
    # "%-d" (a day without its zero) is glibc's and macOS's: Windows' strftime refuses it
    from pathlib import Path

    from toolkit.words import day

    assert day(pd.Timestamp("2026-11-03T09:00Z")) == "Nov 3"
    sources = Path(toolkit.__file__).parent.rglob("*.py")
    assert not [str(path) for path in sources if "%-" in path.read_text()]


def test_summaries_write_a_rare_errors_usual_rate_to_a_tenth_of_a_percent():
    # "returned error 20500 on 7% of SMS (usually 0%)" hid a usual rate of 0.34%: a number a
    # person could not check
    from toolkit.words import percent

    assert [percent(x) for x in (0.0, 0.0002, 0.0034, 0.07, 0.934)] == [
        "0%", "under 0.1%", "0.3%", "7%", "93%"]  # fmt: skip
