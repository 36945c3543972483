"""Emulator configuration errors: one error naming the entry, before anything listens."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("proton", reason="the emulator needs python-qpid-proton")

from emulator import run_emulator
from replication.exceptions import ConfigurationError


def _namespace(**entities: Any) -> dict[str, Any]:
    return {"UserConfig": {"Namespaces": [{"Name": "ns", **entities}]}}


CASES = {
    "bad duration": (
        _namespace(Queues=[{"Name": "q", "Properties": {"LockDuration": "30s"}}]),
        "UserConfig.Namespaces[0].Queues[0].LockDuration",
    ),
    "message size not a number of kilobytes": (
        _namespace(MaxMessageSizeInKilobytes="1MB"),
        "UserConfig.Namespaces[0].MaxMessageSizeInKilobytes",
    ),
    "PT1.2.3S": (
        _namespace(Queues=[{"Name": "q", "Properties": {"LockDuration": "PT1.2.3S"}}]),
        "UserConfig.Namespaces[0].Queues[0].LockDuration",
    ),
    "forward to nowhere": (
        _namespace(Queues=[{"Name": "q", "Properties": {"ForwardTo": "missing"}}]),
        "UserConfig.Namespaces[0].Queues[0].Properties.ForwardTo",
    ),
    "dead letters forwarded to nowhere": (
        _namespace(
            Topics=[
                {
                    "Name": "t",
                    "Subscriptions": [
                        {"Name": "s", "Properties": {"ForwardDeadLetteredMessagesTo": "gone"}}
                    ],
                }
            ]
        ),
        "UserConfig.Namespaces[0].Topics[0].Subscriptions[0].Properties."
        "ForwardDeadLetteredMessagesTo",
    ),
    "bad rule": (
        _namespace(
            Topics=[
                {
                    "Name": "t",
                    "Subscriptions": [
                        {
                            "Name": "s",
                            "Rules": [
                                {"Name": "r", "Properties": {"SqlFilter": {"SqlExpression": "a ="}}}
                            ],
                        }
                    ],
                }
            ]
        ),
        "UserConfig.Namespaces[0].Topics[0].Subscriptions[0].Rules[0]",
    ),
    "duplicate namespace": (
        {"UserConfig": {"Namespaces": [{"Name": "a"}, {"Name": "A"}]}},
        "UserConfig.Namespaces[1]",
    ),
    "partition count": (
        {
            "UserConfig": {
                "NamespaceConfig": [
                    {"Name": "eh", "Entities": [{"Name": "h", "PartitionCount": 0}]}
                ]
            }
        },
        "UserConfig.NamespaceConfig[0].Entities[0]",
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_invalid_config_names_the_entry(case: str) -> None:
    config, location = CASES[case]
    with pytest.raises(ConfigurationError) as raised, run_emulator(config):
        pass
    assert raised.value.location == location


@pytest.mark.emulator
def test_forwarding_within_the_namespace_is_accepted() -> None:
    config = _namespace(
        Queues=[
            {"Name": "in", "Properties": {"ForwardTo": "out"}},
            {"Name": "out"},
        ]
    )
    with run_emulator(config) as running:
        assert running.namespaces == ["ns"]


# The shape of Microsoft's emulator Config.json (Azure/azure-service-bus-emulator-installer,
# ServiceBus-Emulator/Config/Config.json): empty forwarding targets, a correlation filter whose
# other supported properties are listed in // comments. Written here, not copied.
MICROSOFT_SHAPED_CONFIG = """{
  "UserConfig": {
    "Namespaces": [
      {
        "Name": "sbemulatorns",
        "Queues": [
          {
            "Name": "queue.1",
            "Properties": {
              "DeadLetteringOnMessageExpiration": false,
              "DefaultMessageTimeToLive": "PT1H",
              "ForwardDeadLetteredMessagesTo": "",
              "ForwardTo": "",
              "LockDuration": "PT1M",
              "MaxDeliveryCount": 3,
              "RequiresSession": false
            }
          }
        ],
        "Topics": [
          {
            "Name": "topic.1",
            "Subscriptions": [
              {
                "Name": "subscription.1",
                "Rules": [
                  {
                    "Name": "json-only",
                    "Properties": {
                      "FilterType": "Correlation",
                      "CorrelationFilter": {
                        "ContentType": "application/json"
                        // Other supported properties
                        // "CorrelationId": "id1",
                        /* "Label": "subject1", */
                      }
                    }
                  }
                ]
              }
            ]
          }
        ]
      }
    ],
    "Logging": { "Type": "File" }
  }
}
"""


@pytest.mark.emulator
def test_microsofts_config_with_comments_is_served_unchanged(tmp_path: Any) -> None:
    from azure.servicebus import ServiceBusClient, ServiceBusMessage

    path = tmp_path / "Config.json"
    path.write_text(MICROSOFT_SHAPED_CONFIG, encoding="utf-8")
    with (
        run_emulator(path) as running,
        ServiceBusClient.from_connection_string(
            running.connection_string("sbemulatorns")
        ) as client,
    ):
        with client.get_topic_sender("topic.1") as sender:
            sender.send_messages(ServiceBusMessage("{}", content_type="application/json"))
            sender.send_messages(ServiceBusMessage("text", content_type="text/plain"))
        with client.get_subscription_receiver("topic.1", "subscription.1", max_wait_time=2) as r:
            received = r.receive_messages(max_message_count=10, max_wait_time=2)
            for message in received:
                r.complete_message(message)
    assert [str(m) for m in received] == ["{}"]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{"UserConfig": {"Namespaces": [,]}}', "line 1 column 32"),
        ("[" * 5000, "nested too deeply"),
    ],
)
def test_a_config_that_is_not_json5_names_the_file_and_position(
    tmp_path: Any, text: str, problem: str
) -> None:
    path = tmp_path / "Config.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigurationError) as raised, run_emulator(path):
        pass
    assert str(path) in str(raised.value)
    assert "invalid JSON" in str(raised.value)
    assert problem in str(raised.value)


@pytest.mark.emulator
def test_session_entities_are_accepted() -> None:
    config = _namespace(
        Queues=[{"Name": "q", "Properties": {"RequiresSession": True}}],
        Topics=[
            {
                "Name": "t",
                "Subscriptions": [{"Name": "s", "Properties": {"RequiresSession": True}}],
            }
        ],
    )
    with run_emulator(config) as running:
        assert running.namespaces == ["ns"]
