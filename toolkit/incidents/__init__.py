"""Incidents: what went wrong in an Activity or a Store, one row each, with numbers a person can
check.

>>> incidents = toolkit.find_incidents(activity)
>>> incidents = toolkit.find_incidents(store, after="7d", baseline=store)   # DuckDB or Spark
>>> print(*incidents["summary"], sep="\\n")

How an incident is decided
--------------------------
Delivery jobs (`toolkit.counts.DELIVERY_JOBS`) are counted per group and time bucket by the
engine that holds them (`toolkit.counts.scan_counts`: DuckDB over the frames or the store's
files, or Spark), at most 224 buckets over the window (an hour for a week, three hours for four
weeks, a minute for a few hours; ``freq=`` overrides); a job's bucket is its first execution
detail's, else its trigger's.
Only the rows of the few significant periods are fetched, to put their edges on the jobs' own
timestamps and decide their kind and impact (below).
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
                                                             90th percentile of its workflow
                                                             (its pair's with fewer than
                                                             `toolkit.counts.WORKFLOW_SENDS`;
                                                             read alone, the window's: its own
                                                             if sent on half its days) / sent
volume_drop,           (channel), (channel, provider),       delivery jobs per hour against the
volume_spike,          (workflow)                            seasonal baseline (below)
traffic_shift
=====================  ====================================  ==================================

The seasonal baseline (volume)
------------------------------
Traffic has a daily and weekly rhythm, so volume is compared with what each group usually sends at
that hour of that day of the week. `toolkit.delivery_counts` counts delivery jobs per hour and
(channel, provider, workflow); a cell's expected count at an hour is the median of the same hour of
the week in other weeks, scaled to the cell's usual weekly total (`season.center`), drawn toward the
center of that hour and its neighbours by as much as it is uncertain (a quiet hour's median of a few
weeks is, at least as a Poisson count: `season.pooled`). The weeks are the window's own (each week
against the others) when it spans `season.MIN_WEEKS` weeks, else those of ``baseline=``: an
Activity, a Store (its four weeks before the window, one counts query) or such counts. A window of
`season.PAIRED_WEEKS` weeks read alone is its own season too where its channels' shares of the
notifications follow the hour of the day (flat shares keep the rest of the window as their baseline,
below), each week the other's history: an incident in one week is then an opposite departure of the
other, so a row is kept only when its own week departs, from the same hours of the window's other
days (at the level of the hours beside them) and more than the other week does the other way
(`volume.confirmed`); its expected jobs weigh both (`volume.expected_jobs`). An hour only partly
inside the window is left out (its jobs may all fall in the part outside: a batch in its first
minutes); a drop is ``ongoing`` while what its group sent in the hours after it, to the last whole
one, had a chance above `scan.STILL_GOING` at the drop's own share of the expected jobs
(`volume.still_going`: a night or an office closed cannot show it stopped), a spike while it runs to
the last whole hour. How much counts vary is measured on the same weeks, not assumed: each cell's
and group's hourly variance ``a * e + b * e**2`` at an expected count ``e`` (bursts raise ``a``,
busier or quieter hours ``b``: a quiet night varies less than a busy afternoon; `season.dispersion`)
and how much whole days vary together (``spread``, `season.day_spread`: at one standard error above
what a month's few days show); a period of expected count ``e`` has its hours' variance plus
``spread * e**2`` and its count is tested as negative binomial with that mean and variance
(`scan.count_p_value`). Its p-value is multiplied by the number of volume and failure periods
examined, where a volume period of ``l`` hours counts ``1 / l`` (overlapping periods are nearly the
same test; `scan.effective_tests`). A group's period with at most ``1 / min_ratio`` of its expected
jobs is a ``volume_drop``; with ``min_ratio`` times them and more than its bursts and two of its
busiest expected hours (a workflow's: of the period itself, so that a loop on a quiet Saturday
counts against Saturday's traffic; a channel's or provider's: of the window), and a larger departure
than any of the group's as long in each week of the history against the others, and, when its hours
of the week expect next to nothing (under a job an hour), from the same hours of the other days, the
window's and the baseline's (each scaled by the hours beside it, `volume.confirmed`: a promotion
sent on days that change from week to week is expected none on a day no other week sent it), a
``volume_spike`` (recurring batches and the group's usual bursts are in the history, so only what
departs from it is) when its send occasions (below) depart too and it adds more than
`volume.LARGER` times the most the group added over as many hours in a week of the history
(`volume._usual_burst`: a campaign most weeks on whichever day and hour; a baseline's
weeks count too when the window makes its own season, `season.Season.earlier`), or its repeats
(notifications beyond one per subscriber: a loop for a few people, where the group triggers in
most minutes already, whatever its size) depart and make at least `volume.LOOP_SHARE` of the
notifications it added (`volume._mostly_repeats`: a payday's deposit wave reaches new people, a
few of them twice; a loop the same people again), or it adds more than the usual bursts and its
busiest hour sends more than twice the group's busiest in the history (`volume.triggered`; a
group the history never saw send, a monthly statement a shorter history cannot hold or a new workflow's first broadcast, has no
usual size to be larger than: it spikes only by its repeats, `volume._sent_before`: a
fan-out sent at once is one occasion, once per subscriber, and makes a tail heavier than its
variance says); a workflow's spike short of two of the window's busiest hours only when its repeats
depart (a loop: a small workflow's fan-out on a quiet evening is none). A spike takes in the hour
either side that sends more than `volume.EDGE` standard deviations beyond its expected count (a loop
from 18:47 to 19:47). A period not significant by its counts is by its occasions, when they are
(`volume.on_occasions`: a loop triggering a workflow that fans out). A loop is found by its
recipients too, however small its count next to its workflow's busy hours (`loops`): the most
notifications one subscriber got from a workflow in an hour (`toolkit.counts.recipient_peaks`)
has a tail that falls off about exponentially (a thread of comments, a few login codes), read
from the history's hours when a store or an Activity is the baseline, else the window's; an hour
peaking beyond it with a chance under ``alpha`` over the tests is a loop. Its row names its people
(``subscribers``: those who got more than 99 hours in 100 peak at, over its hours and the hour
either side), counts what they got in its hours and in the hours either side they got more than
one in, and is the spike row of its workflow at the time. A row that is its group's usual
traffic an hour off is none (`volume.an_hour_off`: summer time's end moves what is sent at a local
hour an hour in UTC): half of what it misses (sends too many) is too many (missing) in the hours
either side, and no more than an hour's shift can move, or against the expected counts an hour off
no run departs. A run of hours without a job is a *silence*, tested on the group's send occasions
(`toolkit.counts.occasion_counts`: minutes with at least one send; a burst or a batch is one):
clumped sends have the measured variance, but none at all means no clump at all, so its p-value is
the chance of no occasion from the group's last send before it to its first after (each hour a
negative binomial count of occasions with their own measured variance, at the level of the day
around it, and empty at least as often as the history's hours were (`season.empty_rate`: an order's
four notifications minutes apart are four occasions, yet its hours are empty as often as its orders
say; the weeks a silence lies in are not its history, `volume.history_empty_rate`); times ``1 + x``
for the edges' ``x`` expected occasions, where the sends around it happen to fall, an edge hour
expected at no more than the busier of its neighbours: a batch sends in its hour's first minutes;
`volume.on_occasions`). A best-scoring run without a job takes that p-value; a group whose best run
is not significant takes its silence when that is less likely; so do its later rounds' runs. Many
independent sends stopping for hours are found; a batch that skips one run is not. A baseline of
counts has no occasions: silences keep the counts' law. Rows of one direction and
time whose missing (extra) jobs are mostly another's are one: the group that departs most (a
workflow that stopped, not every channel it sends on); but a provider's row is its channel's when,
over that row's hours, the channel's other providers' jobs are likelier at the provider's ratio of
jobs to expected jobs than as usual (every provider stopped: `volume._whole_of`). Drops (spikes) at
overlapping times are one row naming them, workflows first, most missing (extra) first (a public
holiday, the app that triggers them down, a sale day: one cause; spikes after the occasions test,
`volume.at_the_same_time`), its impact and likely range their sums; a channel or provider sharing
their cells that departs no further than they do is part of it (`volume.together`). A drop that is
a day like the week's off days is set aside, not a row (`toolkit.incidents.offdays`: a public
holiday of some of the senders: each workflow people trigger fell toward what it sends on the
week's two quietest days at those hours by one fitted share of its senders, schedules went out
as usual, its channels fell as their workflows did (its providers, each of which may carry a
region of its own, only no lower than their own off days), and that share makes at least half of
what each part of the drop misses; a workflow stopped, or a channel down, misses its jobs alone
and stays a row). A provider's
spike while another provider of its channel sends about as much less is one ``traffic_shift`` row
naming both (a failover), compared over the hours after the one the traffic moved in (that hour
holds both providers' jobs): a Monitor sees the failover as one shift from its first whole hour on,
not as a spike, then a drop. With too little history, volume is compared as before, as each
(channel, provider)'s and channel's share of the notifications against the rest of the window
(``volume_drop`` only), and ``attrs["baseline"]`` and the rows' summary say so; but only when those
shares are seen not to follow the hour of the day (over at least two days of the window, the failure
rates' F test: `rates.follow_the_day`). Shares that follow it, or a window too short to tell, make
the rest of the window no baseline (each night would be a drop): volume is then not compared, and
``attrs["baseline"]`` says why and asks for ``baseline=``. A store's days without files are gaps
(the window's own are neither counted nor expected): the history's weeks touching them are left out,
the window's own too when they are its season (fewer than three whole weeks left: the fallback; so
is a window under two weeks read alone). Read alone, the start of a window before a service's first
job is such a gap when it is at least a day, longer than any silence of the whole service after it
(`season.no_history`: a read reaching back before the service began, or before the activity it
keeps; with ``baseline=``, the service was sending before: a silence). A baseline sharing no
(channel, provider, workflow) with the activity, or an Activity of other environments, is a
`ParameterError`. ``notifications`` of a volume row: the missing (extra) jobs over the group's
jobs per notification (a traffic shift's: those the provider it moved to sent beyond its expected,
what moved; the other's shortfall also holds the traffic's own departure); its expected jobs are
at the level of its day (a whole day runs busier or quieter than the season's usual one): scaled
by the group's jobs over its expected jobs in the 24 hours either side, weighed by how much its days vary against how uncertain that ratio is
(`volume._level`). A channel or provider whose workflows keep triggering (a channel failing, not a
workflow stopping) is also measured against what those workflows sent at the time on their other
channels, times their usual jobs here per job there; the two estimates are weighed by their
variances, how closely the channel follows the others measured on the history
(`volume.expected_jobs`): an hour far busier or quieter than usual is then counted as it was.

Failures
--------
Every contiguous run of buckets of every group is a candidate period. Each group's best one (the
largest likelihood ratio: Kulldorff's Bernoulli scan statistic) is tested with the exact
conditional test of its count against the **baseline**: the rest of the window, or the same
group in ``baseline=`` (an Activity, e.g. the weeks before). Failures bunch (retries, a
subscriber failing again, fan-outs), so each group's *dispersion* (how much more than a binomial
law its counts per bucket vary around their expected counts, measured on the baseline, its own
incidents left out) divides the counts tested: a quasi-binomial test (`rates`). Measured on the
window itself, an incident that holds much of it (an outage in a Monitor's first minutes) raises
the rate the buckets are measured around; a period is then tested with the dispersion around the
rest of the window's rate, when that is smaller. Where the baseline (or the window, its own
weeks) spans three weeks and a group's failure rate varies by hour of the day beyond chance (a
quasi-likelihood F test of the hours' rates against that dispersion, at 0.01 over the groups),
its trials are weighed by the rate of their hour: a period's expected failures are its sends at
their hours' usual rate, so a night that always fails more is not an incident and a night
failing more than its usual is ("usually X at these hours"); otherwise the rate is flat, and
``attrs["baseline"]`` says which. An hour of the week departing from the same hour of the other
days in every week, its highest aside, keeps its own rate (a weekly batch's load:
`rates._by_week`); a period's jobs are weighed by the rate of their own hour (`rates.Rates.weigh`),
and a period at the rate its hours have an hour earlier or later is no incident (the clocks
changed). Whole days of a group's failures vary together too (a carrier's bad day): their
relative variance beyond their buckets', measured on at least two weeks of days of the
history, the fifth departing most left out (`rates.day_spread`), adds ``spread * e**2 / d`` to
the variance of a period of ``d`` days (at least 1) and ``e`` expected failures; a period under
a day is compared at its day's level instead, as the rest of the 24 hours centred on it shows it
(the posterior of a gamma law of mean 1 and variance ``spread`` given the failures and expected
failures there, quasi-Poisson: its mean multiplies the period's expected failures, its variance
times ``e**2`` is added; `scan.Scan.period_law`): a bad day raises the hours around too, and hours
failing more than the hours around them are no bad day. A provider's buckets vary as a whole too (its bad hours: its load, its own trouble, its codes failing more
together): its failures' variance at a bucket of ``e`` expected is ``a * e + b * e**2``, ``b``
the least-squares line of the history's squared Pearson residuals on ``e``, its buckets in a
far tail of that law left out (`rates.bucket_spread`; 0 with fewer than two weeks of buckets of
two expected failures), and a period of its codes and domains spanning ``h`` history buckets (at
least 1) adds ``b * e**2 / h``: a batch's busy hour varies by far more than its quiet hours'
dispersion says. A pair's slow sends have their own ``b`` the same way (a queue slows a bucket's
sends together: `detect.SPREAD_SCANS`). A pair's slow share may follow the service's load too (its sends in all pairs,
over the median of the same hour of the day in the history): ``ratio**g`` times its hours',
``g`` fitted on the history with a level of its own and believed above 0 at 1% over the pairs
(`rates.load_law`; `detect.LOAD_SCANS`): a provider queues its sends at a weekly report's hour
that sends no message through it. Read alone, a
window's period holding most of its jobs, the rest mostly after it, that
ended is no incident: the window saw the rate fall, not rise (`detect._never_began`). The
p-value is multiplied by the number of periods examined in all groups and kinds (Bonferroni)
and must be at most ``alpha``. Only periods with enough
evidence are examined (and counted): ``min_jobs`` jobs, ``min_failed`` events (for a volume
drop: that many expected), a rate ``min_ratio`` times the baseline's (volume: at most
``1 / min_ratio`` of it); a row also needs events of ``min_failed`` different subscribers, and
when half its events or more are one subscriber's, its p-value is the larger of its own and its
own without them (`detect._most_hit`: one person's dead token re-triggered by a loop is no
incident). An error code's row whose subscribers had mostly failed with that code on its provider
in the week before it (in the window) is none, nor a provider's or domain's row of the same
failures (`detect._standing`: mailboxes that do not exist, sent many emails in an afternoon, are
how those addresses are, not an incident). A
group's next best period apart from those found is tested the same way (up to 4 per group), so
separate incidents of one provider are separate rows, and adjacent bad buckets are one period.

The period's edges are then put on the jobs' own timestamps: the run of jobs where the events
are bunched (the maximum-scoring segment of the per-job likelihood ratio), from the first
event's start to the last event's end (a failure's last execution detail, a slow job's first
Success). A run with fewer than ``min_jobs`` jobs (nine failures in a row) takes in the group's
jobs nearest to it in time until it has that many: a small outage is counted, 9 failed of 10.
``ongoing`` is True when the jobs after the last event are too few to show that it stopped (none
of them an event had a chance above 1% at the incident's rate).

One cause per row: an error code's row is about that code, a provider's or a domain's row about
the error code at least half of its failures have (none has: many codes at once, each failure
counts). Its failures are those of its cause, and its window and impact follow from them: it
ends at the last failure of its cause, not at a later failure of the provider or the domain with
another code.

One row per incident. Candidates are taken in this order, and one whose affected jobs are at least
half a kept row's is the same incident, dropped: domain_bounces (kept only when the provider's other
domains failed at most half as often in the period: a provider failing everywhere is an outage),
stale_credentials (an error the service does not retry, and the subscribers it hit do not succeed
again on that provider; with too few sent to again, a code or message saying token, credential,
registration, 401/403/410... that lasts to the end of the window), provider_outage (at least
``outage_rate`` of the sends failed and the service retried most of them; or one error code on that
share of the provider's sends, retried: "usually" is then the provider's rate), error_spike,
provider_outage below ``outage_rate`` (many codes at once), latency_degradation (dropped when most
of its slow jobs are a kept row's failures: a retried error slows what it retries; and when at least
half of its period lies within a volume_spike of a group that sends through its provider, its p95 at
most three times the usual 90th percentile, the sends of the workflow most of its slow sends are
aside (a batch queues its own): the spike's load queued its sends, and the spike's row
names the slowdown; a slowdown needs its p95 at least `tables.SLOWER` times the usual 90th
percentile (each send's own: its workflow's): more sends slower, under that, is a busy evening's
queue; and more slow sends than
its workflows usually have: a batch whose sends always queue is no slowdown, `mix`; and when most
of its slow sends are one workflow's that sent more than `volume.LARGER` times its expected jobs
through the provider in at least half its hours: that workflow's own burst, a deposit wave larger
than its history held, queued them, unless it holds without them or began well before them, a
campaign sent into a slowdown, `volume.queued_by_own_burst`). A provider
rate limiting the sends (a code or message saying rate limit, throttled, too many requests, 429)
is an error_spike at any rate, never an outage: it is up; on at most `volume.LOAD_LIMITS` of the
sends, mostly within a volume_spike through the provider, the spike's load (named in its row);
so is a server error there (a code or message saying unavailable, internal error, overloaded,
5xx: `toolkit.error_codes.SERVER_ERROR`), the provider overloaded. So is such an error spike on a
few sends (at most `volume.LOAD_LIMITS`) that does not hold, at ``alpha``, without the sends of the
service's busy hours (`volume.busy_hours`: more than `volume.LARGER` times the median jobs of that
hour of the day over the history and the window: a weekly digest's, a campaign's, a payday's
hour): the busiest hours overloaded the provider, with no spike to name it in; no row (a window
without a seasonal baseline has no busy hours). A spike's load, slowing,
rate limiting or failing, of a burst that is no spike (a usual campaign, a fan-out
sent at once) is no row either. A domain bouncing through several providers is one
domain_bounces row (``providers`` names them), and an error row whose failures are mostly that
domain's (at least half of them, while the provider's sends to other domains then failed at most
half as often as the domain's: a domain with most of the sends, failing like the rest, is the
provider's error) joins it, its provider named once; once one provider's bounces are significant,
the row takes in the domain's failures of the same cause on the channel's other providers in its
period (one more query), naming a provider whose failures there depart from its own rate for the
domain (the exact test), so a share too small for a period of its own is counted, not an unrelated
bounce. A provider's error spikes of several codes at mostly the same time (at least half of the
shorter's period) are one error_spike row (a rate limit and a 5xx together: its bad half hour),
naming each code and its failed sends ("returned errors Throttling and ServiceUnavailable on 5% of
email (11 and 11 sends)"; ``error_code`` the first), its failures and impact theirs. ``kinds``
selects among the rows once they are one per incident; it does not change them. No
rule depends on a provider's, workflow's or hour's name.

Impact: ``notifications``, ``subscribers`` and ``workflows`` (most hit first) of the jobs of the
group in the period that met the problem (a failed attempt, even if a retry succeeded later;
every send of a latency degradation); for a volume drop, ``notifications`` is the estimate
expected minus sent, ``subscribers`` 0, and ``notifications_low`` to ``notifications_high`` the
range it likely (95%) lies in: what the period would have sent varies as its season says (its
hours' variance plus the group's day spread times the expected jobs squared; measured on the
shaped sweep, see the README); NA for the other rows, whose impact is counted, or a spike's.
``jobs``, ``failed_jobs``, ``failure_rate`` are the
trials, events and their share in the period; ``baseline_rate`` the baseline's share. An empty
result has every column; ``attrs["reason"]`` says why (no jobs, a window too short for a
baseline, nothing departs), ``attrs["checked"]`` what was examined, ``attrs["baseline"]``
what the volume was compared with and ``attrs["set_aside"]`` each significant failure or
slowdown read as a load rather than an incident, in a sentence: its summary, then whose load
(a burst that is no spike, a workflow's own burst queueing its sends, the service's busy hours),
and each drop read as a day like the week's off days.
"""

from toolkit.incidents.detect import find_incidents
from toolkit.incidents.summary import COLUMNS, KINDS

__all__ = ["COLUMNS", "KINDS", "find_incidents"]
