"""Durations in the two text forms Azure uses: ISO-8601 and .NET TimeSpan.

- ISO-8601 (``PT2M``, ``P14D``, ``PT0.5S``): ARM templates, the emulators' Config.json and the
  topology file. Parsed and written with ``isodate`` (the library azure-servicebus itself uses)
  rather than by hand: a hand-written parser let ``PT1.2.3S`` through to a traceback and wrote
  one microsecond as ``PT1e-06S``.
- .NET TimeSpan (``[-][d.]hh:mm:ss[.fffffff]``): what Service Bus SQL rule actions take for
  ``sys.TimeToLive``. No maintained Python library writes it, so :func:`format_timespan` does;
  the SQL grammar parses it (``replication.sql``).

:data:`Duration` is the duration type of the topology file's records and the patterns' options:
ISO-8601 text (parsed here, so that ``"2 minutes"`` or ``"10s"`` is refused with "expected an
ISO-8601 duration such as PT2M or P1D, or a number of seconds" rather than pydantic's "invalid
character in hour") or a number of seconds. The topology's JSON Schema says the same
(:data:`ISO8601_PATTERN`), so an editor refuses what the loader refuses.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Annotated

import isodate
from pydantic import BeforeValidator

EXPECTED = "expected an ISO-8601 duration such as PT2M or P1D"
"""The start of every message about a duration that is not one (:func:`parse_iso8601`'s: text
only, as the emulators' Config.json has them)."""

EXPECTED_OR_SECONDS = f"{EXPECTED}, or a number of seconds"
"""The start of the message about a topology duration (:data:`Duration`) that is not one: the
topology also takes a number of seconds, so the message says so."""

_NUMBER = r"\d+(?:[.,]\d+)?"
ISO8601_PATTERN = (
    rf"^P(?!$)(?:{_NUMBER}W|(?:{_NUMBER}D)?(?:T(?=\d)(?:{_NUMBER}H)?(?:{_NUMBER}M)?"
    rf"(?:{_NUMBER}S)?)?)$"
)
"""The ISO-8601 durations :func:`parse_iso8601` accepts, as a regular expression for the JSON
Schema: weeks, or days and a time of hours, minutes and seconds (no years or months, no sign:
no duration of the topology file may be negative)."""

_SIGNED = re.compile("^-?" + ISO8601_PATTERN.removeprefix("^"))


def format_iso8601(value: timedelta) -> str:
    """``value`` as an ISO-8601 duration (``PT0S`` for zero, as ARM writes it)."""
    return "PT0S" if value == timedelta(0) else str(isodate.duration_isoformat(value))


def parse_iso8601(text: object, *, expected: str = EXPECTED) -> timedelta:
    """An ISO-8601 duration of days, hours, minutes and seconds.

    Raises:
        ValueError: not such a duration (the message starts with ``expected``); years and
            months are refused because their length depends on the calendar.
    """
    value = str(text)
    try:
        parsed = isodate.parse_duration(value)
    except (isodate.ISO8601Error, ValueError):
        parsed = None
    if parsed is not None and not isinstance(parsed, timedelta):
        raise ValueError(f"{expected}, got {text!r}: years and months have no fixed length")
    # isodate also takes "PT" and "P1DT"; the pattern (the schema's, signed) does not.
    if parsed is None or _SIGNED.fullmatch(value) is None:
        raise ValueError(f"{expected}, got {text!r}")
    return parsed


def _duration(value: object) -> object:
    """A topology value as a duration: ISO-8601 text parsed, numbers left to pydantic (seconds),
    anything else refused with the same message as bad text."""
    if isinstance(value, str):
        return parse_iso8601(value, expected=EXPECTED_OR_SECONDS)
    if isinstance(value, bool) or not isinstance(value, int | float | timedelta):
        raise ValueError(f"{EXPECTED_OR_SECONDS}, got {value!r}")
    return value


Duration = Annotated[timedelta, BeforeValidator(_duration)]
"""A duration in the topology file: ISO-8601 text (``PT2M``, ``P1D``, ``PT0.5S``) or a number
of seconds. Bounds (``gt``, ``ge``, ``le``) go beside it in ``Annotated`` as usual; the
topology's JSON Schema (:mod:`replication.topology._schema`) writes it as
:data:`ISO8601_PATTERN` or a number within those bounds."""


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


__all__ = [
    "EXPECTED",
    "EXPECTED_OR_SECONDS",
    "ISO8601_PATTERN",
    "Duration",
    "format_iso8601",
    "format_timespan",
    "parse_iso8601",
]
