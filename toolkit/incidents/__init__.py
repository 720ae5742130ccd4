"""Incidents: what went wrong in an Activity, one row each, with numbers a person can check.

>>> incidents = toolkit.find_incidents(activity)
>>> print(*incidents["summary"], sep="\\n")

How an incident is decided
--------------------------
Delivery jobs (`toolkit.metrics.delivery_jobs`) are counted per group and time bucket (at most
192 buckets over the window: an hour for a week, a minute for a few hours; ``freq=`` overrides).
A job *met a failure* when any of its attempts failed (retries still pending included), so an
outage shows before its retries are exhausted.

=====================  ====================================  ==================================
kind                   group                                 counted (events / trials)
=====================  ====================================  ==================================
provider_outage        (channel, provider)                   met a failure / sent or failing
error_spike            (channel, provider, error code)       met a failure with the code / same
stale_credentials      (channel, provider, error code)       as error_spike
domain_bounces         (email, provider, recipient domain)   met a failure / sent to the domain
latency_degradation    (channel, provider)                   time to send above the baseline's
                                                             90th percentile / sent
volume_drop            (channel, provider) and (channel)     notifications sent there / all
                                                             notifications (too few)
=====================  ====================================  ==================================

Every contiguous run of buckets of every group is a candidate period. Each group's best one (the
largest likelihood ratio: Kulldorff's Bernoulli scan statistic) is tested with the exact
conditional test of its count against the **baseline**: the rest of the window, or the same group
in ``baseline=`` (an Activity, e.g. the week before). The p-value is multiplied by the number of
periods examined in all groups and kinds (Bonferroni) and must be at most ``alpha``. Only periods
with enough evidence are examined (and counted): ``min_jobs`` jobs, ``min_failed`` events (for a
volume drop: that many expected), a rate ``min_ratio`` times the baseline's (volume: at most
``1 / min_ratio`` of it); a row also needs events of ``min_failed`` different subscribers. A
group's next best period apart from those found is tested the same way (up to 4 per group), so
separate incidents of one provider are separate rows, and adjacent bad buckets are one period.

The period's edges are then put on the jobs' own timestamps: the run of jobs where the events are
bunched (the maximum-scoring segment of the per-job likelihood ratio), from the first event's
start to the last event's end (a failure's last execution detail, a slow job's first Success).
``ongoing`` is True when the jobs after the last event are too few to show that it stopped (none
of them an event had a chance above 1% at the incident's rate).

One row per incident. Candidates are taken in this order, and one whose affected jobs are at least
half a kept row's is the same incident, dropped: domain_bounces (kept only when the provider's
other domains failed at most half as often in the period: a provider failing everywhere is an
outage), stale_credentials (an error the service does not retry, and the subscribers it hit do
not succeed again on that provider; with too few sent to again, a code or message saying token,
credential, registration, 401/403/410... that lasts to the end of the window), provider_outage (at least ``outage_rate`` of the sends
failed and the service retried most of them), error_spike, provider_outage below
``outage_rate`` (many codes at once), latency_degradation. A channel gone silent is one
volume_drop row (its providers' rows are dropped unless exactly one provider is silent). No rule
depends on a provider's name.

Impact: ``notifications``, ``subscribers`` and ``workflows`` (most hit first) of the jobs of the
group in the period that met the problem (a failed attempt, even if a retry succeeded later;
every send of a latency degradation); for a volume drop, ``notifications`` is the estimate
expected minus sent, ``subscribers`` 0. ``jobs``, ``failed_jobs``, ``failure_rate`` are the
trials, events and their share in the period; ``baseline_rate`` the baseline's share. An empty
result has every column; ``attrs["reason"]`` says why (no jobs, a window too short for a
baseline, nothing departs) and ``attrs["checked"]`` what was examined.
"""

from toolkit.incidents.detect import find_incidents
from toolkit.incidents.summary import COLUMNS, KINDS

__all__ = ["COLUMNS", "KINDS", "find_incidents"]
