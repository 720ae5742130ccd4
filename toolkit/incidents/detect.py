"""`find_incidents`: scan every group and period of an Activity, keep what the tests say, one row
per incident (the rules are in the package docstring)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from toolkit import metrics
from toolkit.errors import ParameterError
from toolkit.incidents.scan import Evidence, Pick, Scan, p_value, segment
from toolkit.incidents.summary import KINDS, empty, rows_frame

#: Bucket widths `find_incidents` picks from (the first giving at most `MAX_BUCKETS` buckets).
FREQS = ("1min", "2min", "5min", "10min", "15min", "30min", "1h", "2h", "3h", "6h", "12h", "1D")
MAX_BUCKETS = 192
#: Fewer buckets than this: the window is too short to compare a period with the rest of it.
MIN_BUCKETS = 6
#: Quantile of the baseline's time to send above which a job counts as slow.
SLOW_QUANTILE = 0.95
#: Error codes and payloads that say a token or credential is no longer valid (any provider).
CREDENTIAL_WORDS = re.compile(
    r"token|regist|credential|unauthori[sz]ed|invalid[_ ]?auth|revoked|expired|forbidden|"
    r"no_service|\bgone\b|\b(401|403|410)\b|not[_ ]?found|deactivated|uninstalled|"
    r"invalid[_ ]?(api[_ ]?)?key|bad[_ ]?device",
    re.IGNORECASE,
)
#: Share of a row's affected jobs already in a kept row above which it is the same incident.
SAME_INCIDENT = 0.5


@dataclass(frozen=True)
class _Spec:
    """What one scan counts: trials grouped by ``keys``, events split by ``split``."""

    name: str
    keys: tuple[str, ...]
    split: tuple[str, ...] = ()
    low: bool = False


_SPECS = {
    "provider": _Spec("provider", ("channel", "provider_id")),
    "code": _Spec("code", ("channel", "provider_id"), ("error_code",)),
    "domain": _Spec("domain", ("channel", "provider_id", "domain")),
    "latency": _Spec("latency", ("channel", "provider_id")),
    "volume": _Spec("volume", (), ("channel", "provider_id"), low=True),
}
_SCANS_OF = {
    "provider_outage": ("provider",),
    "error_spike": ("code", "provider"),
    "stale_credentials": ("code",),
    "domain_bounces": ("domain",),
    "latency_degradation": ("latency",),
    "volume_drop": ("volume",),
}


def find_incidents(
    activity: Any,
    *,
    baseline: Any = None,
    kinds: list[str] | tuple[str, ...] | None = None,
    alpha: float = 0.01,
    min_jobs: int = 10,
    min_failed: int = 5,
    min_ratio: float = 2.0,
    outage_rate: float = 0.5,
    freq: str | None = None,
) -> pd.DataFrame:
    """The incidents in ``activity``, one row each, sorted by impact (see `toolkit.incidents`)."""
    _check(kinds, alpha, min_jobs, min_failed, min_ratio, outage_rate)
    jobs = metrics.delivery_jobs(activity)
    base_jobs = None if baseline is None else metrics.delivery_jobs(baseline)
    after, before = _window(activity, jobs)
    wanted = tuple(KINDS) if kinds is None else tuple(kinds)
    checked = {"kinds": list(wanted), "jobs": int(len(jobs)), "after": after, "before": before}
    if jobs.empty or after is None:
        return empty("no delivery jobs in the activity", checked)
    step = _freq(freq, before - after)
    buckets = int(np.ceil((before - after) / step)) or 1
    checked["freq"] = step
    if baseline is None and buckets < MIN_BUCKETS:
        return empty(f"the window ({before - after}) is too short to compare a period with the "
                     "rest of it: read a longer window or pass baseline=", checked)  # fmt: skip
    table = _prepare(jobs, after, step, buckets, base_jobs)
    base = None if base_jobs is None else _prepare(base_jobs, after, step, buckets, None)
    names = sorted({name for kind in wanted for name in _SCANS_OF[kind]} - {"volume"})
    rules = {
        name: Evidence(min_jobs, min_failed, min_ratio, low=_SPECS[name].low) for name in names
    }
    scans = {name: _scan(table, base, _SPECS[name], buckets, rules[name]) for name in names}
    tests = sum(scan.tests for scan, _ in scans.values()) or 1
    checked["tests"] = tests
    candidates = []
    for name, (scan, groups) in scans.items():
        for pick in _significant(scan, alpha / tests):
            row = _refine(table, _SPECS[name], groups, scan, pick, tests, rules[name], after,
                          before)  # fmt: skip
            if row is not None and row["p_value"] <= alpha:
                candidates.append(row)
    rows = _one_per_incident(table, candidates, wanted, outage_rate)
    if not rows:
        return empty("no period of any group departs from its baseline", checked)
    return rows_frame(rows, table, activity.execution_details, checked)


# -- parameters and preparation ------------------------------------------------------------


def _check(kinds, alpha, min_jobs, min_failed, min_ratio, outage_rate) -> None:
    if kinds is not None and (
        isinstance(kinds, str) or not set(kinds) <= set(KINDS) or not len(kinds)
    ):
        raise ParameterError("kinds", kinds, f"None (all) or a list of {list(KINDS)}")
    if not _number(alpha) or not 0 < alpha < 1:
        raise ParameterError("alpha", alpha, "a probability between 0 and 1, e.g. 0.01")
    for name, value in (("min_jobs", min_jobs), ("min_failed", min_failed)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
            raise ParameterError(name, value, "an integer >= 1")
    if not _number(min_ratio) or min_ratio < 1:
        raise ParameterError("min_ratio", min_ratio, "a number >= 1 (rate / baseline rate)")
    if not _number(outage_rate) or not 0 < outage_rate <= 1:
        raise ParameterError("outage_rate", outage_rate, "a failure rate in (0, 1]")


def _number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float | np.number)


def _window(activity: Any, jobs: pd.DataFrame) -> tuple[pd.Timestamp | None, pd.Timestamp | None]:
    """The window read: from the read's provenance, else the jobs' extent."""
    attrs = getattr(activity, "attrs", None) or {}
    at = jobs["started_at"].fillna(jobs["triggered_at"])
    after, before = attrs.get("after"), attrs.get("before")
    after = pd.Timestamp(after) if after is not None else at.min()
    before = pd.Timestamp(before) if before is not None else at.max()
    if pd.isna(after) or pd.isna(before):
        return None, None
    after, before = (t.tz_localize("UTC") if t.tzinfo is None else t for t in (after, before))
    return after, max(before, at.max() if at.notna().any() else before)


def _freq(freq: str | None, span: pd.Timedelta) -> pd.Timedelta:
    if freq is not None:
        try:
            step = pd.Timedelta(freq)
        except (TypeError, ValueError):
            step = pd.Timedelta(0)
        if step <= pd.Timedelta(0):
            raise ParameterError("freq", freq, "None (automatic) or a duration such as '15min'")
        return step
    for name in FREQS:
        if span / pd.Timedelta(name) <= MAX_BUCKETS:
            return pd.Timedelta(name)
    return span / MAX_BUCKETS


def _prepare(jobs, after, step, buckets, base_jobs) -> pd.DataFrame:
    """Jobs with their time ``at`` (first execution, else trigger), bucket and flags, by time."""
    at = jobs["started_at"].fillna(jobs["triggered_at"])
    outcome = jobs["outcome"].astype("string")
    send = metrics.time_to_send(jobs)
    reference = jobs if base_jobs is None else base_jobs
    slow_above = metrics.time_to_send(reference).groupby(_pair(reference)).quantile(SLOW_QUANTILE)
    table = jobs.assign(
        at=at,
        bucket=((at - after) // step).clip(0, buckets - 1).fillna(0).astype("int64"),
        decided=outcome.isin(["finished", "failed"]).to_numpy(),
        failed=outcome.eq("failed").to_numpy(),
        met_failure=(jobs["error_text"].notna() | jobs["error_code"].notna()).to_numpy(),
        attempted=outcome.ne("not_sent").to_numpy(),
        time_to_send_s=send,
    )
    limit = _pair(jobs).map(slow_above).astype("float64")
    table["timed"] = send.notna().to_numpy()
    table["slow"] = (send > limit).fillna(False).to_numpy()
    table["slow_above"] = limit.to_numpy()
    failure_end = table["ended_at"].where(table["failed"])
    sent_at = table["at"] + pd.to_timedelta(send, unit="s")
    table["event_end"] = failure_end.fillna(sent_at).fillna(table["at"])
    return table.sort_values("at", kind="stable").reset_index(drop=True)


def _pair(jobs: pd.DataFrame) -> pd.Series:
    return jobs["channel"].astype("string") + "/" + jobs["provider_id"].astype("string")


# -- the scans -------------------------------------------------------------------------------


def _population(table: pd.DataFrame, name: str) -> tuple[pd.Series, pd.Series]:
    """Which jobs are trials of the scan, and which of them are events."""
    if name == "provider":
        return table["decided"], table["failed"]
    if name == "code":
        return table["decided"], table["failed"] & table["error_code"].notna()
    if name == "domain":
        return table["decided"] & table["domain"].notna(), table["failed"]
    if name == "latency":
        return table["timed"], table["slow"]
    return table["attempted"], table["attempted"]


def _codes(frame: pd.DataFrame, keys: tuple[str, ...], mask: pd.Series) -> tuple[np.ndarray, list]:
    """A group number per row (-1 outside ``mask``) and the groups' key tuples (None: missing)."""
    mask = mask.to_numpy(dtype=bool)
    if not keys:
        return np.where(mask, 0, -1), [()]
    part = frame.loc[mask, list(keys)].astype("object")
    part = part.where(part.notna(), None)
    codes, uniques = pd.factorize(pd.Series(list(zip(*(part[k] for k in keys), strict=True))))
    full = np.full(len(frame), -1)
    full[mask] = codes
    return full, list(uniques)


