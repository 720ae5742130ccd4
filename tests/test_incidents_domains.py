"""One cause, one row for a recipient domain (`toolkit.incidents.detect._one_per_domain`), on a
quiet week of shaped traffic with planted failures (`fail_more`): a provider's error that is
mostly one domain's failures is that domain's bounces; a domain failing inside an error that
hits every domain is that error; a domain holding most of a provider's sends is not its
bounces unless its share of the failures is twice its share of the sends."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.test_incidents_rates import HISTORY, NOW, fail_more
from toolkit import metrics
from toolkit.incidents import find_incidents
from toolkit.sandbox.seed.shaped import shaped_traffic

#: The planted failures' four hours, in the afternoon two days before the week's end.
DURING = (NOW - pd.Timedelta(hours=46), NOW - pd.Timedelta(hours=42))
ALL_DAY = range(24)
PROVIDER_ROWS = ("error_spike", "provider_outage")


@pytest.fixture(scope="module")
def quiet():
    """A quiet week, the four weeks before it, and its busiest email provider."""
    traffic, after = shaped_traffic(2, NOW, incidents=False), NOW - pd.Timedelta(days=7)
    week, history = traffic.window(after, NOW)[0], traffic.window(after - HISTORY, after)[0]
    sent = metrics.delivery_jobs(week)
    provider = sent.loc[sent["channel"].eq("email").fillna(False), "provider_id"].mode()[0]
    return week, history, provider


def shares(activity, provider) -> pd.Series:
    """``provider``'s recipient domains by their share of its sends."""
    sent = metrics.delivery_jobs(activity)
    return sent.loc[sent["provider_id"].eq(provider).fillna(False), "domain"].value_counts(
        normalize=True
    )


def planted(before, after, provider) -> pd.DataFrame:
    """The delivery jobs of ``provider`` failed in ``after`` and not in ``before``."""
    was = metrics.delivery_jobs(before).set_index("job_id")["outcome"]
    now = metrics.delivery_jobs(after)
    now = now[now["provider_id"].eq(provider).fillna(False) & now["outcome"].eq("failed")]
    return now[now["job_id"].map(was).ne("failed").to_numpy()]


def fail(activity, provider, code, share, *, domain=None, seed=0):
    """`fail_more` all day during `DURING`."""
    rng = np.random.default_rng(seed)
    return fail_more(activity, provider, code, share, rng, hours=ALL_DAY, during=DURING,
                     domain=domain)  # fmt: skip


def to_domains(activity, domains):
    """``activity`` with only the notifications to recipients of ``domains``, and their jobs
    and execution details (a product whose recipients are on fewer domains)."""
    notes, jobs, details = activity
    to = notes["subscriber_email"].str.lower().str.split("@").str[-1]
    ids = notes.loc[to.isin(domains).fillna(False).to_numpy(), "notification_id"]
    return type(activity)(
        notes[notes["notification_id"].isin(ids)],
        jobs[jobs["notification_id"].isin(ids)],
        details[details["notification_id"].isin(ids)],
    )


def fewer_domains(quiet, count):
    """`quiet` with only the recipients of the provider's ``count`` largest domains."""
    week, history, provider = quiet
    domains = list(shares(week, provider).index[:count])
    return to_domains(week, domains), to_domains(history, domains), provider


@pytest.fixture(scope="module", params=[None, 6], ids=["every-domain", "six-domains"])
def two_codes(request, quiet):
    """The provider's largest domain (a minority of its sends; with six domains, close to half
    of them) refusing its mail with two codes ("no such mailbox", then "mailbox full"): the
    domain's row is of the first code, the second is an error row of the provider whose
    failures are almost all that domain's, twice its share of the sends and more."""
    week, history, provider = quiet if request.param is None else fewer_domains(quiet, 6)
    domain = shares(week, provider).index[0]
    bounced = fail(week, provider, "5.1.1", 0.5, domain=domain)
    bounced = fail(bounced, provider, "4.2.2", 0.8, domain=domain, seed=1)
    return week, history, provider, bounced, planted(week, bounced, provider), domain


