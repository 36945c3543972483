"""Conformance of replication.sql with Microsoft's documentation, case by case.

Sources (learn.microsoft.com, Azure Service Bus):
- [F] "Subscription Rule SQL Filter Syntax" (service-bus-messaging-sql-filter)
- [A] "Subscription Rule SQL Rule Action Syntax" (service-bus-messaging-sql-rule-action)
- [Q] "Service Bus quotas" (1,024 characters per filter or action, 32 statements per action)

Each group names the section it comes from. ``T``/``F``/``U`` are predicates evaluating to true,
false and unknown (a missing user property).
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

import pytest

from replication.envelope import Envelope
from replication.sql import SqlEvaluationError, SqlFilter, SqlRuleAction, SqlSyntaxError

T, F, U = "(1 = 1)", "(1 = 2)", "(missing = 1)"
VALUES = {"T": T, "F": F, "U": U}
RESULT = {"T": True, "F": False, "U": None}

ENQUEUED = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
MESSAGE = Envelope(
    body=b"12345",
    message_id="m-1",
    correlation_id="c-1",
    content_type="application/json",
    subject="order",
    to="store-5",
    reply_to="replies",
    reply_to_session_id="rs",
    session_id="s-1",
    partition_key="s-1",
    time_to_live=timedelta(minutes=2),
    scheduled_enqueue_time_utc=ENQUEUED,
    enqueued_time_utc=ENQUEUED,
    sequence_number=42,
    delivery_count=3,
    application_properties={
        "color": "red",
        "count": 5,
        "price": 9.5,
        "flag": True,
        "nothing": None,
        "Region": "EU",
        "path": "ABC%",
        "under_score": "a_b",
        "HR-EmployeeID": 7,
        "Contoso & Northwind": "yes",
        "name": "color",
        "repl-origin": "weu",
        "StoreId": "Store2",
        "raw": b"bytes-as-string",
    },
)

# (expression, expected three-valued result, or "syntax" where Service Bus rejects the text)
Expected = bool | None | Literal["syntax"]
CASES: list[tuple[str, Expected]] = []

# [F] Considerations, "Unknown evaluation in AND operator" table
for a in "TFU":
    for b in "TFU":
        left, right = RESULT[a], RESULT[b]
        if left is False or right is False:
            expected_and: bool | None = False
        elif left is None or right is None:
            expected_and = None
        else:
            expected_and = True
        CASES.append((f"{VALUES[a]} AND {VALUES[b]}", expected_and))
# [F] Considerations, "Unknown evaluation in OR operator" table
for a in "TFU":
    for b in "TFU":
        left, right = RESULT[a], RESULT[b]
        if left is True or right is True:
            expected_or: bool | None = True
        elif left is None or right is None:
            expected_or = None
        else:
            expected_or = False
        CASES.append((f"{VALUES[a]} OR {VALUES[b]}", expected_or))
# [F] NOT with unknown stays unknown
CASES += [(f"NOT {T}", False), (f"NOT {F}", True), (f"NOT {U}", None), (f"NOT NOT {T}", True)]

CASES += [
    # [F] grammar: comparisons = <> != > >= < <= on numbers (Int64 and Double, promoted)
    ("count = 5", True),
    ("count <> 5", False),
    ("count != 4", True),
    ("count > 4", True),
    ("count >= 5", True),
    ("count < 5", False),
    ("count <= 5", True),
    ("count = 5.0", True),
    ("price > 9", True),
    ("price = 9.5", True),
    ("price < 1E1", True),
    ("count * 2 = 10", True),
    # [F] string comparison (ordinal, case-sensitive values)
    ("color = 'red'", True),
    ("color = 'RED'", False),
    ("color <> 'blue'", True),
    ("color > 'blue'", True),
    ("color < 'blue'", False),
    # [F] boolean constants
    ("flag = TRUE", True),
    ("flag = FALSE", False),
    ("flag <> true", False),
    # [F] Remarks: non-existent user property evaluates as unknown, in comparisons too
    ("missing = 'x'", None),
    ("missing <> 'x'", None),
    ("missing > 1", None),
    ("nothing = 1", None),
    ("NULL = NULL", None),
    ("count = NULL", None),
    # [F] Considerations: IS [NOT] NULL true if the property does not exist or is null
    ("missing IS NULL", True),
    ("nothing IS NULL", True),
    ("color IS NULL", False),
    ("missing IS NOT NULL", False),
    ("color IS NOT NULL", True),
    ("replication IS NULL", True),
    ("sys.SessionId IS NOT NULL", True),
    ("sys.ReplyToSessionId IS NULL", False),
    # [F] IN / NOT IN; unknown left operand gives unknown; NULL in the list (SQL-92)
    ("color IN ('red', 'green')", True),
    ("color IN ('blue', 'green')", False),
    ("color NOT IN ('blue', 'green')", True),
    ("color NOT IN ('red')", False),
    ("missing IN ('red')", None),
    ("missing NOT IN ('red')", None),
    ("color IN ('blue', NULL)", None),
    ("color IN ('red', NULL)", True),
    ("color NOT IN ('blue', NULL)", None),
    ("count IN (1, 2, 5)", True),
    ("count IN (5.0)", True),
    ("StoreId IN ('Store1', 'Store2', 'Store3')", True),
    ("sys.To IN ('store-5', 'store-6') OR StoreId = 'Store8'", True),
    # [F] pattern: % any string, _ any single character; escape_char; [..] ranges (T-SQL style)
    ("color LIKE 'r%'", True),
    ("color LIKE '%e%'", True),
    ("color LIKE 'r_d'", True),
    ("color LIKE 'r_'", False),
    ("color LIKE 'R%'", False),
    ("color NOT LIKE 'b%'", True),
    ("color LIKE '[a-r]ed'", True),
    ("color LIKE '[^r]ed'", False),
    ("path LIKE 'ABC\\%' ESCAPE '\\'", True),
    ("'ABCD' LIKE 'ABC\\%' ESCAPE '\\'", False),
    ("'ABCD' LIKE 'ABC%'", True),
    ("under_score LIKE 'a!_b' ESCAPE '!'", True),
    ("'axb' LIKE 'a!_b' ESCAPE '!'", False),
    ("missing LIKE 'a%'", None),
    ("missing NOT LIKE 'a%'", None),
    ("color LIKE missing", None),
    ("sys.Label LIKE '%rd%'", True),
    ("'a\nb' LIKE 'a%b'", True),
    # [F] EXISTS ( property )
    ("EXISTS(color)", True),
    ("EXISTS(missing)", False),
    ("EXISTS(nothing)", True),
    ("EXISTS(COLOR)", True),
    ("NOT EXISTS(missing)", True),
    ("EXISTS(sys.MessageId)", True),
    # [F] Considerations: property names are case-insensitive; keywords are too
    ("COLOR = 'red'", True),
    ("region = 'EU'", True),
    ("user.Color = 'red'", True),
    ("USER.color = 'red'", True),
    ("sys.label = 'order'", True),
    ("SYS.LABEL = 'order'", True),
    ("color is not null and count between_is_not_a_keyword = 1", "syntax"),
    ("color like 'r%' or missing in (1)", True),
    ("not (count = 1)", True),
    ("true = TRUE", True),
    # [F] property_name: delimited and quoted identifiers
    ("[HR-EmployeeID] = 7", True),
    ("[hr-employeeid] = 7", True),
    ("\"Contoso & Northwind\" = 'yes'", True),
    ("user.[Region] = 'EU'", True),
    ("[repl-origin] = 'weu'", True),
    ("[a]]b] IS NULL", True),
    # [F] constants: integer (Int64), decimal and approximate numbers (Double), strings
    ("1894 = 1894", True),
    ("1894.1204 > 1894", True),
    ("2.0 = 2", True),
    ("101.5E5 = 10150000", True),
    ("0.5E-2 = 0.005", True),
    ("'it''s' = 'it' + '''' + 's'", True),
    ("'' = ''", True),
    ("-5 < 0", True),
    # [F] arithmetic + - * / %, unary + -, C# semantics (integer division truncates)
    ("count + 1 = 6", True),
    ("count - 6 = -1", True),
    ("count * price = 47.5", True),
    ("count / 2 = 2", True),
    ("-count / 2 = -2", True),
    ("count % 3 = 2", True),
    ("-count % 3 = -2", True),
    ("price / 2 = 4.75", True),
    ("count / 2.0 = 2.5", True),
    # C# double remainder: an infinite dividend gives NaN (never equal), an infinite divisor
    # leaves the dividend
    ("(price / 0.0) % 2.0 = (price / 0.0) % 2.0", False),
    ("price % (price / 0.0) = price", True),
    ("-(count) = -5", True),
    ("+count = 5", True),
    ("(count + 1) * 2 = 12", True),
    ("count + 1 * 2 = 7", True),
    ("color + '!' = 'red!'", True),
    ("'n' + count = 'n5'", True),
    # [F] Considerations: unknown in arithmetic gives unknown
    ("missing + 1 = 1", None),
    ("-missing = 1", None),
    ("count + missing > 0", None),
    # [F] function: property(name) / p(name); newid()
    ("property('color') = 'red'", True),
    ("p('color') = 'red'", True),
    ("property(name) = 'red'", True),
    ("property('sys.Label') = 'order'", True),
    ("property('user.count') = 5", True),
    ("property('missing') IS NULL", "syntax"),
    ("newid() <> newid()", True),
    # [F] system properties (sys scope): the BrokeredMessage / ServiceBusMessage properties
    ("sys.MessageId = 'm-1'", True),
    ("sys.CorrelationId = 'c-1'", True),
    ("sys.ContentType = 'application/json'", True),
    ("sys.Label = 'order'", True),
    ("sys.Subject = 'order'", True),
    ("sys.To = 'store-5'", True),
    ("sys.ReplyTo = 'replies'", True),
    ("sys.ReplyToSessionId = 'rs'", True),
    ("sys.SessionId = 's-1'", True),
    ("sys.PartitionKey = 's-1'", True),
    ("sys.SequenceNumber = 42", True),
    ("sys.DeliveryCount > 2", True),
    ("sys.Size >= 5", True),
    ("sys.EnqueuedTimeUtc = sys.ScheduledEnqueueTimeUtc", True),
    ("sys.TimeToLive = sys.TimeToLive", True),
    ("sys.EnqueuedTimeUtc + sys.TimeToLive > sys.EnqueuedTimeUtc", True),
    # bytes values from the SDKs are strings in the rule language
    ("raw = 'bytes-as-string'", True),
    # precedence: AND binds tighter than OR; NOT tighter than AND
    (f"{T} OR {F} AND {F}", True),
    (f"({T} OR {F}) AND {F}", False),
    (f"NOT {F} AND {F}", False),
    (f"NOT ({F} AND {F})", True),
]
FILTER_CASES = [(e, r) for e, r in CASES if r != "syntax"]


@pytest.mark.parametrize(("expression", "expected"), FILTER_CASES)
def test_filter(expression: str, expected: bool | None) -> None:
    compiled = SqlFilter(expression)
    assert compiled.evaluate(MESSAGE) is expected
    assert compiled.matches(MESSAGE) is (expected is True)


# [F] grammar violations and [Q] limits: SqlSyntaxError with the column of the problem
SYNTAX_ERRORS: list[tuple[str, int]] = [
    ("a = ", 5),
    ("a == 1", 4),
    ("= 1", 1),
    ("a = 1 AND", 10),
    ("(a = 1", 7),
    ("a = 1)", 6),
    ("'unterminated", 1),
    ("[unterminated", 1),
    ('"unterminated', 1),
    ("a IN ()", 7),
    ("a IN 1", 6),
    ("a NOT = 1", 7),
    ("a LIKE", 7),
    ("NOT 5", 5),
    ("5", 1),
    ("a", 1),
    ("a + (b = 1) = 2", 8),
    ("1 = 1 extra", 7),
    ("sys.Foo = 1", 5),
    ("other.a = 1", 1),
    ("unknownfunc() = 1", 1),
    ("newid(1) = 1", 8),
    ("property() = 1", 10),
    ("EXISTS(1)", 8),
    ("1 IS NULL", 3),
    ("a = 1e", 6),
    ("a = 12abc", 5),
    ("a = 99999999999999999999", 5),
    ("a # 1", 3),
    ("SET a = 1", 1),
    ("color is not null and count between_is_not_a_keyword = 1", 29),
    ("property('missing') IS NULL", 21),
    ("a = '" + "x" * 1030 + "'", 1025),
]


@pytest.mark.parametrize(("expression", "column"), SYNTAX_ERRORS)
def test_syntax_error_names_the_column(expression: str, column: int) -> None:
    with pytest.raises(SqlSyntaxError) as caught:
        SqlFilter(expression)
    assert caught.value.column == column
    assert str(caught.value).startswith(f"column {column}: ")


# [F] Considerations / operator binding: evaluation errors (FilterException)
EVALUATION_ERRORS = [
    "color = 5",
    "count = 'five'",
    "flag > FALSE",
    "count / 0 = 1",
    "count % 0 = 1",
    "color LIKE 5",
    "color LIKE 'r%' ESCAPE 'ab'",
    "-color = 1",
    "flag + 1 = 2",
    "property('sys.Nope') = 1",
    "property(5) = 1",
    "count IN ('five')",
]


@pytest.mark.parametrize("expression", EVALUATION_ERRORS)
def test_evaluation_error(expression: str) -> None:
    compiled = SqlFilter(expression)
    with pytest.raises(SqlEvaluationError):
        compiled.matches(MESSAGE)


def test_double_division_by_zero_follows_ieee_like_csharp() -> None:
    assert SqlFilter("price / 0 > 1000").matches(MESSAGE)


# [A] actions: SET / REMOVE, several statements, implicit conversion, sys properties
ACTION_CASES: list[tuple[str, dict[str, Any]]] = [
    ("SET replication = 1", {"replication": 1}),
    ("SET color = 'blue'", {"color": "blue"}),
    ("SET COLOR = 'blue'", {"color": "blue"}),
    ("SET price = 10", {"price": 10.0}),
    ("SET total = count * price", {"total": 47.5}),
    ("SET copy = missing", {"copy": None}),
    ("SET a = 1; SET b = a + 1", {"a": 1, "b": 2}),
    ("SET a = 1 SET b = 2", {"a": 1, "b": 2}),
    ("SET a = 1, SET b = 2;", {"a": 1, "b": 2}),
    ("REMOVE color", {"color": "<removed>"}),
    ("REMOVE Color", {"color": "<removed>"}),
    ("REMOVE missing", {}),
    ("SET [new prop] = 'x'", {"new prop": "x"}),
    ("SET user.tag = sys.Label", {"tag": "order"}),
    ("set replication = 1; set sys.TimeToLive = '0:2:0'", {"replication": 1}),
]


@pytest.mark.parametrize(("expression", "changes"), ACTION_CASES)
def test_action(expression: str, changes: dict[str, Any]) -> None:
    result = SqlRuleAction(expression).apply(MESSAGE)
    expected = dict(MESSAGE.application_properties)
    for key, value in changes.items():
        if value == "<removed>":
            expected.pop(key)
        else:
            expected[key] = value
    assert dict(result.application_properties) == expected
    for key, value in changes.items():
        if value != "<removed>":
            assert type(result.application_properties[key]) is type(value)


SYSTEM_ACTIONS: list[tuple[str, str, Any]] = [
    ("SET sys.TimeToLive = '0:2:0'", "time_to_live", timedelta(minutes=2)),
    ("SET sys.TimeToLive = '1.00:00:00'", "time_to_live", timedelta(days=1)),
    ("SET sys.TimeToLive = '00:00:30.5'", "time_to_live", timedelta(seconds=30.5)),
    ("SET sys.TimeToLive = '2'", "time_to_live", timedelta(days=2)),
    ("SET sys.Label = 'invoice'", "subject", "invoice"),
    ("SET sys.Subject = sys.Label + '-copy'", "subject", "order-copy"),
    ("SET sys.To = 'store-6'", "to", "store-6"),
    ("SET sys.CorrelationId = sys.MessageId", "correlation_id", "m-1"),
    ("SET sys.ContentType = 'text/plain'", "content_type", "text/plain"),
    ("SET sys.ReplyTo = 'other'", "reply_to", "other"),
    ("REMOVE sys.To", "to", None),
    ("SET sys.MessageId = newid()", "message_id", "<guid>"),
]


@pytest.mark.parametrize(("expression", "field", "value"), SYSTEM_ACTIONS)
def test_action_on_system_property(expression: str, field: str, value: Any) -> None:
    try:
        result = SqlRuleAction(expression).apply(MESSAGE)
    except SqlEvaluationError:
        assert value == "<guid>"  # newid() is a Guid, and sys.MessageId takes a string
        return
    assert getattr(result, field) == value


ACTION_ERRORS = [
    "SET sys.SequenceNumber = 1",
    "SET sys.EnqueuedTimeUtc = '2024-01-01'",
    "REMOVE sys.DeliveryCount",
    "SET sys.Size = 1",
    "SET",
    "SET a",
    "SET a = ",
    "REMOVE",
    "DELETE a",
    "SET a = 1 AND b = 2",
    "SET sys.Foo = 1",
    "; ".join(f"SET p{i} = {i}" for i in range(33)),
]


@pytest.mark.parametrize("expression", ACTION_ERRORS)
def test_action_syntax_error(expression: str) -> None:
    with pytest.raises(SqlSyntaxError):
        SqlRuleAction(expression)


@pytest.mark.parametrize(
    "expression",
    ["SET sys.TimeToLive = 'soon'", "SET sys.TimeToLive = '25:00:00'", "SET sys.Label = 5"],
)
def test_action_evaluation_error(expression: str) -> None:
    with pytest.raises(SqlEvaluationError):
        SqlRuleAction(expression).apply(MESSAGE)


def test_action_never_mutates_its_input() -> None:
    before = dict(MESSAGE.application_properties)
    SqlRuleAction("SET color = 'blue'; REMOVE count; SET sys.Label = 'x'").apply(MESSAGE)
    assert dict(MESSAGE.application_properties) == before
    assert MESSAGE.subject == "order"


def test_newid_is_a_guid() -> None:
    result = SqlRuleAction("SET id = newid()").apply(MESSAGE)
    assert isinstance(result.application_properties["id"], uuid.UUID)


def test_case_count_meets_the_issue() -> None:
    total = (
        len(FILTER_CASES) + len(SYNTAX_ERRORS) + len(EVALUATION_ERRORS) + len(ACTION_CASES)
        + len(SYSTEM_ACTIONS) + len(ACTION_ERRORS)
    )  # fmt: skip
    assert total >= 150
