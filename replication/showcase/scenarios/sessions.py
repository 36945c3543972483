"""A session-ordered all-active pair (``examples/ordered-sessions.json``): account postings,
one session per account, published in both regions; both regions' ``posting`` consumers get
every posting of an account in the order it was published."""

from __future__ import annotations

from .._checks import order_per_key
from .._scenario import Scenario, Stage, message

ACCOUNTS = 6
POSTINGS = 8


def drive(stage: Stage) -> None:
    both = ["weu/accounts/posting", "neu/accounts/posting"]
    for region in ("weu", "neu"):
        postings = [
            message(f"{region}-account-{a}-{n:02d}", {"n": n}, session=f"{region}-account-{a}")
            for n in range(POSTINGS)
            for a in range(ACCOUNTS)
        ]
        stage.publish(region, "accounts", postings, expect=both)


SCENARIO = Scenario(
    name="sessions",
    title="session-ordered pair",
    example="ordered-sessions.json",
    drive=drive,
    checks=(order_per_key(),),
)
