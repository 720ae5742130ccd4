"""Accuracy of `toolkit.find_incidents` on Wrenfield's traffic (`wrenfield`, a food-delivery
marketplace written blind, apart from the detector and the other generators).

The sweep, its matching and its printout are `accuracy_larkspur`'s (see its docstring): for each
seed and clock, eight weeks of quiet traffic and the same with eight planted incidents (a
workflow stopping for 5 h, a runaway loop for 1 h, a 2 h provider outage, stale push
credentials, a recipient domain bouncing, a burst of rate-limit errors, a provider slowing down
for 4 h, a provider failing more and more over 4.5 days), windows of 1, 7 and 28 days ending at
the clock with ``baseline=`` the 28 days before, and ``28nb`` without one. Only the traffic and
the clocks are Wrenfield's.

    python benchmarks/accuracy_wrenfield.py [--seeds 1 2] [--clocks dinner night dst]
                                            [--windows 1 7 28 28nb] [--load-latency 0.4]
                                            [--loop-mult 5]

Seeds 1 and 2 send about 1,500 and 6,000 notifications a day; others 1,000 to 20,000.
"""

from __future__ import annotations

import pandas as pd
from accuracy_larkspur import cli
from wrenfield import make

#: Clocks the sweep runs at (the end of every window).
CLOCKS = {
    # a Saturday at London's dinner peak (Sao Paulo's 16:30, Sydney's Sunday 06:30), after the
    # UK's DST ended on Oct 25
    "dinner": pd.Timestamp("2026-11-21T19:30Z"),
    # a Wednesday 03:00 UTC: London's and Sao Paulo's night, Kolkata's morning, Sydney's lunch
    "night": pd.Timestamp("2026-06-17T03:00Z"),
    # a Tuesday 08:00 UTC, two days after Sydney's DST began (Oct 4): 19:00 there, 09:00 London
    "dst": pd.Timestamp("2026-10-06T08:00Z"),
}


def main() -> None:
    cli(make, CLOCKS, [1, 2], __doc__.splitlines()[0])


if __name__ == "__main__":
    main()
