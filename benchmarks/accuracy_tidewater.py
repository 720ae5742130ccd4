"""Accuracy of `toolkit.find_incidents` on Tidewater's traffic (`tidewater`: a consumer banking
app): card alerts that follow shopping hours and paydays, SMS login codes, salary-deposit waves
at dawn, a monthly statement batch, Sunday budget digests and campaigns, in three regions with
their own summer time, written without reading the detector or the other generators.

For each seed and clock it draws eight weeks of quiet traffic and the same traffic with eight
planted incidents (a workflow stopping for hours, a runaway card-alert loop for an hour, a 2 h
provider outage, revoked push credentials, a mailbox domain bouncing mail, a burst of 429s, a
provider four to seven times slower for 4 h, a provider's failures climbing over days) and reads
each window as `accuracy_larkspur` does (its sweep, matching and totals).

    python benchmarks/accuracy_tidewater.py [--seeds 1 2] [--clocks payday night dst]
                                            [--windows 1 7 28 28nb] [--load-latency 0.4]
                                            [--loop-mult 5]

Seeds 1 and 2 send about 2,000 and 8,000 notifications a day.
"""

import pandas as pd
from accuracy_larkspur import cli
from tidewater import make

#: Clocks the sweep runs at (the end of every window).
CLOCKS = {
    # a Tuesday, 09:00 in New York on the 15th: a US payday morning, deposits just landed
    "payday": pd.Timestamp("2026-09-15T13:00Z"),
    # a Tuesday 03:30 UTC: London asleep, New York's late evening, Sydney's afternoon
    "night": pd.Timestamp("2026-02-03T03:30Z"),
    # the Monday evening after the UK's summer time ended (Oct 25); New York's ends Nov 1
    # and Sydney's began Oct 4
    "dst": pd.Timestamp("2026-10-26T20:00Z"),
}


def main() -> None:
    cli(make, CLOCKS, [1, 2], __doc__.splitlines()[0])


if __name__ == "__main__":
    main()
