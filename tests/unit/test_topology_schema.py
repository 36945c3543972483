"""The topology's JSON Schema (``replication schema``) agrees with the loader.

Every example and every invalid-topology fixture gets the same verdict from the schema (checked
with ``jsonschema``, draft 2020-12, as an editor would) as from :func:`load_topology`, except
the fixtures listed in :data:`LOADER_ONLY`: problems a JSON Schema cannot express, which only
the loader sees (each is asserted to pass the schema, so that the list stays true). The
schema file the examples name with ``"$schema"`` is the command's output, byte for byte.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from replication.cli import main
from replication.durations import ISO8601_PATTERN, parse_iso8601
from replication.exceptions import ConfigurationError
from replication.exit_codes import ExitCode
from replication.topology import load_topology, topology_schema, topology_schema_text

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_FILE = ROOT / "docs" / "reference" / "topology.schema.json"
EXAMPLES = sorted((ROOT / "examples").glob("*.json"))
INVALID = sorted((Path(__file__).parent / "invalid_topologies").glob("*.json"))

CROSS_REFERENCE = "a cross-reference between records, which JSON Schema cannot express"
LOADER_ONLY = {
    "unknown-namespace.json": CROSS_REFERENCE,
    "unknown-entity.json": CROSS_REFERENCE,
    "duplicate-namespace.json": "unique names across records",
    "duplicate-task.json": "unique names across records",
    "source-is-target.json": CROSS_REFERENCE,
    "topic-without-subscription.json": CROSS_REFERENCE + " (the source entity's kind)",
    "hand-written-replication-rule.json": CROSS_REFERENCE + " (a task reads that subscription)",
    "bad-sql-rule.json": "SQL syntax (the loader parses every rule with replication.sql)",
    "delivery-count-below-outage-tolerance.json": "arithmetic between a subscription's "
    "maxDeliveryCount and lockDuration and a task's retry.outageTolerance",
    "session-target-from-plain-source.json": CROSS_REFERENCE + " (sessions on both ends)",
    "session-subscription-fed-by-plain-source.json": CROSS_REFERENCE + " (sessions on both ends)",
}


@pytest.fixture(scope="module")
def validator() -> Draft202012Validator:
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def test_the_schema_file_is_the_commands_output() -> None:
    assert SCHEMA_FILE.read_text(encoding="utf-8") == topology_schema_text(), (
        "stale: run `python -m replication schema --output docs/reference/topology.schema.json`"
    )


def test_the_command_prints_the_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == ExitCode.OK
    assert json.loads(capsys.readouterr().out) == topology_schema()


def _schema_verdict(validator: Draft202012Validator, path: Path) -> list[str]:
    """The schema's problems with the file (a file that is not JSON text has one)."""
    try:
        document: Any = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        return [f"not JSON: {error}"]
    return [f"{e.json_path}: {e.message}" for e in validator.iter_errors(document)]


def _loader_verdict(path: Path) -> list[str]:
    try:
        load_topology(path)
    except ConfigurationError as error:
        return [str(error)]
    return []


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_names_the_schema_and_passes_it_and_the_loader(
    validator: Draft202012Validator, path: Path
) -> None:
    document = json.loads(path.read_text(encoding="utf-8"))
    assert (path.parent / document["$schema"]).resolve() == SCHEMA_FILE
    assert _schema_verdict(validator, path) == []
    assert _loader_verdict(path) == []


@pytest.mark.parametrize("path", INVALID, ids=lambda p: p.name)
def test_every_invalid_fixture_gets_the_loaders_verdict_from_the_schema(
    validator: Draft202012Validator, path: Path
) -> None:
    assert _loader_verdict(path), "the loader accepts an invalid-topology fixture"
    if path.name in LOADER_ONLY:
        assert _schema_verdict(validator, path) == [], (
            f"the schema now refuses {path.name}: remove it from LOADER_ONLY"
        )
    else:
        assert _schema_verdict(validator, path), f"the schema accepts {path.name}"


def test_loader_only_names_existing_fixtures() -> None:
    assert set(LOADER_ONLY) <= {path.name for path in INVALID}


@pytest.mark.parametrize(
    "text",
    [
        "PT2M",
        "P1D",
        "PT0.5S",
        "P1DT2H3M4.5S",
        "P2W",
        "PT1,5S",
        "PT0S",
        "2 minutes",
        "1h",
        "10s",
        "P",
        "PT",
        "P1DT",
        "PT1.2.3S",
        "P1M",
        "P1Y",
        "pt2m",
        "1:00:00",
        "",
    ],
)
def test_the_schemas_duration_pattern_accepts_what_the_parser_accepts(text: str) -> None:
    import re

    try:
        parse_iso8601(text)
        parsed = True
    except ValueError:
        parsed = False
    assert (re.search(ISO8601_PATTERN, text) is not None) == parsed


def test_options_follow_the_tasks_pattern(validator: Draft202012Validator) -> None:
    document = json.loads((ROOT / "examples" / "active-passive.json").read_text())
    document["tasks"][0]["options"] = {"replicaTimeToLife": "PT2M"}
    messages = [error.message for error in validator.iter_errors(document)]
    assert messages, "a misspelt option passed the schema"
    document["tasks"][0]["options"] = {"replicaTimeToLive": 120}
    assert list(validator.iter_errors(document)) == []
