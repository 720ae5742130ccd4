"""Drops that are a day like the week's off days (`toolkit.incidents.offdays`): a public holiday
of some of the senders is set aside with a sentence; a workflow that stopped or a channel that
went down, at any hour, stays a row."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

from toolkit.incidents import find_incidents
from toolkit.sandbox.seed.shaped import shaped_traffic

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from quillbrook import make  # noqa: E402

OFF_DAY = "set aside as a day like the week's off days"


@pytest.fixture(scope="module")
def easter():
    """Quillbrook's four quiet weeks to Monday Apr 13 (Good Friday and Easter Monday in two of
    its five regions), read alone."""
    now = pd.Timestamp("2026-04-13T08:00Z")
    activity, _ = make(1, now, 28).window(now - pd.Timedelta(days=28), now)
    return find_incidents(activity)


def test_public_holidays_are_set_aside_as_off_days_not_rows(easter):
    assert easter.empty, list(easter["summary"])
    off = [sentence for sentence in easter.attrs["set_aside"] if OFF_DAY in sentence]
    assert len(off) == 2, easter.attrs["set_aside"]
    assert any("Apr 3" in sentence for sentence in off)
    assert any("Apr 6" in sentence for sentence in off)
    assert all(sentence.startswith("Workflows ") for sentence in off)  # the office's workflows
    assert all("(a public holiday?)" in sentence for sentence in off)


@pytest.mark.parametrize(
    ("seed", "now", "what"),
    [
        (1, "2026-03-18T03:30:00Z", {"channel": "push"}),  # a night's push outage
        (1, "2026-03-18T03:30:00Z", {"workflow": "invoice-ready"}),  # 23 notifications
        (2, "2026-07-04T18:45:00Z", {"channel": "push"}),  # 24 notifications at night
    ],
)
def test_a_stop_at_any_hour_stays_a_row(seed, now, what):
    # each fell by more than a day like the off days makes: read alone over 28 days, each
    # drop is a row of its own, none set aside as an off day
    now = pd.Timestamp(now)
    activity, planted = shaped_traffic(seed, now).window(now - pd.Timedelta(days=28), now)
    stop = next(p for p in planted if p["kind"] == "volume_drop"
                and all(p[key] == value for key, value in what.items()))  # fmt: skip
    found = find_incidents(activity)
    drops = found[found["kind"].eq("volume_drop")]
    hit = drops[(drops["started_at"] <= stop["end"]) & (drops["ended_at"] >= stop["start"])]
    assert len(hit) == 1, list(drops["summary"])
    assert not [sentence for sentence in found.attrs["set_aside"] if OFF_DAY in sentence]


def test_a_holiday_during_a_failover_is_set_aside():
    # seed 2's week to Fri Jul 3 16:00 (US Independence Day observed) with its planted
    # incidents: SMS moved from Twilio to SNS on Jun 30, so Twilio sends none that day; the
    # providers a failover moves traffic between are not tested alone, their channel is
    now = pd.Timestamp("2026-07-03T16:00Z")
    draw = make(2, now, 56, incidents=True)  # as accuracy_quillbrook draws it
    after = now - pd.Timedelta(days=7)
    activity, _ = draw.window(after, now)
    found = find_incidents(activity, baseline=draw.window(after - pd.Timedelta(days=28), after)[0])
    assert "traffic_shift" in set(found["kind"]), list(found["summary"])
    assert not found["kind"].eq("volume_drop").any(), list(found["summary"])
    off = [sentence for sentence in found.attrs["set_aside"] if OFF_DAY in sentence]
    assert len(off) == 1 and "on Jul 3" in off[0], found.attrs["set_aside"]


def test_a_holiday_is_corroborated_by_what_its_workflows_tell_not_by_noisy_schedules():
    # seed 2's week to Mon Apr 13 with the weeks before: Easter Monday's offices fell, and so
    # did a Monday digest that varies much from week to week; summed plainly its variance hid
    # the others' fall, weighed by what each tells it does not
    now = pd.Timestamp("2026-04-13T08:00Z")
    draw = make(2, now, 56)  # as accuracy_quillbrook draws it
    after = now - pd.Timedelta(days=7)
    activity, _ = draw.window(after, now)
    found = find_incidents(activity, baseline=draw.window(after - pd.Timedelta(days=28), after)[0])
    assert found.empty, list(found["summary"])
    off = [sentence for sentence in found.attrs["set_aside"] if OFF_DAY in sentence]
    assert len(off) == 1 and "on Apr 6" in off[0], found.attrs["set_aside"]
