"""find_incidents when summer time ends (`shaped_traffic(clocks_back=)`): everything sent at a
local hour (the digest, the newsletter, office hours, people's rhythm) moves an hour later in
UTC, one zone a week before the other; a group's usual traffic an hour off is no incident
(`toolkit.incidents.volume.an_hour_off`)."""

from __future__ import annotations

import pandas as pd
import pytest

from toolkit.incidents import find_incidents
from toolkit.sandbox.seed.shaped import shaped_traffic

NOW = pd.Timestamp("2026-11-01T12:00:00Z")
HISTORY = pd.Timedelta(days=28)


def read(traffic, days: int):
    """The window of ``days`` ending at NOW, its planted incidents, and its incidents found
    with the four weeks before it as ``baseline=``."""
    after = NOW - pd.Timedelta(days=days)
    activity, planted = traffic.window(after, NOW)
    return planted, find_incidents(activity, baseline=traffic.window(after - HISTORY, after)[0])


@pytest.mark.parametrize(
    ("seed", "back", "days"),
    [
        (1, 3, 1),  # the first zone's digest an hour later on the last morning
        (1, 3, 7),  # ... on three mornings, the other zone's not
        (1, 10, 7),  # the newsletter an hour later than the weeks before
        (2, 2, 1),
    ],
)
def test_sends_an_hour_later_after_the_clocks_go_back_are_no_incident(seed, back, days):
    quiet = shaped_traffic(seed, NOW, incidents=False, clocks_back=NOW - pd.Timedelta(days=back))
    found = read(quiet, days)[1]
    assert found.empty, list(found["summary"])


def test_a_workflow_that_stops_after_the_clocks_changed_is_still_a_drop():
    traffic = shaped_traffic(3, NOW, clocks_back=NOW - pd.Timedelta(days=5))
    planted, found = read(traffic, 7)
    stop = next(i for i in planted if i["kind"] == "volume_drop" and i["workflow"])
    drops = found[found["kind"].eq("volume_drop")]
    assert any(row["workflows"][:1] == [stop["workflow"]] and row["started_at"] <= stop["end"]
               and row["ended_at"] >= stop["start"] for _, row in drops.iterrows()), list(found["summary"])  # fmt: skip