def test_a_provider_failing_for_one_domain_is_one_domain_bounces_row(two_codes):
    week, history, provider, bounced, hit, domain = two_codes
    assert shares(week, provider).iloc[0] < 0.5  # the case: a minority of the provider's sends
    assert hit["domain"].eq(domain).all() and set(hit["error_code"]) == {"5.1.1", "4.2.2"}
    found = find_incidents(bounced, baseline=history)
    assert len(found) == 1, list(found["summary"])
    row = found.iloc[0]
    assert row["kind"] == "domain_bounces" and row["domain"] == domain
    assert row["provider_id"] == provider and row["providers"] == [provider]
    sent = metrics.delivery_jobs(bounced)
    sent = sent[sent["provider_id"].eq(provider).fillna(False) & sent["domain"].eq(domain).fillna(False)
                & sent["started_at"].between(row["started_at"], row["ended_at"])]  # fmt: skip
    failed = sent[sent["outcome"].eq("failed")]
    assert set(hit["job_id"]) <= set(failed["job_id"])  # every planted failure, in its period
    assert row["notifications"] == failed["notification_id"].nunique()  # its whole impact
    assert len(failed) <= row["jobs"] <= len(sent)  # the domain's sends, none counted twice


def test_the_kinds_asked_select_a_domains_row_they_do_not_change_it(two_codes):
    _, history, _, bounced, _, _ = two_codes
    columns = ["kind", "domain", "providers", "notifications", "jobs", "started_at", "ended_at"]
    every = find_incidents(bounced, baseline=history)[columns]
    alone = find_incidents(bounced, baseline=history, kinds=["domain_bounces"])[columns]
    pd.testing.assert_frame_equal(alone, every)
    assert find_incidents(bounced, baseline=history, kinds=list(PROVIDER_ROWS)).empty


def assert_one_provider_row(found: pd.DataFrame, provider: str, hit: pd.DataFrame) -> None:
    """One row, the provider's error (no domain), with the planted failures' notifications."""
    assert len(found) == 1, list(found["summary"])
    row = found.iloc[0]
    assert row["kind"] in PROVIDER_ROWS and row["provider_id"] == provider
    assert pd.isna(row["domain"])
    assert abs(row["notifications"] - hit["notification_id"].nunique()) <= 0.1 * len(hit)


@pytest.mark.parametrize("worse", [0.0, 0.9], ids=["alike", "worse-for-one-domain"])
def test_an_error_hitting_every_domain_is_one_provider_row(quiet, worse):
    """Every domain failing alike, or one domain worse than the rest (its own row, mostly that
    error's failures, is the error's): one row of the provider and none of a domain."""
    week, history, provider = quiet
    failing = fail(week, provider, "4.2.2", 0.3)
    domain = shares(week, provider).index[1]  # not the largest: its bounces fewer than the rest
    if worse:
        failing = fail(failing, provider, "4.2.2", worse, domain=domain, seed=1)
    hit = planted(week, failing, provider)
    assert_one_provider_row(find_incidents(failing, baseline=history), provider, hit)


def test_a_domain_with_most_of_a_providers_sends_is_not_its_bounces_below_twice(quiet):
    """A product whose recipients are mostly on one domain: an error hitting every domain,
    that domain a little more often (not twice as often as the rest: no row of its own), has
    more of its failures on that domain than its share of the sends, not twice that share:
    the provider's row, not the domain's."""
    week, history, provider = fewer_domains(quiet, 3)
    main = shares(week, provider)
    failing = fail(week, provider, "4.2.2", 0.4)
    failing = fail(failing, provider, "4.2.2", 0.5, domain=main.index[0], seed=1)
    hit = planted(week, failing, provider)
    sent = metrics.delivery_jobs(week)
    sent = sent[sent["provider_id"].eq(provider).fillna(False)
                & sent["started_at"].between(*DURING)]  # fmt: skip
    share = sent["domain"].eq(main.index[0]).mean()
    failed = hit["domain"].eq(main.index[0]).mean()
    assert main.iloc[0] > 0.5 and share > 0.5  # the case: most of the provider's sends
    assert share + 0.1 < failed < 2 * share  # more than its share of the failures, not twice
    assert_one_provider_row(find_incidents(failing, baseline=history), provider, hit)
