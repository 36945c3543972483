"""Which capture files a window needs, from their paths alone (no Spark session: fast tier).

Event Hubs Capture's default names (``{Namespace}/{EventHub}/{PartitionId}/{Year}/{Month}/{Day}/
{Hour}/{Minute}/{Second}``, the name Capture gives the archive, Microsoft's
``archiveNameFormat`` documentation) and this library's capture task's hourly partitions.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from spark._storage import FileEntry, join
from spark._window import SelectionError, Window, file_span, parse_time, select_files

T = datetime(2024, 5, 1, 12, 5, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("relative", "span"),
    [
        # Capture: the window it names, at most 15 minutes either side.
        ("ns/hub/0/2024/05/01/12/05/00.avro",
         (T - timedelta(minutes=15), T + timedelta(minutes=15))),
        ("2024/05/01/12/05/00.avro", (T - timedelta(minutes=15), T + timedelta(minutes=15))),
        # Ours: the hour of the folder.
        ("2024/05/01/12/batch-1.jsonl",
         (datetime(2024, 5, 1, 12, tzinfo=UTC), datetime(2024, 5, 1, 13, tzinfo=UTC))),
        ("weu/2024/05/01/23/x/y.json",
         (datetime(2024, 5, 1, 23, tzinfo=UTC), datetime(2024, 5, 2, 0, tzinfo=UTC))),
        ("captures/part-0.json", None),
        ("2024/05/01/part-0.json", None),
    ],
)  # fmt: skip
def test_the_time_a_file_may_hold_comes_from_its_path(
    relative: str, span: tuple[datetime, datetime] | None
) -> None:
    assert file_span(relative) == span


def entries(*relatives: str) -> list[FileEntry]:
    return [FileEntry(join("abfss://c@a.dfs.core.windows.net/weu", r), r, 1) for r in relatives]


HOURS = entries(*(f"2024/05/01/{hour:02d}/b.json" for hour in range(24)))


def test_a_window_takes_its_hours_and_the_margin_either_side() -> None:
    window = Window(datetime(2024, 5, 1, 10, tzinfo=UTC), datetime(2024, 5, 1, 12, tzinfo=UTC))
    chosen = select_files("weu", "f", HOURS, "json", window, timedelta(seconds=30))
    assert [uri.split("/")[-2] for uri in chosen.files] == ["09", "10", "11", "12"]
    assert chosen.skipped == 20
    exact = select_files("weu", "f", HOURS, "json", window, timedelta(0))
    assert [uri.split("/")[-2] for uri in exact.files] == ["10", "11"]
    whole = select_files("weu", "f", HOURS, "json", Window(None, None), timedelta(0))
    assert (len(whole.files), whole.skipped) == (24, 0)


def test_a_foreign_file_and_a_file_without_time_are_refused_with_their_names() -> None:
    foreign = r"region weu: .*2024/05/01/10/notes\.txt is not a JSON-lines file"
    with pytest.raises(SelectionError, match=foreign):
        select_files("weu", "f", [*HOURS, *entries("2024/05/01/10/notes.txt")], "json",
                     Window(None, None), timedelta(0))  # fmt: skip
    with pytest.raises(SelectionError, match=r"is not an Event Hubs Capture \(Avro\) file.*\.avro"):
        select_files("weu", "f", entries("x/0.json"), "capture", Window(None, None), timedelta(0))
    window = Window(datetime(2024, 5, 1, tzinfo=UTC), None)
    with pytest.raises(SelectionError, match=r"need time-partitioned captures.*part-0\.json"):
        select_files("weu", "f", entries("part-0.json"), "json", window, timedelta(0))


def test_times_are_iso_8601_and_utc_unless_they_say_otherwise() -> None:
    assert parse_time("2024-05-01", "--since") == datetime(2024, 5, 1, tzinfo=UTC)
    assert parse_time("2024-05-01T14:00+02:00", "--since") == datetime(2024, 5, 1, 12, tzinfo=UTC)
    assert parse_time("2024-05-01T12:00:00Z", "--until") == datetime(2024, 5, 1, 12, tzinfo=UTC)
    with pytest.raises(ValueError, match="--until 'yesterday': expected an ISO-8601 time"):
        parse_time("yesterday", "--until")
