"""Quiet the Azure SDKs' per-link logging, which would bury the replicator's own lines.

The Python SDKs log every AMQP connection, session, link and token exchange at INFO under
``azure.servicebus._pyamqp`` / ``azure.eventhub._pyamqp`` (dozens of lines per invocation with
a new link), and the HTTP pipeline logs every request (Key Vault, checkpoint blobs) at INFO.
In Azure every Python log record at or above the worker's level is shipped to the host and on
to Application Insights; the host's ``logging.logLevel`` in host.json filters the host's own
categories (``Function.<name>`` included), not Python logger names, so the place to silence
SDK chatter is the Python logger itself.

Only loggers whose level nobody set are changed: an operator who configures
``logging.getLogger("azure.servicebus").setLevel(logging.DEBUG)`` before the app is built keeps
the SDK's debug output.
"""

from __future__ import annotations

import logging

SDK_LOGGERS = (
    "azure.servicebus",
    "azure.eventhub",
    "azure.core.pipeline.policies.http_logging_policy",
    "azure.identity",
    "azure.storage",
)
"""Loggers set to WARNING unless configured: their failures still show, their chatter not."""


def quiet_sdk_loggers(level: int = logging.WARNING) -> None:
    """Raise the SDK loggers of :data:`SDK_LOGGERS` to ``level`` where no level is set."""
    for name in SDK_LOGGERS:
        logger = logging.getLogger(name)
        if logger.level == logging.NOTSET:
            logger.setLevel(level)


__all__ = ["SDK_LOGGERS", "quiet_sdk_loggers"]
