"""Correlation filters: every field and property they name must equal the message's."""

from __future__ import annotations

import pytest

from replication.envelope import Envelope
from replication.sql import CORRELATION_FIELDS, CorrelationFilter

ORDER = Envelope(
    subject="order",
    correlation_id="c-1",
    session_id="s",
    application_properties={"region": "eu", "priority": 2},
)


def test_an_empty_filter_matches_every_message() -> None:
    assert CorrelationFilter().matches(ORDER)
    assert CorrelationFilter().matches(Envelope())


def test_every_named_field_and_property_must_be_equal() -> None:
    assert CorrelationFilter({"subject": "order", "correlation_id": "c-1"}).matches(ORDER)
    assert CorrelationFilter({"subject": "order"}, {"region": "eu", "priority": 2}).matches(ORDER)
    assert not CorrelationFilter({"subject": "order", "correlation_id": "c-2"}).matches(ORDER)
    assert not CorrelationFilter({}, {"region": "eu", "priority": 3}).matches(ORDER)
    # A property the message lacks is never equal to the value asked for.
    assert not CorrelationFilter({}, {"tenant": "a"}).matches(ORDER)


def test_a_field_outside_the_system_properties_is_refused() -> None:
    assert "subject" in CORRELATION_FIELDS
    with pytest.raises(ValueError, match="cannot match label"):
        CorrelationFilter({"label": "order"})
