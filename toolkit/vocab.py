"""The service's closed vocabularies, as the spec enumerates them (shared by validation and frames).

Pure data, no imports from the rest of the toolkit, so that any module may use it.
"""

from __future__ import annotations

#: Delivery channels: an integration's ``channel``.
CHANNELS = ("in_app", "email", "sms", "chat", "push")

#: A notification's ``channels`` and a job's ``type``: the delivery channels and the step types.
NOTIFICATION_CHANNELS = (*CHANNELS, "digest", "trigger", "delay", "throttle", "custom")

#: A notification's ``severity``.
SEVERITIES = ("high", "medium", "low", "none")

#: ``orderDirection`` of the cursor lists.
ORDER_DIRECTIONS = ("ASC", "DESC")

#: Chat providers of subscriber channel credentials. The spec counts 12 and names three; the
#: reference notes list the 13 seen in practice: all are accepted.
CHAT_PROVIDERS = (
    "slack",
    "discord",
    "msteams",
    "mattermost",
    "ryver",
    "zulip",
    "grafana-on-call",
    "getstream",
    "rocket-chat",
    "whatsapp-business",
    "telegram",
    "chat-webhook",
    "svc-slack",
)

#: The prefixes of the brand-named provider ids: the spec's ``svc-`` and the real service's own
#: spelling (``novu-slack``); both are accepted and sent as given.
BRAND_PREFIXES = ("svc-", "novu-")

#: Push providers of subscriber channel credentials (the spec's 7).
PUSH_PROVIDERS = ("fcm", "apns", "expo", "one-signal", "pushpad", "pusher-beams", "push-webhook")

#: ``providerId`` values "upsert provider credentials" knows (others are sent with a warning).
CHANNEL_PROVIDERS = CHAT_PROVIDERS + PUSH_PROVIDERS

#: Fields of ChannelCredentials.
CHANNEL_CREDENTIAL_FIELDS = (
    "webhookUrl",
    "channel",
    "deviceTokens",
    "alertUid",
    "title",
    "imageUrl",
    "state",
    "externalUrl",
)

#: The most device tokens one credentials update may carry (more: the service answers 400).
MAX_DEVICE_TOKENS = 100
