"""Incidents: what went wrong in an Activity, one row each, with numbers a person can check.

>>> incidents = toolkit.find_incidents(activity)
>>> incidents[["kind", "provider_id", "started_at", "ended_at", "notifications", "summary"]]

How an incident is decided
--------------------------
Delivery jobs (`toolkit.metrics.delivery_jobs`) are counted per group and time bucket (about
150-190 buckets over the window: 1 hour for a week, 1 minute for an hour; ``freq=`` overrides):

========================  ==========================================  =============================
kind                      group                                       counted
========================  ==========================================  =============================
provider_outage           (channel, provider)                         failed / finished + failed
error_spike               (channel, provider, error code)             failed with the code / jobs
stale_credentials         (channel, provider, error code)             as error_spike
domain_bounces            (email, provider, recipient domain)         failed / jobs to the domain
latency_degradation       (channel, provider)                         slower than the baseline's
                                                                      p95 time to send / sent
volume_drop               (channel, provider)                         its jobs / all jobs (too few)
========================  ==========================================  =============================

Every contiguous run of buckets of every group is a candidate period. Each group's best one (the
largest likelihood ratio, Kulldorff's Bernoulli scan statistic) is tested with the exact binomial
test against the **baseline**: the rest of the window, or the same group in ``baseline=`` (an
Activity, e.g. the week before). Its p-value is multiplied by the number of periods examined in
all groups and kinds (Bonferroni) and must be at most ``alpha``. Only periods with enough
evidence are examined and count: at least ``min_jobs`` jobs, ``min_failed`` events (for a volume
drop: that many jobs expected) and a rate ``min_ratio`` times the baseline's (a volume drop:
``1 / min_ratio`` of it). A group's next best period, apart from those found, is tested the same
way (up to 4 per group), so separate incidents of one provider are separate rows; bad buckets
next to each other are one period. The period's edges are then put on the jobs' own timestamps:
the run of jobs where the events are bunched (the maximum-scoring segment of the per-job
likelihood ratio), from the first event's start to the last event's end (a failure's last
execution detail, a slow job's first Success). ``ongoing`` is True when the jobs after the last
event are too few to show that it stopped (no event among them had a chance above 5%).

One row per incident: an error code that is a provider's outage, or a domain's bounces, is not
also an error_spike. Candidates are taken in this order, and one whose affected jobs are at
least half another kept row's is dropped: domain_bounces (kept only when that domain has at least
half of the provider's failures in the period; a provider failing for every domain is an
outage), stale_credentials (an error code lasting to the end of the window whose code or message
says token/credential/registration/401/403/410..., or whose subscribers never succeed again on
that provider), provider_outage (failure rate at least ``outage_rate``), error_spike,
provider_outage below ``outage_rate`` (failures of many codes), volume_drop,
latency_degradation. Impact (``notifications``, ``subscribers``, ``workflows``) counts the jobs
of the group in the period that met the problem: a failed attempt (including jobs that recovered
on a retry), or a slow send; for a volume drop, ``notifications`` is the estimated number of
missing sends. ``failure_rate`` and ``baseline_rate`` are the rates of what was counted (see the
table), in the period and in the baseline. An empty result has every column, and its
``attrs["reason"]`` says why (no jobs, a window too short for a baseline, nothing departs).
"""

from toolkit.incidents.detect import find_incidents
from toolkit.incidents.summary import COLUMNS, KINDS

__all__ = ["COLUMNS", "KINDS", "find_incidents"]
