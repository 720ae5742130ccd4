"""The incidents frame: its columns (a contract), impact, the provider's own error, the sentence."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pandas as pd

from toolkit.redact import scrub
from toolkit.words import ONGOING, channel_name, day, percent, provider_name

#: The kinds of incident, in the order the docs describe them.
KINDS = (
    "provider_outage",
    "error_spike",
    "domain_bounces",
    "stale_credentials",
    "volume_drop",
    "volume_spike",
    "traffic_shift",
    "latency_degradation",
)
#: The kinds about how much is sent (no job of theirs failed).
VOLUME_KINDS = ("volume_drop", "volume_spike", "traffic_shift")

#: The columns of `find_incidents`' frame and their dtypes.
COLUMNS = {
    "kind": "string",
    "channel": "string",
    "provider_id": "string",
    "error_code": "string",
    "domain": "string",
    "started_at": "datetime64[ns, UTC]",
    "ended_at": "datetime64[ns, UTC]",
    "ongoing": "bool",
    "jobs": "int64",
    "failed_jobs": "int64",
    "failure_rate": "float64",
    "baseline_rate": "float64",
    "p_value": "float64",
    "notifications": "int64",
    "notifications_low": "Int64",
    "notifications_high": "Int64",
    "subscribers": "int64",
    "workflows": "object",
    "example_error": "string",
    "summary": "string",
    "providers": "object",
}


def empty(reason: str, checked: dict[str, Any], aside: list[str] | None = None) -> pd.DataFrame:
    """A zero-row incidents frame; ``attrs`` say why (``reason``), what was checked and what was
    set aside (``aside``: `set_aside`)."""
    frame = pd.DataFrame({name: pd.Series(dtype=dtype) for name, dtype in COLUMNS.items()})
    frame.attrs.update(reason=_with_aside(reason, aside), checked=checked,
                       baseline=checked.get("baseline"), set_aside=aside or [])  # fmt: skip
    return frame


def _with_aside(reason: str, aside: list[str] | None) -> str:
    """``reason``, and how many significant periods were set aside as a load."""
    if not aside:
        return reason
    return f"{reason}; {len(aside)} significant period(s) set aside as a load, not an incident"


def set_aside(rows: list[tuple[dict, str]], jobs: pd.DataFrame) -> list[str]:
    """A sentence for each significant period read as a load or an off day, not an incident: its row's
    summary, then why (``rows``: (row, why); ``jobs``: the fetched jobs)."""
    read = jobs[list(_READ)]
    return [f"{_record(row, read)['summary'][:-1]}; set aside as {why}." for row, why in rows]


def rows_frame(rows: list[dict], jobs: pd.DataFrame, payloads: Callable[[list[str]], dict],
               checked: dict[str, Any], aside: list[str] | None = None) -> pd.DataFrame:  # fmt: skip
    """The incidents frame of the kept candidate ``rows`` (positions in the fetched ``jobs``),
    sorted by impact; ``payloads(job_ids)`` gives jobs' last failed attempts' raw payloads;
    ``aside``: `set_aside`'s sentences."""
    read = jobs[list(_READ)]  # the columns a record reads, taken once
    records = [_record(row, read) for row in rows]
    failures = [record["example_error"] for record in records]
    raw = payloads([failure["job_id"] for failure in failures if failure is not None])
    for record, failure in zip(records, failures, strict=True):
        record["example_error"] = None if failure is None else _example(failure, raw)
    frame = pd.DataFrame.from_records(records, columns=list(COLUMNS))
    frame = frame.astype({k: v for k, v in COLUMNS.items() if k != "workflows"})
    frame = frame.sort_values(
        ["notifications", "failed_jobs", "p_value"], ascending=[False, False, True], kind="stable"
    ).reset_index(drop=True)
    frame.attrs.update(reason=_with_aside(f"{len(frame)} incident(s) found", aside),
                       checked=checked, baseline=checked.get("baseline"), set_aside=aside or [])  # fmt: skip
    return frame


#: The columns of the fetched jobs a record reads.
_READ = ("job_id", "notification_id", "subscriber_id", "workflow", "error_code", "error_text",
         "met_failure")  # fmt: skip


