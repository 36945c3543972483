"""The Functions app indexes one batch-triggered function per task, as the host would see it.

``app.get_functions()`` is the indexing the Functions host runs on the Python v2 model; the
bindings are compared as JSON, so no host is needed and nothing connects at indexing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from replication.hosts.functions import build_app
from replication.topology import load_topology

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _indexed(example: str) -> dict[str, dict[str, Any]]:
    app = build_app(load_topology(EXAMPLES / example), environ={})
    indexed = {}
    for function in app.get_functions():
        description = json.loads(function.get_function_json())
        retry = function.get_setting("retry_policy")
        if retry is not None:
            description["retry"] = retry.get_dict_repr()
        indexed[str(function.get_function_name())] = description
    return indexed


def test_one_topic_trigger_per_all_active_task() -> None:
    functions = _indexed("two-region-all-active.json")
    assert sorted(functions) == ["orders-neu-to-weu", "orders-weu-to-neu"]
    (binding,) = functions["orders-weu-to-neu"]["bindings"]
    assert binding["type"] == "serviceBusTrigger"
    assert binding["topicName"] == "orders"
    assert binding["subscriptionName"] == "replication"
    assert binding["connection"] == "SB_WEU"
    assert binding["cardinality"].lower() == "many"
    assert binding["name"] == "messages"


def test_spillover_reads_the_dead_letter_queue_and_event_hubs_retry_forever() -> None:
    functions = _indexed("active-passive-and-stream.json")
    (spill,) = functions["jobs-spillover"]["bindings"]
    assert spill["queueName"] == "jobs/$DeadLetterQueue"
    devices = functions["devices-to-queue"]
    (hub,) = devices["bindings"]
    assert hub["type"] == "eventHubTrigger"
    assert hub["eventHubName"] == "devices"
    assert hub["consumerGroup"] == "replication"
    assert hub["connection"] == "EH_INGEST"
    assert devices["retry"]["strategy"] == "exponential_backoff"
    assert devices["retry"]["max_retry_count"] == "-1"
