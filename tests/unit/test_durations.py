"""ISO-8601 and .NET TimeSpan durations, including the cases a hand-written parser got wrong."""

from __future__ import annotations

from datetime import timedelta

import pytest

from replication.durations import format_iso8601, format_timespan, parse_iso8601


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (timedelta(minutes=2), "PT2M"),
        (timedelta(days=14), "P14D"),
        (timedelta(seconds=0.5), "PT0.5S"),
        (timedelta(microseconds=1), "PT0.000001S"),
        (timedelta(days=1, hours=2, minutes=3, seconds=4.5), "P1DT2H3M4.5S"),
        (timedelta(0), "PT0S"),
    ],
)
def test_iso8601_round_trips(value: timedelta, text: str) -> None:
    assert format_iso8601(value) == text
    assert parse_iso8601(text) == value


@pytest.mark.parametrize("text", ["PT1.2.3S", "1:00:00", "P", "", "PTM", None])
def test_malformed_iso8601_is_a_value_error_not_a_traceback(text: object) -> None:
    with pytest.raises(ValueError, match="expected an ISO-8601 duration such as PT2M or P1D, got "):
        parse_iso8601(text)


def test_calendar_units_are_refused() -> None:
    with pytest.raises(ValueError, match="no fixed length"):
        parse_iso8601("P1M")


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (timedelta(minutes=2), "00:02:00"),
        (timedelta(days=1, seconds=1), "1.00:00:01"),
        (timedelta(microseconds=1), "00:00:00.0000010"),
        (-timedelta(minutes=1), "-00:01:00"),
    ],
)
def test_timespan_text(value: timedelta, text: str) -> None:
    assert format_timespan(value) == text