def _record(row: dict, jobs: pd.DataFrame) -> dict[str, Any]:
    """The row's record (``jobs``: the fetched jobs' `_READ` columns); its ``example_error``
    the first job that failed with its code."""
    hit = jobs.iloc[row["affected"]]
    keys, kind = row["keys"], row["kind"]
    codes = hit["error_code"].dropna()
    code = keys.get("error_code") or (codes.mode().iloc[0] if len(codes) else None)
    if kind in (*VOLUME_KINDS, "latency_degradation"):
        code = None
    if kind in VOLUME_KINDS:
        estimate = max(0, round(row["expected"] - row["events"]))
        notifications = row.get("notifications", estimate)
        subscribers = row["loop"]["people"] if "loop" in row else 0
        jobs_, failed, workflows = row["events"], 0, row["workflows"]
    else:
        notifications = hit["notification_id"].nunique()
        subscribers = hit["subscriber_id"].nunique()
        jobs_, failed = row["jobs"], row["events"]
        workflows = hit["workflow"].dropna().value_counts().index.tolist()
    low, high = row.get("likely", (None, None))  # a drop's estimate's range
    record = {
        "kind": kind,
        "channel": keys.get("channel"),
        "provider_id": keys.get("provider_id"),
        "error_code": code,
        "domain": keys.get("domain"),
        "started_at": row["start"],
        "ended_at": row["end"],
        "ongoing": row["ongoing"],
        "jobs": jobs_,
        "failed_jobs": failed,
        "failure_rate": row["rate"],
        "baseline_rate": row["base_rate"],
        "p_value": row["p_value"],
        "notifications": notifications,
        "notifications_low": low,
        "notifications_high": high,
        "subscribers": subscribers,
        "workflows": workflows,
        "example_error": _first_failure(hit, code) if code else None,
        "providers": row.get("providers")
        or ([keys["provider_id"]] if keys.get("provider_id") else []),
    }
    if kind == "traffic_shift":
        record["providers"] = [keys["provider_id"], row["to"]["keys"]["provider_id"]]
    record["summary"] = _sentence(record, row)
    return record


def _first_failure(hit: pd.DataFrame, code: str | None) -> pd.Series | None:
    """The incident's first job that failed (with ``code``)."""
    failing = hit[hit["met_failure"].to_numpy()]
    if code is not None:
        failing = failing[failing["error_code"].astype("string").eq(code).fillna(False)]
    return None if failing.empty else failing.iloc[0]


def _example(failure: pd.Series, raw: dict[str, str]) -> str | None:
    """The provider's own payload of a failure (else its error text), secrets masked."""
    if failure["job_id"] not in raw:
        text = failure["error_text"]
        return None if pd.isna(text) else str(text)
    try:
        return json.dumps(scrub(json.loads(raw[failure["job_id"]])))
    except (TypeError, ValueError):
        return str(scrub(raw[failure["job_id"]]))


def _when(start: pd.Timestamp, end: pd.Timestamp, ongoing: bool) -> str:
    if ongoing:
        return f"since {start:%H:%M} UTC on {day(start)}{ONGOING}"
    if start.date() == end.date():
        return f"from {start:%H:%M} to {end:%H:%M} UTC on {day(start)}"
    return f"from {day(start)} {start:%H:%M} to {day(end)} {end:%H:%M} UTC"


def _name(provider: str | None) -> str:
    """A provider's name opening a sentence (`toolkit.words.provider_name`)."""
    if not provider:
        return "The service"
    return "The built-in in-app provider" if provider == "svc" else provider_name(provider)


def _sends(keys: dict) -> str:
    """A provider's sends of a channel, mid-sentence: "FCM push sends", "in-app sends" (the
    built-in provider)."""
    channel = channel_name(keys["channel"])
    provider = keys["provider_id"]
    return f"{channel} sends" if provider == "svc" else f"{provider_name(provider)} {channel} sends"


def _group(row: dict, provider: str, channel: str) -> str:
    """How a volume row's group is written: a workflow, a channel, or a provider's channel."""
    keys = row["keys"]
    if "parts" in row:  # drops (spikes) at the same time (`toolkit.incidents.volume.together`)
        return _parts(row["parts"])
    if "workflow" in keys:
        return f"Workflow {keys['workflow']}"
    if "provider_id" in keys:
        return f"{provider} {channel}"
    return f"The {channel} channel"


def group_of(row: dict) -> str:
    """How a volume row's group is written mid-sentence (`_group`): "workflow a", "Amazon SES
    email", "the email channel"."""
    keys = row["keys"]
    channel = channel_name(keys["channel"]) if keys.get("channel") else ""
    text = _group(row, _name(keys.get("provider_id")), channel)
    return text[0].lower() + text[1:] if text.startswith(("Workflow", "The ")) else text


def _parts(parts: list[dict]) -> str:
    """The groups of drops (spikes) at the same time: "Workflows a and b, with the email channel
    and FCM push"."""
    flows = [part["keys"]["workflow"] for part in parts if "workflow" in part["keys"]]
    named = []
    for part in parts:
        if "workflow" not in part["keys"]:
            channel, provider = part["keys"]["channel"], part["keys"].get("provider_id")
            name = _group(part, _name(provider), channel_name(channel) if channel else "")
            named.append(name.replace("The ", "the ", 1) if named or flows else name)
    if not flows:
        return _listed(named)
    workflows = f"Workflow{'s' * (len(flows) > 1)} {_listed(flows)}"
    return f"{workflows}, with {_listed(named)}," if named else workflows


def row_code(row: dict) -> str | None:
    """A failure row's error code: its group's, or its cause's."""
    return row["keys"].get("error_code") or row.get("cause")


