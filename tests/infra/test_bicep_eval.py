"""The Bicep evaluator on small templates: the constructs our templates rely on, evaluated as the
Bicep documentation defines them, and constructs it does not know refused rather than guessed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.infra.bicep_eval import BicepEvalError, Deployment, Resource, Unknown


def _deploy(tmp_path: Path, text: str, **parameters: Any) -> list[Resource]:
    path = tmp_path / "main.bicep"
    path.write_text(text)
    return Deployment(path, parameters).resources


def test_ternary_binds_looser_than_member_access_and_equality(tmp_path: Path) -> None:
    """``rule.kind == 'sql' ? {...} : null`` (pycep-parser reads it as ``rule.(kind == ...)``)."""
    (sql, correlation) = _deploy(
        tmp_path,
        """param rules array
resource r 'Microsoft.X/things@2024-01-01' = [for rule in rules: {
  name: rule.name
  properties: {
    sqlFilter: rule.kind == 'sql' ? {
      sqlExpression: rule.text
    } : null
  }
}]
""",
        rules=[{"name": "a", "kind": "sql", "text": "x = 1"}, {"name": "b", "kind": "other"}],
    )
    assert sql.body == {"name": "a", "properties": {"sqlFilter": {"sqlExpression": "x = 1"}}}
    assert correlation.body == {"name": "b", "properties": {}}


def test_safe_access_yields_null_and_null_properties_are_not_sent(tmp_path: Path) -> None:
    (resource,) = _deploy(
        tmp_path,
        """param queue object
resource q 'Microsoft.X/things@2024-01-01' = {
  name: '${queue.name}-q'
  properties: {
    forwardTo: queue.?forwardTo
    count: queue.count * 24
  }
}
""",
        queue={"name": "jobs", "count": 2},
    )
    assert resource.body == {"name": "jobs-q", "properties": {"count": 48}}


def test_declaration_order_does_not_matter_and_conditions_are_honoured(tmp_path: Path) -> None:
    resources = _deploy(
        tmp_path,
        """param enabled bool = false
resource child 'Microsoft.X/things/children@2024-01-01' = {
  parent: thing
  name: 'c'
}
resource thing 'Microsoft.X/things@2024-01-01' = {
  name: 't'
}
resource optional 'Microsoft.X/things@2024-01-01' = if (enabled) {
  name: 'o'
}
""",
    )
    assert [(r.symbol, r.name) for r in resources] == [("thing", "t"), ("child", "t/c")]


def test_unknown_values_stay_unknown_and_unknown_conditions_are_refused(tmp_path: Path) -> None:
    (resource,) = _deploy(
        tmp_path,
        """resource s 'Microsoft.X/things@2024-01-01' = {
  name: 'st${uniqueString(resourceGroup().id)}'
}
""",
    )
    assert isinstance(resource.name, Unknown)
    with pytest.raises(BicepEvalError, match="unknown before deployment"):
        _deploy(
            tmp_path,
            """resource s 'Microsoft.X/things@2024-01-01' = if (uniqueString('a') == 'b') {
  name: 's'
}
""",
        )


def test_functions_it_does_not_interpret_are_refused(tmp_path: Path) -> None:
    with pytest.raises(BicepEvalError, match=r"function dateTimeAdd\(\) is not interpreted"):
        _deploy(
            tmp_path,
            """resource s 'Microsoft.X/things@2024-01-01' = {
  name: dateTimeAdd('2024-01-01', 'P1D')
}
""",
        )
