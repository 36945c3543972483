"""A client's view of the binding store: the namespace it should use now, never "nowhere".

:class:`BindingFollower` reads the application's binding document (see
:mod:`replication.failover._bindings`) through a :class:`BindingSource` (the Blob Storage adapter
is :class:`replication.transport.failover.BlobBindingSource`; tests may use another) and
resolves the client's namespace for its role.

**Off the hot path.** The first time a client asks for its namespace the document is read
there and then (a client restarted while failed over must not start on the wrong namespace);
from then on a background thread reads it every ``poll_interval`` (default 5 s) and the client
uses the last binding read, so asking costs no request. The read is a conditional GET
(``If-None-Match``): an unchanged document costs one short request. **Staleness bound**: a
client follows a switch within ``poll_interval`` plus one read, and a read takes at most the
store's deadline (``BlobFailoverStore.timeout``, 10 s by default); while the store cannot be
read, the client keeps the last binding it read, for as long as that lasts, at no cost to its
sends and receives. ``tests/e2e/test_failover_clients.py`` measures the follow time;
``tests/faults/test_failover_hangs.py`` checks that a frozen store costs a publisher nothing.

**When the store cannot be used** (unreachable, the document is not valid, it names a namespace
the client does not know), the client keeps the namespace it used last and logs a WARNING once
per distinct problem (and INFO when the store is readable again). Before any successful read it
uses the first namespace it was configured with. A missing document means "no switch was ever
made": the configured first namespace.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Protocol

from replication.exceptions import ReplicationError

from ._bindings import BindingDocument, BindingDocumentError, Role, parse_bindings

logger = logging.getLogger(__name__)

DEFAULT_POLL_INTERVAL = timedelta(seconds=5)


class BindingSource(Protocol):
    """Where binding documents are read from (one per application)."""

    def read_bindings(self, app: str, etag: str | None) -> tuple[bytes | None, str | None]:
        """The document of ``app`` and its ETag: ``(None, etag)`` when it has not changed since
        ``etag``, ``(None, None)`` when there is none.

        Raises:
            ReplicationError: the store cannot be reached.
        """
        ...

    def describe(self, app: str) -> str:
        """Where the document of ``app`` lives, for messages."""
        ...


class BindingFollower:
    """The namespace one client (application, instance, entity, role) should use now.

    ``background`` (the default) reads the store in a thread of its own after the first read
    (see the module docstring); without it, :meth:`namespace` reads the store inline whenever
    the last read is older than ``poll_interval`` (for tests driving a fake ``clock``).
    :meth:`close` stops the thread."""

    def __init__(
        self,
        source: BindingSource | None,
        *,
        app: str,
        instance: str | None,
        entity: str | None,
        role: Role,
        namespaces: Sequence[str],
        poll_interval: timedelta = DEFAULT_POLL_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
        background: bool = True,
    ) -> None:
        if not namespaces:
            raise ValueError("a client needs at least one namespace")
        self._source = source
        self._background = background
        self.app = app
        self.instance = instance
        self.entity = entity
        self.role = role
        self.namespaces = tuple(namespaces)
        self._interval = poll_interval.total_seconds()
        self._clock = clock
        self._lock = threading.Lock()
        self._reading = threading.Lock()
        self._namespace = self.namespaces[0]
        self._generation: int | None = None
        self.document: BindingDocument | None = None
        """The binding document last read and followed (None: none yet)."""
        self._etag: str | None = None
        self._read_at: float | None = None
        self._problem: str | None = None
        self._unreachable = False
        self._before_outage: str | None = None
        self.reads = 0
        self._stop = threading.Event()
        self._refresher: threading.Thread | None = None

    @property
    def generation(self) -> int | None:
        """The generation of the document last read (None: none read, or none exists)."""
        return self._generation

    @property
    def problem(self) -> str | None:
        """Why the last read could not be used (None when it could)."""
        return self._problem

    def namespace(self) -> str:
        """The namespace to use now: the binding last read (the first call reads the store, and
        starts the background refresh; without ``background``, a call reads it when the last
        read is older than the poll interval)."""
        if self._source is not None and (
            self._read_at is None or (not self._background and self._due())
        ):
            self._poll(force=False)
        self._start_refresh()
        return self._namespace

    def due(self) -> bool:
        """True when the next :meth:`namespace` call reads the store (the first one: async
        callers make it in a thread, with :meth:`refresh`)."""
        return self._source is not None and self._read_at is None

    def _due(self) -> bool:
        return self._read_at is None or self._clock() - self._read_at >= self._interval

    def refresh(self) -> str:
        """Read the store now (whatever the interval) and return the namespace to use."""
        namespace = self._poll(force=True)
        self._start_refresh()
        return namespace

    def _start_refresh(self) -> None:
        if not self._background or self._source is None or self._stop.is_set():
            return
        with self._lock:
            if self._refresher is None:
                self._refresher = threading.Thread(
                    target=self._refresh_loop, name=f"bindings {self._who()}", daemon=True
                )
                self._refresher.start()

    def _refresh_loop(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self._poll(force=True)
            except Exception as error:  # never let the refresh die: the client would go stale
                self._report(f"binding store read failed: {error}")

    def close(self) -> None:
        """Stop the background refresh (the client keeps the binding it has)."""
        self._stop.set()
        refresher = self._refresher
        if refresher is not None and refresher is not threading.current_thread():
            refresher.join(timeout=1)

    def _poll(self, *, force: bool) -> str:
        if self._source is None:
            return self._namespace
        with self._reading:
            if not force and not self._due():
                return self._namespace  # another thread read it meanwhile
            self.reads += 1
            try:
                data, etag = self._source.read_bindings(self.app, self._etag)
            except ReplicationError as error:
                self._read_at = self._clock()
                if not self._unreachable:
                    self._unreachable, self._before_outage = True, self._problem
                self._report(f"binding store unreachable: {error}")
                return self._namespace
            self._read_at = self._clock()
            if self._unreachable:  # readable again, even if the document did not change
                logger.info("%s: binding store readable again", self._who())
                self._unreachable, self._problem = False, self._before_outage
            if data is None and etag is None:  # no document: no switch was ever made
                self._etag, self._generation, self.document = None, None, None
                self._use(self.namespaces[0])
            elif data is not None:
                try:
                    document = parse_bindings(data, source=self._source.describe(self.app))
                except BindingDocumentError as error:
                    self._etag = None  # read it again next time, not "unchanged"
                    self._report(f"binding document not usable: {error}")
                    return self._namespace
                self._etag = etag
                self._apply(document)
            return self._namespace

    def _apply(self, document: BindingDocument) -> None:
        resolved = document.resolve(self.instance, self.entity, self.role)
        if resolved is None:
            resolved = self.namespaces[0]
        if resolved not in self.namespaces:
            self._report(
                f"binding document generation {document.generation} sends {self.role.value} "
                f"of {self._who()} to namespace {resolved!r}, which this client does not know "
                f"(it knows {', '.join(self.namespaces)})"
            )
            return
        self._generation = document.generation
        self.document = document
        self._use(resolved)

    def _use(self, namespace: str) -> None:
        if self._problem is not None:
            logger.info("%s: binding document usable again", self._who())
            self._problem = None
        if namespace != self._namespace:
            logger.info(
                "%s: %s moves from %s to %s (binding generation %s)",
                self._who(),
                self.role.value,
                self._namespace,
                namespace,
                self._generation,
            )
            self._namespace = namespace

    def _report(self, problem: str) -> None:
        if problem != self._problem:
            logger.warning("%s: %s; staying on %s", self._who(), problem, self._namespace)
        self._problem = problem

    def _who(self) -> str:
        parts = [self.app, self.instance, self.entity]
        return "/".join(part for part in parts if part)


__all__ = ["DEFAULT_POLL_INTERVAL", "BindingFollower", "BindingSource"]