@dataclass
class _Groups:
    """One scan's groups: trial and event group numbers per job, key values per event group."""

    trial: np.ndarray
    event: np.ndarray
    keys: list[dict[str, Any]]
    parent: np.ndarray


def _groups(table: pd.DataFrame, spec: _Spec) -> _Groups:
    trials, events = _population(table, spec.name)
    trial, trial_keys = _codes(table, spec.keys, trials)
    event, keys = _codes(table, spec.keys + spec.split, events & trials)
    parent_of = {key: n for n, key in enumerate(trial_keys)}
    parent = np.array([parent_of[key[: len(spec.keys)]] for key in keys], dtype=int)
    names = spec.keys + spec.split
    return _Groups(trial, event, [dict(zip(names, key, strict=True)) for key in keys], parent)


def _matrix(codes: np.ndarray, buckets: np.ndarray, rows: int, width: int) -> np.ndarray:
    inside = codes >= 0
    flat = np.bincount(codes[inside] * width + buckets[inside], minlength=rows * width)
    return flat.reshape(rows, width)


def _scan(table, base, spec: _Spec, buckets: int, rule: Evidence) -> tuple[Scan, _Groups]:
    groups = _groups(table, spec)
    bucket = table["bucket"].to_numpy()
    n_events, n_trials = len(groups.keys), int(groups.trial.max(initial=-1)) + 1
    events = _matrix(groups.event, bucket, n_events, buckets)
    trials = _matrix(groups.trial, bucket, max(n_trials, 1), buckets)
    reference = None
    if base is not None:
        reference = _base_counts(base, spec, groups)
    return Scan(events, trials, groups.parent, rule, reference), groups


