"""The Databricks and Synapse job definitions shipped with the audit (spark/jobs/): valid JSON
whose parameters the audit's own parser accepts, the Databricks ones after its job parameters
are substituted. Neither platform runs here (no local stand-in exists): what is checked is
that a definition would start the audit with arguments it takes, not a deployment.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from spark.dedup_audit import configure, prepare

JOBS = Path(__file__).resolve().parents[2] / "spark" / "jobs"


def parsed(arguments: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    configure(parser)
    args = parser.parse_args(arguments)
    prepare(args)
    return args


def test_the_databricks_wheel_task_runs_replication_audit_with_a_day_window() -> None:
    job: dict[str, Any] = json.loads((JOBS / "databricks-job.json").read_text())
    (task,) = job["tasks"]
    wheel = task["python_wheel_task"]
    assert (wheel["package_name"], wheel["entry_point"]) == (
        "azure-messaging-replication",
        "replication",
    )
    parameters = {p["name"]: p["default"] for p in job["parameters"]}
    arguments = [
        a.replace("{{job.parameters.since}}", parameters["since"]).replace(
            "{{job.parameters.until}}", parameters["until"]
        )
        for a in wheel["parameters"]
    ]
    assert arguments[0] == "audit"
    args = parsed(arguments[1:])
    assert sorted(args.inputs) == ["neu", "weu"]
    assert args.window.bounded
    assert args.output.startswith("abfss://")
    assert task["libraries"][0]["whl"].endswith(".whl")


def test_the_synapse_job_definition_runs_the_audit_file_with_the_wheel() -> None:
    definition: dict[str, Any] = json.loads((JOBS / "synapse-job-definition.json").read_text())
    job = definition["properties"]["jobProperties"]
    assert job["file"].endswith("/dedup_audit.py")
    assert all(path.endswith(".whl") for path in job["pyFiles"])
    args = parsed(job["args"])
    assert args.window.bounded
    assert all(uri.startswith("abfss://") for uri in args.inputs.values())
