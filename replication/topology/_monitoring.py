"""The topology file's optional ``monitoring`` section: alert thresholds for ``infra/``.

Every key is optional; the defaults below are what a file without the section gets. The
renderer (``python -m replication render bicep-params``) passes them to
``infra/modules/monitoring.bicep`` as the ``monitoring`` parameter.

| key | default | alert |
| --- | --- | --- |
| ``lagThreshold`` | ``PT5M`` | a task's largest ``replication.lag`` in the window is above it |
| ``heartbeatMaxAge`` | ``PT10M`` | a path's ``replication.heartbeat.age`` is above it |
| ``parkedThreshold`` | ``0`` | more messages than this were dead-lettered (parked) in the window |
| ``failureWindow`` | ``PT15M`` | every rule's window; send failures in each 5 minutes of it |
| ``alertsEnabled`` | ``true`` | the rules are created enabled |
| ``actionGroupEmails`` | ``[]`` | addresses the action group mails; none: no action group |
"""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated

from pydantic import Field, field_validator

from replication.durations import Duration
from replication.rules import SpecModel

# The window sizes a log alert rule accepts (as infra/modules/monitoring.bicep maps them).
ALERT_WINDOWS = tuple(
    timedelta(minutes=m) for m in (5, 10, 15, 30, 45, 60, 120, 180, 240, 300, 360, 1440, 2880)
)
_EMAIL = Annotated[str, Field(pattern=r"^[^@\s]+@[^@\s]+\.[^@\s]+$")]


class MonitoringSpec(SpecModel):
    """The thresholds of the alert rules the deployment creates; ``replication status`` judges
    the tasks by the same ``lagThreshold``, ``heartbeatMaxAge`` and ``parkedThreshold``. Every
    key is optional."""

    # The schema and the reference page publish the docstring above; the module docstring
    # maps each key to its alert rule for developers.

    lag_threshold: Annotated[Duration, Field(gt=timedelta(0))] = timedelta(minutes=5)
    """alert when a task's largest `replication.lag` in the window is above it"""
    heartbeat_max_age: Annotated[Duration, Field(gt=timedelta(0))] = timedelta(minutes=10)
    """alert when a path's newest heartbeat is older"""
    parked_threshold: Annotated[int, Field(ge=0)] = 0
    """alert when more messages than this were parked in the window"""
    failure_window: Duration = timedelta(minutes=15)
    """the window every alert rule looks back over (each is evaluated every 5 minutes): PT5M,
    PT10M, PT15M, PT30M, PT45M, PT1H, PT2H, PT3H, PT4H, PT5H, PT6H, P1D or P2D"""
    alerts_enabled: bool = True
    """deploy the alert rules enabled"""
    action_group_emails: list[_EMAIL] = Field(default_factory=list)
    """addresses an action group mails when an alert fires (none: no action group)"""

    @field_validator("failure_window")
    @classmethod
    def _an_alert_window(cls, value: timedelta) -> timedelta:
        if value not in ALERT_WINDOWS:
            raise ValueError(
                "must be an alert rule window: PT5M, PT10M, PT15M, PT30M, PT45M, PT1H, PT2H, "
                "PT3H, PT4H, PT5H, PT6H, P1D or P2D"
            )
        return value


__all__ = ["ALERT_WINDOWS", "MonitoringSpec"]
