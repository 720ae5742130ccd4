"""The sandbox keeps its own copy of the service's enumerations (it imports nothing from the
client side); these must stay equal to the client's, or one side would refuse what the other sends."""

from datetime import UTC, datetime, timedelta, timezone
from typing import get_args

import pytest

from toolkit import schemas, vocab
from toolkit.sandbox import validation


@pytest.mark.parametrize(
    ("client_side", "sandbox_side"),
    [
        (vocab.CHANNELS, validation.Channel),
        (vocab.NOTIFICATION_CHANNELS, validation.NotificationChannel),
        (vocab.SEVERITIES, validation.Severity),
        (vocab.ORDER_DIRECTIONS, validation.OrderDirection),
        (vocab.CHANNEL_PROVIDERS, validation.ChannelProvider),
    ],
)
def test_the_client_and_the_sandbox_share_each_enumeration(client_side, sandbox_side):
    assert set(client_side) == set(get_args(sandbox_side))


def test_the_frames_know_every_execution_detail_status_and_source_the_sandbox_serves():
    fields = validation.ExecutionDetail.model_fields
    assert set(schemas.DETAIL_STATUSES) == set(get_args(fields["status"].annotation))
    assert set(schemas.DETAIL_SOURCES) == set(get_args(fields["source"].annotation))


def test_the_device_token_limit_is_the_same_on_both_sides():
    assert vocab.MAX_DEVICE_TOKENS == validation.MAX_DEVICE_TOKENS


def test_the_rate_limit_categories_are_the_same_on_both_sides():
    from toolkit import _http
    from toolkit.sandbox import faults

    assert _http.CATEGORIES == faults.CATEGORIES
    paths = ["/v1/notifications", "/v1/integrations/x", "/v1/subscribers/a/credentials",
             "/v2/subscribers", "/v2/subscribers/a/subscriptions", "/v1/notificationsx",
             "/v3/other", "/", "/v1"]  # fmt: skip
    assert [_http.category_of(p) for p in paths] == [faults.category_of(p) for p in paths]


def test_the_sandbox_stores_a_channel_bit_for_every_notification_channel():
    from toolkit.sandbox.store import CHANNEL_BITS

    assert list(CHANNEL_BITS) == list(vocab.NOTIFICATION_CHANNELS)
    assert sorted(CHANNEL_BITS.values()) == [1 << i for i in range(len(CHANNEL_BITS))]


def test_the_push_providers_are_the_same_on_both_sides():
    from toolkit.sandbox.seed.data import PUSH_PROVIDER_IDS, PUSH_PROVIDERS

    assert set(vocab.PUSH_PROVIDERS) == PUSH_PROVIDER_IDS
    assert set(PUSH_PROVIDERS) <= set(vocab.PUSH_PROVIDERS)


@pytest.mark.parametrize(
    "moment",
    [
        datetime(2026, 11, 1, 12, 0, tzinfo=UTC),
        datetime(2024, 2, 29, 23, 59, 59, 999_999, tzinfo=UTC),
        datetime(2026, 3, 1, 1, 2, 3, 4_000, tzinfo=timezone(timedelta(hours=-5))),
    ],
)
def test_the_iso_format_is_the_same_on_both_sides(moment):
    from toolkit import timeutil
    from toolkit.sandbox import clock

    assert timeutil.to_iso(moment) == clock.iso(moment)


def test_the_sandbox_plants_every_kind_of_incident_the_detector_finds():
    from toolkit.incidents import summary
    from toolkit.sandbox.seed import KINDS, shaped

    # a spike or a shift departs from a weekly season: planted in shaped traffic (a runaway
    # workflow, an SMS failover), not in the sandbox's two weeks
    seasonal = {"volume_spike", "traffic_shift"}
    assert tuple(kind for kind in summary.KINDS if kind not in seasonal) == KINDS
    assert "volume_spike" in shaped.PLANTED and {
        p["kind"] for p in shaped.shaped_traffic(1, "2026-11-01T12:00:00Z").planted
    } >= {"volume_spike", "failover"}
