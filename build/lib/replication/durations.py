"""Durations in the two text forms Azure uses: ISO-8601 and .NET TimeSpan.

- ISO-8601 (``PT2M``, ``P14D``, ``PT0.5S``): ARM templates, the emulators' Config.json and the
  topology file. Parsed and written with ``isodate`` (the library azure-servicebus itself uses)
  rather than by hand: a hand-written parser let ``PT1.2.3S`` through to a traceback and wrote
  one microsecond as ``PT1e-06S``.
- .NET TimeSpan (``[-][d.]hh:mm:ss[.fffffff]``): what Service Bus SQL rule actions take for
  ``sys.TimeToLive``. No maintained Python library writes it, so :func:`format_timespan` does;
  the SQL grammar parses it (``replication.sql``).
"""

from __future__ import annotations

from datetime import timedelta

import isodate


def format_iso8601(value: timedelta) -> str:
    """``value`` as an ISO-8601 duration (``PT0S`` for zero, as ARM writes it)."""
    return "PT0S" if value == timedelta(0) else str(isodate.duration_isoformat(value))


def parse_iso8601(text: object) -> timedelta:
    """An ISO-8601 duration of days, hours, minutes and seconds.

    Raises:
        ValueError: not such a duration; years and months are refused because their length
            depends on the calendar.
    """
    try:
        parsed = isodate.parse_duration(str(text))
    except (isodate.ISO8601Error, ValueError):
        raise ValueError(f"{text!r} is not an ISO-8601 duration such as PT1M") from None
    if not isinstance(parsed, timedelta):
        raise ValueError(f"{text!r}: years and months have no fixed length; use days")
    return parsed


def format_timespan(value: timedelta) -> str:
    """.NET TimeSpan text as Service Bus SQL expects it: ``[-][d.]hh:mm:ss[.fffffff]``."""
    sign = "-" if value < timedelta(0) else ""
    total_microseconds = abs(value) // timedelta(microseconds=1)
    seconds, microseconds = divmod(total_microseconds, 1_000_000)
    minutes, seconds = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    text = f"{hours:02d}:{minutes:02d}:{seconds:02d}"
    if days:
        text = f"{days}.{text}"
    if microseconds:
        text += f".{microseconds * 10:07d}"
    return sign + text


__all__ = ["format_iso8601", "format_timespan", "parse_iso8601"]
