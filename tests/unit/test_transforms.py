"""User transforms' contract, without running a batch: the guard, references, signatures, the
registry, and how the topology reports each mistake (file, JSON path, what is wrong)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from replication.envelope import Envelope
from replication.exceptions import ConfigurationError
from replication.properties import REPL_HOPS, REPL_ORIGIN, REPL_ORIGIN_MESSAGE_ID, REPL_PATH
from replication.topology import parse_topology
from replication.transforms import (
    CodeReferenceError,
    RejectMessage,
    SkipMessage,
    Transform,
    TransformFailure,
    Transforms,
    TransformSignatureError,
    checked_result,
    import_reference,
)

ROOT = Path(__file__).resolve().parents[2]

RECEIVED = Envelope(
    body=b'{"card":"4111111111111111"}',
    message_id="m-1",
    application_properties={REPL_ORIGIN: "eus", REPL_PATH: "eus;weu", REPL_HOPS: 1, "k": "v"},
    enqueued_time_utc=datetime(2024, 5, 1, tzinfo=UTC),
    sequence_number=42,
    source="weu/orders",
)


# -- the guard ------------------------------------------------------------------------------


def test_the_message_itself_and_reshaped_copies_pass_with_the_received_facts() -> None:
    assert checked_result(RECEIVED, RECEIVED) == (RECEIVED,)
    reshaped = Envelope(body=b"new", application_properties=dict(RECEIVED.application_properties))
    (replica,) = checked_result(RECEIVED, reshaped)  # type: ignore[misc]
    assert replica.body == b"new"
    # Broker facts and a missing MessageId come from the received message.
    assert (replica.message_id, replica.sequence_number, replica.source) == (
        "m-1",
        42,
        "weu/orders",
    )
    assert replica.enqueued_time_utc == RECEIVED.enqueued_time_utc


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (lambda m: m.with_properties(remove=(REPL_PATH,)), "-repl-path"),
        (lambda m: m.with_properties({REPL_HOPS: 0}), "~repl-hops"),
        (lambda m: m.with_properties({REPL_HOPS: "1"}), "~repl-hops"),
        (lambda m: m.with_properties({"Repl-Extra": "x"}), "+Repl-Extra"),
        (lambda m: m.with_properties({"replication": 1}), "+replication"),
    ],
)
def test_a_replica_that_touches_replication_properties_is_refused(change: Any, named: str) -> None:
    result = checked_result(RECEIVED, change(RECEIVED))
    assert isinstance(result, TransformFailure)
    assert named in result.description
    assert "loop prevention" in result.description


def test_a_new_message_id_records_the_received_one_once() -> None:
    (replica,) = checked_result(RECEIVED, RECEIVED.replace(message_id="order-7"))  # type: ignore[misc]
    assert replica.message_id == "order-7"
    assert replica.application_properties[REPL_ORIGIN_MESSAGE_ID] == "m-1"
    # A later hop that renames again keeps the first original id (it is a reserved property).
    again = replica.replace(message_id="order-7b")
    (second,) = checked_result(replica, again)  # type: ignore[misc]
    assert second.application_properties[REPL_ORIGIN_MESSAGE_ID] == "m-1"


def test_split_parts_get_distinct_stable_ids() -> None:
    parts = checked_result(RECEIVED, [RECEIVED.replace(body=b"a"), RECEIVED.replace(body=b"b")])
    assert isinstance(parts, tuple)
    assert [p.message_id for p in parts] == ["m-1/1", "m-1/2"]
    without_id = RECEIVED.replace(message_id=None)
    parts = checked_result(without_id, [without_id, without_id.replace(body=b"b")])
    assert isinstance(parts, tuple)
    assert [p.message_id for p in parts] == ["weu/orders/42/1", "weu/orders/42/2"]
    clash = checked_result(
        RECEIVED, [RECEIVED.replace(message_id="x"), RECEIVED.replace(message_id="x")]
    )
    assert isinstance(clash, TransformFailure)
    assert "share MessageId x" in clash.description


@pytest.mark.parametrize(
    ("returned", "says"),
    [
        (None, "returned None"),
        ([], "empty list"),
        ("text", "returned str 'text'"),
        ([RECEIVED, b"x"], "element 1 is bytes"),
        (SkipMessage(""), "without a reason"),
        (RejectMessage(None), "without a reason"),  # type: ignore[arg-type]
    ],
)
def test_garbage_is_a_failure_that_says_what_came_back(returned: object, says: str) -> None:
    result = checked_result(RECEIVED, returned)
    assert isinstance(result, TransformFailure)
    assert says in result.description


def test_skip_and_reject_pass_through() -> None:
    assert checked_result(RECEIVED, SkipMessage("test")) == SkipMessage("test")
    assert checked_result(RECEIVED, RejectMessage("bad")) == RejectMessage("bad")


# -- references and signatures --------------------------------------------------------------


@pytest.mark.parametrize(
    ("reference", "says"),
    [
        ("no colon", "is not a reference to code"),
        ("surely_not_a_module_42:f", "module 'surely_not_a_module_42' not found"),
        ("examples.user_transforms:mask_cards", "did you mean 'mask_card'"),
        ("json:nothing.here", "'json' has no attribute 'nothing'"),
    ],
)
def test_references_that_do_not_import_say_why(reference: str, says: str) -> None:
    with pytest.raises(CodeReferenceError, match=says):
        import_reference(reference)


def test_a_module_that_fails_to_import_names_the_error(tmp_path: Path, monkeypatch: Any) -> None:
    (tmp_path / "broken_transforms.py").write_text("raise RuntimeError('no config')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(CodeReferenceError, match="RuntimeError: no config"):
        import_reference("broken_transforms:f")


def two(message: Envelope, other: object) -> Envelope:
    return message


def keyword(message: Envelope, *, table: dict[str, str]) -> Envelope:
    return message


class AsyncCallable:
    async def __call__(self, message: Envelope) -> Envelope:
        return message


@pytest.mark.parametrize(
    ("function", "says"),
    [
        (two, "takes 2 required argument"),
        (keyword, "requires keyword argument"),
        (Envelope, "is a class"),
        ("mask", "is a str, not a function"),
        (lambda: None, "takes 0 required"),
    ],
)
def test_functions_that_cannot_take_one_message_are_refused(function: object, says: str) -> None:
    with pytest.raises(TransformSignatureError, match=says):
        Transform.of(function, name="t")


def test_async_functions_and_callable_objects_are_recognised() -> None:
    async def enrich(message: Envelope) -> Envelope:
        return message

    assert Transform.of(enrich, name="a").is_async
    assert Transform.of(AsyncCallable(), name="c").is_async
    assert not Transform.of(lambda m, extra=1: m, name="l").is_async


def test_the_registry_takes_both_decorator_forms_and_refuses_a_second_name() -> None:
    transforms = Transforms()

    @transforms.register
    def mask(message: Envelope) -> Envelope:
        return message

    @transforms.register("route-by-country")
    def route(message: Envelope) -> Envelope:
        return message

    assert list(transforms) == ["mask", "route-by-country"]
    assert transforms.get("mask") is mask
    with pytest.raises(ValueError, match="already registered"):
        transforms.register("mask")(route)
    with pytest.raises(TransformSignatureError):
        transforms.register("bad")(two)
    with pytest.raises(CodeReferenceError, match="did you mean 'mask'"):
        transforms.get("masc")


# -- the topology ---------------------------------------------------------------------------


def document(transform: object, options: dict[str, Any] | None = None) -> dict[str, Any]:
    base: dict[str, Any] = json.loads((ROOT / "examples" / "user-transforms.json").read_text())
    task = base["tasks"][1]
    task["transform"] = transform
    if options is not None:
        task["options"] = options
    return base


@pytest.mark.parametrize(
    ("transform", "location", "says"),
    [
        ("surely_not_a_module_42:f", "tasks[1].transform", "not found"),
        ({"function": "json:dumpz"}, "tasks[1].transform.function", "did you mean 'dump"),
        ("json:JSONDecoder", "tasks[1].transform", "is a class"),
        ("mask", "tasks[1].transform", "no transform registered as 'mask'"),
        ({"function": "json:loads", "timeout": "PT0S"}, "tasks[1].transform.timeout", ""),
    ],
)
def test_topology_errors_name_the_file_and_json_path(
    transform: object, location: str, says: str
) -> None:
    with pytest.raises(ConfigurationError) as raised:
        parse_topology(document(transform), source="app/topology.json")
    text = str(raised.value)
    assert text.startswith(f"app/topology.json: {location}: "), text
    assert says in text


def test_a_registered_name_and_a_reference_both_resolve_once_at_load() -> None:
    transforms = Transforms()
    calls: list[str] = []

    @transforms.register("enrich")
    def enrich(message: Envelope) -> Envelope:
        calls.append("called")
        return message

    topology = parse_topology(
        document({"function": "enrich", "timeout": "PT3S"}), transforms=transforms
    )
    loaded = topology.resolved("sales-enriched").transform
    assert loaded is not None
    assert (loaded.function, loaded.timeout, loaded.name) == (enrich, 3.0, "enrich")
    assert calls == []  # loading never calls user code
    example = parse_topology(document("examples.user_transforms:mask_card"))
    masked = example.resolved("sales-enriched").transform
    assert masked is not None
    assert masked.name == "examples.user_transforms:mask_card"


@pytest.mark.parametrize(
    ("options", "says"),
    [
        (
            {"bodySchema": {"type": "nonsense"}},
            "tasks[1].options.bodySchema: not a valid JSON Schema",
        ),
        ({"bodyModel": "json:loads"}, "tasks[1].options.bodyModel: 'json:loads' is"),
        ({"bodyModel": "nowhere_42:Model"}, "tasks[1].options.bodyModel: module 'nowhere_42'"),
    ],
)
def test_validators_that_cannot_compile_fail_loading(options: dict[str, Any], says: str) -> None:
    topology = document("examples.user_transforms:mask_card")
    topology["tasks"][1]["pattern"] = "validation"
    topology["tasks"][1]["options"] = options
    with pytest.raises(ConfigurationError, match=says.replace("[", r"\[").replace("]", r"\]")):
        parse_topology(topology, source="t.json")


def test_the_cli_loads_a_registry_named_by_transforms(
    tmp_path: Path, monkeypatch: Any, capsys: Any
) -> None:
    """``--transforms module:name`` gives every command that loads the app's code its
    registered transforms."""
    from replication.cli import main

    (tmp_path / "app_transforms.py").write_text(
        "from replication.transforms import Transforms\n"
        "transforms = Transforms()\n"
        "@transforms.register\n"
        "def enrich(message):\n"
        "    return message\n"
        "not_a_registry = 42\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    topology = tmp_path / "topology.json"
    topology.write_text(json.dumps(document("enrich")))
    assert main(["validate", "--topology", str(topology)]) != 0
    assert "no transform registered as 'enrich'" in capsys.readouterr().err
    ok = ["validate", "--topology", str(topology), "--transforms", "app_transforms:transforms"]
    assert main(ok) == 0
    wrong = [
        "validate",
        "--topology",
        str(topology),
        "--transforms",
        "app_transforms:not_a_registry",
    ]
    assert main(wrong) != 0
    assert "--transforms: 'app_transforms:not_a_registry' is a int" in capsys.readouterr().err
