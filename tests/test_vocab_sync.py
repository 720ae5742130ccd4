"""The sandbox keeps its own copy of the service's enumerations (it imports nothing from the
client side); these must stay equal to the client's, or one side would refuse what the other sends."""

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