def _base_counts(base: pd.DataFrame, spec: _Spec, groups: _Groups):
    """Events and trials of each group in the separate baseline (0 for a group it lacks)."""
    trials, events = _population(base, spec.name)
    trial, trial_keys = _codes(base, spec.keys, trials)
    event, event_keys = _codes(base, spec.keys + spec.split, events & trials)
    n_of = dict(zip(trial_keys, np.bincount(trial[trial >= 0], minlength=len(trial_keys)), strict=True))
    k_of = dict(zip(event_keys, np.bincount(event[event >= 0], minlength=len(event_keys)), strict=True))
    names = spec.keys + spec.split
    keys = [tuple(key[name] for name in names) for key in groups.keys]
    k = np.array([k_of.get(key, 0) for key in keys], dtype="float64")
    n = np.array([n_of.get(key[: len(spec.keys)], 0) for key in keys], dtype="float64")
    return k, n


def _significant(scan: Scan, threshold: float, rounds: int = 4) -> list[Pick]:
    """Each group's significant periods, best first, in up to ``rounds`` disjoint rounds."""
    found, picks = [], scan.first_round()
    for _ in range(rounds):
        picks = [pick for pick in picks if pick.p_value <= threshold]
        if not picks:
            break
        found += picks
        for pick in picks:
            scan.mark(pick)
        picks = scan.next_round([pick.group for pick in picks])
    return found


