"""Alerts, workbook and Application Insights of infra/, checked without an Azure subscription.

The Bicep is parsed with pycep-parser (the ``az bicep`` CLI is not used by the tests); the
alert queries are Bicep strings with ``${monitoring.X}`` placeholders, filled here with the
parameters rendered from an example topology to check that its thresholds reach the rules.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, cast

import pytest
from pycep import BicepParser

from replication.durations import format_iso8601 as iso_duration
from replication.exceptions import ConfigurationError
from replication.render import bicep_parameters
from replication.topology import ALERT_WINDOWS, load_topology

ROOT = Path(__file__).resolve().parents[2]
INFRA = ROOT / "infra"
EXAMPLE = ROOT / "examples" / "two-region-all-active.json"
METRICS = {
    "replication.messages",
    "replication.lag",
    "replication.batch.duration",
    "replication.send.failures",
    "replication.heartbeat.age",
}
MONITORING_METRICS_PUBLISHER = "3913510d-42f4-4e42-8a64-420c390055eb"


def _parse(path: Path) -> dict[str, Any]:
    return cast("dict[str, Any]", BicepParser().parse(file_path=path))


@pytest.fixture(scope="module")
def monitoring_bicep() -> dict[str, Any]:
    return _parse(INFRA / "modules" / "monitoring.bicep")


def _fill(template: str, values: dict[str, Any]) -> str:
    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name == "failurePeriods":
            return "FAILURE_PERIODS"
        assert name.startswith("monitoring."), name
        return str(values[name.removeprefix("monitoring.")])

    return re.sub(r"\$\{([A-Za-z.]+)\}", value, template)


def test_the_topology_monitoring_section_reaches_the_parameters() -> None:
    monitoring = bicep_parameters(load_topology(EXAMPLE))["parameters"]["monitoring"]["value"]
    assert monitoring == {
        "lagThresholdSeconds": 120,
        "heartbeatMaxAgeSeconds": 900,
        "parkedThreshold": 0,
        "failureWindow": "PT30M",
        "alertsEnabled": True,
        "actionGroupEmails": ["oncall@example.com"],
    }


def test_monitoring_defaults_when_the_section_is_absent() -> None:
    path = ROOT / "examples" / "three-region-mesh.json"
    assert "monitoring" not in json.loads(path.read_text())
    monitoring = bicep_parameters(load_topology(path))["parameters"]["monitoring"]["value"]
    assert monitoring["lagThresholdSeconds"] == 300
    assert monitoring["heartbeatMaxAgeSeconds"] == 600
    assert monitoring["parkedThreshold"] == 0
    assert monitoring["failureWindow"] == "PT15M"
    assert monitoring["alertsEnabled"] is True
    assert monitoring["actionGroupEmails"] == []


@pytest.mark.parametrize(
    ("section", "path"),
    [
        ({"lagThreshold": "soon"}, "monitoring.lagThreshold"),
        ({"parkedThreshold": -1}, "monitoring.parkedThreshold"),
        ({"failureWindow": "PT1M"}, "monitoring.failureWindow"),
        ({"failureWindow": "PT20M"}, "monitoring.failureWindow"),
        ({"actionGroupEmails": ["nobody"]}, "monitoring.actionGroupEmails[0]"),
        ({"heartbeat": True}, "monitoring.heartbeat"),
    ],
)
def test_a_bad_monitoring_section_names_file_and_json_path(
    tmp_path: Path, section: dict[str, Any], path: str
) -> None:
    document = json.loads(EXAMPLE.read_text())
    document["monitoring"] = section
    file = tmp_path / "topology.json"
    file.write_text(json.dumps(document))
    with pytest.raises(ConfigurationError) as caught:
        load_topology(file)
    message = str(caught.value)
    assert message.startswith(f"{file}: {path}"), message


def test_main_deploys_the_monitoring_module(parsed_main: dict[str, Any]) -> None:
    module = parsed_main["modules"]["monitoringResources"]
    assert module["detail"]["path"] == "modules/monitoring.bicep"
    params = module["config"]["params"]
    assert params["monitoring"] == "monitoring"
    assert set(parsed_main["parameters"]["monitoring"]["default"]) == {
        "lagThresholdSeconds", "heartbeatMaxAgeSeconds", "parkedThreshold", "failureWindow",
        "alertsEnabled", "actionGroupEmails",
    }  # fmt: skip


@pytest.fixture(scope="module")
def parsed_main() -> dict[str, Any]:
    return _parse(INFRA / "main.bicep")


def test_application_insights_uses_entra_auth_only() -> None:
    app = _parse(INFRA / "modules" / "functionapp.bicep")
    insights = app["resources"]["insights"]
    assert insights["type"] == "Microsoft.Insights/components"
    properties = insights["config"]["properties"]
    assert properties["DisableLocalAuth"] is True
    assert properties["WorkspaceResourceId"] == {
        "operator": {
            "type": "property_accessor",
            "operands": {"operand_1": "logs", "operand_2": "id"},
        }
    }
    publisher = app["resources"]["metricsPublisher"]
    assert publisher["type"] == "Microsoft.Authorization/roleAssignments"
    assert publisher["config"]["scope"] == "insights"
    assert app["variables"]["monitoringMetricsPublisher"]["value"] == MONITORING_METRICS_PUBLISHER
    text = (INFRA / "modules" / "functionapp.bicep").read_text()
    assert "APPLICATIONINSIGHTS_CONNECTION_STRING: insights.properties.ConnectionString" in text
    assert "'Authorization=AAD'" in text
    assert "'ClientId=${identityClientId};Authorization=AAD'" in text


def test_four_alert_rules_with_descriptions(monitoring_bicep: dict[str, Any]) -> None:
    alerts = monitoring_bicep["resources"]["alerts"]
    assert alerts["type"] == "Microsoft.Insights/scheduledQueryRules"
    assert alerts["config"]["loop_type"]["detail"]["array_name"] == "rules"
    config = alerts["config"]["config"]
    assert config["kind"] == "LogAlert"
    assert config["properties"]["scopes"] == ["insightsId"]
    rules = monitoring_bicep["variables"]["rules"]["value"]
    assert [r["name"] for r in rules] == ["lag", "parked", "send-failures", "heartbeat"]
    for rule in rules:
        assert len(rule["description"]) > 100, rule["name"]


def test_alert_queries_carry_the_topology_thresholds(monitoring_bicep: dict[str, Any]) -> None:
    values = bicep_parameters(load_topology(EXAMPLE))["parameters"]["monitoring"]["value"]
    variables = monitoring_bicep["variables"]
    queries = {
        name: _fill(variables[name]["value"], values)
        for name in ("lagQuery", "parkedQuery", "failureQuery", "heartbeatQuery")
    }
    assert queries["lagQuery"].startswith('customMetrics | where name == "replication.lag"')
    assert queries["lagQuery"].endswith("| where maxLagSeconds > 120")
    assert '== "dead_lettered"' in queries["parkedQuery"]
    assert queries["parkedQuery"].endswith("| where parked > 0")
    assert '"replication.send.failures"' in queries["failureQuery"]
    assert queries["failureQuery"].endswith("| where failingPeriods >= FAILURE_PERIODS")
    assert '"replication.heartbeat.age"' in queries["heartbeatQuery"]
    assert queries["heartbeatQuery"].endswith("| where ageSeconds > 900")
    for query in queries.values():
        assert query.count("(") == query.count(")"), query


def test_action_group_mails_the_topology_addresses(monitoring_bicep: dict[str, Any]) -> None:
    group = monitoring_bicep["resources"]["actionGroup"]
    assert group["type"] == "Microsoft.Insights/actionGroups"
    receivers = group["config"]["config"]["properties"]["emailReceivers"]
    assert receivers["loop_type"]["detail"]["array_name"] == "emails"


def test_workbook_json_is_valid_and_shows_every_metric(monitoring_bicep: dict[str, Any]) -> None:
    workbook = monitoring_bicep["resources"]["workbook"]
    assert workbook["type"] == "Microsoft.Insights/workbooks"
    loaded = workbook["config"]["properties"]["serializedData"]["function"]
    assert loaded["type"] == "load_text_content"
    path = (INFRA / "modules" / loaded["parameters"]["file_path"]).resolve()
    document = json.loads(path.read_text())
    assert document["version"] == "Notebook/1.0"
    queries = [i["content"]["query"] for i in document["items"] if i["type"] == 3]
    shown = {m for m in METRICS if any(f'name == "{m}"' in q for q in queries)}
    assert shown == METRICS
    assert any('"dead_lettered"' in q for q in queries)


def test_every_accepted_failure_window_has_its_periods_in_bicep(
    monitoring_bicep: dict[str, Any],
) -> None:
    minutes = monitoring_bicep["variables"]["failureWindowMinutes"]["value"]
    assert {iso_duration(w) for w in ALERT_WINDOWS} == set(minutes)
    for window in ALERT_WINDOWS:
        assert minutes[iso_duration(window)] == window.total_seconds() / 60
