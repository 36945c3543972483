"""Rule actions rewrite a copy's properties; every other property must come through intact."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("proton", reason="the emulator needs python-qpid-proton")

from azure.servicebus import ServiceBusClient, ServiceBusMessage
from azure.servicebus._pyamqp.types import TYPE, VALUE, AMQPTypes

from emulator import run_emulator

pytestmark = pytest.mark.emulator  # serves the emulator (tests/conftest.py)

_ACTION_RULE = {
    "Name": "$Default",
    "Properties": {
        "FilterType": "Sql",
        "SqlFilter": {"SqlExpression": "1=1"},
        "Action": {"SqlExpression": "SET stamped = 1"},
    },
}
CONFIG = {
    "UserConfig": {
        "Namespaces": [
            {
                "Name": "rules",
                "Topics": [
                    {
                        "Name": "t",
                        "Subscriptions": [
                            {"Name": "first", "Rules": [_ACTION_RULE]},
                            {"Name": "second", "Rules": [_ACTION_RULE]},
                            {"Name": "plain"},
                        ],
                    }
                ],
            }
        ]
    }
}
BLOB = bytes(range(48)) + b"\xff" * 8


def test_binary_properties_survive_a_rule_action_on_every_subscription() -> None:
    """A binary application property (sent as AMQP binary with the SDK's typed-value form) on
    a topic whose subscriptions' rules have actions: each copy keeps the exact bytes. proton
    hands binary values out as views into a buffer it reuses; the copies used to hold those
    views, and got the next decode's bytes."""
    # The SDK's typed-value form (its encoder reads it; the type hints do not list it).
    message: Any = {"blob": {TYPE: AMQPTypes.binary, VALUE: BLOB}, "label": "text"}
    with (
        run_emulator(CONFIG) as running,
        ServiceBusClient.from_connection_string(running.connection_string("rules")) as client,
    ):
        with client.get_topic_sender("t") as sender:
            sender.send_messages([ServiceBusMessage(f"m{i}", application_properties=message)
                                  for i in range(3)])  # fmt: skip
        found: dict[str, list[dict[Any, Any]]] = {}
        for subscription in ("first", "second", "plain"):
            with client.get_subscription_receiver("t", subscription, max_wait_time=2) as receiver:
                received = receiver.receive_messages(max_message_count=10, max_wait_time=2)
                for each in received:
                    receiver.complete_message(each)
                found[subscription] = [dict(m.application_properties or {}) for m in received]
    for subscription, copies in found.items():
        assert len(copies) == 3, subscription
        for properties in copies:
            assert properties[b"blob"] == BLOB, subscription
            assert properties[b"label"] == b"text"
            assert properties.get(b"stamped") == (None if subscription == "plain" else 1)