def _refine(table, spec, groups, scan, pick, tests, rule, after, before) -> dict | None:
    """The pick's period on the jobs' timestamps, its counts and p-value, its affected jobs."""
    bucket = table["bucket"].to_numpy()
    parent = groups.parent[pick.group]
    near = (groups.trial == parent) & (bucket >= pick.first - 1) & (bucket <= pick.stop)
    index = np.flatnonzero(near)
    hits = groups.event[index] == pick.group
    rate, base_rate = pick.events / pick.trials, pick.base_rate
    if spec.low:
        hits, rate, base_rate = ~hits, 1 - rate, 1 - base_rate
    span = segment(table["at"].to_numpy()[index], hits, rate, base_rate)
    inside = index[span]
    if not len(inside):
        return None
    in_hits = hits[span]
    trials = len(inside)
    events = int((~in_hits).sum()) if spec.low else int(in_hits.sum())
    if scan.base is None:
        total_events = scan.events[pick.group].sum()
        total_trials = scan.trials[parent].sum()
        out_events, out_trials = total_events - events, total_trials - trials
    else:
        out_events, out_trials = scan.base[0][pick.group], scan.base[1][pick.group]
    p0 = (out_events + 0.5) / (out_trials + 1.0)
    rate = events / trials
    if spec.low:
        evident = trials * p0 >= rule.min_events and rate * rule.min_ratio <= p0
    else:
        evident = events >= rule.min_events and rate >= rule.min_ratio * p0
    if not evident or trials < rule.min_trials:
        return None
    p = min(1.0, p_value(events, trials, out_events, out_trials, low=spec.low) * tests)
    first, last = inside[in_hits][[0, -1]]
    after_last = np.flatnonzero((groups.trial == parent) & (np.arange(len(table)) > last))
    if spec.low:
        ongoing = not (groups.event[after_last] == pick.group).any()
    else:
        ongoing = (1 - rate) ** len(after_last) > 0.05
    keys = groups.keys[pick.group]
    return {
        "scan": spec.name,
        "keys": keys,
        "first": int(first),
        "last": int(last),
        "jobs": trials,
        "events": events,
        "rate": rate,
        "base_rate": p0,
        "p_value": p,
        "ongoing": bool(ongoing),
        "expected": trials * p0 if spec.low else np.nan,
    }


# -- one row per incident --------------------------------------------------------------------


