"""The generated reference covers the code: every key of every record of the topology file
(each pattern's options included), every option of every command (with a help text for its
meaning) and every app setting the library names is in it. The generators read the code, so
this guards the generators: a record they no longer reach, a command they skip, a setting
missing from the table they read."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from types import ModuleType

import pytest
from pydantic import BaseModel

from replication.cli import COMMANDS, PROG, build_parser
from replication.planning import PATTERN_NAMES, load_pattern
from replication.topology import Topology

ROOT = Path(__file__).resolve().parents[2]


def _records() -> dict[str, type[BaseModel]]:
    """Every record reachable from the topology document and the patterns' options."""
    found: dict[str, type[BaseModel]] = {}

    def visit(annotation: object) -> None:
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            if annotation.__name__ in found:
                return
            found[annotation.__name__] = annotation
            for field in annotation.model_fields.values():
                visit(field.annotation)
            return
        for argument in getattr(annotation, "__args__", ()):
            visit(argument)

    visit(Topology)
    for name in PATTERN_NAMES:
        visit(load_pattern(name).options_model)
    return found


def _sections(markdown: str) -> dict[str, str]:
    """The generated page's sections by heading."""
    parts = re.split(r"^### (.+)$", markdown, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_every_topology_key_is_in_its_records_section(reference: ModuleType) -> None:
    sections = _sections(reference.topology_reference())
    records = _records()
    assert len(records) >= 20
    for name, model in records.items():
        title = reference._title(name)
        assert title in sections, f"record {name} ({title}) is not in the reference"
        for field_name, field in model.model_fields.items():
            key = field.alias or field_name
            assert f"| `{key}` |" in sections[title], f"{title}: key {key} missing"


def test_every_command_and_option_is_in_the_cli_reference(reference: ModuleType) -> None:
    sections = _sections(reference.cli_reference())
    for name in COMMANDS:
        section = sections.get(f"`{PROG} {name}`")
        assert section is not None, f"command {name} missing"
        _, commands = build_parser(name)
        for action in commands[name]._actions:
            assert action.help, f"{name}: {action.option_strings or action.dest} has no help"
            for option in action.option_strings:
                if option not in ("-h", "--help"):
                    assert f"`{option}`" in section, f"{name}: {option} missing"
            if not action.option_strings:
                assert f"`{action.dest}`" in section, f"{name}: argument {action.dest} missing"


def _setting_names() -> set[str]:
    """Every app setting the library names: the values of its ``*_SETTING`` and
    ``*_SETTINGS`` constants."""
    names: set[str] = set()
    for path in (ROOT / "replication").rglob("*.py"):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if not isinstance(node, ast.Assign):
                continue
            targets = [t.id for t in node.targets if isinstance(t, ast.Name)]
            if not any(re.fullmatch(r"[A-Z_]*SETTINGS?", t) for t in targets):
                continue
            values = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
            names |= {
                v.value for v in values if isinstance(v, ast.Constant) and isinstance(v.value, str)
            }
    return names


def test_every_setting_is_in_the_settings_reference(reference: ModuleType) -> None:
    page = reference.generate(
        (ROOT / "docs" / "reference" / "settings.md").read_text(encoding="utf-8"), "settings.md"
    )
    names = _setting_names()
    assert "REPLICATION_TOPOLOGY" in names
    assert "REPLICATION_FAILOVER_STORAGE" in names
    for name in names:
        assert f"`{name}`" in page, f"setting {name} is not in the reference"
    for suffix in ("fullyQualifiedNamespace", "credential", "clientId"):
        assert f"__{suffix}" in page


@pytest.mark.parametrize("name", ["metrics", "exit-codes"])
def test_the_other_generators_list_what_the_code_has(reference: ModuleType, name: str) -> None:
    from replication.exit_codes import ExitCode

    text = reference.GENERATORS[name]()
    if name == "exit-codes":
        assert all(f"| `{code.name}` |" in text for code in ExitCode)
    else:
        for metric in (
            "replication.messages",
            "replication.lag",
            "replication.batch.duration",
            "replication.send.failures",
            "replication.heartbeat.age",
        ):
            assert f"`{metric}`" in text
