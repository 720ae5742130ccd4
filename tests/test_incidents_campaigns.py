"""A campaign the size of the group's usual ones is no spike, however few hours it was sent in
(`toolkit.incidents.volume.triggered`), on Tidewater's traffic (`benchmarks/tidewater.py`)."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from toolkit.incidents import find_incidents

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from tidewater import make  # noqa: E402


def test_a_usual_campaign_sent_in_fewer_hours_is_no_spike():
    # seed 2's quiet weeks to Tue Sep 15: a campaign on Wed Sep 9 sends its 6,824 jobs in under
    # two hours, its busiest hour more than twice any of the four weeks before, yet no more in
    # all than twice what their campaigns added over as many hours
    now = pd.Timestamp("2026-09-15T13:00Z")
    draw = make(2, now, 56, incidents=False)  # as accuracy_tidewater draws it
    after = now - pd.Timedelta(days=7)
    activity, _ = draw.window(after, now)
    baseline, _ = draw.window(after - pd.Timedelta(days=28), after)
    found = find_incidents(activity, baseline=baseline)
    assert found.empty, list(found["summary"])
    jobs = activity.jobs
    campaign = jobs["workflow"].eq("marketing-broadcast") & jobs["first_execution_at"].dt.day.eq(9)
    assert campaign.sum() > 6000  # the campaign is in the window
