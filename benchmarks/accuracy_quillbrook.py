"""Accuracy of `toolkit.find_incidents` on Quillbrook's traffic (`quillbrook`, written blind).

Quillbrook is a B2B project-management SaaS whose customers' teams work in five regions.

For each seed and clock it draws eight weeks of quiet traffic (office hours and lunch in five
time zones with their own summer time and public holidays, Monday planning digests, daily task
emails, meetings' bursts of comments and chat rate limits, 2FA SMS, month-start invoices,
nightly trial reminders, release blasts, a user base growing 3% a week) and the same traffic
with nine planted incidents (a mailgun degradation over six days, a workflow stopping for 6 h,
a 2 h SendGrid outage, a customer domain bouncing for 5 h, 1.5 h of Slack 429s, an hour's
comment loop, 4 h of slow FCM, an SMS failover from Twilio to SNS, stale APNs credentials).
Each window of 1, 7 and 28 days ending at the clock is read with ``baseline=`` the 28 days
before it; ``28nb`` is the 28-day window read without one; rows are scored as
`accuracy_larkspur` scores them (found, missed, impact, extra, related, quiet rows).

    python benchmarks/accuracy_quillbrook.py [--seeds 1 2] [--clocks monday us-night month-end]
                                             [--windows 1 7 28 28nb] [--load-latency 0.4]
                                             [--loop-mult 5]

Seeds 1 and 2 send about 2,500 and 10,000 notifications a day.
"""

import pandas as pd
from accuracy_larkspur import cli
from quillbrook import make

CLOCKS = {  # the end of every window
    "monday": pd.Timestamp("2026-04-13T08:00Z"),  # Monday morning in Europe, after Easter
    "us-night": pd.Timestamp("2026-11-19T06:00Z"),  # Thursday 01:00 New York, after Diwali
    "month-end": pd.Timestamp("2026-07-03T16:00Z"),  # Friday after the quarter's end (US holiday)
}


def main() -> None:
    cli(make, CLOCKS, [1, 2], __doc__.splitlines()[0])


if __name__ == "__main__":
    main()
