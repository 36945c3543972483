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


def test_forwarding_within_the_namespace_is_accepted() -> None:
    config = _namespace(
        Queues=[
            {"Name": "in", "Properties": {"ForwardTo": "out"}},
            {"Name": "out"},
        ]
    )
    with run_emulator(config) as running:
        assert running.namespaces == ["ns"]


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
