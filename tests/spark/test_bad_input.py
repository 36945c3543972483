"""Bad input ends the audit with one line and exit code 2, and leaves nothing half-written
looking complete: an unreachable URI, an output that cannot be written, a capture folder with
foreign files, a capture file that is not what its name says, an empty window, a Spark Connect
server that is not there.

Where an earlier audit's outputs are in ``--output``, they are left as they were (the new audit
stages its outputs and moves them in only at its end).

Running as root (as CI does), a folder's permissions cannot make it unauthorised; an output
under a regular file is one the filesystem refuses to create for anyone.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from spark import dedup_audit
from spark.dedup_audit import main
from tests.spark.test_dedup_audit import REGIONS, write_inputs

pytestmark = pytest.mark.spark


def errors(caplog: Any) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]


def one_error(caplog: Any) -> str:
    found = errors(caplog)
    assert len(found) == 1, found
    assert "\n" not in found[0]
    assert "Traceback" not in found[0]
    return found[0]


@pytest.fixture
def earlier_audit(spark: Any, tmp_path: Path) -> tuple[list[str], Path, str]:
    """An output folder holding a complete earlier audit; its report.json's text."""
    inputs = write_inputs(tmp_path / "in", REGIONS)
    out = tmp_path / "out"
    assert main([*inputs, "--output", str(out)]) == 0
    return inputs, out, (out / "report.json").read_text()


def assert_left_as_it_was(out: Path, report: str) -> None:
    assert (out / "report.json").read_text() == report
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == [
        "duplicates", "loops", "missing", "report.html", "report.json", "unique",
    ]  # fmt: skip


def test_an_unreachable_input_uri(earlier_audit: tuple[list[str], Path, str], caplog: Any) -> None:
    inputs, out, report = earlier_audit
    code = main([*inputs, "--input", "far=nosuchfs://bucket/captures", "--output", str(out)])
    assert code == 2
    message = one_error(caplog)
    assert message.startswith("region far: cannot list nosuchfs://bucket/captures:")
    assert "nosuchfs" in message.split(":", 2)[2]
    assert_left_as_it_was(out, report)


def test_an_output_the_filesystem_refuses(spark: Any, tmp_path: Path, caplog: Any) -> None:
    inputs = write_inputs(tmp_path / "in", REGIONS)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder\n")
    assert main([*inputs, "--output", str(blocker / "out")]) == 2
    assert one_error(caplog).startswith(f"cannot create {blocker / 'out'}")
    assert blocker.read_text() == "not a folder\n"


def test_a_capture_folder_with_a_foreign_file(
    earlier_audit: tuple[list[str], Path, str], tmp_path: Path, caplog: Any
) -> None:
    inputs, out, report = earlier_audit
    foreign = tmp_path / "in" / "neu" / "export.csv"
    foreign.write_text("message_id,region\nm1,neu\n")
    assert main([*inputs, "--output", str(out)]) == 2
    message = one_error(caplog)
    assert message.startswith("region neu: ")
    assert "export.csv is not a JSON-lines file" in message
    assert_left_as_it_was(out, report)


def test_a_capture_file_that_is_not_avro_fails_the_audit_and_keeps_the_earlier_one(
    spark: Any, tmp_path: Path, caplog: Any
) -> None:
    """The file's name says Avro, its bytes do not: Spark finds out while the audit runs,
    after outputs were staged."""
    from tests.spark.test_capture_input import EVENTS, write_capture

    write_capture(tmp_path / "weu", EVENTS)
    out = tmp_path / "out"
    arguments = ["--input", f"weu={tmp_path / 'weu'}", "--format", "capture", "--output", str(out)]
    assert main(arguments) == 0
    report = (out / "report.json").read_text()
    (tmp_path / "weu" / "1.avro").write_bytes(b"this is no avro container\n" * 10)
    assert main(arguments) == 2
    message = one_error(caplog)
    assert message.startswith("the audit failed while Spark read or wrote data:")
    assert (out / "report.json").read_text() == report
    assert not [p for p in out.iterdir() if p.name.startswith("_audit-incomplete-")]


def test_an_empty_window(spark: Any, tmp_path: Path, caplog: Any) -> None:
    folder = tmp_path / "in" / "weu" / "2024" / "05" / "01" / "12"
    folder.mkdir(parents=True)
    (folder / "b.json").write_text(
        json.dumps({"message_id": "x", "enqueued_time_utc": "2024-05-01T12:00:00Z"}) + "\n"
    )
    out = tmp_path / "out"
    code = main(["--input", f"weu={tmp_path / 'in' / 'weu'}", "--since", "2030-01-01",
                 "--until", "2030-01-02", "--output", str(out)])  # fmt: skip
    assert code == 2
    assert one_error(caplog) == (
        "no capture file of any region falls in the window since 2030-01-01T00:00:00Z until "
        "2030-01-02T00:00:00Z (widened by 30 s)"
    )
    assert not out.exists() or list(out.iterdir()) == []


def test_a_spark_connect_server_that_is_not_there(
    tmp_path: Path, caplog: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("grpc", reason="the Spark Connect client needs pyspark[connect]")
    monkeypatch.setattr(dedup_audit, "CONNECT_TIMEOUT_SECONDS", 2.0)
    inputs = write_inputs(tmp_path / "in", REGIONS)
    code = main([*inputs, "--remote", "sc://127.0.0.1:9", "--output", str(tmp_path / "out")])
    assert code == 2
    assert one_error(caplog) == (
        "--remote sc://127.0.0.1:9: no Spark Connect server answered within 2 s"
    )
    assert not (tmp_path / "out").exists()