def _limited(rows: list[dict]) -> str:
    """The error spikes of rate limits (server errors) a spike's load made, mid-sentence:
    "Amazon SES email sends rate limited (2%, error Throttling) and failed by the provider (1%,
    error ServiceUnavailable)", each provider's sends named once."""
    parts, named = [], None
    for row in sorted(rows, key=lambda row: _sends(row["keys"])):
        code = row_code(row)
        error = f", error {code}" if code else ""
        how = "rate limited" if row.get("throttled") else "failed by the provider"
        sends = _sends(row["keys"])
        parts.append(f"{'' if sends == named else sends + ' '}{how} ({row['rate']:.0%}{error})")
        named = sends
    return _listed(parts)


def _listed(names: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)


def _sentence(record: dict[str, Any], row: dict) -> str:
    """One sentence with the numbers, e.g. "Twilio failed 93% of SMS from 13:26 to 16:54 on
    Oct 28 (usually 3%, error 20503): 137 notifications, 129 people." (times in UTC)."""
    kind, provider = record["kind"], _name(record["provider_id"])
    channel = channel_name(record["channel"]) if record["channel"] else ""
    when = _when(record["started_at"], record["ended_at"], record["ongoing"])
    rate, usual = percent(record["failure_rate"]), percent(record["baseline_rate"])
    if row.get("mixed"):  # a slowdown: its workflows' usual share (`toolkit.incidents.mix`)
        usual += " of these workflows' sends"
    if row.get("hourly"):  # its group's rate varies by hour of the day: the rate at those hours
        usual += " at these hours"
    code = f", error {record['error_code']}" if record["error_code"] else ""
    impact = f"{record['notifications']:,} notifications, {record['subscribers']:,} people"
    if kind == "provider_outage":
        text = f"{provider} failed {rate} of {channel} {when} (usually {usual}{code})"
    elif kind == "error_spike" and row.get("codes"):  # several at once (`detect._one_per_provider`)
        codes = _listed([code for code, _ in row["codes"]])
        counts = _listed([f"{events:,}" for _, events in row["codes"]])
        text = (f"{provider} returned errors {codes} on {rate} of {channel} ({counts} sends) "
                f"{when} (usually {usual})")  # fmt: skip
    elif kind == "error_spike":
        text = f"{provider} returned error {record['error_code']} on {rate} of {channel} {when} (usually {usual})"
    elif kind == "domain_bounces":
        names = " and ".join(_name(p) for p in record["providers"]) or provider
        text = (
            f"{names} {channel} to {record['domain']} failed {rate} {when} (usually {usual}{code})"
        )
    elif kind == "stale_credentials":
        text = (f"{provider} {channel} tokens or credentials are no longer valid for {rate} of sends "
                f"{when} (usually {usual}{code})")  # fmt: skip
    elif kind == "traffic_shift":
        to, other = row["to"], _name(row["to"]["keys"]["provider_id"])
        text = (f"{channel} moved from {provider} to {other} {when}: {other} sent "
                f"{to['events']:,} where about {round(to['expected']):,} were expected, "
                f"{provider} {record['jobs']:,} of about {round(row['expected']):,}")  # fmt: skip
        impact = f"about {record['notifications']:,} notifications moved"
    elif kind in VOLUME_KINDS:
        expected, what = round(row["expected"]), _group(row, provider, channel)
        unit = "jobs" if "level" in row else channel
        if "loop" in row:  # a runaway loop (`toolkit.incidents.loops`)
            loop = row["loop"]
            text = (f"Workflow {row['keys']['workflow']} sent {loop['people']:,} "
                    f"{'person' if loop['people'] == 1 else 'people'} up to {loop['most']:,} "
                    f"notifications an hour {when}, where the most one person gets from it in an "
                    f"hour is usually at most {loop['usual']:,} (a loop re-sending to the same people)")  # fmt: skip
        else:
            text = f"{what} sent {record['jobs']:,} {unit} {when} where about {expected:,} were expected"
            if "level" not in row:
                text += " (compared with the rest of the window: no seasonal baseline)"
        if row.get("slowed"):  # sends its load slowed (`volume.loaded_by_spikes`)
            text += ", and its load slowed " + _listed([
                f"{_sends(slow['keys'])} to {slow['p95']:,.1f} s (p95; 90% usually under "
                f"{slow['slow_above']:,.1f} s)"
                for slow in row["slowed"]])  # fmt: skip
        if row.get("limited"):  # sends its load had rate limited (`volume.loaded_by_spikes`)
            text += ", and its load had " + _limited(row["limited"])
        more = "not sent" if kind == "volume_drop" else "more than usual"
        impact = f"about {record['notifications']:,} notifications {more}"
        if "likely" in row:
            impact += f" (likely {row['likely'][0]:,} to {row['likely'][1]:,})"
    else:
        over = (
            "longer than 90% of their workflow's usually do"
            if row.get("own")
            else f"over {row['slow_above']:,.1f} s"
        )  # each workflow's own threshold, or one
        text = (f"{provider} {channel} took {row['p95']:,.1f} s to send (p95) {when}; {rate} of "
                f"sends took {over} (usually {usual})")  # fmt: skip
    return f"{text}: {impact}."