def _one_per_incident(table, candidates, wanted, outage_rate) -> list[dict]:
    """Kinds and precedence: each candidate becomes a kind, and a candidate whose affected jobs
    are mostly another kept row's is the same incident (see the package docstring)."""
    for row in candidates:
        row["affected"] = _affected(table, row)
        row["kind"] = _kind(table, row, outage_rate)
    order = {kind: n for n, kind in enumerate(_PRECEDENCE)}
    ranked = sorted(
        (row for row in candidates if row["kind"] is not None),
        key=lambda row: (order[row["kind"]], -len(row["affected"]), row["p_value"]),
    )
    kept, claimed = [], set()
    for row in ranked:
        affected = set(row["affected"].tolist())
        if affected and len(affected & claimed) >= SAME_INCIDENT * len(affected):
            continue
        kind = row["kind"].split(":")[0]
        if kind in wanted:
            row["kind"] = kind
            kept.append(row)
        claimed |= affected
    return kept


_PRECEDENCE = (
    "domain_bounces",
    "stale_credentials",
    "provider_outage",
    "error_spike",
    "provider_outage:partial",
    "volume_drop",
    "latency_degradation",
)


def _period(table: pd.DataFrame, row: dict) -> np.ndarray:
    at = table["at"]
    return ((at >= at.iloc[row["first"]]) & (at <= at.iloc[row["last"]])).to_numpy()


def _same_group(table: pd.DataFrame, keys: dict) -> np.ndarray:
    mask = np.ones(len(table), dtype=bool)
    for key, value in keys.items():
        column = table[key].astype("string")
        mask &= (
            column.isna().to_numpy()
            if pd.isna(value)
            else column.eq(value).fillna(False).to_numpy()
        )
    return mask


def _affected(table: pd.DataFrame, row: dict) -> np.ndarray:
    """Row numbers of the jobs the incident hit."""
    period, keys = _period(table, row), row["keys"]
    if row["scan"] == "volume":
        return np.flatnonzero(period & _same_group(table, keys))
    mine = period & _same_group(table, keys)
    if row["scan"] == "latency":
        return np.flatnonzero(mine & table["slow"].to_numpy())
    return np.flatnonzero(mine & table["met_failure"].to_numpy())


def _kind(table: pd.DataFrame, row: dict, outage_rate: float) -> str | None:
    scan = row["scan"]
    if scan == "provider":
        return "provider_outage" if row["rate"] >= outage_rate else "provider_outage:partial"
    if scan == "latency":
        period = _period(table, row) & _same_group(table, row["keys"]) & table["timed"].to_numpy()
        row["p95"] = float(table.loc[period, "time_to_send_s"].quantile(0.95))
        row["usual_p95"] = float(table.loc[period, "slow_above"].iloc[0])
        return "latency_degradation"
    if scan == "volume":
        return "volume_drop"
    if scan == "domain":
        provider = {k: row["keys"][k] for k in ("channel", "provider_id")}
        failed = table["failed"].to_numpy()
        period = _period(table, row)
        all_failed = (period & failed & _same_group(table, provider)).sum()
        own = (period & failed & _same_group(table, row["keys"])).sum()
        return "domain_bounces" if own >= SAME_INCIDENT * all_failed else None
    return "stale_credentials" if _stale(table, row) else "error_spike"


def _stale(table: pd.DataFrame, row: dict) -> bool:
    """A lasting token/credential error: it lasts to the end of the window, and its code or
    payload says so, or the subscribers it hit never succeed again on that provider."""
    if not row["ongoing"]:
        return False
    hit = table.iloc[row["affected"]]
    words = " ".join(
        [str(row["keys"].get("error_code") or ""), *hit["error_text"].dropna().unique()[:5]]
    )
    if CREDENTIAL_WORDS.search(words):
        return True
    provider = _same_group(table, {k: row["keys"][k] for k in ("channel", "provider_id")})
    later = table[provider & table["subscriber_id"].isin(hit["subscriber_id"]).to_numpy()]
    first_hit = hit.groupby("subscriber_id")["at"].min()
    after = later[later["at"] > later["subscriber_id"].map(first_hit)]
    if after["subscriber_id"].nunique() < 5:
        return False
    recovered = after[after["outcome"].astype("string").eq("finished")]["subscriber_id"].nunique()
    return recovered <= 0.2 * after["subscriber_id"].nunique()
