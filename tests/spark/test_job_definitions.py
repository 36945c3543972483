"""The Databricks and Synapse job definitions shipped with the audit (spark/jobs/): valid JSON
whose parameters the audit's own parser accepts, the Databricks ones after its job parameters
are substituted. Neither platform runs here (no local stand-in exists): what is checked is
that a definition would start the audit with arguments it takes, not a deployment. And the
parser those definitions go through says what each of its options does (``--help``).
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


def test_every_option_of_the_audit_says_what_it_does() -> None:
    parser = argparse.ArgumentParser()
    configure(parser)
    helps = {action.option_strings[-1]: action.help for action in parser._actions}
    assert all(helps.values()), [option for option, text in helps.items() if not text]
    assert helps["--format"] == (
        "what the inputs hold: json or parquet records (message_id, enqueued_time_utc, "
        "properties), or capture: Event Hubs Capture's Avro files (default: json)"
    )
    assert helps["--expect"] == (
        "two regions of --input that replication connects, one pair per --expect: a message of "
        "SRC missing in DST is a loss, a copy where no pair sends it an unexpected duplicate "
        "(default: every region holds every message)"
    )
    assert helps["--streaming"] == (
        "deduplicate as a Structured Streaming job, watermarked on each message's origin "
        "enqueue time (the other figures in batch; see --topology)"
    )
