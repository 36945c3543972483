"""Every sample in the pinned SDKs' source distributions, and what this tier does with it.

The table is keyed by ``servicebus/...`` or ``eventhub/...`` and the sample's path under the
sdist's ``samples/``. A sample the table does not list fails the tier (a new SDK version brought
it: classify it); a listed one that is not in the sdist fails it too.

Most samples of azure-servicebus 7.15.0 and azure-eventhub 5.15.1 authenticate with Entra ID
(``DefaultAzureCredential``) or a SAS credential against the namespace's host name, which the
SDK reaches over TLS on port 5671. The emulator, like Microsoft's own emulator, takes connection
strings (``UseDevelopmentEmulator=true``) over plain AMQP on its own port, so those samples are
out of scope as the issue that asked for this tier defines it ("samples that need Azure AD, the
HTTPS administration client, WebSockets or a storage account"). The scenarios they cover
(sessions, lock renewal, annotated messages, deferral, scheduling, dead-lettering, peeking,
last-enqueued properties) are covered by this repository's own wire tests with the same SDKs:
``tests/e2e/test_emulator*.py`` and ``tests/emulator/``.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Scope:
    """``run``: the tier runs the sample; otherwise ``reason`` says why it does not."""

    run: bool
    reason: str = ""
    known_failure: str | None = None
    """Set for a sample in scope that fails today (an emulator gap); the test is expected to
    fail, strictly, so a fix shows up as an unexpected pass."""


ENTRA_ID = (
    "authenticates with Entra ID (DefaultAzureCredential) against the namespace's host name "
    "over TLS (amqps, port 5671); the emulator takes connection strings over plain AMQP"
)
SAS_OVER_TLS = (
    "connects by host name with a SAS credential or token, over TLS (amqps, port 5671); the "
    "emulator takes connection strings over plain AMQP on its own port"
)
ADMINISTRATION = "uses the HTTPS administration API (ServiceBusAdministrationClient) and Entra ID"
STORAGE = "needs a storage account (BlobCheckpointStore) and Entra ID"
PROXY = "needs an HTTP proxy and Entra ID"
WEBSOCKETS = "uses AMQP over WebSockets and Entra ID"
IOT_HUB = "reads an IoT Hub through its Event Hubs-compatible endpoint"
MIXED = "mixes connection-string snippets with Entra ID ones and runs them all"

_AAD = [
    "eventhub/async_samples/client_identity_authentication_async.py",
    "eventhub/async_samples/connection_to_custom_endpoint_address_async.py",
    "eventhub/async_samples/recv_async.py",
    "eventhub/async_samples/recv_for_period_async.py",
    "eventhub/async_samples/recv_track_last_enqueued_event_prop_async.py",
    "eventhub/async_samples/recv_with_custom_starting_position_async.py",
    "eventhub/async_samples/send_buffered_mode_async.py",
    "eventhub/async_samples/send_stream_async.py",
    "eventhub/sync_samples/client_identity_authentication.py",
    "eventhub/sync_samples/connection_to_custom_endpoint_address.py",
    "eventhub/sync_samples/recv.py",
    "eventhub/sync_samples/recv_for_period.py",
    "eventhub/sync_samples/recv_track_last_enqueued_event_prop.py",
    "eventhub/sync_samples/recv_with_custom_starting_position.py",
    "eventhub/sync_samples/send_and_receive_amqp_annotated_message.py",
    "eventhub/sync_samples/send_buffered_mode.py",
    "eventhub/sync_samples/send_stream.py",
    "servicebus/async_samples/auto_lock_renew_async.py",
    "servicebus/async_samples/client_identity_authentication_async.py",
    "servicebus/async_samples/connection_to_custom_endpoint_address_async.py",
    "servicebus/async_samples/deadletter_messages_and_correct_async.py",
    "servicebus/async_samples/list_sessions_async.py",
    "servicebus/async_samples/receive_deadlettered_messages_async.py",
    "servicebus/async_samples/receive_deferred_message_queue_async.py",
    "servicebus/async_samples/receive_iterator_queue_async.py",
    "servicebus/async_samples/receive_peek_async.py",
    "servicebus/async_samples/receive_queue_async.py",
    "servicebus/async_samples/receive_subscription_async.py",
    "servicebus/async_samples/schedule_messages_and_cancellation_async.py",
    "servicebus/async_samples/schedule_topic_messages_and_cancellation_async.py",
    "servicebus/async_samples/send_and_receive_amqp_annotated_message_async.py",
    "servicebus/async_samples/send_queue_async.py",
    "servicebus/async_samples/send_topic_async.py",
    "servicebus/async_samples/session_pool_receive_async.py",
    "servicebus/async_samples/session_send_receive_async.py",
    "servicebus/sync_samples/auto_lock_renew.py",
    "servicebus/sync_samples/client_identity_authentication.py",
    "servicebus/sync_samples/connection_to_custom_endpoint_address.py",
    "servicebus/sync_samples/deadletter_messages_and_correct.py",
    "servicebus/sync_samples/failure_and_recovery.py",
    "servicebus/sync_samples/list_sessions.py",
    "servicebus/sync_samples/receive_deadlettered_messages.py",
    "servicebus/sync_samples/receive_deferred_message_queue.py",
    "servicebus/sync_samples/receive_iterator_queue.py",
    "servicebus/sync_samples/receive_peek.py",
    "servicebus/sync_samples/receive_queue.py",
    "servicebus/sync_samples/receive_subscription.py",
    "servicebus/sync_samples/schedule_messages_and_cancellation.py",
    "servicebus/sync_samples/schedule_topic_messages_and_cancellation.py",
    "servicebus/sync_samples/send_and_receive_amqp_annotated_message.py",
    "servicebus/sync_samples/send_queue.py",
    "servicebus/sync_samples/send_topic.py",
    "servicebus/sync_samples/session_pool_receive.py",
    "servicebus/sync_samples/session_send_receive.py",
]

_SAS_TLS = [
    "eventhub/async_samples/authenticate_with_azure_named_key_credential_async.py",
    "eventhub/async_samples/authenticate_with_azure_sas_credential_async.py",
    "eventhub/async_samples/authenticate_with_sas_token_async.py",
    "eventhub/async_samples/client_creation_async.py",
    "eventhub/sync_samples/authenticate_with_azure_named_key_credential.py",
    "eventhub/sync_samples/authenticate_with_azure_sas_credential.py",
    "eventhub/sync_samples/authenticate_with_sas_token.py",
    "eventhub/sync_samples/client_creation.py",
    "servicebus/async_samples/authenticate_using_azure_named_key_credential_async.py",
    "servicebus/async_samples/authenticate_using_azure_sas_credential_async.py",
    "servicebus/sync_samples/authenticate_using_azure_named_key_credential.py",
    "servicebus/sync_samples/authenticate_using_azure_sas_credential.py",
    "servicebus/sync_samples/generate_sas_token_and_authenticate_client.py",
]

_ADMIN = [
    "servicebus/async_samples/mgmt_queue_async.py",
    "servicebus/async_samples/mgmt_rule_async.py",
    "servicebus/async_samples/mgmt_subscription_async.py",
    "servicebus/async_samples/mgmt_topic_async.py",
    "servicebus/async_samples/topic_subscription_with_rule_operations_async.py",
    "servicebus/sync_samples/mgmt_queue.py",
    "servicebus/sync_samples/mgmt_rule.py",
    "servicebus/sync_samples/mgmt_subscription.py",
    "servicebus/sync_samples/mgmt_topic.py",
    "servicebus/sync_samples/topic_subscription_with_rule_operations.py",
]

_STORAGE = [
    "eventhub/async_samples/receive_batch_with_checkpoint_async.py",
    "eventhub/async_samples/recv_with_checkpoint_by_event_count_async.py",
    "eventhub/async_samples/recv_with_checkpoint_by_time_interval_async.py",
    "eventhub/async_samples/recv_with_checkpoint_store_async.py",
    "eventhub/sync_samples/receive_batch_with_checkpoint.py",
    "eventhub/sync_samples/recv_with_checkpoint_by_event_count.py",
    "eventhub/sync_samples/recv_with_checkpoint_by_time_interval.py",
    "eventhub/sync_samples/recv_with_checkpoint_store.py",
]

_PROXY = [
    "eventhub/async_samples/proxy_async.py",
    "eventhub/sync_samples/proxy.py",
    "servicebus/async_samples/proxy_async.py",
    "servicebus/sync_samples/proxy.py",
]

_WEBSOCKETS = [
    "eventhub/async_samples/send_and_receive_amqp_annotated_message_async.py",
]

_IOT_HUB = [
    "eventhub/async_samples/iot_hub_connection_string_receive_async.py",
]

_MIXED = [
    "eventhub/async_samples/sample_code_eventhub_async.py",
    "eventhub/sync_samples/sample_code_eventhub.py",
    "servicebus/async_samples/sample_code_servicebus_async.py",
    "servicebus/sync_samples/sample_code_servicebus.py",
]

_RUN = [
    "eventhub/async_samples/connection_string_authentication_async.py",
    "eventhub/async_samples/send_async.py",
    "eventhub/sync_samples/connection_string_authentication.py",
    "eventhub/sync_samples/send.py",
    "servicebus/async_samples/authenticate_client_connstr_async.py",
    "servicebus/sync_samples/authenticate_client_connstr.py",
]

CATALOG: dict[str, Scope] = {
    **{path: Scope(False, ENTRA_ID) for path in _AAD},
    **{path: Scope(False, SAS_OVER_TLS) for path in _SAS_TLS},
    **{path: Scope(False, ADMINISTRATION) for path in _ADMIN},
    **{path: Scope(False, STORAGE) for path in _STORAGE},
    **{path: Scope(False, PROXY) for path in _PROXY},
    **{path: Scope(False, WEBSOCKETS) for path in _WEBSOCKETS},
    **{path: Scope(False, IOT_HUB) for path in _IOT_HUB},
    **{path: Scope(False, MIXED) for path in _MIXED},
    **{path: Scope(True) for path in _RUN},
}

__all__ = ["CATALOG", "Scope"]
