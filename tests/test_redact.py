"""Secrets: what is masked, how, and that no secret reaches a frame's output unless revealed."""

from __future__ import annotations

import copy

import pytest

from toolkit.frames import integrations_frame, subscribers_frame
from toolkit.redact import MASK, is_secret, mask, mask_channels, mask_credentials

PRIVATE_KEY = (
    "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n"
)

#: Every secret credential field of the spec, with a realistic value.
SECRETS = {
    "apiKey": "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",
    "secretKey": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "token": "8f3c2a9b7d6e5f4a3b2c1d0e9f8a7b6c",
    "password": "correct-horse-battery-staple",
    "accessKey": "AKIAIOSFODNN7EXAMPLE",
    "apiToken": "xoxb-17653672481-19874698323-pdFZKVeTuE8sk7oOcBrzbqgy",
    "authenticationTokenKey": "auth-9d8c7b6a5f4e3d2c1b0a",
    "webhookUrl": "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
    "serviceAccount": '{"type": "service_account", "private_key": "' + PRIVATE_KEY + '"}',
    "user": "smtp-user-ops",
    "accountSid": "AC0123456789abcdef0123456789abcdef",
}
VISIBLE = {
    "region": "eu-west-1",
    "from": "alerts@acme.example",
    "senderName": "Acme",
    "host": "smtp.acme.example",
    "port": "587",
    "domain": "acme.example",
    "channel": "#ops",
    "secure": True,
}
DEVICE_TOKENS = [
    "dGVzdC10b2tlbi1vbmU:APA91bHun4MxP5egoKMwt2KZFBaFUH-1RYqx",
    "a3f1c2e4b5d6978877665544332211aabbccddeeff00112233445566778899aa",
]
SIGNING_KEY = "5f2b8c1d9e7a6b4c3d2e1f0a9b8c7d6e"
TLS = {"cert": PRIVATE_KEY, "rejectUnauthorized": False}


def secret_values() -> list[str]:
    """Every secret string the records below hold (and the parts of the URL that grant access)."""
    values = [v for v in SECRETS.values()] + DEVICE_TOKENS + [SIGNING_KEY, PRIVATE_KEY]
    values.append("T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX")
    values.append("https://hooks.acme-ops.example/notify/0f1e2d3c4b5a6978")
    return values


def integration_record() -> dict:
    return {
        "_id": "int1",
        "_environmentId": "env1",
        "_organizationId": "org1",
        "name": "Everything",
        "identifier": "everything",
        "providerId": "sendgrid",
        "channel": "email",
        "credentials": {**SECRETS, **VISIBLE, "tlsOptions": TLS},
        "configurations": {"inboundWebhookEnabled": True, "inboundWebhookSigningKey": SIGNING_KEY},
        "active": True,
        "deleted": False,
        "primary": True,
    }


def subscriber_record() -> dict:
    return {
        "_id": "internal-1",
        "subscriberId": "user-1",
        "channels": [
            {
                "providerId": "slack",
                "credentials": {"webhookUrl": SECRETS["webhookUrl"]},
                "_integrationId": "i1",
            },
            {
                "providerId": "chat-webhook",
                "credentials": {
                    "webhookUrl": "https://hooks.acme-ops.example/notify/0f1e2d3c4b5a6978",
                    "channel": "#ops",
                },
                "_integrationId": "i2",
            },
            {
                "providerId": "fcm",
                "credentials": {"deviceTokens": DEVICE_TOKENS},
                "_integrationId": "i3",
            },
        ],
        "_organizationId": "org1",
        "_environmentId": "env1",
        "deleted": False,
        "createdAt": "2026-01-01T00:00:00.000Z",
        "updatedAt": "2026-01-01T00:00:00.000Z",
    }


def outputs(frame) -> str:
    return "\n".join(
        [
            repr(frame),
            str(frame.to_dict()),
            frame.to_html(),
            frame.to_json(date_format="iso"),
            frame.to_csv(),
        ]
    )


# -- masking -----------------------------------------------------------------------------------


def test_which_fields_are_secret():
    for field in [*SECRETS, "deviceTokens", "inboundWebhookSigningKey", "tlsOptions"]:
        assert is_secret(field), field
    for field in ["privateKey", "authToken", "clientSecret"]:
        assert is_secret(field), field
    for field in VISIBLE:
        assert not is_secret(field), field


def test_how_values_are_masked():
    assert mask("AC0123456789abcdef0123456789abcdef") == MASK + "cdef"  # long key: last 4 shown
    assert mask("smtp-user-ops") == MASK  # short: nothing shown
    assert mask(PRIVATE_KEY) == MASK  # ends in punctuation: nothing shown
    assert mask(SECRETS["webhookUrl"]) == "https://hooks.slack.com/" + MASK
    assert mask("https://user:pass@hooks.example:8443/x/y") == "https://hooks.example:8443/" + MASK
    assert mask(DEVICE_TOKENS) == [MASK + "RYqx", MASK + "99aa"]
    assert mask(TLS) == MASK and mask(12345) == MASK
    assert mask(None) is None and mask(True) is True


def test_mask_credentials_masks_secrets_keeps_the_rest_and_copies():
    credentials = {**SECRETS, **VISIBLE, "tlsOptions": TLS}
    before = copy.deepcopy(credentials)
    masked = mask_credentials(credentials)
    assert credentials == before  # not mutated
    for field in SECRETS:
        assert masked[field].startswith(MASK) or masked[field].endswith(MASK), field
    assert masked["tlsOptions"] == MASK
    assert {field: masked[field] for field in VISIBLE} == VISIBLE
    assert mask_credentials(None) is None
    assert mask_credentials({"nested": {"password": "hunter22"}}) == {"nested": {"password": MASK}}


def test_mask_channels_copies_and_masks_tokens_and_webhooks():
    channels = subscriber_record()["channels"]
    before = copy.deepcopy(channels)
    masked = mask_channels(channels)
    assert channels == before
    assert masked[0]["credentials"] == {"webhookUrl": "https://hooks.slack.com/" + MASK}
    assert masked[1]["credentials"]["channel"] == "#ops"
    assert len(masked[2]["credentials"]["deviceTokens"]) == 2
    assert [setting["providerId"] for setting in masked] == ["slack", "chat-webhook", "fcm"]
    assert mask_channels(None) == []


# -- frames ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("build", "record"),
    [(integrations_frame, integration_record), (subscribers_frame, subscriber_record)],
)
def test_no_secret_reaches_a_frames_output(build, record):
    frame = build([record()])
    text = outputs(frame)
    leaked = [value for value in secret_values() if value in text]
    assert not leaked
    assert MASK in text or "\\u2022" in text


def test_reveal_secrets_shows_them():
    frame = integrations_frame([integration_record()], reveal_secrets=True)
    assert frame.loc[0, "credentials"]["apiKey"] == SECRETS["apiKey"]
    assert frame.loc[0, "configurations"]["inboundWebhookSigningKey"] == SIGNING_KEY
    frame = subscribers_frame([subscriber_record()], reveal_secrets=True)
    assert frame.loc[0, "channels"][2]["credentials"]["deviceTokens"] == DEVICE_TOKENS
    assert frame.loc[0, "device_token_count"] == 2
    assert SECRETS["webhookUrl"] in outputs(frame)
