"""Accuracy of `toolkit.find_incidents` on the sandbox's planted incidents.

For each seed and clock, the seed code plants every kind of incident (at different times, on
providers that change with the seed) and a quiet data set with none; the activity is built by
`toolkit.frames` from the seeded documents (what the service serves, without HTTP). A planted
incident is found when one row has its kind and provider, a window overlapping the planted one,
and notifications within 10% of the planted count; every other row is a false alarm. (A planted
volume_drop's count is the triggers the sandbox suppressed, redraws included, which overstates
the notifications missing; the last line also counts the incidents found in the right place
whatever their count.)

    python benchmarks/accuracy_incidents.py [--seeds 1 2 3 5 7] [--notifications 20000]
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import pandas as pd
from common import seeded_documents

from toolkit.frames import activity_frames
from toolkit.incidents import find_incidents

#: Clocks the sweep runs at: weekdays and weekends, day and night.
CLOCKS = ("2026-11-01T12:00:00Z", "2026-03-18T03:30:00Z", "2026-07-04T18:45:00Z")
#: Providers each kind is planted on, one per seed (any provider of the seeded integrations).
PROVIDERS = {
    "provider_outage": ("twilio", "sendgrid", "ses", "apns", "slack", "sns", "expo"),
    "error_spike": ("sendgrid", "twilio", "apns", "fcm", "expo", "ses", "chat-webhook"),
    "stale_credentials": ("apns", "slack", "expo", "fcm", "chat-webhook", "apns", "fcm"),
    "latency_degradation": ("apns", "sendgrid", "twilio", "slack", "fcm", "ses", "expo"),
    "volume_drop": ("sms", "in_app", "push", "email", "sms", "push", "in_app"),
}
DOMAINS = ("northwind.example", "gmail.com", "outlook.com", "initech.example", "yahoo.com")


def specs(seed: int) -> list[dict[str, Any]]:
    """Every kind once, at times and on providers that depend on the seed."""
    pick = {kind: options[seed % len(options)] for kind, options in PROVIDERS.items()}
    return [
        {"kind": "provider_outage", "provider_id": pick["provider_outage"], "start": "200h",
         "duration": "3h"},
        {"kind": "error_spike", "provider_id": pick["error_spike"], "start": "150h",
         "duration": "1h"},
        {"kind": "domain_bounces", "domain": DOMAINS[seed % len(DOMAINS)], "start": "100h",
         "duration": "6h"},
        {"kind": "volume_drop", "channel": pick["volume_drop"], "start": "60h", "duration": "6h"},
        {"kind": "latency_degradation", "provider_id": pick["latency_degradation"],
         "start": "290h", "duration": "4h"},
        {"kind": "stale_credentials", "provider_id": pick["stale_credentials"], "start": "30h"},
    ]  # fmt: skip


def seeded_activity(seed: int, now: str, notifications: int, incidents: Any = "default"):
    """The default environment's activity, as `read_activity` would return it, and what was
    planted in it."""
    records, planted = seeded_documents(
        seed, now, notifications, max(200, notifications // 10), incidents
    )
    before = pd.Timestamp(now)
    provenance = {"after": before - pd.Timedelta("14D"), "before": before}
    return activity_frames(records, provenance=provenance), planted


def matches(row: pd.Series, planted: dict, *, count: bool = True) -> bool:
    """Whether a found row is the planted incident (see the module docstring); ``count=False``
    leaves the notifications out of the comparison."""
    start, end = pd.Timestamp(planted["start"]), pd.Timestamp(planted["end"])
    where = (
        row["channel"] == planted["channel"]
        if planted["provider_id"] is None
        else row["provider_id"] == planted["provider_id"]
    )
    return (
        row["kind"] == planted["kind"]
        and where
        and row["started_at"] <= end
        and row["ended_at"] >= start
        and (
            not count
            or abs(row["notifications"] - planted["notifications"])
            <= 0.1 * planted["notifications"]
        )
    )


def score(
    found: pd.DataFrame, planted: list[dict], *, count: bool = True
) -> tuple[list[dict], list[int]]:
    """The planted incidents not found, and the rows matching no planted incident."""
    used: set[int] = set()
    missed = []
    for incident in planted:
        hits = [
            i
            for i, row in found.iterrows()
            if i not in used and matches(row, incident, count=count)
        ]
        if hits:
            used.add(hits[0])
        else:
            missed.append(incident)
    return missed, [i for i in found.index if i not in used]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 5, 7])
    parser.add_argument("--notifications", type=int, default=20_000)
    parser.add_argument("--clocks", nargs="+", default=list(CLOCKS))
    args = parser.parse_args()
    planted_total = found_total = false_total = placed_total = 0
    for seed in args.seeds:
        for now in args.clocks:
            for plan in ("every kind", "default", "none"):
                incidents = specs(seed) if plan == "every kind" else plan
                activity, planted = seeded_activity(seed, now, args.notifications, incidents)
                began = time.perf_counter()
                found = find_incidents(activity)
                took = time.perf_counter() - began
                missed, false = score(found, planted)
                placed_total += len(planted) - len(score(found, planted, count=False)[0])
                planted_total += len(planted)
                found_total += len(planted) - len(missed)
                false_total += len(false)
                print(f"seed {seed} now {now} {plan:10}: {len(planted) - len(missed)}/"
                      f"{len(planted)} found, {len(false)} false ({took:.2f} s)")  # fmt: skip
                for incident in missed:
                    print(f"    missed {incident['kind']} {incident['provider_id']} "
                          f"{incident['start']}..{incident['end']} "
                          f"({incident['notifications']} notifications)")  # fmt: skip
                for index in false:
                    print(f"    row    {found.loc[index, 'summary']}")
    print(f"found {found_total}/{planted_total} planted incidents, {false_total} other rows "
          f"(target: all found, none other); {placed_total}/{planted_total} with the right kind, "
          "place and window whatever their count")  # fmt: skip


if __name__ == "__main__":
    main()
