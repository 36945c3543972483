"""Loop prevention that configuration cannot remove.

Options that edit a replica's properties (validation: ``removeProperties`` / ``setProperties``;
consolidation: ``setProperties`` / ``renameProperties``) may not name a replication property,
and when such options exist anyway (built with ``model_construct``, bypassing validation) the
forwarding step still stamps the source's replication properties, so the path goes on growing.
``python -m replication plan`` stops, with findings, on any copy that loops regardless.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import pytest
from pydantic import ValidationError

from patterns.consolidation import PATTERN as CONSOLIDATION
from patterns.consolidation import ConsolidationOptions
from patterns.validation import PATTERN as VALIDATION
from patterns.validation import ValidationOptions
from replication.cli.plan import walk
from replication.envelope import Envelope
from replication.exit_codes import ExitCode
from replication.planning import Decision, Forward, Pattern, PatternOptions, Target, TaskContext
from replication.properties import (
    ALL_PROPERTIES,
    DEAD_LETTER_SOURCE,
    REPL_HOPS,
    REPL_ORIGIN,
    REPL_PATH,
    is_replication_property,
    read_state,
)
from replication.topology import Topology, parse_topology

RESERVED = [*ALL_PROPERTIES, DEAD_LETTER_SOURCE, "repl-anything", "Repl-Path", "REPLICATION"]


@pytest.mark.parametrize("name", RESERVED)
def test_replication_names_are_reserved(name: str) -> None:
    assert is_replication_property(name)


@pytest.mark.parametrize("name", ["region", "replica", "replicationRegion", "repl", "my-repl-x"])
def test_other_names_are_not(name: str) -> None:
    assert not is_replication_property(name)


@pytest.mark.parametrize(
    ("model", "options", "where"),
    [
        (ValidationOptions, {"removeProperties": ["note", "repl-path"]}, ("removeProperties", 1)),
        (ValidationOptions, {"setProperties": {"repl-hops": 0}}, ("setProperties", "repl-hops")),
        (
            ValidationOptions,
            {"setProperties": {"Replication": 1}},
            ("setProperties", "Replication"),
        ),
        (ConsolidationOptions, {"setProperties": {"repl-origin": "x"}}, ("setProperties",)),
        (ConsolidationOptions, {"renameProperties": {"repl-path": "path"}}, ("renameProperties",)),
        (ConsolidationOptions, {"renameProperties": {"hops": "repl-hops"}}, ("renameProperties",)),
    ],
)
def test_options_refuse_replication_properties(
    model: type[PatternOptions], options: dict[str, Any], where: tuple[str | int, ...]
) -> None:
    with pytest.raises(ValidationError) as caught:
        model.model_validate(options)
    (error,) = caught.value.errors()
    assert error["loc"][: len(where)] == where
    assert "is a replication property; editing it would defeat loop prevention" in error["msg"]


CONTEXT = TaskContext(
    task_name="b-to-c", source_namespace="b", targets=(Target("c", "orders"),), max_hops=5
)
# A replica that went a -> b and is about to be replicated to c.
RECEIVED = Envelope(
    body=b"{}",
    message_id="m-1",
    application_properties={
        REPL_ORIGIN: "a",
        REPL_PATH: "a;b",
        REPL_HOPS: 1,
        "replication": 1,
        "note": "internal",
    },
)


def _only_forward(decisions: list[Decision]) -> Envelope:
    (decision,) = decisions
    assert isinstance(decision, Forward)
    return decision.envelope


def _assert_path_continues(replica: Envelope) -> None:
    state = read_state(replica.application_properties)
    assert (state.origin, state.path, state.hops) == ("a", ("a", "b", "c"), 2)
    assert replica.application_properties["replication"] == 1
    assert not any(
        key.lower() == "repl-path" and key != REPL_PATH for key in replica.application_properties
    )


def test_validation_options_built_without_validation_cannot_edit_replication_properties() -> None:
    options = ValidationOptions.model_construct(
        remove_properties=["note", *ALL_PROPERTIES],
        set_properties={"tier": "gold", REPL_ORIGIN: "forged", REPL_HOPS: 0, "Repl-Path": "x"},
    )
    replica = _only_forward(VALIDATION.plan([RECEIVED], CONTEXT, options))
    _assert_path_continues(replica)
    assert replica.application_properties["tier"] == "gold"
    assert "note" not in replica.application_properties


def test_consolidation_options_built_without_validation_cannot_edit_replication_properties() -> (
    None
):
    options = ConsolidationOptions.model_construct(
        set_properties={REPL_PATH: "c", "region": "b"},
        rename_properties={REPL_HOPS: "hops", "note": REPL_ORIGIN, "replication": "flag"},
    )
    replica = _only_forward(CONSOLIDATION.plan([RECEIVED], CONTEXT, options))
    _assert_path_continues(replica)
    assert replica.application_properties["region"] == "b"


def _ring(pattern: str) -> Topology:
    """weu -> neu -> eus -> weu, one queue each, every task with ``pattern`` and no options."""
    names = ["weu", "neu", "eus"]
    return parse_topology(
        {
            "namespaces": [
                {
                    "name": name,
                    "region": name,
                    "kind": "servicebus",
                    "fullyQualifiedNamespace": f"{name}.servicebus.windows.net",
                    "connection": f"SB_{name.upper()}",
                    "queues": [{"name": "orders"}],
                }
                for name in names
            ],
            "tasks": [
                {
                    "name": f"{a}-to-{b}",
                    "pattern": pattern,
                    "source": {"namespace": a, "entity": "orders"},
                    "targets": [{"namespace": b, "entity": "orders"}],
                }
                for a, b in zip(names, names[1:] + names[:1], strict=True)
            ],
        },
        source="ring.json",
    )


def _with(topology: Topology, **changes: Any) -> Topology:
    """``topology`` with every resolved task changed as given, bypassing validation."""
    return topology.with_resolved(
        {
            task.name: dataclasses.replace(topology.resolved(task), **changes)
            for task in topology.tasks
        }
    )


def test_plan_of_a_ring_whose_options_strip_the_path_ends(
    capsys: pytest.CaptureFixture[str],
) -> None:
    options = ValidationOptions.model_construct(remove_properties=list(ALL_PROPERTIES))
    assert walk(_with(_ring("validation"), options=options)) == ExitCode.OK
    assert "3 messages, 9 copies, 0 delivered twice to one entity" in capsys.readouterr().out


def _amnesiac_plan(
    batch: Sequence[Envelope], context: TaskContext, options: PatternOptions
) -> list[Decision]:
    # A broken pattern: forwards every message with its replication properties forgotten.
    return [Forward(envelope, envelope.replace(application_properties={}), context.targets[0])
            for envelope in batch]  # fmt: skip


def test_plan_stops_a_copy_that_loops_with_findings(capsys: pytest.CaptureFixture[str]) -> None:
    amnesiac = Pattern(
        name="amnesiac", summary="forgets", options_model=PatternOptions, plan=_amnesiac_plan
    )
    assert walk(_with(_ring("validation"), pattern=amnesiac)) == ExitCode.FINDINGS
    out = capsys.readouterr().out
    assert "loop: weu-orders-1 arrived in " in out
    assert "with maxHops 2 and 3 tasks a copy needs at most 11" in out
