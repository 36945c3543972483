"""The topology file: examples load, materialization adds the managed rules, and every invalid
file under ``invalid_topologies/`` fails with one readable line naming the file and JSON path."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from replication.cli import main
from replication.exceptions import ConfigurationError
from replication.exit_codes import ExitCode
from replication.topology import load_topology, materialize, parse_topology

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.json"))
INVALID = Path(__file__).parent / "invalid_topologies"

EXPECTED_ERRORS = {
    "unknown-namespace.json": "tasks[0].targets[0].namespace: unknown namespace 'neux' "
    "(did you mean 'neu'?); known: weu, neu",
    "duplicate-namespace.json": "namespaces[1]: duplicate name 'weu'",
    "source-is-target.json": "tasks[0].targets[0]: a task's target must differ from its source",
    "unknown-pattern.json": "tasks[0].pattern: unknown pattern 'all-active' "
    "(did you mean 'all_active'?)",
    "negative-ttl.json": "tasks[0].options.replicaTimeToLive: Input should be greater than 0",
    "misspelt-key.json": "namespaces[0].fullyQualifiedNamspace: unknown key "
    "(did you mean 'fullyQualifiedNamespace'?)",
    "topic-without-subscription.json": "tasks[1].source.subscription: 'orders' is a topic: "
    "name the subscription to read",
    "unknown-entity.json": "tasks[1].targets[0].entity: namespace 'weu' has no entity 'order'",
    "duplicate-task.json": "tasks[1]: duplicate name 'orders-weu-to-neu'",
    "bad-max-delivery-count.json": "namespaces[0].topics[0].subscriptions[0].maxDeliveryCount: "
    "Input should be greater than or equal to 1",
    "hand-written-replication-rule.json": "tasks[0].source.subscription: subscription "
    "'replication' gets its loop-prevention rule from task 'orders-weu-to-neu'",
    "bad-sql-rule.json": "namespaces[0].topics[0].subscriptions[0].rules[0]: rule orders-only: "
    "filter: column 24: expected an expression, found end of input",
    "delivery-count-below-outage-tolerance.json": "namespaces[0].topics[0].subscriptions[1]."
    "maxDeliveryCount: 10 deliveries ride out 0:00:00 of target outage, but task "
    "'orders-weu-to-neu' has retry.outageTolerance 0:30:00 and needs 48 (raise it, or lower "
    "the tolerance)",
    "not-json.json": "line 3 column 22: invalid JSON: Expecting property name",
    "not-utf8.json": "line 3 column 17: not UTF-8 text (byte 0xe9); save the file as UTF-8",
    "removes-replication-property.json": "tasks[2].options.removeProperties[1]: 'repl-path' is "
    "a replication property; editing it would defeat loop prevention",
    "session-target-from-plain-source.json": "tasks[0].targets[0]: queue 'payments' requires "
    "sessions, and Service Bus refuses messages without SessionId; weu/payments does not "
    "require sessions, so its messages may have none",
    "session-subscription-fed-by-plain-source.json": "tasks[0].targets[0]: topic 'orders' has "
    "session-enabled subscription 'ledger', which does not take messages without SessionId; "
    "weu/orders/Subscriptions/replication does not require sessions",
    "capture-interval-on-service-bus.json": "namespaces[0]: capture.interval and "
    "capture.sizeLimitBytes are Event Hubs Capture's; a servicebus namespace's capture writes "
    "one file per received batch and hour",
    "capture-subscription-with-rules.json": "namespaces[0].topics[0].subscriptions[1].rules: "
    "'replication-capture' is the subscription the namespace's capture reads, and it must take "
    "everything the topic holds: give it no rules",
    "renames-replication-property.json": "tasks[1].options.renameProperties.repl-origin: "
    "'repl-origin' is a replication property; editing it would defeat loop prevention",
    "duration-not-iso8601.json": "tasks[0].options.replicaTimeToLive: expected an ISO-8601 "
    "duration such as PT2M or P1D, or a number of seconds, got '2 minutes'",
    "retry-duration-not-iso8601.json": "tasks[0].retry.minBackoff: expected an ISO-8601 "
    "duration such as PT2M or P1D, or a number of seconds, got '10s'",
    "misspelt-option.json": "tasks[0].options.replicaTimeToLife: unknown option for pattern "
    "'active_passive' (did you mean 'replicaTimeToLive'?); known: replicaTimeToLive",
    "misspelt-optional-option.json": "tasks[0].options.maxBodyByte: unknown option for pattern "
    "'validation' (did you mean 'maxBodyBytes'?); known: bodyModel, bodySchema, condition, "
    "maxBodyBytes, onInvalid, removeProperties, requiredProperties, setProperties",
}


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_examples_are_valid(path: Path) -> None:
    topology = load_topology(path)
    assert topology.tasks


def test_every_invalid_fixture_has_an_expectation() -> None:
    assert sorted(p.name for p in INVALID.glob("*.json")) == sorted(EXPECTED_ERRORS)


@pytest.mark.parametrize("name", sorted(EXPECTED_ERRORS))
def test_invalid_topology_gives_one_line_with_file_and_json_path(name: str) -> None:
    path = INVALID / name
    with pytest.raises(ConfigurationError) as caught:
        load_topology(path)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: ")
    assert EXPECTED_ERRORS[name] in message


def test_missing_file_names_the_setting(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="REPLICATION_TOPOLOGY"):
        load_topology(tmp_path / "absent.json")


def _one_line_error(path: Path) -> str:
    with pytest.raises(ConfigurationError) as caught:
        load_topology(path)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: ")
    return message


def test_json_nested_too_deeply_is_a_configuration_error(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    assert _one_line_error(path).endswith("invalid JSON: arrays and objects are nested too deeply")


def test_integer_too_long_for_python_is_a_configuration_error(tmp_path: Path) -> None:
    path = tmp_path / "digits.json"
    path.write_text('{"namespaces": ' + "1" * 5_000 + "}")
    assert "invalid JSON: Exceeds the limit (4300 digits)" in _one_line_error(path)


def test_a_directory_is_not_a_topology_file(tmp_path: Path) -> None:
    assert _one_line_error(tmp_path).endswith(": is a directory, not a topology file")


def test_a_path_through_a_file_cannot_be_read(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("{}")
    message = _one_line_error(tmp_path / "file" / "topology.json")
    assert message.endswith("cannot read topology file: Not a directory")


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_file_is_a_configuration_error(tmp_path: Path) -> None:
    path = tmp_path / "secret.json"
    path.write_text("{}")
    path.chmod(0)
    assert _one_line_error(path).endswith("cannot read topology file: Permission denied")


def test_a_utf8_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "bom.json"
    path.write_bytes(
        b"\xef\xbb\xbf" + (ROOT / "examples" / "two-region-all-active.json").read_bytes()
    )
    assert load_topology(path).tasks


@pytest.mark.parametrize("command", ["validate", "plan", "run"])
@pytest.mark.parametrize("problem", ["deep", "not-utf8", "directory"])
def test_the_cli_reports_bad_files_in_one_line_with_exit_code_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, problem: str
) -> None:
    path = {
        "deep": tmp_path / "deep.json",
        "not-utf8": INVALID / "not-utf8.json",
        "directory": tmp_path,
    }[problem]
    if problem == "deep":
        path.write_text('{"namespaces": [], "x": ' + "[" * 50_000 + "]" * 50_000 + "}")
    assert main([command, "--topology", str(path)]) == ExitCode.CONFIGURATION
    err = capsys.readouterr().err
    assert err.startswith(f"error: {path}: ")
    assert err.count("\n") == 1


def test_topology_path_comes_from_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REPLICATION_TOPOLOGY", str(EXAMPLES[0]))
    assert load_topology().namespaces


def test_materialized_adds_the_loop_prevention_rule_as_default() -> None:
    topology = materialize(load_topology(ROOT / "examples" / "two-region-all-active.json"))
    topic = topology.namespace("weu").topics[0]
    subscriptions = {s.name: s for s in topic.subscriptions}
    assert subscriptions["billing"].rules == []
    (rule,) = subscriptions["replication"].rules
    assert rule.name == "$Default"
    assert rule.filter.sql == "replication IS NULL"
    assert rule.action == "SET replication = 1"


def test_active_passive_rule_sets_the_replica_ttl() -> None:
    topology = load_topology(ROOT / "examples" / "active-passive-and-stream.json")
    (rule,) = materialize(topology).namespace("primary").topics[0].subscriptions[0].rules
    assert rule.action == "SET replication = 1; SET sys.TimeToLive = '00:02:00'"


def test_event_hub_consumer_group_of_a_task_is_materialized() -> None:
    topology = load_topology(ROOT / "examples" / "active-passive-and-stream.json")
    (hub,) = materialize(topology).namespace("ingest").event_hubs
    assert hub.consumer_groups == ["replication"]


def test_several_problems_are_reported_one_per_line() -> None:
    document = {"namespaces": [{"name": "X", "region": "", "kind": "sql"}]}
    with pytest.raises(ConfigurationError) as caught:
        parse_topology(document, source="inline.json")
    lines = str(caught.value).splitlines()
    assert len(lines) > 1
    assert all(line.startswith("inline.json: namespaces[0].") for line in lines)
